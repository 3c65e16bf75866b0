"""What every measure's bounds in :mod:`ragjudge.metrics.settle` are built on: one run's open
pairs and cells (:class:`RunData`), its values now (:class:`Profile`), sampled grades
(:class:`Draw`), and what each measure's family implements (:class:`Family`).

One query, two runs A and B, a measure M. The open pairs of the query (pool pairs nobody judged)
are the variables: each takes a grade 0..G (G = the top of the scale); binary measures read
x_v = [grade >= rel]. Everything else is fixed: judged grades, and unjudged chunks outside the
pool (not relevant). "Now" is every x_v = 0: an open pair is not relevant until judged, which is
how the measures count it today. For each measure, :meth:`Family.bounds` returns the min
and max over all assignments of M_A - M_B, with the argument that makes it exact; the tests
compare every one with brute force over all assignments.

Notation: a run's *cells* are its ranks 1..k the measure reads (k its cutoff, or the whole
ranking); for one query, "A-only" pairs are in A's cells and not B's, "B-only" the reverse,
"both" in both, and "fillers" are the query's other open pairs (in the pool, ranked by neither
within k: they can only add to R or to the ideal DCG).

The families, each with the argument that makes its bounds exact: P@k, Success@k, RR@k and
R@k in :mod:`ragjudge.metrics.settle_measures`, AP@k in :mod:`ragjudge.metrics.settle_ap`,
nDCG@k and DCG@k in :mod:`ragjudge.metrics.settle_gain`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ragjudge.metrics.registry import Measure
from ragjudge.metrics.settle_layout import ABSENT, Layout, RunCells

#: query rows of the (queries x runs x open pairs) overlap tensor built at once
ROWS = 2048


def gather(values: np.ndarray, var: np.ndarray, fill: float | int | bool = 0) -> np.ndarray:
    """``values[..., var]`` with ``fill`` where ``var`` is -1 (padding)."""
    out = values[..., np.maximum(var, 0)]
    return np.where(var >= 0, out, fill)


def safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0 (a query with nothing relevant scores 0)."""
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den != 0)
    return out


#: rows at most this wide are summed a column at a time by :func:`accumulate`
RUNNING_COLUMNS = 64


def accumulate(x: np.ndarray, dtype: type | None = None, out: np.ndarray | None = None,
             op: np.ufunc = np.add) -> np.ndarray:
    """``op.accumulate(x, axis=-1)`` (``np.cumsum`` for ``np.add``; booleans summed as ``dtype``,
    int64 by default), the same numbers (each column combined with the running value of the
    ones before it, in order), computed a column at a time over every row at once: numpy's own
    loop goes row by row, slow on many short rows."""
    if dtype is None:
        dtype = np.int64 if x.dtype == np.bool_ else x.dtype.type
    if x.shape[-1] > RUNNING_COLUMNS or x.ndim == 1:
        return np.asarray(op.accumulate(x, axis=-1, dtype=dtype, out=out))
    if out is None:
        out = np.empty(x.shape, dtype=dtype)
    if x.shape[-1]:
        out[..., 0] = x[..., 0]
        for j in range(1, x.shape[-1]):
            op(out[..., j - 1], x[..., j], out=out[..., j])
    return out


def reciprocal_rank(rank: np.ndarray) -> np.ndarray:
    """1 / (rank + 1) of 0-based ranks, 0 for ABSENT."""
    rank = np.asarray(rank)
    return np.where(rank < ABSENT, 1.0 / (np.minimum(rank, ABSENT - 1) + 1.0), 0.0)

