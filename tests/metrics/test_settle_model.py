"""The model of the open pairs' grades: prior by rank bucket and run, LLM calibration, draws."""

from __future__ import annotations

import numpy as np
import pytest

from ragjudge.errors import UsageError
from ragjudge.metrics import Qrels, Run
from ragjudge.metrics.settle import LLMGrades, Settlement
from ragjudge.metrics.settle_model import bucket_of


def open_probability(s, query, chunk):
    lay = s.layout
    for v, (q, c) in enumerate(zip(lay.open_query, lay.open_chunk.tolist())):
        if lay.query_ids[q].decode() == query and c.decode() == chunk:
            return s.model.probs[v]
    raise KeyError((query, chunk))


def test_buckets():
    # ranks 1, 2, 3, 4-5, 6-10, 11-20, 21-50, 51-100, over 100 (0-based ranks in)
    assert bucket_of(np.array([0, 1, 2, 3, 4, 5, 9, 10, 19, 20, 49, 50, 99, 100, 5000])).tolist() == \
        [0, 1, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8]


def test_prior_by_bucket_and_run_by_hand():
    # one run: d1 (rank 1) = 1, d2 (rank 2) = 1, d4 (rank 4, bucket 4-5) = 0, d6 (rank 6) = 0;
    # open d3 (rank 3) and d5 (rank 5, bucket 4-5). strength s = 2. (P@6 reads six ranks: the
    # prior counts the judged pairs within the ranks the measures read.)
    # overall: 2 of each grade -> p0 = ((2 + 1) / 6, (2 + 1) / 6) = (1/2, 1/2).
    # bucket 4-5 holds one 0: p_b = ([1, 0] + 2 p0) / 3 = (2/3, 1/3); the run's own count is the
    # same one 0: p_rb = ([1, 0] + 2 p_b) / 3 = (7/9, 2/9). Bucket 3 holds nothing: p0.
    run = Run.from_ranked({"q1": ["d1", "d2", "d3", "d4", "d5", "d6"]}, name="A")
    qrels = Qrels.from_dict({"q1": {"d1": 1, "d2": 1, "d4": 0, "d6": 0}}, top_grade=1)
    s = Settlement(qrels, [run], 6, ["P@6"], strength=2.0, samples=0)
    assert open_probability(s, "q1", "d5") == pytest.approx([7 / 9, 2 / 9])
    assert open_probability(s, "q1", "d3") == pytest.approx([1 / 2, 1 / 2])


def test_llm_posterior_by_hand():
    # two runs ranking the same chunks; d1, e1 (rank 1) = 1, d2, e2 (rank 2) = 0; open at ranks
    # 3 and 4 with nothing judged there: prior p0 = (1/2, 1/2) (4 of each grade over 2 runs).
    # LLM: d1 -> 1, e1 -> 1, d2 -> 1, e2 -> 0. Confusion C[llm][gold]: C[1][1] = 2, C[1][0] = 1,
    # C[0][0] = 1. P(l | g) = (C + 1) / (column + 2): P(1|0) = P(0|0) = 2/4, P(1|1) = 3/4,
    # P(0|1) = 1/4. Open d3 graded 1: (1/2 * 2/4, 1/2 * 3/4) -> P(rel) = 3/5; e3 graded 0:
    # (1/2 * 2/4, 1/2 * 1/4) -> 1/3; d4, e4 not graded: 1/2.
    ranked = {"q1": ["d1", "d2", "d3", "d4"], "q2": ["e1", "e2", "e3", "e4"]}
    runs = [Run.from_ranked(ranked, name="A"), Run.from_ranked(ranked, name="B")]
    qrels = Qrels.from_dict({"q1": {"d1": 1, "d2": 0}, "q2": {"e1": 1, "e2": 0}}, top_grade=1)
    llm = LLMGrades(["q1", "q2", "q1", "q2", "q1", "q2"], ["d1", "e1", "d2", "e2", "d3", "e3"],
                    [1, 1, 1, 0, 1, 0])
    s = Settlement(qrels, runs, 4, ["P@4"], llm=llm, samples=0)
    assert open_probability(s, "q1", "d3")[1] == pytest.approx(3 / 5)
    assert open_probability(s, "q2", "e3")[1] == pytest.approx(1 / 3)
    assert open_probability(s, "q1", "d4")[1] == pytest.approx(1 / 2)


def test_draws_follow_the_model():
    rng = np.random.default_rng(0)
    ranked = {f"q{i}": [f"d{j}" for j in range(6)] for i in range(50)}
    run = Run.from_ranked(ranked, name="A")
    judged = {f"q{i}": {"d0": i % 4, "d1": (i + 1) % 4} for i in range(50)}
    s = Settlement(Qrels.from_dict(judged, top_grade=3), [run], 6, ["nDCG@5"], samples=0)
    draws = s.model.draw(rng, 4000)
    share = np.stack([(draws == g).mean(axis=0) for g in range(4)], axis=1)
    assert np.abs(share - s.model.probs).max() < 0.04  # 4000 draws: sd below 0.008


def test_llm_grade_off_the_scale_is_refused():
    run = Run.from_ranked({"q1": ["d1", "d2"]}, name="A")
    qrels = Qrels.from_dict({"q1": {"d1": 1}}, top_grade=1)
    with pytest.raises(UsageError, match="above the top of the scale"):
        Settlement(qrels, [run], 2, ["P@1"], llm=LLMGrades(["q1"], ["d2"], [5]), samples=0)
