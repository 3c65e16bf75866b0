"""Every screen of the app on a project whose every text is hostile.

Queries, descriptions, categories, query fields, chunks and their fields, notes, the guidelines,
run and annotator names, facets, nuggets, the scale's level names and the pair ids hold escape
sequences (OSC 52 writes the clipboard, OSC 0 the window title, ``ESC c`` resets the terminal),
an 8-bit CSI, a right-to-left override, a bare CR, Rich markup and very long lines. Every screen
and every tab opens, nothing crashes, and what is drawn holds no raw control character and no
link: the hostile text is on screen, shown visibly (``␛]52``).
"""

from __future__ import annotations

import asyncio
import time

import pytest
from projectkit import rights
from drawn import assert_clean_screen, drawn_text
from rich.text import Text
from sqlalchemy import select
from textual.app import App
from textual.widgets import DataTable, Input, Static

from ragjudge.models import Scale
from ragjudge.services.gold import adjudication as agreement_svc
from ragjudge.services.labels import events as judging_events
from ragjudge.services.labels import facets as judging_facets
from ragjudge.services.project.database import Project
from ragjudge.store.schema import Adjudication, Annotator, Chunk, Label, Query, Run, RunEntry
from ragjudge.tui import make_app

pytestmark = pytest.mark.slow

OSC52 = "\x1b]52;c;aGFja2Vk\x07"
OSC0 = "\x1b]0;owned\x07"
MARKUP = "[/] [bold red]x [link=http://e.x]y[/link]"


def hostile(tag: str) -> str:
    return f"{tag} {OSC52}{OSC0}\x1bc\x9b31m\u202eabc a\rb {MARKUP}"


LONG = "lorem " * 400 + "\x1b]0;tail\x07"
GUIDELINES = (
    f"# Guide {hostile('heading')}\n\n{hostile('paragraph')}\n\n- {hostile('item')}\n\n"
    f"`{hostile('code')}`\n\n```\n{hostile('block')}\n```\n\n[a link](http://e.x/{OSC0})\n\n{LONG}\n"
)
LEAD = "[/]lead"
ANNOTATOR = "[bold]ann[/]"
BOB = f"bob{OSC0}"  # an annotator name from an imported file (the app refuses to create it)
RUN_A = f"bm25{OSC52}[/]"
RUN_B = "[bold red]dense"
Q_MARKUP, C_MARKUP = "q[/]2", "c[/]2"
QUERIES = ["q1", Q_MARKUP, f"q3{OSC0}"]
CHUNKS = ["c1", C_MARKUP, f"c3{OSC52}", "c4", "c5", "c6"]
SIZE = (160, 50)


def build(path) -> Project:
    project = Project.init(str(path), name=hostile("project"), guidelines=GUIDELINES)
    scale = Scale.parse("0-3").model_dump(mode="json")
    for level in scale["levels"]:
        level["name"] = f"L{level['grade']} {OSC0}[/]"
        level["description"] = hostile("level")
    project.set_settings({"scale": scale})

    def seed(session) -> None:
        for i, qid in enumerate(QUERIES):
            session.add(Query(id=qid, text=hostile(f"query {i}"), description=hostile("description"),
                              category=hostile("category") if i % 2 else "[/]plain",
                              meta={"narrative": hostile("narrative"), f"field{OSC0}[/]": hostile("value")}))
        for j, cid in enumerate(CHUNKS):
            session.add(Chunk(id=cid, text=hostile(f"chunk {j}") + "\n" + LONG, doc_id=hostile("doc"),
                              meta={"title": hostile("title")}))
        session.add_all([Run(name=RUN_A), Run(name=RUN_B), Annotator(name=BOB)])
        session.flush()
        for qid in QUERIES:
            for rank, cid in enumerate(CHUNKS, 1):
                session.add(RunEntry(run=RUN_A, query_id=qid, chunk_id=cid, rank=rank, score=10.0 - rank))
                session.add(RunEntry(run=RUN_B, query_id=qid, chunk_id=cid, rank=len(CHUNKS) + 1 - rank,
                                     score=float(rank)))
        # BOB's labels, as an import writes them: every pair disputed with ANNOTATOR below
        for qid in QUERIES:
            for cid in CHUNKS[:3]:
                session.add(Label(query_id=qid, chunk_id=cid, annotator=BOB, grade=0, source="import"))

    project.write(seed)
    for qid in QUERIES:
        for cid in CHUNKS[:3]:
            judging_events.record_label(project, annotator=ANNOTATOR, query_id=qid, chunk_id=cid, grade=3)
    judging_events.comment_pair(project, annotator=ANNOTATOR, query_id=Q_MARKUP, chunk_id=C_MARKUP,
                         note=hostile("comment"))
    judging_events.flag_pair(project, annotator=ANNOTATOR, query_id="q1", chunk_id="c1", note=hostile("flag"))
    for qid in QUERIES:
        facet = judging_facets.add_facet(project, qid, hostile("facet"))
        nugget = judging_facets.add_nugget(project, qid, hostile("nugget"), "vital")
        judging_facets.set_facet_link(project, annotator=ANNOTATOR, facet_id=facet, chunk_id="c1", covered=True)
        judging_facets.set_nugget_support(project, annotator=ANNOTATOR, nugget_id=nugget, chunk_id="c1",
                                   support="partial")
    agreement_svc.adjudicate(project, query_id="q1", chunk_id=C_MARKUP, grade=1,
                             reason=hostile("reason"), access=rights(project, LEAD))
    return project


