"""The answer-judging screen driven with Pilot, on the project of :mod:`answerkit`: every key that
judges is a committed event before the focus moves, undo writes a new event, the run is hidden,
and text from data is shown literally. Assertions are on the database."""

from __future__ import annotations

import asyncio
import io
import sqlite3

import pytest
from rich.console import Console
from textual.widgets import Static

from ragjudge.services.labels import answers
from ragjudge.services.events import annotators as judging
from ragjudge.services.project.database import Project
from ragjudge.tui import make_app
from ragjudge.tui.screens.answers import AnswerJudgeScreen

pytestmark = pytest.mark.slow

SIZE = (120, 40)


def events(db: str, annotator: str = "cy") -> list[tuple]:
    connection = sqlite3.connect(db)
    try:
        return connection.execute(
            "SELECT answer_id, nugget_id IS NOT NULL, sentence, chunk_id, support, undoes, source "
            "FROM answer_judgments WHERE annotator = ? ORDER BY id", (annotator,)).fetchall()
    finally:
        connection.close()


def screen_text(screen) -> str:
    """Every panel's text and border title, as a console prints them."""
    console = Console(width=200, record=True, file=io.StringIO())
    for widget in screen.query(Static):
        console.print(widget.content)
    for widget in screen.query("VerticalScroll, Static"):
        if widget.border_title:
            console.print(widget.border_title)
    return console.export_text()


def run(db: str, drive, **options) -> None:
    async def main() -> None:
        with Project.open(db) as project:
            judging.mark_guidelines_seen(project, "cy")
            app = make_app(project, annotator="cy", start="answers", **options)
            async with app.run_test(size=SIZE) as pilot:
                await pilot.pause()
                await drive(pilot, project)

    asyncio.run(main())


def test_an_answer_is_judged_in_a_few_keys_each_a_committed_event(answers_db):
    async def drive(pilot, project) -> None:
        screen = pilot.app.screen
        assert isinstance(screen, AnswerJudgeScreen)
        first = screen.view
        assert [i.nugget for i in first.items[:3]] == ["five days", "free returns", "tracking"]
        keys = ["2", "1", "0", "f", "x"]  # three nuggets, then each (sentence, chunk)
        for n, key in enumerate(keys, start=1):
            await pilot.press(key)
            got = events(answers_db)
            assert len(got) == n  # committed before the screen moved on
            item = first.items[n - 1]
            assert got[-1] == (first.answer_id, item.is_nugget, item.sentence, item.chunk_id,
                               ["full", "partial", "none", "full", "none"][n - 1], None, "tui")
        # the answer is complete: the screen went on to the next answer to judge
        assert screen.view.answer_id != first.answer_id
        assert answers.answer_view(project, first.answer_id, "cy").open == 0

    run(answers_db, drive)


def test_undo_writes_an_event_and_brings_the_judgment_back(answers_db):
    async def drive(pilot, project) -> None:
        screen = pilot.app.screen
        first = screen.view
        await pilot.press("2", "1")
        await pilot.press("u")
        got = events(answers_db)
        assert len(got) == 3 and got[-1][4] is None and got[-1][5] is not None  # an undo event
        assert screen.focus_index == 1  # the focus is back on the undone nugget
        assert answers.answer_view(project, first.answer_id, "cy").items[1].support is None
        await pilot.press("u")
        assert answers.answer_view(project, first.answer_id, "cy").items[0].support is None
        await pilot.press("u")
        assert len(events(answers_db)) == 4  # nothing left to undo: no event

    run(answers_db, drive)


def test_moving_without_judging_writes_nothing(answers_db):
    async def drive(pilot, project) -> None:
        screen = pilot.app.screen
        first = screen.view.answer_id
        await pilot.press("down", "down", "j")
        assert screen.focus_index == 3 and not screen._item().is_nugget
        await pilot.press("up")
        assert screen.focus_index == 2
        await pilot.press("right_square_bracket")
        assert screen.view.answer_id != first
        await pilot.press("left_square_bracket")
        assert screen.view.answer_id == first
        assert events(answers_db) == []

    run(answers_db, drive)


