"""services.live: the incremental numbers equal a from-scratch evaluation, label after label.

The reference is the path ``ragjudge eval`` takes (gold qrels from services.qrels, runs from the
project, services.evaluation.evaluate_all); equality is exact (==), since the engine sums each
column in the same query order.
"""

from __future__ import annotations

import math
import random

import pytest
from projectkit import rights

from ragjudge.services.runs import stored as ev_stored
from ragjudge.services.scoring import evaluation as ev_evaluation
from ragjudge.services.scoring.files import DEFAULT_MEASURES
from ragjudge.services.labels import events as judging
from ragjudge.services.scoring import live
from ragjudge.services.gold.adjudication import adjudicate

MEASURES = ["P@1", "P@5", "R@10", "RR", "AP", "nDCG@10", "Rprec", "ERR@10", "Judged@10",
            "ContextPrecision@5", "bpref"]


def reference(project, rule, measures, threshold=None):
    qrels, rule = ev_evaluation.project_qrels(project, rule)
    runs = {n: ev_stored.project_run(project, n) for n in ev_stored.project_run_names(project)}
    return ev_evaluation.evaluate_all(qrels, runs, measures, threshold=project.scale.threshold
                           if threshold is None else threshold, project=project, rule=rule)


def assert_same(engine, project, rule=None):
    expected = reference(project, rule or engine.rule, engine.measures, engine.threshold)
    snap = engine.snapshot()
    assert snap.n_queries == expected.n_queries()
    for run in expected.run_names:
        for m, value in expected.aggregate(run).items():
            got = snap.means[run][m]
            assert got == value or (math.isnan(got) and math.isnan(value)), (run, m, got, value)


def _ranked(project):
    return {n: ev_stored.project_run(project, n).to_ranked() for n in ev_stored.project_run_names(project)}


@pytest.mark.slow
def test_labels_undo_and_adjudication_keep_every_number_exact(demo):
    engine = live.LiveEvaluation(demo, measures=MEASURES)
    engine.load()
    assert_same(engine, demo)
    rnd = random.Random(7)
    ranked = _ranked(demo)
    queries = sorted(ranked["bm25"])
    for step in range(40):
        q = rnd.choice(queries)
        c = rnd.choice(ranked[rnd.choice(list(ranked))][q][:15])
        who = rnd.choice(["ana", "ben", "chen"])
        if step % 9 == 8:
            undone = judging.undo_last(demo, who)
            q = undone.query_id if undone is not None else q
        elif step % 13 == 12:
            adjudicate(demo, query_id=q, chunk_id=c, grade=rnd.randint(0, 3), access=rights(demo, "lead"), reason="test")
        else:
            judging.record_label(demo, annotator=who, query_id=q, chunk_id=c, grade=rnd.randint(0, 3))
        assert engine.poll()
        assert q in engine.touched
        assert_same(engine, demo)
    assert not engine.poll()  # nothing new: no work


def test_a_recheck_event_does_not_change_the_gold_grade(demo):
    """A blind re-check is the annotator seeing a pair again; like gold_qrels, the engine keeps
    the label they gave the first time."""
    engine = live.LiveEvaluation(demo, measures=MEASURES[:6])
    engine.load()
    before = engine.snapshot().means
    ranked = _ranked(demo)["bm25"]
    for who in ("ana", "ben", "chen"):
        judging.record_label(demo, annotator=who, query_id="q03", chunk_id=ranked["q03"][0],
                             grade=0 if who != "ben" else 3, source="recheck")
    assert engine.poll()
    assert engine.snapshot().means == before
    assert_same(engine, demo)


@pytest.mark.slow
def test_err_is_on_the_projects_scale_so_a_new_top_grade_moves_no_other_query(project):
    """ERR's g_max is the top of the project's scale (3), not the highest label so far: the
    first grade 3 changes ERR of its own query only."""
    ranked = _ranked(project)["bm25"]
    for q in ("q1", "q2", "q3"):
        judging.record_label(project, annotator="ann", query_id=q, chunk_id=ranked[q][0], grade=1)
    engine = live.LiveEvaluation(project, measures=["ERR@10", "nDCG@10"])
    engine.load()
    before = engine.snapshot().means["bm25"]["ERR@10"]
    assert before == pytest.approx(1 / 8)  # grade 1 at rank 1: R = (2^1 - 1) / 2^3
    judging.record_label(project, annotator="ann", query_id="q4", chunk_id=ranked["q4"][5], grade=3)
    engine.poll()
    assert_same(engine, project)
    q123 = engine.evaluation().results["bm25"].subset(["q1", "q2", "q3"]).aggregate()["ERR@10"]
    assert q123 == before


