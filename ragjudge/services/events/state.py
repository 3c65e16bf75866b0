"""An annotator's own label of a pair as it stands (its newest event), and their history."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING
from sqlalchemy import select
from sqlalchemy.orm import Session
from ragjudge.services.events.labels import not_recheck
from ragjudge.services.events.marks import NO_MARKS, PairMarks
from ragjudge.store.schema import (
    Label,
    PairMark,
)


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


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


def label_state(row: Label | None) -> LabelState | None:
    if row is None:
        return None
    return LabelState(row.id, row.grade, bool(row.skipped), row.note, row.created_at,
                      row.undoes, row.source)


def newest_event(session: Session, annotator: str, query_id: str, chunk_id: str,
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
        return label_state(newest_event(session, annotator, query_id, chunk_id))


@dataclass(frozen=True)
class HistoryEntry:
    """One pair the annotator labelled, as it stands now (its newest non-recheck event)."""

    query_id: str
    chunk_id: str
    state: LabelState
    query_text: str
    marks: PairMarks = NO_MARKS
    """The annotator's current flag and comment on the pair."""


def label_history(project: Project, annotator: str, *, limit: int = 200,
                  offset: int = 0) -> list[HistoryEntry]:
    """The annotator's own labelled pairs, newest first: each pair once, with its current
    grade, skip or undo and their flag and comment, ordered by when the label last changed
    (what the ``l`` list of the judging screen pages through)."""
    from sqlalchemy import func

    from ragjudge.store.schema import Query

    newest = (select(func.max(Label.id).label("id"))
              .where(Label.annotator == annotator, not_recheck())
              .group_by(Label.query_id, Label.chunk_id).subquery())
    stmt = (select(Label, Query.text).join(newest, Label.id == newest.c.id)
            .outerjoin(Query, Query.id == Label.query_id)
            .order_by(Label.id.desc()).limit(limit).offset(offset))
    with project.read() as session:
        page = list(session.execute(stmt))
        marks = _page_marks(session, annotator, {row.query_id for row, _ in page})
        return [HistoryEntry(row.query_id, row.chunk_id, label_state(row), text or "",  # type: ignore[arg-type]
                             marks.get((row.query_id, row.chunk_id), NO_MARKS))
                for row, text in page]


def _page_marks(session: Session, annotator: str,
                query_ids: set[str]) -> dict[tuple[str, str], PairMarks]:
    """The annotator's current marks on the pairs of ``query_ids`` (one read for a page)."""
    marks = PairMark.__table__
    out: dict[tuple[str, str], PairMarks] = {}
    if not query_ids:
        return out
    stmt = (select(marks.c.query_id, marks.c.chunk_id, marks.c.kind, marks.c.action, marks.c.text)
            .where(marks.c.annotator == annotator, marks.c.query_id.in_(sorted(query_ids)))
            .order_by(marks.c.id))
    for query_id, chunk_id, kind, action, text in session.execute(stmt):
        pair = (query_id, chunk_id)
        out[pair] = out.get(pair, NO_MARKS).with_event(kind, action, text)
    return out
