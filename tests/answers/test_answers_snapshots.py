"""Snapshots of the answer-judging screen and of the agreement screen's answers tab
(pytest-textual-snapshot), on the project of :mod:`answerkit`.

Regenerate after an intended change with
``pytest tests/answers/test_answers_snapshots.py --snapshot-update`` and look at the report.
Nothing shown depends on the clock or the database path.
"""

from __future__ import annotations

import pytest

from projectkit import screen_app


from ragjudge.services.events import annotators as judging
from ragjudge.services.project.database import Project
from ragjudge.tui import make_app
from ragjudge.tui.screens.agreement import AgreementScreen

pytestmark = pytest.mark.slow

SIZE = (120, 40)


async def settle(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_answer_judging_first_answer(snap_compare, answers_db):
    with Project.open(answers_db) as project:
        judging.mark_guidelines_seen(project, "cy")
        assert snap_compare(make_app(project, annotator="cy", start="answers"), terminal_size=SIZE,
                            run_before=settle)


def test_answer_judging_a_citation_in_focus(snap_compare, answers_db):
    async def judge(pilot) -> None:
        await settle(pilot)
        await pilot.press("right_square_bracket")  # the other answer to q1
        await pilot.press("2", "0", "1", "2")  # three nuggets, then (sentence 1, c05)
        await pilot.pause()

    with Project.open(answers_db) as project:
        judging.mark_guidelines_seen(project, "cy")
        assert snap_compare(make_app(project, annotator="cy", start="answers"), terminal_size=SIZE,
                            run_before=judge)


def test_agreement_answers_tab(snap_compare, answers_db):
    def Host(project):
        return screen_app(project, lambda: AgreementScreen(project))

    async def tab(pilot) -> None:
        await settle(pilot)
        await pilot.press("w")
        await pilot.pause()

    with Project.open(answers_db) as project:
        assert snap_compare(Host(project), terminal_size=SIZE, run_before=tab)
