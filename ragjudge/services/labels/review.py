"""The review queue: annotators' flags and comments, and a lead's answers to them.

An annotator flags a pair (with an optional note) or comments on it; a lead reviews it. A
review item is one annotator's current flag and comment on one pair. The lead's answer is an
append-only ``pair_marks`` event of kind ``review`` (``annotator``: the lead; ``resolves``: the
id of the newest flag or comment event of the item; ``text``: the lead's note):

- ``resolve`` settles the item; its author sees the lead's note the next time they open the pair;
- ``send-back`` asks the author to look at the pair again: it comes first in their queue, and is
  shown to them as sent back with the lead's note, until they label or mark the pair again --
  then the item is open for the lead once more (if the flag or comment is still there).

An item is *open* while its author's flag or comment is set and no review answers its newest
mark event: a new flag note or comment after a resolution opens it again, since what the lead
answered is no longer what the annotator says.

Who may read what (:class:`~ragjudge.services.access.rights.Access`): a lead reads every item and
answers it; anyone else reads only their own flags and comments and the lead's answers to them,
and answers nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any
from sqlalchemy import func, select
from sqlalchemy.orm import Session
from ragjudge.errors import UsageError
from ragjudge.formats.records import check_typed
from ragjudge.services.access.rights import Access
from ragjudge.services.events.marks import MARK_KINDS, NO_MARKS, PairMarks
from ragjudge.services.events.annotators import check_annotator
from ragjudge.services.events.labels import not_recheck
from ragjudge.store.annotators import ensure_annotators
from ragjudge.store.schema import Label, PairMark, Query, utcnow
from ragjudge.safetext import quote


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


REVIEW = "review"


ACTIONS = ("resolve", "send-back")


@dataclass(frozen=True)
class Resolution:
    """One lead's answer to a flag or comment."""

    id: int
    by: str
    action: str
    note: str | None
    at: datetime | None
    resolves: int

    @property
    def sent_back(self) -> bool:
        return self.action == "send-back"

    def to_json(self) -> dict[str, Any]:
        return {"by": self.by, "action": self.action, "note": self.note,
                "at": None if self.at is None else self.at.isoformat()}


@dataclass(frozen=True)
class ReviewItem:
    """One annotator's current flag (with its note) and comment on one pair, and its review.

    ``mark_id`` is the newest flag or comment event of the item (what a review answers);
    ``created_at`` its time. ``resolved`` is the review that answers it, or None while it is
    open; a send-back the author has answered since (a new label) leaves the item open again,
    with the send-back still in ``reviews``, every answer to the author's marks on the pair,
    oldest first."""

    query_id: str
    chunk_id: str
    annotator: str
    flagged: bool
    note: str | None
    comment: str | None
    created_at: datetime | None
    mark_id: int
    resolved: Resolution | None = None
    reviews: tuple[Resolution, ...] = field(default=())

    @property
    def open(self) -> bool:
        return self.resolved is None

    @property
    def answer(self) -> Resolution | None:
        """The lead's newest answer to the author's current flag or comment (what the author
        is shown), whether or not the author has acted on it since."""
        for review in reversed(self.reviews):
            if review.resolves == self.mark_id:
                return review
        return None

    def to_json(self) -> dict[str, Any]:
        return {"query_id": self.query_id, "chunk_id": self.chunk_id, "annotator": self.annotator,
                "flagged": self.flagged, "note": self.note, "comment": self.comment,
                "created_at": None if self.created_at is None else self.created_at.isoformat(),
                "resolved": None if self.resolved is None else self.resolved.to_json(),
                "reviews": [r.to_json() for r in self.reviews]}


def _as_datetime(value: Any) -> datetime | None:
    if isinstance(value, str):  # SQLite returns max() of a DateTime column as text
        return datetime.fromisoformat(value)
    return value