@dataclass
class RunData:
    """One run on the query set, read once: its open cells per query in rank order, ``var``
    (Q, W) open-pair numbers (-1 padding) and ``col`` their 0-based ranks (ABSENT padding), and
    ``rank`` (V,) each open pair's 0-based rank (ABSENT: not among the cells)."""

    name: str
    var: np.ndarray
    col: np.ndarray
    rank: np.ndarray

    def __post_init__(self) -> None:
        self._within: dict[int, tuple[int, np.ndarray, np.ndarray, np.ndarray]] = {}
        self._inverse: dict[int, np.ndarray] = {}
        self._inverse_cells: dict[int, np.ndarray] = {}
        self._whole: RunData | None = None  # the run on every query, for a part of it

    def rows(self, rows: np.ndarray) -> RunData:
        """The same run on some queries only (their open cells, as narrow as they allow)."""
        var = np.take(self.var, rows, axis=0)
        width = int((var >= 0).sum(axis=1).max()) if var.size else 0
        part = RunData(self.name, var[:, :width], self.col[rows, :width], self.rank)
        part._whole = self  # the open pairs' ranks (V,) are the whole run's: made once
        return part

    def within(self, k: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        """The open cells ranked above k (shared by the measures with that cutoff): how many
        leading columns hold them, the pair numbers and ranks there (-1 / ABSENT beyond k), and
        each open pair's rank if above k (else ABSENT)."""
        if k not in self._within:
            width = int((self.col < k).sum(axis=1).max()) if self.col.size else 0
            col = self.col[:, :width]
            var = np.where(col < k, self.var[:, :width], -1)
            col = np.where(col < k, col, ABSENT)
            rank = self._whole.within(k)[3] if self._whole else np.where(self.rank < k, self.rank, ABSENT)
            self._within[k] = (width, var, col, rank)
        return self._within[k]

    def inverse_cells(self, k: int) -> np.ndarray:
        """(Q, W) 1 / rank of each open cell ranked above k, 0 elsewhere."""
        if k not in self._inverse_cells:
            self._inverse_cells[k] = reciprocal_rank(self.within(k)[2])
        return self._inverse_cells[k]

    def inverse_rank(self, k: int) -> np.ndarray:
        """(V,) 1 / rank of each open pair ranked above k, else 0."""
        if k not in self._inverse:
            self._inverse[k] = self._whole.inverse_rank(k) if self._whole else reciprocal_rank(self.within(k)[3])
        return self._inverse[k]


@dataclass
class Profile:
    """One run under one measure: current values and what the bounds read."""

    run: RunData
    cur: np.ndarray  # (Q,) the kernel's values now
    k: int  # the cells: ranks 0..k-1
    fixed: np.ndarray  # (Q,) the judged part: hits, S, DCG or first relevant rank
    extra: np.ndarray  # (V,) per open pair: own term of AP, discount of DCG (0 outside)

    def __post_init__(self) -> None:
        self.width, self.var, self.col, self.rank = self.run.within(self.k)
        self._tables: dict[str, np.ndarray] = {}

    def lookup(self, name: str, var: np.ndarray) -> np.ndarray:
        """``gather(p.<name>, var, fill)`` for ``alpha``, ``extra`` (fill 0) or ``rank`` (fill
        ABSENT) in one gather: the array is kept with its fill appended, which pair number -1
        (the padding) reads."""
        table = self._tables.get(name)
        if table is None:
            values = getattr(self, name)
            fill = np.array([ABSENT if name == "rank" else 0], dtype=values.dtype)
            table = self._tables[name] = np.concatenate([values, fill])
        return np.take(table, var)  # as table[var], faster

    @cached_property
    def alpha(self) -> np.ndarray:
        """(V,) 1 / rank of each open pair in the cells, 0 outside."""
        return self.run.inverse_rank(self.k)

    @cached_property
    def inv(self) -> np.ndarray:
        """(Q, W) 1 / rank of each open cell, 0 in the padding."""
        return self.run.inverse_cells(self.k)

    # what only the draws read, made when first asked (float32: the draws' sums need not be
    # exact to the last bit)
    @cached_property
    def inv32(self) -> np.ndarray:
        return self.inv.astype(np.float32)

    @cached_property
    def own32(self) -> np.ndarray:
        own = gather(self.extra, self.var, 0.0) if len(self.extra) else np.zeros_like(self.inv)
        return own.astype(np.float32)

    @cached_property
    def last(self) -> np.ndarray:
        """(Q,) the column of each query's last open cell within the cutoff (-1: none)."""
        return (self.var >= 0).sum(axis=1) - 1


def narrowed(p: Profile, run: RunData, rows: np.ndarray) -> Profile:
    """The profile on some queries only (``run``: the run's data on them, :meth:`RunData.rows`)."""
    return Profile(run, np.take(p.cur, rows), p.k, np.take(p.fixed, rows), p.extra)


class Draw:
    """Sampled grades of the open pairs, (S, V) small integers, and what the measures share of
    them: per-query counts by grade, and per run (:meth:`on`) the grades at its open cells."""

    def __init__(self, grades: np.ndarray, layout: Layout) -> None:
        self.grades, self.layout = grades, layout
        self._sums: dict[int, np.ndarray] = {}
        self._shared: dict[object, np.ndarray] = {}
        self._padded: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.grades.shape[0])

    def count(self, level: int) -> np.ndarray:
        """(S, Q) open pairs of each query with grade >= level."""
        if level not in self._sums:  # two threads may both compute it: same value
            self._sums[level] = self.layout.open_sums(self.grades >= level)
        return self._sums[level]

    def shared(self, key: object, make: Callable[[Draw], np.ndarray]) -> np.ndarray:
        """``make(self)``, computed once per key for every run (e.g. a measure's ideal DCG)."""
        if key not in self._shared:
            self._shared[key] = make(self)
        return self._shared[key]

    def on(self, run: RunData, rows: np.ndarray | None = None) -> RunDraw:
        """The draw at one run's open cells (gathered once, shared by the measures); ``rows``:
        the queries the run's arrays hold, when only some (see :meth:`RunData.rows`)."""
        if self._padded is None:  # a 0 column for the padding (pair number -1) to read
            self._padded = np.concatenate([self.grades, np.zeros((self.n, 1), dtype=self.grades.dtype)], axis=1)
        return RunDraw(self, self._padded[:, run.var], rows)


