"""infAP per query against trec_eval's ``infAP`` (through pytrec_eval) on random collections.

trec_eval's convention: a pair listed with a negative grade was pooled but not sampled; a pair
not listed was never pooled. Scores are multiples of 1/8, exact in float32, so both order the
run alike (ties by chunk id descending).
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytest

pytrec_eval = pytest.importorskip("pytrec_eval")

from ragjudge.metrics import Qrels, Run, evaluate  # noqa: E402

pytestmark = pytest.mark.slow

DOCS = [f"d{i}" for i in range(14)] + ["D", "dd", "a10", "a9"]
QUERIES = ["1", "2", "3", "10", "q"]


@st.composite
def sampled_collections(draw):
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=14, unique=True))
        grades = {d: draw(st.sampled_from([-1, -1, 0, 0, 1, 2, 3])) for d in docs}
        if all(g < 0 for g in grades.values()):
            grades[docs[0]] = 0  # pytrec_eval 0.5 can hang on a query judged only negatively
        qrels[q] = grades
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=16, unique=True))
        run[q] = {d: draw(st.integers(0, 32)) / 8.0 for d in docs}
    return qrels, run


def _check(qrels, run, threshold):
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"infAP"}, relevance_level=threshold).evaluate(run)
    ours = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ["infAP"], threshold=threshold,
                    queries="run").per_query()
    assert sorted(ours) == sorted(ref)
    for q, row in ref.items():
        assert math.isclose(ours[q]["infAP"], row["infAP"], rel_tol=0, abs_tol=1e-12), (q, ours[q], row)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sampled_collections(), st.sampled_from([1, 1, 2, 3]))
def test_infap_matches_trec_eval(data, threshold):
    qrels, run = data
    _check(qrels, run, threshold)


def test_infap_fixed_cases():
    # a relevant chunk at rank 1; unsampled and unpooled chunks above later relevant ones; a
    # query whose only relevant chunk is unranked; ties broken by chunk id descending
    qrels = {"1": {"a": 1, "b": -1, "c": 0, "d": 2, "e": 1},
             "2": {"x": -1, "y": 0, "z": 1},
             "3": {"m": 1, "n": 1, "o": -1}}
    run = {"1": {"a": 5.0, "u": 4.0, "b": 3.0, "c": 2.0, "d": 2.0, "e": 1.0},
           "2": {"x": 2.0, "y": 1.0},
           "3": {"o": 1.0, "n": 1.0, "m": 1.0, "k": 1.0}}
    for threshold in (1, 2):
        _check(qrels, run, threshold)
