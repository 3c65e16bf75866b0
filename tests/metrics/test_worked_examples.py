"""Worked examples of the measures, computed by hand and by ragjudge.metrics.

The main example: ten retrieved chunks c1 … c10, relevant {c1, c3, c5, c8} with grades
c1: 2, c3: 1, c5: 2, c8: 1 (all others 0). Each value's arithmetic is in its comment. Several
RAG evaluation guides print this example with slips (AP 0.729, nDCG@5 0.793, IDCG@5 4.131);
the values asserted here are the ones the definitions give.
"""

from __future__ import annotations

import pytest

from ragjudge.metrics import Qrels, Run, evaluate

APPROX = 5e-4  # values given to 3 decimals

# the ten-chunk example
RETRIEVED = [f"c{i}" for i in range(1, 11)]
GRADES = {"c1": 2, "c2": 0, "c3": 1, "c4": 0, "c5": 2, "c6": 0, "c7": 0, "c8": 1, "c9": 0,
          "c10": 0}


def one(ranking, grades, measure, *, qid="q", **options):
    qrels = Qrels.from_dict({qid: grades})
    run = Run.from_ranked({qid: ranking})
    return evaluate(qrels, run, [measure], **options).per_query()[qid][measure]


def example(measure, ranking=RETRIEVED):
    return one(ranking, GRADES, measure)


@pytest.mark.parametrize("measure, expected", [
    ("P@1", 1.0), ("P@3", 2 / 3), ("P@5", 0.6), ("P@8", 0.5), ("P@10", 0.4),
    ("R@1", 0.25), ("R@3", 0.5), ("R@5", 0.75), ("R@8", 1.0), ("R@10", 1.0),
    ("Rprec", 0.5),
    ("DCG@5", 3.274),
    ("RR", 1.0),
    ("ERR_linear", 1.0),  # R_i = grade / max_grade: c1 has grade 2 = max, so R_1 = 1
    ("Success@3", 1.0),
])
def test_ten_chunk_example(measure, expected):
    assert example(measure) == pytest.approx(expected, abs=APPROX)


@pytest.mark.parametrize("measure, expected", [
    ("AP", 0.6917),                  # (1/1 + 2/3 + 3/5 + 4/8) / 4
    ("ContextPrecisionAP", 0.6917),  # Context Precision defined as AP
    ("nDCG@5", 0.7808),              # DCG@5 3.2737 / IDCG@5 4.1925
    ("nDCG@1", 1.0),                 # the top chunk has the highest grade
    ("nDCG@3", 0.6646),              # (2 + 1/log2 3) / (2 + 2/log2 3 + 1/2)
    ("nDCG@8", 0.8561),              # every relevant chunk is within rank 8
    ("nDCG@10", 0.8561),             # no relevant chunk after rank 8
])
def test_ten_chunk_example_graded_and_average(measure, expected):
    assert example(measure) == pytest.approx(expected, abs=1e-4)


def test_ten_chunk_example_ideal_dcg5():
    # ideal grades 2, 2, 1, 1, 0: 2 + 2/log2 3 + 1/2 + 1/log2 5 = 4.1925
    from ragjudge.metrics import build_context

    ctx = build_context(Qrels.from_dict({"q": GRADES}), Run.from_ranked({"q": RETRIEVED}))
    assert ctx.ideal_dcg(5)[0] == pytest.approx(2 + 2 / 1.5849625 + 0.5 + 1 / 2.3219281, abs=1e-6)
    assert ctx.ideal_dcg(5)[0] == pytest.approx(4.1925, abs=1e-4)


def test_small_ap_example():
    # retrieved c1..c5, relevant {c1, c3}: P@3 = 0.667, P@5 = 0.4, AP = 0.833
    grades = {"c1": 1, "c3": 1}
    ranking = RETRIEVED[:5]
    assert one(ranking, grades, "P@3") == pytest.approx(2 / 3)
    assert one(ranking, grades, "P@5") == pytest.approx(0.4)
    assert one(ranking, grades, "AP") == pytest.approx((1 + 2 / 3) / 2)


