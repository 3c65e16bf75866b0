"""Explanations of the RAG measures, and AP vs RAGAS Context Precision side by side."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragjudge.metrics.rag import FULL, PARTIAL, Citations, ItemSupport, nugget_recall
from ragjudge.metrics.ragexplain import explain_attribution, explain_context_precision, explain_items

SEED_RELEVANT = {"c1", "c3", "c5", "c8"}


def flags(ranked):
    return [c in SEED_RELEVANT for c in ranked]


def test_context_precision_bad_order():
    # [c2, c4, c1, c3, c5]: 0.3583 as AP (÷ 4 relevant),
    # 0.4778 as RAGAS Context Precision@5 (÷ 3 found).
    ranked = ["c2", "c4", "c1", "c3", "c5"]
    e = explain_context_precision(flags(ranked), 4, 5, ranked)
    assert e.value == pytest.approx(0.4778, abs=5e-5)
    assert explain_context_precision(flags(ranked), 4, 5, ranked, ap=True).value == \
        pytest.approx(0.3583, abs=5e-5)
    text = e.render()
    assert "1.4333 / 4 = 0.3583" in text
    assert "1.4333 / 3 = 0.4778" in text
    assert "1 relevant chunk(s) are not in the top 5" in text
    assert [row[3] for row in e.rows] == [None, None, pytest.approx(1 / 3), 0.5, 0.6]


def test_context_precision_good_order():
    ranked = ["c1", "c3", "c5", "c8", "c2"]
    e = explain_context_precision(flags(ranked), 4, 5, ranked)
    assert e.value == pytest.approx(1.0)
    assert "4.0000 / 4 = 1.0000" in "\n".join(e.lines())
    assert "same number" in e.steps[-1]


def test_context_precision_desert():
    # only the first of three chunks is relevant -> Context Precision@3 = 1.0
    e = explain_context_precision([True, False, False], 1, 3)
    assert "1.0000 / 1 = 1.0000" in e.steps[2]


def test_explain_items_nuggets():
    n = ItemSupport(np.ones((1, 3), bool), rows=[0, 0, 0], ranks=[2, 1, 6], items=[0, 1, 1],
                    levels=[FULL, PARTIAL, FULL], vital=[[True, True, False]], weight=[[1, 2, 1]],
                    names=[["height", "year", "visitors"]])
    chunks = [f"c{i}" for i in range(1, 11)]
    e = explain_items("NuggetRecall(all)@5", n, 0, 5, strict=False, chunk_ids=chunks, item="nugget")
    assert e.value == pytest.approx(nugget_recall(n, 5, strict=False, vital_only=False)[0])
    assert e.rows[0] == ("height", True, "2 (c2)", None, 1.0)
    assert e.rows[1] == ("year", True, "6 (c6)", "1 (c1)", 0.5)
    assert e.rows[2] == ("visitors", False, None, None, 0.0)
    assert "1.5 / 3 = 0.5000" in e.steps[-1]
    strict_vital = explain_items("NuggetRecall(strict,vital)@5", n, 0, 5, strict=True,
                                 vital_only=True, item="nugget")
    assert strict_vital.value == pytest.approx(0.5)
    assert strict_vital.rows[2][-1] == "not counted"
    weighted = explain_items("NuggetRecall(weighted)@5", n, 0, 5, strict=False, weighted=True)
    assert weighted.value == pytest.approx((1 + 2 * 0.5) / 4)


def test_explain_items_undefined():
    e = explain_items("Coverage@5", ItemSupport.empty(2), 1, 5, item="facet")
    assert math.isnan(e.value)
    assert "undefined" in e.steps[-1]


def test_explain_attribution():
    c = Citations(answered=[True, False], retrieved=[10, 10], rows=[0, 0, 0], ranks=[1, 3, 7],
                  cited_elsewhere=[1, 0])
    e = explain_attribution("Attribution@5", c, 0, 5, chunk_ids=[f"c{i}" for i in range(1, 11)])
    assert e.value == pytest.approx(2 / 5)
    assert e.rows == [(1, "c1", True), (3, "c3", True), (7, "c7", False)]
    assert "did not retrieve" in e.steps[0]
    assert math.isnan(explain_attribution("Attribution@5", c, 1, 5).value)


def test_explain_rag_agrees_with_evaluate():
    """Every explained measure's value equals the value evaluate gives for that query."""
    from ragjudge.metrics.data import Qrels, Run
    from ragjudge.metrics.evaluate import evaluate
    from ragjudge.metrics.rag import CitationLabels, EntityLabels, ItemLabels
    from ragjudge.metrics.ragexplain import explain_rag

    qrels = Qrels.from_dict({"q": {"c1": 2, "c3": 1, "c5": 2, "c8": 1}, "r": {"x": 1}})
    run = Run.from_ranked({"q": ["c2", "c4", "c1", "c3", "c5", "c6"], "r": ["x"]})
    extras = {
        "facets": ItemLabels(["q", "q", "r"], ["a", "b", "c"], support_items=[0, 1],
                             support_chunks=["c4", "c6"], support_levels=[FULL, FULL]),
        "nuggets": ItemLabels(["q", "q"], ["n1", "n2"], vital=[True, False], weight=[1, 3],
                              support_items=[0, 1], support_chunks=["c1", "c2"],
                              support_levels=[PARTIAL, FULL]),
        "claims": ItemLabels(["q"], ["cl"], support_items=[0], support_chunks=["c5"],
                             support_levels=[PARTIAL]),
        "entities": EntityLabels(["q"], ["Paris"], {"c3": "in paris", "c1": "", "c2": "",
                                                    "c4": "", "c5": "", "c6": ""}),
        "citations": CitationLabels(["q"], ["q", "q"], ["c1", "c9"]),
    }
    names = ["Coverage@5", "Coverage", "NuggetRecall(strict,vital)@4", "NuggetRecall(vital)@4",
             "NuggetRecall(weighted)@3", "NuggetRecall(all)@1", "ContextRecall@5",
             "ContextRecall(partial)@5", "EntityRecall@2", "EntityRecall@3", "Attribution@4",
             "ContextPrecision@5", "ContextPrecisionAP@5", "ContextPrecision@2"]
    values = evaluate(qrels, run, names, extras=extras).per_query()
    for name in names:
        for query in ("q", "r"):
            e = explain_rag(qrels, run, query, name, extras=extras)
            want = values[query][name]
            if math.isnan(want):
                assert math.isnan(e.value), (name, query)
            else:
                assert e.value == pytest.approx(want), (name, query)
            assert e.render().startswith(name)
            assert e.to_dict()["measure"] == name
    assert explain_rag(qrels, run, "q", "P@5", extras=extras) is None
    text = explain_rag(qrels, run, "q", "ContextPrecision@5").render()
    assert "1.4333 / 4 = 0.3583" in text and "1.4333 / 3 = 0.4778" in text
