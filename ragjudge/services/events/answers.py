"""Current judgments of generated answers: the newest event per (thing judged, annotator)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from sqlalchemy import func, select
from sqlalchemy.engine import Connection
from ragjudge.store.schema import (
    Answer,
    AnswerCitation,
    AnswerJudgment,
    Nugget,
)


if TYPE_CHECKING:
    pass


SUPPORTS = ("full", "partial", "none")


LEVELS = {"none": 0, "partial": 1, "full": 2}
"""Support as a number: agreement statistics treat it as an ordinal scale 0-2."""


BATCH = 500  # ids per IN (...) clause


@dataclass(frozen=True)
class CurrentJudgment:
    """One annotator's current judgment of one thing about an answer."""

    answer_id: int
    query_id: str
    run: str
    annotator: str
    nugget_id: int | None
    nugget: str | None
    sentence: int | None
    chunk_id: str | None
    support: str


def _newest_ids() -> Any:
    j = AnswerJudgment
    return (select(func.max(j.id).label("id"))
            .group_by(j.answer_id, j.annotator, j.nugget_id, j.sentence, j.chunk_id).subquery())


def current_judgments(connection: Connection, *, annotators: Iterable[str] | None = None,
                      run: str | None = None, query_ids: Sequence[str] | None = None
                      ) -> list[CurrentJudgment]:
    """Every annotator's current judgment (its newest event, when it has a support) of things
    that still exist: nuggets not removed, citations the answer still has. Sorted by query, run,
    annotator, then nugget or (sentence, chunk)."""
    j = AnswerJudgment
    newest = _newest_ids()
    cited = (select(AnswerCitation.answer_id).where(
        AnswerCitation.answer_id == j.answer_id, AnswerCitation.sentence == j.sentence,
        AnswerCitation.chunk_id == j.chunk_id).exists())
    stmt = (select(j.answer_id, Answer.query_id, Answer.run, j.annotator, j.nugget_id, Nugget.text,
                   j.sentence, j.chunk_id, j.support)
            .join(newest, j.id == newest.c.id)
            .join(Answer, Answer.id == j.answer_id)
            .outerjoin(Nugget, Nugget.id == j.nugget_id)
            .where(j.support.is_not(None))
            .where(((j.nugget_id.is_not(None)) & Nugget.removed.is_(False) & (Nugget.kind == "nugget"))
                   | (j.nugget_id.is_(None) & cited)))
    if annotators is not None:
        stmt = stmt.where(j.annotator.in_(list(annotators)))
    if run is not None:
        stmt = stmt.where(Answer.run == run)
    rows: list[Any] = []
    if query_ids is None:
        rows = list(connection.execute(stmt).all())
    else:
        wanted = list(dict.fromkeys(query_ids))
        for at in range(0, len(wanted), BATCH):
            rows += connection.execute(stmt.where(Answer.query_id.in_(wanted[at:at + BATCH]))).all()
    out = [CurrentJudgment(int(r[0]), r[1], r[2], r[3], None if r[4] is None else int(r[4]), r[5],
                           None if r[6] is None else int(r[6]), r[7], r[8]) for r in rows]
    out.sort(key=lambda c: (c.query_id, c.run, c.annotator, c.nugget_id is None,
                            c.nugget_id or 0, c.sentence or 0, c.chunk_id or ""))
    return out


def answers_stamp(project) -> int:  # noqa: ANN001
    """The newest answer judgment's id: it changes exactly when a judgment was written (the
    table is append-only), and costs one index lookup, so a live screen can poll it."""
    with project.connect() as connection:
        return int(connection.scalar(select(func.max(AnswerJudgment.id))) or 0)
