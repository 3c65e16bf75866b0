"""A 0-4 project's grade names on the judging screen: the scale panel, the help screen (a row
per grade, by name), the earlier label and the undo message; a name is shown as typed, never
as markup."""

from __future__ import annotations

import pytest
from projectkit import rights
from test_pilot import SIZE, open_judging, screen_text
from tui_project import build_project, sync

from ragjudge.services.labels.scale import set_grade_names
from ragjudge.tui import make_app
from ragjudge.tui.screens.help import HelpScreen

NAMES = ["Not relevant", "Marginal", "[bold]Partly[/]", "Mostly", "Perfect"]


@pytest.fixture
def named(tmp_path):
    project = build_project(tmp_path / "five.db", scale="0-4", guidelines=None)
    set_grade_names(project, NAMES, access=rights(project, "alice"))
    yield project
    project.close()


@pytest.mark.slow
@sync
async def test_the_judging_screen_and_its_help_name_every_grade(named):
    app = make_app(named, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        await open_judging(app, pilot)
        shown = screen_text(app)
        for grade, name in enumerate(NAMES):
            assert f"│ {grade} {name}│" in shown, name  # the markup-like name as typed
        assert "Grade 4" not in shown
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        rows = [(key, str(name), str(what)) for key, name, what in app.screen.rows[:5]]
        assert rows == [(str(g), name, f"Give grade {g} and move on.") for g, name in enumerate(NAMES)]
        help_text = screen_text(app)
        assert "[bold]Partly[/]" in help_text and "Perfect" in help_text


@sync
async def test_the_earlier_label_and_undo_say_the_grades_name(named):
    app = make_app(named, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        first = screen.pair
        await pilot.press("4")
        await pilot.press("left")  # back to the first pair: its label is 4, by name
        await pilot.pause()
        assert (screen.pair.query_id, screen.pair.chunk_id) == (first.query_id, first.chunk_id)
        assert "4 Perfect" in str(screen.query_one("#earlier-panel").content)
        await pilot.press("2")  # graded again ...
        await pilot.press("u")  # ... and undone: back to 4
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert "Undone: back to grade 4 (Perfect)." in said
