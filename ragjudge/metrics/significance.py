"""Is a difference between two runs real? Paired tests over per-query values (numpy only).

Every function takes per-query values with queries on the **last axis**, so one call handles one
measure (shape ``(n,)``) or many measures at once (shape ``(m, n)``). Pairs are aligned by
position: ``a[..., i]`` and ``b[..., i]`` are the same query. Differences are ``b - a``.

- :func:`bootstrap_ci` — percentile bootstrap interval of one run's mean (Efron & Tibshirani
  1993, ch. 13); the evaluation screen shows each value with it.
- :func:`paired_bootstrap_ci` — the same, of the mean per-query difference ``b - a``.
- :func:`randomization_test` — paired randomization (sign-flip) test of the mean difference,
  the test Smucker, Allan & Carterette (CIKM 2007) recommend for IR. Exact when ``2**n`` sign
  patterns fit in the budget, else Monte Carlo with ``p = (1 + hits) / (1 + permutations)``
  (Phipson & Smyth 2010), so it is never 0.
- :func:`paired_t_test` — Student's paired t-test, its p-value from the regularized incomplete
  beta function (:func:`~ragjudge.metrics.distributions.regularized_incomplete_beta`), no scipy.
- :func:`wilcoxon_test` — the Wilcoxon signed-rank test, as ``scipy.stats.wilcoxon`` computes it.
- :func:`cohens_dz` and :func:`rank_biserial` — paired effect sizes (:func:`wilcoxon_rank_biserial`
  gives the test and its effect size from one ranking).
- :func:`holm` — Holm's (1979) step-down adjustment (:mod:`ragjudge.metrics.corrections` has
  Bonferroni and Benjamini–Hochberg too).
- :func:`compare_runs` — all of it per measure for a baseline against one or more runs, with a
  plain verdict: ``"B better"``, ``"A better"`` or ``"within noise"``. Every pair of k runs:
  :func:`ragjudge.metrics.allpairs.compare_all_pairs`.

The many-pair kernels (:func:`randomization_pvalues`, :func:`paired_bootstrap_intervals`) take
the runs' values as columns of one matrix and the pairs as column indices: a batch of sign
patterns or resamples is one matrix product over every run, and each pair is then a
difference of two columns of the result.

Resampling is vectorized: a batch of resamples is one integer matrix and one matrix product, in
batches small enough to bound memory; the seed is fixed, so results repeat exactly.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ragjudge.metrics.corrections import holm
from ragjudge.metrics.distributions import (
    normal_sf,
    regularized_incomplete_beta,
    signed_rank_null,
    student_t_cdf,
)

__all__ = [
    "BETTER_A",
    "BETTER_B",
    "NOISE",
    "PairedComparison",
    "bootstrap_ci",
    "cohens_dz",
    "compare_runs",
    "holm",
    "paired_bootstrap_ci",
    "paired_bootstrap_intervals",
    "paired_t_test",
    "randomization_pvalues",
    "randomization_test",
    "rank_biserial",
    "regularized_incomplete_beta",
    "student_t_cdf",
    "verdict",
    "wilcoxon_rank_biserial",
    "wilcoxon_test",
]

BETTER_B = "B better"
BETTER_A = "A better"
NOISE = "within noise"

#: per-query values: a vector (one measure) or a (measures x queries) matrix
Values = np.ndarray | Sequence[float]

#: resample-matrix cells per batch (int64 indices + float64 weights: ~64 MB at most)
_BATCH_CELLS = 4_000_000


def _as_matrix(values: np.ndarray | Sequence[float]) -> tuple[np.ndarray, bool]:
    """``values`` as a float64 (m, n) matrix, and whether it was one-dimensional."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 1:
        return array[None, :], True
    if array.ndim != 2:
        raise ValueError("per-query values must be a vector or a (measures x queries) matrix")
    return array, False


def _squeeze(result: np.ndarray, was_vector: bool) -> Any:
    return float(result[0]) if was_vector else result


