"""Judging: record label events, undo them, and step an annotator through the pool.

Every write is one committed transaction through :meth:`Project.write` (retried while another
annotator holds the lock), so a label the screen has moved past is on disk.

Label events are append-only (``store/schema.py``). The current state of a pair for an annotator
is its newest event, ignoring events with ``source='recheck'``: a recheck is the same annotator
seeing an earlier pair again unannounced, to measure their own consistency, and must not replace
the label they gave the first time.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from ragjudge.errors import UsageError
from ragjudge.store.schema import (
    Annotator,
    Facet,
    FacetLink,
    Label,
    Nugget,
    NuggetSupport,
    utcnow,
)

RECHECK = "recheck"
SUPPORT_LEVELS = ("full", "partial", "none")
IMPORTANCE_LEVELS = ("vital", "okay")


@dataclass(frozen=True)
class LabelState:
    """The newest (non-recheck) label event of one annotator for one pair."""

    id: int
    grade: int | None
    skipped: bool
    flagged: bool
    note: str | None
    created_at: datetime | None
    undoes: int | None
    source: str | None

    @property
    def handled(self) -> bool:
        """True when the pair needs nothing more from the annotator (graded or skipped)."""
        return self.grade is not None or self.skipped


def _state(row: Label | None) -> LabelState | None:
    if row is None:
        return None
    return LabelState(row.id, row.grade, bool(row.skipped), bool(row.flagged), row.note,
                      row.created_at, row.undoes, row.source)


# -- annotators ------------------------------------------------------------------------------


def check_annotator(name: str) -> str:
    """An annotator name, stripped; empty or control characters are a :class:`UsageError`."""
    cleaned = (name or "").strip()
    if not cleaned:
        raise UsageError("The annotator name is empty. Give a name such as --annotator alice.")
    if any(not ch.isprintable() for ch in cleaned) or len(cleaned) > 255:
        raise UsageError(f"The annotator name {cleaned!r} must be printable and under 256 characters.")
    return cleaned


def _ensure_annotator(session: Session, name: str) -> None:
    if session.get(Annotator, name) is None:
        session.add(Annotator(name=name, created_at=utcnow(), seen_guidelines=False))
        session.flush()


def ensure_annotator(project, name: str) -> bool:  # noqa: ANN001 - Project
    """Create the annotator if missing. Returns True when the annotator is new."""
    name = check_annotator(name)

    def work(session: Session) -> bool:
        if session.get(Annotator, name) is not None:
            return False
        _ensure_annotator(session, name)
        return True

    return project.write(work)


def annotator_seen_guidelines(project, name: str) -> bool:  # noqa: ANN001
    with project.read() as session:
        row = session.get(Annotator, name)
        return bool(row and row.seen_guidelines)


def mark_guidelines_seen(project, name: str) -> None:  # noqa: ANN001
    def work(session: Session) -> None:
        _ensure_annotator(session, name)
        session.get(Annotator, name).seen_guidelines = True

    project.write(work)


def annotator_names(project) -> list[str]:  # noqa: ANN001
    with project.read() as session:
        return list(session.scalars(select(Annotator.name).order_by(Annotator.name)))


# -- reading the current state ---------------------------------------------------------------


def _newest(session: Session, annotator: str, query_id: str, chunk_id: str,
            *, before: int | None = None) -> Label | None:
    stmt = (
        select(Label)
        .where(Label.annotator == annotator, Label.query_id == query_id, Label.chunk_id == chunk_id,
               Label.source.is_(None) | (Label.source != RECHECK))
        .order_by(Label.id.desc())
        .limit(1)
    )
    if before is not None:
        stmt = stmt.where(Label.id < before)
    return session.scalars(stmt).first()


def current_label(project, annotator: str, query_id: str, chunk_id: str) -> LabelState | None:  # noqa: ANN001
    """The annotator's current state of the pair (newest non-recheck event), or None."""
    with project.read() as session:
        return _state(_newest(session, annotator, query_id, chunk_id))


