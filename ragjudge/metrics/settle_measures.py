"""How far each measure can move: exact per-query bounds of a difference between two runs over
every grade the open pool pairs may get, the measure at sampled grades, and one pair's swing.

One query, two runs A and B, a measure M. The open pairs of the query (pool pairs nobody judged)
are the variables: each takes a grade 0..G (G = the top of the scale); binary measures read
x_v = [grade >= rel]. Everything else is fixed: judged grades, and unjudged chunks outside the
pool (not relevant). "Now" is every x_v = 0: an open pair is not relevant until judged, which is
how the measures count it today. For each measure below, :meth:`Family.bounds` returns the min
and max over all assignments of M_A - M_B, with the argument that makes it exact; the tests
compare every one with brute force over all assignments.

Notation: a run's *cells* are its ranks 1..k the measure reads (k its cutoff, or the whole
ranking); for one query, "A-only" pairs are in A's cells and not B's, "B-only" the reverse,
"both" in both, and "fillers" are the query's other open pairs (in the pool, ranked by neither
within k: they can only add to R or to the ideal DCG).

- **P@k** = hits@k / k is linear: x_v moves P_A - P_B by ([v in A] - [v in B]) / k,
  independently of the others. max = now + |A-only| / k, min = now - |B-only| / k.
- **Success@k** depends on x only through "some A-only pair is relevant", "some B-only pair
  is", "some both pair is". For the max a B-only pair is best not relevant (it can only raise
  S_B), an A-only pair best relevant (it only raises S_A), and the both pairs act as one switch
  t: max = max over t in {0, 1 if any both pair} of [f_A or A-only or t] - [f_B or t] (f: a
  judged relevant chunk in the top k). The min is minus the max with A and B swapped.
- **RR@k**: some optimal assignment has at most one relevant open pair. If a set X is optimal,
  keep only v*, its pair ranked first by A: RR_A is unchanged (A's first relevant is the same)
  and RR_B cannot grow (fewer relevant chunks). So max = max(now, max over A's open pairs v of
  1/min(f_A, a_v) - 1/min(f_B, b_v)), f the first judged relevant rank (inf: none; 1/inf = 0)
  and a_v, b_v the pair's ranks (inf outside the cells).
- **R@k** = hits / R, R = R_f + (open pairs relevant), R_f the judged relevant of the query.
  A both pair adds 1 to both hits (cancelling) and 1 to R, like a filler, so the difference is
  (h_A - h_B + i - j) / (R_f + i + j + l) with i A-only, j B-only, l both-or-filler pairs made
  relevant, 0 when the denominator is 0 (then nothing is relevant). This ratio of two affine
  functions over the integer box [0, n_A] x [0, n_B] x [0, n_0] has its max and min at a vertex
  of the box: with t* the max, L = N - t* D is <= 0 at every integer point and 0 at a
  maximiser; a linear function's max over a box is at a vertex (integer), so the face of
  maximisers of L contains a vertex, with D > 0 there unless that face is the origin alone (and
  then t* = 0, the origin's value). So max and min are taken over the 8 vertices.
- **AP@k** = S / R with S = sum over relevant cells j of hits@j / j. Writing S over pairs
  (i <= j, both relevant) of 1/j, S_A(x) = S_A(0) + sum_v x_v own_A(v) + sum_{u<v} x_u x_v
  min(alpha_u, alpha_v), own_A(v) = (judged hits above v + 1) / a_v + the sum of 1/rank of the
  judged relevant chunks below v, alpha = 1/a (0 outside the cells). So the difference is
  N(x) / (R_f + |x|) with N quadratic: c_uv = min(alpha_u, alpha_v) - min(beta_u, beta_v), beta
  for B. Maximising it is a 0/1 quadratic fractional program: no structure makes it cheap in
  general (pairs both runs rank in the same order make every subset a candidate). So, per query,
  with m its open pairs in A's or B's cells:

  * m <= ``AP_EXACT_PAIRS``: **exact**, every subset enumerated at once (subset sums built by
    doubling, the fillers none or all: for a fixed subset the value N / (D + l) is monotone in
    the filler count l);
  * m <= ``AP_RELAX_PAIRS``: a valid relaxation. With the pairs in A's order, sum_{u<v in x}
    c_uv <= sum_{v in x} kappa_v where kappa_v counts each earlier A-only pair once alpha_v (its
    c_uv is exactly that) and each earlier pair of B at most max(alpha_v - min(beta_v,
    beta_min), 0), beta_min the smallest beta among them (a pair outside A's cells has c_uv <=
    0). So N(x) <= N(0) + sum_{v in x} (lambda_v + kappa_v), lambda_v = own_A(v) - own_B(v): a
    linear-fractional objective whose max over subsets takes, for each size, the largest
    coefficients (fillers: 0), so the max over prefix lengths of the sorted coefficients, with
    and without every filler; also capped by the interval bound below;
  * above: the interval bound max_x AP_A - min_x AP_B, each run's extremes exact by the same
    exchange argument (moving a relevant chunk up never lowers AP's numerator: the chunks it
    passes gain 1/rank each, at least what it loses): the max takes A's c earliest open pairs,
    the min its c deepest plus every other open pair of the query, for the best c.

  ``Comparison.exact`` says whether every query was exact.
- **nDCG@k** (gain g or 2^g - 1) = DCG / IDCG. DCG_A - DCG_B = N(0) + sum_v gain(g_v) e_v with
  e_v = disc_A(v) - disc_B(v), linear; the ideal DCG depends only on how many chunks of the
  query have each grade: IDCG = sum_l dgain_l D_k(C_l), C_l the chunks with grade >= l, D_k(n)
  the sum of the first min(n, k) discounts, dgain_l = gain(l) - gain(l - 1). Writing gain(g_v)
  = sum_{l <= g_v} dgain_l, for given counts c_l of open pairs with grade >= l (c_1 >= c_2 >=
  ...) IDCG is fixed and N is largest when, at every level, the c_l pairs of largest e_v have
  grade >= l; these sets nest, so they are one assignment. The max over assignments is the max
  over count vectors of (N(0) + sum_l dgain_l E(c_l)) / (sum_l dgain_l D_k(Cf_l + c_l)), E(c) the
  sum of the c largest e_v, Cf_l the judged chunks with grade >= l. Dinkelbach's iteration finds
  it exactly: t <- N/D at a maximiser of N - t D, until max N - t D = 0. For t >= 0 the levels
  separate: h_l(c) = E(c) - t D_k(Cf_l + c) has h_l - h_(l+1) non-decreasing in c (a window of
  discounts moving deeper shrinks, Cf_l >= Cf_(l+1)), so the largest maximisers of the levels are
  ordered (Topkis) and each level is maximised alone; for t < 0 a pass over the levels from the
  top keeps c_l >= c_(l+1). Within a run of equal e_v (zeros: fillers) only its ends matter, so
  a query costs O(G m) per step. With one positive grade it is one pass. A query where neither
  run has an open cell keeps both DCGs: its max is at the smallest or the largest ideal (every
  open pair at grade 0, or at G). DCG@k (no ideal) is linear: max = now + gain(G) sum max(e_v, 0).

Measures other than these (Rprec, bpref, ERR, F, ContextPrecision@k ...) have no bounds here:
:func:`family` refuses them, and :func:`supported` says which are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics.registry import Measure
from ragjudge.metrics.settle_layout import ABSENT, Layout, RunCells

#: AP's bounds are exact (every subset enumerated) on queries with at most this many open pairs
#: in either run's cells
AP_EXACT_PAIRS = 6
#: above AP_EXACT_PAIRS and up to this many, AP's relaxation; above, its interval bound
AP_RELAX_PAIRS = 16
#: Dinkelbach steps for nDCG before the (still valid) bound t + F(t) / D_min is taken
MAX_STEPS = 30
#: query rows of the (queries x runs x open pairs) overlap tensor built at once
ROWS = 2048
#: rows (a query of one side of a pair of runs) whose bounds are solved together, at most
BATCH_ROWS = 100_000
#: rows of one width solved together: narrow groups are merged up to this many rows, wide ones
#: split at CHUNK_ROWS
GROUP_ROWS = 1024
CHUNK_ROWS = 8_192

FAMILIES = {"P": "precision", "Success": "success", "R": "recall", "RR": "rr", "AP": "ap",
            "ContextPrecisionAP": "ap", "nDCG": "ndcg", "nDCG_exp": "ndcg", "DCG": "ndcg"}


def supported(measure: Measure) -> bool:
    """True when :mod:`ragjudge.metrics.settle` can bound ``measure``."""
    return measure.definition.name in FAMILIES


def _gather(values: np.ndarray, var: np.ndarray, fill: float | int | bool = 0) -> np.ndarray:
    """``values[..., var]`` with ``fill`` where ``var`` is -1 (padding)."""
    out = values[..., np.maximum(var, 0)]
    return np.where(var >= 0, out, fill)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0 (a query with nothing relevant scores 0)."""
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den != 0)
    return out


