"""The live engine's full passes gather grade matrices from pair numbers (services.live) instead
of looking each ranked chunk up in the qrels: the matrices, the per-query counts shared by the
runs of a view and every value equal a plain evaluation's, and the numbers stay those of
``ragjudge eval`` through label events that number new pairs (chunks no run ranks, pairs only
adjudicated, a complete reference's closed world, a query added while the screen is open)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from projectkit import rights

from ragjudge.metrics.context import EvalContext
from ragjudge.metrics.data import Qrels
from ragjudge.metrics.evaluate import max_depth
from ragjudge.services.runs import stored as ev_stored
from ragjudge.services.scoring import evaluation as ev_evaluation
from ragjudge.services.labels import events as judging
from ragjudge.services.scoring import live, livepass, livespace
from ragjudge.services.scoring.livecore import LiveView
from ragjudge.services.scoring.livepass import LayoutContext, LivePass
from ragjudge.services.gold.adjudication import adjudicate
from ragjudge.store.schema import Annotator, Query

MEASURES = ["P@1", "P@5", "R@10", "RR", "AP", "nDCG@10", "Rprec", "ERR@10", "Judged@10",
            "ContextPrecision@5", "bpref", "nDCG_exp@5", "nDCG", "P(rel=2)@3"]


def full_pass(engine: live.LiveEvaluation, view: LiveView) -> LivePass:
    """The full pass of one of the engine's views, as the engine makes it."""
    return LivePass(engine.space, view, threshold=engine.threshold, top_grade=engine.project.scale.max,
                    answers_only=engine.answers_only)


@pytest.mark.parametrize("rule", ["median", "max", "annotator:ben"])
def test_gathered_matrices_shared_counts_and_values_equal_a_plain_context(demo, rule):
    engine = live.LiveEvaluation(demo, measures=MEASURES, rule=rule)
    engine.load()
    rnd = random.Random(2)
    for _ in range(25):  # pairs numbered after the load, some on chunks no run ranks
        q = rnd.choice(engine.query_ids)
        judging.record_label(demo, annotator=rnd.choice(["ana", "ben", "zoe"]), query_id=q,
                             chunk_id=rnd.choice(["damaged-01", "address-01", "api-02"]),
                             grade=rnd.randint(0, 3))
    engine.recompute()
    for view in engine.views.values():
        p = full_pass(engine, view)
        for name in engine.runs:  # the first run computes the qrels' counts, the others share them
            p.evaluate(name)
        assert p.plain
        for name, run in engine.runs.items():
            plain = EvalContext(p.qrels, run, p.qids, threshold=engine.threshold,
                                depth=max_depth(p.plain))
            for j, m in enumerate(p.plain):
                assert np.array_equal(p.values[name][:, j], m(plain), equal_nan=True), \
                    (view.rule, name, str(m))


def test_layout_context_matrix_and_counts(demo):
    engine = live.LiveEvaluation(demo, measures=MEASURES)
    engine.load()
    view = engine.views[engine.rule]
    p = full_pass(engine, view)
    p.prepare()
    names = list(engine.runs)
    contexts = []
    for name in names:
        layout = engine.space.layouts[name]
        ctx = LayoutContext(p.qrels, engine.runs[name], p.qids, n_ret=layout.n_ret[p.rows],
                                  gather=lambda size, layout=layout: p.source[layout.pairs[p.rows, :size]],
                                  threshold=engine.threshold, depth=None,
                                  like=contexts[0] if contexts else None)
        plain = EvalContext(p.qrels, engine.runs[name], p.qids, threshold=engine.threshold)
        assert ctx.depth == plain.depth
        assert np.array_equal(ctx.n_ret, plain.n_ret)
        assert np.array_equal(ctx.grade_matrix, plain.grade_matrix)
        assert np.array_equal(ctx.chunk_ids, plain.chunk_ids)
        for rel in (None, 2, 3):
            assert np.array_equal(ctx.n_relevant(rel), plain.n_relevant(rel))
        assert np.array_equal(ctx.n_judged, plain.n_judged)
        cutoffs = [1, 2, 3, 5, 10, 20, 1000, None]
        if not contexts:
            ctx.prime_ideal_dcg(cutoffs, "grade")
            ctx.prime_ideal_dcg(cutoffs, "exp")
        for k in cutoffs:
            for gain in ("grade", "exp"):
                assert np.array_equal(ctx.ideal_dcg(k, gain), plain.ideal_dcg(k, gain)), (k, gain)
        contexts.append(ctx)
    assert contexts[1].__dict__["_idcg"] is contexts[0].__dict__["_idcg"]


