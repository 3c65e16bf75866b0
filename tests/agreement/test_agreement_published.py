"""Agreement statistics against worked examples published with their data.

The data below are typed in from the publications' tables; the expected values are the ones
printed there (to the precision printed) or, where stated, worked by hand in the comment.
"""

from __future__ import annotations

import numpy as np
import pytest

from ragjudge.metrics.agreement import (
    Ratings,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
    percent_agreement,
)

nan = np.nan

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers,
# 12 units, values 1..5, missing data; unit 12 has one value and is not pairable.
KRIPPENDORFF_2011_C = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
).T  # units × observers


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_krippendorff_2011_reliability_data_with_missing_values(level, published):
    alpha = krippendorff_alpha(KRIPPENDORFF_2011_C, level, scale=(1, 5))
    assert round(alpha.value, 3) == published


def test_krippendorff_2011_binary_two_observers():
    # Section A of the same paper: two observers, ten units, nominal alpha = 0.095.
    a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    alpha = krippendorff_alpha(np.column_stack([a, b]), "nominal", scale=(0, 1))
    assert round(alpha.value, 3) == 0.095


def test_krippendorff_2011_unit_rated_once_is_left_out():
    without_unit_12 = KRIPPENDORFF_2011_C[:11]
    for level in ("nominal", "ordinal", "interval"):
        full = krippendorff_alpha(KRIPPENDORFF_2011_C, level, scale=(1, 5)).value
        assert full == pytest.approx(krippendorff_alpha(without_unit_12, level, scale=(1, 5)).value)


def test_percent_agreement_on_krippendorff_2011_data_by_hand():
    # Share of agreeing pairs per pairable unit: units 1, 3, 4, 5, 7, 9, 10, 11 agree fully
    # (8 × 1); unit 2 (2,2,3,2) and unit 8 (1,1,2,1) have 3 of 6 pairs (2 × 0.5); unit 6
    # (1,2,3,4) none. Mean over the 11 pairable units: 9/11.
    assert percent_agreement(KRIPPENDORFF_2011_C, scale=(1, 5)).value == pytest.approx(9 / 11)


