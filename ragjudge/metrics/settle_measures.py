"""How far each measure can move: exact per-query bounds of a difference between two runs over
every grade the open pool pairs may get, the measure at sampled grades, and one pair's swing.

The notation and the shared machinery are in :mod:`ragjudge.metrics.settle_family`; AP's
bounds in :mod:`ragjudge.metrics.settle_ap`, nDCG's and DCG's in
:mod:`ragjudge.metrics.settle_gain`. Here P@k, Success@k, RR@k and R@k, and :func:`family`,
which gives a measure its family; the tests compare every bound with brute force over all
assignments.

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

Measures other than these (Rprec, bpref, ERR, F, ContextPrecision@k ...) have no bounds here:
:func:`family` refuses them, and :func:`supported` says which are.
"""

from __future__ import annotations

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics.registry import Measure
from ragjudge.metrics.settle_ap import AveragePrecision
from ragjudge.metrics.settle_family import Family, Profile, RunDraw, reciprocal_rank, safe_ratio
from ragjudge.metrics.settle_gain import CumulativeGain
from ragjudge.metrics.settle_layout import ABSENT, Layout

__all__ = ["FAMILIES", "family", "supported"]

FAMILIES = {"P": "precision", "Success": "success", "R": "recall", "RR": "rr", "AP": "ap",
            "ContextPrecisionAP": "ap", "nDCG": "ndcg", "nDCG_exp": "ndcg", "DCG": "ndcg"}


def supported(measure: Measure) -> bool:
    """True when :mod:`ragjudge.metrics.settle` can bound ``measure``."""
    return measure.definition.name in FAMILIES


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
        rr_a, rr_b = reciprocal_rank(fa), reciprocal_rank(b.fixed.astype(np.int64))
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
            return np.broadcast_to(reciprocal_rank(first), (draw.n, len(p.fixed))).copy()
        rel = (draw.grades[:, :, :p.width] >= self.level) & (p.var >= 0)[None]
        at = np.argmax(rel, axis=2)  # the first relevant open cell, if any
        found = np.take_along_axis(rel, at[:, :, None], axis=2)[:, :, 0]
        col = np.where(found, p.col[np.arange(len(p.fixed))[None, :], at], ABSENT)
        return reciprocal_rank(np.minimum(first, col))

    def flip(self, p: Profile) -> np.ndarray:
        first = p.fixed.astype(np.int64)[self.layout.open_query]
        return np.where(p.rank < first, reciprocal_rank(p.rank) - reciprocal_rank(first), 0.0)


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
                    best = np.maximum(best, safe_ratio(num, den))
        return best

    def _bounds(self, i: int, j: int) -> tuple[np.ndarray, np.ndarray, bool]:
        a, b = self.profiles[i], self.profiles[j]
        only_i, only_j, _ = self._classes(i, j)
        rest = self.layout.n_open - only_i - only_j  # both pairs count like fillers
        high = self._side(a.fixed - b.fixed, only_i, only_j, rest)
        low = -self._side(b.fixed - a.fixed, only_j, only_i, rest)
        return low, high, True

    def values(self, p: Profile, draw: RunDraw) -> np.ndarray:
        return safe_ratio(self._hits(p, draw), draw.per_query(self.judged_relevant)[None, :] + draw.count(self.level))

    def flip(self, p: Profile) -> np.ndarray:
        q = self.layout.open_query
        hits, rel = p.fixed[q], self.judged_relevant[q]
        return (hits + (p.rank < ABSENT)) / (rel + 1.0) - safe_ratio(hits, rel)

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
