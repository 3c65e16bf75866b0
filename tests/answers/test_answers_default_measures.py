"""Once an answer is judged, the project's default scorecard has the answer measures: in the
evaluation screen opened next and in ``ragjudge eval`` alike, with no ``-m`` and no ``+``."""

from __future__ import annotations

import asyncio
import time

import pytest

from projectkit import ragjudge

from ragjudge.services.events import annotators as judging
from ragjudge.services.labels.events import record_label
from ragjudge.services.project.database import Project
from ragjudge.services.scoring.answers import ANSWER_MEASURES
from ragjudge.services.scoring.files import DEFAULT_MEASURES
from ragjudge.tui import make_app
from ragjudge.tui.screens.answers import AnswerJudgeScreen
from ragjudge.tui.screens.evaluation import EvaluationScreen

pytestmark = pytest.mark.slow


async def evaluation_measures(app, pilot) -> list[str]:
    """Open the evaluation screen from the home screen: the measures of its first numbers."""
    await pilot.press("e")
    end = time.monotonic() + 20
    while not (isinstance(app.screen, EvaluationScreen) and app.screen.snapshot is not None):
        assert time.monotonic() < end, "the evaluation screen did not load"
        await pilot.pause(0.05)
    measures = list(app.screen.snapshot.measures)
    await pilot.press("escape")
    await pilot.pause()
    return measures


def test_judging_one_answer_brings_the_answer_measures_into_the_screen_and_eval(bare_answers_db):
    with Project.open(bare_answers_db) as project:
        record_label(project, annotator="cy", query_id="q1", chunk_id="c05", grade=2)
        judging.mark_guidelines_seen(project, "cy")
    before = ragjudge("eval", "--db", bare_answers_db)
    assert before.returncode == 0, before.stderr
    assert "AnswerNuggets" not in before.stdout, "no answer judged yet: the ranking measures"

    async def main() -> tuple[list[str], list[str]]:
        with Project.open(bare_answers_db) as project:
            app = make_app(project, annotator="cy")
            async with app.run_test(size=(140, 44)) as pilot:
                await pilot.pause()
                first = await evaluation_measures(app, pilot)
                await pilot.press("w")
                await pilot.pause()
                assert isinstance(app.screen, AnswerJudgeScreen)
                await pilot.press("2")  # the first nugget: fully supported
                await pilot.pause()
                await pilot.press("escape")
                await pilot.pause()
                return first, await evaluation_measures(app, pilot)

    first, then = asyncio.run(main())
    assert first == list(DEFAULT_MEASURES)
    assert then == [*DEFAULT_MEASURES, *ANSWER_MEASURES]
    after = ragjudge("eval", "--db", bare_answers_db)
    assert after.returncode == 0, after.stderr
    assert all(m in after.stdout for m in ANSWER_MEASURES), after.stdout