def test_good_and_bad_rankings():
    good = ["c1", "c3", "c5", "c8", "c2", "c4", "c6", "c7", "c9", "c10"]
    bad = ["c2", "c4", "c6", "c7", "c9", "c1", "c3", "c5", "c8", "c10"]
    assert example("AP", good) == pytest.approx(1.0)
    # relevant at ranks 6-9: (1/6 + 2/7 + 3/8 + 4/9) / 4 = 0.3180
    assert example("AP", bad) == pytest.approx(0.3180, abs=1e-4)


def test_context_precision_orders():
    good = ["c1", "c3", "c5", "c8", "c2"]
    bad = ["c2", "c4", "c1", "c3", "c5"]
    assert example("ContextPrecisionAP", good) == pytest.approx(1.0)
    # the bad order as AP: (1/3 + 2/4 + 3/5) / 4 relevant = 0.3583 ...
    assert example("ContextPrecisionAP", bad) == pytest.approx(0.3583, abs=1e-4)
    # ... and 0.4778 as RAGAS Context Precision@5 (÷ the 3 relevant found in the top 5)
    assert example("ContextPrecision@5", bad) == pytest.approx(0.4778, abs=1e-4)


def test_reciprocal_rank_examples():
    assert one(["c1", "c2", "c3"], {"c1": 1}, "RR") == 1.0
    assert one(["c2", "c4", "c1"], {"c1": 1}, "RR") == pytest.approx(1 / 3)


def test_err_first_chunk_satisfies():
    # rank 1 has grade 2 = max grade -> R1 = 1, the user stops: ERR = 1.000
    assert example("ERR_linear@10") == 1.0
    assert example("ERR_linear(max_grade=2)@2") == 1.0


def test_hit_rate_over_four_queries():
    # 3 of 4 queries have a relevant chunk in the top 3 -> Hit Rate@3 = 0.75
    qrels = Qrels.from_dict({f"q{i}": {"good": 1} for i in range(1, 5)})
    run = Run.from_ranked({"q1": ["good", "x", "y"], "q2": ["x", "good", "y"],
                           "q3": ["x", "y", "z", "good"], "q4": ["x", "y", "good"]})
    result = evaluate(qrels, run, ["hit_rate@3", "Success@3", "Success@5"])
    assert result["hit_rate@3"] == pytest.approx(0.75)
    assert result["Success@3"] == pytest.approx(0.75)
    assert result["Success@5"] == 1.0


def test_ragas_context_precision_at_3():
    # only the first of three retrieved chunks is relevant: (1.0 x 1) / 1 = 1.0
    assert one(["antarctic", "sahara", "deserts"], {"antarctic": 1, "sahara": 0, "deserts": 0},
               "ContextPrecision@3") == 1.0
    # reversed order: the relevant chunk at rank 3 gives (1/3) / 1
    assert one(["deserts", "sahara", "antarctic"], {"antarctic": 1}, "ContextPrecision@3") \
        == pytest.approx(1 / 3)


# a support knowledge base: 10,000 chunks, 6 relevant, top 5 = returns policy, disputed-delivery SOP (grade 3),
# holiday schedule, carrier liability clause (grade 1), delivery-delays FAQ.
TOP5 = ["returns", "sop", "holiday", "liability", "delays"]
KB_QRELS = {"sop": 3, "liability": 1, "r3": 1, "r4": 1, "r5": 1, "r6": 1,
                 "returns": 0, "holiday": 0, "delays": 0}


@pytest.mark.parametrize("measure, expected", [
    ("P@1", 0.0), ("P@3", 1 / 3), ("P@5", 0.40), ("R@5", 0.33), ("F1@5", 0.36),
])
def test_knowledge_base_set_measures(measure, expected):
    assert one(TOP5, KB_QRELS, measure) == pytest.approx(expected, abs=5e-3)


