"""The evaluation screen driven with Pilot: labels (from this app, by keys in the judging screen,
or from another process) reach the pane, and its numbers are those of ``ragjudge export qrels``
+ ``ragjudge eval``."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys

import pytest
from textual.widgets import DataTable
from pilotkit import wait_for

from ragjudge.services.runs import stored as ev_stored
from ragjudge.services.scoring import evaluation as ev_evaluation
from ragjudge.services.events import state as judging_state
from ragjudge.services.labels import events as judging_events
from ragjudge.services.scoring.live import MEASURES_SETTING
from ragjudge.tui import make_app
from ragjudge.tui.evalapp import evaluation_app
from ragjudge.tui.screens.evaluation import EvaluationScreen
from ragjudge.tui.widgets.evalpane import ExplainModal, fmt

pytestmark = pytest.mark.slow


def max_label_id(project) -> int:
    from ragjudge.services.agreement.ratings import labels_stamp

    return labels_stamp(project)[0]


def caught_up(screen: EvaluationScreen, label_id: int):
    return lambda: bool(screen.applied) and screen.applied[-1][0] >= label_id


def cli_numbers(db: str, tmp_path, capsys=None) -> dict:
    """``ragjudge export qrels`` then ``ragjudge eval --qrels`` on the project's runs (JSON),
    each the real command in its own process."""
    qrels = tmp_path / "gold.qrels"
    for args in (["export", "qrels", "-o", str(qrels)],
                 ["eval", "--qrels", str(qrels), "--format", "json"]):
        done = subprocess.run([sys.executable, "-m", "ragjudge", "--db", db, *args],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def overview_cells(screen: EvaluationScreen) -> dict[str, dict[str, str]]:
    """run -> measure -> the value as printed in the overview's cell (first line, no mark)."""
    table = screen.query_one("#overview-table", DataTable)
    out: dict[str, dict[str, str]] = {}
    for run in screen.snapshot.run_names:
        out[run] = {}
        for m in screen.snapshot.measures:
            out[run][m] = table.get_cell(run, m).plain.split("\n")[0].lstrip("* ")
    return out


def a_pair_that_moves_ndcg(project):
    """A pair in bm25's top 10 that nobody has graded (a grade 3 there raises nDCG@10)."""
    from ragjudge.services.gold.qrels import gold_qrels

    judged = {(q, c) for q, c, _ in gold_qrels(project)}
    for q, chunks in sorted(ev_stored.project_run(project, "bm25").to_ranked().items()):
        for c in chunks[:3]:
            if (q, c) not in judged:
                return q, c
    raise AssertionError("the demo has no unjudged pair in bm25's top 3")


def test_a_label_changes_the_pane_to_exactly_what_export_and_eval_give(demo, demo_db, tmp_path, capsys):
    asyncio.run(_label_then_compare(demo, demo_db, tmp_path, capsys))


async def _label_then_compare(demo, db, tmp_path, capsys) -> None:
    app = make_app(demo)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen) and app.screen.snapshot)
        screen = app.screen
        before = overview_cells(screen)
        expected = cli_numbers(db, tmp_path, capsys)
        for run, values in expected["runs"].items():
            assert before[run] == {m: fmt(v) for m, v in values["aggregate"].items()}
        query, chunk = a_pair_that_moves_ndcg(demo)
        judging_events.record_label(demo, annotator="dora", query_id=query, chunk_id=chunk, grade=3)
        await wait_for(pilot, caught_up(screen, max_label_id(demo)))
        await pilot.pause()
        after = overview_cells(screen)
        assert after["bm25"]["nDCG@10"] != before["bm25"]["nDCG@10"]
        expected = cli_numbers(db, tmp_path, capsys)
        for run, values in expected["runs"].items():
            assert after[run] == {m: fmt(v) for m, v in values["aggregate"].items()}
            # the unrounded floats too (JSON's null is an undefined mean: a run without answers)
            assert {m: None if math.isnan(v) else v for m, v in screen.snapshot.means[run].items()} \
                == values["aggregate"]
        assert query in screen.snapshot.touched
        assert "dora" in screen.snapshot.annotators


def test_another_process_labels_and_the_pane_follows(demo, demo_db, tmp_path, capsys):
    asyncio.run(_second_process(demo, demo_db, tmp_path, capsys))


WRITER = """
import sys
from ragjudge.services.project.database import Project
from ragjudge.services.labels.events import record_label
with Project.open(sys.argv[1]) as project:
    for i, (q, c) in enumerate(zip(sys.argv[2::2], sys.argv[3::2])):
        record_label(project, annotator="ben", query_id=q, chunk_id=c, grade=3 - i % 2)
"""


