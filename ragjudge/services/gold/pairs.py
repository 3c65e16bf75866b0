"""Everything recorded about one pair: every annotator's current label with its note, flag,
comment and time, and the pair's adjudications -- as much of it as the viewer may see.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING
from sqlalchemy import func, select
from ragjudge.errors import UsageError
from ragjudge.services.access.rights import Access
from ragjudge.services.events.labels import newest_label_ids, not_recheck
from ragjudge.store.schema import Adjudication, Chunk, Label, Query


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


@dataclass(frozen=True)
class AnnotatorLabel:
    """One annotator's current label of the pair (``note``: the grade's note) and their flag
    (with its note) and comment; an annotator who only flagged or commented has no grade."""

    annotator: str
    grade: int | None
    skipped: bool
    flagged: bool
    note: str | None
    duration_ms: int | None
    created_at: datetime | None
    flag_note: str | None = None
    comment: str | None = None

    @property
    def remarks(self) -> str:
        """The flag, its note, the comment and the grade's note in one line (each text once)."""
        parts = []
        if self.flagged:
            parts.append(f"flagged: {self.flag_note}" if self.flag_note else "flagged")
        for text in (self.comment, self.note):
            if text and text != self.flag_note and text not in parts:
                parts.append(text)
        return " · ".join(parts)


@dataclass(frozen=True)
class PairDetail:
    """Everything the adjudication view shows for one pair."""

    query_id: str
    query_text: str
    chunk_id: str
    chunk_text: str
    labels: tuple[AnnotatorLabel, ...]
    adjudications: tuple[dict, ...]
    """Every adjudication of the pair, oldest first: grade, by, reason, created_at."""

    @property
    def adjudicated(self) -> int | None:
        return self.adjudications[-1]["grade"] if self.adjudications else None


def pair_detail(project: Project, query_id: str, chunk_id: str, *, access: Access) -> PairDetail:
    """The query, the chunk, each annotator's current label with note and time spent, their
    flags and comments, and the pair's adjudications, as ``access`` may see them: its own
    label and marks always; others' grades and the adjudications once it may see the pair's
    grades (:meth:`Access.may_see_pair`); others' flags and comments for a lead only."""
    found = _pair_detail(project, query_id, chunk_id)
    grades = access.may_see_pair(query_id, chunk_id)
    shown = []
    for label in found.labels:
        if label.annotator == access.name:
            shown.append(label)
            continue
        marks = access.may_read_marks_of(label.annotator)
        if not grades and not marks:
            continue
        shown.append(AnnotatorLabel(
            annotator=label.annotator,
            grade=label.grade if grades else None, skipped=label.skipped and grades,
            flagged=label.flagged and marks, note=label.note if grades else None,
            duration_ms=label.duration_ms if grades else None,
            created_at=label.created_at if grades else None,
            flag_note=label.flag_note if marks else None, comment=label.comment if marks else None))
    return PairDetail(found.query_id, found.query_text, found.chunk_id, found.chunk_text,
                      tuple(shown), found.adjudications if grades else ())


def _pair_detail(project: Project, query_id: str, chunk_id: str) -> PairDetail:
    from ragjudge.services.events.marks import NO_MARKS, marks_of_pair

    newest = newest_label_ids()
    with project.read() as session:
        query = session.get(Query, query_id)
        chunk = session.get(Chunk, chunk_id)
        if query is None:
            raise UsageError(f"there is no query '{query_id}' in this project.")
        if chunk is None:
            raise UsageError(f"there is no chunk '{chunk_id}' in this project.")
        rows = session.execute(
            select(Label)
            .join(newest, Label.id == newest.c.id)
            .where(Label.query_id == query_id, Label.chunk_id == chunk_id)
            .order_by(Label.annotator)
        ).scalars().all()
        # time spent: every non-recheck event of the annotator on this pair
        spent = dict(
            session.execute(
                select(Label.annotator, func.sum(Label.duration_ms))
                .where(Label.query_id == query_id, Label.chunk_id == chunk_id, not_recheck())
                .group_by(Label.annotator)
            ).all()
        )
        marks = marks_of_pair(session, query_id, chunk_id)
        labelled = {row.annotator: row for row in rows}
        decisions = session.execute(
            select(Adjudication)
            .where(Adjudication.query_id == query_id, Adjudication.chunk_id == chunk_id)
            .order_by(Adjudication.id)
        ).scalars().all()
        return PairDetail(
            query_id=query_id,
            query_text=query.text,
            chunk_id=chunk_id,
            chunk_text=chunk.text,
            labels=tuple(
                AnnotatorLabel(
                    annotator=name,
                    grade=row.grade if row is not None else None,
                    skipped=bool(row.skipped) if row is not None else False,
                    flagged=mark.flagged,
                    note=row.note if row is not None else None,
                    duration_ms=None if (ms := spent.get(name)) is None else int(ms),
                    created_at=row.created_at if row is not None else None,
                    flag_note=mark.flag_note,
                    comment=mark.comment,
                )
                for name in sorted(labelled.keys() | {n for n, m in marks.items() if m.any})
                for row, mark in [(labelled.get(name), marks.get(name, NO_MARKS))]
            ),
            adjudications=tuple(
                {"grade": a.grade, "by": a.by, "reason": a.reason, "created_at": a.created_at}
                for a in decisions
            ),
        )
