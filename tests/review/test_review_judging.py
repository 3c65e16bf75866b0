"""The annotator sees a lead's answer: a line in the "your label" panel of the judging screen,
and a notification when the session starts."""

from __future__ import annotations

from projectkit import rights

import asyncio
import functools

import pytest

from ragjudge.services.labels import review
from ragjudge.services.labels.events import record_label
from ragjudge.tui import make_app
from ragjudge.tui.screens.judge import JudgeScreen

pytestmark = pytest.mark.slow

SIZE = (120, 40)


def sync(test):
    @functools.wraps(test)
    def run(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))

    return run


def panel(app) -> str:
    return str(app.screen.query_one("#earlier-panel").render())


def toasts(app) -> list[str]:
    return [n.message for n in app._notifications]


@sync
async def test_the_resolution_note_is_on_the_pair_and_told_at_session_start(project):
    review.resolve(project, query_id="q1", chunk_id="c05", annotator="ana", access=rights(project, "dora"),
                   note="refunds count [bold]x")
    app = make_app(project, annotator="ana", start="judge")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, JudgeScreen)
        said = " ".join(toasts(app))
        assert "One of your flags was answered by a lead: q1 / c05 resolved by dora: refunds count" in said
        screen.pair = screen.queue.goto_pair("q1", "c05")
        await pilot.pause()
        text = panel(app)
        assert "⚑ flagged: is this about refunds?" in text
        assert "✓ resolved by dora: refunds count [bold]x" in text
        other = screen.queue.goto_pair("q1", "c06")
        screen.pair = other
        await pilot.pause()
        assert "resolved" not in panel(app)


@sync
async def test_a_sent_back_pair_comes_first_and_says_so(project):
    review.send_back(project, query_id="q1", chunk_id="c05", annotator="ana", access=rights(project, "dora"),
                     note="read it again")
    review.resolve(project, query_id="q2", chunk_id="c08", annotator="ana", access=rights(project, "dora"))
    app = make_app(project, annotator="ana", start="judge")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        screen = app.screen
        assert (screen.pair.query_id, screen.pair.chunk_id) == ("q1", "c05")
        assert "↩ sent back by dora: read it again" in panel(app)
        said = " ".join(toasts(app))
        assert "2 of your flags and comments were answered by a lead" in said
        assert "q1 / c05 sent back by dora: read it again" in said and "q2 / c08 resolved by dora" in said
        await pilot.press("1")  # she grades it again: answered, and the queue moves on
        await pilot.pause()
        assert (screen.pair.query_id, screen.pair.chunk_id) != ("q1", "c05")
    assert review.sent_back(project, "ana") == []
    assert [i.query_id for i in review.items(project, access=rights(project, "ana"), annotator="ana")] == ["q1"]


@sync
async def test_nothing_is_told_once_the_annotator_has_worked_since(project):
    review.resolve(project, query_id="q3", chunk_id="c11", annotator="ben", access=rights(project, "dora"), note="fine")
    record_label(project, annotator="ben", query_id="q4", chunk_id="c13", grade=1)
    app = make_app(project, annotator="ben", start="judge")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        assert not any("answered by a lead" in t for t in toasts(app))
        screen = app.screen
        screen.pair = screen.queue.goto_pair("q3", "c11")
        await pilot.pause()
        assert "✓ resolved by dora: fine" in panel(app), "the note stays on the pair"
