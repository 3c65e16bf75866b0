"""The arrays :mod:`ragjudge.metrics.settle` reads: the pool, its unjudged pairs, and each run's
ranked chunks as judged grades and unjudged-pair numbers.

Words used throughout:

- the **query set**: every query of the qrels and of the pool (what ``ragjudge eval`` averages
  over once the pool is judged: a query of the pool with nothing judged yet is in it, its
  values 0 for now), or the queries asked for;
- an **open pair** (a *variable*): a pool pair of a query of the set with no grade >= 0 in the
  qrels. Its grade, once judged, is any grade of the scale 0..``top_grade``. Open pairs are
  numbered 0..V-1, grouped by query (``offsets``); chunks outside the pool that nobody judged
  stay unjudged, that is not relevant, as trec_eval counts them;
- a run's **cells**: its first ``depth`` ranks of each query of the set (the ranks the
  measures read), each holding the judged grade there (-1: unjudged) and the number of the
  open pair there (-1: none). Both come from one hash lookup per ranked chunk, the lookup
  :class:`~ragjudge.metrics.context.EvalContext` makes for the grades alone.

The measures' current values are the registered kernels run on a context holding exactly the
grade matrix :class:`~ragjudge.metrics.context.EvalContext` would build, so they are the values
``ragjudge eval`` prints, bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics import _keys
from ragjudge.metrics.context import EvalContext
from ragjudge.metrics.data import Qrels, Run
from ragjudge.numeric import MAX_GRADE

#: the rank (0-based column) of an open pair a run does not rank within its cells
ABSENT = np.int32(1 << 30)


@dataclass(frozen=True)
class Pool:
    """The judging pool: distinct (query id, chunk id) pairs, ids as ``as_ids`` byte arrays.

    ``Pool.from_runs(runs, depth)`` is TREC pooling (per query, the union of every run's top
    ``depth``); ``Pool.from_pairs(query_ids, chunk_ids)`` takes the pairs as they are (repeats
    dropped). Which of them are judged is the qrels' business: a pool pair without a grade
    >= 0 is open.
    """

    query_ids: np.ndarray
    chunk_ids: np.ndarray

    @classmethod
    def from_pairs(cls, query_ids: Iterable[str] | np.ndarray,
                   chunk_ids: Iterable[str] | np.ndarray) -> Pool:
        q, c = _keys.as_ids(query_ids), _keys.as_ids(chunk_ids)
        if len(q) != len(c):
            raise UsageError(f"a pool needs as many query ids as chunk ids ({len(q)}, {len(c)}).")
        return cls(*_distinct_pairs(q, c))

    @classmethod
    def from_runs(cls, runs: Iterable[Run], depth: int) -> Pool:
        """Per query, the union of every run's first ``depth`` chunks (TREC pooling)."""
        if depth < 1:
            raise UsageError(f"the pool depth is a number of ranks from 1, not {depth}.")
        qs, cs = [], []
        for run in runs:
            rank = np.arange(len(run)) - run.offsets[run.qidx]
            top = rank < depth
            qs.append(run.query_id_bytes[run.qidx[top]])
            cs.append(run.chunk_ids[top])
        if not qs:
            empty = _keys.as_ids([])
            return cls(empty, empty)
        return cls(*_distinct_pairs(_concat_ids(qs), _concat_ids(cs)))

    def __len__(self) -> int:
        return len(self.query_ids)


def _concat_ids(parts: Sequence[np.ndarray]) -> np.ndarray:
    width = max(p.dtype.itemsize for p in parts)
    return np.concatenate([_keys.widen(p, width) for p in parts])


