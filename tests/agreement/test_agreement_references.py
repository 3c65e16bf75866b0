"""Agreement statistics against reference packages (krippendorff, scikit-learn, statsmodels) and
a brute-force Gwet's AC1, on random ratings matrices with missing values."""

from __future__ import annotations

import warnings
from itertools import combinations

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from ragjudge.metrics.agreement import (
    Ratings,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
    percent_agreement,
)

pytestmark = pytest.mark.slow

SETTINGS = settings(max_examples=150, deadline=None)


@st.composite
def ratings_matrices(draw, *, missing: bool = True, min_annotators: int = 2):
    lo = draw(st.integers(-1, 1))
    hi = lo + draw(st.integers(1, 4))
    units = draw(st.integers(1, 15))
    annotators = draw(st.integers(min_annotators, 5))
    grades = draw(
        st.lists(st.integers(lo, hi), min_size=units * annotators, max_size=units * annotators)
    )
    m = np.array(grades, dtype=float).reshape(units, annotators)
    if missing:
        holes = draw(
            st.lists(st.booleans(), min_size=units * annotators, max_size=units * annotators)
        )
        m[np.array(holes).reshape(units, annotators)] = np.nan
    return m, (lo, hi)


def _reference_alpha(m: np.ndarray, scale, level) -> float | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = krippendorff.alpha(
                reliability_data=m.T,
                level_of_measurement=level,
                value_domain=list(range(scale[0], scale[1] + 1)),
            )
        except (ValueError, ZeroDivisionError):
            return None
    return None if not np.isfinite(value) else float(value)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@SETTINGS
@given(data=ratings_matrices())
def test_krippendorff_alpha_matches_krippendorff_package(level, data):
    m, scale = data
    ours = krippendorff_alpha(m, level, scale=scale)
    ref = _reference_alpha(m, scale, level)
    if ref is None:
        assert ours.value is None and ours.reason
    else:
        assert ours.value == pytest.approx(ref, abs=1e-9)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@SETTINGS
@given(data=ratings_matrices(min_annotators=2))
def test_cohen_kappa_matches_scikit_learn_over_the_declared_scale(weights, data):
    m, scale = data
    a, b = m[:, 0], m[:, 1]
    both = ~(np.isnan(a) | np.isnan(b))
    ours = cohen_kappa(a, b, scale, weights=weights)
    if not both.any():
        assert ours.value is None and "no unit in common" in ours.reason
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = cohen_kappa_score(
            a[both].astype(int),
            b[both].astype(int),
            labels=list(range(scale[0], scale[1] + 1)),
            weights=weights,
        )
    if not np.isfinite(ref):
        assert ours.value is None and ours.reason
    else:
        assert ours.value == pytest.approx(ref, abs=1e-9)


def test_weighted_kappa_differs_from_reindexed_observed_grades():
    a, b = [0, 1, 3, 3, 1], [1, 0, 3, 0, 1]
    ours = cohen_kappa(a, b, (0, 3), weights="linear").value
    full = cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights="linear")
    observed = cohen_kappa_score(a, b, weights="linear")  # sklearn re-indexes {0, 1, 3}
    assert ours == pytest.approx(full)
    assert abs(ours - observed) > 1e-3


@SETTINGS
@given(data=ratings_matrices(missing=False))
def test_fleiss_kappa_matches_statsmodels(data):
    m, scale = data
    lo, hi = scale
    table = np.stack([(m == g).sum(axis=1) for g in range(lo, hi + 1)], axis=1)
    ours = fleiss_kappa(m, scale=scale)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = sm_fleiss_kappa(table, method="fleiss")
    if not np.isfinite(ref):
        assert ours.value is None and ours.reason
    else:
        assert ours.value == pytest.approx(ref, abs=1e-9)