def _items(session: Session, *, annotator: str | None = None, query_id: str | None = None,
           chunk_id: str | None = None) -> list[ReviewItem]:
    """Every item (open or not) whose author's flag or comment is set, by query, chunk and
    annotator."""
    marks = PairMark.__table__
    stmt = (select(marks.c.id, marks.c.annotator, marks.c.query_id, marks.c.chunk_id, marks.c.kind,
                   marks.c.action, marks.c.text, marks.c.created_at)
            .where(marks.c.kind.in_(MARK_KINDS)).order_by(marks.c.id))
    if annotator is not None:
        stmt = stmt.where(marks.c.annotator == annotator)
    if query_id is not None:
        stmt = stmt.where(marks.c.query_id == query_id)
    if chunk_id is not None:
        stmt = stmt.where(marks.c.chunk_id == chunk_id)
    state: dict[tuple[str, str, str], tuple[PairMarks, int, datetime | None, set[int]]] = {}
    for id_, author, query, chunk, kind, action, text, created in session.execute(stmt):
        key = (author, query, chunk)
        current, _, _, ids = state.get(key, (NO_MARKS, 0, None, set()))
        ids.add(id_)
        state[key] = (current.with_event(kind, action, text), id_, created, ids)
    live = {key: value for key, value in state.items() if value[0].any}
    reviews = _reviews(session, {i for value in live.values() for i in value[3]})
    out = []
    for (author, query, chunk), (current, mark_id, created, ids) in live.items():
        answers = tuple(r for r in reviews if r.resolves in ids)
        item = ReviewItem(query, chunk, author, current.flagged, current.flag_note, current.comment,
                          created, mark_id, None, answers)
        answer = item.answer
        if answer is not None and not (answer.sent_back and _acted_since(session, item, answer)):
            item = ReviewItem(query, chunk, author, current.flagged, current.flag_note,
                              current.comment, created, mark_id, answer, answers)
        out.append(item)
    return sorted(out, key=lambda i: (i.query_id, i.chunk_id, i.annotator))


def _reviews(session: Session, mark_ids: set[int]) -> list[Resolution]:
    """The review events answering any of ``mark_ids``, oldest first."""
    if not mark_ids:
        return []
    marks = PairMark.__table__
    found: list[Resolution] = []
    ids = sorted(mark_ids)
    for start in range(0, len(ids), 500):  # stay under every backend's limit of bound values
        batch = ids[start:start + 500]
        for id_, by, action, text, created, resolves in session.execute(
                select(marks.c.id, marks.c.annotator, marks.c.action, marks.c.text,
                       marks.c.created_at, marks.c.resolves)
                .where(marks.c.kind == REVIEW, marks.c.resolves.in_(batch))):
            found.append(Resolution(id_, by, action, text, created, resolves))
    return sorted(found, key=lambda r: r.id)


def _acted_since(session: Session, item: ReviewItem, answer: Resolution) -> bool:
    """Whether the author labelled the pair after ``answer`` (their reply to a send-back; a new
    flag or comment changes the item's mark instead)."""
    newest = session.scalar(
        select(func.max(Label.created_at))
        .where(Label.annotator == item.annotator, Label.query_id == item.query_id,
               Label.chunk_id == item.chunk_id, not_recheck()))
    newest = _as_datetime(newest)
    return newest is not None and answer.at is not None and newest > answer.at


def _check_filters(project: Project, annotator: str | None, query_id: str | None) -> None:
    """An unknown annotator or query is a typo, not an empty list."""
    from ragjudge.services.access import roster

    if annotator is not None and roster.member(project, annotator) is None:
        close = roster.nearest_name(project, annotator)
        hint = f" Did you mean {quote(close)}?" if close else ""
        raise UsageError(f"--annotator: there is no annotator {quote(annotator)} in this project.{hint} "
                         "'ragjudge annotators' lists them.")
    if query_id is not None:
        with project.read() as session:
            if session.get(Query, query_id) is None:
                raise UsageError(f"--query: there is no query {quote(query_id)} in this project.")


def _readable(access: Access, annotator: str | None) -> str | None:
    """Whose items ``access`` may list: ``annotator`` (None: everyone's) for a lead, else its
    own (naming another's is refused)."""
    if access.lead:
        return annotator
    if annotator is not None and annotator != access.name:
        access.require_lead(f"read {annotator}'s flags and comments")
    if access.name is None:
        access.require_lead("read the flags and comments")
    return access.name