@pytest.fixture
def project(tmp_path):
    p = build(tmp_path / "hostile.db")
    yield p
    p.close()


def run(scenario) -> None:
    asyncio.run(scenario())


async def until(pilot, predicate, what: str, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, f"never happened: {what}"
        await pilot.pause(0.05)


async def settle(pilot) -> None:
    for _ in range(3):
        await pilot.pause()


async def type_text(pilot, text: str) -> None:
    """Type into the focused Input key by key, as a person does."""
    for ch in text:
        await pilot.press(ch)


def screen_name(app) -> str:
    return type(app.screen).__name__


def check(app, where: str) -> str:
    text = assert_clean_screen(app, where)
    assert "␛]52;c;aGFja2Vk␇" in text or "␛]0;owned␇" in text or "[/]" in text, f"{where}: {text[:400]}"
    return text


# -- the check itself ---------------------------------------------------------------------------

class _Raw(App):
    def compose(self):
        yield Static(Text("drawn \x1b]0;raw title"), id="raw")


def test_the_screen_check_sees_a_raw_escape_when_one_is_drawn():
    async def scenario() -> None:
        app = _Raw()
        async with app.run_test(size=(60, 5), notifications=True) as pilot:
            await settle(pilot)
            assert "\x1b]0;raw title" in drawn_text(app)
            with pytest.raises(AssertionError, match="U\\+001B"):
                assert_clean_screen(app, "raw")
            app.query_one("#raw", Static).update("clean")
            app.notify("a toast \x1b]52;c;x\x07", markup=False)  # Textual's own notify: raw
            await settle(pilot)
            assert "a toast \x1b]52" in drawn_text(app)
            with pytest.raises(AssertionError, match="U\\+001B"):
                assert_clean_screen(app, "toast")

    run(scenario)


# -- the screens ----------------------------------------------------------------------------------

def test_home_help_and_guidelines(project):
    async def scenario() -> None:
        app = make_app(project)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await until(pilot, lambda: "pool (top" in drawn_text(app), "the home screen counted")
            text = check(app, "home")
            assert "project ␛]52;c;aGFja2Vk␇␛]0;owned␇␛c⟨U+009B⟩31m⟨U+202E⟩abc a␍b [/] [bold red]x" in text
            assert "bm25␛]52;c;aGFja2Vk␇[/]" in text and "[bold red]dense" in text
            assert "bob␛]0;owned␇" in text and ANNOTATOR in text
            await pilot.press("question_mark")
            await settle(pilot)
            assert screen_name(app) == "HelpScreen"
            assert_clean_screen(app, "help")
            await pilot.press("escape", "h")
            await settle(pilot)
            assert screen_name(app) == "GuidelinesScreen"
            text = check(app, "guidelines")
            for part in ("heading", "paragraph", "item", "code", "block"):
                assert f"{part} ␛]52;c;aGFja2Vk␇␛]0;owned␇␛c" in text, part
            await pilot.press("escape")
            await settle(pilot)
            assert screen_name(app) == "HomeScreen"

    run(scenario)


def test_name_prompt_lists_the_annotators(project):
    async def scenario() -> None:
        app = make_app(project, start="judge")
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await settle(pilot)
            assert screen_name(app) == "TextPrompt"
            text = check(app, "name prompt")
            assert "bob␛]0;owned␇" in text and ANNOTATOR in text

    run(scenario)


def test_first_guidelines_judging_find_facets_and_help(project):
    async def scenario() -> None:
        app = make_app(project, annotator="[/]newbie", start="judge", order="query", show_source=True)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await settle(pilot)
            assert screen_name(app) == "NameChoice"  # a name the project does not know: asked first
            check(app, "name choice")
            await pilot.press("c")  # create it
            await settle(pilot)
            assert screen_name(app) == "GuidelinesScreen"  # shown once to a new annotator
            check(app, "first guidelines")
            await pilot.press("enter")
            await settle(pilot)
            assert screen_name(app) == "JudgeScreen"
            seen = set()
            for _ in range(len(CHUNKS) + 2):
                pair = app.screen.pair
                seen.add((pair.query_id, pair.chunk_id))
                text = check(app, f"judging {pair.query_id!r}/{pair.chunk_id!r}")
                assert "chunk " in text and "␛]52;c;aGFja2Vk␇" in text
                await pilot.press("right")
                await settle(pilot)
            assert {c for _, c in seen} >= {"c1", C_MARKUP, f"c3{OSC52}"}
            # the notes and flags of this pair, and the facets panel
            await pilot.press("g")
            await settle(pilot)
            assert screen_name(app) == "FacetsScreen"
            text = check(app, "facets")
            assert "facet ␛]52" in text and "nugget ␛]52" in text
            await pilot.press("a")
            await settle(pilot)
            await type_text(pilot, "[/]new facet")
            await pilot.press("enter")
            await settle(pilot)
            assert "[/]new facet" in check(app, "facet added")
            await pilot.press("escape")
            await settle(pilot)
            await pilot.press("slash")
            await settle(pilot)
            assert screen_name(app) == "FindQuery"
            await type_text(pilot, "query")
            await settle(pilot)
            text = check(app, "find")
            assert "q[/]2" in text and "q3␛]0;owned␇" in text
            await pilot.press("escape", "question_mark")
            await settle(pilot)
            assert screen_name(app) == "HelpScreen"
            assert_clean_screen(app, "judging help")

    run(scenario)


def test_judging_a_pair_with_notes_and_a_comment_typed(project):
    async def scenario() -> None:
        app = make_app(project, annotator=ANNOTATOR, start="judge", queries=[Q_MARKUP], order="query")
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await settle(pilot)
            if screen_name(app) == "GuidelinesScreen":
                await pilot.press("enter")
                await settle(pilot)
            screen = app.screen
            for _ in range(len(CHUNKS)):
                if screen.pair.chunk_id == C_MARKUP:
                    break
                await pilot.press("right")
                await settle(pilot)
            assert screen.pair.chunk_id == C_MARKUP
            text = check(app, "the commented pair")
            assert "comment" in text and "your label" in text
            await pilot.press("c")
            await settle(pilot)
            assert screen_name(app) == "TextPrompt"
            check(app, "comment prompt")  # the current hostile note is the Input's value
            screen_prompt = app.screen.query_one(Input)
            screen_prompt.value = ""
            await type_text(pilot, "[/]see [bold]x")
            await pilot.press("enter")
            await settle(pilot)
            text = check(app, "comment saved")
            assert "[/]see [bold]x" in text and "Comment saved." in text

    run(scenario)


def test_evaluation_screen_every_tab_and_a_bad_measure(project):
    from ragjudge.tui.screens.evaluation import EvaluationScreen
    from ragjudge.tui.widgets.evalpane import ExplainModal

    async def scenario() -> None:
        app = make_app(project)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await settle(pilot)
            await pilot.press("e")
            await until(pilot, lambda: isinstance(app.screen, EvaluationScreen)
                        and app.screen.snapshot is not None and app.screen.details is not None,
                        "the evaluation screen computed")
            screen = app.screen
            text = check(app, "evaluation overview")
            assert "bm25␛]52;c;aGFja2Vk␇[/]" in text
            for key, tab in (("p", "per-query"), ("v", "curves"), ("s", "strata")):
                await pilot.press(key)
                await until(pilot, lambda tab=tab: screen._rendered.get(tab) is not None, f"tab {tab}")
                await settle(pilot)
                check(app, f"evaluation {tab}")
            for _ in range(3):  # strata: the next query fields (hostile names and values)
                await pilot.press("f")
                await until(pilot, lambda: screen.snapshot.strata_field == screen.field, "strata by a field")
                await settle(pilot)
                text = check(app, f"strata by {screen.field!r}")
                if screen.field.startswith("field"):
                    assert "field␛]0;owned␇[/]" in text and "value ␛]52" in text
            assert any(f.startswith("field") for f in screen._fields)
            await pilot.press("c")
            await until(pilot, lambda: screen._rendered.get("compare") is not None, "tab compare")
            await settle(pilot)
            check(app, "evaluation compare")
            await pilot.press("b")  # compare: the next run as B (hostile names)
            await settle(pilot)
            check(app, "compare a/b")
            await pilot.press("p")
            await until(pilot, lambda: screen._query_rows, "per-query rows")
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, ExplainModal), "the explanation")
            check(app, "explanation")
            await pilot.press("escape")
            await settle(pilot)
            for _ in range(6):  # rules: ... annotator:<hostile name> ...
                await pilot.press("g")
                await settle(pilot)
                assert_clean_screen(app, f"rule {screen.rule}")
            await pilot.press("plus")
            await settle(pilot)
            assert screen_name(app) == "TextPrompt"
            await type_text(pilot, "[/]bogus")
            await pilot.press("enter")
            await until(pilot, lambda: "bogus" in drawn_text(app), "the measure's error")
            text = check(app, "bad measure")
            assert "[/]bogus" in text
            assert app.screen is screen and app.return_code is None

    run(scenario)