def test_prime_ideal_dcg_on_random_qrels_with_negative_and_tied_grades():
    rnd = random.Random(8)
    for _ in range(30):
        q, c, g = [], [], []
        for i in range(rnd.randint(1, 12)):
            for j in rnd.sample(range(60), rnd.randint(1, 40)):
                q.append(f"q{i:02d}")
                c.append(f"c{j}")
                g.append(rnd.choice([-1, 0, 0, 1, 1, 2, 3, 7]))
        qrels = Qrels(q, c, np.array(g), top_grade=7)
        qids = qrels.query_id_bytes
        n = len(qids)
        ctx = LayoutContext(qrels, None, qids, n_ret=np.zeros(n, dtype=np.int64),
                                  gather=lambda size, n=n: np.full((n, size), -1, dtype=np.int32),
                                  threshold=1, depth=None)
        plain = EvalContext(qrels, None, qids)
        cutoffs = [None, 1, 2, 3, 4, 7, 13, 40, 41, 500]
        ctx.prime_ideal_dcg(cutoffs, "grade")
        ctx.prime_ideal_dcg(cutoffs, "exp")
        for k in cutoffs:
            for gain in ("grade", "exp"):
                assert np.array_equal(ctx.ideal_dcg(k, gain), plain.ideal_dcg(k, gain))


def test_qrels_from_grouped_lay_out_as_the_constructor():
    rnd = random.Random(4)
    for _ in range(50):
        queries = sorted({f"q{rnd.randint(0, 30):02d}" for _ in range(rnd.randint(1, 8))})
        q, c, g, counts = [], [], [], []
        for query in queries:
            chunks = rnd.sample(range(100), rnd.randint(1, 25))
            counts.append(len(chunks))
            for j in chunks:
                q.append(query)
                c.append(f"c{j}")
                g.append(rnd.choice([-2, 0, 1, 1, 2, 3]))
        made = Qrels(q, c, np.array(g), top_grade=3)
        grouped = Qrels.from_grouped(np.array([x.encode() for x in queries]), np.array(counts),
                                     np.array([x.encode() for x in c]), np.array(g), top_grade=3)
        for name in ("qidx", "chunk_ids", "grades", "offsets", "ideal_rank", "query_id_bytes"):
            assert np.array_equal(getattr(made, name), getattr(grouped, name)), name
        assert made.max_grade == grouped.max_grade and made.query_ids == grouped.query_ids
    with pytest.raises(Exception, match="above the top of the scale"):
        Qrels.from_grouped(np.array([b"q1"]), np.array([1]), np.array([b"c1"]), np.array([4]), top_grade=3)


# -- numbers equal ragjudge eval through label events that number new pairs ----------------


def _reference(project, rule, measures):
    qrels, rule = ev_evaluation.project_qrels(project, rule)
    runs = {n: ev_stored.project_run(project, n) for n in ev_stored.project_run_names(project)}
    return ev_evaluation.evaluate_all(qrels, runs, measures, threshold=project.scale.threshold,
                           project=project, rule=rule)


def _assert_same(engine, project) -> None:
    expected = _reference(project, engine.rule, engine.measures)
    snap = engine.snapshot()
    assert snap.n_queries == expected.n_queries()
    assert snap.gold_pairs == len(ev_evaluation.project_qrels(project, engine.rule)[0]) or engine.policy.complete
    for run in expected.run_names:
        for m, value in expected.aggregate(run).items():
            got = snap.means[run][m]
            assert got == value or (math.isnan(got) and math.isnan(value)), (run, m, got, value)


def _same_as_fresh(engine, project) -> None:
    fresh = live.LiveEvaluation(project, measures=engine.measures, rule=engine.rule)
    fresh.load()
    a, b = engine.snapshot(), fresh.snapshot()
    assert (a.labels_used, a.annotators, a.n_queries, a.gold_pairs) == \
        (b.labels_used, b.annotators, b.n_queries, b.gold_pairs)
    assert a.means == b.means and a.ranges == b.ranges and a.coverage == b.coverage
    assert engine.details().pool_judged == fresh.details().pool_judged