def items(project: Project, *, access: Access, annotator: str | None = None,
          query_id: str | None = None, include_resolved: bool = False) -> list[ReviewItem]:
    """The open review items (with ``include_resolved``, the answered ones too), by query,
    chunk and annotator; ``annotator`` and ``query_id`` narrow the list (and must exist). A
    lead reads everyone's; anyone else only their own."""
    _check_filters(project, annotator, query_id)
    annotator = _readable(access, annotator)
    with project.read() as session:
        found = _items(session, annotator=annotator, query_id=query_id)
    return found if include_resolved else [i for i in found if i.open]


def item(project: Project, annotator: str, query_id: str, chunk_id: str) -> ReviewItem | None:
    """The annotator's review item on the pair (open or not), or None without a flag or comment."""
    with project.read() as session:
        found = _items(session, annotator=annotator, query_id=query_id, chunk_id=chunk_id)
    return found[0] if found else None


def open_count(project: Project) -> int:
    """How many items are open, everyone's (a count, for every viewer)."""
    with project.read() as session:
        return sum(1 for i in _items(session) if i.open)


def answer_for(project: Project, annotator: str, query_id: str, chunk_id: str) -> Resolution | None:
    """The lead's newest answer to the annotator's current flag or comment on the pair (shown
    on their judging screen), or None."""
    found = item(project, annotator, query_id, chunk_id)
    return None if found is None else found.answer


def news_for(project: Project, annotator: str) -> list[ReviewItem]:
    """The annotator's items a lead answered since the annotator last labelled or marked
    anything: what to tell them when a session starts."""
    with project.read() as session:
        label_at = _as_datetime(session.scalar(
            select(func.max(Label.created_at)).where(Label.annotator == annotator)))
        mark_at = _as_datetime(session.scalar(
            select(func.max(PairMark.created_at)).where(PairMark.annotator == annotator,
                                                        PairMark.kind.in_(MARK_KINDS))))
        found = _items(session, annotator=annotator)
    seen = max((t for t in (label_at, mark_at) if t is not None), default=None)
    return [i for i in found if i.answer is not None and i.answer.at is not None
            and (seen is None or i.answer.at > seen)]


def news_message(project: Project, annotator: str, *, shown: int = 3) -> str | None:
    """What to tell ``annotator`` as a session starts (:func:`news_for`), or None: e.g. "2 of
    your flags were answered: q1 / c05 resolved by dora: refunds count; q3 / c11 sent back
    by dora." The text quotes data; the screen shows it as text."""
    found = news_for(project, annotator)
    if not found:
        return None
    what = "flags" if all(i.flagged for i in found) else "flags and comments"
    parts = []
    for i in found[:shown]:
        answer = i.answer
        assert answer is not None  # news_for keeps answered items only
        verb = "resolved" if answer.action == "resolve" else "sent back"
        said = f": {answer.note}" if answer.note else ""
        parts.append(f"{i.query_id} / {i.chunk_id} {verb} by {answer.by}{said}")
    more = f"; and {len(found) - shown} more" if len(found) > shown else ""
    count = f"{len(found)} of your {what} were" if len(found) > 1 else f"One of your {what} was"
    return f"{count} answered by a lead: {'; '.join(parts)}{more}."


def sent_back(project: Project, annotator: str) -> list[ReviewItem]:
    """The pairs a lead sent back to the annotator that they have not labelled since."""
    with project.read() as session:
        found = _items(session, annotator=annotator)
    return [i for i in found if i.resolved is not None and i.resolved.sent_back]