def _brute_force_ac1(m: np.ndarray, scale) -> float | None:
    """Gwet's AC1 with missing ratings, one unit and one pair of ratings at a time."""
    levels = list(range(scale[0], scale[1] + 1))
    q = len(levels)
    rated_units = [row[~np.isnan(row)] for row in m if (~np.isnan(row)).sum() >= 1]
    pairable = [r for r in rated_units if len(r) >= 2]
    if not pairable:
        return None
    p_a = 0.0
    for r in pairable:
        agree = sum(1 for i, j in combinations(range(len(r)), 2) if r[i] == r[j])
        p_a += agree / (len(r) * (len(r) - 1) / 2)
    p_a /= len(pairable)
    p_e = 0.0
    for g in levels:
        pi = sum(float(np.mean(r == g)) for r in rated_units) / len(rated_units)
        p_e += pi * (1 - pi)
    p_e /= q - 1
    return (p_a - p_e) / (1 - p_e)


@SETTINGS
@given(data=ratings_matrices())
def test_gwet_ac1_matches_brute_force(data):
    m, scale = data
    ours = gwet_ac1(m, scale=scale)
    ref = _brute_force_ac1(m, scale)
    if ref is None:
        assert ours.value is None and ours.reason
    else:
        assert ours.value == pytest.approx(ref, abs=1e-9)


@SETTINGS
@given(data=ratings_matrices())
def test_percent_agreement_two_annotators_is_share_of_equal_units(data):
    m, scale = data
    a, b = m[:, 0], m[:, 1]
    both = ~(np.isnan(a) | np.isnan(b))
    pair = Ratings.from_matrix(m[:, :2], scale)
    ours = percent_agreement(pair)
    within = percent_agreement(pair, tolerance=1)
    if not both.any():
        assert ours.value is None
    else:
        assert ours.value == pytest.approx(np.mean(a[both] == b[both]))
        assert within.value == pytest.approx(np.mean(np.abs(a[both] - b[both]) <= 1))


@SETTINGS
@given(data=ratings_matrices())
def test_long_form_gives_the_same_matrix(data):
    m, scale = data
    units, annotators = np.nonzero(~np.isnan(m))
    grades = m[units, annotators]
    r = Ratings.from_long([f"u{u:03d}" for u in units], [f"a{a}" for a in annotators], grades, scale)
    # rows and columns appear in sorted key order; empty rows/columns vanish
    keep_rows = np.unique(units)
    keep_cols = np.unique(annotators)
    np.testing.assert_array_equal(r.matrix, m[np.ix_(keep_rows, keep_cols)])
    for level in ("nominal", "interval"):
        from_long = krippendorff_alpha(r, level).value
        from_matrix = krippendorff_alpha(m, level, scale=scale).value
        assert (from_long is None) == (from_matrix is None)
        if from_long is not None:
            assert from_long == pytest.approx(from_matrix)


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(
        st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=0, max_size=12
    )
)
def test_kendall_tau_b_matches_scipy(values):
    from scipy.stats import kendalltau

    from ragjudge.metrics.agreement import kendall_tau

    x = np.array([v[0] for v in values], float)
    y = np.array([v[1] for v in values], float)
    ours = kendall_tau(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = kendalltau(x, y).statistic if len(x) >= 2 else np.nan
    if not np.isfinite(ref):
        assert ours.value is None and ours.reason
    else:
        assert ours.value == pytest.approx(ref, abs=1e-12)


@SETTINGS
@given(data=ratings_matrices(), groups_seed=st.integers(0, 4))
def test_grouped_agreement_equals_each_group_alone(data, groups_seed):
    from ragjudge.metrics.agreement_report import grouped_agreement

    m, scale = data
    groups = (np.arange(len(m)) * (groups_seed + 1)) % 3
    stats = grouped_agreement(Ratings.from_matrix(m, scale), groups)
    for g in range(int(groups.max()) + 1):
        part = Ratings.from_matrix(m[groups == g], scale)
        rated = (~np.isnan(part.matrix)).sum(axis=1)
        assert stats["units"][g] == (rated > 0).sum()
        assert stats["pairable_units"][g] == (rated >= 2).sum()
        for key, stat in (
            ("percent_agreement", percent_agreement(part)),
            ("krippendorff_alpha_nominal", krippendorff_alpha(part, "nominal")),
            ("krippendorff_alpha_ordinal", krippendorff_alpha(part, "ordinal")),
            ("gwet_ac1", gwet_ac1(part)),
        ):
            if stat.value is None:
                assert np.isnan(stats[key][g]), key
            else:
                assert stats[key][g] == pytest.approx(stat.value, abs=1e-9), key
