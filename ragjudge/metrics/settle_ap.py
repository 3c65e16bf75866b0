"""AP's bounds for :mod:`ragjudge.metrics.settle` (the notation is
:mod:`ragjudge.metrics.settle_family`'s).

**AP@k** = S / R with S = sum over relevant cells j of hits@j / j. Writing S over pairs
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
"""

from __future__ import annotations

import numpy as np

from ragjudge.metrics.registry import Measure
from ragjudge.metrics.settle_family import Family, Profile, RunDraw, accumulate, safe_ratio
from ragjudge.metrics.settle_layout import ABSENT, Layout

#: AP's bounds are exact (every subset enumerated) on queries with at most this many open pairs
#: in either run's cells
AP_EXACT_PAIRS = 6
#: above AP_EXACT_PAIRS and up to this many, AP's relaxation; above, its interval bound
AP_RELAX_PAIRS = 16


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
        high = np.where(fits, safe_ratio(p.fixed[:, None] + early, rel[:, None] + size), -np.inf).max(axis=1)
        # the c deepest, cells s = n - c .. n - 1: the one at j has j - s chosen above it
        def tail(x: np.ndarray) -> np.ndarray:  # sums over cells j >= s, for s = 0..width
            return np.concatenate([np.cumsum(x[:, ::-1], axis=1)[:, ::-1], np.zeros((len(n), 1))], axis=1)
        s = np.clip(n[:, None] - size, 0, p.width)
        deep = (np.take_along_axis(tail(own + j * inv), s, axis=1)
                - s * np.take_along_axis(tail(inv), s, axis=1))
        others = (self.layout.n_open - n)[:, None]
        low = np.where(fits, safe_ratio(p.fixed[:, None] + deep, rel[:, None] + size + others), np.inf).min(axis=1)
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
            high[rows] = np.maximum(safe_ratio(start, rel), safe_ratio(start, rel + most))
            low[rows] = np.minimum(safe_ratio(start, rel), safe_ratio(start, rel + most))
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
        only_before: np.ndarray = accumulate(only) - only
        b_before: np.ndarray = accumulate(in_b) - in_b
        seen = np.where(in_b, beta, np.inf)
        beta_min = accumulate(np.concatenate([np.full((len(rows), 1), np.inf), seen[:, :-1]], axis=1),
                            op=np.minimum)
        rho = np.maximum(alpha - np.minimum(beta, beta_min), 0.0)
        kappa = np.where(in_a, only_before * alpha + b_before * rho, 0.0)
        mu = -np.sort(-np.where(valid, lam + kappa, -np.inf), axis=1)
        prefix = np.zeros((len(rows), mu.shape[1] + 1))
        accumulate(np.where(np.isfinite(mu), mu, 0.0), out=prefix[:, 1:])
        size = np.arange(prefix.shape[1])[None, :]
        num = np.take(a.fixed - b.fixed, rows)[:, None] + prefix
        den = np.take(self.judged_relevant, rows)[:, None] + size
        best = np.maximum(safe_ratio(num, den), safe_ratio(num, den + fillers[:, None]))
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
        best = np.maximum(safe_ratio(num, den), safe_ratio(num, den + fillers[:, None]))
        return np.where(ok, best, -np.inf).max(axis=1)

    def values(self, p: Profile, draw: RunDraw) -> np.ndarray:
        total = np.broadcast_to(p.fixed, (draw.n, len(p.fixed)))
        if p.width:
            rel = draw.grades[:, :, :p.width] >= self.level  # 0 (not relevant) in the padding
            before = draw.hits(self.level)[:, :, :p.width] - 1  # relevant open cells above
            term = p.own32[None] + before * p.inv32[None]
            total = total + np.where(rel, term, np.float32(0)).sum(axis=2, dtype=np.float64)
        return safe_ratio(total, draw.per_query(self.judged_relevant)[None, :] + draw.count(self.level))

    def flip(self, p: Profile) -> np.ndarray:
        q = self.layout.open_query
        total, rel = p.fixed[q], self.judged_relevant[q]
        return (total + p.extra) / (rel + 1.0) - safe_ratio(total, rel)
