"""How far each measure can move: exact per-query bounds of a difference between two runs over
every grade the open pool pairs may get, the measure at sampled grades, and one pair's swing.

One query, two runs A and B, a measure M. The open pairs of the query (pool pairs nobody judged)
are the variables: each takes a grade 0..G (G = the top of the scale); binary measures read
x_v = [grade >= rel]. Everything else is fixed: judged grades, and unjudged chunks outside the
pool (not relevant). "Now" is every x_v = 0: an open pair is not relevant until judged, which is
how the measures count it today. For each measure below, ``bounds`` returns the exact
min and max over all assignments of M_A - M_B, with the argument that makes it exact; the
tests compare every one with brute force over all assignments.

Notation: a run's *cells* are its ranks 1..k read by the measure (k its cutoff, or the whole
ranking); ``inA``/``inB`` say an open pair is among A's / B's cells; for one query, "A-only"
pairs are in A's cells and not B's, "B-only" the reverse, "both" in both, and "fillers" are the
query's other open pairs (in the pool, ranked by neither within k: they can only add to R or to
the ideal DCG).

- **P@k** = hits@k / k is linear: x_v moves P_A - P_B by (inA - inB)/k, independently of the
  others. max = now + |A-only| / k, min = now - |B-only| / k.
- **Success@k** depends on x only through "some A-only pair is relevant", "some B-only pair is",
  "some both pair is". For the max a B-only pair is best not relevant (it can only raise S_B), an
  A-only pair best relevant (it only raises S_A), and the both pairs act as one switch t:
  max = max over t in {0, 1 if any both pair} of [f_A or A-only or t] - [f_B or t] (f: a judged
  relevant chunk in the top k). The min is minus the max with A and B swapped.
- **RR@k**: some optimal assignment has at most one relevant open pair. If a set X is optimal,
  keep only v*, its pair ranked first by A: RR_A is unchanged (A's first relevant is the same)
  and RR_B cannot grow (fewer relevant chunks). So max = max(now, max over A's open pairs v of
  1/min(f_A, a_v) - 1/min(f_B, b_v)) with f the first judged relevant rank (inf: none; 1/inf
  = 0) and a_v, b_v the pair's ranks (inf outside the cells).
- **R@k** = hits / R with R = R_f + (open pairs relevant), R_f the judged relevant of the query.
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
  min(alpha_u, alpha_v), own_A(v) = (judged hits above v + 1)/a_v + sum of 1/rank of the judged
  relevant chunks below v, alpha = 1/a (0 outside the cells). So the difference is
  N(x) / (R_f + |x|) with N quadratic: c_uv = min(alpha_u, alpha_v) - min(beta_u, beta_v), beta
  for B. Maximising it is a 0/1 quadratic fractional program; no structure makes it cheap in
  general (the pairs both runs rank in the same order make every subset a candidate). The bound
  given is **exact when the query has at most ``AP_EXACT_PAIRS`` open pairs in A's or B's cells**
  (all 2^m subsets enumerated at once, the fillers at 0 or all: for a fixed subset the value is
  N / (D + l), monotone in the filler count l), and otherwise valid but possibly loose: with the
  pairs in A's order, sum_{u<v in x} c_uv <= sum_{v in x} kappa_v where kappa_v counts each
  earlier A-only pair once alpha_v (their c_uv is exactly alpha_v) and each earlier pair of B
  at most max(alpha_v - min(beta_v, beta_min), 0) (beta_min the smallest beta among them; pairs
  not in A's cells have c_uv <= 0). Then N(x) <= N(0) + sum_{v in x} (lambda_v + kappa_v) with
  lambda_v = own_A(v) - own_B(v), a linear-fractional objective whose max over subsets takes,
  for each size, the largest coefficients (fillers have coefficient 0): the max over prefix
  lengths of the sorted coefficients, with and without every filler. The min is minus the max
  with A and B swapped. ``Comparison.exact`` says whether every query was exact.
- **nDCG@k** (gain g or 2^g - 1) = DCG / IDCG. DCG_A - DCG_B = N(0) + sum_v gain(g_v) e_v with
  e_v = disc_A(v) - disc_B(v), linear; the ideal DCG depends only on how many chunks of the
  query have each grade: IDCG = sum_l dgain_l D_k(C_l), C_l the chunks with grade >= l, D_k(n)
  the sum of the first min(n, k) discounts, dgain_l = gain(l) - gain(l - 1). Writing gain(g_v)
  = sum_{l <= g_v} dgain_l, for given counts c_l of open pairs with grade >= l (c_1 >= c_2 >=
  ...) IDCG is fixed and N is largest when, at every level, the c_l pairs of largest e_v have
  grade >= l; these sets nest, so they are one assignment. The max over assignments is the max
  over count vectors of (N(0) + sum_l dgain_l E(c_l)) / (sum_l dgain_l D_k(Cf_l + c_l)), E(c) the
  sum of the c largest e_v, Cf_l the judged chunks with grade >= l; it is found exactly by
  Dinkelbach's iteration (t <- N/D at the maximiser of N - t D, which stops when max N - t D = 0;
  each step a dynamic programme over the levels with the order constraint), and in one pass when
  the scale has a single positive grade. Within a run of equal e_v (zeros: fillers) only the ends
  matter, so a query costs O(G m) per step for m open pairs in A's or B's cells. DCG@k (no
  ideal) is linear: max = now + gain(G) sum max(e_v, 0).

Measures other than these (Rprec, bpref, ERR, F, ContextPrecision@k ...) have no bounds here:
:func:`family` refuses them, and :func:`supported` says which are.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics.registry import Measure
from ragjudge.metrics.settle_layout import ABSENT, Layout, RunCells, occurrences

#: AP's bounds are enumerated exactly for queries with at most this many open pairs in the
#: cells of either run (2^m subsets each); above it the relaxation of the module's docstring
AP_EXACT_PAIRS = 6
#: Dinkelbach steps for nDCG's bounds before the (still valid) bound t + F(t) / D_min is taken
MAX_STEPS = 60

FAMILIES = {"P": "precision", "Success": "success", "R": "recall", "RR": "rr", "AP": "ap",
            "ContextPrecisionAP": "ap", "nDCG": "ndcg", "nDCG_exp": "ndcg", "DCG": "ndcg"}


def supported(measure: Measure) -> bool:
    """True when :mod:`ragjudge.metrics.settle` can bound ``measure``."""
    return measure.definition.name in FAMILIES


@dataclass
class Draw:
    """Sampled grades of the open pairs, (S, V) integers, and what the families share of them."""

    grades: np.ndarray
    layout: Layout

    def __post_init__(self) -> None:
        self._rel: dict[int, np.ndarray] = {}
        self._sums: dict[int, np.ndarray] = {}

    @property
    def n(self) -> int:
        return int(self.grades.shape[0])

    def at_least(self, level: int) -> np.ndarray:
        """(S, V) bool: grade >= level."""
        if level not in self._rel:
            self._rel[level] = self.grades >= level
        return self._rel[level]

    def count(self, level: int) -> np.ndarray:
        """(S, Q) open pairs of each query with grade >= level."""
        if level not in self._sums:
            self._sums[level] = self.layout.open_sums(self.at_least(level))
        return self._sums[level]


def _gather(values: np.ndarray, var: np.ndarray, fill: float | int | bool = 0) -> np.ndarray:
    """``values[..., var]`` with ``fill`` where ``var`` is -1 (padding)."""
    out = values[..., np.maximum(var, 0)]
    return np.where(var >= 0, out, fill)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0 (a query with nothing relevant scores 0)."""
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den != 0)
    return out