def _answer(project: Project, action: str, *, query_id: str, chunk_id: str,
            annotator: str | None, access: Access, note: str | None, source: str) -> ReviewItem:
    """Record ``action`` on the item as one review event, under the lead's name; nothing is
    written when the item's newest answer already is this one (the same action and note)."""
    if action not in ACTIONS:
        raise UsageError(f"A review is one of {', '.join(ACTIONS)}, not {quote(action)}.")
    access.require_lead("resolve flags or send them back")
    by = check_annotator(access.name or "")
    check_typed(note, "The note")
    note = (note or "").strip() or None

    def work(session: Session) -> ReviewItem:
        target = _target(session, query_id, chunk_id, annotator)
        current = target.answer
        if current is not None and (current.action, current.note) == (action, note):
            return target
        ensure_annotators(session.connection(), [by])
        session.add(PairMark(query_id=target.query_id, chunk_id=target.chunk_id, annotator=by,
                             kind=REVIEW, action=action, text=note, created_at=utcnow(),
                             source=source, resolves=target.mark_id))
        session.flush()
        return _items(session, annotator=target.annotator, query_id=target.query_id,
                      chunk_id=target.chunk_id)[0]

    return project.write(work)


def _target(session: Session, query_id: str, chunk_id: str, annotator: str | None) -> ReviewItem:
    """The item a review answers: the annotator's, or the pair's only one when no annotator is
    named."""
    found = _items(session, annotator=annotator, query_id=query_id, chunk_id=chunk_id)
    where = f"{quote(query_id)} / {quote(chunk_id)}"
    if not found:
        who = f"{quote(annotator)} has" if annotator is not None else "nobody has"
        raise UsageError(f"{who} a flag or comment on {where}, so there is nothing to review. "
                         "'ragjudge review' lists the open ones. Nothing was changed.")
    if len(found) > 1:
        names = ", ".join(i.annotator for i in found)
        raise UsageError(f"Several annotators flagged or commented on {where} ({names}): name one "
                         "with --annotator. Nothing was changed.")
    return found[0]


def resolve(project: Project, *, query_id: str, chunk_id: str, annotator: str | None,
            access: Access, note: str | None = None, source: str = "cli") -> ReviewItem:
    """Settle the annotator's flag or comment on the pair; ``note`` is what they will see.
    Only a lead may (anyone known while the project has no lead)."""
    return _answer(project, "resolve", query_id=query_id, chunk_id=chunk_id, annotator=annotator,
                   access=access, note=note, source=source)


def send_back(project: Project, *, query_id: str, chunk_id: str, annotator: str | None,
              access: Access, note: str | None = None, source: str = "cli") -> ReviewItem:
    """Ask the annotator to look at the pair again (it comes first in their queue, with
    ``note``) until they label it again. Only a lead may."""
    return _answer(project, "send-back", query_id=query_id, chunk_id=chunk_id, annotator=annotator,
                   access=access, note=note, source=source)


@dataclass(frozen=True)
class ReviewDetail:
    """An item with everything a lead reads to answer it: the query (text, description), the
    chunk, every annotator's current label on the pair with their flag, comment and time, and
    the pair's adjudications."""

    item: ReviewItem
    query: Any
    """:class:`ragjudge.services.labels.texts.QueryText`"""
    chunk: Any
    """:class:`ragjudge.services.labels.texts.ChunkText`"""
    pair: Any
    """:class:`ragjudge.services.gold.pairs.PairDetail`"""
    withdrawn: bool = False
    """The author took the flag and comment off since the list was read."""


def detail(project: Project, found: ReviewItem, *, access: Access) -> ReviewDetail:
    """The item as it is now (it may have been answered or changed meanwhile) and its pair, as
    ``access`` may read them: an item of someone else's only for a lead, and the pair's labels
    filtered by :func:`~ragjudge.services.gold.pairs.pair_detail`."""
    from ragjudge.services.gold.pairs import pair_detail
    from ragjudge.services.labels.texts import chunk_text, query_text

    _readable(access, found.annotator)
    now = item(project, found.annotator, found.query_id, found.chunk_id)
    return ReviewDetail(now or found, query_text(project, found.query_id),
                        chunk_text(project, found.chunk_id),
                        pair_detail(project, found.query_id, found.chunk_id, access=access),
                        withdrawn=now is None)