@pytest.mark.parametrize("rule", ["majority", "mean", "min", "max", "annotator:ben", "adjudicated"])
def test_every_rule_and_a_rule_change(demo, rule):
    engine = live.LiveEvaluation(demo, measures=MEASURES[:6])
    engine.load()
    ranked = _ranked(demo)["hybrid"]
    adjudicate(demo, query_id="q01", chunk_id=ranked["q01"][0], grade=3, access=rights(demo, "lead"), reason="clear answer")
    engine.set_rule(rule)
    assert_same(engine, demo, rule)
    judging.record_label(demo, annotator="ben", query_id="q02", chunk_id=ranked["q02"][1], grade=0)
    engine.poll()
    assert_same(engine, demo, rule)


def test_one_adjudicated_pair_by_hand(demo):
    """Rule 'adjudicated' with one adjudicated pair: bm25 ranks damaged-01 second for q01, so
    P@5 = 1/5, RR = 1/2; hybrid ranks it first: P@5 = 1/5, RR = 1."""
    engine = live.LiveEvaluation(demo, measures=["P@5", "RR"], rule="adjudicated")
    engine.load()
    adjudicate(demo, query_id="q01", chunk_id="damaged-01", grade=3, access=rights(demo, "lead"), reason="clear")
    assert engine.poll()
    snap = engine.snapshot()
    assert snap.n_queries == 1 and snap.gold_pairs == 1
    assert snap.means["bm25"] == {"P@5": 0.2, "RR": 0.5}
    assert snap.means["hybrid"] == {"P@5": 0.2, "RR": 1.0}


def _in_place_of_gold(project, annotator, measures):
    """The gold mean moved by the annotator's difference from the gold on the queries they
    judged (their grades in place of the gold's there), per run and measure, through
    services.qrels and services.evaluation."""
    from ragjudge.metrics.data import Qrels
    from ragjudge.services.gold.qrels import gold_qrels

    gold = {(q, c): g for q, c, g in gold_qrels(project)}
    mine = {(q, c): g for q, c, g in gold_qrels(project, f"annotator:{annotator}")}
    queries = {q for q, _ in mine}
    overlay = {k: g for k, g in gold.items() if k[0] in queries} | mine
    runs = {n: ev_stored.project_run(project, n) for n in ev_stored.project_run_names(project)}

    def scores(judgments, only=None):
        (q, c), g = zip(*judgments), list(judgments.values())
        qrels = Qrels(list(q), list(c), g, top_grade=project.scale.max)
        result = ev_evaluation.evaluate_all(qrels, runs, measures, threshold=project.scale.threshold,
                                 project=project, rule="median")
        return {n: (result.results[n].subset(sorted(only)) if only else result.results[n]).aggregate()
                for n in runs}

    everything, own, same = scores(gold), scores(overlay), scores(gold, queries)
    return {n: {m: everything[n][m] + own[n][m] - same[n][m] for m in measures} for n in runs}


def test_annotator_ranges_move_the_gold_by_each_annotators_difference_on_their_queries(demo):
    engine = live.LiveEvaluation(demo, measures=["nDCG@10", "P@5"])
    engine.load()
    judging.record_label(demo, annotator="chen", query_id="m01", chunk_id="address-01", grade=3)
    engine.poll()
    snap = engine.snapshot()
    assert sorted(snap.in_ranges) == ["ana", "ben", "chen"] and not snap.too_few
    own = {a: _in_place_of_gold(demo, a, ["nDCG@10", "P@5"]) for a in ("ana", "ben", "chen")}
    for run in ("bm25", "hybrid", "title_only"):
        for m in ("nDCG@10", "P@5"):
            values = {a: own[a][run][m] for a in own}
            low, high = snap.ranges[run][m]
            assert low == pytest.approx(min(values.values()), abs=1e-12)
            assert high == pytest.approx(max(values.values()), abs=1e-12)
            lo_name, hi_name = snap.range_ends[run][m]
            assert values[lo_name] == pytest.approx(low, abs=1e-12)
            assert values[hi_name] == pytest.approx(high, abs=1e-12)


