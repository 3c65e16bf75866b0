"""``ragjudge settled``: its JSON, its exit code, --runs, -m, --confidence, and a certain claim
worked out by hand on the P@3 project of ``settledkit`` (the bounds are in its docstring)."""

from __future__ import annotations

import json
import math

import pytest
from settledkit import cli, label_count, one_paragraph

#: what every comparison holds, and the types of its fields
COMPARISON = {"measure": str, "a": str, "b": str, "difference": float, "low": float, "high": float,
              "p_order": float, "status": str, "judge_more": int}
#: the fields a comparison holds besides (whether the bounds are exact, the queries averaged
#: over, the draws behind p_order)
EXTRA = {"exact", "n_queries", "samples"}
STATUSES = {"certain", "probable", "open", "tied"}


def settled(db: str, *options: str) -> tuple[int, dict]:
    code, out, err = cli("--db", db, "settled", "--format", "json", *options)
    assert code in (0, 1), err
    return code, json.loads(out)


def by_pair(report: dict) -> dict[tuple[str, str, str], dict]:
    return {(c["measure"], c["a"], c["b"]): c for c in report["comparisons"]}


def test_json_has_the_shape_scripts_read(p3_db):
    _, report = settled(p3_db, "-m", "P@3")
    assert isinstance(report["pool_pairs"], int) and isinstance(report["judged_pairs"], int)
    assert (report["pool_pairs"], report["judged_pairs"]) == (12, 9)  # 12 pool pairs, g f h open
    assert len(report["comparisons"]) == 3  # A-B, A-C, B-C
    for c in report["comparisons"]:
        assert set(c) == set(COMPARISON) | EXTRA
        for key, kind in COMPARISON.items():
            assert isinstance(c[key], kind), (key, c[key])
        assert c["status"] in STATUSES
        assert c["low"] - 1e-12 <= c["difference"] <= c["high"] + 1e-12
        assert 0.0 <= c["p_order"] <= 1.0 and c["judge_more"] >= 0
    # which uncertainty this is, said in the JSON: the unjudged pairs, not the queries
    assert "bootstrap" in report["note"] and "unjudged pool pairs" in report["note"]


def test_a_certain_claim_worked_out_by_hand(p3_db):
    """A - B = (3 - g + f - h) / 9 over the open grades g, f, h in {0, 1} (settledkit's
    docstring): now 3/9, at least 1/9, at most 4/9; B - C = (g - 2) / 9: now and at least -2/9,
    at most -1/9. A - C = (1 + f - h) / 9 reaches 0 (f = 0, h = 1): not certain."""
    _, report = settled(p3_db, "-m", "P@3")
    pairs = by_pair(report)
    ab, ac, bc = pairs["P@3", "A", "B"], pairs["P@3", "A", "C"], pairs["P@3", "B", "C"]
    assert (ab["difference"], ab["low"], ab["high"]) == pytest.approx((3 / 9, 1 / 9, 4 / 9))
    assert (ab["status"], ab["p_order"], ab["judge_more"]) == ("certain", 1.0, 0)
    assert (bc["difference"], bc["low"], bc["high"]) == pytest.approx((-2 / 9, -2 / 9, -1 / 9))
    assert bc["status"] == "certain"
    assert (ac["difference"], ac["low"], ac["high"]) == pytest.approx((1 / 9, 0.0, 2 / 9))
    assert ac["status"] in ("probable", "open") and 0.0 < ac["p_order"] < 1.0
    # f and h are the only pairs that move A - C: judging at most both makes it certain
    assert 1 <= ac["judge_more"] <= 2


def test_exit_code_says_whether_every_listed_comparison_is_settled(p3_db):
    code, report = settled(p3_db, "-m", "P@3")
    assert code == 1 and not report["settled"]  # A - C is open at 0.95
    assert by_pair(report)["P@3", "A", "C"]["status"] == "open"
    code, report = settled(p3_db, "-m", "P@3", "--runs", "A,B")
    assert code == 0 and report["settled"]
    code, report = settled(p3_db, "-m", "P@3", "--runs", "B,C")
    assert code == 0 and [c["status"] for c in report["comparisons"]] == ["certain"]
    # --quiet: nothing printed, the exit code alone
    assert cli("--db", p3_db, "settled", "-m", "P@3", "--quiet") == (1, "", "")
    assert cli("--db", p3_db, "settled", "-m", "P@3", "--runs", "A,B", "--quiet") == (0, "", "")


def test_judging_the_open_pairs_settles_everything(p3_db, tmp_path):
    labels = tmp_path / "more.qrels"
    labels.write_text("q1 0 g 0\nq2 0 f 1\nq2 0 h 0\n")
    assert cli("--db", p3_db, "import", "qrels", str(labels), "--annotator", "ref", "-q")[0] == 0
    code, report = settled(p3_db, "-m", "P@3")
    assert code == 0 and report["judged_pairs"] == report["pool_pairs"] == 12
    pairs = by_pair(report)
    # g=0, f=1, h=0: A - B = 4/9, A - C = 2/9, B - C = -2/9, each its own bounds
    for key, value in ((("P@3", "A", "B"), 4 / 9), (("P@3", "A", "C"), 2 / 9), (("P@3", "B", "C"), -2 / 9)):
        c = pairs[key]
        assert (c["difference"], c["low"], c["high"]) == pytest.approx((value, value, value))
        assert c["status"] == "certain"


