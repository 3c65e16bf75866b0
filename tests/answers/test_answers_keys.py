"""A key on the answer-judging screen acts on what the screen shows: before every judging key,
the item named on screen (the prompt line, the cited chunk's title) is read from the rendered
characters, and after it the event stored in the database must be that item's — through moves
between items, the citations of one sentence, undo and refreshes."""

from __future__ import annotations

import asyncio
import html
import re
import sqlite3

import pytest

from ragjudge.services.events import annotators as judging
from ragjudge.services.labels import facets as facet_service
from ragjudge.services.project.database import Project
from ragjudge.tui import make_app
from ragjudge.tui.screens.answers import AnswerJudgeScreen

pytestmark = pytest.mark.slow

SIZE = (120, 40)


def screen_text(app) -> str:
    """The characters on screen, line by line (from the SVG screenshot)."""
    svg = app.export_screenshot()
    lines: dict[str, list[str]] = {}
    for line, body in re.findall(r'<text [^>]*clip-path="url\(#[^)]*-line-(\d+)\)"[^>]*>(.*?)</text>', svg):
        lines.setdefault(line, []).append(html.unescape(body).replace("\xa0", " "))
    return "\n".join("".join(parts) for _, parts in sorted(lines.items(), key=lambda kv: int(kv[0])))


def shown(app) -> tuple:
    """What the screen says it judges next: ("nugget", text) or ("citation", chunk, sentence
    from 0), from the prompt line; a citation's chunk panel must name the same chunk."""
    text = screen_text(app)
    nugget = re.search(r"the answer supports nugget “(.+?)”\?", text)
    if nugget:
        return ("nugget", nugget.group(1)), text
    cite = re.search(r"chunk (\S+) supports sentence (\d+)\?", text)
    assert cite, text
    chunk, sentence = cite.group(1), int(cite.group(2))
    assert f"chunk {chunk}  cited by sentence {sentence}" in text, text  # the panel agrees
    return ("citation", chunk, sentence - 1), text


def last_event(db: str) -> tuple:
    """The newest judgment of cy: (what it judged, support, the answer's query, its sentences)."""
    connection = sqlite3.connect(db)
    try:
        answer_id, nugget, sentence, chunk, support = connection.execute(
            "SELECT j.answer_id, n.text, j.sentence, j.chunk_id, j.support FROM answer_judgments j "
            "LEFT JOIN nuggets n ON n.id = j.nugget_id WHERE j.annotator = 'cy' "
            "ORDER BY j.id DESC LIMIT 1").fetchone()
        query = connection.execute("SELECT query_id FROM answers WHERE id = ?", (answer_id,)).fetchone()[0]
        sentences = [t for t, in connection.execute(
            "SELECT text FROM answer_sentences WHERE answer_id = ? ORDER BY position", (answer_id,))]
    finally:
        connection.close()
    thing = ("nugget", nugget) if nugget is not None else ("citation", chunk, sentence)
    return thing, support, query, sentences


def count(db: str) -> int:
    connection = sqlite3.connect(db)
    try:
        return connection.execute("SELECT count(*) FROM answer_judgments WHERE annotator = 'cy'").fetchone()[0]
    finally:
        connection.close()


async def judge(pilot, db: str, key: str, support: str) -> tuple:
    """Press a judging key; the event stored is the item the screen showed at that moment."""
    before, text = shown(pilot.app)
    n = count(db)
    await pilot.press(key)
    await pilot.pause()
    assert count(db) == n + 1
    thing, stored, query, sentences = last_event(db)
    assert thing == before and stored == support
    assert f"query {query[1:]}" in text and all(s in text for s in sentences)  # that answer
    return thing


async def until(pilot, key: str, wanted) -> None:
    for _ in range(12):
        if wanted(shown(pilot.app)[0], screen_text(pilot.app)):
            return
        await pilot.press(key)
        await pilot.pause()
    raise AssertionError(screen_text(pilot.app))