@pytest.mark.slow
def test_header_figures_intervals_and_comparison_match_the_services(demo):
    from ragjudge.services.gold.pool import pool_size_and_judged

    engine = live.LiveEvaluation(demo)
    engine.load()
    snap, details = engine.snapshot(), engine.details()
    reference_eval = reference(demo, None, engine.measures)
    for run in snap.run_names:
        cli = reference_eval.intervals(run)
        for m in engine.measures:
            assert details.intervals[run][m] == pytest.approx(cli[m][1:], abs=1e-12, nan_ok=True)
    pool = pool_size_and_judged(demo)
    assert (details.pool_pairs, details.pool_judged) == (pool["pairs"], pool["judged"])
    assert snap.labels_used == 1800 and snap.annotators == ["ana", "ben", "chen"]
    # unjudged in the top 10 = ranked there minus judged there, over the judged queries
    result = reference(demo, None, ["Judged@10"]).results["bm25"]
    ranked = _ranked(demo)["bm25"]
    shown = sum(min(len(ranked.get(q, [])), 10) for q in result.query_ids)
    assert snap.unjudged_top10["bm25"] == shown - round(result.values[:, 0].sum() * 10)
    rows = ev_evaluation.compare(reference_eval.__class__(
        measures=reference_eval.measures, results={n: reference_eval.results[n] for n in ("bm25", "hybrid")},
        query_ids=reference_eval.query_ids, averaging=reference_eval.averaging,
        queries_mode="judged", threshold=1), baseline="bm25")
    mine = ev_evaluation.compare(engine.evaluation(["bm25", "hybrid"]), baseline="bm25")
    assert [r.as_dict() for r in mine] == [r.as_dict() for r in rows]


def test_strata_curves_and_per_query_rows(demo):
    engine = live.LiveEvaluation(demo, measures=["nDCG@10", "R@5"], curve="R")
    engine.load()
    snap = engine.snapshot(measure="nDCG@10", by="category")
    strata = ev_evaluation.project_strata(demo, "category")
    expected = ev_evaluation.evaluate_all(*_qr(demo), ["nDCG@10", "R@5"], strata=strata, by="category")
    assert list(snap.strata) == list(expected.strata)
    for stratum in expected.strata:
        for run in snap.run_names:
            assert snap.strata[stratum][run] == pytest.approx(expected.aggregate(run, stratum), abs=1e-15)
    curve = ev_evaluation.evaluate_all(*_qr(demo), [f"R@{k}" for k in range(1, 21)])
    for run in snap.run_names:
        assert snap.curve_values[run] == pytest.approx(list(curve.aggregate(run).values()), abs=1e-15)
    pq = expected.per_query("bm25")
    assert dict(zip(snap.rows.query_ids, snap.rows.values["bm25"].tolist())) == {
        q: v["nDCG@10"] for q, v in pq.items()}
    with pytest.raises(Exception, match="cutoff"):
        engine.set_curve("Rprec")


def _qr(project):
    qrels, _ = ev_evaluation.project_qrels(project)
    return qrels, {n: ev_stored.project_run(project, n) for n in ev_stored.project_run_names(project)}


def test_measures_are_saved_in_the_project(demo):
    from ragjudge.services.scoring.answers import ANSWER_MEASURES

    # until saved: the default scorecard, with the answer measures (the demo's answers are judged)
    assert live.saved_measures(demo) == [*DEFAULT_MEASURES, *ANSWER_MEASURES]
    live.save_measures(demo, ["nDCG@20", "P(rel=2)@5"], access=rights(demo))
    assert live.saved_measures(demo) == ["nDCG@20", "P(rel=2)@5"]
    engine = live.LiveEvaluation(demo)
    assert engine.measures == ["nDCG@20", "P(rel=2)@5"]
    with pytest.raises(Exception, match="nDCG@x|unknown|measure"):
        live.save_measures(demo, ["nDCG@x"], access=rights(demo))


def test_knee_and_best_marks():
    from ragjudge.tui.widgets.evalpane import best_rows, knee

    ks = list(range(1, 8))
    assert knee([0.1, 0.3, 0.5, 0.6, 0.605, 0.607, 0.608], ks) == 4
    assert knee([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7], ks) == 7
    assert best_rows([0.5, 0.7, 0.7]) == {1, 2}
    assert best_rows([0.5, 0.5]) == set()
    assert best_rows([float("nan"), 0.2, 0.1]) == {1}
    assert best_rows([float("nan"), 0.2]) == set()  # one value: nothing to compare (as ragjudge eval)