def test_runs_limits_the_comparisons(p3_db):
    _, report = settled(p3_db, "-m", "P@3", "--runs", "C,A")
    assert report["runs"] == ["C", "A"]
    assert [(c["a"], c["b"]) for c in report["comparisons"]] == [("C", "A")]
    c = report["comparisons"][0]
    assert (c["difference"], c["low"], c["high"]) == pytest.approx((-1 / 9, -2 / 9, 0.0))


def test_measures_limit_the_comparisons_and_unsettleable_ones_are_listed(p3_db):
    _, report = settled(p3_db, "-m", "P@3", "-m", "P@1,RR")
    assert report["measures"] == ["P@3", "P@1", "RR"]
    assert {c["measure"] for c in report["comparisons"]} == {"P@3", "P@1", "RR"}
    # P@1 reads the top chunk only, all judged: a = 1 twice in q1, d = 1 vs e = 0, k = 1 vs m = 0
    p1 = by_pair(report)["P@1", "A", "B"]
    assert (p1["difference"], p1["low"], p1["high"]) == pytest.approx((2 / 3, 2 / 3, 2 / 3))
    _, report = settled(p3_db, "-m", "P@3", "-m", "Rprec")
    assert report["measures"] == ["P@3"]
    assert [s["measure"] for s in report["skipped"]] == ["Rprec"]
    assert "relevant" in report["skipped"][0]["why"]
    # the default: the scorecard's measures that can be settled
    _, report = settled(p3_db)
    assert {"P@10", "AP", "nDCG@10", "RR"} <= set(report["measures"])
    assert "Rprec" in {s["measure"] for s in report["skipped"]}


def test_confidence_moves_the_line_between_probable_and_open(p3_db):
    _, report = settled(p3_db, "-m", "P@3", "--runs", "A,C")
    p = report["comparisons"][0]["p_order"]
    assert 0.0 < p < 0.95
    code, report = settled(p3_db, "-m", "P@3", "--runs", "A,C", "--confidence", f"{p / 2:.6f}")
    assert (code, report["comparisons"][0]["status"], report["confidence"]) == (0, "probable", float(f"{p / 2:.6f}"))
    code, report = settled(p3_db, "-m", "P@3", "--runs", "A,C", "--confidence", f"{(1 + p) / 2:.6f}")
    assert (code, report["comparisons"][0]["status"]) == (1, "open")
    # a certain comparison stays certain at any confidence
    code, report = settled(p3_db, "-m", "P@3", "--runs", "A,B", "--confidence", "0.999999")
    assert (code, report["comparisons"][0]["status"]) == (0, "certain")


@pytest.mark.parametrize("options, words", [
    (["--confidence", "0"], "--confidence 0"),
    (["--confidence", "1"], "--confidence 1"),
    (["--confidence", "1.5"], "between 0 and 1"),
    (["--confidence", "-0.2"], "between 0 and 1"),
    (["--confidence", "nan"], "--confidence"),
    (["--confidence", "high"], "--confidence"),
    (["--runs", "A"], "--runs A: settling compares runs, two at least; name another (runs: A, B, C)"),
    (["--runs", "A,nope"], "'nope'"),
    (["--runs", " , "], "--runs"),
    (["-m", "Rprec"], "none of the measures can be settled"),
    (["-m", "P@x"], "P@x"),
    (["--pairs", "some"], "--pairs some"),
    (["--format", "xml"], "xml"),
    (["--llm", "nobody"], "--llm nobody"),
])
def test_bad_values_are_refused_in_one_paragraph_and_change_nothing(p3_db, options, words):
    before = label_count(p3_db)
    code, out, err = cli("--db", p3_db, "settled", *options)
    assert code == 2 and out == ""
    assert one_paragraph(err) and words in err, err
    assert label_count(p3_db) == before


def test_settled_records_nothing(p3_db):
    before = label_count(p3_db)
    settled(p3_db)
    assert label_count(p3_db) == before


def test_help_has_examples():
    code, out, _ = cli("settled", "--help")
    assert code == 0 and "Examples:" in out and "ragjudge settled --runs" in out
    assert "exit" in out.lower()


def test_a_project_without_two_runs_is_told(tmp_path):
    from settledkit import build

    db = build(str(tmp_path / "one.db"), {"A": {"q1": ["a"]}}, {("q1", "a"): 1})
    code, out, err = cli("--db", db, "settled")
    assert code == 2 and one_paragraph(err) and "two at least" in err


def test_p_order_is_null_in_json_when_no_draws(p3_db):
    _, report = settled(p3_db, "-m", "P@3", "--samples", "0")
    ac = by_pair(report)["P@3", "A", "C"]
    assert ac["p_order"] is None and ac["status"] == "open"
    assert not math.isnan(by_pair(report)["P@3", "A", "B"]["p_order"])
