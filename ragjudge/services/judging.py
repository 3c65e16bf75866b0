"""Judging: record label events, undo them, and step an annotator through the pool.

Every write is one committed transaction through :meth:`Project.write` (retried while another
annotator holds the lock), so a label the screen has moved past is on disk.

Label events are append-only (``store/schema.py``). The current state of a pair for an annotator
is its newest event, ignoring events with ``source='recheck'``: a recheck is the same annotator
seeing an earlier pair again unannounced, to measure their own consistency, and must not replace
the label they gave the first time.

Flags and comments are marks, append-only events of their own (``pair_marks``): an annotator's
current flag (with its note) and current comment on a pair are the newest event of each kind. A
grade, a skip or an undo writes a label event and never touches a mark, so a flag or comment made
before grading stays, and a flag and a comment live side by side.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ragjudge.errors import UsageError
from ragjudge.formats.records import check_typed
from ragjudge.services.qrels import RECHECK, not_recheck
from ragjudge.store.annotators import ensure_annotators
from ragjudge.store.schema import (
    Annotator,
    Facet,
    FacetLink,
    Label,
    Nugget,
    NuggetSupport,
    PUBLISHED,
    PairMark,
    utcnow,
)

if TYPE_CHECKING:
    from ragjudge.services.project import Project

_PUBLISHED = PUBLISHED.format(alias="re")

SUPPORT_LEVELS = ("full", "partial", "none")
IMPORTANCE_LEVELS = ("vital", "okay")


@dataclass(frozen=True)
class LabelState:
    """The newest (non-recheck) label event of one annotator for one pair. ``note`` is the
    grade's note (from an import or given with the grade); flags and comments are
    :class:`PairMarks`."""

    id: int
    grade: int | None
    skipped: bool
    note: str | None
    created_at: datetime | None
    undoes: int | None
    source: str | None

    @property
    def handled(self) -> bool:
        """True when the pair needs nothing more from the annotator (graded or skipped)."""
        return self.grade is not None or self.skipped

    @property
    def undone(self) -> bool:
        """True when an undo took the pair's grade or skip back (and nothing came since)."""
        return self.undoes is not None and not self.handled


def _state(row: Label | None) -> LabelState | None:
    if row is None:
        return None
    return LabelState(row.id, row.grade, bool(row.skipped), row.note, row.created_at,
                      row.undoes, row.source)


MARK_KINDS = ("flag", "comment")


@dataclass(frozen=True)
class PairMarks:
    """An annotator's current flag (with its optional note) and comment on one pair."""

    flagged: bool = False
    flag_note: str | None = None
    comment: str | None = None

    def with_event(self, kind: str, action: str, text: str | None) -> PairMarks:
        """The marks after one more ``pair_marks`` event (a lead's review of someone's mark,
        kind ``review``, changes none of the lead's own marks)."""
        if kind not in MARK_KINDS:
            return self
        if kind == "flag":
            return PairMarks(action == "set", text if action == "set" else None, self.comment)
        return PairMarks(self.flagged, self.flag_note, text if action == "set" else None)

    @property
    def any(self) -> bool:
        return self.flagged or self.comment is not None


NO_MARKS = PairMarks()


# -- annotators ------------------------------------------------------------------------------


def check_annotator(name: str) -> str:
    """An annotator name, stripped; empty or control characters are a :class:`UsageError`."""
    cleaned = (name or "").strip()
    if not cleaned:
        raise UsageError("The annotator name is empty. Give a name such as --annotator alice.")
    if any(not ch.isprintable() for ch in cleaned) or len(cleaned) > 255:
        raise UsageError(f"The annotator name {cleaned!r} must be printable and under 256 characters.")
    return cleaned


def _ensure_annotator(session: Session, name: str) -> bool:
    return bool(ensure_annotators(session.connection(), [name]))


def ensure_annotator(project: Project, name: str) -> bool:
    """Create the annotator if missing. Returns True when the annotator is new."""
    name = check_annotator(name)

    def work(session: Session) -> bool:
        return _ensure_annotator(session, name)

    return project.write(work)


def annotator_seen_guidelines(project: Project, name: str) -> bool:
    with project.read() as session:
        row = session.get(Annotator, name)
        return bool(row and row.seen_guidelines)


def mark_guidelines_seen(project: Project, name: str) -> None:
    def work(session: Session) -> None:
        _ensure_annotator(session, name)
        annotator = session.get(Annotator, name)
        assert annotator is not None  # ensured just above, in the same transaction
        annotator.seen_guidelines = True

    project.write(work)


def annotator_names(project: Project) -> list[str]:
    with project.read() as session:
        return list(session.scalars(select(Annotator.name).order_by(Annotator.name)))


# -- reading the current state ---------------------------------------------------------------


def _newest(session: Session, annotator: str, query_id: str, chunk_id: str,
            *, before: int | None = None) -> Label | None:
    stmt = (
        select(Label)
        .where(Label.annotator == annotator, Label.query_id == query_id, Label.chunk_id == chunk_id,
               not_recheck())
        .order_by(Label.id.desc())
        .limit(1)
    )
    if before is not None:
        stmt = stmt.where(Label.id < before)
    return session.scalars(stmt).first()


def current_label(project: Project, annotator: str, query_id: str, chunk_id: str) -> LabelState | None:
    """The annotator's current state of the pair (newest non-recheck event), or None."""
    with project.read() as session:
        return _state(_newest(session, annotator, query_id, chunk_id))


def marks_of_query(connection, annotator: str, query_id: str,  # noqa: ANN001 - Connection/Session
                   chunk_id: str | None = None) -> dict[str, PairMarks]:
    """The annotator's current marks per chunk of the query (only chunks with a mark event)."""
    marks = PairMark.__table__
    stmt = (select(marks.c.chunk_id, marks.c.kind, marks.c.action, marks.c.text)
            .where(marks.c.annotator == annotator, marks.c.query_id == query_id)
            .order_by(marks.c.id))
    if chunk_id is not None:
        stmt = stmt.where(marks.c.chunk_id == chunk_id)
    out: dict[str, PairMarks] = {}
    for chunk, kind, action, text in connection.execute(stmt):
        out[chunk] = out.get(chunk, NO_MARKS).with_event(kind, action, text)
    return out


def marks_of_pair(connection, query_id: str, chunk_id: str) -> dict[str, PairMarks]:  # noqa: ANN001
    """Every annotator's current marks on the pair (annotators without mark events left out)."""
    marks = PairMark.__table__
    out: dict[str, PairMarks] = {}
    for annotator, kind, action, text in connection.execute(
            select(marks.c.annotator, marks.c.kind, marks.c.action, marks.c.text)
            .where(marks.c.query_id == query_id, marks.c.chunk_id == chunk_id).order_by(marks.c.id)):
        out[annotator] = out.get(annotator, NO_MARKS).with_event(kind, action, text)
    return out