@pytest.mark.slow
def test_the_engine_never_imports_textual():
    import subprocess
    import sys

    code = "import sys, ragjudge.services.scoring.live; assert 'textual' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_the_gold_of_some_labels_agrees_with_the_rule_written_pair_by_pair():
    """The vectorized rule (one implementation for the project's gold and the screen's touched
    pairs) gives, pair by pair, the grades of the rule written out in the test."""
    from test_label_reads import reference_gold

    from ragjudge.services.events.labels import label_arrays_from_rows
    from ragjudge.services.gold.gold import labels_gold

    rnd = random.Random(3)
    for trial in range(60):
        rows = []
        for q in range(rnd.randint(1, 4)):
            for c in range(rnd.randint(1, 5)):
                for a in rnd.sample(["ann", "bob", "cy", "dee", "eve"], rnd.randint(1, 5)):
                    rows.append((f"q{q}", f"c{c}", a, rnd.randint(0, 3)))
        rows.sort()
        labels = label_arrays_from_rows(rows)
        decided = {("q0", "c0"): 2} if trial % 3 == 0 else {}
        for rule in ("median", "majority", "mean", "min", "max", "annotator:bob", "adjudicated"):
            expected = reference_gold(rows, decided, rule)
            q, c, g = labels_gold(labels, decided, rule)
            assert dict(zip(zip(q.tolist(), c.tolist()), g.tolist())) == expected, (rule, rows)


# -- a full recomputation works from the engine's own copy of the labels, brought up to date
#    with the events written since; it must equal a fresh engine (and ``ragjudge eval``)


def _same_snapshot(a, b, *, ranges_exact: bool = True) -> None:
    """Equal numbers; ``ranges_exact=False``: the annotators' ranges to 1e-12 (a view kept
    through a rule change carries the values its label-by-label updates gave, which can differ
    from a whole-view evaluation in the last bit of a dot product)."""
    sa, sb = a.snapshot(), b.snapshot()
    assert (sa.labels_used, sa.annotators, sa.n_queries, sa.gold_pairs) == \
        (sb.labels_used, sb.annotators, sb.n_queries, sb.gold_pairs)
    assert a.labels is not None and b.labels is not None
    assert a.labels.per_query == b.labels.per_query
    for run, values in sb.means.items():
        for m, value in values.items():
            got = sa.means[run][m]
            assert got == value or (math.isnan(got) and math.isnan(value)), (run, m)
    if ranges_exact:
        assert sa.ranges == sb.ranges
    else:
        assert {r: set(v) for r, v in sa.ranges.items()} == {r: set(v) for r, v in sb.ranges.items()}
        for run, values in sb.ranges.items():
            for m, (low, high) in values.items():
                assert math.isclose(sa.ranges[run][m][0], low, rel_tol=1e-12, abs_tol=1e-15)
                assert math.isclose(sa.ranges[run][m][1], high, rel_tol=1e-12, abs_tol=1e-15)


@pytest.mark.slow
def test_recompute_after_unpolled_labels_equals_a_fresh_engine(demo):
    engine = live.LiveEvaluation(demo, measures=MEASURES)
    engine.load()
    ranked = _ranked(demo)
    queries = sorted(ranked["bm25"])
    rnd = random.Random(3)
    for round_ in range(3):
        for step in range(12):
            q = rnd.choice(queries)
            c = rnd.choice(ranked["hybrid"][q][:12])
            who = rnd.choice(["ana", "ben", "chen", "dora"])  # dora: an annotator new to the project
            if step == 5:
                judging.undo_last(demo, "ana")
            elif step == 7:
                adjudicate(demo, query_id=q, chunk_id=c, grade=rnd.randint(0, 3), access=rights(demo, "lead"), reason="t")
            elif step == 9:
                judging.record_label(demo, annotator=who, query_id=q, chunk_id=c, grade=0, source="recheck")
            else:
                judging.record_label(demo, annotator=who, query_id=q, chunk_id=c, grade=rnd.randint(0, 3))
            if round_ == 1 and step % 4 == 0:
                engine.poll()  # some events taken in by poll, the rest by recompute
        engine.recompute()
        assert_same(engine, demo)
        fresh = live.LiveEvaluation(demo, measures=MEASURES)
        fresh.load()
        _same_snapshot(engine, fresh)
        assert "annotator:dora" in engine.views
    engine.set_rule("max")  # a rule change is a recomputation from the copy too
    assert_same(engine, demo, "max")
    assert not engine.poll()


@pytest.mark.slow
def test_labels_of_many_queries_read_in_batches_and_the_stamp(demo, monkeypatch):
    from ragjudge.services.agreement.ratings import labels_stamp

    monkeypatch.setattr(live, "IN_BATCH", 3)  # the touched queries' labels read 3 queries a time
    engine = live.LiveEvaluation(demo, measures=MEASURES)
    engine.load()
    assert engine._stamp() == labels_stamp(demo)
    ranked = _ranked(demo)
    rnd = random.Random(11)
    for q in sorted(ranked["bm25"])[:10]:
        judging.record_label(demo, annotator=rnd.choice(["ana", "ben"]), query_id=q,
                             chunk_id=ranked["bm25"][q][0], grade=rnd.randint(0, 3))
    adjudicate(demo, query_id=q, chunk_id=ranked["bm25"][q][1], grade=2, access=rights(demo, "lead"), reason="t")
    assert engine._stamp() == labels_stamp(demo) != engine.stamp
    assert engine.poll()
    assert len(engine.touched) == 10
    assert_same(engine, demo)
    fresh = live.LiveEvaluation(demo, measures=MEASURES)
    fresh.load()
    _same_snapshot(engine, fresh)


