"""The evaluation screen says what its gold is made of (as ``eval``'s footer does), and counts
again when labels arrive or the rule changes — on the details pass, not on every label."""

from __future__ import annotations

import asyncio

import pytest

import goldkit
from pilotkit import wait_for

from ragjudge.services.labels import events as judging_events
from ragjudge.tui.evalapp import evaluation_app
from ragjudge.tui.screens.evaluation import EvaluationScreen

pytestmark = pytest.mark.slow


def header(screen: EvaluationScreen) -> str:
    from textual.widgets import Static

    return str(screen.query_one("#eval-header", Static).render())


def test_the_header_shows_the_composition_and_follows_new_labels(tmp_path):
    db = str(tmp_path / "p.db")
    goldkit.make_project(db, tmp_path)
    asyncio.run(_follow(db))


async def _follow(db: str) -> None:
    from ragjudge.services.project.database import Project

    with Project.open(db) as project:
        app = evaluation_app(project)
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen)
                           and app.screen.composition is not None)
            screen = app.screen
            await pilot.pause()
            assert "gold: median · reference nist: 20 pairs, 8 pairs from other annotators" in header(screen)
            # a label on a pair the reference does not list: one more pair from the team
            judging_events.record_label(project, annotator="ben", query_id="q1",
                                        chunk_id=goldkit.dense(1)[5], grade=1)
            await wait_for(pilot, lambda: screen.composition.other_pairs == 9, timeout=30)
            await pilot.pause()
            assert "20 pairs, 9 pairs from other annotators" in header(screen)
            # another rule: the line follows it
            await pilot.press("g")
            await wait_for(pilot, lambda: screen.composition.rule == "majority", timeout=30)
            await pilot.pause()
            assert "gold: majority · reference nist: 20 pairs, 9 pairs from other annotators" in header(screen)