def set_marks(kind: str):  # noqa: ANN201 - Select
    """A select of ``annotator, query_id, chunk_id, text`` of every pair whose newest ``kind``
    mark event (flag or comment) sets it: the current flags, or the current comments."""
    from sqlalchemy import func

    marks = PairMark.__table__
    newest = (select(func.max(marks.c.id).label("id")).where(marks.c.kind == kind)
              .group_by(marks.c.annotator, marks.c.query_id, marks.c.chunk_id).subquery())
    return (select(marks.c.annotator, marks.c.query_id, marks.c.chunk_id, marks.c.text)
            .join(newest, marks.c.id == newest.c.id).where(marks.c.action == "set"))


def current_marks(project: Project, annotator: str, query_id: str, chunk_id: str) -> PairMarks:
    """The annotator's current flag and comment on the pair."""
    with project.read() as session:
        return marks_of_query(session, annotator, query_id, chunk_id).get(chunk_id, NO_MARKS)


@dataclass(frozen=True)
class HistoryEntry:
    """One pair the annotator labelled, as it stands now (its newest non-recheck event)."""

    query_id: str
    chunk_id: str
    state: LabelState
    query_text: str


def label_history(project: Project, annotator: str, *, limit: int = 200,
                  offset: int = 0) -> list[HistoryEntry]:
    """The annotator's own labelled pairs, newest first: each pair once, with its current
    grade, skip or undo, ordered by when it last changed (what the ``l`` list of the judging
    screen pages through)."""
    from sqlalchemy import func

    from ragjudge.store.schema import Query

    newest = (select(func.max(Label.id).label("id"))
              .where(Label.annotator == annotator, not_recheck())
              .group_by(Label.query_id, Label.chunk_id).subquery())
    stmt = (select(Label, Query.text).join(newest, Label.id == newest.c.id)
            .outerjoin(Query, Query.id == Label.query_id)
            .order_by(Label.id.desc()).limit(limit).offset(offset))
    with project.read() as session:
        return [HistoryEntry(row.query_id, row.chunk_id, _state(row), text or "")  # type: ignore[arg-type]
                for row, text in session.execute(stmt)]


# -- writing events --------------------------------------------------------------------------


def _check_grade(project: Project, grade: int | None) -> int | None:
    if grade is None:
        return None
    scale = project.scale
    if isinstance(grade, bool) or not isinstance(grade, int) or not scale.contains(grade):
        raise UsageError(
            f"Grade {grade!r} is not on the project's scale {scale.describe()} "
            f"({scale.min}..{scale.max})."
        )
    return grade


def _add_event(project: Project, *, annotator: str, query_id: str, chunk_id: str, grade: int | None,
               skipped: bool = False, note: str | None = None, duration_ms: int | None = None,
               source: str = "tui") -> int:
    annotator = check_annotator(annotator)
    check_typed(note, "The note")
    duration = None if duration_ms is None else max(0, int(duration_ms))

    def work(session: Session) -> int:
        _ensure_annotator(session, annotator)
        event = Label(query_id=query_id, chunk_id=chunk_id, annotator=annotator, grade=grade,
                      skipped=bool(skipped), flagged=False, note=note, created_at=utcnow(),
                      duration_ms=duration, source=source)
        session.add(event)
        session.flush()
        return int(event.id)

    return project.write(work)


def record_label(project: Project, *, annotator: str, query_id: str, chunk_id: str, grade: int | None,
                 duration_ms: int | None = None, note: str | None = None, source: str = "tui") -> int:
    """Record ``grade`` for the pair as one committed event; returns the event id.

    The grade must be on the project's scale (:class:`UsageError` otherwise); the annotator row is
    created when missing. ``source='recheck'`` records a consistency recheck, which does not
    change the annotator's current label.
    """
    if grade is None:
        raise UsageError("record_label needs a grade; use skip_pair to pass over a pair.")
    grade = _check_grade(project, grade)
    return _add_event(project, annotator=annotator, query_id=query_id, chunk_id=chunk_id,
                      grade=grade, note=note, duration_ms=duration_ms, source=source)


def skip_pair(project: Project, *, annotator: str, query_id: str, chunk_id: str,
              duration_ms: int | None = None, note: str | None = None, source: str = "tui") -> int:
    """Pass over the pair: an event with no grade and ``skipped`` set. A pair skipped without a
    grade comes back once the rest of the queue is done."""
    return _add_event(project, annotator=annotator, query_id=query_id, chunk_id=chunk_id,
                      grade=None, skipped=True, note=note, duration_ms=duration_ms, source=source)


def _mark(project: Project, *, annotator: str, query_id: str, chunk_id: str, kind: str,
          text: str | None, clear: bool, source: str) -> PairMarks:
    """Append a set or clear event of ``kind`` unless the mark is already so; returns the
    annotator's marks on the pair afterwards."""
    annotator = check_annotator(annotator)
    check_typed(text, "The note" if kind == "flag" else "The comment")
    text = (text or "").strip() or None

    def work(session: Session) -> PairMarks:
        _ensure_annotator(session, annotator)
        before = marks_of_query(session, annotator, query_id, chunk_id).get(chunk_id, NO_MARKS)
        action = "clear" if clear else "set"
        after = before.with_event(kind, action, None if clear else text)
        if after != before:
            session.add(PairMark(query_id=query_id, chunk_id=chunk_id, annotator=annotator,
                                 kind=kind, action=action, text=None if clear else text,
                                 created_at=utcnow(), source=source))
            session.flush()
        return after

    return project.write(work)


def flag_pair(project: Project, *, annotator: str, query_id: str, chunk_id: str, note: str | None = None,
              source: str = "tui") -> PairMarks:
    """Flag the pair for review, with an optional note (flagging again replaces the note).
    Returns the annotator's marks on the pair."""
    return _mark(project, annotator=annotator, query_id=query_id, chunk_id=chunk_id,
                 kind="flag", text=note, clear=False, source=source)


def unflag_pair(project: Project, *, annotator: str, query_id: str, chunk_id: str,
                source: str = "tui") -> PairMarks:
    """Take the annotator's flag off the pair (nothing is written when there is none)."""
    return _mark(project, annotator=annotator, query_id=query_id, chunk_id=chunk_id,
                 kind="flag", text=None, clear=True, source=source)


def comment_pair(project: Project, *, annotator: str, query_id: str, chunk_id: str, note: str | None,
                 source: str = "tui") -> PairMarks:
    """Set the annotator's comment on the pair; an empty comment clears it. Returns the
    annotator's marks on the pair."""
    text = (note or "").strip()
    return _mark(project, annotator=annotator, query_id=query_id, chunk_id=chunk_id,
                 kind="comment", text=text, clear=not text, source=source)


@dataclass(frozen=True)
class UndoResult:
    """What :func:`undo_last` did: the new event, and the pair whose earlier state came back."""

    event_id: int
    undone_id: int
    query_id: str
    chunk_id: str
    grade: int | None
    source: str | None