class RunDraw:
    """A draw at one run's open cells: ``grades`` (S, Q', W), 0 in the padding, for the queries
    ``rows`` (None: all)."""

    def __init__(self, draw: Draw, grades: np.ndarray, rows: np.ndarray | None) -> None:
        self.draw, self.grades, self.rows = draw, grades, rows
        self.n = draw.n
        self._hits: dict[int, np.ndarray] = {}

    def count(self, level: int) -> np.ndarray:
        """(S, Q') open pairs of each of the queries with grade >= level."""
        counts = self.draw.count(level)
        return counts if self.rows is None else counts[:, self.rows]

    def per_query(self, values: np.ndarray) -> np.ndarray:
        """A (Q,) array of the layout's queries, for the queries drawn here."""
        return values if self.rows is None else values[self.rows]

    def shared(self, key: object, make: Callable[[Draw], np.ndarray]) -> np.ndarray:
        out = self.draw.shared(key, make)
        return out if self.rows is None else out[:, self.rows]

    def hits(self, level: int) -> np.ndarray:
        """(S, Q, W) relevant open cells so far, rank by rank (the cell itself included)."""
        if level not in self._hits:
            self._hits[level] = accumulate(self.grades >= level, np.int16)
        return self._hits[level]


def overlap(layout: Layout, ranks: list[np.ndarray], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per query, open pairs in each run's top k, (Q, R), and in both of each pair of runs,
    (Q, R, R): one batched product of 0/1 matrices (queries x runs x open pairs)."""
    nq, n_runs = layout.n_queries, len(ranks)
    count = np.zeros((nq, n_runs), dtype=np.int64)
    both = np.zeros((nq, n_runs, n_runs), dtype=np.int64)
    if layout.n_vars == 0:
        return count, both
    slot = np.arange(layout.n_vars) - layout.offsets[layout.open_query]
    width = int(layout.n_open.max())
    inside = np.stack([r < k for r in ranks], axis=1).astype(np.float32)  # (V, R)
    for lo in range(0, nq, ROWS):
        hi = min(lo + ROWS, nq)
        v0, v1 = layout.offsets[lo], layout.offsets[hi]
        block = np.zeros((hi - lo, n_runs, width), dtype=np.float32)
        block[layout.open_query[v0:v1] - lo, :, slot[v0:v1]] = inside[v0:v1]
        count[lo:hi] = block.sum(axis=2).astype(np.int64)
        both[lo:hi] = np.rint(np.matmul(block, block.transpose(0, 2, 1))).astype(np.int64)
    return count, both


class Family:
    """Bounds, sampled values and flips of one measure (see the module's docstring).

    Build with every run's :class:`Profile` (:meth:`prepare`), then ask :meth:`bounds` for
    runs by index."""

    needs_overlap = False

    def __init__(self, measure: Measure, layout: Layout) -> None:
        self.measure, self.layout = measure, layout
        self.top = layout.top_grade
        level = measure.rel if measure.rel is not None else layout.threshold
        self.level = max(int(level), 0)
        self.profiles: list[Profile] = []

    def columns(self, depth: int) -> int:
        """The ranks the measure reads, of a run read to ``depth`` ranks."""
        return depth if self.measure.cutoff is None else min(int(self.measure.cutoff), depth)

    @property
    def free(self) -> bool:
        """Whether an open pair's judgment can change the measure (binary: 0 < rel <= G)."""
        return 0 < self.level <= self.top

    def profile(self, run: RunData, cells: RunCells, cur: np.ndarray) -> Profile:
        """The run's profile from its cells (the judged ones as a list) and current values."""
        k = self.columns(cells.grades.shape[1])
        fixed, extra = self._fixed(cells.judged_within(k), run.within(k)[3], cells.grades.shape[1])
        return Profile(run, cur, k, fixed, extra)

    def _fixed(self, judged: tuple[np.ndarray, np.ndarray, np.ndarray], rank: np.ndarray,
               depth: int) -> tuple[np.ndarray, np.ndarray]:
        """(Q,) the judged part of the measure and (V,) a per-open-pair term, from the judged
        cells within the cutoff (query rows, ranks, grades; in that order) and the open pairs'
        ranks within it."""
        row, _, grade = judged
        hits = np.bincount(row[grade >= self.level], minlength=self.layout.n_queries)
        return hits.astype(np.float64), np.zeros(0)

    def prepare(self, profiles: list[Profile]) -> None:
        self.profiles = profiles
        if self.needs_overlap and self.free:
            # each profile's ranks are already cut at its own cutoff (runs may be shorter);
            # measures with the same cutoffs share the counts
            key = ("overlap", tuple((id(p.run), p.k) for p in profiles))
            if key not in self.layout.cache:
                self.layout.cache[key] = overlap(self.layout, [p.rank for p in profiles], int(ABSENT))
            self.count, self.both = self.layout.cache[key]

    def bounds(self, i: int, j: int) -> tuple[np.ndarray, np.ndarray, bool]:
        """(Q,) min and max of M_i - M_j per query over every grade of the open pairs, and
        whether both are exact everywhere."""
        a, b = self.profiles[i], self.profiles[j]
        if not self.free:
            if self.level > self.top:  # no open pair can become relevant
                now = a.cur - b.cur
                return now, now, True
            forced = Draw(np.full((1, self.layout.n_vars), self.top, dtype=np.int16), self.layout)
            final = self.values(a, forced.on(a.run))[0] - self.values(b, forced.on(b.run))[0]
            return final, final, True
        return self._bounds(i, j)

    def _bounds(self, i: int, j: int) -> tuple[np.ndarray, np.ndarray, bool]:
        raise NotImplementedError

    def bounds_many(self, pairs: Sequence[tuple[int, int]]) -> list[tuple[np.ndarray, np.ndarray, bool]]:
        """:meth:`bounds` of several pairs of runs, the same values (the measures whose bounds
        cost most solve the pairs together)."""
        return [self.bounds(i, j) for i, j in pairs]

    def _classes(self, i: int, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(Q,) open pairs only in i's cells, only in j's, and in both."""
        both = self.both[:, i, j]
        return self.count[:, i] - both, self.count[:, j] - both, both

    def values(self, p: Profile, draw: RunDraw) -> np.ndarray:
        """(S, Q) the measure when the open pairs have the drawn grades (at p's run)."""
        raise NotImplementedError

    def flip(self, p: Profile) -> np.ndarray:
        """(V,) how much the run's measure moves when one open pair, all others as now, gets
        the top grade (binary measures: becomes relevant)."""
        raise NotImplementedError

    def harm(self, probs: np.ndarray) -> np.ndarray:
        """(V,) the chance a judgment carries its flip, under grade probabilities (V, G + 1):
        P(grade >= rel) for binary measures."""
        return probs[:, self.level:].sum(axis=1) if self.free else np.zeros(len(probs))

    def _hits(self, p: Profile, draw: RunDraw) -> np.ndarray:
        """(S, Q) judged hits plus the drawn relevant open pairs in the cells."""
        if p.width == 0:
            return np.broadcast_to(p.fixed, (draw.n, len(p.fixed))).copy()
        hits = draw.hits(self.level)
        got = hits[:, np.arange(len(p.last)), np.maximum(p.last, 0)]
        return p.fixed[None, :] + np.where(p.last >= 0, got, 0)
