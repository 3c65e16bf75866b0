"""The judging pool: per query, the union of the top-K chunks of the chosen runs (TREC pooling)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Select, and_, exists, func, select

from ragjudge.services.qrels import newest_label_ids
from ragjudge.store.schema import Label, RunEntry, published

if TYPE_CHECKING:
    from ragjudge.services.project import Project

DEFAULT_DEPTH = 10


def pool_select(depth: int = DEFAULT_DEPTH, runs: list[str] | None = None) -> Select:
    """A select of distinct (query_id, chunk_id) pairs in the pool."""
    stmt = (select(RunEntry.query_id, RunEntry.chunk_id).where(RunEntry.rank <= depth, published())
            .distinct())
    if runs:
        stmt = stmt.where(RunEntry.run.in_(runs))
    return stmt


def pool_size_and_judged(project: Project, depth: int = DEFAULT_DEPTH, runs: list[str] | None = None) -> dict:
    """How many pairs the pool holds and how many have a current grade from any annotator."""
    pool = pool_select(depth, runs).subquery()
    newest = newest_label_ids()
    graded = (
        select(Label.query_id, Label.chunk_id)
        .join(newest, Label.id == newest.c.id)
        .where(Label.grade.is_not(None))
        .distinct()
        .subquery()
    )
    with project.connect() as connection:
        pairs = connection.scalar(select(func.count()).select_from(pool))
        judged = connection.scalar(
            select(func.count()).select_from(pool).where(
                exists().where(and_(graded.c.query_id == pool.c.query_id,
                                    graded.c.chunk_id == pool.c.chunk_id))
            )
        )
    return {"depth": depth, "pairs": int(pairs or 0), "judged": int(judged or 0)}


__all__ = ["DEFAULT_DEPTH", "pool_select", "pool_size_and_judged"]
