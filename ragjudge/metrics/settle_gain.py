"""nDCG's and DCG's bounds for :mod:`ragjudge.metrics.settle` (the notation is
:mod:`ragjudge.metrics.settle_family`'s).

**nDCG@k** (gain g or 2^g - 1) = DCG / IDCG. DCG_A - DCG_B = N(0) + sum_v gain(g_v) e_v with
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
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np

from ragjudge.metrics.registry import Measure
from ragjudge.metrics.settle_family import (
    Draw, Family, Profile, RunDraw, accumulate, safe_ratio,
)
from ragjudge.metrics.settle_layout import ABSENT, Layout

#: rows (a query of one side of a pair of runs) whose bounds are solved together, at most
BATCH_ROWS = 100_000
#: Dinkelbach steps for nDCG before the (still valid) bound t + F(t) / D_min is taken
MAX_STEPS = 30
#: rows of one width solved together: narrow groups are merged up to this many rows, wide ones
#: split at CHUNK_ROWS
GROUP_ROWS = 1024
CHUNK_ROWS = 8_192


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
        best = np.maximum(safe_ratio(start, self.ideal_now), safe_ratio(start, most))
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
                best = np.maximum(safe_ratio(start, self.ideal_now), safe_ratio(start, self.most))
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
            accumulate(p[2][:, :w], out=totals[at:at + len(p[0]), 1:w + 1])
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
                accumulate(piece, out=wide[at:at + len(piece), 1:piece.shape[1] + 1])
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
        equal = np.where(ok, safe_ratio(start[:, None] + self.gain[-1] * total, den), -np.inf).max(axis=1)
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
            new = safe_ratio(num, den)
            moved = (f > 1e-12 * np.maximum(1.0, np.abs(t[at]))) & (den > 0) & (new > t[at])
            slack[at] = np.where(moved, f, np.maximum(f, 0.0))
            t[at] = np.where(moved, new, t[at])
            live[at] = moved
        # still climbing after MAX_STEPS, or stopped by rounding: t + F(t)/D_min is an upper bound
        smallest = np.where(zero_ideal, float(self.step[0]) * self.ideal_sum[1], self.ideal_now[queries])
        t = t + safe_ratio(np.maximum(slack, 0.0), smallest)
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
        return safe_ratio(dcg, draw.shared(("ideal", self.measure.cutoff, self.gain[-1]), self._drawn_ideal))

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
        return safe_ratio(lift, self._ideal(self.judged + 1)[q]) - safe_ratio(now, self.ideal_now[q])

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
