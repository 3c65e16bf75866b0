"""Judging a sample of the pool: drawing it, keeping it, reading it back.

``ragjudge assign --sample N`` draws N pairs of each query's pool for judging with
:func:`ragjudge.metrics.sampled.draw_sample` (``uniform``: a simple random sample per query;
``stratified``: rank bands 1-10, 11-30, 31-100, 101- sampled at rates halving from band to
band), and keeps every pooled pair with its best rank, stratum, inclusion probability and
whether it was drawn (``pool_samples``, ``pool_sample_pairs``). Both tables are append-only:
drawing again adds a sample with the next number. The newest sample is the project's current
one, which the sampled estimators read when the project is scored (:func:`current_sample`);
an older one stays as it was drawn and is read by its number (:func:`read_sample`).

The pool is the one ``assign`` splits: per query, the chunks the chosen runs rank within
``depth``, each pair with its best rank over those runs. The pairs are put in order of query id
then chunk id (by code point) before drawing, so the same pool and seed draw the same sample on
SQLite and on PostgreSQL, whose collations order text differently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from ragjudge.errors import UsageError
from ragjudge.metrics.sampled import RANK_BANDS, PoolSample, draw_sample
from ragjudge.safetext import quote
from ragjudge.store.schema import PoolSampleDraw, PoolSamplePair, RunEntry, published

if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


STRATEGIES = ("uniform", "stratified")
"""How ``assign --sample`` draws: every pooled pair of a query alike, or by rank bands."""

SAMPLED_MEASURES = ("infAP", "statAP", "xinfAP", "infNDCG", "infP@10")
"""The estimates a judged sample gives, as ``assign --sample`` suggests scoring them."""


def check_sample(size: int, strategy: str) -> None:
    """Refuse a sample size below 1 or an unknown strategy, naming the option."""
    if strategy not in STRATEGIES:
        raise UsageError(f"--strategy {quote(strategy)}: use uniform (every pair of a query's "
                         "pool equally likely) or stratified (rank bands 1-10, 11-30, 31-100, "
                         "101- drawn at rates halving from band to band, the top densest).")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise UsageError(f"--sample {size}: give how many pairs of each query's pool to draw "
                         "for judging, a whole number of 1 or more.")


@dataclass(frozen=True)
class PooledPairs:
    """The pool with each pair's best rank over the pooled runs, in (query, chunk) order."""

    query_ids: list[str]
    chunk_ids: list[str]
    ranks: np.ndarray

    def __len__(self) -> int:
        return len(self.query_ids)


def pooled_pairs(connection: Connection, depth: int, runs: Sequence[str] | None = None) -> PooledPairs:
    """The pool at ``depth`` of ``runs`` (default: every run), each pair once with its best
    rank, ordered by query id then chunk id (code points, on every backend alike)."""
    stmt = (select(RunEntry.query_id, RunEntry.chunk_id, func.min(RunEntry.rank))
            .where(RunEntry.rank <= depth, published())
            .group_by(RunEntry.query_id, RunEntry.chunk_id))
    if runs:
        stmt = stmt.where(RunEntry.run.in_(list(runs)))
    rows: list[tuple[str, str, int]] = sorted(
        (str(q), str(c), int(r)) for q, c, r in connection.execute(stmt))
    return PooledPairs([r[0] for r in rows], [r[1] for r in rows],
                       np.fromiter((r[2] for r in rows), dtype=np.int64, count=len(rows)))


def draw(pool: PooledPairs, size: int, strategy: str, seed: int,
         bands: tuple[int, ...] = RANK_BANDS) -> PoolSample:
    """:func:`ragjudge.metrics.sampled.draw_sample` over the pool (ranks for the bands)."""
    check_sample(size, strategy)
    return draw_sample(pool.query_ids, pool.chunk_ids, pool.ranks, size=size,
                       strategy=strategy,  # type: ignore[arg-type]  # checked just above
                       bands=bands, seed=seed)


@dataclass(frozen=True)
class Band:
    """One stratum of a sample: the ranks it covers, its pooled and drawn pairs."""

    stratum: int
    ranks: str
    pooled: int
    drawn: int


@dataclass(frozen=True)
class StoredSample:
    """A sample of the pool as the project keeps it: its number, design and pairs."""

    id: int
    strategy: str
    size: int
    seed: int
    depth: int
    bands: tuple[int, ...]
    runs: tuple[str, ...] | None
    created_at: datetime
    pool: PoolSample
    """every pooled pair: stratum, inclusion probability, drawn (what the estimators read)"""
    ranks: np.ndarray
    """each pooled pair's best rank over the runs"""

    @property
    def n_queries(self) -> int:
        return len(np.unique(self.pool.query_ids))

    def strata(self) -> list[Band]:
        """Pooled and drawn pairs per stratum, with the ranks each covers."""
        out = []
        for s in np.unique(self.pool.stratum).tolist():
            mine = self.pool.stratum == s
            out.append(Band(int(s), self._ranks_of(int(s)), int(np.count_nonzero(mine)),
                            int(np.count_nonzero(mine & self.pool.drawn))))
        return out

    def _ranks_of(self, stratum: int) -> str:
        cuts = (0, *self.bands, self.depth) if self.bands else (0, self.depth)
        low = cuts[stratum] + 1 if stratum < len(cuts) else cuts[-1] + 1
        high = min(cuts[stratum + 1], self.depth) if stratum + 1 < len(cuts) else self.depth
        return f"{low}-{high}" if high > low else str(low)

    def describe(self) -> str:
        design = "at random" if self.strategy == "uniform" else "by rank band"
        return (f"sample {self.id}: {self.size} pairs per query drawn {design} ({self.strategy}) "
                f"from the pool at depth {self.depth}, seed {self.seed}")

    def as_json(self) -> dict:
        return {"id": self.id, "strategy": self.strategy, "size": self.size, "seed": self.seed,
                "depth": self.depth, "bands": list(self.bands),
                "runs": None if self.runs is None else list(self.runs),
                "created_at": self.created_at.isoformat(), "queries": self.n_queries,
                "pooled": len(self.pool), "drawn": int(np.count_nonzero(self.pool.drawn)),
                "strata": [{"stratum": b.stratum, "ranks": b.ranks, "pooled": b.pooled,
                            "drawn": b.drawn} for b in self.strata()]}


