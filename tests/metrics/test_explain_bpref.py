"""``explain -m bpref`` shows bpref's terms as trec_eval computes them: for each relevant chunk
retrieved, n (the judged non-relevant chunks ranked above it), its term 1 - min(n, R) / min(R, N)
(1 when n = 0), and the sum over R; checked by hand and against pytrec_eval."""

from __future__ import annotations

import numpy as np
import pytest

from ragjudge.metrics import Qrels, Run, explain

pytrec_eval = pytest.importorskip("pytrec_eval")

GRADES = {"c1": 2, "c2": 0, "c3": 1, "c4": 0, "c5": 2, "c6": 0, "c7": 0, "c8": 1, "c9": 0,
          "c10": 0}


def test_bpref_terms_by_hand():
    # R = 4 (c1, c3, c5, c8), N = 6 judged non-relevant. c1: n = 0, term 1; c3: n = 1 (c2),
    # 1 - 1/4; c5: n = 2 (c2, c4), 1 - 2/4; c8: n = 4 (c2, c4, c6, c7), 1 - 4/4 = 0.
    # bpref = (1 + 0.75 + 0.5 + 0) / 4 = 0.5625
    e = explain(Qrels.from_dict({"q": GRADES}), Run.from_ranked({"q": [f"c{i}" for i in range(1, 11)]}),
                "q", "bpref")
    assert [(s.rank, s.term) for s in e.steps if s.term is not None] == [(1, 1.0), (3, 0.75), (5, 0.5), (8, 0.0)]
    assert (e.numerator, e.denominator, e.value) == (2.25, 4.0, 0.5625)
    text = e.render()
    assert "N = 6 judged non-relevant" in text
    assert "rank 5: n = 2, term 1 - min(2, 4) / min(4, 6) = 0.5000" in text
    assert "bpref = 2.2500 / 4.0000 (R) = 0.5625" in text
    # a blind reader sees no working (it would tell the grades of the chunks above), no count
    # of the query's grades, and no value unless every pair of the query's gold is theirs
    blind = e.blind(lambda chunk: chunk == "c1", value_shown=False).render()
    assert "rank 5: n = 2" not in blind and "N = 6" not in blind and "R = 4" not in blind
    assert "0.5625" not in blind and "bpref = not shown" in blind
    assert "bpref = 0.5625" in e.blind(lambda chunk: True, value_shown=True).render()


def test_bpref_without_a_judged_non_relevant_chunk_is_relevant_retrieved_over_r():
    # R = 3, no judged non-relevant chunk: every retrieved relevant chunk adds 1, c9 is never
    # retrieved, c2 is unjudged and skipped: bpref = 2 / 3, not 1
    qrels = Qrels.from_dict({"q": {"c1": 1, "c3": 2, "c9": 1}})
    e = explain(qrels, Run.from_ranked({"q": ["c1", "c2", "c3"]}), "q", "bpref")
    assert e.value == pytest.approx(2 / 3)
    assert (e.numerator, e.denominator) == (2.0, 3.0)
    reference = pytrec_eval.RelevanceEvaluator({"q": {"c1": 1, "c3": 2, "c9": 1}}, {"bpref"})
    assert reference.evaluate({"q": {"c1": 3.0, "c2": 2.0, "c3": 1.0}})["q"]["bpref"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("seed", range(25))
def test_bpref_terms_sum_to_trec_eval(seed):
    rng = np.random.default_rng(seed)
    chunks = [f"d{i}" for i in range(30)]
    judged = rng.choice(chunks, size=int(rng.integers(1, 25)), replace=False)
    grades = {str(c): int(rng.integers(-1, 4)) for c in judged}
    grades[str(judged[0])] = max(grades[str(judged[0])], 0)
    ranked = rng.choice(chunks, size=int(rng.integers(1, 30)), replace=False)
    scores = {str(c): float(len(ranked) - i) for i, c in enumerate(ranked)}
    level = int(rng.integers(1, 3))
    e = explain(Qrels.from_dict({"q": grades}), Run.from_dict({"q": scores}), "q", "bpref", threshold=level)
    reference = pytrec_eval.RelevanceEvaluator({"q": grades}, {"bpref"}, relevance_level=level)
    expected = reference.evaluate({"q": scores})["q"]["bpref"]
    total = sum(s.term for s in e.steps if s.term is not None)
    r = sum(1 for g in grades.values() if g >= level)
    assert (total / r if r else 0.0) == pytest.approx(expected, abs=1e-12)
    assert e.value == pytest.approx(expected, abs=1e-12)