def test_agreement_screen_every_tab_and_adjudication_of_a_markup_pair(project):
    from ragjudge.tui.screens.adjudicate import AdjudicateScreen
    from ragjudge.tui.screens.agreement import AgreementScreen

    async def scenario() -> None:
        app = make_app(project)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await settle(pilot)
            await pilot.press("a")
            await until(pilot, lambda: isinstance(app.screen, AgreementScreen) and app.screen.view is not None,
                        "the agreement screen computed")
            screen = app.screen
            check(app, "agreement overview")
            for key in ("p", "b", "n", "l", "d"):
                await pilot.press(key)
                await settle(pilot)
                check(app, f"agreement tab {key}")
            target = screen._disputed.index((Q_MARKUP, C_MARKUP))
            screen.query_one("#disputed-table", DataTable).move_cursor(row=target)
            await settle(pilot)
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, AdjudicateScreen), "adjudication")
            await settle(pilot)
            text = check(app, "adjudication")
            assert "q[/]2 / c[/]2" in text and "comment" in text and "bob␛]0;owned␇" in text
            await pilot.press("2")
            await settle(pilot)
            assert screen_name(app) == "TextPrompt"
            check(app, "reason prompt")
            await type_text(pilot, "[/]because")
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, AgreementScreen), "back on agreement")
            await settle(pilot)
            text = check(app, "adjudicated")
            assert "Adjudicated q[/]2 / c[/]2: grade 2." in text
        with project.read() as session:
            rows = session.execute(select(Adjudication.grade, Adjudication.reason)
                                   .where(Adjudication.query_id == Q_MARKUP)).all()
        assert [tuple(row) for row in rows] == [(2, "[/]because")]

    run(scenario)


def test_the_exit_message_is_printed_as_text(project, capsys):
    bogus = f"[/]bogus{OSC0}"

    async def scenario() -> None:
        app = make_app(project, annotator=ANNOTATOR, start="judge", runs=[bogus])
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
        assert app.return_code == 2

    run(scenario)
    err = capsys.readouterr().err
    assert "ragjudge: --runs: no run named [/]bogus␛]0;owned␇ in this project" in err
    assert "\x1b]0;owned" not in err
