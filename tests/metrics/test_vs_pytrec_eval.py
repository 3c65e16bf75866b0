"""Per-query exactness against trec_eval (through pytrec_eval) on random qrels and runs.

Scores are drawn from multiples of 1/8 in [0, 4], exactly representable in float32, so that
trec_eval's float32 scores and ragjudge's float64 scores order the same way; they collide
often, which exercises the tie rule (chunk id descending).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytrec_eval = pytest.importorskip("pytrec_eval")

from ragjudge.metrics import Qrels, Run, evaluate  # noqa: E402

CUTS = (1, 2, 3, 5, 10)
LEVELS = [f"{j / 10:.2f}" for j in range(11)]

# ragjudge name -> trec_eval name
PAIRS = (
    [(f"P@{k}", f"P_{k}") for k in CUTS]
    + [(f"R@{k}", f"recall_{k}") for k in CUTS]
    + [(f"AP@{k}", f"map_cut_{k}") for k in CUTS]
    + [(f"nDCG@{k}", f"ndcg_cut_{k}") for k in CUTS]
    + [(f"Success@{k}", f"success_{k}") for k in (1, 5, 10)]
    + [("AP", "map"), ("Rprec", "Rprec"), ("RR", "recip_rank"), ("nDCG", "ndcg"),
       ("bpref", "bpref")]
    + [(f"iprec@{level[:-1] if level.endswith('0') and level != '0.00' else level}",
        f"iprec_at_recall_{level}") for level in LEVELS]
)
TREC_MEASURES = {
    f"P.{','.join(map(str, CUTS))}", f"recall.{','.join(map(str, CUTS))}",
    f"map_cut.{','.join(map(str, CUTS))}", f"ndcg_cut.{','.join(map(str, CUTS))}",
    "success.1,5,10", "map", "Rprec", "recip_rank", "ndcg", "iprec_at_recall",
}

DOCS = [f"d{i}" for i in range(12)] + ["D", "d", "dd", "a10", "a9"]
QUERIES = ["q1", "q2", "q3", "q10", "q4"]


@st.composite
def collections(draw):
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=10, unique=True))
        grades = {d: draw(st.integers(-1, 3)) for d in docs}
        if all(g < 0 for g in grades.values()):
            # pytrec_eval 0.5 can hang on a query whose judgments are all negative (see
            # test_all_zero_query_and_negative_grades for a fixed case it does answer)
            grades[docs[0]] = 0
        qrels[q] = grades
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=0, max_size=14, unique=True))
        if docs:
            run[q] = {d: draw(st.integers(0, 32)) / 8.0 for d in docs}
    return qrels, run


def _reference(qrels, run, threshold):
    # bpref gets its own evaluator: pytrec_eval 0.5 never returns when map and bpref are asked
    # together on a query whose only judgments are negative
    out = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES,
                                         relevance_level=threshold).evaluate(run)
    bpref = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"},
                                           relevance_level=threshold).evaluate(run)
    for qid, row in bpref.items():
        out[qid].update(row)
    return out


def _check(qrels, run, threshold):
    names = [ours for ours, _ in PAIRS]
    ref = _reference(qrels, run, threshold)
    result = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), names, threshold=threshold,
                      queries="run")
    ours = result.per_query()
    assert sorted(ours) == sorted(ref)
    for qid, row in ref.items():
        for mine, theirs in PAIRS:
            expected = row[theirs]
            if math.isnan(expected) and theirs.startswith("iprec"):
                # trec_eval computes 0/0 for a query whose only judgments are negative and
                # whose ranking holds no judged chunk; ragjudge gives 0 like every other
                # measure with a zero denominator
                expected = 0.0
                row[theirs] = 0.0
            assert math.isclose(ours[qid][mine], expected, rel_tol=0, abs_tol=1e-9), (
                qid, mine, ours[qid][mine], row[theirs])
    # trec_eval -c: every judged query counts, a query without a ranking scores 0
    complete = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), names, threshold=threshold)
    assert complete.query_ids == sorted(qrels, key=lambda q: q.encode())
    for qid, row in complete.per_query().items():
        if qid not in ref:
            assert all(v == 0.0 for v in row.values()), (qid, row)
    means = complete.means
    expected = np.array([[ref.get(q, {}).get(t, 0.0) for _, t in PAIRS]
                         for q in complete.query_ids]).mean(axis=0)
    assert np.allclose(means, expected, rtol=0, atol=1e-9)


@pytest.mark.slow
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections(), st.sampled_from([1, 1, 2, 3]))
def test_random_collections_match_trec_eval(data, threshold):
    qrels, run = data
    _check(qrels, run, threshold)


def test_ties_break_by_chunk_id_descending():
    qrels = {"q": {"a": 1, "b": 0, "c": 0, "a10": 1}}
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0, "a10": 1.0, "a9": 1.0}}
    _check(qrels, run, 1)
    ranking = [c for c, _ in Run.from_dict(run).ranking("q")]
    assert ranking == ["c", "b", "a9", "a10", "a"]


def test_all_zero_query_and_negative_grades():
    qrels = {"zero": {"a": 0, "b": 0}, "neg": {"a": -1, "b": 1, "c": 0}, "only_neg": {"x": -1}}
    run = {"zero": {"a": 2.0, "b": 1.0}, "neg": {"a": 3.0, "c": 2.0, "b": 1.0},
           "only_neg": {"x": 1.0}, "unjudged_query": {"a": 1.0}}
    _check(qrels, run, 1)


def test_short_runs_and_missing_queries():
    qrels = {"q1": {f"d{i}": 1 for i in range(8)}, "q2": {"d1": 2}}
    run = {"q1": {"d3": 2.0, "x": 1.0}}
    _check(qrels, run, 1)


def test_trec_files_round_trip_against_pytrec(tmp_path):
    rng = np.random.default_rng(7)
    lines_q, lines_r = [], []
    qrels: dict = {}
    run: dict = {}
    for q in range(30):
        qid = f"topic-{q}"
        docs = rng.choice(200, 40, replace=False)
        for d in docs[:15]:
            g = int(rng.integers(-1, 4))
            lines_q.append(f"{qid} 0 doc{d} {g}")
            qrels.setdefault(qid, {})[f"doc{d}"] = g
        for rank, d in enumerate(docs[5:], start=1):
            s = float(rng.integers(0, 64)) / 4
            lines_r.append(f"{qid}\tQ0 doc{d}  {rank} {s} tag")
            run.setdefault(qid, {})[f"doc{d}"] = s
    (tmp_path / "q.trec").write_text("\n".join(lines_q) + "\n")
    (tmp_path / "r.trec").write_text("\n".join(lines_r))
    names = [ours for ours, _ in PAIRS]
    ours = evaluate(Qrels.from_trec(tmp_path / "q.trec"), Run.from_trec(tmp_path / "r.trec"),
                    names, queries="run").per_query()
    ref = _reference(qrels, run, 1)
    for qid, row in ref.items():
        for mine, theirs in PAIRS:
            assert math.isclose(ours[qid][mine], row[theirs], abs_tol=1e-9), (qid, mine)