def undo_last(project: Project, annotator: str) -> UndoResult | None:
    """Undo the annotator's newest event that is neither an undo nor already undone.

    Writes a new event carrying the pair's state from before that event (``undoes`` = its id);
    calling again walks further back. Returns None when there is nothing left to undo. Undoing a
    recheck writes a recheck-sourced undo, so the current label stays untouched. Flags and
    comments are not labels: an undo leaves them as they are.
    """
    annotator = check_annotator(annotator)

    def work(session: Session) -> UndoResult | None:
        undone = select(Label.undoes).where(Label.annotator == annotator, Label.undoes.is_not(None))
        target = session.scalars(
            select(Label)
            .where(Label.annotator == annotator, Label.undoes.is_(None), Label.id.not_in(undone))
            .order_by(Label.id.desc())
            .limit(1)
        ).first()
        if target is None:
            return None
        source: str | None
        if target.source == RECHECK:
            grade, skipped, note, source = None, False, None, RECHECK
        else:
            prev = _newest(session, annotator, target.query_id, target.chunk_id, before=target.id)
            grade = prev.grade if prev else None
            skipped = bool(prev.skipped) if prev else False
            note = prev.note if prev else None
            source = target.source
        event = Label(query_id=target.query_id, chunk_id=target.chunk_id, annotator=annotator,
                      grade=grade, skipped=skipped, flagged=False, note=note, created_at=utcnow(),
                      undoes=target.id, source=source)
        session.add(event)
        session.flush()
        return UndoResult(int(event.id), int(target.id), target.query_id, target.chunk_id, grade,
                          source)

    return project.write(work)


# -- facets and nuggets ----------------------------------------------------------------------


@dataclass(frozen=True)
class FacetView:
    id: int
    name: str
    covered: bool
    """Whether the annotator says the chunk in view covers this facet."""


@dataclass(frozen=True)
class NuggetView:
    id: int
    text: str
    importance: str
    support: str
    """The annotator's support of this nugget by the chunk in view: full, partial or none."""
    kind: str = "nugget"
    """``nugget`` (a fact a good answer needs) or ``claim`` (a claim of the reference answer,
    for Context Recall): both are marked alike, by how fully the chunk supports them."""


def _newest_marks(session: Session, model: type[FacetLink] | type[NuggetSupport], key_col: Any, ids: list[int],
                  annotator: str | None, chunk_id: str | None) -> dict[int, Any]:
    """The newest mark event per facet/nugget id for the annotator and chunk (one select)."""
    if not ids or not annotator or not chunk_id:
        return {}
    rows = session.execute(
        select(key_col, model).where(key_col.in_(ids), model.chunk_id == chunk_id,
                                     model.annotator == annotator).order_by(model.id)
    ).all()
    return {key: row for key, row in rows}  # later (newer) rows win


def marks_for(project: Project, query_id: str, *, annotator: str | None = None,
              chunk_id: str | None = None) -> tuple[list[FacetView], list[NuggetView]]:
    """The query's facets and nuggets with the annotator's marks for the chunk, in one session."""
    with project.read() as session:
        return (_facets(session, query_id, annotator, chunk_id),
                _nuggets(session, query_id, annotator, chunk_id))


def _facets(session: Session, query_id: str, annotator: str | None, chunk_id: str | None) -> list[FacetView]:
    facets = session.execute(select(Facet.id, Facet.name).where(
        Facet.query_id == query_id, Facet.removed.is_(False)).order_by(Facet.id)).all()
    links = _newest_marks(session, FacetLink, FacetLink.facet_id, [f[0] for f in facets], annotator, chunk_id)
    return [FacetView(fid, name, bool(links[fid].covered) if fid in links else False)
            for fid, name in facets]


def _nuggets(session: Session, query_id: str, annotator: str | None, chunk_id: str | None) -> list[NuggetView]:
    rows = session.execute(select(Nugget.id, Nugget.text, Nugget.importance, Nugget.kind).where(
        Nugget.query_id == query_id, Nugget.removed.is_(False)).order_by(Nugget.id)).all()
    # nuggets first, then the claims of the reference answer (an unknown kind reads as a nugget)
    nuggets = sorted(rows, key=lambda n: n[3] == "claim")
    support = _newest_marks(session, NuggetSupport, NuggetSupport.nugget_id, [n[0] for n in nuggets],
                            annotator, chunk_id)
    return [NuggetView(nid, text, importance, support[nid].support if nid in support else "none",
                       "claim" if kind == "claim" else "nugget")
            for nid, text, importance, kind in nuggets]


def facets_for(project: Project, query_id: str, *, annotator: str | None = None,
               chunk_id: str | None = None) -> list[FacetView]:
    """The query's facets (not removed), each with whether the annotator linked the chunk."""
    with project.read() as session:
        return _facets(session, query_id, annotator, chunk_id)


def nuggets_for(project: Project, query_id: str, *, annotator: str | None = None,
                chunk_id: str | None = None) -> list[NuggetView]:
    """The query's nuggets and claims (not removed), each with the annotator's support by the
    chunk: nuggets first, then claims."""
    with project.read() as session:
        return _nuggets(session, query_id, annotator, chunk_id)


def _facet(session: Session, facet_id: int) -> Facet:
    facet = session.get(Facet, facet_id)
    if facet is None or facet.removed:
        raise UsageError(f"There is no facet {facet_id}.")
    return facet


def _nugget(session: Session, nugget_id: int) -> Nugget:
    nugget = session.get(Nugget, nugget_id)
    if nugget is None or nugget.removed:
        raise UsageError(f"There is no nugget {nugget_id}.")
    return nugget


def _text(value: str, what: str) -> str:
    cleaned = (value or "").strip()
    if not cleaned:
        raise UsageError(f"The {what} is empty.")
    check_typed(cleaned, f"The {what}")
    return cleaned


def add_facet(project: Project, query_id: str, name: str) -> int:
    name = _text(name, "facet name")

    def work(session: Session) -> int:
        facet = Facet(query_id=query_id, name=name, removed=False, created_at=utcnow())
        session.add(facet)
        session.flush()
        return int(facet.id)

    return project.write(work)


def rename_facet(project: Project, facet_id: int, name: str) -> None:
    name = _text(name, "facet name")
    project.write(lambda session: setattr(_facet(session, facet_id), "name", name))


def remove_facet(project: Project, facet_id: int) -> None:
    """Hide the facet; its links stay in the event table."""
    project.write(lambda session: setattr(_facet(session, facet_id), "removed", True))


def set_facet_link(project: Project, *, annotator: str, facet_id: int, chunk_id: str, covered: bool) -> int:
    """Append an event: the annotator says the chunk covers (or not) the facet."""
    annotator = check_annotator(annotator)

    def work(session: Session) -> int:
        _ensure_annotator(session, annotator)
        _facet(session, facet_id)
        link = FacetLink(facet_id=facet_id, chunk_id=chunk_id, annotator=annotator,
                         covered=bool(covered), created_at=utcnow())
        session.add(link)
        session.flush()
        return int(link.id)

    return project.write(work)