@pytest.mark.slow
def test_rule_and_curve_changes_keep_the_annotators_views_and_equal_a_fresh_engine(demo):
    engine = live.LiveEvaluation(demo, measures=MEASURES)
    engine.load()
    ranked = _ranked(demo)
    rnd = random.Random(5)
    for q in sorted(ranked["bm25"])[:6]:  # polled: the views are up to date
        judging.record_label(demo, annotator="ben", query_id=q, chunk_id=ranked["bm25"][q][1],
                             grade=rnd.randint(0, 3))
        engine.poll()
    engine.set_rule("max")  # the annotators' views hold the gold of their queries: made again
    kept = engine.views["annotator:ben"]
    fresh = live.LiveEvaluation(demo, measures=MEASURES, rule="max")
    fresh.load()
    _same_snapshot(engine, fresh, ranges_exact=False)
    assert_same(engine, demo, "max")
    engine.set_curve("P")
    assert engine.views["annotator:ben"] is kept
    fresh = live.LiveEvaluation(demo, measures=MEASURES, rule="max", curve="P")
    fresh.load()
    _same_snapshot(engine, fresh, ranges_exact=False)
    assert engine.snapshot().curve_values == fresh.snapshot().curve_values
    assert engine.snapshot().pr_values == fresh.snapshot().pr_values
    # the gold rule becomes one annotator's labels: that view is the gold one now, not a range
    engine.set_rule("annotator:ben")
    assert "annotator:ben" not in [r for r in engine.views if r != engine.rule]
    fresh = live.LiveEvaluation(demo, measures=MEASURES, rule="annotator:ben", curve="P")
    fresh.load()
    _same_snapshot(engine, fresh, ranges_exact=False)
    assert engine.snapshot().curve_values == fresh.snapshot().curve_values
    # a label not yet polled: nothing is kept, the numbers are those of the labels now
    judging.record_label(demo, annotator="ana", query_id="q03", chunk_id=ranked["bm25"]["q03"][0],
                         grade=3)
    kept = engine.views["annotator:ana"]
    engine.set_rule("median")
    assert engine.views["annotator:ana"] is not kept
    fresh = live.LiveEvaluation(demo, measures=MEASURES, curve="P")
    fresh.load()
    _same_snapshot(engine, fresh)
    assert_same(engine, demo, "median")


def test_explain_on_the_screen_covers_rag_measures_and_both_context_precisions(demo):
    """The evaluation screen's explain goes through the same service as `ragjudge explain`:
    RAG measures get the project's facets and nuggets, Context Precision shows both definitions."""
    engine = live.LiveEvaluation(demo, measures=["P@5"])
    engine.load()
    coverage = engine.explain("hybrid", "m01", "Coverage@5", access=rights(demo))
    assert coverage.startswith("Coverage@5 = ") and "facet" in coverage
    precision = engine.explain("hybrid", "m01", "ContextPrecision@5", access=rights(demo))
    assert "AP = sum" in precision and "RAGAS" in precision


def test_rag_measures_count_queries_with_nuggets_and_no_grade_as_eval_does(project):
    """A query with nuggets and no grade is scored on NuggetRecall (as ``ragjudge eval`` does);
    a project without any grade still shows its RAG measures."""
    from ragjudge.store.schema import Annotator, Nugget, NuggetSupport

    def fill(session) -> None:
        session.add(Annotator(name="ann"))
        for i, chunk in enumerate(["c05", "c07", "c20"]):  # q1 ranks c05, c06, c07 first
            nugget = Nugget(query_id="q1", text=f"fact {i}", importance="vital")
            session.add(nugget)
            session.flush()
            session.add(NuggetSupport(nugget_id=nugget.id, chunk_id=chunk, annotator="ann",
                                      support="full"))

    project.write(fill)
    measures = ["NuggetRecall@3", "P@1"]
    engine = live.LiveEvaluation(project, measures=measures)
    engine.load()
    assert engine.snapshot().means["bm25"]["NuggetRecall@3"] == pytest.approx(2 / 3)
    assert_same(engine, project)
    judging.record_label(project, annotator="ann", query_id="q2", chunk_id="c08", grade=2)
    engine.poll()
    assert_same(engine, project)
