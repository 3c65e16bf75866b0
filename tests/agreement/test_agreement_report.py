"""Undefined statistics, input checks, disputed units, binarised agreement and the JSON report."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from ragjudge.errors import InputError
from ragjudge.metrics.agreement import (
    Ratings,
    binarised_agreement,
    cohen_kappa,
    fleiss_kappa,
    grade_distribution,
    gwet_ac1,
    krippendorff_alpha,
    percent_agreement,
    relevant_overlap,
)
from ragjudge.metrics.agreement_report import agreement_report, disputed_units

nan = np.nan


# ----------------------------------------------------------------- undefined, never 1.0


def test_every_rating_the_same_grade_is_undefined_not_one():
    m = np.ones((5, 3))
    for stat in (
        krippendorff_alpha(m, "nominal", scale=(0, 3)),
        krippendorff_alpha(m, "ordinal", scale=(0, 3)),
        krippendorff_alpha(m, "interval", scale=(0, 3)),
        fleiss_kappa(m, scale=(0, 3)),
        cohen_kappa(m[:, 0], m[:, 1], (0, 3)),
        cohen_kappa(m[:, 0], m[:, 1], (0, 3), weights="quadratic"),
    ):
        assert stat.value is None
        assert "0/0" in stat.reason
    # percent agreement and AC1 are defined: p_e of AC1 is 0 when one grade has everything
    assert percent_agreement(m, scale=(0, 3)).value == 1.0
    assert gwet_ac1(m, scale=(0, 3)).value == 1.0


def test_prevalence_paradox_kappa_low_ac1_high():
    # 48 of 50 units "not relevant" by both, one disagreement each way: κ ≈ −0.02, AC1 ≈ 0.96.
    a = np.array([0] * 48 + [1, 0], float)
    b = np.array([0] * 48 + [0, 1], float)
    m = np.column_stack([a, b])
    assert cohen_kappa(a, b, (0, 1)).value < 0
    # by hand: p_a = 0.96, π_1 = 0.02, p_e = 2·0.02·0.98 = 0.0392, AC1 = 0.9208/0.9608
    assert gwet_ac1(m, scale=(0, 1)).value == pytest.approx((0.96 - 0.0392) / (1 - 0.0392))


def test_no_pairable_units_is_undefined():
    m = np.array([[1, nan], [nan, 2], [0, nan]])
    assert krippendorff_alpha(m, scale=(0, 2)).reason == "no unit has two or more ratings"
    assert gwet_ac1(m, scale=(0, 2)).value is None
    assert percent_agreement(m, scale=(0, 2)).value is None
    assert "no unit in common" in cohen_kappa(m[:, 0], m[:, 1], (0, 2)).reason
    assert fleiss_kappa(m, scale=(0, 2)).reason.startswith("not applicable")


def test_fleiss_not_applicable_when_rating_counts_differ():
    m = np.array([[1, 1, nan], [0, 1, 1], [2, 2, 2]])
    stat = fleiss_kappa(m, scale=(0, 2))
    assert stat.value is None
    assert "between 2 and 3 ratings" in stat.reason


def test_fleiss_ignores_units_nobody_rated():
    m = np.array([[1, 1], [0, 1], [nan, nan], [2, 0]])
    assert fleiss_kappa(m, scale=(0, 2)).value == pytest.approx(
        fleiss_kappa(m[[0, 1, 3]], scale=(0, 2)).value
    )


def test_empty_matrix_gives_undefined_everywhere():
    report = agreement_report(np.empty((0, 2)), scale=(0, 1))
    d = report.to_dict()
    assert d["units"] == 0
    assert d["krippendorff_alpha"] == {"nominal": None, "ordinal": None, "interval": None}
    assert d["fleiss_kappa"] is None and "fleiss_kappa" in d["undefined"]


def test_relevant_overlap_voorhees():
    # Both rated units 0..5. A's relevant (≥2): {0, 1, 2}; B's: {1, 2, 3, 4} → 2/5.
    # Unit 6 was rated by A only and does not count.
    a = [2, 3, 2, 0, 1, 0, 3]
    b = [0, 2, 3, 2, 2, 1, nan]
    assert relevant_overlap(a, b, 2).value == pytest.approx(2 / 5)
    assert relevant_overlap([0, 0], [1, 0], 2).value is None


# ----------------------------------------------------------------- input checks


def test_grade_off_the_scale_names_the_field():
    with pytest.raises(InputError) as err:
        Ratings.from_matrix([[0, 4]], (0, 3), source="labels.csv")
    assert "field 'grade'" in str(err.value) and "labels.csv" in str(err.value)
    with pytest.raises(InputError):
        Ratings.from_matrix([[0, 1.5]], (0, 3))
    with pytest.raises(InputError):
        Ratings.from_matrix([[0, 1]], (2, 2))


def test_duplicate_rating_rejected_or_last_kept():
    units = ["u1", "u1", "u2"]
    annotators = ["ann", "ann", "bob"]
    with pytest.raises(InputError, match="more than once"):
        Ratings.from_long(units, annotators, [1, 2, 0], (0, 2))
    r = Ratings.from_long(units, annotators, [1, 2, 0], (0, 2), duplicates="last")
    assert r.matrix[0, 0] == 2


def test_units_from_query_and_chunk_columns():
    queries = ["q1", "q1", "q2", "q1"]
    chunks = ["c1", "c2", "c1", "c1"]
    r = Ratings.from_long((queries, chunks), ["a", "a", "a", "b"], [1, 0, 2, 1], (0, 2))
    assert r.units == (("q1", "c1"), ("q1", "c2"), ("q2", "c1"))
    assert r.annotators == ("a", "b")
    np.testing.assert_array_equal(r.matrix, [[1, 1], [0, nan], [2, nan]])


def test_grade_distribution_counts_every_level_of_the_scale():
    m = np.array([[0, 3], [0, nan], [2, 3]])
    dist = grade_distribution(Ratings.from_matrix(m, (0, 3), annotators=["a", "b"]))
    assert dist == {"a": {0: 2, 1: 0, 2: 1, 3: 0}, "b": {0: 0, 1: 0, 2: 0, 3: 2}}


# ----------------------------------------------------------------- disputes, thresholds, report


def test_disputed_units_sorted_by_spread_then_ratings():
    m = np.array(
        [
            [1, 1, 1],  # no dispute
            [0, 1, nan],  # spread 1, 2 ratings
            [0, 3, nan],  # spread 3, 2 ratings
            [0, 1, 1],  # spread 1, 3 ratings
            [3, 0, 2],  # spread 3, 3 ratings
            [2, nan, nan],  # single rating
        ]
    )
    r = Ratings.from_matrix(m, (0, 3), annotators=["a", "b", "c"], units=list("UVWXYZ"))
    got = [(d.unit, d.spread, d.n_ratings) for d in disputed_units(r)]
    assert got == [("Y", 3, 3), ("W", 3, 2), ("X", 1, 3), ("V", 1, 2)]
    assert disputed_units(r)[1].grades == {"a": 0, "b": 3}


def test_binarised_agreement_at_every_threshold():
    m = np.array([[0, 1], [2, 3], [3, 1], [1, 1]])
    r = Ratings.from_matrix(m, (0, 3), annotators=["a", "b"])
    out = binarised_agreement(r)
    assert [t.threshold for t in out] == [1, 2, 3]
    # t=1: a → 0,1,1,1 b → 1,1,1,1 : 3/4 agree; t=2: a 0,1,1,0 b 0,1,0,0 : 3/4;
    # t=3: a 0,0,1,0 b 0,1,0,0 : 2/4.
    assert [t.percent_agreement.value for t in out] == [0.75, 0.75, 0.5]
    # overlaps: t=1 {1,2,3} vs {0,1,2,3} → 3/4; t=2 {1,2} vs {1} → 1/2; t=3 {2} vs {1} → 0
    assert [t.pairwise[0]["overlap"].value for t in out] == [0.75, 0.5, 0.0]
    # t=1: b calls everything relevant, so p_e = P(a relevant) = 0.75 = p_o and κ = 0
    # (defined: 1 − p_e is not zero).
    assert out[0].pairwise[0]["cohen_kappa"].value == pytest.approx(0.0)


def test_report_serialises_to_the_json_contract():
    m = np.array([[0, 0, 1], [2, 2, 2], [3, 1, nan], [1, nan, nan]])
    report = agreement_report(m, scale=(0, 3), annotators=["ann", "bob", "cy"])
    d = json.loads(json.dumps(report.to_dict()))
    for key in (
        "units", "annotators", "percent_agreement", "krippendorff_alpha", "fleiss_kappa",
        "gwet_ac1", "pairwise", "undefined",
    ):
        assert key in d
    assert d["units"] == 4
    assert d["annotators"] == ["ann", "bob", "cy"]
    assert set(d["krippendorff_alpha"]) == {"nominal", "ordinal", "interval"}
    assert d["fleiss_kappa"] is None
    assert "between" in d["undefined"]["fleiss_kappa"]
    pair = d["pairwise"][0]
    assert {"a", "b", "n", "percent_agreement", "cohen_kappa", "cohen_kappa_linear",
            "cohen_kappa_quadratic", "confusion"} <= set(pair)
    assert (pair["a"], pair["b"], pair["n"]) == ("ann", "bob", 3)
    assert pair["confusion"] == [[1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0]]
    assert pair["percent_agreement"] == pytest.approx(2 / 3)
    # bob and cy share units 0 and 1 with grades (0,1), (2,2)
    bob_cy = d["pairwise"][2]
    assert (bob_cy["a"], bob_cy["b"], bob_cy["n"]) == ("bob", "cy", 2)
    assert d["disputed"][0]["unit"] == 2 and d["disputed"][0]["spread"] == 2


def test_report_lists_undefined_pairwise_kappa_with_reason():
    m = np.array([[1, 1], [1, 1]])
    d = agreement_report(m, scale=(0, 2), annotators=["a", "b"]).to_dict()
    assert d["pairwise"][0]["cohen_kappa"] is None
    assert "0/0" in d["undefined"]["pairwise[a,b].cohen_kappa"]
    assert d["percent_agreement"] == 1.0


def test_metrics_module_imports_numpy_only():
    code = (
        "import sys, ragjudge.metrics.agreement, ragjudge.metrics.agreement_report;"
        "bad = {'textual', 'sqlalchemy', 'pydantic'} & set(sys.modules);"
        "print(sorted(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_no_annotators_at_all():
    d = agreement_report(np.empty((0, 0)), scale=(0, 3)).to_dict()
    assert d["units"] == 0 and d["pairwise"] == [] and d["disputed"] == []
    assert d["gwet_ac1"] is None and d["undefined"]["gwet_ac1"]


def test_last_duplicate_wins_whatever_the_order():
    units = ["u1"] * 5 + ["u2"]
    annotators = ["ann"] * 5 + ["ann"]
    grades = [0, 3, 1, 2, 1, 0]
    r = Ratings.from_long(units, annotators, grades, (0, 3), duplicates="last")
    np.testing.assert_array_equal(r.matrix[:, 0], [1, 0])


def test_off_scale_message_names_the_annotator_and_pair():
    with pytest.raises(InputError, match="annotator bob to q1/c2 is not a whole grade of the scale 0-1"):
        Ratings.from_long((["q1", "q1"], ["c1", "c2"]), ["ann", "bob"], [1, 3], (0, 1))


@pytest.mark.parametrize("nul", [False, True])
def test_units_and_annotators_come_in_the_order_python_sorts_them(nul):
    """Ids are coded as UTF-8 bytes for speed; their order and round trip are Python's own,
    non-ASCII text included; with an id ending in NUL (which a byte array would drop) Python's
    comparisons are used; ids that are not text keep their type."""
    import random as _random

    from ragjudge.metrics import agreement as ag
    from ragjudge.metrics.agreement import Ratings

    rng = _random.Random(5)
    alphabet = ["a", "z", "Z", "é", "中", "ÿ", "0", " "] + (["\x00"] if nul else [])
    queries = ["".join(rng.choices(alphabet, k=rng.randint(1, 3))) for _ in range(60)]
    chunks = ["".join(rng.choices(alphabet, k=rng.randint(1, 3))) for _ in range(60)]
    names = rng.choices(["bo", "ana", "Émile", "zoë"], k=60)
    grades = [rng.randint(0, 3) for _ in range(60)]
    assert any(q.endswith("\x00") for q in queries + chunks) == nul

    def objects(values: list) -> np.ndarray:  # as the project's label readers give them
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out

    r = Ratings.from_long((objects(queries), objects(chunks)), objects(names), grades, (0, 3),
                          duplicates="last")
    assert list(r.units) == sorted(set(zip(queries, chunks)))
    assert list(r.annotators) == sorted(set(names))
    for q, c, a in zip(queries, chunks, names):  # the last grade of each stands
        last = [x for x in zip(queries, chunks, names, grades) if x[:3] == (q, c, a)][-1][3]
        assert r.matrix[r.units.index((q, c)), r.annotators.index(a)] == last
    keys, inverse = ag._distinct(objects(queries))
    assert keys.tolist() == sorted(set(queries)) and [keys[i] for i in inverse] == queries
    numbers = Ratings.from_long(([3, 1, 2], [1, 1, 1]), [2, 1, 2], [0, 1, 2], (0, 3))
    assert list(numbers.units) == [(1, 1), (2, 1), (3, 1)] and list(numbers.annotators) == [1, 2]
    assert all(type(x) is int for unit in numbers.units for x in unit)
