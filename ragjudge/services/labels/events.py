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

from dataclasses import dataclass
from types import EllipsisType
from typing import TYPE_CHECKING
from sqlalchemy import select
from sqlalchemy.orm import Session
from ragjudge.errors import UsageError
from ragjudge.formats.records import check_typed
from ragjudge.services.events.labels import RECHECK
from ragjudge.store.schema import (
    Label,
    PairMark,
    utcnow,
)
from ragjudge.services.events.annotators import check_annotator, ensure_annotator_in
from ragjudge.services.events.marks import NO_MARKS, PairMarks, marks_of_query
from ragjudge.services.events.state import LabelState, label_state, newest_event
from ragjudge.safetext import quote


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


def _check_grade(project: Project, grade: int | None) -> int | None:
    if grade is None:
        return None
    scale = project.scale
    if isinstance(grade, bool) or not isinstance(grade, int) or not scale.contains(grade):
        raise UsageError(
            f"Grade {quote(grade)} is not on the project's scale {scale.describe()} "
            f"({scale.min}..{scale.max})."
        )
    return grade


class LabelConflict(UsageError):
    """Another session of the same annotator recorded something on the pair after this one
    showed it: the write is refused, and :attr:`current` is what stands now."""

    def __init__(self, message: str, current: LabelState | None) -> None:
        super().__init__(message)
        self.current = current


def _conflict(annotator: str, current: LabelState | None) -> LabelConflict:
    if current is None:
        what = "undid its label"
    elif current.grade is not None:
        what = f"recorded grade {current.grade}"
    elif current.skipped:
        what = "skipped it"
    else:
        what = "undid its label"
    return LabelConflict(
        f"Another session of {annotator} {what} on this pair after this one showed it, so this "
        "label was not recorded. The pair now shows what stands; give the grade again to "
        "replace it.", current)


def _add_event(project: Project, *, annotator: str, query_id: str, chunk_id: str, grade: int | None,
               skipped: bool = False, note: str | None = None, duration_ms: int | None = None,
               source: str = "tui", seen: int | None | EllipsisType = ...) -> int:
    annotator = check_annotator(annotator)
    check_typed(note, "The note")
    duration = None if duration_ms is None else max(0, int(duration_ms))

    def work(session: Session) -> int:
        ensure_annotator_in(session, annotator)
        if seen is not ... and source != RECHECK:
            current = newest_event(session, annotator, query_id, chunk_id)
            if (None if current is None else int(current.id)) != seen:
                raise _conflict(annotator, label_state(current))
        event = Label(query_id=query_id, chunk_id=chunk_id, annotator=annotator, grade=grade,
                      skipped=bool(skipped), flagged=False, note=note, created_at=utcnow(),
                      duration_ms=duration, source=source)
        session.add(event)
        session.flush()
        return int(event.id)

    return project.write(work)


def record_label(project: Project, *, annotator: str, query_id: str, chunk_id: str, grade: int | None,
                 duration_ms: int | None = None, note: str | None = None, source: str = "tui",
                 seen: int | None | EllipsisType = ...) -> int:
    """Record ``grade`` for the pair as one committed event; returns the event id.

    The grade must be on the project's scale (:class:`UsageError` otherwise); the annotator row is
    created when missing. ``source='recheck'`` records a consistency recheck, which does not
    change the annotator's current label.

    ``seen`` is the id of the annotator's newest event on the pair that the screen showed (None:
    none): when another session of the same annotator wrote on the pair since, nothing is
    recorded and :class:`LabelConflict` says what stands. Left out, the label is recorded
    whatever came before (imports, scripts).
    """
    if grade is None:
        raise UsageError("record_label needs a grade; use skip_pair to pass over a pair.")
    grade = _check_grade(project, grade)
    return _add_event(project, annotator=annotator, query_id=query_id, chunk_id=chunk_id,
                      grade=grade, note=note, duration_ms=duration_ms, source=source, seen=seen)


def skip_pair(project: Project, *, annotator: str, query_id: str, chunk_id: str,
              duration_ms: int | None = None, note: str | None = None, source: str = "tui",
              seen: int | None | EllipsisType = ...) -> int:
    """Pass over the pair: an event with no grade and ``skipped`` set. A pair skipped without a
    grade comes back once the rest of the queue is done. ``seen`` as for :func:`record_label`."""
    return _add_event(project, annotator=annotator, query_id=query_id, chunk_id=chunk_id,
                      grade=None, skipped=True, note=note, duration_ms=duration_ms, source=source,
                      seen=seen)


def _mark(project: Project, *, annotator: str, query_id: str, chunk_id: str, kind: str,
          text: str | None, clear: bool, source: str) -> PairMarks:
    """Append a set or clear event of ``kind`` unless the mark is already so; returns the
    annotator's marks on the pair afterwards."""
    annotator = check_annotator(annotator)
    check_typed(text, "The note" if kind == "flag" else "The comment")
    text = (text or "").strip() or None

    def work(session: Session) -> PairMarks:
        ensure_annotator_in(session, annotator)
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
            prev = newest_event(session, annotator, target.query_id, target.chunk_id, before=target.id)
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
