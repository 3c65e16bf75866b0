"""The evaluation context: one run against one qrels as padded (queries x depth) matrices.

Built once per (qrels, run, query set, threshold); every measure kernel reads it. Rows are the
evaluated queries (``query_ids``), columns the ranks 1..depth. Ranks past the end of a query's
ranking are padding: ``valid`` is False there and every flag is False.

Conventions (ragjudge/ARCHITECTURE.md, trec_eval):

- ``grade_matrix``: the judged grade at each rank, -1 where the chunk is unjudged, its grade is
  negative (negative = unjudged) or the rank is padding;
- ``judged``: grade >= 0; ``relevant(rel)``: grade >= rel (rel defaults to the threshold);
- ``gains``: max(grade, 0) as float64 (trec_eval's nDCG gain; the threshold does not apply);
- per query: ``n_ret`` (chunks ranked), ``n_relevant(rel)``, ``n_judged``, ``n_nonrelevant``,
  and the ideal ranking's gains from every judged grade of the query (``ideal_dcg``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cached_property
from typing import Any

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics import _keys
from ragjudge.metrics.data import Qrels, Run
from ragjudge.numeric import MAX_GRADE, short_int


class _Extras(Mapping):
    """The caller's extras; a callable value is called once with the context when first read,
    so data aligned to the context's rows (``ctx.query_ids``) can be built on demand."""

    def __init__(self, ctx: Any, raw: Mapping[str, Any]) -> None:
        self._ctx, self._raw = ctx, dict(raw)
        self._done: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        if key not in self._done:
            value = self._raw[key]
            self._done[key] = value(self._ctx) if callable(value) else value
        return self._done[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


class EvalContext:
    """Rank matrices and per-query counts of one run on one query set.

    Row i is ``query_ids[i]``; the rows are the evaluated queries in byte order of their ids.
    ``extras`` holds what the caller passed for measures that need more than qrels (facets,
    nuggets, corpus size ...); a callable extra is called with this context on first use.
    """

    def __init__(
        self,
        qrels: Qrels,
        run: Run | None,
        query_ids: np.ndarray,
        *,
        threshold: int = 1,
        depth: int | None = None,
        extras: Mapping[str, Any] | None = None,
    ) -> None:
        if not 0 <= threshold <= MAX_GRADE:
            raise UsageError(f"the relevance threshold {short_int(int(threshold))} is out of "
                             f"range: it is a grade from 0 to {MAX_GRADE:,}.")
        self.qrels = qrels
        self.run = run
        self._qids = query_ids
        self.threshold = int(threshold)
        self.extras: Mapping[str, Any] = _Extras(self, extras or {})
        nq = len(query_ids)
        self.n_queries = nq
        # qrels side: which qrels query each evaluated row is, and each judgment's row
        self._qrels_row = _keys.lookup(qrels.query_id_bytes, query_ids)
        row_of_qrels_query = _keys.lookup(query_ids, qrels.query_id_bytes)
        self._judgment_row = row_of_qrels_query[qrels.qidx]
        # run side
        if run is None or run.n_queries == 0 or nq == 0:
            self._build_empty(depth)
        else:
            self._build(run, depth)

    # -- construction -------------------------------------------------------------------
    def _build_empty(self, depth: int | None) -> None:
        nq = self.n_queries
        self.depth = 0
        self.n_ret = np.zeros(nq, dtype=np.int64)
        self.grade_matrix = np.full((nq, 0), -1, dtype=np.int32)
        self._run_rows = np.full((nq, 0), -1, dtype=np.int64)

    def _build(self, run: Run, depth: int | None) -> None:
        nq = self.n_queries
        run_row_of_query = _keys.lookup(run.query_id_bytes, self._qids)
        lengths = np.diff(run.offsets)
        n_ret = np.where(run_row_of_query >= 0, lengths[np.maximum(run_row_of_query, 0)], 0)
        D = int(n_ret.max()) if nq else 0
        if depth is not None:
            D = min(D, int(depth))
        self.depth = D
        self.n_ret = n_ret  # chunks ranked, before any depth limit
        # the run rows that land in the matrix: the first min(length, D) rows of each run
        # query that is evaluated, worked out per query (the run's rows are grouped by query)
        eval_row = _keys.lookup(self._qids, run.query_id_bytes)
        kept = np.where(eval_row >= 0, np.minimum(lengths, D), 0)
        first = np.concatenate(([0], np.cumsum(kept)[:-1]))  # each query's first selected row
        total = int(kept.sum())
        # run row and matrix cell of each selected row (None: the identity)
        to_row = run.offsets[:-1] - first
        to_cell = np.where(kept > 0, eval_row * D - first, 0)
        sel = None if total == len(run) else np.arange(total) + np.repeat(to_row, kept)
        flat = (None if total == nq * D and not to_cell.any()
                else np.arange(total) + np.repeat(to_cell, kept))
        # judged grades by hash lookup of (qrels query, chunk)
        qrels_query_of_run_query = _keys.lookup(self.qrels.query_id_bytes, run.query_id_bytes)
        qidx = run.qidx if sel is None else run.qidx[sel]
        ids = run.chunk_ids if sel is None else run.chunk_ids[sel]
        index = self.qrels.index
        # the run's pair hashes serve the lookup unless the qrels had to rehash (seed > 0)
        if index.seed == 0:
            hashes = run.pair_hashes if sel is None else run.pair_hashes[sel]
        else:
            hashes = _keys.pair_hash(_keys.id_hash(run.query_id_bytes)[qidx], ids, index.seed)
        at, rows = index.find(hashes, ids, qidx, qrels_query_of_run_query)
        gm = np.full(nq * D, -1, dtype=np.int32)
        gm[at if flat is None else flat[at]] = np.maximum(self.qrels.grades[rows], -1)
        self.grade_matrix = gm.reshape(nq, D)
        self._flat = flat
        self._run_sel = sel

    # -- rank matrices ------------------------------------------------------------------
    @property
    def query_ids(self) -> list[str]:
        return _keys.decode(self._qids)

    @property
    def query_id_bytes(self) -> np.ndarray:
        return self._qids

    @cached_property
    def ranks(self) -> np.ndarray:
        """1..depth as float64 (row vector for broadcasting)."""
        return np.arange(1, self.depth + 1, dtype=np.float64)

    @cached_property
    def valid(self) -> np.ndarray:
        """(Q, D) bool: a chunk is ranked there."""
        return np.arange(self.depth)[None, :] < self.n_ret[:, None]

    @cached_property
    def judged(self) -> np.ndarray:
        return self.grade_matrix >= 0

    @cached_property
    def gains(self) -> np.ndarray:
        """(Q, D) float64: max(grade, 0), 0 for unjudged chunks and padding."""
        return np.maximum(self.grade_matrix, 0).astype(np.float64)

    def gains_to(self, cols: int) -> np.ndarray:
        """``gains[:, :cols]``, computed for those columns only unless the whole matrix is
        (nDCG@10 of a 1,000-deep run reads 1 % of it)."""
        if cols >= self.depth or "gains" in self.__dict__:
            return self.gains[:, :cols]
        return np.maximum(self.grade_matrix[:, :cols], 0).astype(np.float64)

    @cached_property
    def answered(self) -> np.ndarray:
        """(Q,) bool: the run ranks at least one chunk for the query."""
        return self.n_ret > 0

    def _rel_level(self, rel: int | None) -> int:
        level = self.threshold if rel is None else int(rel)
        return max(level, 0)

    def relevant(self, rel: int | None = None) -> np.ndarray:
        """(Q, D) bool: judged with grade >= rel (default: the threshold)."""
        level = self._rel_level(rel)
        cache = self.__dict__.setdefault("_relevant", {})
        if level not in cache:
            cache[level] = self.grade_matrix >= level
        return cache[level]

    def cum_relevant(self, rel: int | None = None) -> np.ndarray:
        """(Q, D) int32: relevant chunks in ranks 1..j."""
        level = self._rel_level(rel)
        cache = self.__dict__.setdefault("_cum", {})
        if level not in cache:
            cache[level] = np.cumsum(self.relevant(level), axis=1, dtype=np.int32)
        return cache[level]

    def hits_at(self, k: int | None, rel: int | None = None) -> np.ndarray:
        """(Q,) float64: relevant chunks in the top k (the whole ranking when k is None)."""
        cum = self.cum_relevant(rel)
        if self.depth == 0:
            return np.zeros(self.n_queries)
        col = self.depth if k is None else min(int(k), self.depth)
        return cum[:, col - 1].astype(np.float64)

    def retrieved_at(self, k: int | None) -> np.ndarray:
        """(Q,) float64: chunks ranked in the top k."""
        n = self.n_ret if k is None else np.minimum(self.n_ret, int(k))
        return n.astype(np.float64)

    def columns(self, k: int | None) -> int:
        """How many matrix columns the top k covers."""
        return self.depth if k is None else min(int(k), self.depth)

    # -- per-query counts from the qrels ------------------------------------------------
    def _per_query(self, weights: np.ndarray | None, mask: np.ndarray | None = None) -> np.ndarray:
        rows = self._judgment_row
        keep = rows >= 0
        if mask is not None:
            keep = keep & mask
        w = None if weights is None else weights[keep]
        return np.bincount(rows[keep], weights=w, minlength=self.n_queries).astype(np.float64)

    def n_relevant(self, rel: int | None = None) -> np.ndarray:
        """(Q,) float64: chunks of the query judged with grade >= rel in the qrels."""
        level = self._rel_level(rel)
        cache = self.__dict__.setdefault("_n_rel", {})
        if level not in cache:
            cache[level] = self._per_query(None, self.qrels.grades >= level)
        return cache[level]

    @cached_property
    def n_judged(self) -> np.ndarray:
        """(Q,) float64: chunks of the query with a grade >= 0 in the qrels."""
        return self._per_query(None, self.qrels.grades >= 0)

    def n_nonrelevant(self, rel: int | None = None) -> np.ndarray:
        """(Q,) float64: judged chunks below the relevance level."""
        return self.n_judged - self.n_relevant(rel)

    @cached_property
    def max_grade(self) -> int:
        """The top of the qrels' grade scale (ERR's g_max): ``Qrels.max_grade``."""
        return self.qrels.max_grade

    def ideal_dcg(self, k: int | None = None, gain: str = "grade") -> np.ndarray:
        """(Q,) float64: DCG of the ideal ranking (all judged grades, best first) to rank k.

        ``gain``: ``"grade"`` (g) or ``"exp"`` (2^g - 1).
        """
        cache = self.__dict__.setdefault("_idcg", {})
        key = (k, gain)
        if key not in cache:
            g = np.maximum(self.qrels.grades, 0).astype(np.float64)
            if gain == "exp":
                g = np.exp2(g) - 1.0
            rank = self.qrels.ideal_rank
            mask = g > 0
            if k is not None:
                mask &= rank <= k
            weights = np.zeros(len(g))
            weights[mask] = g[mask] / np.log2(rank[mask] + 1.0)
            cache[key] = self._per_query(weights)
        return cache[key]

    def ideal_grades(self, row: int) -> np.ndarray:
        """The judged grades of one evaluated query, best first (the ideal ranking)."""
        q = self._qrels_row[row]
        if q < 0:
            return np.zeros(0, dtype=np.int64)
        g = self.qrels.grades[self.qrels.offsets[q]:self.qrels.offsets[q + 1]]
        return g[g >= 0]

    # -- for measures that join their own data (facets, nuggets, citations) ---------------
    @cached_property
    def chunk_ids(self) -> np.ndarray:
        """(Q, D) ``S`` array of the chunk ids in the matrix (b"" for padding)."""
        if self.run is None or self.depth == 0:
            return np.zeros((self.n_queries, self.depth), dtype="S8")
        out = np.zeros(self.n_queries * self.depth, dtype=self.run.chunk_ids.dtype)
        ids = self.run.chunk_ids if self._run_sel is None else self.run.chunk_ids[self._run_sel]
        out[slice(len(ids)) if self._flat is None else self._flat] = ids
        return out.reshape(self.n_queries, self.depth)

    @cached_property
    def _position_index(self) -> tuple[_keys.PairIndex, np.ndarray]:
        valid = self.valid.ravel()
        flat = np.flatnonzero(valid)
        rows = flat // max(self.depth, 1)
        return _keys.PairIndex(rows, self.chunk_ids.ravel()[flat]), flat

    def positions(self, query_ids: Any, chunk_ids: Any) -> tuple[np.ndarray, np.ndarray]:
        """Matrix row and column (0-based rank) of each (query, chunk) pair.

        The row is -1 when the query is not evaluated; the column is -1 when the chunk is not
        ranked for that query (or lies past the matrix depth). For kernels whose extras list
        pairs, e.g. facet links or nugget support.
        """
        q = _keys.as_ids(query_ids)
        c = _keys.as_ids(chunk_ids)
        row = _keys.lookup(self._qids, q)
        if self.depth == 0 or len(q) == 0:
            return row, np.full(len(q), -1, dtype=np.int64)
        index, flat = self._position_index
        hit = np.full(len(q), -1, dtype=np.int64)
        ok = np.flatnonzero(row >= 0)
        if len(ok):
            hit[ok] = index.get(row[ok], c[ok])
        col = np.where(hit >= 0, flat[np.maximum(hit, 0)] % self.depth, -1)
        return row, col
