"""Certain bounds of a difference between two runs (ragjudge.metrics.settle_measures,
settle_ap and settle_gain).

Each bound is checked by hand on small examples (the working is in the comments) and against
brute force: every grade the open pool pairs may get, the runs evaluated by trec_eval (through
pytrec_eval) where it has the measure and by ragjudge's kernels otherwise (RR@k, nDCG_exp, DCG),
the per-query min and max of the difference compared with the bounds: always within them, and
equal where the bound says it is exact.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

pytrec_eval = pytest.importorskip("pytrec_eval")

from ragjudge.errors import UsageError  # noqa: E402
from ragjudge.metrics import Qrels, Run, evaluate  # noqa: E402
from ragjudge.metrics import settle_ap, settle_gain  # noqa: E402
from ragjudge.metrics.settle import Pool, Settlement  # noqa: E402

pytestmark = pytest.mark.slow

INV3 = 1.0 / math.log2(3.0)  # the discount of rank 2

#: ragjudge measure -> trec_eval measure (None: ragjudge's kernel is the reference)
TREC = {"P@3": "P_3", "P@2": "P_2", "P(rel=2)@3": "P_3", "Success@2": "success_2",
        "Success@1": "success_1", "RR": "recip_rank", "RR(rel=2)": "recip_rank",
        "R@3": "recall_3", "R": "set_recall", "R(rel=2)@2": "recall_2", "AP": "map",
        "AP@3": "map_cut_3", "AP(rel=2)": "map", "nDCG@3": "ndcg_cut_3", "nDCG@2": "ndcg_cut_2",
        "nDCG": "ndcg", "RR@2": None, "nDCG_exp@3": None, "DCG@2": None}
GRADED = ("nDCG", "DCG")


def settlement(runs, judged, pool_depth, measure, top=1, threshold=1, **options):
    qrels = Qrels.from_dict(judged, top_grade=top) if any(judged.values()) else Qrels([], [], [], top_grade=top)
    named = {name: Run.from_ranked(ranked, name=name) if isinstance(next(iter(ranked.values()), []), list)
             else Run.from_dict(ranked, name=name) for name, ranked in runs.items()}
    pool = Pool.from_runs(named.values(), pool_depth)
    return Settlement(qrels, named, pool, [measure], top_grade=top, threshold=threshold, pairs="all",
                      samples=0, **options)


def per_query(s, a, b):
    low, high, exact = s.families[0].bounds(s.index[a], s.index[b])
    return low, high, exact


# --------------------------------------------------------------------------- by hand
HAND_RUNS = {"A": {"q1": ["d1", "d2", "d3", "d4"]}, "B": {"q1": ["d2", "d5", "d1", "d6"]}}
# pool depth 3: {d1, d2, d3} and {d2, d5, d1}; judged d1 = 2, d5 = 0 and d9 = 1 (ranked by no
# run); open: d2 (in both top 3s, B's rank 1, A's rank 2) and d3 (A's rank 3 only)
HAND_JUDGED = {"q1": {"d1": 2, "d5": 0, "d9": 1}}


def test_precision_by_hand():
    # P_A@3 = 1/3 (d1), P_B@3 = 1/3 (d1): now 0. d3 is A-only (+1/3 if relevant); d2 is in
    # both (cancels); B has no pair of its own: [0, 1/3]
    low, high, exact = per_query(settlement(HAND_RUNS, HAND_JUDGED, 3, "P@3", top=2), "A", "B")
    assert low[0] == pytest.approx(0.0) and high[0] == pytest.approx(1 / 3) and exact


def test_success_by_hand():
    # A's top 2 holds d1 (relevant): S_A = 1 whatever. B's top 2 is d2 (open, also in A's top 2)
    # and d5 (0): S_B is 1 iff d2 is relevant. So the difference is 1 - S_B: [0, 1]
    low, high, _ = per_query(settlement(HAND_RUNS, HAND_JUDGED, 3, "Success@2", top=2), "A", "B")
    assert (low[0], high[0]) == (0.0, 1.0)


def test_recall_by_hand():
    # R = 2 judged relevant (d1, d9) + the open pairs made relevant. hits@3: A 1, B 1.
    # d3 (A-only) relevant: (2 - 1) / 3 = 1/3; d2 (both) relevant: (2 - 2) / 3 = 0;
    # both: (3 - 2) / 4 = 1/4. So [0, 1/3]
    low, high, _ = per_query(settlement(HAND_RUNS, HAND_JUDGED, 3, "R@3", top=2), "A", "B")
    assert low[0] == pytest.approx(0.0) and high[0] == pytest.approx(1 / 3)


def test_average_precision_by_hand():
    # A = d1(rel) d2 d3 d4, B = d2 d5(0) d1(rel) d6, R = 2 + open relevant.
    # none:   A (1)/2 = 1/2,              B (1/3)/2 = 1/6          -> 1/3
    # d2:     A (1 + 2/2)/3 = 2/3,        B (1 + 2/3)/3 = 5/9      -> 1/9
    # d3:     A (1 + 2/3)/3 = 5/9,        B (1/3)/3 = 1/9          -> 4/9
    # d2, d3: A (1 + 1 + 1)/4 = 3/4,      B (1 + 2/3)/4 = 5/12     -> 1/3
    low, high, exact = per_query(settlement(HAND_RUNS, HAND_JUDGED, 3, "AP", top=2), "A", "B")
    assert low[0] == pytest.approx(1 / 9) and high[0] == pytest.approx(4 / 9) and exact


def test_reciprocal_rank_by_hand():
    # A = d3 d1, B = d1 d4; d1 relevant; pool depth 2: d3 and d4 open. Now 1/2 - 1 = -1/2;
    # d3 relevant: 1 - 1 = 0; d4 relevant changes nothing (B already has rank 1): [-1/2, 0]
    runs = {"A": {"q1": ["d3", "d1"]}, "B": {"q1": ["d1", "d4"]}}
    low, high, _ = per_query(settlement(runs, {"q1": {"d1": 1}}, 2, "RR"), "A", "B")
    assert (low[0], high[0]) == (-0.5, 0.0)


def test_ndcg_binary_scale_by_hand():
    # A = d1 d2, B = d2 d1, d1 = 1, d2 open, nDCG@2 on a 0/1 scale. d2 = 0: IDCG = 1,
    # A 1, B 1/log2(3): 1 - 1/log2(3). d2 = 1: both runs ideal, 0. So [0, 1 - 1/log2(3)]
    runs = {"A": {"q1": ["d1", "d2"]}, "B": {"q1": ["d2", "d1"]}}
    low, high, _ = per_query(settlement(runs, {"q1": {"d1": 1}}, 2, "nDCG@2"), "A", "B")
    assert low[0] == pytest.approx(0.0) and high[0] == pytest.approx(1 - INV3)


def test_ndcg_graded_by_hand():
    # The same on a 0..2 scale: d2 = 2 gives IDCG = 2 + 1/log2(3), DCG_A = 1 + 2/log2(3),
    # DCG_B = IDCG: (1 + 2 INV3 - 2 - INV3) / (2 + INV3) = -(1 - INV3) / (2 + INV3)
    runs = {"A": {"q1": ["d1", "d2"]}, "B": {"q1": ["d2", "d1"]}}
    low, high, _ = per_query(settlement(runs, {"q1": {"d1": 1}}, 2, "nDCG@2", top=2), "A", "B")
    assert low[0] == pytest.approx(-(1 - INV3) / (2 + INV3)) and high[0] == pytest.approx(1 - INV3)


def test_query_with_nothing_judged_is_open_and_counted():
    # q2 has no judgment: its two pool pairs are open. P@1: A's d7 vs B's d8 -> [-1, 1] there
    runs = {"A": {"q1": ["d1"], "q2": ["d7"]}, "B": {"q1": ["d1"], "q2": ["d8"]}}
    s = settlement(runs, {"q1": {"d1": 1}}, 1, "P@1")
    low, high, _ = per_query(s, "A", "B")
    assert s.layout.n_queries == 2
    assert low.tolist() == [0.0, -1.0] and high.tolist() == [0.0, 1.0]


def test_threshold_above_the_scale_freezes_and_zero_forces_relevance():
    runs = {"A": {"q1": ["d1", "d2"]}, "B": {"q1": ["d2", "d3"]}}
    # rel=3 on a 0..2 scale: no open pair can become relevant; the bounds are "now"
    low, high, _ = per_query(settlement(runs, {"q1": {"d1": 2}}, 2, "P(rel=3)@2", top=2), "A", "B")
    assert low[0] == high[0] == 0.0
    # rel=0: every pair, once judged, is relevant: d2 and d3 both -> P_A = 2/2, P_B = 2/2
    low, high, _ = per_query(settlement(runs, {"q1": {"d1": 2}}, 2, "P(rel=0)@2", top=2), "A", "B")
    assert low[0] == high[0] == 0.0


def test_unsupported_measure_is_refused():
    with pytest.raises(UsageError, match="cannot be settled"):
        settlement(HAND_RUNS, HAND_JUDGED, 3, "Rprec", top=2)


# --------------------------------------------------------------------------- brute force
def reference(measure, judged, runs, queries, threshold):
    """(runs, queries) values of the measure on complete grades ``judged``."""
    name = TREC[measure]
    rel = int(measure.split("rel=")[1].split(")")[0]) if "rel=" in measure else threshold
    out = []
    for run in runs.values():
        if name is None:
            values = evaluate(Qrels.from_dict(judged), Run.from_dict(run), [measure], threshold=threshold,
                              queries=list(queries)).per_query()
            row = {q: v[measure] for q, v in values.items()}
        else:
            got = pytrec_eval.RelevanceEvaluator(judged, {name.replace("set_recall", "set_recall")},
                                                 relevance_level=rel).evaluate(run)
            row = {q: v[name] for q, v in got.items()}
        out.append([row.get(q, 0.0) for q in queries])
    return np.array(out)


@st.composite
def collections(draw):
    top = draw(st.integers(1, 3))
    queries = draw(st.lists(st.sampled_from(["q1", "q2", "q10"]), min_size=1, max_size=2, unique=True))
    chunks = [f"d{i}" for i in range(7)]
    runs = {}
    for name in ("A", "B", "C"):
        run = {}
        for q in queries:
            docs = draw(st.lists(st.sampled_from(chunks), min_size=0, max_size=5, unique=True))
            if docs:  # scores in halves: ties are frequent, broken by chunk id as trec_eval does
                run[q] = {d: draw(st.integers(0, 6)) / 2 for d in docs}
        runs[name] = run
    judged = {q: {d: draw(st.integers(0, top)) for d in
                  draw(st.lists(st.sampled_from(chunks), max_size=3, unique=True))} for q in queries}
    return top, draw(st.integers(1, top)), runs, judged, draw(st.integers(1, 3))


def brute_force(measure, data):
    top, threshold, runs, judged, depth = data
    assume(all(runs.values()))
    s = settlement(runs, judged, depth, measure, top=top, threshold=threshold)
    lay = s.layout
    queries = [q.decode() for q in lay.query_ids.tolist()]
    open_q = [queries[i] for i in lay.open_query]
    open_c = [c.decode() for c in lay.open_chunk.tolist()]
    grades = range(top + 1) if measure.startswith(GRADED) else (0, top)
    assume(len(grades) ** lay.n_vars <= 300)
    values = []
    for assignment in itertools.product(grades, repeat=lay.n_vars):
        final = {q: dict(judged.get(q, {})) for q in queries}
        for q, c, g in zip(open_q, open_c, assignment):
            final[q][c] = g
        values.append(reference(measure, final, runs, queries, threshold))
    values = np.stack(values)  # (assignments, runs, queries)
    for i, j in itertools.permutations(range(3), 2):
        low, high, exact = s.families[0].bounds(i, j)
        diff = values[:, i] - values[:, j]
        assert np.all(low <= diff.min(axis=0) + 1e-9), (measure, low, diff.min(axis=0))
        assert np.all(high >= diff.max(axis=0) - 1e-9), (measure, high, diff.max(axis=0))
        if exact:
            np.testing.assert_allclose(low, diff.min(axis=0), atol=1e-9)
            np.testing.assert_allclose(high, diff.max(axis=0), atol=1e-9)


SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])


@pytest.mark.parametrize("measure", sorted(TREC))
@SETTINGS
@given(data=collections())
def test_bounds_are_the_extremes_of_every_assignment(measure, data):
    brute_force(measure, data)


@pytest.mark.parametrize("tiers", [(1, 1), (1, 100)], ids=["interval", "relaxation"])
@pytest.mark.parametrize("measure", ["AP", "AP@3", "AP(rel=2)"])
@settings(SETTINGS, max_examples=15)
@given(data=collections())
def test_ap_bounds_stay_valid_at_every_tier(measure, tiers, data):
    # every query through the interval bound, or through the relaxation: valid, if looser
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(settle_ap, "AP_EXACT_PAIRS", tiers[0])
        patch.setattr(settle_ap, "AP_RELAX_PAIRS", tiers[1])
        brute_force(measure, data)


@settings(SETTINGS, max_examples=15)
@given(data=collections())
def test_ndcg_bound_stays_valid_when_dinkelbach_stops_early(data):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(settle_gain, "MAX_STEPS", 1)
        brute_force("nDCG@3", data)