def test_knowledge_base_accuracy_trap():
    # TP 2, FP 3, FN 4, TN 9,991 -> (2 + 9,991) / 10,000 = 99.93 %
    qrels = Qrels.from_dict({"q": KB_QRELS})
    run = Run.from_ranked({"q": TOP5})
    result = evaluate(qrels, run, ["Accuracy@5"], extras={"corpus_size": 10_000})
    assert result["Accuracy@5"] == pytest.approx(0.9993)


def test_accuracy_needs_corpus_size():
    from ragjudge.errors import UsageError

    with pytest.raises(UsageError, match="Accuracy@5.*corpus_size"):
        evaluate(Qrels.from_dict({"q": KB_QRELS}), Run.from_ranked({"q": TOP5}),
                 ["Accuracy@5"])


def test_retrievers_a_and_b():
    # same two relevant chunks at ranks 1-2 (A) or 4-5 (B), R = 6
    grades = {f"r{i}": 1 for i in range(1, 7)}
    a = ["r1", "r2", "x1", "x2", "x3"]
    b = ["x1", "x2", "x3", "r1", "r2"]
    assert one(a, grades, "P@5") == one(b, grades, "P@5") == pytest.approx(0.40)
    assert one(a, grades, "RR") == 1.0
    assert one(b, grades, "RR") == 0.25
    assert one(a, grades, "AP") == pytest.approx(0.33, abs=5e-3)
    assert one(b, grades, "AP") == pytest.approx(0.11, abs=5e-3)


def test_mrr_and_map_over_three_queries():
    qrels = Qrels.from_dict({
        "parcel": {"p1": 1, "p2": 1},             # hit at rank 1, a second never retrieved
        "cancel": {"c1": 1, "c2": 1},             # hits at ranks 2 and 4
        "label": {"l1": 1, "l2": 1, "l3": 1},     # hits at ranks 4 and 5, one missed
    })
    run = Run.from_ranked({
        "parcel": ["p1", "x", "y", "z", "w"],
        "cancel": ["x", "c1", "y", "c2", "z"],
        "label": ["x", "y", "z", "l1", "l2"],
    })
    result = evaluate(qrels, run, ["MRR", "MAP", "AP"])
    assert result["MRR"] == pytest.approx(0.58, abs=5e-3)
    per_query = result.per_query()
    assert per_query["parcel"]["AP"] == pytest.approx(0.50)
    assert per_query["cancel"]["AP"] == pytest.approx(0.50)
    assert per_query["label"]["AP"] == pytest.approx(0.22, abs=5e-3)
    assert result["MAP"] == pytest.approx(0.41, abs=5e-3)


def test_ndcg_of_the_five():
    # an ideal ranking that sorts only the grades of the five retrieved chunks (3 and 1):
    # DCG = 3/log2(3) + 1/log2(5) = 2.32, IDCG = 3 + 1/log2(3) = 3.63, nDCG = 0.64
    grades = {"returns": 0, "sop": 3, "holiday": 0, "liability": 1, "delays": 0}
    assert one(TOP5, grades, "DCG@5") == pytest.approx(2.32, abs=5e-3)
    assert one(TOP5, grades, "nDCG@5") == pytest.approx(0.64, abs=5e-3)


def test_exponential_gain_and_f_beta():
    # DCG gain 2^g - 1 (Burges et al. 2005); hand-worked: grades 3, 0, 1 -> 7 + 0 + 1/2 = 7.5,
    # ideal 3, 1, 0 -> 7 + 1/log2(3); nDCG_exp@3 = 7.5 / 7.6309
    grades = {"a": 3, "b": 0, "c": 1}
    assert one(["a", "b", "c"], grades, "nDCG_exp@3") == pytest.approx(7.5 / (7 + 1 / 1.5849625007))
    # F2 (beta = 2) of P = 0.4, R = 2/6: 5 * 0.4 * (1/3) / (4 * 0.4 + 1/3) = 0.34483
    assert one(TOP5, KB_QRELS, "F(beta=2)@5") == pytest.approx(5 * 0.4 / 3 / (1.6 + 1 / 3))
