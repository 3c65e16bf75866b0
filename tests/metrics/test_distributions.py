"""The null distributions of ragjudge.metrics.distributions against scipy and hand-worked values."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats

from ragjudge.metrics.distributions import (
    normal_sf,
    signed_rank_null,
    studentized_range_cdf,
    studentized_range_ppf,
    studentized_range_sf,
)


# ------------------------------------------------------------------------------ normal tail
def test_normal_sf_matches_scipy_into_the_tails():
    x = np.concatenate([np.linspace(-40, 40, 4001), np.random.default_rng(1).normal(0, 6, 2000)])
    expected = scipy.stats.norm.sf(x)
    got = normal_sf(x)
    assert got.shape == x.shape
    kept = expected > 1e-300
    # relative error ~ x² · 1e-16 from rounding x / √2 (erfc's slope in the log is ~x)
    np.testing.assert_allclose(got[kept], expected[kept], rtol=1e-12)


def test_normal_sf_hand_worked():
    # Q(0) = 1/2; Q(-x) = 1 - Q(x); Q(1.959963984540054) = 0.025 (the 97.5 % quantile)
    assert normal_sf(0.0) == 0.5
    assert normal_sf(1.959963984540054) == pytest.approx(0.025, rel=1e-14)
    assert normal_sf(-1.959963984540054) == pytest.approx(0.975, rel=1e-15)
    assert normal_sf(np.array([[np.inf, -np.inf]])).tolist() == [[0.0, 1.0]]
    assert math.isnan(normal_sf(np.nan))


# -------------------------------------------------------------------- signed-rank null
def test_signed_rank_null_hand_worked():
    # ranks 1, 2, 3: the 8 subsets sum to 0, 1, 2, 3, 3, 4, 5, 6; doubled: 0, 2, ..., 12
    counts = signed_rank_null((2, 4, 6))
    assert counts.tolist() == [1, 0, 1, 0, 1, 0, 2, 0, 1, 0, 1, 0, 1]
    # tied ranks 1.5, 1.5, 3 (doubled 3, 3, 6): sums 0, 1.5, 1.5, 3, 3, 4.5, 4.5, 6
    counts = signed_rank_null((3, 3, 6))
    assert {s: c for s, c in enumerate(counts) if c} == {0: 1, 3: 2, 6: 2, 9: 2, 12: 1}


@pytest.mark.parametrize("ranks", [(2, 4, 6, 8, 10, 12, 14, 16, 18), (3, 3, 6, 9, 9, 9, 14, 16),
                                   (1, 1, 1, 1, 1, 7, 8)])
def test_signed_rank_null_equals_brute_force(ranks):
    expected = np.zeros(sum(ranks) + 1)
    for signs in itertools.product((0, 1), repeat=len(ranks)):
        expected[sum(r for r, s in zip(ranks, signs) if s)] += 1
    np.testing.assert_array_equal(signed_rank_null(ranks), expected)


# -------------------------------------------------------------------- studentized range
def test_studentized_range_two_means_hand_worked():
    # k = 2, df = inf: the range of two standard normals is |X1 - X2| ~ |N(0, 2)|, so
    # P(R > q) = 2 Q(q / √2) = erfc(q / 2)
    q = np.array([0.1, 1.0, 2.5, 5.0, 9.0])
    expected = [math.erfc(v / 2) for v in q]
    np.testing.assert_allclose(studentized_range_sf(q, 2, math.inf), expected, rtol=1e-12)
    # k = 2, df = 1: Q / √2 is |T| for Student's t with 1 df (Cauchy), P(|T| > t) = 1 - 2 atan(t) / π
    expected = [1 - 2 * math.atan(v / math.sqrt(2)) / math.pi for v in q]
    np.testing.assert_allclose(studentized_range_sf(q, 2, 1), expected, rtol=1e-12)


@pytest.mark.parametrize("df", [1, 2, 3, 7, 30, 120, 1999, 37981, 1e7])
def test_studentized_range_two_means_is_t_into_the_tail(df):
    # for k = 2, P(Q > q) = P(|T_df| > q / √2) exactly: a reference with relative accuracy
    q = np.linspace(0.05, 14, 60)
    expected = 2 * scipy.stats.t.sf(q / math.sqrt(2), df)
    kept = expected > 1e-14
    np.testing.assert_allclose(studentized_range_sf(q, 2, df)[kept], expected[kept], rtol=1e-7)


@pytest.mark.parametrize("k,df", [(3, 2), (3, 10), (4, 57), (5, 5), (10, 1), (10, 40), (20, 19),
                                  (20, 37981), (50, 8), (50, 300), (200, 60), (7, math.inf)])
def test_studentized_range_matches_scipy(k, df):
    q = np.array([0.05, 0.5, 1.0, 2.0, 3.0, 3.7, 4.5, 5.5, 7.0, 9.0])
    expected = scipy.stats.studentized_range.sf(q, k, df)
    got = studentized_range_sf(q, k, df)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)
    np.testing.assert_allclose(studentized_range_cdf(q, k, df), 1 - expected, rtol=0, atol=1e-10)


@pytest.mark.slow
def test_studentized_range_random_points_against_scipy():
    rng = np.random.default_rng(12)
    for _ in range(6):
        k = int(rng.integers(2, 40))
        df = float(rng.choice([rng.integers(1, 30), rng.integers(30, 5000)]))
        q = rng.uniform(0, 8, 5)
        np.testing.assert_allclose(studentized_range_sf(q, k, df),
                                   scipy.stats.studentized_range.sf(q, k, df), rtol=0, atol=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("p,k,df", [(0.95, 3, 10), (0.95, 20, 37981), (0.99, 5, 2), (0.9, 2, 7)])
def test_studentized_range_quantile(p, k, df):
    q = studentized_range_ppf(p, k, df)
    assert q == pytest.approx(scipy.stats.studentized_range.ppf(p, k, df), rel=1e-9)
    assert studentized_range_cdf(q, k, df) == pytest.approx(p, abs=1e-11)


def test_studentized_range_quantile_hand_worked():
    # k = 2, df = inf: P(|N(0, 2)| ≤ q) = 0.95 at q = √2 · 1.959963984540054
    assert studentized_range_ppf(0.95, 2, math.inf) == pytest.approx(
        math.sqrt(2) * 1.959963984540054, rel=1e-10)


def test_studentized_range_edges():
    out = studentized_range_sf(np.array([-1.0, 0.0, np.nan, np.inf]), 4, 12)
    assert out[0] == 1.0 and out[1] == 1.0 and math.isnan(out[2]) and out[3] == 0.0
    with pytest.raises(ValueError):
        studentized_range_sf(1.0, 1, 10)
    with pytest.raises(ValueError):
        studentized_range_sf(1.0, 3, 0)
    with pytest.raises(ValueError):
        studentized_range_ppf(1.0, 3, 10)
