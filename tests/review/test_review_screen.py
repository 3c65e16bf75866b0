"""The review screen, driven with Pilot: walk the open items, resolve with a note, adjudicate,
send back; what is on disk after each key and what the screen says."""

from __future__ import annotations

import asyncio
import functools
import sqlite3
from datetime import datetime, timedelta

import pytest
from projectkit import rights

from ragjudge.services.labels import review
from ragjudge.services.access import roster
from ragjudge.services.labels.events import flag_pair
from ragjudge.store.schema import Query
from ragjudge.tui import make_app
from ragjudge.tui.screens.adjudicate import AdjudicateScreen
from ragjudge.tui.screens.help import HelpScreen
from ragjudge.tui.screens.home import HomeScreen
from ragjudge.tui.screens.prompts import TextPrompt
from ragjudge.tui.screens.review import ReviewScreen

pytestmark = pytest.mark.slow

SIZE = (140, 44)


def sync(test):
    @functools.wraps(test)
    def run(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))

    return run


def text(app, selector: str) -> str:
    """What a panel shows, as plain text (a table drawn at the panel's width)."""
    from rich.console import Console

    widget = app.screen.query_one(selector)
    content = widget.content
    if isinstance(content, str):
        return content
    console = Console(width=max(widget.content_size.width, 20), record=True, file=None,
                      color_system=None, legacy_windows=False)
    with console.capture() as captured:
        console.print(content)
    return captured.get().rstrip("\n")


def reviews(tmp_path) -> list[tuple]:
    return sqlite3.connect(tmp_path / "p.db").execute(
        "SELECT annotator, query_id, chunk_id, action, text, source FROM pair_marks "
        "WHERE kind = 'review' ORDER BY id").fetchall()


def describe(project) -> None:
    def work(session) -> None:
        session.get(Query, "q1").description = "Customer asks [bold]how long[/] refunds take."

    project.write(work)


async def open_review(app, pilot) -> ReviewScreen:
    await pilot.pause()
    assert isinstance(app.screen, HomeScreen)
    await pilot.press("v")
    await pilot.pause()
    assert isinstance(app.screen, ReviewScreen)
    return app.screen


@sync
async def test_the_walk_shows_query_chunk_and_every_label(project):
    describe(project)
    app = make_app(project, annotator="dora")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_review(app, pilot)
        assert "item 1 of 3 · open" in text(app, "#review-title")
        query = text(app, "#review-query")
        assert "q1" in query and "query 1" in query
        assert "Customer asks [bold]how long[/] refunds take." in query, "markup shown, not obeyed"
        assert text(app, "#review-chunk-text") == "chunk 5"
        item = text(app, "#review-item")
        assert "ana" in item and "⚑ flagged: is this about refunds?" in item
        labels = " ".join(text(app, "#review-labels").split())
        assert "ana 2 Highly relevant flagged: is this about" in labels and "refunds?" in labels
        assert "ben 0 Irrelevant" in labels
        await pilot.press("n")
        assert (screen.current.item.query_id, screen.current.item.annotator) == ("q2", "ana")
        assert "comment: see the FAQ" in text(app, "#review-item")
        await pilot.press("n", "n")  # the last one stays
        assert "item 3 of 3" in text(app, "#review-title")
        await pilot.press("p", "left")
        assert "item 1 of 3" in text(app, "#review-title")


@sync
async def test_resolve_with_a_note_is_an_event_and_the_walk_moves_on(project, tmp_path):
    app = make_app(project, annotator="dora")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_review(app, pilot)
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, TextPrompt)
        await pilot.press(*"yes, refunds count", "enter")
        await pilot.pause()
        assert reviews(tmp_path) == [("dora", "q1", "c05", "resolve", "yes, refunds count", "tui")]
        assert screen.current.item.query_id == "q2"
        await pilot.press("p")
        item = text(app, "#review-item")
        assert "✓ resolved by dora: yes, refunds count" in item
        assert "item 1 of 3 · resolved" in text(app, "#review-title")
        await pilot.press("r", "escape")  # a cancelled prompt writes nothing
        await pilot.pause()
        assert len(reviews(tmp_path)) == 1
    assert [i.query_id for i in review.items(project, access=rights(project))] == ["q2", "q3"]


@sync
async def test_send_back_puts_the_pair_first_in_the_authors_queue(project, tmp_path):
    from ragjudge.services.labels.queue import JudgingQueue

    app = make_app(project, annotator="dora")
    async with app.run_test(size=SIZE) as pilot:
        await open_review(app, pilot)
        await pilot.press("n", "n", "b")  # ben's flag on q3 / c11
        await pilot.pause()
        await pilot.press(*"grade it again", "enter")
        await pilot.pause()
        assert reviews(tmp_path) == [("dora", "q3", "c11", "send-back", "grade it again", "tui")]
        assert "↩ sent back by dora: grade it again" in text(app, "#review-item")
    first = JudgingQueue(project, "ben").first()
    assert (first.query_id, first.chunk_id) == ("q3", "c11")


@sync
async def test_adjudicate_reuses_the_adjudication_screen(project, tmp_path):
    app = make_app(project, annotator="dora")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_review(app, pilot)
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, AdjudicateScreen)
        await pilot.press("1")
        await pilot.pause()
        await pilot.press(*"partly about refunds", "enter")
        await pilot.pause()
        assert app.screen is screen
        assert "adjudicated 1 by dora: partly about refunds" in text(app, "#review-item")
    rows = sqlite3.connect(tmp_path / "p.db").execute(
        "SELECT query_id, chunk_id, grade, by, reason FROM adjudications").fetchall()
    assert rows == [("q1", "c05", 1, "dora", "partly about refunds")]
    assert reviews(tmp_path) == [], "adjudicating decides the grade; the flag is resolved apart"