def add_nugget(project: Project, query_id: str, text: str, importance: str = "okay") -> int:
    text = _text(text, "nugget text")
    if importance not in IMPORTANCE_LEVELS:
        raise UsageError(f"Nugget importance {importance!r} must be vital or okay.")

    def work(session: Session) -> int:
        nugget = Nugget(query_id=query_id, text=text, importance=importance, kind="nugget",
                        weight=1.0, removed=False, created_at=utcnow())
        session.add(nugget)
        session.flush()
        return int(nugget.id)

    return project.write(work)


def edit_nugget(project: Project, nugget_id: int, *, text: str | None = None,
                importance: str | None = None) -> None:
    if importance is not None and importance not in IMPORTANCE_LEVELS:
        raise UsageError(f"Nugget importance {importance!r} must be vital or okay.")
    new_text = _text(text, "nugget text") if text is not None else None

    def work(session: Session) -> None:
        nugget = _nugget(session, nugget_id)
        if new_text is not None:
            nugget.text = new_text
        if importance is not None:
            nugget.importance = importance

    project.write(work)


def remove_nugget(project: Project, nugget_id: int) -> None:
    project.write(lambda session: setattr(_nugget(session, nugget_id), "removed", True))


def set_nugget_support(project: Project, *, annotator: str, nugget_id: int, chunk_id: str, support: str) -> int:
    """Append an event: how fully the chunk supports the nugget (full, partial, none)."""
    annotator = check_annotator(annotator)
    if support not in SUPPORT_LEVELS:
        raise UsageError(f"Nugget support {support!r} must be full, partial or none.")

    def work(session: Session) -> int:
        _ensure_annotator(session, annotator)
        _nugget(session, nugget_id)
        row = NuggetSupport(nugget_id=nugget_id, chunk_id=chunk_id, annotator=annotator,
                            support=support, created_at=utcnow())
        session.add(row)
        session.flush()
        return int(row.id)

    return project.write(work)


# -- seeds -----------------------------------------------------------------------------------


def annotator_seed(annotator: str) -> int:
    """A 64-bit seed fixed per annotator name (stable across runs and machines)."""
    digest = hashlib.blake2b(annotator.encode("utf-8"), digest_size=8, person=b"ragjudge").digest()
    return int.from_bytes(digest, "little")


# -- choosing queries ------------------------------------------------------------------------


