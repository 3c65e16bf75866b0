"""A run's *head*: the entries kept as rows of ``run_entries``.

A run is stored whole as arrays (:mod:`ragjudge.store.run_arrays`): that is what evaluation,
export and the comparison of a re-imported run read, and writing it costs one blob however long
the run is. Rows are for the judging pool, which SQL joins with labels, assignments and marks
(:mod:`ragjudge.services.gold.pool`, :class:`ragjudge.services.labels.queue.JudgingQueue`), and a pool
only ever reaches a run's first ranks. So an import writes rows for the first
:func:`head_depth` ranks of every query (20, twice the default pool depth, unless the project's
``run_rows_depth`` setting says otherwise) and records that depth in the run's ``meta`` (``rows_depth``); with
``--create-missing`` it makes placeholders only for the chunks of those rows.

Writing a row per entry was most of an import's time (a few microseconds each on SQLite, twice
over with the placeholder chunks): a TREC run of 10,000 queries x 1,000 now writes one line in
fifty as a row.

A pool deeper than a run's head widens the head first (:func:`ensure_rows`, called by
everything that reads a pool with a depth): the missing ranks are written from the run's arrays
in short transactions under the import lock, with placeholders for chunks the project lacks,
then ``rows_depth`` is raised. A widening that is killed leaves valid rows of the published run
and its old ``rows_depth``, so the next one writes the rest (``INSERT OR IGNORE``). Runs
imported before heads existed have no ``rows_depth``: every entry is a row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import repeat
from typing import TYPE_CHECKING, Any
import numpy as np
from ragjudge.store.sqltext import fetch, json_value


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


HEAD_DEPTH = 20
"""The ranks an import keeps as rows by default: twice the judging pool's default depth (10),
so the usual pools, assignments and LLM judging read rows that are there; a deeper pool widens
the head once (:func:`ensure_rows`)."""


SETTING = "run_rows_depth"


MAX_DEPTH = 100_000






def head_depth(project: Project) -> int:
    """How many ranks of each query an import keeps as rows (setting ``run_rows_depth``)."""
    value = project.get_setting(SETTING, HEAD_DEPTH)
    try:
        depth = int(value)
    except (TypeError, ValueError):
        return HEAD_DEPTH
    return min(max(depth, 1), MAX_DEPTH)


def rows_depth(meta: Any) -> int | None:
    """The ranks a run keeps as rows, from its ``meta``; None: all of them."""
    if isinstance(meta, dict) and isinstance(meta.get("rows_depth"), int):
        return int(meta["rows_depth"])
    return None


def run_meta(source: str, head: int, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """What an import records in ``runs.meta``: the file, the head's depth and the run's size
    (entries, queries, deepest rank), which ``status`` shows without reading the arrays."""
    offsets = arrays["offsets"]
    sizes = np.diff(offsets) if len(offsets) > 1 else np.zeros(0, dtype=np.int64)
    return {"source": source, "rows_depth": head, "entries": int(len(arrays["scores"])),
            "queries": int(len(sizes)), "depth": int(sizes.max()) if len(sizes) else 0}


def head_rows(offsets: np.ndarray, qidx: np.ndarray, low: int, high: int | None) -> np.ndarray:
    """Positions (in storage order) of the entries ranked ``low < rank <= high``."""
    ranks = np.arange(len(qidx), dtype=np.int64) - offsets[qidx] + 1
    keep = ranks > low
    if high is not None:
        keep &= ranks <= high
    return np.flatnonzero(keep)


def _shallow(project: Project, depth: int, runs: Iterable[str] | None) -> list[tuple[str, int, int]]:
    """Published runs whose head is shallower than ``depth`` where they go deeper:
    ``(name, generation, rows_depth)``."""
    wanted = None if runs is None else set(runs)
    with project.connect() as connection:
        rows = [(name, generation, json_value(connection, meta)) for name, generation, meta
                in fetch(connection, "SELECT name, generation, meta FROM runs")]
    out = []
    for name, generation, meta in rows:
        if wanted is not None and name not in wanted:
            continue
        have = rows_depth(meta)
        if have is None or have >= depth:
            continue
        deepest = meta.get("depth") if isinstance(meta, dict) else None
        if isinstance(deepest, int) and deepest <= have:
            continue
        out.append((name, generation, have))
    return out


def ensure_rows(project: Project, depth: int, runs: Iterable[str] | None = None,
                progress: Callable[[int, int | None, str, str], None] | None = None, *,
                required: bool = True) -> int:
    """Make every chosen run's rows reach ``depth`` (see the module's description). Returns
    how many rows were written; nothing is read but ``runs`` when every head is deep enough.
    On a read-only project a deeper pool is refused, unless not ``required`` (a count that
    may stop at the heads)."""
    depth = min(int(depth), MAX_DEPTH)
    runs = None if runs is None else list(runs)
    if not _shallow(project, depth, runs):
        return 0
    if getattr(project, "lite", False):  # the full opening widens the heads: leave it to that
        from ragjudge.services.project.lite import NotLite

        raise NotLite()
    if project.readonly and not required:
        return 0
    if project.readonly:
        from ragjudge.errors import ProjectError

        raise ProjectError(
            f"{project.shown_db}: the pool goes {depth} ranks deep, and this project keeps its runs' "
            "rows to a shallower depth; writing the deeper ranks needs a project that can be "
            "written (this one opened read-only). Use a smaller --depth, or open the project "
            "where it can be written.")
    from sqlalchemy import select, update

    from ragjudge.services.project.staging import ImportSession, ids_in
    from ragjudge.store.schema import Chunk, Run

    _runs, _chunks = Run.__table__, Chunk.__table__
    from ragjudge.services.project.columns import decode, unpack_ids
    from ragjudge.store.run_arrays import read_arrays

    written = 0
    with ImportSession(project) as session:
        for name, generation, have in _shallow(project, depth, runs):  # again, under the lock
            with session.read() as connection:
                arrays = read_arrays(connection, name, generation)
            if arrays is None:  # cannot happen for a run with a head; keep what is there
                continue
            query_ids = unpack_ids(arrays["query_ids"], arrays["query_ids_lengths"])
            chunk_ids = unpack_ids(arrays["chunk_ids"], arrays["chunk_ids_lengths"])
            offsets, scores = arrays["offsets"], arrays["scores"]
            qidx = np.repeat(np.arange(len(query_ids)), np.diff(offsets))
            picked = head_rows(offsets, qidx, have, depth)
            if len(picked):
                chunks = decode(chunk_ids[picked])
                distinct = sorted(set(chunks))
                with session.read() as connection:
                    found = ids_in(connection, _chunks, distinct)
                missing = [c for c in distinct if c not in found]
                write_placeholders(session, missing)
                queries = decode(query_ids)
                ranks = (picked - offsets[qidx[picked]] + 1).tolist()
                values = [None if v != v else v for v in scores[picked].tolist()]
                rows = list(zip(repeat(name), repeat(generation), [queries[i] for i in qidx[picked].tolist()],
                                chunks, ranks, values))
                write_entries(session, rows, progress, f"run {name}: rows to rank {depth}")
                written += len(rows)
            with session.write(durable=True) as connection:
                meta = connection.scalar(select(_runs.c.meta).where(_runs.c.name == name))
                meta = dict(meta) if isinstance(meta, dict) else {}
                meta["rows_depth"] = depth
                connection.execute(update(_runs).where(_runs.c.name == name).values(meta=meta))
    return written


def write_placeholders(session: Any, ids: list[str]) -> None:
    """Empty chunks for ``ids`` (which the project lacks), in short transactions."""
    if not ids:
        return
    sql = ("INSERT OR IGNORE INTO chunks (id, text) VALUES (?, '')" if session.sqlite
           else "INSERT INTO chunks (id, text) VALUES (%s, '') ON CONFLICT DO NOTHING")
    session.batches(len(ids), lambda a, b: [(i,) for i in ids[a:b]],
                    lambda connection, rows: _execute_many(session, sql, rows))


def write_entries(session: Any, rows: list[tuple], progress: Any, description: str) -> None:
    """Rows of ``run_entries`` in short transactions (SQLite ignores rows already there)."""
    total = len(rows)
    if session.sqlite:
        sql = ("INSERT OR IGNORE INTO run_entries (run, generation, query_id, chunk_id, rank, score) "
               "VALUES (?, ?, ?, ?, ?, ?)")
    else:
        sql = ("INSERT INTO run_entries (run, generation, query_id, chunk_id, rank, score) "
               "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING")
    report = None if progress is None else (lambda done: progress(done, total, description, "rows"))
    session.batches(total, lambda a, b: rows[a:b],
                    lambda connection, part: _execute_many(session, sql, part), report)


def _execute_many(session: Any, sql: str, rows: list[tuple]) -> None:
    if session.sqlite:
        session.raw.executemany(sql, rows)
    else:
        with session.raw.cursor() as cursor:
            cursor.executemany(sql, rows)
