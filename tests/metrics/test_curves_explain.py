"""Metric@K curves, the P-R curve and step-by-step explanations (the ten-chunk example: relevant c1, c3, c5, c8 with grades 2, 1, 2, 1)."""

from __future__ import annotations

import pytest

from ragjudge.errors import UsageError
from ragjudge.metrics import Qrels, Run, evaluate, explain, metric_at_k, pr_curve

GRADES = {"c1": 2, "c2": 0, "c3": 1, "c4": 0, "c5": 2, "c6": 0, "c7": 0, "c8": 1, "c9": 0,
          "c10": 0}
QRELS = Qrels.from_dict({"q": GRADES})
RUN = Run.from_ranked({"q": [f"c{i}" for i in range(1, 11)]})


def test_metric_at_k_table_of_the_example():
    # P@K and R@K by hand; nDCG@K as the definition gives it
    p = metric_at_k(QRELS, RUN, "P", [1, 3, 5, 8, 10])
    r = metric_at_k(QRELS, RUN, "R", [1, 3, 5, 8, 10])
    n = metric_at_k(QRELS, RUN, "nDCG@10")
    assert p.y.tolist() == pytest.approx([1.0, 2 / 3, 0.6, 0.5, 0.4])
    assert r.y.tolist() == pytest.approx([0.25, 0.5, 0.75, 1.0, 1.0])
    assert n.x.tolist() == list(range(1, 11))
    # nDCG@1, @3, @5, @8: 1.0, 0.6646, 0.7808, 0.8561 (some guides print 0.613, 0.686, 0.793, 0.870)
    assert [n.y[k - 1] for k in (1, 3, 5, 8, 10)] == pytest.approx(
        [1.0, 0.6646, 0.7808, 0.8561, 0.8561], abs=1e-4)
    assert n.rows()[0] == {"k": 1, "value": 1.0}


def test_curve_points_equal_evaluate():
    curve = metric_at_k(QRELS, RUN, "AP(rel=2)", range(1, 6))
    for k, value in zip(curve.x.tolist(), curve.y.tolist()):
        assert value == evaluate(QRELS, RUN, [f"AP(rel=2)@{k}"])[f"AP(rel=2)@{k}"]


def test_curve_needs_a_rank_cutoff_measure():
    with pytest.raises(UsageError, match="no rank cutoff"):
        metric_at_k(QRELS, RUN, "bpref")


def test_pr_curve_and_auc():
    # relevant at ranks 1, 3, 5, 8 (R = 4): precisions 1, 2/3, 3/5, 1/2
    curve = pr_curve(QRELS, RUN)
    expected = [1, 1, 1, 2 / 3, 2 / 3, 2 / 3, 0.6, 0.6, 0.5, 0.5, 0.5]
    assert curve.y.tolist() == pytest.approx(expected)
    auc = sum((a + b) / 2 * 0.1 for a, b in zip(expected[:-1], expected[1:]))
    assert curve.area == pytest.approx(auc)
    assert evaluate(QRELS, RUN, ["AUC_PR"])["AUC_PR"] == pytest.approx(auc)


def test_explain_ap_steps():
    e = explain(QRELS, RUN, "q", "AP")
    hits = [(s.rank, round(s.precision, 4)) for s in e.steps if s.relevant]
    assert hits == [(1, 1.0), (3, 0.6667), (5, 0.6), (8, 0.5)]
    assert e.steps[7].running == pytest.approx(1 + 2 / 3 + 0.6 + 0.5)
    assert e.denominator == 4
    # (1/1 + 2/3 + 3/5 + 4/8) / 4 = 0.6917
    assert e.value == pytest.approx(0.6917, abs=1e-4)
    text = e.render()
    assert "AP = 2.7667 / 4.0000 (R) = 0.6917" in text
    assert "c8" in text


def test_explain_ndcg_shows_the_ideal_ranking():
    e = explain(QRELS, RUN, "q", "nDCG@5")
    assert [g for _, g, _ in e.ideal] == [2, 2, 1, 1, 0]
    assert e.ideal_total == pytest.approx(4.1925, abs=1e-4)  # 2 + 2/log2 3 + 1/2 + 1/log2 5
    assert e.numerator == pytest.approx(3.274, abs=1e-3)
    assert "Ideal ranking" in e.render()


@pytest.mark.parametrize("measure", ["P@5", "R@3", "RR", "Rprec", "ContextPrecision@5",
                                     "ERR_linear@5", "ERR@5", "DCG@3", "Judged@10", "bpref"])
def test_explain_value_is_the_kernel_value(measure):
    e = explain(QRELS, RUN, "q", measure)
    assert e.value == evaluate(QRELS, RUN, [measure])[measure]
    if e.numerator is not None:
        assert e.numerator / e.denominator == pytest.approx(e.value)
    assert e.render().strip().endswith(f"{e.value:.4f}")


def test_explain_unknown_query():
    with pytest.raises(UsageError, match="no judgments"):
        explain(QRELS, RUN, "nope", "AP")