# -- writing events --------------------------------------------------------------------------


def _check_grade(project, grade: int | None) -> int | None:  # noqa: ANN001
    if grade is None:
        return None
    scale = project.scale
    if isinstance(grade, bool) or not isinstance(grade, int) or not scale.contains(grade):
        raise UsageError(
            f"Grade {grade!r} is not on the project's scale {scale.describe()} "
            f"({scale.min}..{scale.max})."
        )
    return grade


def _add_event(project, *, annotator: str, query_id: str, chunk_id: str, grade: int | None,  # noqa: ANN001
               skipped: bool = False, flagged: bool = False, note: str | None = None,
               duration_ms: int | None = None, source: str = "tui", undoes: int | None = None,
               carry: bool = False) -> int:
    annotator = check_annotator(annotator)
    duration = None if duration_ms is None else max(0, int(duration_ms))

    def work(session: Session) -> int:
        _ensure_annotator(session, annotator)
        g, s, f, n = grade, skipped, flagged, note
        if carry:  # flag/comment: the newest event stays the whole current state
            prev = _newest(session, annotator, query_id, chunk_id)
            if prev is not None:
                g = prev.grade
                s = prev.skipped or skipped
                f = flagged or (prev.flagged and not skipped)
                n = note if note is not None else prev.note
        event = Label(query_id=query_id, chunk_id=chunk_id, annotator=annotator, grade=g,
                      skipped=bool(s), flagged=bool(f), note=n, created_at=utcnow(),
                      duration_ms=duration, undoes=undoes, source=source)
        session.add(event)
        session.flush()
        return int(event.id)

    return project.write(work)


