"""Statistics that respect coverage: the ranges over annotators take only annotators whose labels
cover enough of the pool and name who sets each end; the mean pairwise κ weighs each pair of
annotators by the pairs they share; no interval from a handful of queries; label quality counts
current labels only and says the drift rule it applies."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest
from projectkit import make_small_project, rights
from sklearn.metrics import cohen_kappa_score

from ragjudge.services.agreement import quality as agreement_svc_quality
from ragjudge.tui.screens.evaluation import FIRST_MEASURE
from ragjudge.services.agreement import ratings as agreement_svc_ratings
from ragjudge.services.agreement import views as agreement_svc_views
from ragjudge.services.labels import events as judging
from ragjudge.services.scoring import live

MEASURES = ["nDCG@10", "P@5"]


@pytest.fixture(scope="module")
def demo_file(tmp_path_factory):
    from ragjudge.services.transfer.demo import build_demo

    path = tmp_path_factory.mktemp("demo") / "demo.db"
    build_demo(str(path))
    return path


@pytest.fixture
def demo(demo_file, tmp_path):
    import shutil

    from ragjudge.services.project.database import Project

    target = tmp_path / "demo.db"
    shutil.copyfile(demo_file, target)
    project = Project.open(str(target))
    yield project
    project.close()


def _two_labels_by_a_newcomer(project, *, agree: bool = True) -> None:
    """zed's first two labels, on the top chunk of bm25 for two queries: the gold's grade there
    (so the gold, which the ranges are anchored to, stays as it was), or with ``agree=False``
    the opposite end of the scale."""
    from ragjudge.services.runs.stored import project_run
    from ragjudge.services.gold.qrels import gold_qrels

    gold = {(q, c): g for q, c, g in gold_qrels(project)}
    ranked = project_run(project, "bm25").to_ranked()
    picked = [(q, chunks[0]) for q, chunks in sorted(ranked.items()) if (q, chunks[0]) in gold
              and gold[q, chunks[0]] >= 1][:2]
    assert len(picked) == 2
    for q, c in picked:
        judging.record_label(project, annotator="zed", query_id=q, chunk_id=c,
                             grade=gold[q, c] if agree else 0)


@pytest.mark.slow
def test_a_new_annotator_with_two_labels_leaves_the_ranges_unchanged(demo):
    engine = live.LiveEvaluation(demo, measures=MEASURES)
    engine.load()
    before = engine.snapshot()
    assert sorted(before.in_ranges) == ["ana", "ben", "chen"]
    _two_labels_by_a_newcomer(demo)
    assert engine.poll()
    after = engine.snapshot()
    assert "zed" in after.annotators and after.too_few == ["zed"]
    assert 0 < after.coverage["zed"] < 0.01
    assert after.means == before.means  # zed gave the gold's grades: the gold is as it was
    assert after.ranges == before.ranges and after.range_ends == before.range_ends
    fresh = live.LiveEvaluation(demo, measures=MEASURES)
    fresh.load()
    assert fresh.snapshot().ranges == after.ranges


def test_without_the_coverage_rule_the_newcomer_sets_an_end(demo):
    """What the coverage rule prevents: at 0% (anyone with a pool label counts) two labels
    are enough to set the end of a range."""
    engine = live.LiveEvaluation(demo, measures=MEASURES, min_coverage=0.0)
    engine.load()
    _two_labels_by_a_newcomer(demo, agree=False)
    engine.poll()
    snap = engine.snapshot()
    assert "zed" in snap.in_ranges
    assert any("zed" in snap.range_ends[run][m] for run in snap.run_names for m in MEASURES)


def test_the_coverage_needed_is_a_project_setting(demo):
    live.save_coverage(demo, 0.7, access=rights(demo))
    engine = live.LiveEvaluation(demo, measures=MEASURES)
    engine.load()
    snap = engine.snapshot()
    assert snap.min_coverage == 0.7
    assert set(snap.in_ranges) == {a for a, share in snap.coverage.items() if share >= 0.7}
    assert set(snap.too_few) == set(snap.coverage) - set(snap.in_ranges)
    with pytest.raises(Exception, match="share from 0 to 1"):
        live.save_coverage(demo, 1.5, access=rights(demo))


def test_range_ends_are_named_and_hold_the_gold_on_their_queries(demo):
    engine = live.LiveEvaluation(demo, measures=MEASURES)
    engine.load()
    snap = engine.snapshot()
    for run in snap.run_names:
        for m in MEASURES:
            low, high = snap.ranges[run][m]
            lo_name, hi_name = snap.range_ends[run][m]
            assert low <= high and {lo_name, hi_name} <= set(snap.in_ranges)
            assert set(snap.range_gold[run][m]) == set(snap.in_ranges)


def _kappa_project(tmp_path):
    """ana and ben share 3 pairs, ana and cy 12, ben and cy 6 (by hand, below)."""
    project = make_small_project(str(tmp_path / "k.db"), queries=5, chunks=20)
    rnd = np.random.default_rng(3)
    pairs = [(f"q{1 + i // 5}", f"c{i % 20 + 1:02d}") for i in range(25)]
    plan = {"ana": pairs[:15], "cy": pairs[3:21], "ben": pairs[:3] + pairs[15:21]}
    grades = {}
    for who, mine in plan.items():
        for q, c in mine:
            grades[who, q, c] = int(rnd.integers(0, 4))
            judging.record_label(project, annotator=who, query_id=q, chunk_id=c, grade=grades[who, q, c])
    return project, plan, grades


@pytest.mark.slow
def test_mean_pairwise_kappa_weighs_each_pair_by_the_pairs_it_shares(tmp_path):
    project, plan, grades = _kappa_project(tmp_path)
    total = weight = 0.0
    names = sorted(plan)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            shared = sorted(set(plan[a]) & set(plan[b]))
            kappa = cohen_kappa_score([grades[a, q, c] for q, c in shared],
                                      [grades[b, q, c] for q, c in shared], labels=[0, 1, 2, 3])
            total += len(shared) * kappa
            weight += len(shared)
    assert weight == 3 + 12 + 6
    ratings = agreement_svc_ratings.load_ratings(project)
    value, units, pairs = agreement_svc_views.mean_pairwise_kappa(ratings)
    assert (units, pairs) == (21, 3)
    assert value == pytest.approx(total / weight, abs=1e-12)
    engine = live.LiveEvaluation(project, measures=MEASURES)
    engine.load()
    details = engine.details()
    assert details.mean_kappa == pytest.approx(total / weight, abs=1e-12)
    assert (details.kappa_units, details.kappa_pairs) == (21, 3)
    project.close()


def test_an_interval_from_fewer_than_five_queries_is_not_shown(tmp_path):
    project = make_small_project(str(tmp_path / "i.db"), queries=6, chunks=20)
    for i in range(1, 4):
        judging.record_label(project, annotator="ana", query_id=f"q{i}",
                             chunk_id=f"c{(i * 3 + 1) % 20 + 1:02d}", grade=2)
    engine = live.LiveEvaluation(project, measures=MEASURES)
    engine.load()
    details = engine.details()
    assert details.too_few["bm25"] == MEASURES
    assert all(np.isnan(details.intervals["bm25"][m]).all() for m in MEASURES)
    for i in range(4, 7):
        judging.record_label(project, annotator="ana", query_id=f"q{i}",
                             chunk_id=f"c{(i * 3 + 1) % 20 + 1:02d}", grade=2)
    engine.poll()
    details = engine.details()
    assert details.too_few["bm25"] == []
    low, high = details.intervals["bm25"]["P@5"]
    assert low <= high
    project.close()


# -- the evaluation screen ----------------------------------------------------------------


async def _ready(pilot, version: int = -1):
    from ragjudge.tui.screens.evaluation import EvaluationScreen

    end = time.monotonic() + 60
    app = pilot.app
    while True:
        screen = app.screen
        if (isinstance(screen, EvaluationScreen) and screen.snapshot is not None
                and screen.snapshot.version > version and screen.details is not None
                and screen.details.version == screen.snapshot.version
                and not any(screen._busy.values())):
            break
        assert time.monotonic() < end
        await pilot.pause(0.05)
    await pilot.pause()
    return app.screen


def _cells(screen) -> list[str]:
    from textual.widgets import DataTable

    table = screen.query_one("#overview-table", DataTable)
    return [str(cell).split("\n")[2] for r in range(table.row_count) for cell in table.get_row_at(r)[FIRST_MEASURE:]]


@pytest.mark.slow
def test_the_screen_ranges_ignore_a_newcomer_and_say_who_sets_them(demo):
    asyncio.run(_newcomer_on_screen(demo))
    assert live.saved_coverage(demo) == 0.75


async def _newcomer_on_screen(demo) -> None:
    from ragjudge.tui.evalapp import evaluation_app

    app = evaluation_app(demo, measures=MEASURES)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await _ready(pilot)
        before = _cells(screen)
        assert all(cell.startswith("↕") and any(n in cell for n in ("ana", "ben", "chen"))
                   for cell in before)
        _two_labels_by_a_newcomer(demo)
        screen = await _ready(pilot, screen.snapshot.version)
        assert "zed" in screen.snapshot.annotators
        assert _cells(screen) == before
        note = str(screen.query_one("#overview-note").render())
        assert "≥ 50% of the pool" in note and "too few labels: zed 0%" in note
        header = str(screen.query_one("#eval-header").render())
        value, units, _ = agreement_svc_views.mean_pairwise_kappa(agreement_svc_ratings.load_ratings(demo))
        assert f"Cohen's κ {value:.3f} over {units:,} shared pairs" in header
        await pilot.press("n")  # the next share: 75%
        end = time.monotonic() + 30
        while "≥ 75% of the pool" not in str(screen.query_one("#overview-note").render()):
            assert time.monotonic() < end
            await pilot.pause(0.05)
        assert screen.snapshot.min_coverage == 0.75


@pytest.mark.slow
def test_the_screen_says_too_few_queries_for_an_interval(tmp_path):
    asyncio.run(_few_queries_on_screen(tmp_path))


async def _few_queries_on_screen(tmp_path) -> None:
    from ragjudge.tui.evalapp import evaluation_app

    project = make_small_project(str(tmp_path / "s.db"), queries=6, chunks=20)
    judging.record_label(project, annotator="ana", query_id="q1", chunk_id="c05", grade=2)
    app = evaluation_app(project, measures=MEASURES)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await _ready(pilot)
        from textual.widgets import DataTable

        table = screen.query_one("#overview-table", DataTable)
        cell = str(table.get_row_at(0)[FIRST_MEASURE])
        assert "too few queries" in cell and "[" not in cell
    project.close()


# -- label quality --------------------------------------------------------------------------


@pytest.mark.slow
def test_quality_counts_current_labels_only(tmp_path):
    project = make_small_project(str(tmp_path / "q.db"), queries=5, chunks=20)
    # ann: 10 fast labels, each replaced at once by a slow one; then 10 fast ones undone
    for j in range(1, 11):
        judging.record_label(project, annotator="ann", query_id="q1", chunk_id=f"c{j:02d}",
                             grade=3, duration_ms=100)
        judging.record_label(project, annotator="ann", query_id="q1", chunk_id=f"c{j:02d}",
                             grade=1, duration_ms=4000)
    for j in range(11, 21):
        judging.record_label(project, annotator="ann", query_id="q2", chunk_id=f"c{j:02d}",
                             grade=3, duration_ms=100)
    for _ in range(10):
        judging.undo_last(project, "ann")
    for j in range(1, 21):
        judging.record_label(project, annotator="ann", query_id="q3", chunk_id=f"c{j:02d}",
                             grade=1, duration_ms=4000)
    assert agreement_svc_quality.fast_labels(project) == []
    drift = {d["annotator"]: d for d in agreement_svc_quality.grade_drift(project)}
    # 30 current labels, all grade 1: the undone burst of 3s is no drift
    assert drift["ann"]["labels"] == 30
    assert drift["ann"]["mean_first"] == drift["ann"]["mean_second"] == 1.0
    assert not drift["ann"]["drifting"]
    project.close()


def test_the_drift_rule_is_the_one_stated(tmp_path):
    project = make_small_project(str(tmp_path / "d.db"), queries=5, chunks=20)
    # 19 labels whose mean moves by 3 grades: below the stated minimum of labels, no drift
    for j in range(1, 20):
        judging.record_label(project, annotator="bob", query_id="q1", chunk_id=f"c{j:02d}",
                             grade=0 if j <= 9 else 3)
    rule = agreement_svc_quality.drift_rule()
    assert f"at least {agreement_svc_quality.DRIFT_MIN_LABELS} current labels" in rule
    assert f"{agreement_svc_quality.DRIFT_MEAN:g} grades" in rule and f"{agreement_svc_quality.DRIFT_DISTANCE:g}" in rule
    (bob,) = agreement_svc_quality.grade_drift(project)
    assert bob["labels"] == 19 < agreement_svc_quality.DRIFT_MIN_LABELS and not bob["drifting"]
    judging.record_label(project, annotator="bob", query_id="q1", chunk_id="c20", grade=3)
    (bob,) = agreement_svc_quality.grade_drift(project)
    assert bob["drifting"]
    assert agreement_svc_quality.label_quality(project, access=rights(project))["drift_rule"] == rule
    project.close()
