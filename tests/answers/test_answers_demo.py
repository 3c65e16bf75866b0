"""What judging answers is for, on the demo project: an annotator judges a run's answer to a query
in a few keys; the evaluation screen shows both answering runs' nugget scores and citation
precision and recall, and they move as judgments arrive; and a script that imports the same
judgments from a file gets the same numbers from ``ragjudge eval``."""

from __future__ import annotations

from projectkit import rights

import asyncio
import json

import pytest
from pilotkit import wait_for

from ragjudge.cli import main
from ragjudge.services.events import answers as answer_events
from ragjudge.services.labels import answers as answer_judging
from ragjudge.services.events import annotators as judging
from ragjudge.services.scoring import live
from ragjudge.services.runs import stored as ev_stored
from ragjudge.services.scoring import evaluation as ev_evaluation
from ragjudge.services.project.database import Project
from ragjudge.tui import make_app
from ragjudge.tui.screens.answers import AnswerJudgeScreen
from ragjudge.tui.screens.evaluation import EvaluationScreen

pytestmark = pytest.mark.slow

MEASURES = ["AnswerNuggets(strict,vital)", "AnswerNuggets(all)", "CitationPrecision", "CitationRecall"]
RUNS = ("hybrid", "bm25")


def eval_numbers(db: str, capsys) -> dict[str, dict[str, float]]:
    """``ragjudge eval`` of the answering runs, as JSON."""
    args = ["--db", db, "eval", "--format", "json"]
    for run in RUNS:
        args += ["--run", run]
    for m in MEASURES:
        args += ["-m", m]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    return {run: data["runs"][run]["aggregate"] for run in RUNS}


def test_judge_an_answer_in_a_few_keys_and_watch_the_scores_move(demo_copy, tmp_path, capsys):
    db = demo_copy()
    seen: list[dict] = []

    async def drive() -> None:
        with Project.open(db) as project:
            live.save_measures(project, MEASURES, access=rights(project))
            judging.mark_guidelines_seen(project, "dee")
            app = make_app(project, annotator="dee", start="answers")
            async with app.run_test(size=(140, 45)) as pilot:
                await pilot.pause()
                screen = app.screen
                assert isinstance(screen, AnswerJudgeScreen)
                view = screen.view
                assert 3 <= len(view.items) <= 10  # a few keys judge the whole answer
                for i in range(len(view.items)):
                    await pilot.press("2" if i % 3 else "1")
                assert answer_judging.answer_view(project, view.answer_id, "dee").open == 0
                await pilot.press("e")
                await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen)
                               and app.screen.snapshot is not None)
                board = app.screen
                seen.append({run: dict(board.snapshot.means[run]) for run in RUNS})
                # while the board is open, more judgments arrive (another annotator's keys)
                for item in answer_judging.answer_view(project, view.answer_id, None).items:
                    answer_judging.record_answer_judgment(
                        project, annotator="ed", answer_id=view.answer_id, support="none",
                        nugget_id=item.nugget_id, sentence=item.sentence, chunk_id=item.chunk_id)
                newest = answer_events.answers_stamp(project)
                await wait_for(pilot, lambda: board.engine.answer_stamp >= newest
                               and board.snapshot.version > 0 and board.snapshot.touched)
                await pilot.pause()
                seen.append({run: dict(board.snapshot.means[run]) for run in RUNS})

    asyncio.run(drive())
    # the board's numbers are those of ragjudge eval, and they moved
    assert seen[-1] == eval_numbers(db, capsys)
    assert seen[0] != seen[-1]
    for run in RUNS:
        assert all(0.0 <= seen[-1][run][m] <= 1.0 for m in MEASURES)

    # a script: the judgments as a file, imported into a fresh copy of the demo
    exported = tmp_path / "answer-labels.jsonl"
    assert main(["--db", db, "export", "answer-labels", "-o", str(exported)]) == 0
    fresh = demo_copy()
    before = eval_numbers(fresh, capsys)
    assert main(["--db", fresh, "import", "answer-labels", str(exported)]) == 0
    capsys.readouterr()
    assert eval_numbers(fresh, capsys) == seen[-1] != before


def test_both_answering_runs_have_every_answer_measure_on_the_demo(demo_copy):
    db = demo_copy()
    with Project.open(db) as project:
        qrels, rule = ev_evaluation.project_qrels(project)
        runs = {n: ev_stored.project_run(project, n) for n in RUNS}
        result = ev_evaluation.evaluate_all(qrels, runs, MEASURES, project=project, rule=rule)
    for run in RUNS:
        aggregate = result.aggregate(run)
        undefined = result.results[run].undefined()
        for m in MEASURES:
            assert 0.0 < aggregate[m] < 1.0, (run, m)
            # nuggets exist for 17 queries, and some answers are left to judge
            assert 0 < undefined[m] < 45, (run, m)
