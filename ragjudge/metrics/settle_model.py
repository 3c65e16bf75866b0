"""A model of the grades the open pool pairs will get, for the probability that an order holds.

The model gives each open pair v a distribution pi_v over the grades 0..G; pairs are
independent (the same assumption as Carterette, Allan & Sitaraman, "Minimal test collections
for retrieval evaluation", SIGIR 2006, whose relevance probabilities are per document).

**Prior by rank and run.** How often a chunk is relevant depends most on how high the runs rank
it. Ranks are put in buckets (``RANK_BUCKETS``: 1, 2, 3, 4-5, 6-10, 11-20, 21-50, 51-100,
over 100) and grades are counted among the judged pairs each run ranks in each bucket (within
the ranks the measures read); the estimate is a Dirichlet posterior mean, smoothed twice toward
the coarser level:

    p0(g)      = (n(g) + 1) / (n + G + 1)                      every judged pair the runs rank
    p_b(g)     = (n_b(g) + s p0(g)) / (n_b + s)                 rank bucket b, all runs
    p_{r,b}(g) = (n_{r,b}(g) + s p_b(g)) / (n_{r,b} + s)        run r, bucket b

with s = ``strength`` pseudo-judgments (default 10). An open pair takes the mean of p_{r,b} over
the runs that rank it (each at its own bucket), or p0 when no run ranks it within the cells.
A pair judged later in the queue order was chosen by its weight, not at random within its
bucket; the buckets keep the rank effect, which is the largest.

**An LLM annotator's grades** (optional) are calibrated against the people's: on the pairs both
graded, the confusion counts C[l, g] (LLM grade l, gold grade g) give the likelihood
P(l | g) = (C[l, g] + 1) / (sum_l' C[l', g] + L + 1) (Laplace smoothing, L the LLM's top grade),
and an open pair the LLM graded l gets the posterior pi_v(g) proportional to the prior times
P(l | g) (Bayes' rule: the LLM's errors depend on the true grade, not on the rank).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics import _keys
from ragjudge.metrics.settle_layout import ABSENT, Layout, RunCells

#: upper ends of the rank buckets of the prior (1-based ranks; the last bucket is open)
RANK_BUCKETS = (1, 2, 3, 5, 10, 20, 50, 100)
#: pseudo-judgments pulling a bucket toward the coarser estimate
STRENGTH = 10.0


@dataclass(frozen=True)
class LLMGrades:
    """An LLM annotator's grades of (query, chunk) pairs (ids as strings or ``as_ids`` arrays);
    a negative grade is no grade."""

    query_ids: Sequence[str] | np.ndarray
    chunk_ids: Sequence[str] | np.ndarray
    grades: Sequence[int] | np.ndarray


class PriorCounts:
    """The judged grades each run ranks, by rank bucket, gathered run by run (a run's cells are
    read once and dropped): ``add`` each run's cells, then :meth:`GradeModel.fit`."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.counts: list[np.ndarray] = []
        self.ranks: list[np.ndarray] = []

    def add(self, cells: RunCells) -> None:
        top = self.layout.top_grade
        n_buckets = len(RANK_BUCKETS) + 1
        key = bucket_of(cells.judged_col) * (top + 1) + cells.judged_grade
        self.counts.append(np.bincount(key, minlength=n_buckets * (top + 1))
                           .reshape(n_buckets, top + 1).astype(np.float64))
        self.ranks.append(cells.rank)


def bucket_of(rank: np.ndarray) -> np.ndarray:
    """Bucket index of 0-based ranks (``ABSENT`` -> the last bucket)."""
    return np.searchsorted(np.asarray(RANK_BUCKETS), np.asarray(rank) + 1, side="left")


class GradeModel:
    """``probs[v, g]``: the probability that open pair v gets grade g (rows sum to 1)."""

    def __init__(self, probs: np.ndarray) -> None:
        self.probs = probs
        self.cdf = np.cumsum(probs, axis=1).astype(np.float32)

    @classmethod
    def fit(cls, prior: PriorCounts, *, strength: float = STRENGTH,
            llm: LLMGrades | None = None) -> GradeModel:
        """The prior by rank bucket and run from the judged pairs the runs rank, and the LLM's
        calibrated grades if given (see the module's docstring)."""
        counts = np.array(prior.counts) if prior.counts else np.zeros((0, len(RANK_BUCKETS) + 1,
                                                                         prior.layout.top_grade + 1))
        top = prior.layout.top_grade
        overall = (counts.sum(axis=(0, 1)) + 1.0) / (counts.sum() + top + 1.0)
        by_bucket = counts.sum(axis=0) if len(counts) else np.zeros((len(RANK_BUCKETS) + 1, top + 1))
        p_b = (by_bucket + strength * overall) / (by_bucket.sum(axis=1, keepdims=True) + strength)
        p_rb = (counts + strength * p_b[None]) / (counts.sum(axis=2, keepdims=True) + strength)
        n_vars = prior.layout.n_vars
        total = np.zeros((n_vars, top + 1))
        seen = np.zeros(n_vars)
        for r, rank in enumerate(prior.ranks):
            ranked = rank < ABSENT
            total[ranked] += p_rb[r, bucket_of(rank[ranked])]
            seen += ranked
        probs = np.where(seen[:, None] > 0, total / np.maximum(seen, 1.0)[:, None], overall[None, :])
        if llm is not None:
            probs = _calibrated(prior.layout, probs, llm)
        return cls(probs)

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """(n, V) grades drawn independently from the model (small integers)."""
        u = rng.random((n, len(self.probs)), dtype=np.float32)
        grades = np.zeros(u.shape, dtype=np.int8 if self.cdf.shape[1] <= 127 else np.int16)
        for g in range(self.cdf.shape[1] - 1):
            grades += u >= self.cdf[None, :, g]
        return grades


def _calibrated(layout: Layout, prior: np.ndarray, llm: LLMGrades) -> np.ndarray:
    """The prior times the likelihood of the LLM's grade, normalised (open pairs it graded)."""
    q = _keys.as_ids(llm.query_ids)
    c = _keys.as_ids(llm.chunk_ids)
    graded = np.asarray(llm.grades, dtype=np.int64).ravel()
    if not len(q) == len(c) == len(graded):
        raise UsageError(f"the LLM's grades need as many query ids, chunk ids and grades "
                         f"({len(q)}, {len(c)}, {len(graded)}).")
    keep = graded >= 0
    q, c, graded = q[keep], c[keep], graded[keep]
    top = layout.top_grade
    if len(graded) and int(graded.max()) > top:
        raise UsageError(f"the LLM gave grade {int(graded.max())}, above the top of the scale ({top}).")
    row = layout.locate(q, c)  # judged rows 0..J-1, open pairs J.., -1 elsewhere
    judged = (row >= 0) & (row < layout.n_judged)
    confusion = np.zeros((top + 1, top + 1))
    np.add.at(confusion, (graded[judged], layout.judged_grade[row[judged]]), 1.0)
    likelihood = (confusion + 1.0) / (confusion.sum(axis=0, keepdims=True) + top + 1.0)
    open_ = row >= layout.n_judged
    probs = prior.copy()
    v = row[open_] - layout.n_judged
    post = prior[v] * likelihood[graded[open_]]
    probs[v] = post / post.sum(axis=1, keepdims=True)
    return probs
