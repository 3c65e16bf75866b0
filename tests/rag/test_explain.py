"""Explanations of the RAG measures, and AP vs RAGAS Context Precision side by side."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragjudge.metrics.rag import (
    FULL,
    PARTIAL,
    Citations,
    ItemSupport,
    explain_attribution,
    explain_context_precision,
    explain_items,
    nugget_recall,
)

SEED_RELEVANT = {"c1", "c3", "c5", "c8"}


def flags(ranked):  # noqa: ANN001, ANN201
    return [c in SEED_RELEVANT for c in ranked]


def test_context_precision_bad_order_seed000():
    # Seed 000 §4.1 prints 0.533 for [c2, c4, c1, c3, c5]; ERRATA: 0.3583 as AP (÷ 4 relevant),
    # 0.4778 as RAGAS Context Precision@5 (÷ 3 found).
    ranked = ["c2", "c4", "c1", "c3", "c5"]
    e = explain_context_precision(flags(ranked), 4, 5, ranked)
    assert e.value == pytest.approx(0.3583, abs=5e-5)
    text = "\n".join(e.lines())
    assert "1.4333 / 4 = 0.3583" in text
    assert "1.4333 / 3 = 0.4778" in text
    assert "1 relevant chunk(s) are not in the top 5" in text
    assert [row[3] for row in e.rows] == [None, None, pytest.approx(1 / 3), 0.5, 0.6]


def test_context_precision_good_order_seed000():
    ranked = ["c1", "c3", "c5", "c8", "c2"]
    e = explain_context_precision(flags(ranked), 4, 5, ranked)
    assert e.value == pytest.approx(1.0)
    assert "4.0000 / 4 = 1.0000" in "\n".join(e.lines())
    assert "same number" in e.steps[-1]


def test_context_precision_seed001_desert():
    # seed 001: only the first of three chunks is relevant -> Context Precision@3 = 1.0
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