def _unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` of a 1-D array, by sorting and comparing neighbours: on byte strings
    several times faster than its hashing (the same sorted distinct values)."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def _distinct_pairs(q: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (query, chunk) pairs, sorted by query then chunk."""
    if len(q) == 0:
        return q, c
    wq, wc = q.dtype.itemsize, c.dtype.itemsize
    joined = np.empty(len(q), dtype=f"S{wq + wc}")
    view = joined.view(np.uint8).reshape(len(q), wq + wc)
    view[:, :wq] = q.view(np.uint8).reshape(len(q), wq)
    view[:, wq:] = c.view(np.uint8).reshape(len(q), wc)
    # a NUL-padded query id followed by the chunk id: equal bytes iff equal pairs, and the
    # byte order sorts by query first (every query id has the same padded width here)
    unique = _unique(joined)
    raw = unique.view(np.uint8).reshape(len(unique), wq + wc)
    return (np.ascontiguousarray(raw[:, :wq]).view(f"S{wq}").ravel(),
            np.ascontiguousarray(raw[:, wq:]).view(f"S{wc}").ravel())


class GivenContext(EvalContext):
    """An :class:`EvalContext` whose grade matrix is given (built by :func:`run_cells`), with the
    qrels side (relevant counts, ideal DCG) computed from the qrels as usual."""

    #: the per-query counts from the qrels alone (relevant chunks, ideal DCG), cached by key
    SHARED = ("_n_rel", "_idcg")

    def __init__(self, qrels: Qrels, query_ids: np.ndarray, grade_matrix: np.ndarray,
                 n_ret: np.ndarray, threshold: int, like: GivenContext | None = None) -> None:
        super().__init__(qrels, None, query_ids, threshold=threshold)
        if like is not None:  # another run on the same qrels and queries: its qrels side serves
            for name in self.SHARED:
                self.__dict__[name] = like.__dict__.setdefault(name, {})
        self.depth = int(grade_matrix.shape[1])
        self.n_ret = n_ret
        self.grade_matrix = grade_matrix


@dataclass
class RunCells:
    """One run on the query set: ``grades`` and ``open`` (Q x depth, see the module's words),
    ``n_ret`` (chunks ranked per query, before the depth) and ``rank`` (V,): each open pair's
    0-based rank in the run, ``ABSENT`` when it is not among the cells."""

    name: str
    grades: np.ndarray
    open: np.ndarray
    n_ret: np.ndarray
    rank: np.ndarray
    #: the judged cells in (query, rank) order: their query rows, 0-based ranks and grades
    judged_row: np.ndarray
    judged_col: np.ndarray
    judged_grade: np.ndarray

    def __post_init__(self) -> None:
        self._within: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def judged_within(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The judged cells ranked above k: query rows, 0-based ranks, grades (shared by the
        measures with that cutoff)."""
        if k not in self._within:
            if not len(self.judged_col) or int(self.judged_col.max()) < k:
                self._within[k] = (self.judged_row, self.judged_col, self.judged_grade)
            else:
                keep = self.judged_col < k
                self._within[k] = (self.judged_row[keep], self.judged_col[keep], self.judged_grade[keep])
        return self._within[k]


class Layout:
    """The query set, its open pairs, the judged grades per query, and how to read a run.

    ``threshold`` is the evaluation's relevance threshold (a measure's own ``rel=`` wins);
    ``top_grade`` the top of the scale an open pair may get (0..top_grade).
    """

    def __init__(self, qrels: Qrels, pool: Pool, *, top_grade: int, threshold: int = 1,
                 queries: Iterable[str] | None = None) -> None:
        if not 0 <= threshold <= MAX_GRADE:
            raise UsageError(f"the relevance threshold {threshold} is out of range: it is a grade "
                             f"from 0 to {MAX_GRADE:,}.")
        judged_top = int(qrels.grades.max()) if len(qrels.grades) else 0
        if not 1 <= top_grade <= MAX_GRADE:
            raise UsageError(f"the top of the grade scale is from 1 to {MAX_GRADE:,}, not {top_grade}.")
        if judged_top > top_grade:
            raise UsageError(f"the qrels hold grade {judged_top}, above the top of the scale "
                             f"({top_grade}); give the scale's top grade.")
        self.qrels, self.threshold, self.top_grade = qrels, int(threshold), int(top_grade)
        self.query_ids = self._query_set(qrels, pool, queries)
        self.n_queries = len(self.query_ids)
        self._judged_pairs(qrels)
        self._open_pairs(qrels, pool)
        self.n_open = np.diff(self.offsets)
        # one index over the judged pairs (rows 0..J-1) and the open pairs (J..J+V-1)
        width = max(self.judged_chunk.dtype.itemsize, self.open_chunk.dtype.itemsize)
        rows = np.concatenate([self.judged_query, self.open_query])
        ids = np.concatenate([_keys.widen(self.judged_chunk, width), _keys.widen(self.open_chunk, width)])
        self._index = _keys.PairIndex(rows, ids, _keys.id_hash(self.query_ids)[rows])
        self._n_judged = len(self.judged_query)
        #: arrays shared by the measures of one settlement (e.g. overlaps per cutoff)
        self.cache: dict[Any, Any] = {}

    # -- construction ----------------------------------------------------------------------
    @staticmethod
    def _query_set(qrels: Qrels, pool: Pool, queries: Iterable[str] | None) -> np.ndarray:
        judged = qrels.query_id_bytes
        pooled = _unique(pool.query_ids) if len(pool) else pool.query_ids
        width = max(judged.dtype.itemsize, pooled.dtype.itemsize, 8)
        every = np.union1d(_keys.widen(judged, width), _keys.widen(pooled, width))
        if queries is None:
            return every
        wanted = _keys.as_ids(list(queries))
        wanted = _unique(wanted[_keys.lookup(every, wanted) >= 0])
        return wanted

    def _judged_pairs(self, qrels: Qrels) -> None:
        """The qrels rows of the query set with a grade >= 0 (the judged pairs)."""
        row = _keys.lookup(self.query_ids, qrels.query_id_bytes)[qrels.qidx] if len(qrels) else \
            np.zeros(0, dtype=np.int64)
        keep = (row >= 0) & (qrels.grades >= 0) if len(qrels) else np.zeros(0, dtype=bool)
        self.judged_query = row[keep]
        self.judged_chunk = qrels.chunk_ids[keep] if len(qrels) else _keys.as_ids([])
        self.judged_grade = qrels.grades[keep].astype(np.int64)

    def _open_pairs(self, qrels: Qrels, pool: Pool) -> None:
        """The pool pairs of the query set without a grade >= 0, grouped by query."""
        row = _keys.lookup(self.query_ids, pool.query_ids)
        inside = row >= 0
        q, c = row[inside], pool.chunk_ids[inside]
        if len(qrels) and len(q):
            qrow = _keys.lookup(qrels.query_id_bytes, self.query_ids)[q]
            found = np.full(len(q), -1, dtype=np.int64)
            asked = np.flatnonzero(qrow >= 0)
            if len(asked):
                qhash = _keys.id_hash(qrels.query_id_bytes)[qrow[asked]]
                found[asked] = qrels.index.get(qrow[asked], c[asked], qhash)
            judged = np.zeros(len(q), dtype=bool)
            hit = found >= 0
            judged[hit] = qrels.grades[found[hit]] >= 0
            q, c = q[~judged], c[~judged]
        order = np.argsort(q, kind="stable")  # the pool's pairs come sorted by query already
        self.open_query = q[order].astype(np.int64)
        self.open_chunk = c[order] if len(c) else _keys.as_ids([])
        counts = np.bincount(self.open_query, minlength=self.n_queries)
        self.offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)

    # -- per-query facts ------------------------------------------------------------------
    @property
    def n_judged(self) -> int:
        """J, the number of judged pairs of the query set."""
        return self._n_judged

    def locate(self, query_ids: np.ndarray, chunk_ids: np.ndarray) -> np.ndarray:
        """Each pair's row: a judged pair 0..J-1, an open pair J + its number, else -1."""
        row = _keys.lookup(self.query_ids, query_ids)
        out = np.full(len(row), -1, dtype=np.int64)
        ok = np.flatnonzero(row >= 0)
        if len(ok):
            out[ok] = self._index.get(row[ok], chunk_ids[ok], _keys.id_hash(self.query_ids)[row[ok]])
        return out

    @property
    def n_vars(self) -> int:
        """V, the number of open pairs."""
        return len(self.open_query)

    def relevant_count(self, level: int) -> np.ndarray:
        """(Q,) judged pairs of each query with grade >= level (the measures' R without the
        open pairs)."""
        keep = self.judged_grade >= level
        return np.bincount(self.judged_query[keep], minlength=self.n_queries).astype(np.int64)

    def grade_counts(self) -> np.ndarray:
        """(Q, top_grade) judged pairs of each query with grade >= l, for l = 1..top_grade."""
        g = self.judged_grade
        out = np.zeros((self.n_queries, self.top_grade + 1), dtype=np.int64)
        np.add.at(out, (self.judged_query, np.minimum(g, self.top_grade)), 1)
        # counts with grade >= l: suffix sums over the grades
        return np.cumsum(out[:, ::-1], axis=1)[:, ::-1][:, 1:]

    def open_sums(self, values: np.ndarray) -> np.ndarray:
        """Per-query sums over the open pairs of ``values`` (..., V) -> (..., Q)."""
        lead = values.shape[:-1]
        if values.dtype == np.bool_ and values.shape[-1] < 1 << 31:
            # counts: running sums in 32 bits over the bytes (exact, several times faster)
            cs = np.zeros((*lead, values.shape[-1] + 1), dtype=np.int32)
            np.cumsum(values.view(np.int8), axis=-1, dtype=np.int32, out=cs[..., 1:])
            return (cs[..., self.offsets[1:]] - cs[..., self.offsets[:-1]]).astype(np.int64)
        cs = np.zeros((*lead, values.shape[-1] + 1), dtype=np.float64 if values.dtype.kind == "f"
                      else np.int64)
        np.cumsum(values, axis=-1, out=cs[..., 1:])
        return cs[..., self.offsets[1:]] - cs[..., self.offsets[:-1]]

    # -- runs ------------------------------------------------------------------------------
    def cells(self, run: Run, depth: int | None, name: str) -> RunCells:
        """The run's cells (its first ``depth`` ranks of every query of the set; all of them when
        ``depth`` is None): judged grades and open-pair numbers, from one hash lookup."""
        nq = self.n_queries
        run_row = _keys.lookup(run.query_id_bytes, self.query_ids)
        lengths = np.append(np.diff(run.offsets), 0)  # row -1 (absent) reads the 0
        n_ret = lengths[run_row].astype(np.int64)
        size = int(n_ret.max()) if nq else 0
        if depth is not None:
            size = min(size, int(depth))
        kept = np.minimum(n_ret, size)
        # the selected run rows, query by query in rank order, and their cells in the grid
        inside = np.arange(size)[None, :] < kept[:, None]
        whole = bool(inside.all())
        if whole and len(run) == nq * size and np.array_equal(run_row, np.arange(nq)):
            # the run is exactly the grid (every query of the set, in order, ranked to depth)
            ids, hashes, cell = run.chunk_ids, run.pair_hashes, None
        else:
            grid = run.offsets[run_row][:, None] + np.arange(size)[None, :]  # row -1: masked
            sel, cell = (grid.ravel(), None) if whole else (grid[inside], np.flatnonzero(inside))
            ids, hashes = run.chunk_ids[sel], run.pair_hashes[sel]
        row_of = (np.arange(len(ids)) if cell is None else cell) // max(size, 1)
        index = self._index
        if index.seed != 0:
            hashes = _keys.pair_hash(_keys.id_hash(self.query_ids)[row_of], ids, index.seed)
        at, rows = index.find(hashes, ids, row_of)
        where = at if cell is None else cell[at]
        grades = np.full(nq * size, -1, dtype=np.int32)
        open_ = np.full(nq * size, -1, dtype=np.int32)
        judged = rows < self._n_judged
        grades[where[judged]] = self.judged_grade[rows[judged]]
        opened = ~judged
        open_[where[opened]] = rows[opened] - self._n_judged
        rank = np.full(self.n_vars, ABSENT, dtype=np.int32)
        rank[rows[opened] - self._n_judged] = where[opened] % max(size, 1)
        spot = where[judged]  # ascending: (query, rank) order
        width = max(size, 1)
        return RunCells(name, grades.reshape(nq, size), open_.reshape(nq, size), n_ret, rank,
                        spot // width, spot % width,
                        self.judged_grade[rows[judged]])

    def context(self, cells: RunCells) -> GivenContext:
        """The evaluation context of a run's cells: the kernels read it as ``ragjudge eval``'s.
        The runs' contexts share what comes from the qrels alone (made for the first run)."""
        ctx = GivenContext(self.qrels, self.query_ids, cells.grades, cells.n_ret, self.threshold,
                           self.cache.get("context"))
        self.cache.setdefault("context", ctx)
        return ctx


def occurrences(open_: np.ndarray, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """A run's open pairs within its first ``cols`` ranks, per query in rank order:
    (Q, W) pair numbers (-1 padding) and their 0-based ranks (``ABSENT`` padding)."""
    part = open_[:, :cols]
    mask = part >= 0
    counts = mask.sum(axis=1)
    width = int(counts.max()) if len(counts) else 0
    rows, ranks = np.nonzero(mask)
    slot = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    var = np.full((part.shape[0], width), -1, dtype=np.int64)
    at = np.full((part.shape[0], width), ABSENT, dtype=np.int64)
    var[rows, slot] = part[rows, ranks]
    at[rows, slot] = ranks
    return var, at
