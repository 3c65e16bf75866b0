"""Measures trec_eval lacks, against ir_measures: ERR and exponential-gain nDCG (through its
gdeval backend, which fixes the top grade at 4 and prints 5 decimals) and Judged@k."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ir_measures = pytest.importorskip("ir_measures")

from ragjudge.metrics import Qrels, Run, evaluate  # noqa: E402

pytestmark = pytest.mark.slow


@st.composite
def collections(draw):
    qrels, run = {}, {}
    for q in draw(st.lists(st.sampled_from(["1", "2", "3", "4"]), min_size=1, max_size=3,
                           unique=True)):
        docs = draw(st.lists(st.sampled_from([f"d{i}" for i in range(10)]), min_size=1,
                             max_size=8, unique=True))
        qrels[q] = {d: draw(st.integers(0, 4)) for d in docs}
        ranked = draw(st.lists(st.sampled_from([f"d{i}" for i in range(12)]), min_size=1,
                               max_size=10, unique=True))
        # distinct scores: gdeval and ragjudge break ties differently
        run[q] = {d: float(len(ranked) - i) for i, d in enumerate(ranked)}
    return qrels, run


def _ir(measure, qrels, run):
    q = [ir_measures.Qrel(qid, d, g) for qid, docs in qrels.items() for d, g in docs.items()]
    r = [ir_measures.ScoredDoc(qid, d, s) for qid, docs in run.items() for d, s in docs.items()]
    return {m.query_id: m.value for m in ir_measures.iter_calc([measure], q, r)}


@settings(max_examples=25, deadline=None)
@given(collections(), st.sampled_from([3, 5, 10]))
def test_err_and_exp_ndcg_match_gdeval(data, k):
    qrels, run = data
    ours = evaluate(Qrels.from_dict(qrels), Run.from_dict(run),
                    [f"ERR(max_grade=4)@{k}", f"nDCG_exp@{k}"], queries="run").per_query()
    err = _ir(ir_measures.ERR @ k, qrels, run)
    ndcg = _ir(ir_measures.nDCG(dcg="exp-log2") @ k, qrels, run)
    for qid in run:
        assert math.isclose(ours[qid][f"ERR(max_grade=4)@{k}"], err[qid], abs_tol=6e-6)
        if any(g > 0 for g in qrels[qid].values()):
            assert math.isclose(ours[qid][f"nDCG_exp@{k}"], ndcg[qid], abs_tol=6e-6)


@settings(max_examples=60, deadline=None)
@given(collections(), st.sampled_from([1, 2, 5, 10]))
def test_judged_matches_ir_measures(data, k):
    qrels, run = data
    ours = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), [f"Judged@{k}"],
                    queries="run").per_query()
    ref = _ir(ir_measures.Judged @ k, qrels, run)
    for qid in run:
        assert math.isclose(ours[qid][f"Judged@{k}"], ref[qid], abs_tol=1e-12)


def test_err_worked_example():
    # grades 0, 3, 1 at ranks 1-3, top grade 4: R = 0, 7/16, 1/16
    # ERR = (7/16)/2 + (1 - 7/16)(1/16)/3 = 0.21875 + 0.01171875 = 0.23046875
    qrels = Qrels.from_dict({"q": {"a": 3, "b": 0, "c": 1}})
    run = Run.from_ranked({"q": ["b", "a", "c"]})
    assert evaluate(qrels, run, ["ERR(max_grade=4)@3"])["ERR(max_grade=4)@3"] == \
        pytest.approx(0.23046875, abs=1e-15)
    # default top grade = highest in the qrels (3): R = 0, 7/8, 1/8
    assert evaluate(qrels, run, ["ERR@3"])["ERR@3"] == pytest.approx(7 / 16 + (1 / 8) * (1 / 8) / 3)
