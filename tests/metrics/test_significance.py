"""Paired significance tests of ragjudge.metrics.significance against scipy, statsmodels and
hand-worked cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import scipy.special
import scipy.stats
from statskit import multipletests

from ragjudge.metrics.significance import (
    BETTER_A,
    BETTER_B,
    NOISE,
    bootstrap_ci,
    cohens_dz,
    compare_runs,
    holm,
    paired_bootstrap_ci,
    paired_bootstrap_intervals,
    paired_t_test,
    randomization_pvalues,
    randomization_test,
    rank_biserial,
    regularized_incomplete_beta,
    student_t_cdf,
    verdict,
    wilcoxon_test,
)


@pytest.mark.parametrize(
    "a,b,x",
    [(0.5, 0.5, 0.3), (2.0, 3.0, 0.4), (10.0, 0.5, 0.9), (0.5, 10.0, 0.01), (150.0, 0.5, 0.999),
     (1.0, 1.0, 0.25), (4.5, 0.5, 0.5), (2000.0, 0.5, 0.9995)],
)
def test_incomplete_beta_matches_scipy(a, b, x):
    assert regularized_incomplete_beta(a, b, x) == pytest.approx(
        scipy.special.betainc(a, b, x), rel=1e-12 if a < 1000 else 1e-10, abs=1e-300
    )  # for huge a, lgamma(a + b) - lgamma(a) cancels to ~1e-11 relative


def test_incomplete_beta_hand_worked():
    # I_x(1, 1) = x; I_x(a, 1) = x^a
    assert regularized_incomplete_beta(1.0, 1.0, 0.37) == pytest.approx(0.37, rel=1e-14)
    assert regularized_incomplete_beta(3.0, 1.0, 0.5) == pytest.approx(0.125, rel=1e-14)
    assert regularized_incomplete_beta(2.0, 2.0, 0.0) == 0.0
    assert regularized_incomplete_beta(2.0, 2.0, 1.0) == 1.0


@pytest.mark.parametrize("df", [1, 2, 3, 7, 30, 99, 1000])
@pytest.mark.parametrize("t", [-40.0, -3.2, -1.0, -0.1, 0.0, 0.5, 2.0, 6.0, 25.0])
def test_t_cdf_matches_scipy(t, df):
    expected = scipy.stats.t.cdf(t, df)
    assert student_t_cdf(t, df) == pytest.approx(expected, rel=1e-10, abs=1e-15)


def test_t_cdf_hand_worked():
    # df = 1 is the Cauchy distribution: F(t) = 1/2 + atan(t)/pi
    assert student_t_cdf(1.0, 1) == pytest.approx(0.75, rel=1e-13)
    assert student_t_cdf(0.0, 5) == 0.5
    assert student_t_cdf(math.inf, 3) == 1.0


@pytest.mark.parametrize("n", [2, 3, 10, 50, 500])
def test_paired_t_test_matches_ttest_rel(n):
    rng = np.random.default_rng(n)
    a = rng.random(n)
    b = np.clip(a + rng.normal(0.03, 0.2, n), 0, 1)
    t, p = paired_t_test(a, b)
    ref = scipy.stats.ttest_rel(b, a)
    assert t == pytest.approx(ref.statistic, rel=1e-10)
    assert p == pytest.approx(ref.pvalue, rel=1e-9)


def test_paired_t_test_matrix_and_hand_worked():
    # d = [1, 2, 3]: mean 2, sd 1, t = 2 / (1/sqrt 3) = 2 sqrt 3, df 2
    a = np.zeros((2, 3))
    b = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    t, p = paired_t_test(a, b)
    assert t[0] == pytest.approx(2 * math.sqrt(3), rel=1e-13)
    # for df = 2, P(|T| > t) = 1 - t / sqrt(2 + t^2)
    assert p[0] == pytest.approx(1 - 2 * math.sqrt(3) / math.sqrt(14), rel=1e-12)
    # identical runs: no difference, p = 1 (scipy gives NaN here)
    assert (t[1], p[1]) == (0.0, 1.0)


def test_paired_t_test_constant_difference_and_too_few():
    t, p = paired_t_test([0.1, 0.2, 0.3], [0.6, 0.7, 0.8])
    assert t == math.inf and p == 0.0
    t, p = paired_t_test([0.1], [0.6])
    assert math.isnan(t) and math.isnan(p)


def test_randomization_exact_hand_worked():
    # d = [1, 2, 3]: the 8 sign patterns sum to ±6, ±4, ±2, 0, 0; |sum| >= 6 for 2 of 8
    assert randomization_test([0, 0, 0], [1, 2, 3]) == pytest.approx(0.25)
    # d = [1, -1]: sums 0, 0, 2, -2; observed 0 -> every pattern reaches it
    assert randomization_test([0, 1], [1, 0]) == 1.0
    assert randomization_test([0.3, 0.4], [0.3, 0.4]) == 1.0


@pytest.mark.parametrize("n", [5, 9, 13])
def test_randomization_exact_matches_scipy_permutation_test(n):
    rng = np.random.default_rng(100 + n)
    a = rng.random(n)
    b = a + rng.normal(0.15, 0.3, n)
    ref = scipy.stats.permutation_test(
        (b, a), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
        n_resamples=np.inf, vectorized=True, alternative="two-sided",
    )
    assert randomization_test(a, b) == pytest.approx(ref.pvalue, abs=1e-12)


def test_randomization_monte_carlo_close_to_exact():
    # 16 queries: 65,536 patterns > 10,000, so the default draws at random
    rng = np.random.default_rng(7)
    a = rng.random(16)
    b = a + rng.normal(0.08, 0.25, 16)
    exact = randomization_test(a, b, permutations=1 << 16)
    sampled = randomization_test(a, b)
    # binomial standard error of a p near 0.2 with 10,000 draws is 0.004
    assert abs(sampled - exact) < 0.02
    assert 0 < exact < 1
    # fixed seed: the same answer twice
    assert randomization_test(a, b) == sampled


def test_randomization_never_zero_and_detects_big_difference():
    rng = np.random.default_rng(3)
    a = rng.random(200) * 0.3
    b = a + 0.5
    p = randomization_test(a, b)
    assert p == pytest.approx(1 / 10_001)


@pytest.mark.slow
def test_holm_matches_statsmodels():
    rng = np.random.default_rng(11)
    for m in (1, 2, 5, 20):
        p = rng.random(m) ** 3
        expected = multipletests(p, method="holm")[1]
        np.testing.assert_allclose(holm(p), expected, rtol=1e-13)


def test_holm_hand_worked_and_nan():
    # sorted 0.01, 0.02, 0.04: x3 = 0.03, x2 = 0.04, x1 = 0.04 (monotone)
    np.testing.assert_allclose(holm([0.04, 0.01, 0.02]), [0.04, 0.03, 0.04])
    out = holm([0.01, np.nan, 0.5])
    assert math.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2]], [0.02, 0.5])


def test_bootstrap_ci_constant_and_single_query():
    assert bootstrap_ci([0.5] * 20) == (0.5, 0.5, 0.5)
    assert bootstrap_ci([0.7]) == (0.7, 0.7, 0.7)
    mean, low, high = bootstrap_ci([])
    assert math.isnan(mean) and math.isnan(low) and math.isnan(high)


def test_bootstrap_ci_two_values_hand_worked():
    # values {0, 1}: a resample mean is 0, 0.5 or 1 with probability 1/4, 1/2, 1/4, so the
    # 2.5 % and 97.5 % quantiles are 0 and 1
    mean, low, high = bootstrap_ci([0.0, 1.0])
    assert (mean, low, high) == (0.5, 0.0, 1.0)


def test_bootstrap_ci_close_to_scipy_percentile():
    rng = np.random.default_rng(5)
    values = rng.beta(2, 3, 80)
    mean, low, high = bootstrap_ci(values)
    ref = scipy.stats.bootstrap(
        (values,), np.mean, method="percentile", n_resamples=20_000, random_state=1
    ).confidence_interval
    assert mean == pytest.approx(values.mean())
    # both are Monte Carlo estimates of the same quantiles; their noise is about 0.002 here
    assert low == pytest.approx(ref.low, abs=0.008)
    assert high == pytest.approx(ref.high, abs=0.008)
    # the normal-theory interval is close for a mean of 80 values
    se = values.std(ddof=1) / math.sqrt(80)
    assert low == pytest.approx(values.mean() - 1.96 * se, abs=0.012)
    assert high == pytest.approx(values.mean() + 1.96 * se, abs=0.012)


def test_bootstrap_matrix_rows_match_vectors():
    rng = np.random.default_rng(9)
    matrix = rng.random((3, 40))
    means, lows, highs = bootstrap_ci(matrix, resamples=2_000, seed=4)
    for i in range(3):
        np.testing.assert_allclose(
            bootstrap_ci(matrix[i], resamples=2_000, seed=4), (means[i], lows[i], highs[i]),
            rtol=1e-12,
        )


def test_paired_bootstrap_ci_of_difference():
    rng = np.random.default_rng(2)
    a = rng.random(60)
    b = a + 0.1 + rng.normal(0, 0.05, 60)
    diff, low, high = paired_bootstrap_ci(a, b)
    assert diff == pytest.approx(np.mean(b - a))
    assert low < diff < high
    assert low > 0.07 and high < 0.13
    with pytest.raises(ValueError):
        paired_bootstrap_ci(a, b[:-1])


def test_verdict_rules():
    assert verdict(0.1, 0.001) == BETTER_B
    assert verdict(-0.1, 0.001) == BETTER_A
    assert verdict(0.1, 0.2) == NOISE
    assert verdict(0.0, 0.0) == NOISE
    assert verdict(0.1, float("nan")) == NOISE


def test_compare_runs_big_difference_and_noise():
    rng = np.random.default_rng(21)
    n = 100
    base = rng.random((2, n))
    better = np.clip(base + 0.3, 0, 1)
    # per-query differences that cancel out exactly: a mean difference of zero
    noise = rng.normal(0, 0.1, (2, n))
    close = base + (noise - noise.mean(axis=1, keepdims=True))
    results = compare_runs({"a": base, "b": better}, ["R@5", "RR"])
    assert [r.verdict for r in results] == [BETTER_B, BETTER_B]
    assert results[0].winner == "b"
    assert results[0].ci_low > 0
    results = compare_runs({"a": base, "b": close}, ["R@5", "RR"])
    assert [r.verdict for r in results] == [NOISE, NOISE]
    assert results[0].ci_low < 0 < results[0].ci_high


def test_compare_runs_holm_with_three_runs():
    rng = np.random.default_rng(4)
    n = 30
    base = rng.random((1, n))
    runs = {
        "base": base,
        "b": np.clip(base + rng.normal(0.05, 0.15, (1, n)), 0, 1),
        "c": np.clip(base + rng.normal(0.04, 0.15, (1, n)), 0, 1),
    }
    results = compare_runs(runs, ["AP"])
    raw = np.array([r.p_randomization for r in results])
    np.testing.assert_allclose([r.p_randomization_adjusted for r in results], holm(raw))
    np.testing.assert_allclose(
        [r.p_t_test_adjusted for r in results], holm([r.p_t_test for r in results])
    )
    assert [r.run_b for r in results] == ["b", "c"]
    assert all(r.run_a == "base" for r in results)
    # with two runs nothing is adjusted
    pair = compare_runs({"base": base, "b": runs["b"]}, ["AP"])[0]
    assert pair.p_randomization_adjusted == pair.p_randomization


_pairs = st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=2, max_size=40)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(_pairs, st.lists(st.floats(0, 1), min_size=1, max_size=12))
def test_property_t_test_and_holm_against_references(pairs, pvals):
    a, b = np.array(pairs).T
    t, p = paired_t_test(a, b)
    d = b - a
    if np.std(d, ddof=1) > 1e-9 * max(1.0, abs(d.mean())):
        ref = scipy.stats.ttest_rel(b, a)
        assert t == pytest.approx(ref.statistic, rel=1e-7, abs=1e-9)
        assert p == pytest.approx(ref.pvalue, rel=1e-7, abs=1e-12)
    assert 0.0 <= p <= 1.0
    # Holm by its definition, one p-value at a time (statsmodels is checked above; it is too
    # slow to call hundreds of times)
    m = len(pvals)
    ordered = sorted(range(m), key=lambda i: pvals[i])
    expected = [0.0] * m
    running = 0.0
    for rank, i in enumerate(ordered):
        running = max(running, min(1.0, (m - rank) * pvals[i]))
        expected[i] = running
    np.testing.assert_allclose(holm(pvals), expected, rtol=1e-12)


# No subnormal differences: the implementation floors its tie tolerance's scale at 1e-300
# (``randomization_test``), so for differences such as 2.2e-313 its tolerance and the brute
# force's below (1e-9 x the sum of |d|, unfloored) are different numbers and may count a
# near-tie differently; that says nothing about either, and such differences are no scores.
@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False, allow_subnormal=False), min_size=1, max_size=10))
def test_property_exact_randomization_equals_brute_force(diffs):
    d = np.array(diffs)
    n = len(d)
    signs = np.array([[1 - 2 * ((code >> i) & 1) for i in range(n)] for code in range(2 ** n)])
    stats = np.abs(signs @ d)
    observed = abs(d.sum())
    expected = np.mean(stats >= observed - 1e-9 * np.abs(d).sum())
    assert randomization_test(np.zeros(n), d) == pytest.approx(expected)


# ---------------------------------------------------------------------------- many pairs at once
def test_many_pair_kernels_equal_the_two_run_functions():
    rng = np.random.default_rng(31)
    runs = rng.random((6, 40))
    a = np.array([0, 0, 1, 3, 5])
    b = np.array([1, 2, 4, 2, 0])
    p = randomization_pvalues(runs, a, b, permutations=2_000, seed=5)
    diff, low, high = paired_bootstrap_intervals(runs, a, b, resamples=2_000, seed=5)
    for i in range(len(a)):
        assert p[i] == randomization_test(runs[a[i]], runs[b[i]], permutations=2_000, seed=5)
        expected = paired_bootstrap_ci(runs[a[i]], runs[b[i]], resamples=2_000, seed=5)
        np.testing.assert_allclose((diff[i], low[i], high[i]), expected, rtol=1e-12, atol=1e-15)


def test_randomization_pvalues_exact_against_scipy():
    # 10 queries: all 1,024 sign patterns fit in the budget, so the test is exact for every pair
    rng = np.random.default_rng(8)
    runs = rng.random((4, 10))
    a, b = np.triu_indices(4, 1)
    p = randomization_pvalues(runs, a, b)
    for i, j, value in zip(a, b, p):
        ref = scipy.stats.permutation_test(
            (runs[j], runs[i]), lambda x, y, axis: np.mean(x - y, axis=axis),
            permutation_type="samples", n_resamples=np.inf, vectorized=True,
        )
        assert value == pytest.approx(ref.pvalue, abs=1e-12)


# ------------------------------------------------------------------------------------ Wilcoxon
def test_wilcoxon_exact_hand_worked():
    # d = [1, -2, 3, 4, 5]: ranks 1..5, R+ = 1+3+4+5 = 13, R- = 2, W = 2. Of the 32 subsets of
    # {1..5}, those summing to ≥ 13 are {1..5} (15), {2,3,4,5} (14) and {1,3,4,5} (13): 3, so
    # p = 2 · 3/32 = 0.1875
    w, p = wilcoxon_test(np.zeros(5), [1, -2, 3, 4, 5])
    assert w == 2.0
    assert p == pytest.approx(0.1875, rel=1e-14)


def test_wilcoxon_ties_small_sample_hand_worked():
    # d = [1, 1, 2, 3]: |d| ranks 1.5, 1.5, 3, 4, all positive: R+ = 10, the largest of the 16
    # equally likely sums, so P(R+ ≥ 10) = 1/16 and p = 2/16
    w, p = wilcoxon_test(np.zeros(4), [1, 1, 2, 3])
    assert (w, p) == (0.0, 0.125)


def test_wilcoxon_normal_approximation_hand_worked():
    # 14 queries with two zeros: the normal approximation (scipy's choice with zeros beyond 13).
    # Nonzero |d| = 1,1,2,2,3,...,10 (n' = 12) ranked 1.5,1.5,3.5,3.5,5,...,12; only the -1 is
    # negative, so R- = 1.5 and R+ = 78 - 1.5 = 76.5. Mean n'(n'+1)/4 = 39; ties: two pairs,
    # Σ(t³ - t) = 12; variance (12·13·25 - 12/2) / 24 = 162.25; z = 37.5 / √162.25
    d = [0, 0, 1, -1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    w, p = wilcoxon_test(np.zeros(14), d)
    z = 37.5 / math.sqrt(162.25)
    assert w == 1.5
    assert p == pytest.approx(math.erfc(z / math.sqrt(2)), rel=1e-13)
    assert p == pytest.approx(scipy.stats.wilcoxon(d).pvalue, rel=1e-12)


def test_wilcoxon_identical_runs_and_matrix():
    assert wilcoxon_test([0.2] * 20, [0.2] * 20) == (0.0, 1.0)
    rng = np.random.default_rng(4)
    a = rng.random((3, 30))
    b = a + rng.normal(0.05, 0.2, (3, 30))
    w, p = wilcoxon_test(a, b)
    for i in range(3):
        assert (w[i], p[i]) == wilcoxon_test(a[i], b[i])


def _random_pair(rng, n, kind):
    a = rng.random(n)
    if kind == 0:  # continuous: no ties
        return a, a + rng.normal(0.05, 0.2, n)
    if kind == 1:  # measure values on a grid: ties and zeros
        a = np.round(a * 5) / 5
        return a, np.round(np.clip(a + rng.normal(0.05, 0.3, n), 0, 1) * 5) / 5
    return rng.integers(0, 3, n).astype(float), rng.integers(0, 3, n).astype(float)


@pytest.mark.slow
def test_wilcoxon_matches_scipy_on_random_samples():
    # every branch of scipy's method="auto": exact (n ≤ 50, no tie or zero), exact over the
    # sign patterns (n ≤ 13 with ties or zeros), normal approximation (the rest)
    rng = np.random.default_rng(2024)
    checked = 0
    for trial in range(300):
        n = int(rng.integers(1, 90))
        a, b = _random_pair(rng, n, trial % 3)
        if np.all(a == b):
            continue
        w, p = wilcoxon_test(a, b)
        ref = scipy.stats.wilcoxon(b, a)
        assert w == pytest.approx(ref.statistic, abs=1e-9)
        assert p == pytest.approx(ref.pvalue, rel=1e-10, abs=1e-13)
        checked += 1
    assert checked > 250


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.2, 0.4, 0.6, 1.0]) | st.floats(0, 1),
                          st.sampled_from([0.0, 0.2, 0.4, 0.6, 1.0]) | st.floats(0, 1)),
                min_size=1, max_size=60))
def test_property_wilcoxon_matches_scipy(pairs):
    a, b = np.array(pairs).T
    w, p = wilcoxon_test(a, b)
    if np.all(a == b):
        assert (w, p) == (0.0, 1.0)
        return
    ref = scipy.stats.wilcoxon(b, a)
    assert w == pytest.approx(ref.statistic, abs=1e-9)
    assert p == pytest.approx(ref.pvalue, rel=1e-10, abs=1e-13)


# -------------------------------------------------------------------------------- effect sizes
def test_cohens_dz_hand_worked_and_edges():
    # d = [1, 2, 3]: mean 2, sample sd 1, d_z = 2
    assert cohens_dz([0, 0, 0], [1, 2, 3]) == pytest.approx(2.0, rel=1e-14)
    # d = [-1, 1, -3, -1]: mean -1, sd √(8/3)
    assert cohens_dz([1, 0, 3, 1], [0, 1, 0, 0]) == pytest.approx(-1 / math.sqrt(8 / 3), rel=1e-14)
    assert cohens_dz([0.3, 0.4], [0.3, 0.4]) == 0.0
    assert cohens_dz([0.1, 0.2, 0.3], [0.6, 0.7, 0.8]) == math.inf
    assert math.isnan(cohens_dz([0.1], [0.5]))


def test_cohens_dz_is_t_over_root_n():
    # d_z = t / √n (Lakens 2013, eq. 7), with t from scipy's paired t-test
    rng = np.random.default_rng(17)
    for n in (2, 5, 30, 400):
        a = rng.random((3, n))
        b = a + rng.normal(0.04, 0.2, (3, n))
        ref = scipy.stats.ttest_rel(b, a, axis=1).statistic / math.sqrt(n)
        np.testing.assert_allclose(cohens_dz(a, b), ref, rtol=1e-10)


def test_rank_biserial_hand_worked():
    # d = [1, -2, 3, 4]: R+ = 1+3+4 = 8, R- = 2, r = (8 - 2) / 10
    assert rank_biserial(np.zeros(4), [1, -2, 3, 4]) == pytest.approx(0.6)
    # zeros dropped, ties at mean ranks: d = [0, 1, -1, 2] -> ranks 1.5, 1.5, 3; R+ = 4.5, R- = 1.5
    assert rank_biserial(np.zeros(4), [0, 1, -1, 2]) == pytest.approx(0.5)
    assert rank_biserial([1, 2], [2, 3]) == 1.0
    assert rank_biserial([0.4, 0.5], [0.4, 0.5]) == 0.0


@pytest.mark.slow
def test_rank_biserial_from_scipy_statistic():
    # with no zero, R+ + R- = n(n+1)/2 and scipy's W = min(R+, R-), so |r| = 1 - 4W / (n(n+1)),
    # its sign that of the median difference's side
    rng = np.random.default_rng(6)
    for trial in range(60):
        n = int(rng.integers(3, 120))
        a, b = _random_pair(rng, n, trial % 2)
        d = b - a
        d = d[d != 0]
        if d.size == 0:
            continue
        r = rank_biserial(a, b)
        m = d.size
        magnitude = 1 - 4 * scipy.stats.wilcoxon(d).statistic / (m * (m + 1))
        assert abs(r) == pytest.approx(magnitude, abs=1e-12)
        ranks = scipy.stats.rankdata(np.abs(d))
        assert math.copysign(1, r) == math.copysign(1, ranks[d > 0].sum() - ranks[d < 0].sum()) or r == 0
