"""The evaluation screen's opening on a large project: a stored run read as its ranking only
(not its scores) gives the arrays of the whole read and the order of its rows (its head); the
gold view evaluated and shown first, the annotators' views and the pool after, and the details
pass started from a copy taken then give the same arrays and numbers as a load in one piece,
and as ``ragjudge eval``. On the demo project with undos, skips, several annotators and a
reference (complete or not)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from projectkit import rights

from ragjudge.services.gold.adjudication import adjudicate
from ragjudge.services.labels.events import record_label, skip_pair, undo_last
from ragjudge.services.runs import stored
from ragjudge.services.scoring import evaluation as ev_evaluation
from ragjudge.services.scoring import live
from ragjudge.store.run_arrays import NAMES, RANKING, read_arrays
from ragjudge.store.schema import Annotator

MEASURES = ["P@5", "R@10", "AP", "nDCG@10", "RR", "Judged@10", "bpref"]


def _history(project, seed: int) -> None:
    """Label events of four people and a reference: grades, re-grades, skips, undos and an
    adjudication, on chunks the runs rank."""
    rnd = random.Random(seed)
    ranked = {n: stored.project_run(project, n).to_ranked() for n in stored.project_run_names(project)}
    people = ["ana", "ben", "chen", "dora", "nist"]
    for step in range(260):
        who = rnd.choice(people)
        run = rnd.choice(sorted(ranked))
        q = rnd.choice(sorted(ranked[run]))
        c = rnd.choice(ranked[run][q][:15])
        roll = rnd.random()
        if roll < 0.1:
            undo_last(project, who)
        elif roll < 0.2:
            skip_pair(project, annotator=who, query_id=q, chunk_id=c)
        elif step == 100:
            adjudicate(project, query_id=q, chunk_id=c, grade=rnd.randint(0, 3),
                       access=rights(project, "lead"), reason="t")
        else:
            record_label(project, annotator=who, query_id=q, chunk_id=c, grade=rnd.randint(0, 3))


@pytest.fixture(params=[False, True], ids=["reference", "complete-reference"])
def judged(demo, request):
    demo.write(lambda s: s.add(Annotator(name="nist", reference=True, complete=request.param)))
    _history(demo, seed=7 + request.param)
    return demo


def test_a_run_read_as_its_ranking_has_the_arrays_of_the_whole_read_and_its_head(judged):
    names = stored.project_run_names(judged)
    assert names
    with judged.connect() as connection:
        generations = dict(connection.exec_driver_sql("SELECT name, generation FROM runs").all())
        whole = {n: read_arrays(connection, n, generations[n]) for n in names}
        ranking = {n: read_arrays(connection, n, generations[n], RANKING) for n in names}
        rows = {n: stored._read_run_sqlite(connection, n) for n in names}
    for name in names:
        assert whole[name] is not None and set(whole[name]) == set(NAMES)
        assert set(ranking[name]) == set(RANKING)  # the scores are not read
        run = stored.project_run(judged, name)
        before = stored.run_from_arrays(whole[name], name)  # as every array was read
        for field in ("query_id_bytes", "offsets", "qidx", "chunk_ids", "scores", "pair_hashes"):
            a, b = getattr(run, field), getattr(before, field)
            assert a.dtype == b.dtype and np.array_equal(a, b), (name, field)
        q, c = rows[name]  # the rows of the run, its head (the path of a run without arrays)
        head = stored.Run(q, c, None, name=name, ordered=True).to_ranked()
        ranked = run.to_ranked()
        assert sorted(head) == sorted(ranked)
        assert all(head[q] == ranked[q][:len(head[q])] for q in head)


def test_an_asked_subset_must_all_be_stored(judged):
    name = stored.project_run_names(judged)[0]
    with judged.connect() as connection:
        generation = connection.exec_driver_sql("SELECT generation FROM runs WHERE name = ?", (name,)).scalar()
        assert read_arrays(connection, name, generation, ("offsets", "no such array")) is None
        assert read_arrays(connection, name, -1, RANKING) is None


def _loaded(project, monkeypatch, *, early: bool):
    """An engine loaded in one piece, or (``early``) with the gold's numbers first and the
    details pass prepared then: the engine, what ``first`` saw, the prepared details."""
    monkeypatch.setattr(live, "EARLY_CELLS", 0 if early else 10**18)
    engine = live.LiveEvaluation(project, measures=MEASURES)
    seen: dict = {}

    def first() -> None:
        seen["views"] = list(engine.views)
        seen["snapshot"] = engine.snapshot()
        seen["details"] = engine.details_work()

    engine.load(first=first)
    return engine, seen


def test_the_gold_first_and_details_from_then_equal_a_load_in_one_piece(judged, monkeypatch):
    whole, none = _loaded(judged, monkeypatch, early=False)
    assert none == {}
    early, seen = _loaded(judged, monkeypatch, early=True)
    assert seen["views"] == [early.rule] and seen["snapshot"].ranges == {n: {} for n in early.runs}
    assert seen["snapshot"].version == 0 and early.version == whole.version == 1
    # the engines' arrays: pairs, layouts, pool, every view's grades and matrices
    assert np.array_equal(early.space.pairs.rows, whole.space.pairs.rows)
    assert np.array_equal(early.space.pairs.chunks, whole.space.pairs.chunks)
    for name in whole.runs:
        assert np.array_equal(early.space.layouts[name].pairs, whole.space.layouts[name].pairs)
    assert np.array_equal(early.space.pool_rows, whole.space.pool_rows)
    assert early.space.pool_total == whole.space.pool_total > 0
    assert np.array_equal(early.space.in_pool[:early.space.pairs.n], whole.space.in_pool[:whole.space.pairs.n])
    assert {c: v.tolist() for c, v in early.space.covered.items()} == \
        {c: v.tolist() for c, v in whole.space.covered.items()}
    assert list(early.views) == list(whole.views) and len(whole.views) >= 4
    for rule, view in whole.views.items():
        other = early.views[rule]
        assert np.array_equal(other.fitted(), view.fitted()), rule
        assert np.array_equal(other.present, view.present), rule
        for name in whole.runs:
            assert np.array_equal(other.values[name], view.values[name], equal_nan=True), (rule, name)
    a, b = early.snapshot(), whole.snapshot()
    assert repr(a.means) == repr(b.means) and repr(a.ranges) == repr(b.ranges)
    assert a.coverage == b.coverage and a.gold_pairs == b.gold_pairs and a.labels_used == b.labels_used
    assert repr(seen["snapshot"].means) == repr(b.means)
    # the details prepared with the gold's first numbers: those of the loaded engine, its version
    prepared = seen["details"]()
    assert prepared.version == early.version
    assert repr(prepared) == repr(whole.details()) == repr(early.details())
    # and the numbers are ragjudge eval's
    qrels, rule = ev_evaluation.project_qrels(judged, early.rule)
    runs = {n: stored.project_run(judged, n) for n in stored.project_run_names(judged)}
    expected = ev_evaluation.evaluate_all(qrels, runs, MEASURES, threshold=judged.scale.threshold,
                                          project=judged, rule=rule)
    for run in expected.run_names:
        assert repr(expected.aggregate(run)) == repr({m: a.means[run][m] for m in MEASURES}), run