def record_label(project, *, annotator: str, query_id: str, chunk_id: str, grade: int,  # noqa: ANN001
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


def skip_pair(project, *, annotator: str, query_id: str, chunk_id: str,  # noqa: ANN001
              duration_ms: int | None = None, note: str | None = None, source: str = "tui") -> int:
    """Pass over the pair: an event with no grade and ``skipped`` set. A pair skipped without a
    grade comes back once the rest of the queue is done."""
    return _add_event(project, annotator=annotator, query_id=query_id, chunk_id=chunk_id,
                      grade=None, skipped=True, note=note, duration_ms=duration_ms, source=source)


def flag_pair(project, *, annotator: str, query_id: str, chunk_id: str, note: str | None = None,  # noqa: ANN001
              duration_ms: int | None = None, source: str = "tui") -> int:
    """Flag the pair for review (with an optional note); the current grade is carried forward."""
    return _add_event(project, annotator=annotator, query_id=query_id, chunk_id=chunk_id,
                      grade=None, flagged=True, note=note, duration_ms=duration_ms, source=source,
                      carry=True)


def comment_pair(project, *, annotator: str, query_id: str, chunk_id: str, note: str,  # noqa: ANN001
                 duration_ms: int | None = None, source: str = "tui") -> int:
    """Attach a comment to the pair; grade, skip and flag are carried forward."""
    return _add_event(project, annotator=annotator, query_id=query_id, chunk_id=chunk_id,
                      grade=None, note=note, duration_ms=duration_ms, source=source, carry=True)


@dataclass(frozen=True)
class UndoResult:
    """What :func:`undo_last` did: the new event, and the pair whose earlier state came back."""

    event_id: int
    undone_id: int
    query_id: str
    chunk_id: str
    grade: int | None
    source: str | None


def undo_last(project, annotator: str) -> UndoResult | None:  # noqa: ANN001
    """Undo the annotator's newest event that is neither an undo nor already undone.

    Writes a new event carrying the pair's state from before that event (``undoes`` = its id);
    calling again walks further back. Returns None when there is nothing left to undo. Undoing a
    recheck writes a recheck-sourced undo, so the current label stays untouched.
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
        if target.source == RECHECK:
            grade, skipped, flagged, note, source = None, False, False, None, RECHECK
        else:
            prev = _newest(session, annotator, target.query_id, target.chunk_id, before=target.id)
            grade = prev.grade if prev else None
            skipped = bool(prev.skipped) if prev else False
            flagged = bool(prev.flagged) if prev else False
            note = prev.note if prev else None
            source = target.source
        event = Label(query_id=target.query_id, chunk_id=target.chunk_id, annotator=annotator,
                      grade=grade, skipped=skipped, flagged=flagged, note=note, created_at=utcnow(),
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


def facets_for(project, query_id: str, *, annotator: str | None = None,  # noqa: ANN001
               chunk_id: str | None = None) -> list[FacetView]:
    """The query's facets (not removed), each with whether the annotator linked the chunk."""
    with project.read() as session:
        facets = session.scalars(select(Facet).where(Facet.query_id == query_id,
                                                     Facet.removed.is_(False)).order_by(Facet.id)).all()
        out = []
        for facet in facets:
            covered = False
            if annotator and chunk_id:
                link = session.scalars(
                    select(FacetLink).where(FacetLink.facet_id == facet.id, FacetLink.chunk_id == chunk_id,
                                            FacetLink.annotator == annotator)
                    .order_by(FacetLink.id.desc()).limit(1)).first()
                covered = bool(link and link.covered)
            out.append(FacetView(facet.id, facet.name, covered))
        return out


def nuggets_for(project, query_id: str, *, annotator: str | None = None,  # noqa: ANN001
                chunk_id: str | None = None) -> list[NuggetView]:
    """The query's nuggets (not removed), each with the annotator's support by the chunk."""
    with project.read() as session:
        nuggets = session.scalars(select(Nugget).where(Nugget.query_id == query_id,
                                                       Nugget.removed.is_(False),
                                                       Nugget.kind == "nugget").order_by(Nugget.id)).all()
        out = []
        for nugget in nuggets:
            support = "none"
            if annotator and chunk_id:
                row = session.scalars(
                    select(NuggetSupport).where(NuggetSupport.nugget_id == nugget.id,
                                                NuggetSupport.chunk_id == chunk_id,
                                                NuggetSupport.annotator == annotator)
                    .order_by(NuggetSupport.id.desc()).limit(1)).first()
                support = row.support if row else "none"
            out.append(NuggetView(nugget.id, nugget.text, nugget.importance, support))
        return out


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
    return cleaned


def add_facet(project, query_id: str, name: str) -> int:  # noqa: ANN001
    name = _text(name, "facet name")

    def work(session: Session) -> int:
        facet = Facet(query_id=query_id, name=name, removed=False, created_at=utcnow())
        session.add(facet)
        session.flush()
        return int(facet.id)

    return project.write(work)


def rename_facet(project, facet_id: int, name: str) -> None:  # noqa: ANN001
    name = _text(name, "facet name")
    project.write(lambda session: setattr(_facet(session, facet_id), "name", name))


def remove_facet(project, facet_id: int) -> None:  # noqa: ANN001
    """Hide the facet; its links stay in the event table."""
    project.write(lambda session: setattr(_facet(session, facet_id), "removed", True))


def set_facet_link(project, *, annotator: str, facet_id: int, chunk_id: str, covered: bool) -> int:  # noqa: ANN001
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


def add_nugget(project, query_id: str, text: str, importance: str = "okay") -> int:  # noqa: ANN001
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


def edit_nugget(project, nugget_id: int, *, text: str | None = None,  # noqa: ANN001
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


def remove_nugget(project, nugget_id: int) -> None:  # noqa: ANN001
    project.write(lambda session: setattr(_nugget(session, nugget_id), "removed", True))


def set_nugget_support(project, *, annotator: str, nugget_id: int, chunk_id: str, support: str) -> int:  # noqa: ANN001
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
