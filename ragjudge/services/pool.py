"""The judging pool: per query, the union of the top-K chunks of the chosen runs (TREC pooling)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Select, and_, exists, func, or_, select

from ragjudge.services.qrels import newest_label_ids
from ragjudge.store.schema import Annotator, Label, RunEntry, published

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
    """How many pairs the pool holds, how many have a current grade from any annotator (on a
    complete reference's queries every pair is judged: unlisted means not relevant), and per
    annotator how many pool pairs they judged (``by_annotator``; never more than the pool)."""
    from ragjudge.services.runhead import ensure_rows

    ensure_rows(project, depth, runs, required=False)
    pool = pool_select(depth, runs).subquery()
    newest = newest_label_ids()
    current = (
        select(Label.query_id, Label.chunk_id, Label.annotator)
        .join(newest, Label.id == newest.c.id)
        .where(Label.grade.is_not(None))
        .subquery()
    )
    complete = select(Annotator.name).where(Annotator.reference.is_(True), Annotator.complete.is_(True))
    closed = select(current.c.query_id).where(current.c.annotator.in_(complete)).distinct()
    graded = exists().where(and_(current.c.query_id == pool.c.query_id,
                                 current.c.chunk_id == pool.c.chunk_id))
    with project.connect() as connection:
        pairs = connection.scalar(select(func.count()).select_from(pool))
        judged = connection.scalar(
            select(func.count()).select_from(pool).where(or_(graded, pool.c.query_id.in_(closed))))
        mine = dict(connection.execute(
            select(current.c.annotator, func.count())
            .join(pool, and_(pool.c.query_id == current.c.query_id,
                             pool.c.chunk_id == current.c.chunk_id))
            .group_by(current.c.annotator)).all())
        for name in connection.execute(complete).scalars():
            its = select(current.c.query_id).where(current.c.annotator == name).distinct()
            mine[name] = connection.scalar(
                select(func.count()).select_from(pool).where(pool.c.query_id.in_(its))) or 0
    return {"depth": depth, "pairs": int(pairs or 0), "judged": int(judged or 0),
            "by_annotator": {str(k): int(v) for k, v in sorted(mine.items()) if v}}


__all__ = ["DEFAULT_DEPTH", "pool_select", "pool_size_and_judged"]