@dataclass
class Profile:
    """One run under one measure: its current values and what its bounds read."""

    cur: np.ndarray
    rank: np.ndarray  # (V,) 0-based rank of each open pair in the run, ABSENT when not ranked
    var: np.ndarray  # (Q, W) open pairs within the cells, in rank order (-1 padding)
    col: np.ndarray  # (Q, W) their ranks (ABSENT padding)
    fixed: np.ndarray  # (Q,) the measure's judged part (hits, S, DCG or first relevant rank)
    extra: np.ndarray  # (V,) per open pair: own term of AP, discount of DCG (0 outside)


class Family:
    """Bounds, sampled values and flips of one measure (see the module's docstring)."""

    def __init__(self, measure: Measure, layout: Layout) -> None:
        self.measure, self.layout = measure, layout
        self.top = layout.top_grade
        level = measure.rel if measure.rel is not None else layout.threshold
        self.level = max(int(level), 0)

    # the cells of a run this measure reads
    def columns(self, cells: RunCells) -> int:
        cols = cells.grades.shape[1]
        return cols if self.measure.cutoff is None else min(int(self.measure.cutoff), cols)

    @property
    def free(self) -> bool:
        """Whether an open pair's judgment can change the measure (binary: 0 < rel <= G)."""
        return 0 < self.level <= self.top

    def profile(self, cells: RunCells, cur: np.ndarray) -> Profile:
        cols = self.columns(cells)
        var, col = occurrences(cells.open, cols)
        rank = np.where(cells.rank < cols, cells.rank, ABSENT).astype(np.int64)
        relevant = cells.grades[:, :cols] >= self.level
        fixed, extra = self._fixed(cells, relevant, rank)
        return Profile(cur, rank, var, col, fixed, extra)

    def _fixed(self, cells: RunCells, relevant: np.ndarray, rank: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        return relevant.sum(axis=1).astype(np.float64), np.zeros(0)

    def bounds(self, a: Profile, b: Profile) -> tuple[np.ndarray, np.ndarray, bool]:
        """(Q,) min and max of M_A - M_B per query over every grade of the open pairs, and
        whether both are exact (always, but for AP's relaxation)."""
        if not self.free:
            if self.level > self.top:  # no open pair can become relevant
                now = a.cur - b.cur
                return now, now, True
            forced = Draw(np.full((1, self.layout.n_vars), self.top, dtype=np.int16), self.layout)
            final = self.values(a, forced)[0] - self.values(b, forced)[0]
            return final, final, True
        low, high = self._bounds(a, b)
        return low, high, True

    def _bounds(self, a: Profile, b: Profile) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def values(self, p: Profile, draw: Draw) -> np.ndarray:
        """(S, Q) the measure when the open pairs have the drawn grades."""
        raise NotImplementedError

    def flip(self, p: Profile) -> np.ndarray:
        """(V,) how much the measure of the run moves when one open pair, all others as now,
        gets the top grade (binary measures: becomes relevant)."""
        raise NotImplementedError

    def harm(self, probs: np.ndarray) -> np.ndarray:
        """(V,) the expected share of a flip a judgment brings, under grade probabilities
        (V, G + 1): P(grade >= rel) for binary measures."""
        return probs[:, self.level:].sum(axis=1) if self.free else np.zeros(len(probs))

    # shared helpers
    def _inside(self, p: Profile, other: Profile) -> np.ndarray:
        """(Q, W) of p's open cells: the pair is also in the other run's cells."""
        return (p.var >= 0) & (_gather(other.rank, p.var, ABSENT) < ABSENT)

    def _hits(self, p: Profile, draw: Draw) -> np.ndarray:
        """(S, Q) judged hits plus the drawn relevant open pairs in the cells."""
        rel = _gather(draw.at_least(self.level), p.var, False)
        return p.fixed[None, :] + rel.sum(axis=2)


class Precision(Family):
    def _bounds(self, a: Profile, b: Profile) -> tuple[np.ndarray, np.ndarray]:
        k = float(self.measure.cutoff)
        up = ((a.var >= 0) & ~self._inside(a, b)).sum(axis=1)
        down = ((b.var >= 0) & ~self._inside(b, a)).sum(axis=1)
        now = a.cur - b.cur
        return now - down / k, now + up / k

    def values(self, p: Profile, draw: Draw) -> np.ndarray:
        return self._hits(p, draw) / float(self.measure.cutoff)

    def flip(self, p: Profile) -> np.ndarray:
        return np.where(p.rank < ABSENT, 1.0 / float(self.measure.cutoff), 0.0)


class Success(Family):
    def _side(self, a: Profile, b: Profile) -> np.ndarray:
        only = ((a.var >= 0) & ~self._inside(a, b)).sum(axis=1) > 0
        both = self._inside(a, b).sum(axis=1) > 0
        first = ((a.fixed > 0) | only).astype(np.float64) - (b.fixed > 0)
        return np.maximum(first, np.where(both, 0.0, -1.0))

    def _bounds(self, a: Profile, b: Profile) -> tuple[np.ndarray, np.ndarray]:
        return -self._side(b, a), self._side(a, b)

    def values(self, p: Profile, draw: Draw) -> np.ndarray:
        return (self._hits(p, draw) > 0).astype(np.float64)

    def flip(self, p: Profile) -> np.ndarray:
        none_yet = p.fixed[self.layout.open_query] == 0
        return np.where((p.rank < ABSENT) & none_yet, 1.0, 0.0)


def _rr(rank: np.ndarray) -> np.ndarray:
    """1 / (rank + 1), 0 for ABSENT."""
    return np.where(rank < ABSENT, 1.0 / (np.minimum(rank, ABSENT - 1) + 1.0), 0.0)


class ReciprocalRank(Family):
    def _fixed(self, cells: RunCells, relevant: np.ndarray, rank: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        any_ = relevant.any(axis=1)
        first = np.where(any_, np.argmax(relevant, axis=1) if relevant.shape[1] else 0, ABSENT)
        return first.astype(np.int64), np.zeros(0)

    def _side(self, a: Profile, b: Profile) -> np.ndarray:
        fa, fb = a.fixed.astype(np.int64), b.fixed.astype(np.int64)
        best = _rr(fa) - _rr(fb)
        early = (a.var >= 0) & (a.col < fa[:, None])
        if not early.any():
            return best
        width = int(early.sum(axis=1).max())  # early cells are a prefix of each row
        var, col = a.var[:, :width], a.col[:, :width]
        b_rank = np.minimum(_gather(b.rank, var, ABSENT), fb[:, None])
        gain = _rr(np.minimum(col, fa[:, None])) - _rr(b_rank)
        gain = np.where(early[:, :width], gain, -np.inf)
        return np.maximum(best, gain.max(axis=1))

    def _bounds(self, a: Profile, b: Profile) -> tuple[np.ndarray, np.ndarray]:
        return -self._side(b, a), self._side(a, b)

    def values(self, p: Profile, draw: Draw) -> np.ndarray:
        rel = _gather(draw.at_least(self.level), p.var, False)
        ranks = np.where(rel, p.col[None, :, :], ABSENT)
        first = np.minimum(p.fixed.astype(np.int64)[None, :],
                           ranks.min(axis=2) if ranks.shape[2] else ABSENT)
        return _rr(first)

    def flip(self, p: Profile) -> np.ndarray:
        first = p.fixed.astype(np.int64)[self.layout.open_query]
        return np.where(p.rank < first, _rr(p.rank) - _rr(first), 0.0)


class Recall(Family):
    def __init__(self, measure: Measure, layout: Layout) -> None:
        super().__init__(measure, layout)
        self.judged_relevant = layout.relevant_count(self.level).astype(np.float64)

    def _side(self, a: Profile, b: Profile) -> np.ndarray:
        n_a = ((a.var >= 0) & ~self._inside(a, b)).sum(axis=1)
        n_b = ((b.var >= 0) & ~self._inside(b, a)).sum(axis=1)
        n_0 = self.layout.n_open - n_a - n_b
        best = np.full(len(n_a), -np.inf)
        for i in (0, 1):
            for j in (0, 1):
                for m in (0, 1):
                    num = a.fixed - b.fixed + i * n_a - j * n_b
                    den = self.judged_relevant + i * n_a + j * n_b + m * n_0
                    best = np.maximum(best, _ratio(num, den))
        return best

    def _bounds(self, a: Profile, b: Profile) -> tuple[np.ndarray, np.ndarray]:
        return -self._side(b, a), self._side(a, b)

    def values(self, p: Profile, draw: Draw) -> np.ndarray:
        return _ratio(self._hits(p, draw), self.judged_relevant[None, :] + draw.count(self.level))

    def flip(self, p: Profile) -> np.ndarray:
        q = self.layout.open_query
        hits, rel = p.fixed[q], self.judged_relevant[q]
        return (hits + (p.rank < ABSENT)) / (rel + 1.0) - _ratio(hits, rel)


class AveragePrecision(Family):
    """AP@k: exact up to ``AP_EXACT_PAIRS`` open pairs per query, a valid relaxation above."""

    def __init__(self, measure: Measure, layout: Layout) -> None:
        super().__init__(measure, layout)
        self.judged_relevant = layout.relevant_count(self.level).astype(np.float64)

    def _fixed(self, cells: RunCells, relevant: np.ndarray, rank: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        cols = relevant.shape[1]
        inv = 1.0 / np.arange(1, cols + 1, dtype=np.float64)
        hits = np.cumsum(relevant, axis=1)
        total = (relevant * hits * inv).sum(axis=1)
        # own term of an open pair at rank c: (judged hits above + 1) / (c + 1) plus 1/rank of
        # every judged relevant chunk below it (each gains one hit)
        below = np.cumsum((relevant * inv)[:, ::-1], axis=1)[:, ::-1]  # from rank c on
        own = np.zeros(len(rank))
        at = np.flatnonzero(rank < ABSENT)
        if len(at):
            q, c = self.layout.open_query[at], rank[at]
            above = hits[q, c] - relevant[q, c]  # the cell holds the open pair: not relevant
            after = below[q, c] - relevant[q, c] * inv[c]
            own[at] = (above + 1.0) * inv[c] + after
        return total, own

    @staticmethod
    def _alpha(p: Profile, var: np.ndarray) -> np.ndarray:
        """1 / rank of each open pair in p's cells, 0 outside them (alpha, or beta for B)."""
        return _rr(_gather(p.rank, var, ABSENT))

    def _side(self, a: Profile, b: Profile) -> tuple[np.ndarray, np.ndarray]:
        """max over assignments of AP_A - AP_B, and whether it is exact, per query."""
        lay = self.layout
        # a's open cells in a's rank order, then b's that a does not rank
        va = a.var
        alpha_a, beta_a = self._alpha(a, va), self._alpha(b, va)
        valid_a = va >= 0
        in_b = valid_a & (beta_a > 0)
        only_before = np.cumsum(valid_a & ~in_b, axis=1) - (valid_a & ~in_b)
        b_before = np.cumsum(in_b, axis=1) - in_b
        beta_seen = np.where(in_b, beta_a, np.inf)
        beta_min = np.minimum.accumulate(np.concatenate(
            [np.full((len(va), 1), np.inf), beta_seen[:, :-1]], axis=1), axis=1) \
            if va.shape[1] else beta_seen
        rho = np.maximum(alpha_a - np.minimum(beta_a, beta_min), 0.0)
        kappa = only_before * alpha_a + b_before * np.where(np.isfinite(rho), rho, 0.0)
        lam_a = _gather(a.extra, va, 0.0) - _gather(b.extra, va, 0.0)
        vb = np.where((b.var >= 0) & ~self._inside(b, a), b.var, -1)
        lam_b = -_gather(b.extra, vb, 0.0)
        var = np.concatenate([va, vb], axis=1)
        lam = np.concatenate([lam_a, lam_b], axis=1)
        mu = np.where(var >= 0, lam + np.concatenate([kappa, np.zeros_like(lam_b)], axis=1), -np.inf)
        order = np.argsort(-mu, axis=1, kind="stable")
        mu = np.take_along_axis(mu, order, axis=1)
        var = np.take_along_axis(var, order, axis=1)
        lam = np.take_along_axis(lam, order, axis=1)
        m = (var >= 0).sum(axis=1)
        fillers = lay.n_open - m
        start = a.fixed - b.fixed
        prefix = np.concatenate([np.zeros((len(mu), 1)), np.cumsum(np.where(np.isfinite(mu), mu, 0.0),
                                                                      axis=1)], axis=1)
        size = np.arange(prefix.shape[1])[None, :]
        num = start[:, None] + prefix
        den = self.judged_relevant[:, None] + size
        best = np.maximum(_ratio(num, den), _ratio(num, den + fillers[:, None]))
        best = np.where(size <= m[:, None], best, -np.inf).max(axis=1)
        exact = m <= 1
        for width in range(2, AP_EXACT_PAIRS + 1):
            rows = np.flatnonzero(m == width)
            if len(rows):
                best[rows] = self._enumerate(a, b, rows, var[rows, :width], lam[rows, :width],
                                             start[rows], fillers[rows])
                exact[rows] = True
        return best, exact

    def _enumerate(self, a: Profile, b: Profile, rows: np.ndarray, var: np.ndarray,
                   lam: np.ndarray, start: np.ndarray, fillers: np.ndarray) -> np.ndarray:
        """The exact max for queries with ``var.shape[1]`` open pairs in either run's cells: every
        subset at once (bits x pairs), the fillers none or all."""
        width = var.shape[1]
        bits = ((np.arange(1 << width)[:, None] >> np.arange(width)[None, :]) & 1).astype(np.float64)
        alpha, beta = self._alpha(a, var), self._alpha(b, var)
        num = start[:, None] + lam @ bits.T
        for u, v in combinations(range(width), 2):
            c = np.minimum(alpha[:, u], alpha[:, v]) - np.minimum(beta[:, u], beta[:, v])
            num += c[:, None] * (bits[:, u] * bits[:, v])[None, :]
        den = self.judged_relevant[rows][:, None] + bits.sum(axis=1)[None, :]
        return np.maximum(_ratio(num, den), _ratio(num, den + fillers[:, None])).max(axis=1)

    def bounds(self, a: Profile, b: Profile) -> tuple[np.ndarray, np.ndarray, bool]:
        if not self.free:
            return super().bounds(a, b)
        high, exact_high = self._side(a, b)
        low, exact_low = self._side(b, a)
        return -low, high, bool(exact_high.all() and exact_low.all())

    def values(self, p: Profile, draw: Draw) -> np.ndarray:
        rel = _gather(draw.at_least(self.level), p.var, False)
        before = np.cumsum(rel, axis=2) - rel
        own = _gather(p.extra, p.var, 0.0)
        inv = 1.0 / (np.minimum(p.col, ABSENT - 1) + 1.0)
        total = p.fixed[None, :] + (rel * (own[None] + before * inv[None])).sum(axis=2)
        return _ratio(total, self.judged_relevant[None, :] + draw.count(self.level))

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
        self.judged = layout.grade_counts()  # (Q, G): judged chunks with grade >= l
        k = measure.cutoff
        longest = int(self.judged[:, 0].max() + layout.n_open.max()) + 2 if layout.n_queries else 2
        ranks = np.arange(1, longest + 1, dtype=np.float64)
        disc = 1.0 / np.log2(ranks + 1.0)
        if k is not None:
            disc[int(k):] = 0.0
        self.ideal_sum = np.concatenate(([0.0], np.cumsum(disc)))  # D_k(n)
        self.ideal_now = self._ideal(self.judged)

    @property
    def free(self) -> bool:
        return self.top >= 1

    def _ideal(self, counts: np.ndarray) -> np.ndarray:
        """IDCG from counts (..., G) of chunks with grade >= l."""
        return (self.ideal_sum[counts] * self.step).sum(axis=-1)

    def _fixed(self, cells: RunCells, relevant: np.ndarray, rank: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        cols = relevant.shape[1]
        disc = 1.0 / np.log2(np.arange(2, cols + 2, dtype=np.float64))
        grades = np.maximum(cells.grades[:, :cols], 0)
        dcg = self.gain[grades] @ disc if cols else np.zeros(len(grades))
        at = rank < ABSENT
        return dcg, np.where(at, 1.0 / np.log2(np.minimum(rank, ABSENT - 2) + 2.0), 0.0)

    def _changes(self, a: Profile, b: Profile) -> np.ndarray:
        """(Q, W) e_v = disc_A - disc_B of the open pairs in either run's cells (NaN padding)."""
        va = a.var
        ea = np.where(va >= 0, _gather(a.extra, va, 0.0) - _gather(b.extra, va, 0.0), np.nan)
        vb = np.where((b.var >= 0) & ~self._inside(b, a), b.var, -1)
        eb = np.where(vb >= 0, -_gather(b.extra, vb, 0.0), np.nan)
        return np.concatenate([ea, eb], axis=1)

    def _side(self, a: Profile, b: Profile) -> np.ndarray:
        e = self._changes(a, b)
        start = a.fixed - b.fixed
        top_gain = float(self.gain[-1])
        if not self.normalised:
            return start + top_gain * np.where(e > 0, e, 0.0).sum(axis=1)
        count, total = self._candidates(e)
        return self._best_ratio(start, count, total)

    def _candidates(self, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per query, the counts c worth trying and E(c), the sum of the c largest e_v: every
        prefix of the positive e_v, the end of the zero run (fillers and e_v = 0), then every
        prefix of the negative ones (np.nan: not a candidate)."""
        positive = -np.sort(-np.where(e > 0, e, 0.0), axis=1)
        negative = -np.sort(-np.where(e < 0, e, -np.inf), axis=1)
        n_pos = (e > 0).sum(axis=1)
        n_neg = (e < 0).sum(axis=1)
        zeros = self.layout.n_open - n_pos - n_neg
        pos_sum = np.concatenate([np.zeros((len(e), 1)), np.cumsum(positive, axis=1)], axis=1)
        neg_sum = np.cumsum(np.where(np.isfinite(negative), negative, 0.0), axis=1)
        j = np.arange(pos_sum.shape[1])[None, :]
        count1 = np.where(j <= n_pos[:, None], j, -1)
        top = pos_sum[np.arange(len(e)), n_pos]
        count2 = (n_pos + zeros)[:, None]
        i = np.arange(1, neg_sum.shape[1] + 1)[None, :]
        count3 = np.where(i <= n_neg[:, None], count2 + i, -1)
        count = np.concatenate([count1, count2, count3], axis=1)
        total = np.concatenate([pos_sum, top[:, None], top[:, None] + neg_sum], axis=1)
        return count, np.where(count >= 0, total, np.nan)

    def _best_ratio(self, start: np.ndarray, count: np.ndarray, total: np.ndarray) -> np.ndarray:
        """max over count vectors of (start + sum_l dgain_l E(c_l)) / IDCG(counts)."""
        ok = count >= 0
        c = np.maximum(count, 0)
        ideal = [self.ideal_sum[self.judged[:, level][:, None] + c] for level in range(self.top)]
        # all levels equal: grades 0 or G only; exact when the scale has one positive grade
        num = start[:, None] + self.gain[-1] * total
        den = sum(self.step[level] * ideal[level] for level in range(self.top))
        assert isinstance(den, np.ndarray)
        equal = np.where(ok, _ratio(num, den), -np.inf).max(axis=1)
        if self.top == 1:
            return equal
        # the equal-levels optimum is a feasible value: Dinkelbach climbs from it
        return self._dinkelbach(start, ok, total, ideal, equal)

    def _dinkelbach(self, start: np.ndarray, ok: np.ndarray, total: np.ndarray,
                    ideal: list[np.ndarray], t: np.ndarray) -> np.ndarray:
        """Dinkelbach's iteration over count vectors c_1 >= ... >= c_G (see the docstring)."""
        # a query whose judged chunks have no positive grade has IDCG 0 unless an open pair gets
        # one (c_1 >= 1); its value is 0 then, compared at the end
        zero_ideal = self.judged[:, 0] == 0
        first_ok = ok & ~(zero_ideal[:, None] & (np.cumsum(ok, axis=1) == 1))
        rows = np.arange(len(start))
        live = np.ones(len(start), dtype=bool)
        slack = np.zeros(len(start))
        e = np.where(ok, total, 0.0)
        for _ in range(MAX_STEPS):
            value, picks = self._levels(e, ok, first_ok, ideal, t)
            num = start + sum(self.step[lv] * e[rows, picks[lv]] for lv in range(self.top))
            den = sum(self.step[lv] * ideal[lv][rows, picks[lv]] for lv in range(self.top))
            assert isinstance(num, np.ndarray) and isinstance(den, np.ndarray)
            f = start + value
            done = f <= 1e-12 * np.maximum(1.0, np.abs(t))
            better = ~done & (den > 0)
            t = np.where(better, np.maximum(t, _ratio(num, den)), t)
            slack = np.where(done, 0.0, f)
            live = ~done
            if not live.any():
                break
        smallest = np.where(zero_ideal, float(self.step[0]) * self.ideal_sum[1], self.ideal_now)
        t = t + np.where(live, np.maximum(slack, 0.0) / smallest, 0.0)
        return np.where(zero_ideal, np.maximum(t, 0.0), t)

    def _levels(self, e: np.ndarray, ok: np.ndarray, first_ok: np.ndarray,
                ideal: list[np.ndarray], t: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """max over c_1 >= ... >= c_G of sum_l dgain_l (E(c_l) - t D_k(Cf_l + c_l)), and the
        argmax (candidate index per level), by a pass from the top level down."""
        rows = np.arange(len(t))
        best = np.full(e.shape, -np.inf)
        links: list[np.ndarray] = []
        for lv in range(self.top - 1, -1, -1):
            allowed = first_ok if lv == 0 else ok
            f = np.where(allowed, self.step[lv] * (e - t[:, None] * ideal[lv]), -np.inf)
            if lv == self.top - 1:
                best = f
                continue
            # c_l >= c_(l+1): the best of the level above among candidates up to this one
            arg = _running_argmax(best)
            links.append(arg)
            best = f + best[rows[:, None], arg]
        pick = np.argmax(best, axis=1)
        value = best[rows, pick]
        picks = [pick]
        for arg in reversed(links):
            pick = arg[rows, pick]
            picks.append(pick)
        return value, picks  # picks[lv] is level lv's candidate (levels from 1 up)

    def _bounds(self, a: Profile, b: Profile) -> tuple[np.ndarray, np.ndarray]:
        return -self._side(b, a), self._side(a, b)

    def values(self, p: Profile, draw: Draw) -> np.ndarray:
        grades = _gather(draw.grades, p.var, 0)
        dcg = p.fixed[None, :] + (self.gain[grades] * _gather(p.extra, p.var, 0.0)[None]).sum(axis=2)
        if not self.normalised:
            return dcg
        counts = np.stack([self.judged[:, lv][None, :] + draw.count(lv + 1) for lv in range(self.top)],
                          axis=-1)
        return _ratio(dcg, self._ideal(counts))

    def flip(self, p: Profile) -> np.ndarray:
        q = self.layout.open_query
        now = p.fixed[q]
        lift = now + self.gain[-1] * p.extra
        if not self.normalised:
            return lift - now
        return _ratio(lift, self._ideal(self.judged + 1)[q]) - _ratio(now, self.ideal_now[q])

    def harm(self, probs: np.ndarray) -> np.ndarray:
        return probs @ self.gain / self.gain[-1]


def _running_argmax(values: np.ndarray) -> np.ndarray:
    """(Q, C) index of the max of ``values[:, :j + 1]`` for every j (the first one on ties)."""
    index = np.broadcast_to(np.arange(values.shape[1]), values.shape)
    running = np.maximum.accumulate(values, axis=1)
    hit = np.where(values >= running, index, 0)
    return np.maximum.accumulate(hit, axis=1)


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
