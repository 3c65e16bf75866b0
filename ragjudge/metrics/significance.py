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
  beta function (:func:`regularized_incomplete_beta`, a continued fraction), no scipy.
- :func:`holm` — Holm's (1979) step-down adjustment of a family of p-values.
- :func:`compare_runs` — all of it per measure for a baseline against one or more runs, with a
  plain verdict: ``"B better"``, ``"A better"`` or ``"within noise"``.

Resampling is vectorized: a batch of resamples is one integer matrix and one matrix product, in
batches small enough to bound memory; the seed is fixed, so results repeat exactly.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "BETTER_A",
    "BETTER_B",
    "NOISE",
    "PairedComparison",
    "bootstrap_ci",
    "compare_runs",
    "holm",
    "paired_bootstrap_ci",
    "paired_t_test",
    "randomization_test",
    "regularized_incomplete_beta",
    "student_t_cdf",
    "verdict",
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


def paired_bootstrap_ci(
    a: Values,
    b: Values,
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> tuple[Any, Any, Any]:
    """Mean difference ``mean(b - a)`` and its percentile-bootstrap interval.

    The queries are resampled as pairs (the per-query differences are resampled), which keeps the
    pairing that makes the comparison sensitive. Returns ``(difference, low, high)``.
    """
    diffs, was_vector = _differences(a, b)
    mean, low, high = bootstrap_ci(diffs, confidence=confidence, resamples=resamples, seed=seed)
    if was_vector:
        return float(mean[0]), float(low[0]), float(high[0])
    return mean, low, high


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


def randomization_test(a: Values, b: Values, *, permutations: int = 10_000, seed: int = 0) -> Any:
    """Two-sided p-value of the paired randomization (sign-flip) test of ``mean(b - a)``.

    Under the null hypothesis the two runs are exchangeable on every query, so each per-query
    difference d_i is as likely to be -d_i. The statistic is |mean(s_i · d_i)| over sign patterns
    s ∈ {-1, +1}^n; the p-value is the share of patterns whose statistic reaches the observed
    |mean(d)|. With n ≤ log2(permutations) queries all 2^n patterns are enumerated (an exact
    test); otherwise ``permutations`` random patterns are drawn and ``p = (1 + hits) / (1 +
    permutations)``. Identical runs give p = 1.
    """
    diffs, was_vector = _differences(a, b)
    m, n = diffs.shape
    if n == 0:
        return _squeeze(np.full(m, np.nan), was_vector)
    observed = np.abs(diffs.sum(axis=1))
    # sums of floats differ in the last bits with the order of terms; a pattern "reaches" the
    # observed value within a relative tolerance, as exact ties must count as hits
    threshold = observed - 1e-9 * np.maximum(np.abs(diffs).sum(axis=1), 1e-300)
    hits = np.zeros(m, dtype=np.int64)
    batches, exact = _sign_batches(n, permutations, seed)
    total = 0
    for signs in batches:
        sums = np.abs(signs @ diffs.T)  # (batch, m)
        hits += (sums >= threshold).sum(axis=0)
        total += signs.shape[0]
    if exact:
        p = hits / total
    else:
        p = (hits + 1) / (total + 1)
    return _squeeze(np.minimum(p, 1.0), was_vector)


def regularized_incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) = B(x; a, b) / B(a, b), for a, b > 0 and 0 ≤ x ≤ 1.

    Evaluated with the continued fraction of the incomplete beta function (Abramowitz & Stegun
    26.5.8), summed by the modified Lentz method, on the side of the symmetry
    I_x(a, b) = 1 - I_{1-x}(b, a) where it converges fast (x < (a + 1) / (a + b + 2)).
    Accurate to about 1e-14 relative.
    """
    if not (a > 0 and b > 0):
        raise ValueError("regularized_incomplete_beta needs a > 0 and b > 0")
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1.0) / (a + b + 2.0):
        return 1.0 - regularized_incomplete_beta(b, a, 1.0 - x)
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    tiny = 1e-300
    # continued fraction 1 / (1 + d1 / (1 + d2 / (1 + ...))), with
    # d_{2k+1} = -(a+k)(a+b+k)x / ((a+2k)(a+2k+1)),  d_{2k} = k(b-k)x / ((a+2k-1)(a+2k))
    c = 1.0
    d = 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for k in range(1, 10_000):
        for numerator in (
            k * (b - k) * x / ((a + 2 * k - 1.0) * (a + 2 * k)),
            -(a + k) * (a + b + k) * x / ((a + 2 * k) * (a + 2 * k + 1.0)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            step = c * d
            fraction *= step
        if abs(step - 1.0) < 1e-16:
            break
    return math.exp(log_front) * fraction / a


def student_t_cdf(t: float, df: float) -> float:
    """P(T ≤ t) for Student's t with ``df`` degrees of freedom.

    Uses P(|T| > |t|) = I_{df / (df + t²)}(df / 2, 1 / 2) and the symmetry of the distribution.
    """
    if math.isnan(t) or df <= 0:
        return math.nan
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def paired_t_test(a: Values, b: Values) -> tuple[Any, Any]:
    """Student's paired t-test of ``mean(b - a) = 0``; returns ``(t, two-sided p)``.

    t = mean(d) / (s_d / √n) with s_d the sample standard deviation (n - 1 in the denominator),
    df = n - 1, p = I_{df / (df + t²)}(df / 2, 1 / 2). Agrees with ``scipy.stats.ttest_rel(b, a)``
    except where that returns NaN: for identical runs (every d = 0) ragjudge reports t = 0 and
    p = 1, and for a constant nonzero difference t = ±inf and p = 0. With fewer than two
    queries t and p are NaN.
    """
    diffs, was_vector = _differences(a, b)
    m, n = diffs.shape
    t_values = np.full(m, np.nan)
    p_values = np.full(m, np.nan)
    if n >= 2:
        mean = diffs.mean(axis=1)
        sd = diffs.std(axis=1, ddof=1)
        for i in range(m):
            # a spread below rounding noise is no spread: the difference is constant
            if sd[i] <= 1e-14 * max(1.0, abs(mean[i])):
                if abs(mean[i]) <= 1e-15:
                    t_values[i], p_values[i] = 0.0, 1.0
                else:
                    t_values[i], p_values[i] = math.copysign(math.inf, mean[i]), 0.0
                continue
            t = mean[i] / (sd[i] / math.sqrt(n))
            df = n - 1.0
            t_values[i] = t
            p_values[i] = regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return _squeeze(t_values, was_vector), _squeeze(p_values, was_vector)


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values for a family of m tests (Holm 1979).

    Sorted ascending p_(1) ≤ … ≤ p_(m): adjusted p_(i) = max_{j ≤ i} min(1, (m - j + 1) · p_(j)),
    returned in the input order. NaN p-values are left out of the family and stay NaN.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    adjusted = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    if valid.size == 0:
        return adjusted
    order = valid[np.argsort(p[valid], kind="stable")]
    m = order.size
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


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