@pytest.mark.slow
@pytest.mark.parametrize("complete", [False, True])
def test_a_reference_annotator_and_pairs_numbered_on_the_fly(project, complete):
    measures = ["P@5", "R@10", "AP", "nDCG@10", "RR", "Judged@10", "bpref"]
    project.write(lambda s: s.add(Annotator(name="nist", reference=True, complete=complete)))
    rnd = random.Random(3)
    ranked = ev_stored.project_run(project, "bm25").to_ranked()
    for q in ("q1", "q2"):
        for c in rnd.sample(ranked[q], 3) + ["c20"]:
            judging.record_label(project, annotator="nist", query_id=q, chunk_id=c, grade=rnd.randint(0, 3))
    for q in ("q1", "q2", "q3"):
        for who in ("ana", "ben"):
            for c in rnd.sample(ranked[q], 4):
                judging.record_label(project, annotator=who, query_id=q, chunk_id=c, grade=rnd.randint(0, 3))
    engine = live.LiveEvaluation(project, measures=measures)
    engine.load()
    _assert_same(engine, project)
    steps = [
        lambda: judging.record_label(project, annotator="ana", query_id="q4", chunk_id=ranked["q4"][2], grade=3),
        lambda: judging.record_label(project, annotator="nist", query_id="q3", chunk_id=ranked["q3"][0], grade=2),
        lambda: judging.record_label(project, annotator="ben", query_id="q5", chunk_id="c19", grade=1),
        lambda: adjudicate(project, query_id="q5", chunk_id=ranked["q5"][4], grade=3, access=rights(project, "lead"), reason="t"),
        lambda: judging.record_label(project, annotator="cleo", query_id="q1", chunk_id=ranked["q1"][9], grade=2),
        lambda: judging.undo_last(project, "nist"),
    ]
    for step in steps:
        step()
        assert engine.poll()
        _assert_same(engine, project)
    _same_as_fresh(engine, project)
    engine.recompute()
    _assert_same(engine, project)
    _same_as_fresh(engine, project)


def test_a_query_added_while_the_screen_is_open_reloads_it(project):
    judging.record_label(project, annotator="ana", query_id="q1", chunk_id="c05", grade=2)
    engine = live.LiveEvaluation(project, measures=["P@5", "nDCG@10"])
    engine.load()
    project.write(lambda s: s.add(Query(id="q9", text="a new question")))
    judging.record_label(project, annotator="ana", query_id="q9", chunk_id="c01", grade=3)
    assert engine.poll()
    assert "q9" in engine.row
    _assert_same(engine, project)
    _same_as_fresh(engine, project)


@pytest.mark.slow
def test_many_labels_between_polls_on_the_large_path(demo, monkeypatch):
    """Above the thresholds a full pass runs on two threads and numbers many pairs through the
    hash index; the numbers are those of the small path."""
    rnd = random.Random(6)
    ranked = {n: ev_stored.project_run(demo, n).to_ranked() for n in ev_stored.project_run_names(demo)}
    engine = live.LiveEvaluation(demo, measures=MEASURES)
    engine.load()
    for _ in range(120):
        run = rnd.choice(list(ranked))
        q = rnd.choice(sorted(ranked[run]))
        judging.record_label(demo, annotator=rnd.choice(["ana", "ben", "chen", "dan"]), query_id=q,
                             chunk_id=rnd.choice(ranked[run][q]), grade=rnd.randint(0, 3))
    for module in (livespace, livepass):  # the layouts and the full passes on two threads
        monkeypatch.setattr(module, "PARALLEL_CELLS", 0)
    engine.recompute()
    _assert_same(engine, demo)
    small = live.LiveEvaluation(demo, measures=MEASURES)
    for module in (livespace, livepass):
        monkeypatch.setattr(module, "PARALLEL_CELLS", 10**12)
    small.load()
    assert small.snapshot().means == engine.snapshot().means
    assert small.snapshot().ranges == engine.snapshot().ranges


def test_a_large_project_shows_the_gold_numbers_before_the_annotators_views(demo, monkeypatch):
    """load(first=...) on a large project: ``first`` is called once the gold view is
    evaluated, the annotators' views (the ranges) come after; a small one is evaluated whole."""
    seen = []

    def first() -> None:
        snap = engine.snapshot()
        seen.append((list(engine.views), snap.means, snap.ranges))

    engine = live.LiveEvaluation(demo, measures=MEASURES)
    engine.load(first=first)
    assert seen == []  # the demo is small: one pass, nothing early
    monkeypatch.setattr(live, "EARLY_CELLS", 0)
    engine = live.LiveEvaluation(demo, measures=MEASURES)
    engine.load(first=first)
    (views, means, ranges), = seen
    assert views == [engine.rule] and ranges == {n: {} for n in engine.runs}
    final = engine.snapshot()
    assert means == final.means and final.ranges != ranges
    assert sorted(engine.views) == sorted([engine.rule, "annotator:ana", "annotator:ben", "annotator:chen"])