# Fleiss (1971), "Measuring nominal scale agreement among many raters", Table 1: 30 patients,
# 6 psychiatrists each, 5 diagnoses (1 depression, 2 personality disorder, 3 schizophrenia,
# 4 neurosis, 5 other), as the diagnoses of each patient. Published kappa = .430.
FLEISS_1971 = np.array(
    [
        [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5],
        [2, 2, 2, 4, 4, 4], [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4],
        [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5], [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4],
        [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5], [3, 3, 3, 3, 3, 5],
        [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
        [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4],
        [1, 4, 4, 4, 4, 5], [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4],
        [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
    ],
    dtype=float,
)


def test_fleiss_1971_psychiatric_diagnoses():
    assert round(fleiss_kappa(FLEISS_1971, scale=(1, 5)).value, 3) == 0.430


def _from_category_counts(counts: np.ndarray, lo: int = 1) -> np.ndarray:
    """A units × raters matrix whose rows have the given number of ratings per category."""
    rows = [np.repeat(np.arange(lo, lo + counts.shape[1]), row) for row in counts]
    return np.array(rows, dtype=float)


def test_fleiss_kappa_ten_subjects_fourteen_raters():
    # The worked example of Fleiss' kappa in common reference texts (e.g. Wikipedia, "Fleiss'
    # kappa"): 10 subjects, 14 raters, 5 categories; P-bar = 0.378, P_e = 0.213, kappa = 0.210.
    counts = np.array(
        [
            [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
        ]
    )
    ratings = _from_category_counts(counts)
    assert round(fleiss_kappa(ratings, scale=(1, 5)).value, 3) == 0.210
    assert round(percent_agreement(ratings, scale=(1, 5)).value, 3) == 0.378


def _from_contingency(table) -> tuple[np.ndarray, np.ndarray]:
    table = np.asarray(table)
    i, j = np.indices(table.shape)
    a = np.repeat(i.ravel(), table.ravel()).astype(float)
    b = np.repeat(j.ravel(), table.ravel()).astype(float)
    return a, b


def test_cohen_kappa_altman_xeromammograms():
    # Altman (1991), Practical Statistics for Medical Research, §14.3: two radiologists grade 85
    # xeromammograms as normal / benign / suspected cancer / cancer; kappa = 0.47.
    # By hand: p_o = 54/85, p_e = (33·28 + 22·38 + 29·16 + 1·3)/85² = 2227/7225.
    table = [[21, 12, 0, 0], [4, 17, 1, 0], [3, 9, 15, 2], [0, 0, 0, 1]]
    a, b = _from_contingency(table)
    kappa = cohen_kappa(a, b, (0, 3)).value
    assert round(kappa, 2) == 0.47
    p_o, p_e = 54 / 85, 2227 / 7225
    assert kappa == pytest.approx((p_o - p_e) / (1 - p_e), abs=1e-12)


def test_cohen_kappa_fifty_proposals():
    # Two readers of 50 grant proposals (a textbook example, e.g. Wikipedia "Cohen's kappa"):
    # yes/yes 20, yes/no 5, no/yes 10, no/no 15 → p_o = 0.7, p_e = 0.5·0.6 + 0.5·0.4 = 0.5, κ = 0.4.
    a, b = _from_contingency([[20, 5], [10, 15]])
    assert cohen_kappa(a, b, (0, 1)).value == pytest.approx(0.4)
    # Gwet's AC1 on the same table, by hand: π_yes = (25 + 30)/100 = 0.55, with q = 2 grades
    # p_e = (π_yes·π_no + π_no·π_yes)/(q − 1) = 0.495, AC1 = (0.7 − 0.495)/(1 − 0.495).
    ac1 = gwet_ac1(np.column_stack([a, b]), scale=(0, 1)).value
    assert ac1 == pytest.approx((0.7 - 0.495) / 0.505)


def test_weighted_kappa_uses_declared_scale_not_observed_categories():
    # Grades 0 and 3 on a 0..3 scale are the whole scale apart (weight 1).
    # a = 0,0,3,3 ; b = 0,3,3,3. Observed disagreement (linear) = 1/4 · 1 = 0.25;
    # marginals a: 0:.5 3:.5, b: 0:.25 3:.75 → expected = .5·.75 + .5·.25 = 0.5; κ_lin = 0.5.
    a, b = [0, 0, 3, 3], [0, 3, 3, 3]
    assert cohen_kappa(a, b, (0, 3), weights="linear").value == pytest.approx(0.5)
    assert cohen_kappa(a, b, (0, 3), weights="quadratic").value == pytest.approx(0.5)
    # Observed grades {0, 1, 3}: re-indexing them as 0, 1, 2 would put 1 and 3 as far apart as
    # 0 and 1; on the declared scale they are 2/3 and 1/3 of it apart.
    a, b = [0, 1, 3, 3], [1, 0, 3, 0]
    # linear on 0..3: disagreements |0-1|=1, |1-0|=1, |3-0|=3 → D_o = (1+1+3)/3/4 = 5/12.
    # a marginals 0:.25 1:.25 3:.5, b: 0:.5 1:.25 3:.25;
    # D_e = Σ p_i q_j |i-j|/3 = (.25·.25·1 + .25·.25·3 + .25·.5·1 + .25·.25·2 + .5·.5·3
    #        + .5·.25·2)/3 = 0.5, so κ_lin = 1 − (5/12)/0.5 = 1/6.
    d_e = (0.0625 * 1 + 0.0625 * 3 + 0.125 * 1 + 0.0625 * 2 + 0.25 * 3 + 0.125 * 2) / 3
    expected = 1 - (5 / 12) / d_e
    assert cohen_kappa(a, b, (0, 3), weights="linear").value == pytest.approx(expected)


def test_ratings_matrix_round_trip_names():
    r = Ratings.from_matrix(KRIPPENDORFF_2011_C, (1, 5), annotators=["A", "B", "C", "D"])
    assert r.annotators == ("A", "B", "C", "D")
    assert r.counts().sum() == (~np.isnan(KRIPPENDORFF_2011_C)).sum()