def _bootstrap_means(matrix: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """(m, resamples) means of ``matrix`` rows over resampled queries (same resample per row).

    A batch of resamples is drawn as a (batch x n) matrix of query indices, turned into counts
    (how often each query was drawn) with one ``bincount``, and the means are then one matrix
    product ``counts @ matrix.T / n``.
    """
    m, n = matrix.shape
    rng = np.random.default_rng(seed)
    out = np.empty((m, resamples), dtype=np.float64)
    batch = max(1, min(resamples, _BATCH_CELLS // max(n, 1)))
    done = 0
    while done < resamples:
        size = min(batch, resamples - done)
        draws = rng.integers(0, n, size=(size, n))
        draws += (np.arange(size) * n)[:, None]
        counts = np.bincount(draws.ravel(), minlength=size * n).reshape(size, n)
        out[:, done : done + size] = (counts @ matrix.T).T / n
        done += size
    return out


def bootstrap_ci(
    values: np.ndarray | Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> tuple[Any, Any, Any]:
    """Mean and percentile-bootstrap confidence interval of the mean over queries.

    Draw ``resamples`` samples of the n queries with replacement, take each sample's mean, and
    report the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of those means
    (the percentile interval, Efron & Tibshirani 1993, §13.3).

    Returns ``(mean, low, high)``: floats for a vector, arrays of length m for an (m, n) matrix.
    With no queries every value is NaN; with one query the interval is the point itself.
    """
    matrix, was_vector = _as_matrix(values)
    m, n = matrix.shape
    if n == 0:
        nan = np.full(m, np.nan)
        return _squeeze(nan, was_vector), _squeeze(nan, was_vector), _squeeze(nan, was_vector)
    mean = matrix.mean(axis=1)
    means = _bootstrap_means(matrix, resamples, seed)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail], axis=1)
    return _squeeze(mean, was_vector), _squeeze(low, was_vector), _squeeze(high, was_vector)


def _differences(a: Values, b: Values) -> tuple[np.ndarray, bool]:
    a_matrix, was_vector = _as_matrix(a)
    b_matrix, _ = _as_matrix(b)
    if a_matrix.shape != b_matrix.shape:
        raise ValueError(
            f"paired values need the same shape, got {a_matrix.shape} and {b_matrix.shape}"
        )
    return b_matrix - a_matrix, was_vector


def _stacked(a: Values, b: Values) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """``a`` and ``b`` as rows of one (2m, n) matrix, with the row indices of each pair."""
    a_matrix, was_vector = _as_matrix(a)
    b_matrix, _ = _as_matrix(b)
    if a_matrix.shape != b_matrix.shape:
        raise ValueError(
            f"paired values need the same shape, got {a_matrix.shape} and {b_matrix.shape}"
        )
    m = a_matrix.shape[0]
    rows = np.arange(m)
    return np.vstack([a_matrix, b_matrix]), rows, rows + m, was_vector


def paired_bootstrap_intervals(
    runs: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean difference ``mean(runs[b] - runs[a])`` and its percentile-bootstrap interval, for
    every pair of rows ``(a[i], b[i])`` of ``runs`` (rows x queries) at once.

    Every pair sees the same resamples of the queries (drawn as in :func:`bootstrap_ci`), which
    keeps the pairing: a resample's mean difference is the difference of the two rows' resampled
    means, so the resampled means are one matrix product over the rows, not one per pair.
    """
    n = runs.shape[1]
    if n == 0:
        nan = np.full(len(a), np.nan)
        return nan, nan.copy(), nan.copy()
    difference = runs[b].mean(axis=1) - runs[a].mean(axis=1)
    means = _bootstrap_means(runs, resamples, seed)
    tail = (1.0 - confidence) / 2.0
    low = np.empty(len(a))
    high = np.empty(len(a))
    batch = max(1, _BATCH_CELLS // max(resamples, 1))
    for start in range(0, len(a), batch):
        chunk = slice(start, start + batch)
        low[chunk], high[chunk] = np.quantile(
            means[b[chunk]] - means[a[chunk]], [tail, 1.0 - tail], axis=1, overwrite_input=True
        )
    return difference, low, high


def paired_bootstrap_ci(
    a: Values,
    b: Values,
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> tuple[Any, Any, Any]:
    """Mean difference ``mean(b - a)`` and its percentile-bootstrap interval.

    The queries are resampled as pairs (the same resample for both runs), which keeps the
    pairing that makes the comparison sensitive. Returns ``(difference, low, high)``.
    """
    runs, rows_a, rows_b, was_vector = _stacked(a, b)
    difference, low, high = paired_bootstrap_intervals(
        runs, rows_a, rows_b, confidence=confidence, resamples=resamples, seed=seed
    )
    return _squeeze(difference, was_vector), _squeeze(low, was_vector), _squeeze(high, was_vector)


def _sign_batches(n: int, permutations: int, seed: int) -> tuple[Iterator[np.ndarray], bool]:
    """Yield (batch x n) float matrices of +1/-1 signs; exact enumeration when it fits.

    Returns the generator and whether it enumerates all ``2**n`` patterns.
    """
    exact = n <= 62 and (1 << n) <= permutations
    if exact:
        total = 1 << n
        bits = np.arange(n, dtype=np.int64)
        batch = max(1, _BATCH_CELLS // max(n, 1))

        def patterns() -> Iterator[np.ndarray]:
            for start in range(0, total, batch):
                codes = np.arange(start, min(total, start + batch), dtype=np.int64)
                yield 1.0 - 2.0 * ((codes[:, None] >> bits) & 1)

        return patterns(), True

    def random_patterns() -> Iterator[np.ndarray]:
        rng = np.random.default_rng(seed)
        batch = max(1, min(permutations, _BATCH_CELLS // max(n, 1)))
        done = 0
        while done < permutations:
            size = min(batch, permutations - done)
            # one random byte gives eight signs
            bits = np.unpackbits(rng.integers(0, 256, size=(size, (n + 7) // 8), dtype=np.uint8),
                                 axis=1, count=n)
            yield 1.0 - 2.0 * bits
            done += size

    return random_patterns(), False


def randomization_pvalues(
    runs: np.ndarray, a: np.ndarray, b: np.ndarray, *, permutations: int = 10_000, seed: int = 0
) -> np.ndarray:
    """Two-sided sign-flip p-values of ``mean(runs[b] - runs[a])`` for every pair of rows
    ``(a[i], b[i])`` of ``runs`` (rows x queries), all under the same sign patterns.

    A pattern s gives each pair the statistic |Σ s_q (runs[b, q] - runs[a, q])|, computed as
    |(S @ runs.T)[b] - (S @ runs.T)[a]|: one matrix product per batch of patterns for every
    row, however many pairs. See :func:`randomization_test` for the test itself.
    """
    n = runs.shape[1]
    if n == 0:
        return np.full(len(a), np.nan)
    observed = np.abs(runs[b].sum(axis=1) - runs[a].sum(axis=1))
    # a pattern "reaches" the observed value within a relative tolerance, as exact ties must
    # count as hits and sums of floats in another order differ in their last bits
    scale = np.abs(runs).sum(axis=1)
    threshold = observed - 1e-9 * np.maximum(scale[a] + scale[b], 1e-300)
    hits = np.zeros(len(a), dtype=np.int64)
    batches, exact = _sign_batches(n, permutations, seed)
    total = 0
    for signs in batches:
        sums = signs @ runs.T  # (batch, rows)
        hits += (np.abs(sums[:, b] - sums[:, a]) >= threshold).sum(axis=0)
        total += signs.shape[0]
    p = hits / total if exact else (hits + 1) / (total + 1)
    return np.minimum(p, 1.0)


def randomization_test(a: Values, b: Values, *, permutations: int = 10_000, seed: int = 0) -> Any:
    """Two-sided p-value of the paired randomization (sign-flip) test of ``mean(b - a)``.

    Under the null hypothesis the two runs are exchangeable on every query, so each per-query
    difference d_i is as likely to be -d_i. The statistic is |mean(s_i · d_i)| over sign patterns
    s ∈ {-1, +1}^n; the p-value is the share of patterns whose statistic reaches the observed
    |mean(d)|. With n ≤ log2(permutations) queries all 2^n patterns are enumerated (an exact
    test); otherwise ``permutations`` random patterns are drawn and ``p = (1 + hits) / (1 +
    permutations)``. Identical runs give p = 1.
    """
    runs, rows_a, rows_b, was_vector = _stacked(a, b)
    p = randomization_pvalues(runs, rows_a, rows_b, permutations=permutations, seed=seed)
    return _squeeze(p, was_vector)


def _moments(diffs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and sample sd (n - 1) of each row of differences, and which rows are constant.

    A spread below rounding noise (1e-14 of the mean) is no spread: the difference is constant.
    """
    mean = diffs.mean(axis=1)
    sd = diffs.std(axis=1, ddof=1)
    return mean, sd, sd <= 1e-14 * np.maximum(1.0, np.abs(mean))


def _standardized(mean: np.ndarray, sd: np.ndarray, constant: np.ndarray) -> np.ndarray:
    """mean / sd, with 0 for no difference at all and ±inf for a constant nonzero one."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = mean / sd
    flat = np.where(np.abs(mean) <= 1e-15, 0.0, np.copysign(np.inf, mean))
    return np.where(constant, flat, ratio)


def paired_t_test(a: Values, b: Values) -> tuple[Any, Any]:
    """Student's paired t-test of ``mean(b - a) = 0``; returns ``(t, two-sided p)``.

    t = mean(d) / (s_d / √n) with s_d the sample standard deviation (n - 1 in the denominator),
    df = n - 1, p = I_{df / (df + t²)}(df / 2, 1 / 2). Agrees with ``scipy.stats.ttest_rel(b, a)``
    except where that returns NaN: for identical runs (every d = 0) ragjudge reports t = 0 and
    p = 1, and for a constant nonzero difference t = ±inf and p = 0. With fewer than two
    queries t and p are NaN.
    """
    diffs, was_vector = _differences(a, b)
    t_values, p_values = _t_test(diffs)
    return _squeeze(t_values, was_vector), _squeeze(p_values, was_vector)


def _t_test(diffs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m, n = diffs.shape
    if n < 2:
        return np.full(m, np.nan), np.full(m, np.nan)
    t_values = _standardized(*_moments(diffs)) * math.sqrt(n)
    df = n - 1.0
    p_values = np.array([
        0.0 if math.isinf(t) else regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
        for t in t_values.tolist()
    ])
    return t_values, p_values


def cohens_dz(a: Values, b: Values) -> Any:
    """Cohen's d_z, the standardized mean of the paired differences d = b - a.

    d_z = mean(d) / s_d, with s_d the sample standard deviation of the differences (n - 1 in
    the denominator): Cohen (1988, §2.3.5) for matched pairs; the name d_z and the identity
    d_z = t / √n with the paired t statistic are Lakens (Frontiers in Psychology 4:863, 2013,
    eqs. 6-7). Positive when B scores higher. As for :func:`paired_t_test`: 0 for identical
    runs, ±inf for a constant nonzero difference, NaN with fewer than two queries.
    """
    diffs, was_vector = _differences(a, b)
    if diffs.shape[1] < 2:
        return _squeeze(np.full(diffs.shape[0], np.nan), was_vector)
    return _squeeze(_standardized(*_moments(diffs)), was_vector)


@dataclass(frozen=True)
class _SignedRanks:
    """Signed-rank sums of each row of differences (zeros dropped, ties given mean ranks)."""

    plus: np.ndarray
    """R+, the sum of the ranks of |d| over the positive differences"""
    minus: np.ndarray
    """R-, the same over the negative differences"""
    nonzero: np.ndarray
    """how many differences are not 0 (the n of the test)"""
    doubled: np.ndarray
    """twice the ranks, sorted by |d|, per row (integers; only the first ``nonzero`` are ranks)"""
    ties: np.ndarray
    """Σ (t³ - t) over the groups of t equal |d|"""


#: the bits of +inf as a float64: the key :func:`_signed_ranks` gives a zero difference
_INF_BITS = np.array(np.inf).view(np.uint64)[()]


def _signed_ranks(diffs: np.ndarray) -> _SignedRanks:
    """Rank |d| in each row at once, as ``scipy.stats.rankdata`` does: sort, find each value's
    run of equal values, and give every member the mean of the run's positions (1-based).

    The bits of a float64 ≥ 0 read as an unsigned integer sort as the float does and leave the
    top bit 0, so shifting them left by one frees the lowest bit for the difference's sign: one
    sort of these keys yields |d| in order with its signs, runs of ties compared exactly. Zero
    differences become +inf, ranked after all others and then left out. The runs' first and
    last positions come from running maxima and minima over the whole matrix read as one vector
    (a row's first cell always starts a run, its last always ends one), which numpy does much
    faster than along the rows of a matrix.
    """
    rows, n = diffs.shape
    magnitude = np.abs(diffs)
    magnitude[diffs == 0] = np.inf
    keys = np.sort((magnitude.view(np.uint64) << np.uint64(1)) | (diffs > 0), axis=1)
    positive = (keys & np.uint64(1)).astype(bool)
    keys >>= np.uint64(1)
    cells = np.arange(rows * n).reshape(rows, n)
    starts = np.ones((rows, n), dtype=bool)
    starts[:, 1:] = keys[:, 1:] != keys[:, :-1]
    ends = np.ones((rows, n), dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    first = np.maximum.accumulate(np.where(starts, cells, 0).ravel())
    last = np.minimum.accumulate(np.where(ends, cells, rows * n).ravel()[::-1])[::-1]
    # twice the mean rank: (first + 1) + (last + 1), positions counted from the row's start
    doubled = (first + last).reshape(rows, n) - (2 * n) * np.arange(rows)[:, None] + 2
    plus = np.where(positive, doubled, 0).sum(axis=1) / 2.0
    nonzero = np.count_nonzero(diffs, axis=1)
    # Σ (t³ - t) over the runs of tied nonzero |d|, from each run's first cell
    runs = starts & (keys != _INF_BITS)
    size = (last - first + 1)[runs.ravel()].astype(np.float64)
    ties = np.bincount(np.nonzero(runs)[0], weights=size**3 - size, minlength=rows)
    return _SignedRanks(
        plus=plus,
        minus=nonzero * (nonzero + 1) / 2.0 - plus,
        nonzero=nonzero,
        doubled=doubled,
        ties=ties,
    )


def _exact_signed_rank_p(doubled: np.ndarray, plus: float) -> float:
    """Two-sided p from the exact distribution of R+ given these (doubled) ranks:
    2 · min(P(R+ ≤ r), P(R+ ≥ r)), at most 1."""
    counts = signed_rank_null(tuple(sorted(doubled.tolist())))
    observed = round(2 * plus)
    total = counts.sum()
    below = counts[: observed + 1].sum() / total
    above = counts[observed:].sum() / total
    return min(1.0, 2.0 * min(below, above))


def _wilcoxon(diffs: np.ndarray) -> tuple[np.ndarray, np.ndarray, _SignedRanks]:
    ranks = _signed_ranks(diffs)
    n_all = diffs.shape[1]
    k = ranks.nonzero.astype(np.float64)
    se = np.sqrt((k * (k + 1) * (2 * k + 1) - ranks.ties / 2.0) / 24.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (ranks.plus - k * (k + 1) / 4.0) / se
    p = np.where(se > 0, np.minimum(1.0, 2.0 * normal_sf(np.abs(z))), 1.0)
    if n_all <= 50:
        tied = ranks.ties > 0
        exact = (~tied & (ranks.nonzero == n_all)) | (n_all <= 13)
        for row in np.flatnonzero(exact & (ranks.nonzero > 0)):
            used = ranks.doubled[row, : ranks.nonzero[row]]
            p[row] = _exact_signed_rank_p(used, float(ranks.plus[row]))
    return np.minimum(ranks.plus, ranks.minus), p, ranks


def wilcoxon_test(a: Values, b: Values) -> tuple[Any, Any]:
    """Wilcoxon's (1945) signed-rank test of the paired differences d = b - a, two-sided.

    Zeros are dropped (``zero_method="wilcox"``); the n' nonzero |d| are ranked 1..n', ties
    sharing the mean of their ranks, and R+ (R-) sums the ranks of the positive (negative)
    differences. Returns ``(W, p)`` with W = min(R+, R-), as ``scipy.stats.wilcoxon(b, a)``
    with its defaults (``method="auto"``, ``correction=False``), which choose the p-value so:

    - n ≤ 50 queries, no zero and no tie: exact, from the distribution of R+ over the 2^n sign
      patterns (:func:`~ragjudge.metrics.distributions.signed_rank_null`);
      p = 2 min(P(R+ ≤ r), P(R+ ≥ r)), at most 1.
    - n ≤ 13 with zeros or ties: the same over the sign patterns of the observed ranks (scipy
      enumerates them as a permutation test; this is its exact value).
    - otherwise the normal approximation with the tie correction and no continuity correction:
      z = (R+ - n'(n'+1)/4) / σ, σ² = (n'(n'+1)(2n'+1) - Σ(t³ - t)/2) / 24 over the groups of t
      tied |d| (Lehmann, Nonparametrics, 1975, ch. 3), p = 2 (1 - Φ(|z|)).

    n counts every query, zeros included, as scipy does in choosing. Identical runs (every d = 0)
    give W = 0 and p = 1 (scipy: p = NaN beyond 13 queries).
    """
    diffs, was_vector = _differences(a, b)
    statistic, p, _ = _wilcoxon(diffs)
    return _squeeze(statistic, was_vector), _squeeze(p, was_vector)


def _rank_biserial(ranks: _SignedRanks) -> np.ndarray:
    total = ranks.plus + ranks.minus
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, (ranks.plus - ranks.minus) / total, 0.0)


def rank_biserial(a: Values, b: Values) -> Any:
    """The matched-pairs rank-biserial correlation of d = b - a, Wilcoxon's effect size.

    r = (R+ - R-) / (R+ + R-), the share of the rank sum favouring B minus the share favouring A
    (Kerby, "The simple difference formula", Comprehensive Psychology 3:11.IT.3.1, 2014), with
    R± the signed-rank sums of :func:`wilcoxon_test` (zeros dropped, ties at mean ranks). In
    [-1, 1]: +1 when B is better on every query that differs. 0 for identical runs.
    """
    diffs, was_vector = _differences(a, b)
    return _squeeze(_rank_biserial(_signed_ranks(diffs)), was_vector)


def wilcoxon_rank_biserial(a: Values, b: Values) -> tuple[Any, Any, Any]:
    """``(W, p, r)``: :func:`wilcoxon_test` and :func:`rank_biserial` from one ranking of |d|."""
    diffs, was_vector = _differences(a, b)
    statistic, p, ranks = _wilcoxon(diffs)
    return (_squeeze(statistic, was_vector), _squeeze(p, was_vector),
            _squeeze(_rank_biserial(ranks), was_vector))


def verdict(difference: float, p_value: float, alpha: float = 0.05) -> str:
    """``"B better"`` / ``"A better"`` when ``p_value < alpha``, else ``"within noise"``.

    Every ragjudge measure is higher-is-better, so the sign of ``mean(b - a)`` names the winner.
    """
    if p_value is None or math.isnan(p_value) or p_value >= alpha or difference == 0:
        return NOISE
    return BETTER_B if difference > 0 else BETTER_A


@dataclass(frozen=True)
class PairedComparison:
    """One measure, run A (the baseline) against run B, over the same queries."""

    measure: str
    run_a: str
    run_b: str
    queries: int
    mean_a: float
    mean_b: float
    difference: float
    """mean over queries of (B - A)"""
    ci_low: float
    ci_high: float
    p_randomization: float
    p_t_test: float
    t: float
    p_randomization_adjusted: float
    """Holm-adjusted over the runs compared with A on this measure (= raw with one pair)"""
    p_t_test_adjusted: float
    verdict: str
    """``"B better"``, ``"A better"`` or ``"within noise"`` from the adjusted randomization p"""
    undefined: dict[str, str] = field(default_factory=dict)
    """``{field: reason}`` for every statistic that is NaN or infinite (null in JSON)"""

    @property
    def winner(self) -> str | None:
        return {BETTER_A: self.run_a, BETTER_B: self.run_b}.get(self.verdict)

    def as_dict(self) -> dict:
        """The fields as JSON-ready values; ``undefined`` (only when some statistic is) says
        why each null is one."""
        record = asdict(self)
        record["winner"] = self.winner
        if not record["undefined"]:
            del record["undefined"]
        return record


def _undefined(n: int, difference: float, t: float) -> dict[str, str]:
    """Why the statistics of one comparison over ``n`` paired queries are NaN or infinite."""
    if n == 0:
        reason = "no query is paired (the runs share no query where the measure is defined)"
        return {name: reason for name in ("mean_a", "mean_b", "difference", "ci_low", "ci_high",
                                          "p_randomization", "p_t_test", "t",
                                          "p_randomization_adjusted", "p_t_test_adjusted")}
    if n == 1:
        reason = "a t-test needs at least two paired queries; there is one"
        return {"t": reason, "p_t_test": reason, "p_t_test_adjusted": reason}
    if math.isinf(t):
        return {"t": f"every paired query differs by the same amount ({difference:+g}): the "
                     "differences have no spread, so t is infinite (and the t-test's p is 0)"}
    return {}


def compare_runs(
    per_query: Mapping[str, np.ndarray],
    measures: Sequence[str],
    *,
    baseline: str | None = None,
    alpha: float = 0.05,
    confidence: float = 0.95,
    resamples: int = 10_000,
    permutations: int = 10_000,
    seed: int = 0,
) -> list[PairedComparison]:
    """Compare the baseline run with every other run on every measure.

    ``per_query[run]`` is a (len(measures) x n) matrix of per-query values, the same n queries in
    the same order for every run (a query a run did not answer counts 0, as in its aggregate).
    ``baseline`` defaults to the first run. With more than one run compared against the baseline,
    the p-values of each measure are Holm-adjusted over those comparisons (the family is "is any
    run different from the baseline on this measure"); the verdict uses the adjusted
    randomization p-value at level ``alpha``. Results are ordered by measure, then run.
    """
    names = list(per_query)
    if len(names) < 2:
        raise ValueError("a comparison needs at least two runs")
    base = baseline if baseline is not None else names[0]
    others = [name for name in names if name != base]
    a = np.asarray(per_query[base], dtype=np.float64).reshape(len(measures), -1)
    n = a.shape[1]
    rows: dict[str, dict] = {}
    for name in others:
        b = np.asarray(per_query[name], dtype=np.float64).reshape(len(measures), -1)
        if b.shape != a.shape:
            raise ValueError(f"run {name!r} has {b.shape[1]} queries, baseline {base!r} has {n}")
        diff, low, high = paired_bootstrap_ci(
            a, b, confidence=confidence, resamples=resamples, seed=seed
        )
        t, p_t = paired_t_test(a, b)
        rows[name] = {
            "mean_b": b.mean(axis=1) if n else np.full(len(measures), np.nan),
            "diff": diff,
            "low": low,
            "high": high,
            "p_rand": randomization_test(a, b, permutations=permutations, seed=seed),
            "t": t,
            "p_t": p_t,
        }
    mean_a = a.mean(axis=1) if n else np.full(len(measures), np.nan)
    results: list[PairedComparison] = []
    for i, measure in enumerate(measures):
        p_rand = np.array([rows[name]["p_rand"][i] for name in others])
        p_t = np.array([rows[name]["p_t"][i] for name in others])
        p_rand_adj = holm(p_rand) if len(others) > 1 else p_rand
        p_t_adj = holm(p_t) if len(others) > 1 else p_t
        for j, name in enumerate(others):
            row = rows[name]
            difference = float(row["diff"][i])
            results.append(
                PairedComparison(
                    measure=measure,
                    run_a=base,
                    run_b=name,
                    queries=n,
                    mean_a=float(mean_a[i]),
                    mean_b=float(row["mean_b"][i]),
                    difference=difference,
                    ci_low=float(row["low"][i]),
                    ci_high=float(row["high"][i]),
                    p_randomization=float(p_rand[j]),
                    p_t_test=float(p_t[j]),
                    t=float(row["t"][i]),
                    p_randomization_adjusted=float(p_rand_adj[j]),
                    p_t_test_adjusted=float(p_t_adj[j]),
                    verdict=verdict(difference, float(p_rand_adj[j]), alpha),
                    undefined=_undefined(n, difference, float(row["t"][i])),
                )
            )
    return results
