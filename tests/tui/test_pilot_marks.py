"""The judging screen's flags and comments, driven with Pilot: what the label panel says, and
what is on disk after each key."""

from __future__ import annotations

import pytest

from test_pilot import SIZE, labels, open_judging, screen_text
from tui_project import sync

from ragjudge.services.events import marks as J
from ragjudge.tui import make_app
from ragjudge.tui.screens.prompts import ConfirmPrompt

pytestmark = pytest.mark.slow


def panel(app) -> str:
    """The text of the "your label" panel."""
    return str(app.screen.query_one("#earlier-panel").render())


def marks(project, pair) -> J.PairMarks:
    return J.current_marks(project, "alice", pair.query_id, pair.chunk_id)


@sync
async def test_a_flag_on_an_ungraded_pair_says_no_grade_not_undone(project):
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        pair = screen.pair
        assert "no grade" in panel(app) and "undone" not in panel(app)
        await pilot.press("f", *"ask lead", "enter")
        await pilot.pause()
        text = panel(app)
        assert "no grade" in text and "(undone)" not in text
        assert "⚑ flagged: ask lead" in text
        assert marks(project, pair) == J.PairMarks(True, "ask lead", None)
        assert labels(project) == []  # a flag is not a label event


@sync
async def test_undone_only_after_an_undo(project):
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        await pilot.press("2", "u")
        await pilot.pause()
        assert "no grade (undone)" in panel(app)
        assert screen.pair.state.undone


@sync
async def test_flag_and_comment_made_before_grading_stay_after_the_grade(project):
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        pair = screen.pair
        await pilot.press("c", *"see doc", "enter")
        await pilot.pause()
        await pilot.press("f", *"unsure", "enter")
        await pilot.pause()
        await pilot.press("2")  # grade and move on
        assert (screen.pair.query_id, screen.pair.chunk_id) != (pair.query_id, pair.chunk_id)
        assert marks(project, pair) == J.PairMarks(True, "unsure", "see doc")
        assert [r.grade for r in labels(project)] == [2]
        await pilot.press("left")
        await pilot.pause()
        text = panel(app)
        assert "2 " in text and "⚑ flagged: unsure" in text and "comment: see doc" in text
        await pilot.press("s", "u")  # a skip and an undo leave them too
        await pilot.pause()
        assert marks(project, pair) == J.PairMarks(True, "unsure", "see doc")


@sync
async def test_f_on_a_flagged_pair_offers_to_remove_the_flag(project):
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        pair = screen.pair
        await pilot.press("f", *"odd", "enter")
        await pilot.pause()
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmPrompt)
        assert "Remove your flag?" in screen_text(app) and "odd" in screen_text(app)
        await pilot.press("n")  # kept
        await pilot.pause()
        assert marks(project, pair).flagged
        await pilot.press("f", "y")
        await pilot.pause()
        assert marks(project, pair) == J.PairMarks()
        assert "flagged" not in panel(app)


@sync
async def test_an_empty_comment_removes_the_comment(project):
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        pair = screen.pair
        await pilot.press("c", *"first", "enter")
        await pilot.pause()
        await pilot.press("c")  # the prompt holds the comment: edit it
        await pilot.pause()
        await pilot.press("end", *" and more", "enter")
        await pilot.pause()
        assert marks(project, pair).comment == "first and more"
        await pilot.press("c", "ctrl+u", "enter")  # emptied: removed
        await pilot.pause()
        assert marks(project, pair) == J.PairMarks()
        assert "comment" not in panel(app)