def check_queries(project: Project, ids: list[str] | None, option: str = "--queries") -> None:
    """Ids the project does not have are a typo (or the wrong project): refused, naming them,
    instead of being left out of the queue without a word."""
    if not ids:
        return
    from ragjudge.store.schema import Query

    wanted = list(dict.fromkeys(ids))
    found: set[str] = set()
    with project.read() as session:
        for start in range(0, len(wanted), 5000):
            found.update(session.scalars(select(Query.id).where(Query.id.in_(wanted[start:start + 5000]))))
    unknown = [q for q in wanted if q not in found]
    if unknown:
        listed = ", ".join(repr(q) for q in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        noun = "query id" if len(unknown) == 1 else f"{len(unknown):,} query ids"
        raise UsageError(f"{option}: the {noun} {listed} {'is' if len(unknown) == 1 else 'are'} "
                         "not in this project.")


def check_category(project: Project, category: str | None, option: str = "--category") -> None:
    """A category no query has is a typo: refused, naming the project's categories, instead of
    an empty queue."""
    if category is None:
        return
    from ragjudge.store.schema import Query

    with project.read() as session:
        known = sorted(c for c in session.scalars(select(Query.category).where(Query.category.is_not(None))
                                                  .distinct()) if c is not None)
    if category not in known:
        raise UsageError(f"{option} {category!r}: no query of this project has that category "
                         f"(categories: {', '.join(known) or 'none'}).")


# -- the queue -------------------------------------------------------------------------------

ORDERS = ("depth", "query")


def depth_rounds(depth: int) -> tuple[int, ...]:
    """The rounds of the ``depth`` order: 1, 2, 3, 5, 10, 20, 50, 100, ... up to ``depth``."""
    rounds = [d for d in (1, 2, 3, 5) if d < depth]
    step = 10
    while step < depth:
        rounds.extend(d for d in (step, 2 * step, 5 * step) if d < depth)
        step *= 10
    rounds.append(depth)
    return tuple(sorted(set(rounds)))


def _shuffle_key(seed: bytes, query_id: str, chunk_id: str) -> bytes:
    return hashlib.blake2b(f"{query_id}\x00{chunk_id}".encode(), digest_size=8, key=seed).digest()


@dataclass
class QueryPool:
    """The pool of one query for one annotator: chunk ids in the annotator's blind order."""

    query_id: str
    chunk_ids: list[str]
    min_ranks: list[int]
    sources: list[tuple[tuple[str, int], ...]]
    states: list[LabelState | None]
    buckets: list[list[int]]
    """Per round, indexes into ``chunk_ids`` of the pairs first offered in that round."""
    marks: dict[str, PairMarks]
    """The annotator's flag and comment per chunk (chunks without marks left out)."""

    def index(self, chunk_id: str) -> int | None:
        try:
            return self.chunk_ids.index(chunk_id)
        except ValueError:
            return None

    @property
    def handled(self) -> int:
        return sum(1 for s in self.states if s is not None and s.handled)


@dataclass(frozen=True)
class Position:
    """Where the annotator is: round, query position in the queue, index within the bucket."""

    round: int
    query: int
    slot: int


@dataclass(frozen=True)
class PairView:
    """The pair on screen (everything the judging screen shows of the queue)."""

    position: Position
    query_id: str
    chunk_id: str
    pair_index: int
    """0-based rank of this pair in its query's blind order."""
    query_pairs: int
    query_handled: int
    sources: tuple[tuple[str, int], ...]
    state: LabelState | None
    recheck: bool = False
    marks: PairMarks = NO_MARKS
    """The annotator's flag and comment (none shown on a recheck, which is blind)."""
    query_slot: int = 0
    """0-based place of this pair among its query's pairs in queue order (the order ``j`` walks:
    round by round, so in the ``depth`` order a query's pairs of later rounds come after its
    pairs of earlier ones)."""


class JudgingQueue:
    """An annotator's walk through the pool (TREC pooling: the union of the chosen runs' top-K).

    Nothing proportional to the pool is held: the queue keeps the ordered list of query ids, a
    small cache of per-query pools (each one indexed select), and per touched query the lowest
    rank of a pair still to judge. ``order='depth'`` goes in rounds of growing depth
    (:func:`depth_rounds`); ``order='query'`` judges a query's whole pool before the next.
    Within a query the pairs are shuffled with a seed fixed per annotator.
    """

    CACHE = 64
    BATCH = 400

    def __init__(self, project, annotator: str, *, runs: list[str] | None = None,  # noqa: ANN001
                 depth: int = 10, order: str = "depth", queries: list[str] | None = None,
                 category: str | None = None, show_source: bool = False, recheck: float = 0.0,
                 use_assignment: bool = True, pairs: list[tuple[str, str]] | None = None,
                 progress: Callable[..., None] | None = None) -> None:
        if order not in ORDERS:
            raise UsageError(f"--order {order}: use depth or query.")
        if depth < 1:
            raise UsageError(f"--depth {depth}: the pool depth must be at least 1.")
        if not 0.0 <= recheck < 1.0:
            raise UsageError(f"--recheck {recheck}: give a share between 0 and 1, such as 0.05.")
        self.project = project
        self.annotator = check_annotator(annotator)
        self.depth = depth
        self.order = order
        self.show_source = show_source
        self.recheck_share = recheck
        self.category = category
        self.seed = annotator_seed(self.annotator)
        self._seed_bytes = self.seed.to_bytes(8, "little")
        self.rounds = depth_rounds(depth) if order == "depth" else (depth,)
        self.runs = self._check_runs(runs)
        from ragjudge.services.runhead import ensure_rows

        ensure_rows(project, depth, self.runs or None, progress)  # a pool deeper than the runs' rows
        self.only: dict[str, set[str]] | None = None
        """With ``pairs``: the only chunks of each query the queue holds (judging exactly the
        pairs nobody has graded, from the evaluation screen)."""
        if pairs is not None:
            self.only = {}
            for query_id, chunk_id in pairs:
                self.only.setdefault(query_id, set()).add(chunk_id)
            queries = list(self.only)
            use_assignment = False
        check_queries(project, queries)
        check_category(project, category)
        self.assigned = use_assignment and self._has_assignment()
        self.query_ids = self._load_queries(queries, category)
        self._query_pos = {q: i for i, q in enumerate(self.query_ids)}
        self._cache: dict[str, QueryPool] = {}
        self._min_open: dict[str, int | None] = {}
        self._touched = self._touched_queries()
        import random

        self._rng = random.Random(self.seed)
        self.include_skipped = False
        self.totals: dict[str, int] | None = None
        """Pool size and handled pairs of the whole queue (set by :meth:`count_totals`)."""
        self._llm_order: str | None = None

    # -- loading ---------------------------------------------------------------------------

    def _check_runs(self, runs: list[str] | None) -> list[str] | None:
        if not runs:
            return None
        from ragjudge.store.schema import Run

        with self.project.read() as session:
            known = set(session.scalars(select(Run.name)))
        missing = [r for r in runs if r not in known]
        if missing:
            raise UsageError(f"--runs: no run named {', '.join(missing)} in this project "
                             f"(runs: {', '.join(sorted(known)) or 'none'}).")
        return list(dict.fromkeys(runs))

    def _has_assignment(self) -> bool:
        from ragjudge.store.schema import Assignment

        with self.project.read() as session:
            return session.scalar(select(Assignment.id).where(Assignment.annotator == self.annotator)
                                  .limit(1)) is not None

    def _run_filter(self, alias: str = "re") -> tuple[str, dict]:
        if not self.runs:
            return "", {}
        names = {f"run{i}": r for i, r in enumerate(self.runs)}
        return f" AND {alias}.run IN ({', '.join(':' + k for k in names)})", names

    def _load_queries(self, wanted: list[str] | None, category: str | None) -> list[str]:
        from sqlalchemy import text

        runs_sql, params = self._run_filter()
        if self.assigned:
            sql = ("SELECT q.id FROM queries q WHERE EXISTS (SELECT 1 FROM assignments a "
                   "WHERE a.annotator = :annotator AND a.query_id = q.id)")
            params = {"annotator": self.annotator}
        else:
            sql = ("SELECT q.id FROM queries q WHERE EXISTS (SELECT 1 FROM run_entries re "
                   f"WHERE re.query_id = q.id AND re.rank <= :depth{runs_sql} AND {_PUBLISHED})")
            params["depth"] = self.depth
        if category is not None:
            sql += " AND q.category = :category"
            params["category"] = category
        # queries in the order they were imported (SQLite's rowid); by id on other databases
        sql += " ORDER BY q.rowid" if self.project.engine.dialect.name == "sqlite" else " ORDER BY q.id"
        with self.project.connect() as connection:
            ids = [row[0] for row in connection.execute(text(sql), params)]
        if wanted is not None:
            present = set(ids)
            unknown = [q for q in wanted if q not in present]
            if unknown and len(unknown) == len(wanted):
                raise UsageError(f"--queries: none of the given queries ({', '.join(unknown[:5])}"
                                 f"{', ...' if len(unknown) > 5 else ''}) has pairs to judge "
                                 "in this pool.")
            keep = set(wanted)
            ids = [q for q in ids if q in keep]
        return ids

    def _touched_queries(self) -> set[str]:
        with self.project.read() as session:
            return set(session.scalars(select(Label.query_id).where(Label.annotator == self.annotator)
                                       .distinct()))

    def pool(self, query_id: str) -> QueryPool:
        """The query's pool for this annotator (cached)."""
        pool = self._cache.get(query_id)
        if pool is None:
            pool = self._load_pool(query_id)
            if len(self._cache) >= self.CACHE:
                self._cache.pop(next(iter(self._cache)))
            self._cache[query_id] = pool
        return pool

    def _load_pool(self, query_id: str) -> QueryPool:
        from sqlalchemy import text

        runs_sql, params = self._run_filter()
        params.update(query=query_id, depth=self.depth, annotator=self.annotator)
        if self.assigned:
            sql = ("SELECT a.chunk_id, re.run, re.rank FROM assignments a LEFT JOIN run_entries re "
                   f"ON re.query_id = a.query_id AND re.chunk_id = a.chunk_id AND {_PUBLISHED} "
                   "WHERE a.annotator = :annotator AND a.query_id = :query")
        else:
            sql = ("SELECT re.chunk_id, re.run, re.rank FROM run_entries re "
                   f"WHERE re.query_id = :query AND re.rank <= :depth{runs_sql} AND {_PUBLISHED}")
        ranks: dict[str, list[tuple[str, int]]] = {}
        only = None if self.only is None else self.only.get(query_id, set())
        if only is not None:
            ranks = {c: [] for c in only}
        with self.project.connect() as connection:
            for chunk_id, run, rank in connection.execute(text(sql), params):
                if only is not None and chunk_id not in only:
                    continue
                entry = ranks.setdefault(chunk_id, [])
                if run is not None:
                    entry.append((run, int(rank)))
            states = self._states(connection, query_id)
            marks = marks_of_query(connection, self.annotator, query_id)
        first = self._llm_first(query_id)
        chunk_ids = sorted(ranks, key=lambda c: (c not in first, _shuffle_key(self._seed_bytes, query_id, c)))
        min_ranks = [min((r for _, r in ranks[c]), default=10**9) for c in chunk_ids]
        buckets: list[list[int]] = [[] for _ in self.rounds]
        for i, rank in enumerate(min_ranks):
            buckets[self._round_of(rank)].append(i)
        return QueryPool(query_id, chunk_ids, min_ranks,
                         [tuple(sorted(ranks[c], key=lambda x: (x[1], x[0]))) for c in chunk_ids],
                         [states.get(c) for c in chunk_ids], buckets, marks)

    def _llm_first(self, query_id: str) -> set[str]:
        """The chunks of the query an LLM's grades put first (the lead's setting, off by
        default; :func:`ragjudge.services.llm_judge.priorities`)."""
        from ragjudge.services import llm_judge

        if self._llm_order is None:
            self._llm_order = llm_judge.queue_order(self.project)
        if self._llm_order == "off":
            return set()
        return set(llm_judge.priorities(self.project, self.annotator, query_id, self._llm_order))

    def _round_of(self, rank: int) -> int:
        for i, d in enumerate(self.rounds):
            if rank <= d:
                return i
        return len(self.rounds) - 1

    def _states(self, connection, query_id: str) -> dict[str, LabelState]:  # noqa: ANN001
        rows = connection.execute(
            select(Label.id, Label.chunk_id, Label.grade, Label.skipped, Label.note,
                   Label.created_at, Label.undoes, Label.source)
            .where(Label.annotator == self.annotator, Label.query_id == query_id,
                   not_recheck())
            .order_by(Label.id)
        )
        out: dict[str, LabelState] = {}
        for id_, chunk_id, grade, skipped, note, created, undoes, source in rows:
            out[chunk_id] = LabelState(id_, grade, bool(skipped), note, created, undoes, source)
        return out

    # -- where the work is -----------------------------------------------------------------

    def _open(self, state: LabelState | None) -> bool:
        if state is None:
            return True
        if self.include_skipped:
            return state.grade is None
        return not state.handled

    def _min_open_rank(self, query_id: str) -> int | None:
        """The lowest rank of a pair of the query still to judge (None: nothing left)."""
        if query_id in self._cache:
            pool = self._cache[query_id]
            ranks = [r for r, s in zip(pool.min_ranks, pool.states) if self._open(s)]
            return min(ranks, default=None)
        if query_id not in self._touched:
            return 1
        if query_id not in self._min_open:
            self._fill_min_open(query_id)
        return self._min_open[query_id]

    def _fill_min_open(self, query_id: str) -> None:
        """One grouped select for a batch of touched queries from ``query_id`` onward."""
        start = self._query_pos[query_id]
        batch = [q for q in self.query_ids[start:start + 4 * self.BATCH]
                 if q in self._touched and q not in self._min_open and q not in self._cache]
        batch = batch[: self.BATCH]
        if self.assigned or self.include_skipped or self.only is not None:  # rare: per query
            for q in batch:
                self._min_open[q] = self._min_open_rank_loaded(self.pool(q))
            return
        from sqlalchemy import bindparam, text

        runs_sql, params = self._run_filter()
        params.update(depth=self.depth, annotator=self.annotator, queries=batch)
        sql = text(
            "SELECT re.query_id, MIN(re.rank) FROM run_entries re "
            f"WHERE re.query_id IN :queries AND re.rank <= :depth{runs_sql} AND {_PUBLISHED} AND NOT EXISTS ("
            " SELECT 1 FROM labels l WHERE l.id = (SELECT MAX(l2.id) FROM labels l2"
            "  WHERE l2.annotator = :annotator AND l2.query_id = re.query_id"
            "  AND l2.chunk_id = re.chunk_id AND (l2.source IS NULL OR l2.source <> 'recheck'))"
            " AND (l.grade IS NOT NULL OR l.skipped = TRUE)) "
            "GROUP BY re.query_id"
        ).bindparams(bindparam("queries", expanding=True))
        with self.project.connect() as connection:
            found = dict(connection.execute(sql, params).all())
        for q in batch:
            self._min_open[q] = found.get(q)

    def _min_open_rank_loaded(self, pool: QueryPool) -> int | None:
        return min((r for r, s in zip(pool.min_ranks, pool.states) if self._open(s)), default=None)

    def _first_open(self, start: Position) -> Position | None:
        """The first pair still to judge at or after ``start`` in queue order."""
        for ri in range(start.round, len(self.rounds)):
            d = self.rounds[ri]
            q0 = start.query if ri == start.round else 0
            for qp in range(q0, len(self.query_ids)):
                qid = self.query_ids[qp]
                low = self._min_open_rank(qid)
                if low is None or low > d:
                    continue
                pool = self.pool(qid)
                slot0 = start.slot if (ri == start.round and qp == start.query) else 0
                # pairs of earlier rounds left open (navigated past, undone) come first
                for rj in range(ri + 1):
                    bucket = pool.buckets[rj]
                    s0 = slot0 if rj == ri else 0
                    for slot in range(s0, len(bucket)):
                        if self._open(pool.states[bucket[slot]]):
                            return Position(rj if rj == ri else rj, qp, slot)
        return None

    def open_pairs(self) -> Iterator[tuple[str, str]]:
        """Every (query id, chunk id) still to judge, in queue order, without moving: what a
        judge that works through the whole queue at once (an LLM) takes in turn."""
        for ri, depth in enumerate(self.rounds):
            for qid in self.query_ids:
                low = self._min_open_rank(qid)
                if low is None or low > depth:
                    continue
                pool = self.pool(qid)
                for i in pool.buckets[ri]:
                    if self._open(pool.states[i]):
                        yield qid, pool.chunk_ids[i]

    def first(self) -> PairView | None:
        """The first pair still to judge (where judging resumes), or None when all are done;
        a pair a lead sent back to the annotator comes before any other."""
        from ragjudge.services.review import sent_back

        for item in sent_back(self.project, self.annotator):
            view = self.goto_pair(item.query_id, item.chunk_id)
            if view is not None:
                return view
        return self.next_open(Position(0, 0, 0))

    def next_open(self, start: Position) -> PairView | None:
        pos = self._first_open(start)
        if pos is None and start != Position(0, 0, 0):
            pos = self._first_open(Position(0, 0, 0))
        if pos is None and not self.include_skipped:
            self.include_skipped = True  # second pass: pairs skipped without a grade
            self._min_open.clear()
            pos = self._first_open(Position(0, 0, 0))
            if pos is None:
                self.include_skipped = False
        return None if pos is None else self.view(pos)

    def after(self, pos: Position) -> PairView | None:
        """The next pair still to judge after ``pos`` (what a grade moves on to)."""
        nxt = Position(pos.round, pos.query, pos.slot + 1)
        return self.next_open(nxt)

    def view(self, pos: Position) -> PairView:
        qid = self.query_ids[pos.query]
        pool = self.pool(qid)
        i = pool.buckets[pos.round][pos.slot]
        chunk_id = pool.chunk_ids[i]
        return PairView(pos, qid, chunk_id, i, len(pool.chunk_ids), pool.handled,
                        pool.sources[i] if self.show_source else (), pool.states[i],
                        marks=pool.marks.get(chunk_id, NO_MARKS),
                        query_slot=sum(len(b) for b in pool.buckets[:pos.round]) + pos.slot)

    def refresh(self, view: PairView) -> PairView:
        return self.view(view.position)

    # -- moving without judging ------------------------------------------------------------

    def step(self, pos: Position, delta: int) -> PairView | None:
        """The neighbouring pair in queue order (judged or not), or None at either end."""
        ri, qp, slot = pos.round, pos.query, pos.slot + delta
        for _ in range(len(self.query_ids) * len(self.rounds) + 1):
            qid = self.query_ids[qp]
            bucket = self.pool(qid).buckets[ri]
            if 0 <= slot < len(bucket):
                return self.view(Position(ri, qp, slot))
            qp += delta
            if qp >= len(self.query_ids):
                ri, qp = ri + 1, 0
            elif qp < 0:
                ri, qp = ri - 1, len(self.query_ids) - 1
            if not 0 <= ri < len(self.rounds):
                return None
            slot = 0 if delta > 0 else len(self.pool(self.query_ids[qp]).buckets[ri]) - 1
        return None

    def step_query(self, pos: Position, delta: int) -> PairView | None:
        """The first pair of the next (``delta`` +1) or previous (-1) query in queue order,
        or None at either end.

        In the ``depth`` order a query appears once per round, so this stays in the round of
        ``pos`` (crossing into the next or previous round only at the end of one): moving by
        query and by pair walk the same order and never lose the place."""
        bucket = self.pool(self.query_ids[pos.query]).buckets[pos.round]
        edge = Position(pos.round, pos.query, len(bucket) - 1 if delta > 0 else 0)
        nxt = self.step(edge, +1 if delta > 0 else -1)
        if nxt is None or delta > 0:
            return nxt
        return self.view(Position(nxt.position.round, nxt.position.query, 0))

    def end(self, delta: int) -> PairView | None:
        """The first (``delta`` +1) or last (-1) pair of the queue order (None: empty)."""
        if not self.query_ids:
            return None
        if delta > 0:
            return self.step(Position(0, 0, -1), +1)
        last = len(self.query_ids) - 1
        rnd = len(self.rounds) - 1
        return self.step(Position(rnd, last, len(self.pool(self.query_ids[last]).buckets[rnd])), -1)

    def goto_query(self, query_pos: int) -> PairView | None:
        """The query's first pair still to judge in its blind order, else its first pair."""
        if not self.query_ids:
            return None
        query_pos = max(0, min(query_pos, len(self.query_ids) - 1))
        pool = self.pool(self.query_ids[query_pos])
        first = None
        for ri, bucket in enumerate(pool.buckets):
            for slot, i in enumerate(bucket):
                if first is None:
                    first = Position(ri, query_pos, slot)
                if self._open(pool.states[i]):
                    return self.view(Position(ri, query_pos, slot))
        return None if first is None else self.view(first)

    def goto_pair(self, query_id: str, chunk_id: str) -> PairView | None:
        qp = self._query_pos.get(query_id)
        if qp is None:
            return None
        pool = self.pool(query_id)
        i = pool.index(chunk_id)
        if i is None:
            return None
        for ri, bucket in enumerate(pool.buckets):
            if i in bucket:
                return self.view(Position(ri, qp, bucket.index(i)))
        return None

    def query_position(self, query_id: str) -> int | None:
        return self._query_pos.get(query_id)

    def find_queries(self, text_: str, limit: int = 20) -> list[tuple[str, str]]:
        """Queries of the queue whose id or text contains ``text_`` (for the ``/`` finder)."""
        from ragjudge.store.schema import Query

        if "\x00" in text_:  # no query holds one (none is stored); PostgreSQL would refuse it
            return []
        pattern = f"%{text_.strip()}%"
        out = []
        with self.project.read() as session:
            rows = session.execute(
                select(Query.id, Query.text).where(Query.id.like(pattern) | Query.text.like(pattern))
                .order_by(Query.id).limit(limit * 5)
            ).all()
        for qid, qtext in rows:
            if qid in self._query_pos:
                out.append((qid, qtext))
            if len(out) >= limit:
                break
        return out

    # -- recording -------------------------------------------------------------------------

    def note_event(self, query_id: str, chunk_id: str, state: LabelState | None) -> None:
        """Keep the cached state and the totals in step with an event just written.

        A pair whose query is not cached (an undo reaching back to a query not shown since the
        queue opened, as after a restart) has its state before the event read from the
        database, so the totals move by what the event changed there too."""
        self._touched.add(query_id)
        self._min_open.pop(query_id, None)
        pool = self._cache.get(query_id)
        if pool is not None:
            i = pool.index(chunk_id)
            if i is None:
                return
            before = pool.states[i]
            pool.states[i] = state
        elif self.totals is None or query_id not in self._query_pos:
            return
        else:
            pool = self.pool(query_id)  # read after the event: it holds the new state already
            if pool.index(chunk_id) is None:
                return
            with self.project.read() as session:
                before = (None if state is None else
                          _state(_newest(session, self.annotator, query_id, chunk_id, before=state.id)))
        if self.totals is not None:
            was = before is not None and before.handled
            now = state is not None and state.handled
            self.totals["handled"] += int(now) - int(was)

    def note_marks(self, query_id: str, chunk_id: str, marks: PairMarks) -> None:
        """Keep the cached flag and comment in step with a mark just written."""
        pool = self._cache.get(query_id)
        if pool is not None:
            pool.marks[chunk_id] = marks

    def reload_state(self, query_id: str, chunk_id: str) -> LabelState | None:
        state = current_label(self.project, self.annotator, query_id, chunk_id)
        self.note_event(query_id, chunk_id, state)
        return state

    def count_totals(self) -> dict[str, int]:
        """The queue's pool size and how many pairs the annotator has handled (a full scan:
        run it in a worker on big projects)."""
        from sqlalchemy import text

        runs_sql, params = self._run_filter()
        params.update(depth=self.depth, annotator=self.annotator)
        if self.assigned:
            pool_sql = "SELECT query_id, chunk_id FROM assignments re WHERE re.annotator = :annotator"
        else:
            pool_sql = (f"SELECT DISTINCT re.query_id, re.chunk_id FROM run_entries re "
                        f"WHERE re.rank <= :depth{runs_sql} AND {_PUBLISHED}")
        subset = len(self.query_ids)
        with self.project.connect() as connection:
            total_queries = connection.execute(text("SELECT COUNT(*) FROM queries")).scalar()
            filtered = subset != total_queries or self.only is not None
            if filtered:
                # small subsets: count per query through the cache-free loader
                pairs = handled = 0
                for qid in self.query_ids:
                    pool = self._load_pool(qid)
                    pairs += len(pool.chunk_ids)
                    handled += pool.handled
                self.totals = {"pairs": pairs, "handled": handled}
                return self.totals
            pairs = connection.execute(text(f"SELECT COUNT(*) FROM ({pool_sql}) p"), params).scalar()
            handled = connection.execute(text(
                f"SELECT COUNT(*) FROM ({pool_sql}) p JOIN labels l ON l.id = ("
                " SELECT MAX(l2.id) FROM labels l2 WHERE l2.annotator = :annotator"
                " AND l2.query_id = p.query_id AND l2.chunk_id = p.chunk_id"
                " AND (l2.source IS NULL OR l2.source <> 'recheck')) WHERE (l.grade IS NOT NULL OR l.skipped = TRUE)"
            ), params).scalar()
        self.totals = {"pairs": int(pairs or 0), "handled": int(handled or 0)}
        return self.totals

    # -- rechecks --------------------------------------------------------------------------

    def maybe_recheck(self, current: PairView | None) -> PairView | None:
        """With probability ``recheck``, one of the annotator's own earlier graded pairs, shown
        again unannounced (its earlier label hidden); graded with ``source='recheck'``."""
        if self.recheck_share <= 0 or self._rng.random() >= self.recheck_share:
            return None
        with self.project.read() as session:
            base = (select(Label.query_id, Label.chunk_id)
                    .where(Label.annotator == self.annotator, Label.grade.is_not(None),
                           Label.undoes.is_(None), Label.source == "tui"))
            count = session.scalar(select(func_count()).select_from(base.subquery())) or 0
            if count < 5:
                return None
            # leave out the last few labels: a recheck right after the first look measures memory
            offset = self._rng.randrange(count - 3)
            row = session.execute(base.order_by(Label.id).offset(offset).limit(1)).first()
        if row is None or (current and (row[0], row[1]) == (current.query_id, current.chunk_id)):
            return None
        view = self.goto_pair(row[0], row[1])
        if view is None:
            return None
        return PairView(view.position, view.query_id, view.chunk_id, view.pair_index,
                        view.query_pairs, view.query_handled, view.sources, None, recheck=True)


def func_count():  # noqa: ANN201
    from sqlalchemy import func

    return func.count()


# -- what the screen shows of a pair ---------------------------------------------------------


@dataclass(frozen=True)
class QueryText:
    id: str
    text: str
    description: str | None
    category: str | None
    narrative: str | None


@dataclass(frozen=True)
class ChunkText:
    id: str
    text: str
    doc_id: str | None
    title: str | None = None
    """``meta.title`` (the document's title, as chunkers and TREC documents give it)."""
    section: str | None = None
    """``meta.section`` (the heading the chunk sits under)."""


CHUNK_ORDER_KEYS = ("chunk_index", "position", "index", "order")
"""``meta`` fields that give a chunk's place in its document (the first one every chunk of the
document has as a whole number is used; without one, chunks go by id)."""


def _meta_text(meta: Any, key: str) -> str | None:
    value = meta.get(key) if isinstance(meta, dict) else None
    if value is None or isinstance(value, (dict, list)) or str(value).strip() == "":
        return None
    return str(value)


def query_text(project: Project, query_id: str) -> QueryText:
    from ragjudge.store.schema import Query

    with project.read() as session:
        row = session.get(Query, query_id)
        if row is None:
            return QueryText(query_id, "", None, None, None)
        meta = row.meta if isinstance(row.meta, dict) else {}
        narrative = meta.get("narrative")
        return QueryText(row.id, row.text, row.description, row.category,
                         str(narrative) if narrative else None)


def chunk_text(project: Project, chunk_id: str) -> ChunkText:
    from ragjudge.store.schema import Chunk

    with project.read() as session:
        row = session.get(Chunk, chunk_id)
        if row is None:
            return ChunkText(chunk_id, "", None)
        return ChunkText(row.id, row.text, row.doc_id, _meta_text(row.meta, "title"),
                         _meta_text(row.meta, "section"))


def document_order(project: Project, doc_id: str) -> list[str]:
    """The ids of the document's chunks in their order: by the first of
    :data:`CHUNK_ORDER_KEYS` that every chunk of the document holds as a whole number, else by
    id."""
    from ragjudge.store.schema import Chunk

    with project.read() as session:
        rows = session.execute(select(Chunk.id, Chunk.meta).where(Chunk.doc_id == doc_id)).all()
    for key in CHUNK_ORDER_KEYS:
        places = [m.get(key) if isinstance(m, dict) else None for _, m in rows]
        if rows and all(isinstance(p, int) and not isinstance(p, bool) for p in places):
            return [cid for _, cid in sorted(zip(places, (r[0] for r in rows)))]
    return sorted(r[0] for r in rows)


def chunk_neighbours(project: Project, chunk_id: str) -> tuple[ChunkText | None, ChunkText | None]:
    """The chunks before and after this one in its document (None at an end, or without a
    ``doc_id``)."""
    chunk = chunk_text(project, chunk_id)
    if not chunk.doc_id:
        return None, None
    order = document_order(project, chunk.doc_id)
    i = order.index(chunk_id)
    return (chunk_text(project, order[i - 1]) if i > 0 else None,
            chunk_text(project, order[i + 1]) if i + 1 < len(order) else None)


def annotator_progress(project: Project) -> list[dict]:
    """Per annotator: current grades, skipped pairs, flagged pairs, events and kind (human or
    llm), for the home screen."""
    from sqlalchemy import func, text

    with project.connect() as connection:
        rows = connection.execute(text(
            "SELECT a.name, "
            " (SELECT COUNT(*) FROM labels l WHERE l.annotator = a.name) AS events, a.kind "
            "FROM annotators a ORDER BY a.name")).all()
        current = connection.execute(text(
            "SELECT l.annotator, SUM(CASE WHEN l.grade IS NOT NULL THEN 1 ELSE 0 END), "
            " SUM(CASE WHEN l.grade IS NULL AND l.skipped = TRUE THEN 1 ELSE 0 END) "
            "FROM labels l JOIN (SELECT MAX(id) AS id "
            " FROM labels WHERE source IS NULL OR source <> 'recheck' GROUP BY annotator, query_id, chunk_id) n "
            " ON n.id = l.id "
            "GROUP BY l.annotator")).all()
        flagged = set_marks("flag").subquery()
        flags: dict[str, int] = dict(connection.execute(select(flagged.c.annotator, func.count())
                                        .group_by(flagged.c.annotator)).all())
    by_name = {name: (int(g or 0), int(s or 0)) for name, g, s in current}
    out = []
    for name, events, kind in rows:
        graded, skipped = by_name.get(name, (0, 0))
        out.append({"annotator": name, "graded": graded, "skipped": skipped,
                    "flagged": int(flags.get(name, 0)), "events": int(events or 0),
                    "kind": kind or "human"})
    return out


