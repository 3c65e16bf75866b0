"""Multiple-comparison corrections against statsmodels' multipletests and hand-worked families."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statskit import multipletests

from ragjudge.metrics.corrections import CORRECTIONS, correct, holm

STATSMODELS = {"bonferroni": "bonferroni", "holm": "holm", "bh": "fdr_bh"}


def test_bonferroni_hand_worked():
    # m = 2: each p times 2, at most 1
    np.testing.assert_allclose(correct([0.01, 0.3], "bonferroni"), [0.02, 0.6])
    np.testing.assert_allclose(correct([0.6, 0.7], "bonferroni"), [1.0, 1.0])


def test_holm_hand_worked():
    # sorted 0.01, 0.02, 0.04: x3 = 0.03, x2 = 0.04, x1 = 0.04, then the running maximum
    np.testing.assert_allclose(correct([0.04, 0.01, 0.02], "holm"), [0.04, 0.03, 0.04])
    np.testing.assert_allclose(holm([0.04, 0.01, 0.02]), [0.04, 0.03, 0.04])


def test_benjamini_hochberg_hand_worked():
    # sorted 0.005 (i=1), 0.01 (2), 0.03 (3), 0.04 (4), m = 4: m p / i = 0.02, 0.02, 0.04, 0.04;
    # the running minimum from the top leaves them so
    np.testing.assert_allclose(correct([0.01, 0.04, 0.03, 0.005], "bh"), [0.02, 0.04, 0.04, 0.02])
    # 0.02 (i=1) -> 0.06, 0.03 (i=2) -> 0.045, 0.04 (i=3) -> 0.04: the minimum from the top
    # brings 0.06 and 0.045 down to 0.04
    np.testing.assert_allclose(correct([0.02, 0.03, 0.04], "bh"), [0.04, 0.04, 0.04])


def test_none_returns_a_copy():
    p = np.array([0.2, 0.01])
    out = correct(p, "none")
    out[0] = 0.5
    assert p[0] == 0.2


@pytest.mark.slow
@pytest.mark.parametrize("method", ["bonferroni", "holm", "bh"])
def test_matches_statsmodels_on_random_families(method):
    rng = np.random.default_rng(CORRECTIONS.index(method))
    for m in (1, 2, 3, 5, 10, 40, 190):
        for _ in range(5):
            p = rng.random(m) ** 3
            # ties, exact zeros and ones
            p[rng.integers(0, m, m // 3)] = p[0]
            p[rng.integers(0, m, m // 5)] = 1.0
            if m > 3:
                p[1] = 0.0
            expected = multipletests(p, method=STATSMODELS[method])[1]
            np.testing.assert_allclose(correct(p, method), expected, rtol=1e-13, atol=1e-300)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.001, 0.01, 0.02, 0.049, 0.05, 0.2, 0.5, 1.0])
                | st.floats(0, 1), min_size=1, max_size=30),
       st.sampled_from(["bonferroni", "holm", "bh"]))
def test_property_matches_statsmodels(pvalues, method):
    expected = multipletests(np.array(pvalues), method=STATSMODELS[method])[1]
    got = correct(pvalues, method)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-300)
    # an adjusted p-value is never below the raw one and never above 1
    assert np.all(got >= np.array(pvalues) - 1e-15) and np.all(got <= 1.0)


@pytest.mark.parametrize("method", CORRECTIONS)
def test_nan_is_left_out_of_the_family(method):
    out = correct([0.01, np.nan, 0.02], method)
    assert math.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2]], correct([0.01, 0.02], method))
    assert np.isnan(correct([np.nan, np.nan], method)).all()


@pytest.mark.parametrize("method", CORRECTIONS)
def test_matrix_is_one_family_per_row(method):
    rng = np.random.default_rng(3)
    p = rng.random((4, 7))
    out = correct(p, method)
    for row in range(4):
        np.testing.assert_allclose(out[row], correct(p[row], method))


def test_bad_method_and_shape():
    with pytest.raises(ValueError, match="bonferroni, holm, bh"):
        correct([0.1], "fdr")
    with pytest.raises(ValueError):
        correct(np.zeros((2, 2, 2)), "holm")