def test_the_sentence_in_focus_shows_its_cited_chunks_one_key_apart(answers_db):
    async def drive(pilot, project) -> None:
        screen = pilot.app.screen
        # go to q1's bm25 answer, whose first sentence cites c05 and c06
        while screen.view.run != "bm25" or screen.view.query_id != "q1":
            await pilot.press("right_square_bracket")
        await pilot.press("down", "down", "down")  # past the three nuggets: (sentence 1, c05)
        assert screen._chunk_in_view() == "c05"
        assert "chunk c05  cited by sentence 1  (1 of 2; c: next)" in screen_text(screen)
        await pilot.press("c")
        assert screen._chunk_in_view() == "c06"
        assert "chunk 6" in screen_text(screen)  # c06's text

    run(answers_db, drive)


def test_the_screen_is_blind_to_the_run(answers_db):
    async def drive(pilot, project) -> None:
        for _ in range(3):
            text = screen_text(pilot.app.screen)
            assert "bm25" not in text and "dense" not in text
            await pilot.press("right_square_bracket")

    run(answers_db, drive)

    async def shown(pilot, project) -> None:
        text = screen_text(pilot.app.screen)
        assert "run dense" in text or "run bm25" in text

    run(answers_db, shown, show_source=True)


def test_text_from_data_is_shown_literally(answers_db, tmp_path):
    import json

    from ragjudge.cli import main

    hostile = {"query_id": "q3", "run": "bm25", "sentences": [
        {"text": "[bold red]loud[/] and \x1b]52;c;cGF5bG9hZA==\x07 hidden [link=http://x]y[/link]",
         "citations": ["c02"]}]}
    path = tmp_path / "hostile.jsonl"
    path.write_text(json.dumps(hostile) + "\n", encoding="utf-8")
    assert main(["--db", answers_db, "import", "answers", str(path)]) == 0

    async def drive(pilot, project) -> None:
        screen = pilot.app.screen
        while screen.view.query_id != "q3":
            await pilot.press("right_square_bracket")
        table = screen.query_one("#answer-text", Static).content
        (text,) = table.columns[1]._cells  # the sentence column
        plain = text.plain
        assert "[bold red]loud[/]" in plain and "[link=http://x]y[/link]" in plain
        assert "\x1b" not in plain and "\x07" not in plain
        assert not any(span.style and "link" in str(span.style) for span in text.spans)
        console = Console(width=100, record=True, file=io.StringIO())
        console.print(table)
        printed = console.export_text()
        assert "\x1b" not in printed and "[bold red]loud[/]" in printed

    run(answers_db, drive)


def test_nuggets_are_added_in_the_same_panel_as_when_judging_pairs(answers_db):
    from textual.widgets import Input

    from ragjudge.tui.screens.facets import FacetsScreen

    async def drive(pilot, project) -> None:
        screen = pilot.app.screen
        await pilot.press("g")
        await pilot.pause()
        assert isinstance(pilot.app.screen, FacetsScreen)
        await pilot.press("b")
        await pilot.pause()
        pilot.app.screen.query_one(Input).value = "vital: parcels are insured"
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert pilot.app.screen is screen
        assert [i.nugget for i in screen.view.items if i.is_nugget][-1] == "parcels are insured"
        assert "parcels are insured" in screen_text(screen)

    run(answers_db, drive)


def test_home_screen_w_opens_answer_judging(answers_db):
    async def main() -> None:
        with Project.open(answers_db) as project:
            judging.mark_guidelines_seen(project, "cy")
            app = make_app(project, annotator="cy")
            async with app.run_test(size=SIZE) as pilot:
                await pilot.pause()
                await pilot.press("w")
                await pilot.pause()
                assert isinstance(app.screen, AnswerJudgeScreen)
                await pilot.press("escape")
                await pilot.pause()
                assert not isinstance(app.screen, AnswerJudgeScreen)

    asyncio.run(main())


def test_a_project_without_answers_says_how_to_get_some(project_db):
    async def drive(pilot, project) -> None:
        text = screen_text(pilot.app.screen)
        assert "There is no generated answer to judge here" in " ".join(text.split())
        await pilot.press("2")  # nothing to judge: nothing written, no crash

    run(project_db, drive)
    assert events(project_db) == []


def test_annotate_answers_refuses_pair_options(answers_db, capsys):
    from ragjudge.cli import main

    assert main(["--db", answers_db, "annotate", "--answers", "--recheck", "0.1"]) == 2
    assert "do not apply to --answers" in capsys.readouterr().err
    assert main(["--db", answers_db, "annotate", "--answers", "--queries", "q9"]) == 2
    assert "has a generated answer" in capsys.readouterr().err
