"""settle(): current values, statuses, order probabilities, weights and what is left to judge."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from ragjudge.errors import UsageError
from ragjudge.metrics import Qrels, Run, evaluate
from ragjudge.metrics.settle import (
    EPS,
    LLMGrades,
    Pool,
    Settlement,
    _order_chance,
    pair_weights,
    settle,
    supported,
)
from ragjudge.metrics.registry import parse_measure

MEASURES = ["P@5", "Success@3", "RR", "R@10", "AP", "nDCG@10", "nDCG_exp@5", "DCG@5", "AP@5"]


def random_collection(seed, n_queries=30, n_runs=4, judged_share=0.5, depth=15):
    rng = np.random.default_rng(seed)
    runs = {}
    for r in range(n_runs):
        ranked = {}
        for q in range(n_queries):
            if rng.random() < 0.1:
                continue  # a run may leave a query out
            ranked[f"q{q}"] = [f"d{d}" for d in rng.permutation(40)[:depth]]
        runs[f"r{r}"] = Run.from_ranked(ranked, name=f"r{r}")
    judged = {}
    for q in range(n_queries):
        if q % 7 == 3:
            continue  # queries with nothing judged yet
        docs = rng.permutation(40)[:int(40 * judged_share)]
        judged[f"q{q}"] = {f"d{d}": int(rng.choice(4, p=[0.5, 0.2, 0.2, 0.1])) for d in docs}
        judged[f"q{q}"][f"d{docs[0]}"] = -1  # a negative grade is no judgment
    return runs, Qrels.from_dict(judged, top_grade=3)


def test_current_values_are_ragjudge_evals():
    runs, qrels = random_collection(1)
    s = Settlement(qrels, runs, 10, MEASURES, top_grade=3, samples=0)
    queries = [q.decode() for q in s.layout.query_ids.tolist()]
    assert set(qrels.query_ids) < set(queries)  # pool queries with nothing judged are in
    for j, measure in enumerate(MEASURES):
        for name, run in runs.items():
            result = evaluate(qrels, run, [measure], queries=queries)
            expected = dict(zip(result.query_ids, result.values[:, 0].tolist()))
            got = s.profile(j, name).cur
            for q, value in zip(queries, got.tolist()):
                assert value == expected.get(q, 0.0), (measure, name, q)  # bit for bit
            assert s.mean(j, name) == pytest.approx(sum(expected.values()) / len(queries), abs=1e-15)


def test_difference_is_the_mean_difference_and_bounds_hold_it():
    runs, qrels = random_collection(2)
    for c in settle(qrels, runs, 10, MEASURES, top_grade=3, pairs="all", samples=50):
        assert c.low <= c.difference <= c.high
        assert c.n_queries == 30


def test_pool_pairs_judged_or_open():
    runs = [Run.from_ranked({"q1": ["a", "b", "c"], "q2": ["x"]}, name="A"),
            Run.from_ranked({"q1": ["b", "d"]}, name="B")]
    pool = Pool.from_runs(runs, 2)
    pairs = set(zip(np.char.decode(pool.query_ids).tolist(), np.char.decode(pool.chunk_ids).tolist()))
    assert pairs == {("q1", "a"), ("q1", "b"), ("q1", "d"), ("q2", "x")}  # b once
    again = Pool.from_pairs(["q1", "q1", "q2"], ["a", "a", "x"])
    assert len(again) == 2
    qrels = Qrels.from_dict({"q1": {"a": 1, "b": -1}}, top_grade=1)  # b: negative, not judged
    s = Settlement(qrels, runs, pool, ["P@2"], samples=0)
    open_pairs = {(s.layout.query_ids[q].decode(), c.decode())
                  for q, c in zip(s.layout.open_query, s.layout.open_chunk.tolist())}
    assert open_pairs == {("q1", "b"), ("q1", "d"), ("q2", "x")}


def test_certain_order_and_tie():
    # A ranks two judged relevant chunks first, B two judged non-relevant ones; the open pairs
    # (rank 3) can move P@3 by 1/3 at most: A - B is within [2/3 - 1/3, 2/3 + 1/3] > 0
    runs = {"A": Run.from_ranked({"q1": ["a", "b", "x"]}, name="A"),
            "B": Run.from_ranked({"q1": ["c", "d", "y"]}, name="B"),
            "C": Run.from_ranked({"q1": ["c", "d", "y"]}, name="C")}  # C is B: a certain tie
    qrels = Qrels.from_dict({"q1": {"a": 1, "b": 1, "c": 0, "d": 0}}, top_grade=1)
    by_pair = {(c.a, c.b): c for c in settle(qrels, runs, 3, ["P@3"], pairs="all")}
    certain = by_pair["A", "B"]
    assert certain.status == "certain" and certain.p_order == 1.0 and certain.judge_more == 0
    assert certain.low == pytest.approx(1 / 3) and certain.high == pytest.approx(1.0)
    tie = by_pair["B", "C"]
    assert tie.status == "tied" and tie.low == tie.high == 0.0 and tie.judge_more == 0


def test_adjacent_pairs_follow_the_current_ranking():
    runs, qrels = random_collection(3, n_runs=5)
    s = Settlement(qrels, runs, 10, ["P@5", "AP"], top_grade=3, samples=0)
    comparisons = s.comparisons()
    assert len(comparisons) == 2 * 4
    for j, m in enumerate(["P@5", "AP"]):
        mine = [c for c in comparisons if c.measure == m]
        assert all(c.difference >= 0 for c in mine)
        chain = [mine[0].a] + [c.b for c in mine]
        assert sorted(chain) == sorted(runs)  # every run once, best first
        assert [s.mean(j, n) for n in chain] == sorted((s.mean(j, n) for n in chain), reverse=True)
    every = Settlement(qrels, runs, 10, ["P@5"], top_grade=3, samples=0, pairs="all").comparisons()
    assert len(every) == 10
    chosen = Settlement(qrels, runs, 10, ["P@5"], top_grade=3, samples=0, pairs=[("r4", "r0")]).comparisons()
    assert [(c.a, c.b) for c in chosen] == [("r4", "r0")]


def model_probability(s, j, a, b):
    """P(final sign = current sign), by enumerating every assignment with the model's
    probabilities (binary scale)."""
    lay, fam = s.layout, s.families[j]
    p = s.model.probs[:, 1]
    now = np.sign(s.mean(j, a) - s.mean(j, b))
    total = 0.0
    from ragjudge.metrics.settle_family import Draw
    for bits in itertools.product((0, 1), repeat=lay.n_vars):
        draw = Draw(np.array([bits], dtype=np.int8), lay)
        final = (fam.values(fam.profiles[s.index[a]], draw.on(s.runs[s.index[a]])).sum()
                 - fam.values(fam.profiles[s.index[b]], draw.on(s.runs[s.index[b]])).sum())
        weight = np.prod(np.where(np.array(bits) == 1, p, 1 - p))
        total += weight * (np.sign(final) == now if abs(final) > EPS else now == 0)
    return total


@pytest.mark.slow
def test_order_probability_matches_exact_enumeration():
    # one query, two runs, five open pairs: the draws' share against the exact sum over all
    # 2^5 assignments weighted by the model's probabilities
    runs = {"A": Run.from_ranked({"q1": ["j1", "o1", "o2", "j2", "o3"]}, name="A"),
            "B": Run.from_ranked({"q1": ["o4", "j1", "o5", "o1", "j3"]}, name="B")}
    qrels = Qrels.from_dict({"q1": {"j1": 1, "j2": 0, "j3": 1}}, top_grade=1)
    for measure in ("P@3", "AP", "RR", "nDCG@5", "R@3"):
        s = Settlement(qrels, runs, 5, [measure], samples=20000, seed=3)
        (c,) = s.comparisons()
        if c.status in ("certain", "tied"):
            continue
        exact = model_probability(s, 0, c.a, c.b)
        assert c.p_order == pytest.approx(exact, abs=4 * 0.5 / math.sqrt(20000)), measure


def test_order_probability_is_seeded():
    runs, qrels = random_collection(4)
    first = [c.p_order for c in settle(qrels, runs, 10, ["AP", "P@5"], top_grade=3, seed=11)]
    again = [c.p_order for c in settle(qrels, runs, 10, ["AP", "P@5"], top_grade=3, seed=11)]
    assert first == again
    none = settle(qrels, runs, 10, ["AP"], top_grade=3, samples=0)
    assert all(math.isnan(c.p_order) for c in none if c.status not in ("certain", "tied"))


def test_normal_law_over_many_queries():
    # 40 queries each adding +1 or -1 with equal odds to a difference now at +0.1: the final
    # mean is 0.1 + mean of the steps; sd of the sum = sqrt(40) / 40
    rng = np.random.default_rng(0)
    steps = rng.choice([-1.0, 1.0], size=(4000, 40))
    d = 0.1 + steps  # per draw and query
    sums = np.stack([d.sum(axis=0), (d * d).sum(axis=0)])
    p = _order_chance(0.1, 4000, sums, 0.0, 40, d.mean(axis=1))
    expected = 0.5 * math.erfc(-0.1 / (math.sqrt(40) / 40) / math.sqrt(2))
    assert p == pytest.approx(expected, abs=0.02)


def test_llm_grades_move_the_probabilities():
    runs, qrels = random_collection(5)
    plain = Settlement(qrels, runs, 10, ["P@5"], top_grade=3, samples=0)
    lay = plain.layout
    # an LLM that agrees with the people on every judged pair, and calls every open pair a 3
    qs = [lay.query_ids[q].decode() for q in lay.judged_query] + [lay.query_ids[q].decode() for q in lay.open_query]
    cs = [c.decode() for c in lay.judged_chunk.tolist()] + [c.decode() for c in lay.open_chunk.tolist()]
    grades = lay.judged_grade.tolist() + [3] * lay.n_vars
    told = Settlement(qrels, runs, 10, ["P@5"], top_grade=3, samples=0, llm=LLMGrades(qs, cs, grades))
    assert np.all(told.model.probs[:, 3] > plain.model.probs[:, 3])


def test_weights_queue_the_pairs_that_decide():
    # A leads B on P@1 by one judged query: (1 + a2 - b2) / 2, 1/2 now, 0 at worst (b2 relevant,
    # a2 not). Judging b2 settles it when b2 is not relevant, judging a2 when a2 is relevant; z
    # (rank 2) is read by no measure. Each weighs its chance of settling it under the prior
    # (settle_model): p0 = (1 + 1) / (2 + 2) = 1/2, the rank-1 bucket (1 + 10 p0) / (2 + 10) =
    # 1/2, A's (1 + 10 / 2) / (1 + 10) = 6/11 relevant, B's (0 + 5) / 11 = 5/11: b2 weighs
    # 1 - 5/11 and a2 6/11, both 6/11.
    runs = {"A": Run.from_ranked({"q1": ["a1"], "q2": ["a2", "z"]}, name="A"),
            "B": Run.from_ranked({"q1": ["b1"], "q2": ["b2", "z"]}, name="B")}
    qrels = Qrels.from_dict({"q1": {"a1": 1, "b1": 0}}, top_grade=1)
    s = Settlement(qrels, runs, 2, ["P@1"], samples=0)
    ranked = s.weights().ranked()
    weights = {(q, c): w for q, c, w in ranked}
    assert weights == pytest.approx({("q2", "b2"): 6 / 11, ("q2", "a2"): 6 / 11, ("q2", "z"): 0.0})
    assert ranked[-1][:2] == ("q2", "z")
    assert pair_weights(qrels, runs, 2, ["P@1"]).ranked(1) == ranked[:1]


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_the_queue_takes_the_heaviest_tenth_shallowest_first_then_by_weight(seed):
    """The queue order (``weights().ranked()``): the open pairs whose weight is above the 90th
    percentile of the open pairs' weights, by the best rank any run gives them (then by query),
    first; then every other pair, heaviest first."""
    runs, qrels = random_collection(seed, judged_share=0.3)
    s = Settlement(qrels, runs, 10, ["P@5", "nDCG@10", "AP"], top_grade=3, samples=0)
    ranked = s.weights().ranked()
    weights = np.array([w for _, _, w in ranked])
    cut = np.quantile(weights, 0.9)
    head = int(np.count_nonzero((weights > cut) & (weights > 0)))
    assert 0 < head < len(ranked)
    assert all(w > cut for w in weights[:head])
    best = {}
    for run in runs.values():
        for q, chunks in run.to_ranked().items():
            for rank, c in enumerate(chunks, start=1):
                best[q, c] = min(best.get((q, c), rank), rank)
    head_ranks = [best[q, c] for q, c, _ in ranked[:head]]
    assert head_ranks == sorted(head_ranks)
    assert len(set(head_ranks)) > 1  # the head spans ranks: its order is not the weights'
    assert list(weights[head:]) == sorted(weights[head:], reverse=True)


def test_judge_more_counts_what_settles():
    runs = {"A": Run.from_ranked({"q1": ["a1"], "q2": ["a2"]}, name="A"),
            "B": Run.from_ranked({"q1": ["b1"], "q2": ["b2"]}, name="B")}
    qrels = Qrels.from_dict({"q1": {"a1": 1, "b1": 0}}, top_grade=1)
    (c,) = settle(qrels, runs, 1, ["P@1"])
    # open: a2 and b2. P@1 diff now 1/2; b2 relevant would make it 0: judging b2 (the heaviest)
    # settles it unless b2 is relevant; the estimate is that one pair
    assert c.status in ("open", "probable") and c.judge_more == 1


def test_comparison_serialises():
    runs, qrels = random_collection(6)
    (c, *_) = settle(qrels, runs, 10, ["nDCG@10"], top_grade=3, samples=20)
    assert json.loads(json.dumps(c.to_dict()))["measure"] == "nDCG@10"


def test_bad_input_is_a_usage_error():
    runs, qrels = random_collection(7)
    with pytest.raises(UsageError, match="top of the scale"):
        Settlement(qrels, runs, 10, ["P@5"], top_grade=2)
    with pytest.raises(UsageError, match="no run named"):
        Settlement(qrels, runs, 10, ["P@5"], top_grade=3, pairs=[("r0", "nope")])
    with pytest.raises(UsageError, match="pairs is"):
        Settlement(qrels, runs, 10, ["P@5"], top_grade=3, pairs="some")
    with pytest.raises(UsageError, match="confidence"):
        Settlement(qrels, runs, 10, ["P@5"], top_grade=3, confidence=1.5)
    with pytest.raises(UsageError, match="cannot be settled"):
        Settlement(qrels, runs, 10, ["bpref"], top_grade=3)
    assert supported(parse_measure("nDCG@10")) and not supported(parse_measure("Rprec"))


def close_runs(seed, n_queries=40, n_runs=4, depth=20):
    """Runs ranking the same chunks by quality x true grade + noise, and the true grades."""
    rng = np.random.default_rng(seed)
    truth, ranked = {}, [{} for _ in range(n_runs)]
    quality = np.linspace(0.8, 1.2, n_runs)
    for q in range(n_queries):
        grade = np.where(rng.random(60) < 0.5 * np.exp(-np.arange(60) / 12), rng.integers(1, 4, 60), 0)
        truth[f"q{q}"] = {f"c{c}": int(g) for c, g in enumerate(grade)}
        for r in range(n_runs):
            score = quality[r] * grade + rng.normal(size=60) - np.arange(60) * 0.01
            ranked[r][f"q{q}"] = [f"c{c}" for c in np.argsort(-score)[:depth]]
    return {f"r{r}": Run.from_ranked(ranked[r], name=f"r{r}") for r in range(n_runs)}, truth


@pytest.mark.slow
def test_judge_more_is_sane_on_a_simulated_collection():
    # judge a tenth of the pool, estimate; then judge in queue order with the true grades,
    # refreshing the queue every 2% of the pool, and count the pairs each comparison took
    runs, truth = close_runs(8)
    pool = Pool.from_runs(runs.values(), 10)
    pairs = list(zip(np.char.decode(pool.query_ids).tolist(), np.char.decode(pool.chunk_ids).tolist()))
    rng = np.random.default_rng(0)
    judged = {p: truth[p[0]][p[1]] for p in pairs if rng.random() < 0.1}

    def state():
        q, c = zip(*judged)
        return Settlement(Qrels(list(q), list(c), list(judged.values()), top_grade=3), runs, pool,
                          ["P@5", "nDCG@10", "AP"], top_grade=3, pairs="all", samples=0)

    start = state()
    estimates = {(c.measure, c.a, c.b): c.judge_more for c in start.comparisons() if c.status == "open"}
    assert estimates and all(0 < n <= len(pairs) - len(judged) for n in estimates.values())
    done0, took = len(judged), {}
    settlement = start
    while len(took) < len(estimates) and len(judged) < len(pairs):
        for q, c, _ in settlement.weights().ranked(max(1, len(pairs) // 50)):
            judged[q, c] = truth[q][c]
        settlement = state()
        for c in settlement.comparisons():
            key = (c.measure, c.a, c.b)
            if key in estimates and key not in took and c.status in ("certain", "tied"):
                took[key] = len(judged) - done0
    ratios = np.array([estimates[k] / took[k] for k in took])
    assert len(ratios) >= 0.8 * len(estimates)
    assert 1 / 3 <= np.median(ratios) <= 3  # the right size, in the middle


@pytest.mark.slow
def test_settle_imports_no_heavy_layer():
    code = ("import sys\n"
            "from ragjudge.metrics import Qrels, Run\n"
            "from ragjudge.metrics.settle import settle\n"
            "settle(Qrels.from_dict({'q': {'a': 1}}, top_grade=1), [Run.from_ranked({'q': ['a', 'b']}, name='A'),"
            " Run.from_ranked({'q': ['b', 'a']}, name='B')], 2, ['AP', 'nDCG@2'])\n"
            "print(','.join(n for n in ('textual', 'sqlalchemy', 'pydantic', 'rich') if n in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.slow
def test_expected_means_come_from_the_draws():
    # one query, A ranks an open pair first, B a judged non-relevant chunk: P@1 of A is 0 now
    # and its expected final value the model's P(relevant) for that pair
    runs = {"A": Run.from_ranked({"q1": ["o1", "j1"]}, name="A"),
            "B": Run.from_ranked({"q1": ["j1", "o1"]}, name="B")}
    qrels = Qrels.from_dict({"q1": {"j1": 0}}, top_grade=1)
    s = Settlement(qrels, runs, 1, ["P@1"], samples=20000, seed=1)
    p = s.model.probs[0, 1]
    assert s.mean(0, "A") == 0.0
    assert s.expected(0, "A") == pytest.approx(p, abs=4 * 0.5 / math.sqrt(20000))
    assert s.expected(0, "B") == 0.0