@sync
async def test_the_list_view_opens_an_item(project):
    app = make_app(project, annotator="dora")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_review(app, pilot)
        await pilot.press("l")
        await pilot.pause()
        table = screen.query_one("#review-list")
        assert table.display and table.row_count == 3
        await pilot.press("down", "down", "enter")
        await pilot.pause()
        assert not table.display
        assert screen.current.item.annotator == "ben" and "item 3 of 3" in text(app, "#review-title")
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert app.screen.title_text == "Review keys"


@sync
async def test_a_non_lead_walks_their_own_items_and_answers_none(project, tmp_path):
    from ragjudge.tui.screens.prompts import Refused

    roster.add(project, "dora", role="lead", access=rights(project))
    app = make_app(project, annotator="ben")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_review(app, pilot)
        assert [(i.query_id, i.annotator) for i in screen.items] == [("q3", "ben")]
        assert "your flags and comments" in text(app, "#review-title")
        assert "is this about refunds?" not in text(app, "#review-labels"), "ana's flag is hers"
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, Refused), "the service's refusal, not a prompt"
        assert "Only a lead may resolve flags" in str(app.screen.message)
        await pilot.press(*"typed on", "escape")  # the letters stay in the refusal
        await pilot.pause()
        assert app.screen is screen
        await pilot.press("b")
        await pilot.pause()
        assert isinstance(app.screen, Refused)
        await pilot.press("escape", "a")
        await pilot.pause()
        assert isinstance(app.screen, Refused), "adjudicating is a lead's too"
    assert reviews(tmp_path) == []


@sync
async def test_the_screen_runs_as_the_app_s_identity_with_no_name_asked(project, tmp_path,
                                                                        monkeypatch):
    roster.add(project, "dora", role="lead", access=rights(project))
    monkeypatch.setenv("RAGJUDGE_USER", "dora")
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await open_review(app, pilot)
        await pilot.press("r", "enter")
        await pilot.pause()
    assert reviews(tmp_path) == [("dora", "q1", "c05", "resolve", None, "tui")]


@sync
async def test_reached_from_the_agreement_screen_and_the_palette(project):
    from ragjudge.tui.screens.agreement import AgreementScreen

    app = make_app(project, annotator="dora")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, AgreementScreen)
        await pilot.press("v")
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert any(t.startswith("Resolve") for t in titles)
        assert any(t.startswith("Send back") for t in titles)
        home = [c.title for c in app.get_system_commands(HomeScreen(project))]
        assert any(t.startswith("Review") for t in home)


@sync
async def test_nothing_open(project, tmp_path):
    for item in review.items(project, access=rights(project)):
        review.resolve(project, query_id=item.query_id, chunk_id=item.chunk_id,
                       annotator=item.annotator, access=rights(project))
    app = make_app(project, annotator="dora")
    async with app.run_test(size=SIZE) as pilot:
        await open_review(app, pilot)
        assert "nothing open" in text(app, "#review-title")
        assert "No open flags or comments" in text(app, "#review-chunk-text")
        await pilot.press("r", "b", "a", "n", "p")
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)


EXPECTED = """\
review  test project  ·  item 1 of 3 · sent back
q1
query 1
Customer asks [bold]how long[/] refunds take.
ana  2030-01-01 09:00
⚑ flagged: is this about refunds?
↩ sent back by dora: look again␛[31m  2030-01-01 09:00
 annotator  grade              flag, comment, note      time
 ana        2 Highly relevant  flagged: is this about   01-01 09:00
                               refunds?
 ben        0 Irrelevant                                01-01 09:00
chunk 5"""


@pytest.fixture
def clock(monkeypatch):
    """Every event at a fixed time, one second apart: the rendered text does not depend on
    the clock."""
    ticks = iter(datetime(2030, 1, 1, 9, 0) + timedelta(seconds=i) for i in range(10_000))
    import ragjudge.services.labels.events as J
    import ragjudge.services.labels.review as R

    monkeypatch.setattr(J, "utcnow", lambda: next(ticks))
    monkeypatch.setattr(R, "utcnow", lambda: next(ticks))


def test_the_rendered_text(tmp_path, clock):
    from projectkit import make_small_project
    from reviewkit import seed_marks

    with make_small_project(str(tmp_path / "p.db")) as project:
        seed_marks(project)
        describe(project)
        review.send_back(project, query_id="q1", chunk_id="c05", annotator="ana",
                         access=rights(project), note="look again\x1b[31m")
        flag_pair(project, annotator="ana", query_id="q1", chunk_id="c05",
                  note="is this about refunds?")  # unchanged: no new event, still sent back

        @sync
        async def render() -> str:
            app = make_app(project, annotator="dora")
            async with app.run_test(size=SIZE) as pilot:
                screen = await open_review(app, pilot)
                screen.items.insert(0, review.item(project, "ana", "q1", "c05"))
                screen.show()
                await pilot.pause()
                parts = [text(app, s) for s in ("#review-title", "#review-query", "#review-item",
                                                "#review-labels", "#review-chunk-text")]
            return "\n".join(line.rstrip() for p in parts for line in p.splitlines())

        assert render() == EXPECTED
