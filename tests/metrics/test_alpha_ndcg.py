"""alpha-nDCG over facets, against TREC's ndeval (through pyndeval) and hand-worked values.

A facet is a subtopic; a chunk linked to a facet covers it (the ``facets`` extra, as Coverage
reads it). pyndeval sorts a run by score and breaks ties by id ascending where ragjudge breaks
them descending, so the random runs have distinct scores; the greedy ideal ranking's own ties
(many: gains are sums of powers of 1 - alpha) are broken alike, by the larger chunk id.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragjudge.errors import UsageError
from ragjudge.metrics import Qrels, Run, evaluate
from ragjudge.metrics.rag import FULL, ItemLabels, ItemSupport

pyndeval = pytest.importorskip("pyndeval")

CHUNKS = ["a", "b", "c", "d1", "d10", "d2", "e", "ab", "B", "x"]


def _labels(facets):
    """ItemLabels from {query: [[chunks covering facet 0], [chunks covering facet 1], ...]}."""
    query_ids, names, items, chunks = [], [], [], []
    for q, covering in facets.items():
        for f, linked in enumerate(covering):
            for c in linked:
                items.append(len(query_ids))
                chunks.append(c)
            query_ids.append(q)
            names.append(f"{q}-f{f}")
    return ItemLabels(query_ids, names, support_items=items, support_chunks=chunks,
                      support_levels=[FULL] * len(items))


def _ours(facets, ranked, names, queries="judged"):
    judged = {q: {"x": 0} for q in set(facets) | set(ranked)}  # every query evaluated
    run = Run.from_ranked(ranked)
    return evaluate(Qrels.from_dict(judged), run, names, extras={"facets": _labels(facets)},
                    queries=queries).per_query()


def test_worked_example():
    # facets of q: f1, f2, f3. Chunk a covers f1 and f2, b covers f1, c covers f3, d nothing.
    # Run: b, d, a, c. alpha = 0.5.
    #   rank 1 b: f1 new -> 1;   rank 2 d: 0;   rank 3 a: f1 again 0.5 + f2 new 1 = 1.5;
    #   rank 4 c: f3 new -> 1.   DCG@4 = 1/1 + 0 + 1.5/2 + 1/log2(5) = 2.18068
    # Greedy ideal: a (2), then c (1) beats b (f1 again: 0.5), then b (0.5):
    #   IDCG@4 = 2 + 1/log2(3) + 0.5/2 = 2.88093;  alpha-nDCG@4 = 0.75693
    #   @2: DCG = 1, IDCG = 2 + 1/log2(3) = 2.63093 -> 0.38009
    facets = {"q": [["a", "b"], ["a"], ["c"]]}
    got = _ours(facets, {"q": ["b", "d", "a", "c"]},
                ["alpha_nDCG", "alpha_nDCG@4", "alpha_nDCG@2", "alpha_nDCG(alpha=1)@3",
                 "alpha_nDCG(alpha=0)@1"])["q"]
    dcg = 1 + 1.5 / 2 + 1 / math.log2(5)
    ideal = 2 + 1 / math.log2(3) + 0.5 / 2
    assert got["alpha_nDCG"] == pytest.approx(dcg / ideal)
    assert got["alpha_nDCG@4"] == pytest.approx(0.756935, abs=1e-6)
    assert got["alpha_nDCG@2"] == pytest.approx(1 / (2 + 1 / math.log2(3)))
    # alpha = 1: a facet counts once. Run: b 1, d 0, a 1 (f2; f1 already) -> 1 + 1/2;
    # ideal: a 2, c 1, b 0 -> 2 + 1/log2(3)
    assert got["alpha_nDCG(alpha=1)@3"] == pytest.approx(1.5 / (2 + 1 / math.log2(3)))
    # alpha = 0 at rank 1: b covers 1 facet, the ideal's a covers 2
    assert got["alpha_nDCG(alpha=0)@1"] == pytest.approx(0.5)


def test_ideal_takes_chunks_the_run_did_not_rank():
    # b and c cover a facet each; the run ranks only b: DCG@2 = 1, IDCG@2 = 1 + 1/log2(3)
    # (ties between b and c: the larger id, c, first - no matter for the value here)
    got = _ours({"q": [["b"], ["c"]]}, {"q": ["b", "zz"]}, ["alpha_nDCG@2"])["q"]
    assert got["alpha_nDCG@2"] == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_undefined_without_facets_and_zero_without_links():
    facets = {"linked": [["a"]], "unlinked": [[]]}
    got = _ours(facets, {"linked": ["a"], "unlinked": ["a"], "none": ["a"]}, ["alpha_nDCG@5"])
    assert got["linked"]["alpha_nDCG@5"] == 1.0
    assert got["unlinked"]["alpha_nDCG@5"] == 0.0  # facets, but nothing covers any
    assert math.isnan(got["none"]["alpha_nDCG@5"])  # no facets: left out of the mean


def test_a_query_the_run_misses_scores_zero():
    got = _ours({"q": [["a"]], "p": [["b"]]}, {"q": ["a"]}, ["alpha_nDCG@10"])
    assert got == {"p": {"alpha_nDCG@10": 0.0}, "q": {"alpha_nDCG@10": 1.0}}


def test_needs_labels_not_an_aligned_support():
    qrels = Qrels.from_dict({"q": {"a": 1}})
    aligned = ItemSupport(np.ones((1, 1), bool), [0], [1], [0], [FULL])
    with pytest.raises(UsageError, match="ItemLabels"):
        evaluate(qrels, Run.from_ranked({"q": ["a"]}), ["alpha_nDCG@5"],
                 extras={"facets": aligned})
    with pytest.raises(UsageError):
        evaluate(qrels, Run.from_ranked({"q": ["a"]}), ["alpha_nDCG(alpha=1.5)"],
                 extras={"facets": _labels({"q": [["a"]]})})


@st.composite
def diversity_collections(draw):
    facets, ranked = {}, {}
    for q in draw(st.lists(st.sampled_from(["1", "2", "3", "4"]), min_size=1, max_size=4,
                           unique=True)):
        n = draw(st.integers(0, 5))
        facets[q] = [draw(st.lists(st.sampled_from(CHUNKS), max_size=5, unique=True))
                     for _ in range(n)]
        if draw(st.booleans()) or n == 0:
            ranked[q] = draw(st.lists(st.sampled_from(CHUNKS + ["y", "z"]), min_size=1,
                                      max_size=12, unique=True))
    return facets, ranked


def _ndeval(facets, ranked, ks, alpha):
    qrels = [pyndeval.SubtopicQrel(q, f"{q}-{f}", c, 1)
             for q, covering in facets.items() for f, linked in enumerate(covering)
             for c in linked]
    qrels += [pyndeval.SubtopicQrel(q, f"{q}-0", "y", 0) for q in facets if facets[q]]
    run = [pyndeval.ScoredDoc(q, c, float(len(docs) - i))
           for q, docs in ranked.items() for i, c in enumerate(docs)]
    if not qrels or not run:
        return {}
    return pyndeval.ndeval(qrels, run, measures=[f"alpha-nDCG@{k}" for k in ks], alpha=alpha)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(diversity_collections(), st.sampled_from([0.5, 0.5, 0.3, 0.9, 1.0, 0.0]))
def test_matches_ndeval(data, alpha):
    facets, ranked = data
    ks = [1, 2, 3, 5, 10, 20]
    ref = _ndeval(facets, ranked, ks, alpha)
    names = [f"alpha_nDCG(alpha={alpha})@{k}" for k in ks]
    ours = _ours(facets, ranked, names)
    for q in ranked:
        linked = any(facets.get(q, []))
        if q in ref:  # ndeval knows the topics its qrels name: those with a judgment line
            for k, name in zip(ks, names):
                assert ours[q][name] == pytest.approx(ref[q][f"alpha-nDCG@{k}"], abs=1e-12), \
                    (q, k)
        elif facets.get(q):
            assert not linked and all(ours[q][n] == 0.0 for n in names)
        else:
            assert all(math.isnan(ours[q][n]) for n in names)


def test_matches_ndeval_on_a_larger_random_collection():
    rng = np.random.default_rng(11)
    chunks = [f"c{i}" for i in range(60)]
    facets = {f"t{q}": [list(rng.choice(chunks, rng.integers(0, 12), replace=False))
                        for _ in range(rng.integers(1, 8))] for q in range(40)}
    ranked = {q: list(rng.choice(chunks, 30, replace=False)) for q in facets}
    ks = [5, 10, 20]
    ref = _ndeval(facets, ranked, ks, 0.5)
    ours = _ours(facets, ranked, [f"alpha_nDCG@{k}" for k in ks])
    compared = 0
    for q, row in ref.items():
        for k in ks:
            assert ours[q][f"alpha_nDCG@{k}"] == pytest.approx(row[f"alpha-nDCG@{k}"], abs=1e-12)
            compared += 1
    assert compared == 3 * len(ref) and len(ref) >= 35


def test_explained_rank_by_rank_with_the_ideal():
    from ragjudge.metrics.ragexplain import explain_rag

    facets = {"q": [["a", "b"], ["a"], ["c"]]}  # the worked example above
    run = Run.from_ranked({"q": ["b", "d", "a", "c"]})
    explanation = explain_rag(Qrels.from_dict({"q": {"a": 1}}), run, "q", "alpha_nDCG@4",
                              extras={"facets": _labels(facets)})
    assert explanation.value == pytest.approx(0.756935, abs=1e-6)
    # rank 3 (a) finds q-f0 again (0.5) and q-f1 new (1): gain 1.5, discounted by log2(4)
    assert explanation.rows[1] == (3, "a", "q-f1", "q-f0", pytest.approx(1.5), pytest.approx(0.75))
    assert [r[0] for r in explanation.rows] == [1, 3, 4]  # rank 2 covers nothing
    text = explanation.render()
    assert "gains 2, 1, 0.5; alpha-DCG = 2.8809" in text
    assert "alpha-nDCG = 2.1807 / 2.8809 = 0.7569" in text