def store_sample(session: Session, pool: PooledPairs, sample: PoolSample, *, strategy: str,
                 size: int, seed: int, depth: int, runs: Sequence[str] | None,
                 bands: tuple[int, ...] = RANK_BANDS) -> StoredSample:
    """Add the sample as the project's newest (inside the caller's transaction)."""
    record = PoolSampleDraw(strategy=strategy, size=size, seed=seed, depth=depth,
                            bands=list(bands) if strategy == "stratified" else [],
                            runs=sorted(runs) if runs else None)
    session.add(record)
    session.flush()
    number = int(record.id)
    rows = list(zip([number] * len(pool), pool.query_ids, pool.chunk_ids, pool.ranks.tolist(),
                    sample.stratum.tolist(), sample.inclusion.tolist(), sample.drawn.tolist()))
    if rows:
        _insert_pairs(session.connection(), rows)
    return StoredSample(int(record.id), strategy, size, seed, depth, tuple(record.bands),
                        None if record.runs is None else tuple(record.runs), record.created_at,
                        sample, pool.ranks)


_PAIR_COLUMNS = ("sample_id", "query_id", "chunk_id", "rank", "stratum", "inclusion", "drawn")


def _insert_pairs(connection: Connection, rows: list[tuple]) -> None:
    """One executemany of the driver, inside the caller's transaction: SQLAlchemy's own took
    ten times as long per row (its parameters built row by row), all of it holding SQLite's
    one write lock (300,000 pooled pairs: 8 s against 1 s)."""
    mark = "?" if connection.dialect.paramstyle == "qmark" else "%s"
    table = PoolSamplePair.__table__.name
    connection.exec_driver_sql(
        f"INSERT INTO {table} ({', '.join(_PAIR_COLUMNS)}) "
        f"VALUES ({', '.join([mark] * len(_PAIR_COLUMNS))})", rows)


_PAIR_DTYPE = np.dtype([("query_id", object), ("chunk_id", object), ("rank", np.int64),
                        ("stratum", np.int64), ("inclusion", np.float64), ("drawn", bool)])


def _read_pairs(connection: Connection, sample_id: int) -> np.ndarray:
    """A sample's pooled pairs as columns, through the driver's cursor: SQLAlchemy's rows
    took three times as long (300,000 pairs: 1.4 s against 5 s)."""
    mark = "?" if connection.dialect.paramstyle == "qmark" else "%s"
    cursor: Any = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(f"SELECT {', '.join(_PAIR_DTYPE.names or ())} FROM "
                       f"{PoolSamplePair.__table__.name} WHERE sample_id = {mark}", (sample_id,))
        return np.array(cursor.fetchall(), dtype=_PAIR_DTYPE)
    finally:
        cursor.close()


def current_sample_id(connection: Connection) -> int | None:
    """The number of the project's newest sample, None when it has drawn none."""
    return connection.scalar(select(func.max(PoolSampleDraw.id)))


def read_sample(project: Project, sample_id: int | None = None) -> StoredSample | None:
    """Sample ``sample_id`` (default: the newest), None when there is no such sample.

    Samples never change once drawn, so each is read once per open project."""
    cache = project.__dict__.setdefault("_pool_samples", {})
    with project.connect() as connection:
        if sample_id is None:
            sample_id = current_sample_id(connection)
            if sample_id is None:
                return None
        if sample_id in cache:
            return cache[sample_id]
        record = connection.execute(
            select(PoolSampleDraw).where(PoolSampleDraw.id == sample_id)).first()
        if record is None:
            return None
        columns = _read_pairs(connection, sample_id)
    pool = PoolSample(columns["query_id"], columns["chunk_id"], columns["inclusion"],
                      columns["stratum"], columns["drawn"])
    found = StoredSample(int(record.id), record.strategy, int(record.size), int(record.seed),
                         int(record.depth), tuple(record.bands or ()),
                         None if record.runs is None else tuple(record.runs), record.created_at,
                         pool, columns["rank"].copy())
    cache[sample_id] = found
    return found


def current_sample(project: Project) -> StoredSample | None:
    """The project's current sample (its newest), None when it has drawn none."""
    return read_sample(project)


def sample_numbers(project: Project) -> list[int]:
    """The numbers of every sample the project drew, oldest first."""
    with project.connect() as connection:
        return [int(n) for n in connection.scalars(
            select(PoolSampleDraw.id).order_by(PoolSampleDraw.id))]