def test_every_judging_key_stores_the_item_the_screen_shows(answers_db):
    async def main() -> None:
        with Project.open(answers_db) as project:
            judging.mark_guidelines_seen(project, "cy")
            app = make_app(project, annotator="cy", start="answers")
            async with app.run_test(size=SIZE) as pilot:
                await pilot.pause()
                assert isinstance(app.screen, AnswerJudgeScreen)
                # q1's bm25 answer: its first sentence cites c05 and c06
                await until(pilot, "right_square_bracket",
                            lambda _, text: "Parcels ship in five days." in text)
                # moving between items, then judging
                await pilot.press("down")
                assert await judge(pilot, answers_db, "1", "partial") == ("nugget", "free returns")
                await until(pilot, "down", lambda item, _: item == ("citation", "c05", 0))
                # the citations of one sentence: c brings its second chunk into focus
                await pilot.press("c")
                await pilot.pause()
                assert shown(app)[0] == ("citation", "c06", 0)
                assert await judge(pilot, answers_db, "0", "none") == ("citation", "c06", 0)
                await until(pilot, "up", lambda item, _: item == ("citation", "c05", 0))
                await pilot.press("c", "c")  # round the sentence's two chunks, back to c05
                await pilot.pause()
                assert await judge(pilot, answers_db, "f", "full") == ("citation", "c05", 0)
                # after undo: the undone item is on screen, and the next key judges it
                await pilot.press("u")
                await pilot.pause()
                assert shown(app)[0] == ("citation", "c05", 0)
                assert await judge(pilot, answers_db, "p", "partial") == ("citation", "c05", 0)
                await pilot.press("u")
                await pilot.pause()
                # after a refresh (the help screen opened and closed: the answer is read again)
                await pilot.press("question_mark")
                await pilot.pause()
                await pilot.press("escape")
                await pilot.pause()
                assert await judge(pilot, answers_db, "2", "full") == ("citation", "c05", 0)
                # after a refresh that changed the answer's items: a nugget added elsewhere
                # shifts every citation one place; the focus stays on what it showed
                await until(pilot, "down", lambda item, _: item == ("citation", "c07", 1))
                facet_service.add_nugget(project, "q1", "insured parcels", "okay")
                await pilot.press("g")
                await pilot.pause()
                await pilot.press("escape")
                await pilot.pause()
                assert shown(app)[0] == ("citation", "c07", 1)
                assert await judge(pilot, answers_db, "x", "none") == ("citation", "c07", 1)
                await until(pilot, "up", lambda item, _: item == ("nugget", "insured parcels"))
                assert await judge(pilot, answers_db, "2", "full") == ("nugget", "insured parcels")

    asyncio.run(main())


def test_c_on_a_nugget_or_a_lone_citation_changes_nothing(answers_db):
    async def main() -> None:
        with Project.open(answers_db) as project:
            judging.mark_guidelines_seen(project, "cy")
            app = make_app(project, annotator="cy", start="answers")
            async with app.run_test(size=SIZE) as pilot:
                await pilot.pause()
                await until(pilot, "right_square_bracket",
                            lambda _, text: "Parcels ship in five days." in text)
                before = shown(app)[0]
                assert before[0] == "nugget"
                await pilot.press("c")
                await pilot.pause()
                assert shown(app)[0] == before
                await until(pilot, "down", lambda item, _: item == ("citation", "c07", 1))
                await pilot.press("c")  # "Returns are free." cites c07 alone
                await pilot.pause()
                assert shown(app)[0] == ("citation", "c07", 1)
                assert count(answers_db) == 0

    asyncio.run(main())


def test_the_footer_pairs_each_key_with_what_it_does(answers_db):
    async def main() -> None:
        with Project.open(answers_db) as project:
            judging.mark_guidelines_seen(project, "cy")
            app = make_app(project, annotator="cy", start="answers")
            async with app.run_test(size=SIZE) as pilot:
                keys = ["2/f full", "1/p partial", "0/x none", "↓/j next item", "c next chunk",
                        "]/→ next answer", "u undo"]
                expected = "".join(k.replace(" ", "") for k in keys)
                for _ in range(100):  # the answers screen opens after its first read
                    await pilot.pause(0.05)
                    # the screenshot places each key and label apart: compare without the spaces
                    footer = "".join(screen_text(app).splitlines()[-1].split())
                    if footer.startswith(expected):
                        break
                assert footer.startswith(expected), footer

    asyncio.run(main())