async def _second_process(demo, db, tmp_path, capsys) -> None:
    ranked = ev_stored.project_run(demo, "hybrid").to_ranked()
    pairs = [(q, ranked[q][k]) for q in ("f01", "m05", "p03", "q07") if q in ranked for k in (0, 4)]
    assert len(pairs) >= 4
    app = evaluation_app(demo)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen) and app.screen.snapshot)
        screen = app.screen
        version = screen.snapshot.version
        args = [a for pair in pairs for a in pair]
        done = subprocess.run([sys.executable, "-c", WRITER, db, *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        await wait_for(pilot, caught_up(screen, max_label_id(demo)))
        await pilot.pause()
        assert screen.snapshot.version > version
        assert set(screen.snapshot.touched) <= {q for q, _ in pairs}
        expected = cli_numbers(db, tmp_path, capsys)
        cells = overview_cells(screen)
        for run, values in expected["runs"].items():
            assert cells[run] == {m: fmt(v) for m, v in values["aggregate"].items()}


def test_enter_explains_a_query_and_j_judges_its_pairs_by_keys(demo, tmp_path):
    asyncio.run(_explain_and_judge(demo))


async def _explain_and_judge(demo) -> None:
    app = make_app(demo, annotator="erin", new_annotator=True)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen) and app.screen.snapshot)
        screen = app.screen
        await pilot.press("p")
        await wait_for(pilot, lambda: screen.snapshot.rows is not None and screen._query_rows)
        rows = screen._query_rows
        first_query = next(q for q in rows if screen.engine.unjudged_pairs(q))
        unjudged = screen.engine.unjudged_pairs(first_query)
        for _ in range(rows.index(first_query)):
            await pilot.press("down")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ExplainModal))
        body = str(app.screen.query_one("#explain-body").content)
        assert f"query {first_query}" in body and "nDCG@10" in body and "bm25" in body
        await pilot.press("j")
        from ragjudge.tui.screens.judge import JudgeScreen

        await wait_for(pilot, lambda: isinstance(app.screen, JudgeScreen))
        judge = app.screen
        assert judge.queue.query_ids == [first_query]
        await wait_for(pilot, lambda: judge.pair is not None and judge.pair.chunk_id in unjudged)
        pair = judge.pair
        await pilot.press("2")
        await pilot.pause()
        state = judging_state.current_label(demo, "erin", pair.query_id, pair.chunk_id)
        assert state is not None and state.grade == 2
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)
        await wait_for(pilot, caught_up(screen, max_label_id(demo)))
        assert first_query in screen.snapshot.touched


def test_add_a_measure_by_name_change_the_rule_and_compare(demo):
    asyncio.run(_add_measure_and_rule(demo))


async def _add_measure_and_rule(demo) -> None:
    app = evaluation_app(demo)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen) and app.screen.snapshot)
        screen = app.screen
        await pilot.press("plus")
        await pilot.pause()
        for ch in "P(rel=2)@5":
            await pilot.press(ch)
        await pilot.press("enter")
        await wait_for(pilot, lambda: "P(rel=2)@5" in screen.snapshot.measures)
        assert demo.get_setting(MEASURES_SETTING)[-1] == "P(rel=2)@5"
        qrels, _ = ev_evaluation.project_qrels(demo)
        runs = {n: ev_stored.project_run(demo, n) for n in ev_stored.project_run_names(demo)}
        # the same measure list as the screen: numpy sums a lone column pairwise, several
        # columns row by row, so the last bit of a mean depends on the company it keeps
        strict = ev_evaluation.evaluate_all(qrels, runs, screen.snapshot.measures, project=demo)
        for run in runs:
            assert screen.snapshot.means[run]["P(rel=2)@5"] == strict.aggregate(run)["P(rel=2)@5"]
        await pilot.press("g")  # median -> majority
        await wait_for(pilot, lambda: screen.snapshot.rule == "majority")
        qrels, _ = ev_evaluation.project_qrels(demo, "majority")
        majority = ev_evaluation.evaluate_all(qrels, runs, screen.snapshot.measures, project=demo,
                                              rule="majority")
        assert screen.snapshot.means["hybrid"]["nDCG@10"] == majority.aggregate("hybrid")["nDCG@10"]
        await pilot.press("c")
        await wait_for(pilot, lambda: screen.query_one("#compare-table", DataTable).row_count > 0)
        table = screen.query_one("#compare-table", DataTable)
        assert table.row_count == len(screen.snapshot.measures)
        verdicts = {str(table.get_row_at(i)[-1]) for i in range(table.row_count)}
        assert verdicts <= {"within noise", "B better (hybrid)", "A better (bm25)"}


def test_the_home_screen_counts_only_when_it_is_shown(demo, monkeypatch):
    """Under ``eval --tui`` the home screen does not count the pool while the evaluation
    screen loads on top of it (seconds of both cores on a large project); it counts when it
    is shown, and at once when it is the first screen."""
    from ragjudge.tui.screens.home import HomeScreen

    counted: list[int] = []
    real = HomeScreen.count

    def count(self) -> None:
        counted.append(1)
        real(self)

    monkeypatch.setattr(HomeScreen, "count", count)

    async def under_the_evaluation() -> None:
        app = evaluation_app(demo)
        async with app.run_test(size=(140, 45)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen) and app.screen.snapshot)
            assert counted == []
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen) and counted)

    async def first() -> None:
        app = make_app(demo)
        async with app.run_test(size=(140, 45)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen) and counted)

    asyncio.run(under_the_evaluation())
    counted.clear()
    asyncio.run(first())
    assert counted == [1]