#: rows at most this wide are summed a column at a time by :func:`_running`
RUNNING_COLUMNS = 64


def _running(x: np.ndarray, dtype: type | None = None, out: np.ndarray | None = None,
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


def _rr(rank: np.ndarray) -> np.ndarray:
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
            self._inverse_cells[k] = _rr(self.within(k)[2])
        return self._inverse_cells[k]

    def inverse_rank(self, k: int) -> np.ndarray:
        """(V,) 1 / rank of each open pair ranked above k, else 0."""
        if k not in self._inverse:
            self._inverse[k] = self._whole.inverse_rank(k) if self._whole else _rr(self.within(k)[3])
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
        """``_gather(p.<name>, var, fill)`` for ``alpha``, ``extra`` (fill 0) or ``rank`` (fill
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
        own = _gather(self.extra, self.var, 0.0) if len(self.extra) else np.zeros_like(self.inv)
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
            self._hits[level] = _running(self.grades >= level, np.int16)
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


class Precision(Family):
    needs_overlap = True

    def _bounds(self, i: int, j: int) -> tuple[np.ndarray, np.ndarray, bool]:
        k = float(self.measure.cutoff)
        only_i, only_j, _ = self._classes(i, j)
        now = self.profiles[i].cur - self.profiles[j].cur
        return now - only_j / k, now + only_i / k, True

    def values(self, p: Profile, draw: RunDraw) -> np.ndarray:
        return self._hits(p, draw) / float(self.measure.cutoff)

    def flip(self, p: Profile) -> np.ndarray:
        return np.where(p.rank < ABSENT, 1.0 / float(self.measure.cutoff), 0.0)


class Success(Family):
    needs_overlap = True

    def _bounds(self, i: int, j: int) -> tuple[np.ndarray, np.ndarray, bool]:
        only_i, only_j, both = self._classes(i, j)
        hit_i, hit_j = self.profiles[i].fixed > 0, self.profiles[j].fixed > 0
        switch = np.where(both > 0, 0.0, -1.0)  # both pairs relevant: 1 - 1
        high = np.maximum((hit_i | (only_i > 0)).astype(np.float64) - hit_j, switch)
        low = -np.maximum((hit_j | (only_j > 0)).astype(np.float64) - hit_i, switch)
        return low, high, True

    def values(self, p: Profile, draw: RunDraw) -> np.ndarray:
        return (self._hits(p, draw) > 0).astype(np.float64)

    def flip(self, p: Profile) -> np.ndarray:
        none_yet = p.fixed[self.layout.open_query] == 0
        return np.where((p.rank < ABSENT) & none_yet, 1.0, 0.0)


class ReciprocalRank(Family):
    def _fixed(self, judged: tuple[np.ndarray, np.ndarray, np.ndarray], rank: np.ndarray,
               depth: int) -> tuple[np.ndarray, np.ndarray]:
        row, col, grade = judged
        rel = grade >= self.level
        row, col = row[rel], col[rel]
        first = np.full(self.layout.n_queries, float(ABSENT))
        lead = np.flatnonzero(np.concatenate(([True], row[1:] != row[:-1]))) if len(row) else row
        first[row[lead]] = col[lead]  # cells come in rank order: a row's first is its best
        return first, np.zeros(0)

    def _side(self, a: Profile, b: Profile) -> np.ndarray:
        fa = a.fixed.astype(np.int64)
        rr_a, rr_b = _rr(fa), _rr(b.fixed.astype(np.int64))
        best = rr_a - rr_b
        early = a.col < fa[:, None]  # open cells above a's first judged relevant chunk
        counts = early.sum(axis=1)
        width = int(counts.max()) if len(counts) else 0
        if width == 0:
            return best
        rows = np.flatnonzero(counts)
        var = a.var[rows, :width]
        # b's first relevant if the pair is: 1/min(f_b, b_v) = max(1/f_b, 1/b_v)
        b_gain = np.maximum(b.lookup("alpha", var), rr_b[rows, None])
        gain = np.where(early[rows, :width], a.inv[rows, :width] - b_gain, -np.inf)
        best[rows] = np.maximum(best[rows], gain.max(axis=1))
        return best

    def _bounds(self, i: int, j: int) -> tuple[np.ndarray, np.ndarray, bool]:
        a, b = self.profiles[i], self.profiles[j]
        return -self._side(b, a), self._side(a, b), True

    def values(self, p: Profile, draw: RunDraw) -> np.ndarray:
        first = p.fixed.astype(np.int64)[None, :]
        if p.width == 0:
            return np.broadcast_to(_rr(first), (draw.n, len(p.fixed))).copy()
        rel = (draw.grades[:, :, :p.width] >= self.level) & (p.var >= 0)[None]
        at = np.argmax(rel, axis=2)  # the first relevant open cell, if any
        found = np.take_along_axis(rel, at[:, :, None], axis=2)[:, :, 0]
        col = np.where(found, p.col[np.arange(len(p.fixed))[None, :], at], ABSENT)
        return _rr(np.minimum(first, col))

    def flip(self, p: Profile) -> np.ndarray:
        first = p.fixed.astype(np.int64)[self.layout.open_query]
        return np.where(p.rank < first, _rr(p.rank) - _rr(first), 0.0)


class Recall(Family):
    needs_overlap = True

    def __init__(self, measure: Measure, layout: Layout) -> None:
        super().__init__(measure, layout)
        self.judged_relevant = layout.relevant_count(self.level).astype(np.float64)

    def _side(self, start: np.ndarray, n_a: np.ndarray, n_b: np.ndarray, n_0: np.ndarray) -> np.ndarray:
        best = np.full(len(start), -np.inf)
        for i in (0, 1):
            for j in (0, 1):
                for m in (0, 1):
                    num = start + i * n_a - j * n_b
                    den = self.judged_relevant + i * n_a + j * n_b + m * n_0
                    best = np.maximum(best, _ratio(num, den))
        return best

    def _bounds(self, i: int, j: int) -> tuple[np.ndarray, np.ndarray, bool]:
        a, b = self.profiles[i], self.profiles[j]
        only_i, only_j, _ = self._classes(i, j)
        rest = self.layout.n_open - only_i - only_j  # both pairs count like fillers
        high = self._side(a.fixed - b.fixed, only_i, only_j, rest)
        low = -self._side(b.fixed - a.fixed, only_j, only_i, rest)
        return low, high, True

    def values(self, p: Profile, draw: RunDraw) -> np.ndarray:
        return _ratio(self._hits(p, draw), draw.per_query(self.judged_relevant)[None, :] + draw.count(self.level))

    def flip(self, p: Profile) -> np.ndarray:
        q = self.layout.open_query
        hits, rel = p.fixed[q], self.judged_relevant[q]
        return (hits + (p.rank < ABSENT)) / (rel + 1.0) - _ratio(hits, rel)


class AveragePrecision(Family):
    """AP@k: exact up to ``AP_EXACT_PAIRS`` open pairs per query, valid above."""

    needs_overlap = True

    def __init__(self, measure: Measure, layout: Layout) -> None:
        super().__init__(measure, layout)
        self.judged_relevant = layout.relevant_count(self.level).astype(np.float64)

    def _fixed(self, judged: tuple[np.ndarray, np.ndarray, np.ndarray], rank: np.ndarray,
               depth: int) -> tuple[np.ndarray, np.ndarray]:
        row, col, grade = judged
        rel = grade >= self.level
        row, col = row[rel], col[rel]
        nq = self.layout.n_queries
        starts = np.searchsorted(row, np.arange(nq + 1))  # each query's judged relevant cells
        inv = 1.0 / (col + 1.0)
        hits = np.arange(len(row)) - starts[row] + 1.0  # relevant cells so far, itself included
        total = np.bincount(row, weights=hits * inv, minlength=nq)
        # an open pair at rank c (its cell not relevant): (judged hits above + 1) / (c + 1),
        # plus 1/rank of each judged relevant chunk below it (each gains one hit)
        own = np.zeros(len(rank))
        at = np.flatnonzero(rank < ABSENT)
        if len(at):
            q, c = self.layout.open_query[at], rank[at]
            width = depth + 1
            pos = np.searchsorted(row * width + col, q * width + c)  # relevant cells above
            prefix = np.concatenate(([0.0], np.cumsum(inv)))
            above = pos - starts[q]
            below = prefix[starts[q + 1]] - prefix[pos]
            own[at] = (above + 1.0) / (c + 1.0) + below
        return total, own

    def prepare(self, profiles: list[Profile]) -> None:
        super().prepare(profiles)
        if self.free:
            self.extremes = [self._extremes(p) for p in profiles]

    def _extremes(self, p: Profile) -> tuple[np.ndarray, np.ndarray]:
        """(Q,) the run's smallest and largest AP over every grade of the open pairs: its c
        deepest open cells relevant with every other open pair of the query (min), or its c
        earliest alone (max), for the best c."""
        rel, n = self.judged_relevant, (p.var >= 0).sum(axis=1)
        own = p.lookup("extra", p.var)
        inv = p.inv
        j = np.arange(p.width)[None, :]
        size = np.arange(p.width + 1)[None, :]
        fits = size <= n[:, None]
        # the c earliest: the cell at index j has j chosen above it
        early = np.concatenate([np.zeros((len(n), 1)), np.cumsum(own + j * inv, axis=1)], axis=1)
        high = np.where(fits, _ratio(p.fixed[:, None] + early, rel[:, None] + size), -np.inf).max(axis=1)
        # the c deepest, cells s = n - c .. n - 1: the one at j has j - s chosen above it
        def tail(x: np.ndarray) -> np.ndarray:  # sums over cells j >= s, for s = 0..width
            return np.concatenate([np.cumsum(x[:, ::-1], axis=1)[:, ::-1], np.zeros((len(n), 1))], axis=1)
        s = np.clip(n[:, None] - size, 0, p.width)
        deep = (np.take_along_axis(tail(own + j * inv), s, axis=1)
                - s * np.take_along_axis(tail(inv), s, axis=1))
        others = (self.layout.n_open - n)[:, None]
        low = np.where(fits, _ratio(p.fixed[:, None] + deep, rel[:, None] + size + others), np.inf).min(axis=1)
        return low, high

    def _bounds(self, i: int, j: int) -> tuple[np.ndarray, np.ndarray, bool]:
        a, b = self.profiles[i], self.profiles[j]
        (min_a, max_a), (min_b, max_b) = self.extremes[i], self.extremes[j]
        high, low = max_a - min_b, min_a - max_b
        only_i, only_j, both = self._classes(i, j)
        m = only_i + only_j + both
        for rows, method in ((np.flatnonzero((m >= 2) & (m <= AP_EXACT_PAIRS)), self._enumerate),
                             (np.flatnonzero((m > AP_EXACT_PAIRS) & (m <= AP_RELAX_PAIRS)), self._relaxed)):
            if len(rows):
                high[rows] = np.minimum(high[rows], method(a, b, rows))
                low[rows] = np.maximum(low[rows], -method(b, a, rows))
        rows = np.flatnonzero(m == 1)
        if len(rows):
            high[rows], low[rows] = self._relaxed(a, b, rows), -self._relaxed(b, a, rows)
        rows = np.flatnonzero(m == 0)  # only R can grow: the extremes of N / R at R's ends
        if len(rows):
            start, rel, most = (a.fixed - b.fixed)[rows], self.judged_relevant[rows], self.layout.n_open[rows]
            high[rows] = np.maximum(_ratio(start, rel), _ratio(start, rel + most))
            low[rows] = np.minimum(_ratio(start, rel), _ratio(start, rel + most))
        exact = bool((m <= AP_EXACT_PAIRS).all())
        return low, high, exact

    def _union(self, a: Profile, b: Profile, rows: np.ndarray) -> tuple[np.ndarray, ...]:
        """For the rows: a's open cells (a's order) then b's that a does not rank, as pair
        numbers packed to the left (-1 padding after them), with alpha (1/rank in a), beta
        (1/rank in b), lambda = own_a - own_b, and the count of the query's other open pairs
        (fillers)."""
        va = np.take(a.var, rows, axis=0)
        vb = np.take(b.var, rows, axis=0)
        vb = np.where(a.lookup("rank", vb) < ABSENT, -1, vb)
        n_a = (va >= 0).sum(axis=1)  # a's cells lead its rows (rank order, padding after)
        keep = vb >= 0
        n_b = keep.sum(axis=1)
        width = int((n_a + n_b).max()) if len(rows) else 0
        var = np.full((len(rows), width), -1, dtype=va.dtype)
        wa = min(int(n_a.max()) if len(rows) else 0, width)
        var[:, :wa] = va[:, :wa]
        r, c = np.nonzero(keep)  # b's cells outside a, in b's order, after a's
        var[r, n_a[r] + (np.cumsum(keep, axis=1)[r, c] - 1)] = vb[r, c]
        alpha, beta = a.lookup("alpha", var), b.lookup("alpha", var)
        lam = a.lookup("extra", var) - b.lookup("extra", var)
        fillers = np.take(self.layout.n_open, rows) - (n_a + n_b)
        return var, alpha, beta, lam, fillers

    def _relaxed(self, a: Profile, b: Profile, rows: np.ndarray) -> np.ndarray:
        """The relaxation's max of AP_a - AP_b on the rows (exact when a query has one open pair)."""
        var, alpha, beta, lam, fillers = self._union(a, b, rows)
        valid = var >= 0
        in_a = valid & (alpha > 0)
        in_b = in_a & (beta > 0)
        only = in_a & ~in_b
        only_before: np.ndarray = _running(only) - only
        b_before: np.ndarray = _running(in_b) - in_b
        seen = np.where(in_b, beta, np.inf)
        beta_min = _running(np.concatenate([np.full((len(rows), 1), np.inf), seen[:, :-1]], axis=1),
                            op=np.minimum)
        rho = np.maximum(alpha - np.minimum(beta, beta_min), 0.0)
        kappa = np.where(in_a, only_before * alpha + b_before * rho, 0.0)
        mu = -np.sort(-np.where(valid, lam + kappa, -np.inf), axis=1)
        prefix = np.zeros((len(rows), mu.shape[1] + 1))
        _running(np.where(np.isfinite(mu), mu, 0.0), out=prefix[:, 1:])
        size = np.arange(prefix.shape[1])[None, :]
        num = np.take(a.fixed - b.fixed, rows)[:, None] + prefix
        den = np.take(self.judged_relevant, rows)[:, None] + size
        best = np.maximum(_ratio(num, den), _ratio(num, den + fillers[:, None]))
        return np.where(size <= valid.sum(axis=1)[:, None], best, -np.inf).max(axis=1)

    def _enumerate(self, a: Profile, b: Profile, rows: np.ndarray) -> np.ndarray:
        """The exact max of AP_a - AP_b on rows with few open pairs: every subset, its N built by
        doubling (adding pair i to every subset of the pairs before it)."""
        var, alpha, beta, lam, fillers = self._union(a, b, rows)
        valid = var >= 0
        order = np.argsort(~valid, axis=1, kind="stable")  # the pairs first
        width = int(valid.sum(axis=1).max())
        take = lambda x: np.take_along_axis(x, order[:, :width], axis=1)  # noqa: E731
        var, alpha, beta, lam, valid = take(var), take(alpha), take(beta), take(lam), take(valid)
        num = (a.fixed - b.fixed)[rows, None]
        size = np.zeros((1, 1))
        # cross[v]: for every subset so far, the sum of c_uv over its pairs u (v not yet added)
        cross = [np.zeros((len(rows), 1)) for _ in range(width)]
        for i in range(width):
            add = np.where(valid[:, i:i + 1], lam[:, i:i + 1] + cross[i], -np.inf)
            num = np.concatenate([num, num + add], axis=1)
            size = np.concatenate([size, size + 1], axis=1)
            for v in range(i + 1, width):
                c = np.minimum(alpha[:, i], alpha[:, v]) - np.minimum(beta[:, i], beta[:, v])
                cross[v] = np.concatenate([cross[v], cross[v] + c[:, None]], axis=1)
        den = self.judged_relevant[rows, None] + size
        ok = np.isfinite(num)
        num = np.where(ok, num, 0.0)
        best = np.maximum(_ratio(num, den), _ratio(num, den + fillers[:, None]))
        return np.where(ok, best, -np.inf).max(axis=1)

    def values(self, p: Profile, draw: RunDraw) -> np.ndarray:
        total = np.broadcast_to(p.fixed, (draw.n, len(p.fixed)))
        if p.width:
            rel = draw.grades[:, :, :p.width] >= self.level  # 0 (not relevant) in the padding
            before = draw.hits(self.level)[:, :, :p.width] - 1  # relevant open cells above
            term = p.own32[None] + before * p.inv32[None]
            total = total + np.where(rel, term, np.float32(0)).sum(axis=2, dtype=np.float64)
        return _ratio(total, draw.per_query(self.judged_relevant)[None, :] + draw.count(self.level))

    def flip(self, p: Profile) -> np.ndarray:
        q = self.layout.open_query
        total, rel = p.fixed[q], self.judged_relevant[q]
        return (total + p.extra) / (rel + 1.0) - _ratio(total, rel)


