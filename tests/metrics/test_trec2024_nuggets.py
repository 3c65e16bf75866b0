"""The TREC 2024 RAG track's nugget scores (Pradeep et al. 2024) for chunks (NuggetRecall) and
generated answers (AnswerNuggets), against the track's own scorer (nuggetizer's
``calculate_nugget_scores``) and hand-worked values.

nuggetizer gives All, All strict, Vital and Vital strict; the weighted score W (vital 1, okay
0.5) follows from its All and Vital scores and the nugget counts:
``W = (V |V| + 0.5 (A |A| - V |V|)) / (|V| + 0.5 |okay|)``, as the sums of scores they hold.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragjudge.metrics import Qrels, Run, evaluate
from ragjudge.metrics.answers import AnswerLabels, explain_answer
from ragjudge.metrics.rag import FULL, PARTIAL, ItemLabels, ItemSupport, item_weights

nuggetizer_metrics = pytest.importorskip("nuggetizer.core.metrics")

ASSIGNMENT = {2: "support", 1: "partial_support", 0: "not_support", -1: "not_support"}
NAMES = {"A": "(all)", "A_strict": "(strict,all)", "V": "(vital)", "V_strict": "(strict,vital)",
         "W": "(weighted)", "W_strict": "(strict,weighted)"}


def _reference(vital, levels):
    """TREC 2024's six scores of one response from the track's scorer (W from A and V)."""
    nuggets = [{"importance": "vital" if v else "okay", "assignment": ASSIGNMENT[lv]}
               for v, lv in zip(vital, levels)]
    s = nuggetizer_metrics.calculate_nugget_scores("q", nuggets)
    n_vital = sum(vital)
    n_okay = len(vital) - n_vital
    out = {"A": s.all_score, "A_strict": s.strict_all_score}
    if n_vital:
        out |= {"V": s.vital_score, "V_strict": s.strict_vital_score}
    for key, a, v in (("W", s.all_score, s.vital_score),
                      ("W_strict", s.strict_all_score, s.strict_vital_score)):
        okay_sum = a * len(vital) - v * n_vital
        out[key] = (v * n_vital + 0.5 * okay_sum) / (n_vital + 0.5 * n_okay)
    return out


# -- generated answers --------------------------------------------------------------------

def test_answer_scores_worked_example():
    # nuggets: vital full, vital partial, okay full, okay none
    # A = (1 + 0.5 + 1 + 0) / 4 = 0.625;  A strict = 2 / 4;  V = 1.5 / 2;  V strict = 1 / 2
    # W = (1x1 + 1x0.5 + 0.5x1 + 0.5x0) / (1 + 1 + 0.5 + 0.5) = 2 / 3
    # W strict = (1 + 0 + 0.5 + 0) / 3 = 0.5
    labels = AnswerLabels(["q"], ["q"] * 4, ["v1", "v2", "o1", "o2"],
                          [True, True, False, False], [2, 1, 2, 0])
    got = _answer_scores(labels)["q"]
    assert got == pytest.approx({"A": 0.625, "A_strict": 0.5, "V": 0.75, "V_strict": 0.5,
                                 "W": 2 / 3, "W_strict": 0.5})


def test_an_explicit_weight_wins_over_importance():
    # the first okay nugget is given weight 3: W = (1 + 0.5 + 3x1 + 0.5x0) / (1 + 1 + 3 + 0.5)
    labels = AnswerLabels(["q"], ["q"] * 4, ["v1", "v2", "o1", "o2"],
                          [True, True, False, False], [2, 1, 2, 0],
                          nugget_weights=[None, float("nan"), 3.0, None])
    got = _answer_scores(labels)["q"]
    assert got["W"] == pytest.approx(4.5 / 5.5)
    assert got["A"] == pytest.approx(0.625)  # weights change the weighted score only


def test_weighted_answer_explanation_shows_each_weight():
    labels = AnswerLabels(["q"], ["q"] * 2, ["v", "o"], [True, False], [1, 2])
    support = labels.align(["q"])
    from ragjudge.metrics.registry import parse_measure

    text = explain_answer(parse_measure("AnswerNuggets(weighted)"), support, 0).render()
    assert "weight" in text.splitlines()[1]
    # W = (1 x 0.5 + 0.5 x 1) / (1 + 0.5) = 1 / 1.5
    assert "= 1 / 1.5 = 0.6667" in text


def _answer_scores(labels, queries=("q",)):
    qrels = Qrels.from_dict({q: {"x": 1} for q in queries})
    names = [f"AnswerNuggets{v}" for v in NAMES.values()]
    result = evaluate(qrels, Run.from_ranked({q: ["x"] for q in queries}), names,
                      extras={"answers": labels}).per_query()
    return {q: {key: row[f"AnswerNuggets{v}"] for key, v in NAMES.items()}
            for q, row in result.items()}


@st.composite
def answered_nuggets(draw):
    queries = draw(st.lists(st.sampled_from(["q1", "q2", "q3", "q4"]), min_size=1, unique=True))
    ids, vital, levels = [], [], []
    for q in queries:
        for _ in range(draw(st.integers(1, 7))):
            ids.append(q)
            vital.append(draw(st.booleans()))
            levels.append(draw(st.sampled_from([-1, 0, 1, 2])))
    return queries, ids, vital, levels


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answered_nuggets())
def test_answer_scores_match_the_track_scorer(data):
    queries, ids, vital, levels = data
    labels = AnswerLabels(queries, ids, [f"n{i}" for i in range(len(ids))], vital, levels)
    got = _answer_scores(labels, queries)
    for q in queries:
        mine = [i for i, x in enumerate(ids) if x == q]
        ref = _reference([vital[i] for i in mine], [levels[i] for i in mine])
        if all(levels[i] < 0 for i in mine):  # nobody judged this answer yet: undefined
            assert all(math.isnan(v) for v in got[q].values())
            continue
        for key in NAMES:
            if key in ref:
                assert got[q][key] == pytest.approx(ref[key], abs=1e-12), (q, key)
            else:  # no vital nugget: undefined (the track's scorer says 0)
                assert math.isnan(got[q][key])


# -- retrieved chunks ---------------------------------------------------------------------

def test_chunk_scores_worked_example():
    # nuggets of q: n0 vital, n1 vital, n2 okay, n3 okay. Ranking: a, b, c.
    # a supports n0 partially, b n0 fully, c n2 fully; n1 partially by a; n3 by nothing.
    # @1: n0 0.5, n1 0.5, n2 0, n3 0 -> W = (0.5 + 0.5) / 3 = 1/3, W strict = 0
    # @3: n0 1, n1 0.5, n2 1, n3 0  -> W = (1 + 0.5 + 0.5) / 3 = 2/3, W strict = 1.5 / 3
    labels = ItemLabels(["q"] * 4, ["n0", "n1", "n2", "n3"], [True, True, False, False], None,
                        support_items=[0, 0, 2, 1], support_chunks=["a", "b", "c", "a"],
                        support_levels=[PARTIAL, FULL, FULL, PARTIAL])
    run = Run.from_ranked({"q": ["a", "b", "c"]})
    names = ["NuggetRecall(weighted)@1", "NuggetRecall(strict,weighted)@1",
             "NuggetRecall(weighted)@3", "NuggetRecall(strict,weighted)@3", "NuggetRecall@3"]
    got = evaluate(Qrels.from_dict({"q": {"a": 1}}), run, names,
                   extras={"nuggets": labels}).per_query()["q"]
    assert got["NuggetRecall(weighted)@1"] == pytest.approx(1 / 3)
    assert got["NuggetRecall(strict,weighted)@1"] == 0.0
    assert got["NuggetRecall(weighted)@3"] == pytest.approx(2 / 3)
    assert got["NuggetRecall(strict,weighted)@3"] == pytest.approx(0.5)
    assert got["NuggetRecall@3"] == pytest.approx(2.5 / 4)  # unweighted: All


def test_weight_order_explicit_then_importance_then_one():
    valid = [[True, True, True, False]]
    weights = item_weights(*map(_arr, (valid, [[True, False, False, False]],
                                       [[float("nan"), float("nan"), 2.0, 7.0]])))
    assert weights.tolist() == [[1.0, 0.5, 2.0, 0.0]]  # vital, okay, explicit, padding
    assert item_weights(_arr(valid), None, None).tolist() == [[1.0, 1.0, 1.0, 0.0]]
    with pytest.raises(ValueError):
        ItemSupport(_arr([[True]]), weight=[[-1.0]])


def _arr(x):
    import numpy as np

    return np.asarray(x)


@st.composite
def ranked_nuggets(draw):
    chunks = ["a", "b", "c", "d", "e", "f"]
    queries = draw(st.lists(st.sampled_from(["q1", "q2", "q3"]), min_size=1, unique=True))
    qids, vital, items, linked, levels, ranked = [], [], [], [], [], {}
    for q in queries:
        for _ in range(draw(st.integers(1, 6))):
            for c in draw(st.lists(st.sampled_from(chunks), max_size=3, unique=True)):
                items.append(len(qids))
                linked.append(c)
                levels.append(draw(st.sampled_from([PARTIAL, FULL])))
            qids.append(q)
            vital.append(draw(st.booleans()))
        ranked[q] = draw(st.lists(st.sampled_from(chunks + ["x"]), min_size=1, unique=True))
    return qids, vital, items, linked, levels, ranked


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ranked_nuggets(), st.sampled_from([1, 2, 3, 10]))
def test_chunk_scores_match_the_track_scorer(data, k):
    qids, vital, items, linked, levels, ranked = data
    labels = ItemLabels(qids, None, vital, None, items, linked, levels)
    names = {key: f"NuggetRecall{v}@{k}" for key, v in NAMES.items()}
    got = evaluate(Qrels.from_dict({q: {"x": 0} for q in ranked}), Run.from_ranked(ranked),
                   list(names.values()), extras={"nuggets": labels}).per_query()
    for q, top in ranked.items():
        mine = [i for i, x in enumerate(qids) if x == q]
        # a nugget's support at k: the best level among the top-k chunks linked to it
        best = [max([lv for it, c, lv in zip(items, linked, levels) if it == i and c in top[:k]],
                    default=0) for i in mine]
        ref = _reference([vital[i] for i in mine], best)
        for key, name in names.items():
            if key in ref:
                assert got[q][name] == pytest.approx(ref[key], abs=1e-12), (q, name)
            else:
                assert math.isnan(got[q][name])


def test_weighted_chunk_explanation_shows_importance_weights():
    from ragjudge.metrics.ragexplain import explain_rag

    # n0 vital fully supported by a, n1 okay partially by b: W = (1 + 0.5 x 0.5) / 1.5
    labels = ItemLabels(["q"] * 2, ["n0", "n1"], [True, False], None, support_items=[0, 1],
                        support_chunks=["a", "b"], support_levels=[FULL, PARTIAL])
    explanation = explain_rag(Qrels.from_dict({"q": {"a": 1}}), Run.from_ranked({"q": ["a", "b"]}),
                              "q", "NuggetRecall(weighted)@2", extras={"nuggets": labels})
    assert explanation.value == pytest.approx(1.25 / 1.5)
    weight = explanation.columns.index("weight")
    assert [row[weight] for row in explanation.rows] == [1.0, 0.5]
    assert "= 1.25 / 1.5 = 0.8333" in explanation.render()
