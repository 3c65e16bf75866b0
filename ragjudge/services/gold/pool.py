"""The judging pool: per query, the union of the top-K chunks of the chosen runs (TREC pooling)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
import numpy as np
from ragjudge.services.gold.gold import skipped_pairs
from ragjudge.store.sqltext import PUBLISHED, fetch, listed


if TYPE_CHECKING:
    from sqlalchemy.sql.selectable import TextualSelect

    from ragjudge.services.project.database import Project


DEFAULT_DEPTH = 10


def pool_sql(depth: int = DEFAULT_DEPTH, runs: list[str] | None = None) -> tuple[str, dict[str, Any]]:
    """The SQL of the distinct (query_id, chunk_id) pairs in the pool, and its parameters."""
    params: dict[str, Any] = {"depth": depth}
    among = ""
    if runs:
        names, named = listed("run", runs)
        among = f" AND re.run IN ({names})"
        params.update(named)
    return (f"SELECT DISTINCT re.query_id, re.chunk_id FROM run_entries re WHERE re.rank <= :depth"
            f" AND {PUBLISHED.format(alias='re')}{among}", params)


def pool_select(depth: int = DEFAULT_DEPTH, runs: list[str] | None = None) -> TextualSelect:
    """:func:`pool_sql` as a select (columns ``query_id``, ``chunk_id``)."""
    from sqlalchemy import column, text

    sql, params = pool_sql(depth, runs)
    return text(sql).bindparams(**params).columns(column("query_id"), column("chunk_id"))


def pool_size_and_judged(project: Project, depth: int = DEFAULT_DEPTH, runs: list[str] | None = None) -> dict:
    """How many pairs the pool holds, how many have a current grade from any annotator (on a
    complete reference's queries every pair is judged: unlisted means not relevant), and per
    annotator how many pool pairs they judged (``by_annotator``; never more than the pool).

    The pool's pairs come from SQL (:func:`pool_select`) and the current labels in bulk
    (:func:`ragjudge.services.events.labels.read_labels`); they meet in numpy, on the labels' coded
    ids. (One SQL statement joining the pool with the newest label events made SQLite scan
    every label event for every pool pair: over ten minutes on a project of 10,000 queries
    and 1.4 million label events, where this takes seconds.)"""
    from ragjudge.services.events.labels import read_labels
    from ragjudge.services.runs.head import ensure_rows

    ensure_rows(project, depth, runs, required=False)
    with project.connect() as connection:
        rows = fetch(connection, *pool_sql(depth, runs))
        labels = read_labels(connection)
        closing = {n for (n,) in fetch(connection, "SELECT name FROM annotators WHERE reference = :yes "
                                                   "AND complete = :yes", {"yes": True})}
        skipped = skipped_pairs(connection, closing)
    query, pair = _labelled(labels, [r[0] for r in rows], [r[1] for r in rows])
    graded = pair >= 0
    codes = [i for i, name in enumerate(labels.names) if name in closing]
    rows_query = labels.pair_query[labels.pair]
    closed = np.isin(query, rows_query[np.isin(labels.annotator, codes)])  # -1 is no query
    left = {name: np.fromiter(((q, c) in found for q, c in rows), dtype=bool, count=len(rows))
            for name, found in skipped.items()}  # pairs a complete reference left unjudged
    for unjudged in left.values():
        closed &= ~unjudged
    in_pool = np.zeros(labels.n_pairs, dtype=bool)
    in_pool[pair[graded]] = True
    counts = np.bincount(labels.annotator[in_pool[labels.pair]], minlength=len(labels.names))
    mine = {name: int(n) for name, n in zip(labels.names, counts.tolist())}
    for code in codes:  # a complete reference judged every pair of the queries it graded
        theirs = np.isin(query, rows_query[labels.annotator == code])
        if labels.names[code] in left:  # but those it left unjudged
            theirs &= ~left[labels.names[code]]
        mine[labels.names[code]] = int(np.count_nonzero(theirs))
    return {"depth": depth, "pairs": len(rows), "judged": int(np.count_nonzero(graded | closed)),
            "by_annotator": {str(k): v for k, v in sorted(mine.items()) if v}}


def _labelled(labels: Any, query_ids: list[str], chunk_ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """For each pair: its query's index into ``labels.queries`` (-1: nobody graded a pair of
    it), and the index of the labelled pair it is (-1: nobody holds a current grade of it)."""
    from ragjudge.metrics._keys import as_ids, lookup

    q = lookup(labels.queries, as_ids(query_ids))
    c = lookup(labels.chunks, as_ids(chunk_ids))
    found = (q >= 0) & (c >= 0)
    width = max(len(labels.chunks), 1)
    keys = np.where(found, q * width + c, -1)
    pair_keys = labels.pair_query.astype(np.int64) * width + labels.pair_chunk  # ascending
    if not len(pair_keys):
        return q, np.full(len(keys), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(pair_keys, keys), len(pair_keys) - 1)
    return q, np.where(found & (pair_keys[at] == keys), at, -1).astype(np.int64)