class CumulativeGain(Family):
    """DCG@k, nDCG@k and nDCG_exp@k: graded, every grade 0..G open."""

    def __init__(self, measure: Measure, layout: Layout) -> None:
        super().__init__(measure, layout)
        name = measure.definition.name
        self.normalised = name != "DCG"
        levels = np.arange(self.top + 1, dtype=np.float64)
        self.gain = np.exp2(levels) - 1.0 if name == "nDCG_exp" else levels
        self.step = np.diff(self.gain)  # dgain_l, l = 1..G
        self.gain32 = self.gain.astype(np.float32)
        self.judged = layout.grade_counts()  # (Q, G): judged chunks with grade >= l
        k = measure.cutoff
        longest = int(self.judged[:, 0].max() + layout.n_open.max()) + 2 if layout.n_queries else 2
        disc = 1.0 / np.log2(np.arange(2, longest + 2, dtype=np.float64))
        if k is not None:
            disc[int(k):] = 0.0
        self.ideal_sum = np.concatenate(([0.0], np.cumsum(disc)))  # D_k(n)
        self.ideal_now = self._ideal(self.judged)

    @property
    def free(self) -> bool:
        return self.top >= 1

    def _scaled(self, level: int, x: np.ndarray) -> np.ndarray:
        """dgain_l * x, skipping the product when dgain_l is 1 (nDCG's levels: x * 1.0 is x)."""
        return x if self.step[level] == 1.0 else self.step[level] * x

    def _ideal(self, counts: np.ndarray) -> np.ndarray:
        """IDCG from counts (..., G) of chunks with grade >= l."""
        return (self.ideal_sum[counts] * self.step).sum(axis=-1)

    def _fixed(self, judged: tuple[np.ndarray, np.ndarray, np.ndarray], rank: np.ndarray,
               depth: int) -> tuple[np.ndarray, np.ndarray]:
        row, col, grade = judged
        dcg = np.bincount(row, weights=self.gain[grade] / np.log2(col + 2.0), minlength=self.layout.n_queries)
        return dcg, np.where(rank < ABSENT, 1.0 / np.log2(np.minimum(rank, ABSENT - 2) + 2.0), 0.0)

    def _changes(self, a: Profile, b: Profile) -> np.ndarray:
        """(Q, W) e_v = disc_a - disc_b of the open pairs in either run's cells (0 padding)."""
        ea = a.lookup("extra", a.var) - b.lookup("extra", a.var)
        vb = np.where(a.lookup("rank", b.var) < ABSENT, -1, b.var)
        return np.concatenate([ea, -b.lookup("extra", vb)], axis=1)

    def _side(self, a: Profile, b: Profile) -> tuple[np.ndarray, bool]:
        """max over assignments of M_a - M_b per query, and whether it is exact everywhere."""
        e = self._changes(a, b)
        start = a.fixed - b.fixed
        if not self.normalised:
            return start + float(self.gain[-1]) * np.maximum(e, 0.0).sum(axis=1), True
        # a query where neither run has an open cell: its DCGs are fixed, only the ideal can
        # grow (every open pair at the top grade): the max is at the smallest or largest ideal
        most = self._ideal(self.judged + self.layout.n_open[:, None])
        best = np.maximum(_ratio(start, self.ideal_now), _ratio(start, most))
        rows = np.flatnonzero((e != 0).any(axis=1))
        if not len(rows):
            return best, True
        count, total = self._candidates(e[rows], rows)
        best[rows], exact = self._best_ratio(start[rows], count, total, rows)
        return best, bool(exact.all())

    @cached_property
    def most(self) -> np.ndarray:
        """(Q,) IDCG with every open pair at the top grade."""
        return self._ideal(self.judged + self.layout.n_open[:, None])

    def bounds_many(self, pairs: Sequence[tuple[int, int]]) -> list[tuple[np.ndarray, np.ndarray, bool]]:
        """:meth:`bounds` of every pair, the same values: the queries of several pairs and both
        sides are solved together, each with only its candidate counts (grouped by how many)."""
        if not (self.free and self.normalised):
            return super().bounds_many(pairs)
        out: list[tuple[np.ndarray, np.ndarray, bool]] = []
        step = max(1, BATCH_ROWS // max(2 * self.layout.n_queries, 1))
        for lo in range(0, len(pairs), step):
            sides = self._sides([(self.profiles[i], self.profiles[j]) for i, j in pairs[lo:lo + step]])
            for k in range(0, len(sides), 2):
                (high, exact_high), (low, exact_low) = sides[k], sides[k + 1]
                out.append((-low, high, exact_high and exact_low))
        return out

    def _sides(self, pairs: list[tuple[Profile, Profile]]) -> list[tuple[np.ndarray, bool]]:
        """:meth:`_side` of (a, b) and of (b, a) for every pair, in that order, the Dinkelbach
        problems of all of them solved at once. The sides share their changes: (b, a)'s are
        (a, b)'s negated, so its sorted row is (a, b)'s reversed and negated.

        A row is solved first over the prefixes of its positive changes and the zero run's end
        only: where the best of them with every level equal is >= 0, Dinkelbach's t stays >= 0,
        and then no count past the zero run can be picked (each negative change lowers E(c)
        while D_k(c) does not fall), nor beat that start; the other rows are solved again over
        every candidate, as :meth:`_side` does."""
        found: list[tuple[np.ndarray, np.ndarray]] = []  # per side: its best, its rows
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        for a, b in pairs:
            e = self._changes(a, b)
            rows = np.flatnonzero((e != 0).any(axis=1))
            e = np.take(e, rows, axis=0)
            # as _candidates sorts: descending, a zero column between positives and negatives;
            # (b, a)'s descending row is (a, b)'s ascending one negated
            ordered = np.sort(np.concatenate([e, np.zeros((len(e), 1))], axis=1), axis=1)
            n_pos, n_neg = (e > 0).sum(axis=1), (e < 0).sum(axis=1)
            for x, y, s, up, down in ((a, b, ordered[:, ::-1], n_pos, n_neg), (b, a, None, n_neg, n_pos)):
                start = x.fixed - y.fixed
                best = np.maximum(_ratio(start, self.ideal_now), _ratio(start, self.most))
                found.append((best, rows))
                if len(rows):
                    parts.append((rows, start[rows], -ordered if s is None else s, up, down))
        if not parts:
            return [(best, True) for best, _ in found]
        rows, start = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
        n_pos, n_neg = np.concatenate([p[3] for p in parts]), np.concatenate([p[4] for p in parts])
        # E(c) of the positive prefixes and the zero run's end: the running sums of each sorted
        # row's first columns (the positives lead it, a zero after them; the sums past the
        # zero run's end are never read)
        width = int(n_pos.max()) + 1
        totals = np.zeros((len(rows), width + 1))
        at = 0
        for p in parts:
            w = min(width, p[2].shape[1])
            _running(p[2][:, :w], out=totals[at:at + len(p[0]), 1:w + 1])
            at += len(p[0])
        value, done, again = self._solve(rows, start, totals, n_pos, n_neg, n_pos)
        if len(again):  # the rows whose best with every level equal is < 0: every candidate
            offsets = np.cumsum([0] + [len(p[0]) for p in parts])
            pieces = []
            for p, lo, hi in zip(parts, offsets[:-1], offsets[1:]):
                mine = again[(again >= lo) & (again < hi)] - lo
                if len(mine):
                    pieces.append(self._compact(p[2][mine], p[3][mine], p[4][mine]))
            wide = np.zeros((len(again), max(piece.shape[1] for piece in pieces) + 1))
            at = 0
            for piece in pieces:
                _running(piece, out=wide[at:at + len(piece), 1:piece.shape[1] + 1])
                at += len(piece)
            value[again], done[again], _ = self._solve(rows[again], start[again], wide, n_pos[again],
                                                       n_neg[again], n_pos[again] + n_neg[again])
        out: list[tuple[np.ndarray, bool]] = []
        at = 0
        for best, rows_ in found:
            if len(rows_):
                best[rows_] = value[at:at + len(rows_)]
            out.append((best, bool(done[at:at + len(rows_)].all())))
            at += len(rows_)
        return out

    def _solve(self, rows: np.ndarray, start: np.ndarray, totals: np.ndarray, n_pos: np.ndarray,
               n_neg: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows' best ratios over the candidates up to the prefix of ``last`` changes (the
        positives then the negatives, the zero run's end between them; ``totals``: E(c) of the
        candidates, the running sums of the steps of :meth:`_compact`), grouped by their number
        of candidates; and, when ``last`` is the positives only, the rows (indexes) whose best
        with every level equal is < 0, left for every candidate (their values unset)."""
        n = len(rows)
        value, done = np.empty(n), np.ones(n, dtype=bool)
        partial = bool((last < n_pos + n_neg).any())
        again: list[np.ndarray] = []
        m = last + 2  # candidates: prefixes 0..n_pos, the zero run's end, the negatives
        # small counts: a stable sort of 16-bit keys is a radix sort
        order = np.argsort(m.astype(np.int16) if len(m) and int(m.max()) < 1 << 15 else m, kind="stable")
        # every row's data in that order once, so that each chunk is a slice (no gathers)
        totals, rows, start, n_pos, n_neg, last, m = (np.take(x, order, axis=0) for x in
                                                      (totals, rows, start, n_pos, n_neg, last, m))
        sorted_value, sorted_done = np.empty(n), np.ones(n, dtype=bool)
        for at in _chunks(m):
            w = int(m[at.stop - 1])
            total = totals[at, :w]
            up, down = n_pos[at, None], n_neg[at, None]
            zeros = np.take(self.layout.n_open, rows[at])[:, None] - up - down
            k = np.arange(w)[None, :]
            count = np.where(k <= up, k, np.where(k < last[at, None] + 2, zeros + k - 1, -1))
            if not partial:
                sorted_value[at], sorted_done[at] = self._best_ratio(start[at], count, total, rows[at])
                continue
            ok, ideal, equal = self._equal(start[at], count, total, rows[at])
            low = equal < 0
            if not low.any():
                if self.top == 1:
                    sorted_value[at] = equal
                else:
                    sorted_value[at], sorted_done[at] = self._dinkelbach(start[at], ok, total, ideal,
                                                                         equal, rows[at])
                continue
            again.append(order[at][low])
            keep = np.flatnonzero(~low)
            where = np.arange(at.start, at.stop)[keep]
            equal, ok, total = equal[keep], ok[keep], total[keep]
            ideal = [x[keep] for x in ideal]
            if self.top == 1:
                sorted_value[where] = equal
            elif len(where):
                sorted_value[where], sorted_done[where] = self._dinkelbach(start[where], ok, total, ideal,
                                                                           equal, rows[where])
        value[order], done[order] = sorted_value, sorted_done
        return value, done, np.sort(np.concatenate(again)) if again else np.zeros(0, dtype=np.int64)

    @staticmethod
    def _compact(s: np.ndarray, n_pos: np.ndarray, n_neg: np.ndarray) -> np.ndarray:
        """The sorted changes ``s`` (descending, a zero column among them) of each row kept to its
        positives, one zero and its negatives, moved left (0 after them): the steps of E(c)
        over the candidates of :meth:`_candidates` (the zeros between add nothing)."""
        width = s.shape[1]
        k = np.arange(int((n_pos + n_neg).max()) + 1)[None, :]
        up, down = n_pos[:, None], n_neg[:, None]
        col = np.where(k <= up, k, width - down + k - up - 1)
        inside = k <= up + down
        return np.where(inside, np.take_along_axis(s, np.where(inside, col, 0), axis=1), 0.0)

    def _candidates(self, e: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per query, the counts c worth trying and E(c), the sum of the c largest e_v: every
        prefix of the positive e_v, then the end of the zero run (fillers, e_v = 0) and every
        prefix of the negative ones after it (-1: not a candidate). One sort: descending, the
        padding and zeros fall between the positives and the negatives."""
        # a zero column: the zero run is never empty, so its end has a column of its own
        s = -np.sort(-np.concatenate([e, np.zeros((len(e), 1))], axis=1), axis=1)
        width = s.shape[1]
        n_pos, n_neg = (e > 0).sum(axis=1), (e < 0).sum(axis=1)
        zeros = self.layout.n_open[rows] - n_pos - n_neg
        total = np.concatenate([np.zeros((len(e), 1)), np.cumsum(s, axis=1)], axis=1)
        j = np.arange(width + 1)[None, :]
        first_neg = (width - n_neg)[:, None]
        count = np.where(j <= n_pos[:, None], j,
                         np.where(j >= first_neg, (n_pos + zeros)[:, None] + j - first_neg, -1))
        return count, total

    def _best_ratio(self, start: np.ndarray, count: np.ndarray, total: np.ndarray,
                    rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """max over count vectors of (start + sum_l dgain_l E(c_l)) / IDCG(counts), for the
        queries ``rows`` (a query may come more than once: each row is computed alone), and
        whether each row reached its optimum."""
        ok, ideal, equal = self._equal(start, count, total, rows)
        if self.top == 1:
            return equal, np.ones(len(equal), dtype=bool)
        return self._dinkelbach(start, ok, total, ideal, equal, rows)

    def _equal(self, start: np.ndarray, count: np.ndarray, total: np.ndarray, rows: np.ndarray
               ) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
        """Which candidates are, each level's IDCG term at them, and the best ratio with every
        level equal (grades 0 or G only): exact with one positive grade, and a feasible value
        for Dinkelbach to climb from."""
        ok = count >= 0
        c = np.maximum(count, 0)
        ideal = [np.take(self.ideal_sum, np.take(self.judged[:, lv], rows)[:, None] + c) for lv in range(self.top)]
        den = self._scaled(0, ideal[0])
        for lv in range(1, self.top):
            den = den + self._scaled(lv, ideal[lv])
        equal = np.where(ok, _ratio(start[:, None] + self.gain[-1] * total, den), -np.inf).max(axis=1)
        return ok, ideal, equal

    def _dinkelbach(self, start: np.ndarray, ok: np.ndarray, total: np.ndarray,
                    ideal: list[np.ndarray], t: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Dinkelbach's iteration over count vectors c_1 >= ... >= c_G (module docstring), and
        whether each row reached its optimum (else its bound is valid, possibly loose)."""
        zero_ideal = self.judged[queries, 0] == 0
        # IDCG is 0 only when nothing has a positive grade: value 0, kept apart (level 1 >= 1)
        first_ok = ok & ~(zero_ideal[:, None] & (np.cumsum(ok, axis=1) == 1)) if zero_ideal.any() else ok
        e = np.where(ok, total, 0.0)
        rows = np.arange(len(start))
        live = np.ones(len(start), dtype=bool)
        slack = np.zeros(len(start))
        for _ in range(MAX_STEPS):
            at = np.flatnonzero(live)
            if not len(at):
                break
            if len(at) == len(live):  # every row (the first step): no copies
                e_at, ok_at, first_at, ideal_at = e, ok, first_ok, ideal
            else:
                e_at, ok_at, first_at, ideal_at = e[at], ok[at], first_ok[at], [x[at] for x in ideal]
            value, picks = self._levels(e_at, ok_at, first_at, ideal_at, t[at])
            sub = rows[:len(at)]
            num = start[at] + sum(self.step[lv] * e_at[sub, picks[lv]] for lv in range(self.top))
            den = sum(self.step[lv] * ideal_at[lv][sub, picks[lv]] for lv in range(self.top))
            f = start[at] + value
            new = _ratio(num, den)
            moved = (f > 1e-12 * np.maximum(1.0, np.abs(t[at]))) & (den > 0) & (new > t[at])
            slack[at] = np.where(moved, f, np.maximum(f, 0.0))
            t[at] = np.where(moved, new, t[at])
            live[at] = moved
        # still climbing after MAX_STEPS, or stopped by rounding: t + F(t)/D_min is an upper bound
        smallest = np.where(zero_ideal, float(self.step[0]) * self.ideal_sum[1], self.ideal_now[queries])
        t = t + _ratio(np.maximum(slack, 0.0), smallest)
        return np.where(zero_ideal, np.maximum(t, 0.0), t), ~live

    def _levels(self, e: np.ndarray, ok: np.ndarray, first_ok: np.ndarray,
                ideal: list[np.ndarray], t: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """max over c_1 >= ... >= c_G of sum_l dgain_l (E(c_l) - t D_k(Cf_l + c_l)) and a
        maximiser (candidate index per level, level 1 first)."""
        f = [np.where(first_ok if lv == 0 else ok, self._scaled(lv, e - t[:, None] * ideal[lv]), -np.inf)
             for lv in range(self.top)]
        # t >= 0: the levels separate; their largest maximisers are ordered (Topkis)
        last = f[0].shape[1] - 1
        picks = [last - np.argmax(x[:, ::-1], axis=1) for x in f]
        rows = np.arange(len(t))
        value = sum(x[rows, p] for x, p in zip(f, picks))
        assert isinstance(value, np.ndarray)
        negative = np.flatnonzero(t < 0)
        if len(negative):
            v, p = self._ordered([x[negative] for x in f])
            value[negative] = v
            for lv in range(self.top):
                picks[lv][negative] = p[lv]
        return value, picks

    def _ordered(self, f: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        """max of sum_l f_l(c_l) with c_1 >= c_2 >= ... (candidate indexes), and a maximiser:
        from the top level down, each level adds the best of the level above at or below it."""
        rows = np.arange(len(f[0]))
        best = f[-1]
        links = []
        for lv in range(self.top - 2, -1, -1):
            arg = _running_argmax(best)
            links.append(arg)
            best = f[lv] + best[rows[:, None], arg]
        pick = np.argmax(best, axis=1)
        value = best[rows, pick]
        picks = [pick]
        for arg in reversed(links):
            pick = arg[rows, pick]
            picks.append(pick)
        return value, picks

    def _bounds(self, i: int, j: int) -> tuple[np.ndarray, np.ndarray, bool]:
        a, b = self.profiles[i], self.profiles[j]
        (high, exact_high), (low, exact_low) = self._side(a, b), self._side(b, a)
        return -low, high, exact_high and exact_low

    def values(self, p: Profile, draw: RunDraw) -> np.ndarray:
        dcg = np.broadcast_to(p.fixed, (draw.n, len(p.fixed)))
        if p.width:
            gains = self.gain32[draw.grades[:, :, :p.width]]
            dcg = dcg + np.einsum("sqw,qw->sq", gains, p.own32, dtype=np.float64)
        if not self.normalised:
            return np.array(dcg)
        return _ratio(dcg, draw.shared(("ideal", self.measure.cutoff, self.gain[-1]), self._drawn_ideal))

    def _drawn_ideal(self, draw: Draw) -> np.ndarray:
        """(S, Q) IDCG of every query under the draw (the same for every run)."""
        counts = np.stack([self.judged[:, lv][None, :] + draw.count(lv + 1) for lv in range(self.top)],
                          axis=-1)
        return self._ideal(counts)

    def flip(self, p: Profile) -> np.ndarray:
        q = self.layout.open_query
        now = p.fixed[q]
        lift = now + self.gain[-1] * p.extra
        if not self.normalised:
            return lift - now
        return _ratio(lift, self._ideal(self.judged + 1)[q]) - _ratio(now, self.ideal_now[q])

    def harm(self, probs: np.ndarray) -> np.ndarray:
        return probs @ self.gain / self.gain[-1]


def _chunks(sizes: np.ndarray) -> list[slice]:
    """Consecutive slices of ``sizes`` (sorted): each ends at a change of size once it holds
    ``GROUP_ROWS`` rows, or at ``CHUNK_ROWS`` rows (rows are solved at the chunk's largest size)."""
    out, lo = [], 0
    ends = np.flatnonzero(np.diff(sizes)) + 1
    for end in [*ends.tolist(), len(sizes)]:
        while end - lo > CHUNK_ROWS:
            out.append(slice(lo, lo + CHUNK_ROWS))
            lo += CHUNK_ROWS
        if end - lo >= GROUP_ROWS or end == len(sizes):
            if end > lo:
                out.append(slice(lo, end))
            lo = end
    return out


def _running_argmax(values: np.ndarray) -> np.ndarray:
    """(Q, C) index of a max of ``values[:, :j + 1]`` for every j."""
    index = np.broadcast_to(np.arange(values.shape[1]), values.shape)
    running = np.maximum.accumulate(values, axis=1)
    return np.maximum.accumulate(np.where(values >= running, index, 0), axis=1)


_CLASSES: dict[str, type[Family]] = {
    "precision": Precision, "success": Success, "recall": Recall, "rr": ReciprocalRank,
    "ap": AveragePrecision, "ndcg": CumulativeGain,
}


def family(measure: Measure, layout: Layout) -> Family:
    """The bounds, samples and flips of ``measure``; ``UsageError`` when it has none."""
    name = FAMILIES.get(measure.definition.name)
    if name is None:
        known = ", ".join(sorted(FAMILIES))
        raise UsageError(f"{measure} cannot be settled: certain bounds exist for {known} "
                         "(with their cutoffs and rel=).")
    return _CLASSES[name](measure, layout)
