"""trec_eval's counts and set measures (against pytrec_eval) and rank-biased precision with its
residual (against ir_measures' cwl_eval provider, and hand-worked values).

Random collections as in test_vs_pytrec_eval: scores in multiples of 1/8 (exact in float32,
often tied), unjudged chunks, negative and zero grades.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragjudge.errors import UsageError
from ragjudge.metrics import Qrels, Run, evaluate
from ragjudge.metrics.registry import parse_measure

pytrec_eval = pytest.importorskip("pytrec_eval")

DOCS = [f"d{i}" for i in range(12)] + ["D", "d", "dd", "a10", "a9"]
QUERIES = ["q1", "q2", "q3", "q10", "q4"]


@st.composite
def collections(draw, distinct_scores=False):
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=10, unique=True))
        grades = {d: draw(st.integers(-1, 3)) for d in docs}
        if all(g < 0 for g in grades.values()):
            grades[docs[0]] = 0  # pytrec_eval 0.5 can hang on a query judged only negatively
        qrels[q] = grades
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=0, max_size=14, unique=True))
        if docs:
            run[q] = ({d: float(len(docs) - i) for i, d in enumerate(docs)} if distinct_scores
                      else {d: draw(st.integers(0, 32)) / 8.0 for d in docs})
    return qrels, run


# ragjudge name -> trec_eval name (and its measure argument for pytrec_eval)
SET_PAIRS = [
    ("num_ret", "num_ret"), ("NumRet", "num_ret"), ("num_rel", "num_rel"), ("NumRel", "num_rel"),
    ("num_rel_ret", "num_rel_ret"), ("NumRelRet", "num_rel_ret"), ("NumRet(rel=2)", None),
    ("set_P", "set_P"), ("SetP", "set_P"), ("SetP(relative)", "set_relative_P"),
    ("SetRelP", "set_relative_P"), ("set_relative_P", "set_relative_P"),
    ("set_recall", "set_recall"), ("SetR", "set_recall"), ("set_F", "set_F"), ("SetF", "set_F"),
]


def _trec(qrels, run, measures, threshold):
    return pytrec_eval.RelevanceEvaluator(qrels, set(measures),
                                          relevance_level=threshold).evaluate(run)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections(), st.sampled_from([1, 1, 2, 3]))
def test_counts_and_set_measures_match_trec_eval(data, threshold):
    qrels, run = data
    ref = _trec(qrels, run, {t for _, t in SET_PAIRS if t}, threshold)
    # set_F's parameter is trec_eval's x = b^2: set_F.4 is SetF(beta=2); NumRet(rel=2) is
    # num_rel_ret at relevance level 2 whatever the evaluation's threshold
    f4 = _trec(qrels, run, {"set_F.4"}, threshold)
    at2 = _trec(qrels, run, {"num_rel_ret"}, 2)
    names = [ours for ours, _ in SET_PAIRS] + ["SetF(beta=2)"]
    ours = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), names, threshold=threshold,
                    queries="run").per_query()
    assert sorted(ours) == sorted(ref)
    for qid, row in ref.items():
        for mine, theirs in SET_PAIRS:
            expected = at2[qid]["num_rel_ret"] if theirs is None else row[theirs]
            assert math.isclose(ours[qid][mine], expected, rel_tol=0, abs_tol=1e-12), \
                (qid, mine, ours[qid][mine], expected)
        assert math.isclose(ours[qid]["SetF(beta=2)"], f4[qid]["set_F"], abs_tol=1e-12)


def test_counts_and_set_measures_worked_example():
    # ranking (score descending): d3 (grade 0), d1 (2), d5 (unjudged), d4 (-1: unjudged);
    # qrels: d1 = 2, d2 = 1, d3 = 0, d4 = -1, so R = 2 at threshold 1 (d1, d2), 1 at 2 (d1)
    qrels = Qrels.from_dict({"a": {"d1": 2, "d2": 1, "d3": 0, "d4": -1}})
    run = Run.from_dict({"a": {"d1": 1.0, "d3": 2.0, "d5": 0.5, "d4": 0.1}})
    names = ["num_ret", "num_rel", "num_rel_ret", "set_P", "SetP(relative)", "set_recall",
             "set_F", "SetF(beta=2)", "NumRet(rel=2)", "NumRel(rel=2)"]
    got = evaluate(qrels, run, names).per_query()["a"]
    assert got["num_ret"] == 4  # every ranked chunk, judged or not
    assert got["num_rel"] == 2
    assert got["num_rel_ret"] == 1  # d1
    assert got["set_P"] == pytest.approx(1 / 4)
    assert got["SetP(relative)"] == pytest.approx(1 / 2)  # 1 / min(4, 2)
    assert got["set_recall"] == pytest.approx(1 / 2)
    # F1 = 2 P R / (P + R) = 2 (1/4)(1/2) / (3/4) = 1/3; F2 = 5 P R / (4 P + R) = 0.625 / 1.5
    assert got["set_F"] == pytest.approx(1 / 3)
    assert got["SetF(beta=2)"] == pytest.approx(0.625 / 1.5)
    assert got["NumRet(rel=2)"] == 1 and got["NumRel(rel=2)"] == 1


def test_counts_of_a_query_the_run_misses():
    # trec_eval -c style evaluation: the missed query retrieves nothing but keeps its R
    qrels = Qrels.from_dict({"a": {"x": 1}, "b": {"y": 1, "z": 3}})
    run = Run.from_dict({"a": {"x": 1.0}})
    got = evaluate(qrels, run, ["num_ret", "num_rel", "num_rel_ret", "set_P"]).per_query()
    assert got["b"] == {"num_ret": 0.0, "num_rel": 2.0, "num_rel_ret": 0.0, "set_P": 0.0}


def test_trec_and_ir_measures_spellings_name_the_same_measures():
    for trec, irm in [("num_ret", "NumRet"), ("num_rel", "NumRel"), ("num_rel_ret", "NumRelRet"),
                      ("set_P", "SetP"), ("set_recall", "SetR"), ("set_F", "SetF"),
                      ("set_relative_P", "SetRelP"), ("RBP_res", "RBP_residual")]:
        assert parse_measure(trec).definition is parse_measure(irm).definition
    assert parse_measure("set_P").label == "set_P"  # results keep the name as asked


def test_rbp_worked_example():
    # same ranking as above; p = 0.8, weights (1 - p) p^(i-1) = 0.2, 0.16, 0.128, 0.1024
    qrels = Qrels.from_dict({"a": {"d1": 2, "d2": 1, "d3": 0, "d4": -1}})
    run = Run.from_dict({"a": {"d1": 1.0, "d3": 2.0, "d5": 0.5, "d4": 0.1}})
    names = ["RBP", "RBP(p=0.5)", "RBP(rel=2)", "RBP(rel=3)", "RBP(graded)",
             "RBP(graded,max_grade=4)", "RBP@1", "RBP_residual", "RBP_residual@2",
             "RBP_residual(p=0.5)@1", "RBP(p=0)", "RBP_residual(p=0)"]
    got = evaluate(qrels, run, names).per_query()["a"]
    assert got["RBP"] == pytest.approx(0.16)  # only d1, at rank 2
    assert got["RBP(p=0.5)"] == pytest.approx(0.5 * 0.5)
    assert got["RBP(rel=2)"] == pytest.approx(0.16)
    assert got["RBP(rel=3)"] == 0.0
    # graded: gain g / g_max; g_max = 2, the qrels' top grade, so d1 gains 1; with 4, 1/2
    assert got["RBP(graded)"] == pytest.approx(0.16)
    assert got["RBP(graded,max_grade=4)"] == pytest.approx(0.08)
    assert got["RBP@1"] == 0.0
    # residual: d5 and d4 are unjudged (0.128 + 0.1024) and the tail past rank 4 weighs
    # 0.8^4 = 0.4096: 0.6400; to rank 2 nothing is unjudged and the tail is 0.8^2 = 0.64
    assert got["RBP_residual"] == pytest.approx(0.128 + 0.1024 + 0.4096)
    assert got["RBP_residual@2"] == pytest.approx(0.64)
    assert got["RBP_residual(p=0.5)@1"] == pytest.approx(0.5)  # d3 is judged; tail 0.5^1
    # p = 0: only rank 1 counts (d3, grade 0); nothing beyond rank 1 is seen
    assert got["RBP(p=0)"] == 0.0 and got["RBP_residual(p=0)"] == 0.0


def test_rbp_of_a_query_the_run_misses():
    qrels = Qrels.from_dict({"a": {"x": 1}, "b": {"y": 1}})
    run = Run.from_dict({"a": {"x": 1.0}})
    got = evaluate(qrels, run, ["RBP", "RBP_residual"]).per_query()
    assert got["a"] == {"RBP": pytest.approx(0.2), "RBP_residual": pytest.approx(0.8)}
    assert got["b"] == {"RBP": 0.0, "RBP_residual": 1.0}  # nothing seen: all of it unknown


@pytest.mark.parametrize("name", ["RBP(p=1)", "RBP(p=-0.1)", "RBP_residual(p=1.5)",
                                  "RBP(graded,rel=2)"])
def test_rbp_refuses_bad_parameters(name):
    qrels = Qrels.from_dict({"a": {"x": 1}})
    with pytest.raises(UsageError):
        evaluate(qrels, Run.from_dict({"a": {"x": 1.0}}), [name])


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections(), st.sampled_from([0.5, 0.8, 0.95]), st.sampled_from([None, 1, 3, 10]))
def test_residual_is_what_unjudged_chunks_and_the_tail_could_add(data, p, k):
    """Judging every unjudged ranked chunk relevant raises RBP by the residual less the tail's
    weight p^d: the residual is exactly the room left."""
    qrels, run = data
    cut = "" if k is None else f"@{k}"
    names = [f"RBP(p={p}){cut}", f"RBP_residual(p={p}){cut}"]
    before = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), names, queries="run")
    optimistic = {q: dict(g) for q, g in qrels.items()}
    for q, ranked in run.items():
        if q in optimistic:
            for d in ranked:
                if optimistic[q].get(d, -1) < 0:
                    optimistic[q][d] = 1
    after = evaluate(Qrels.from_dict(optimistic), Run.from_dict(run), names[:1], queries="run")
    for q, row in before.per_query().items():
        depth = len(run[q]) if k is None else min(k, len(run[q]))
        gained = after.per_query()[q][names[0]] - row[names[0]]
        assert gained == pytest.approx(row[names[1]] - p ** depth, abs=1e-12)


def _cwl_rbp(qrels, run, p, rel):
    ir_measures = pytest.importorskip("ir_measures")
    pytest.importorskip("cwl")
    q = [ir_measures.Qrel(qid, d, g) for qid, docs in qrels.items() for d, g in docs.items()]
    r = [ir_measures.ScoredDoc(qid, d, s) for qid, docs in run.items() for d, s in docs.items()]
    provider = ir_measures.cwl_eval
    return {m.query_id: float(m.value)
            for m in provider.iter_calc([ir_measures.RBP(rel=rel, p=p)], q, r)}


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections(distinct_scores=True), st.sampled_from([0.5, 0.8, 0.95]),
       st.sampled_from([1, 2, 3]))
def test_rbp_matches_cwl_eval(data, p, rel):
    # distinct scores: ir_measures sorts ties its own way; cwl_eval reads at most 1,000 ranks
    qrels, run = data
    name = f"RBP(p={p},rel={rel})"
    ours = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), [name], queries="run").per_query()
    ref = _cwl_rbp(qrels, run, p, rel)
    for qid, value in ref.items():
        if qid not in run:  # ir_measures scores a judged query the run misses as 0
            assert value == 0.0 and qid not in ours
            continue
        assert ours[qid][name] == pytest.approx(value, abs=1e-12), qid
    assert set(ours) <= set(ref)


def test_rbp_long_ranking_matches_cwl_eval():
    rng = np.random.default_rng(3)
    docs = [f"doc{i}" for i in range(300)]
    qrels = {"t": {d: int(rng.integers(-1, 3)) for d in docs[::2]}}
    run = {"t": {d: float(300 - i) for i, d in enumerate(rng.permutation(docs))}}
    ours = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ["RBP(p=0.95)"])["RBP(p=0.95)"]
    assert ours == pytest.approx(_cwl_rbp(qrels, run, 0.95, 1)["t"], abs=1e-12)


def test_rbp_explained_rank_by_rank():
    from ragjudge.metrics import explain

    qrels = Qrels.from_dict({"a": {"d1": 2, "d2": 1, "d3": 0, "d4": -1}})
    run = Run.from_dict({"a": {"d1": 1.0, "d3": 2.0, "d5": 0.5, "d4": 0.1}})
    rbp = explain(qrels, run, "a", "RBP")
    # d1 at rank 2 adds 0.2 x 0.8; the running sum ends at the kernel's value
    assert [s.term for s in rbp.steps] == [None, pytest.approx(0.16), None, None]
    assert rbp.steps[-1].running == pytest.approx(rbp.value) == pytest.approx(0.16)
    residual = explain(qrels, run, "a", "RBP_residual")
    # d5 and d4 are unjudged: 0.2 x 0.64 and 0.2 x 0.512; the tail past rank 4 is 0.8^4
    assert [s.term for s in residual.steps] == [None, None, pytest.approx(0.128),
                                                pytest.approx(0.1024)]
    assert "residual = 0.2304 (unjudged ranks) + 0.4096 (tail) = 0.6400" in residual.render()
    assert not any("differs" in n for n in rbp.notes + residual.notes)
