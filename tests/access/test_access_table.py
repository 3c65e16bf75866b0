"""Every command, screen and served page, as an annotator of a blind project with a lead.

One project: dora leads; ann and bo and cy annotate. bo and cy judged ``zz-secret`` (ranked 2nd
by the run ``dense`` for q1), which ann has not: bo gave it 3 in a millisecond (a too-fast
label), flagged it with ``bo-secret-note`` and commented ``bo-secret-comment``, linked it to a
facet and a nugget; dora adjudicated it (``secret-reason``). Nothing ann runs or opens may show
any of it (:data:`SECRETS`); what dora runs or opens shows it where the command or screen is
about it.

The tables are checked against the application itself: every command of the Typer app
(:data:`COMMANDS`), every screen class under ``ragjudge/tui/screens`` and every modal screen
under ``ragjudge/tui/widgets`` (:data:`SCREENS`), and every screen a served annotator may open
(:data:`ragjudge.tui.served.ANNOTATOR_SCREENS`) must have a row, so a new command or screen
fails here until it is entered with its check, or with the reason it shows no grade.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import io
import json
import pkgutil
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer.main
from projectkit import make_small_project, rights
from rich.console import Console
from textual.screen import Screen
from textual.widgets import DataTable, Static
from pilotkit import wait_for

import ragjudge.tui.screens
import ragjudge.tui.widgets
from ragjudge.cli import _register, main
from ragjudge.cli.app import app as cli_app
from ragjudge.services.access import roster
from ragjudge.services.gold.adjudication import adjudicate
from ragjudge.services.labels import facets
from ragjudge.services.labels.events import comment_pair, flag_pair, record_label
from ragjudge.services.project.database import Project
from ragjudge.services.transfer.importing import import_file
from ragjudge.store.schema import Chunk

SECRET = "zz-secret"
SECRETS = ("zz-secret", "bo-secret-note", "bo-secret-comment", "secret-reason")
"""What ann must never see: the pair only others judged, bo's marks, the adjudication's reason."""

ANN, LEAD = "ann", "dora"


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("table")
    db = str(folder / "blind.db")
    run = folder / "dense.trec"
    ranked = ["c05", SECRET, "c06", "c07"]
    run.write_text("".join(f"q1 Q0 {c} {r} {1 / r:.3f} dense\n" for r, c in enumerate(ranked, 1)))
    (folder / "guidelines.md").write_text("# Grade 3 answers the whole query.\n")
    with make_small_project(db) as project:
        project.write(lambda s: s.add(Chunk(id=SECRET, text="the secret chunk", doc_id="d9")))
        import_file(project, "run", str(run))
        roster.add(project, LEAD, role="lead", access=rights(project))
        for name in (ANN, "bo", "cy"):
            roster.add(project, name, access=rights(project))
        record_label(project, annotator=ANN, query_id="q1", chunk_id="c05", grade=2)
        record_label(project, annotator=ANN, query_id="q1", chunk_id="c06", grade=1)
        record_label(project, annotator="bo", query_id="q1", chunk_id="c05", grade=0)
        record_label(project, annotator="bo", query_id="q1", chunk_id=SECRET, grade=3, duration_ms=1)
        record_label(project, annotator="cy", query_id="q1", chunk_id=SECRET, grade=0)
        flag_pair(project, annotator="bo", query_id="q1", chunk_id=SECRET, note="bo-secret-note")
        comment_pair(project, annotator="bo", query_id="q1", chunk_id=SECRET, note="bo-secret-comment")
        adjudicate(project, query_id="q1", chunk_id=SECRET, grade=2, reason="secret-reason",
                   access=rights(project))
        facet = facets.add_facet(project, "q1", "refund window")
        facets.set_facet_link(project, annotator="bo", facet_id=facet, chunk_id=SECRET, covered=True)
        nugget = facets.add_nugget(project, "q1", "refunds take five days")
        facets.set_nugget_support(project, annotator="bo", nugget_id=nugget, chunk_id=SECRET,
                                  support="full")
    return db


@pytest.fixture
def db(base, tmp_path) -> str:
    """A copy of the project for one test (commands that change it change the copy)."""
    path = tmp_path / "blind.db"
    shutil.copy(base, path)
    (tmp_path / "guidelines.md").write_text("# new guidelines\n")
    return str(path)


# -- commands -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One command line, run as ann (``$RAGJUDGE_USER``, no ``--by``) and as dora (``--by``)."""

    argv: tuple[str, ...]
    annotator_code: int = 0
    """0: ann is answered (without any secret); 2: ann is refused, and nothing changes"""
    lead_sees: str | None = SECRET
    """what dora's output holds (None: nothing to look for: aggregates, or a change)"""
    lead_by: bool = True
    """whether the command takes --by (else dora runs it as $RAGJUDGE_USER)"""
    lead_code: int = 0
    """dora's exit code (``settled``: 1 while a comparison is open)"""


@dataclass(frozen=True)
class Reason:
    """A command with no case here, and why it needs none."""

    why: str


C = Case
COMMANDS: dict[str, list[Case] | Reason] = {
    "init": Reason("creates a new project: nobody's grades in it yet"),
    "status": [C(("status", "--format", "json"), lead_sees=None, lead_by=False)],
    "demo": Reason("builds the bundled demo project, a new file: nobody's grades but the demo's"),
    "scale": [C(("scale", "--format", "json"), lead_sees=None),
              C(("scale", "names", "none,some,much,all"), 2, None)],
    "import": [C(("import", "guidelines", "GUIDELINES"), 2, None),
               C(("import", "queries", "QUERIES"), 0, None)],
    "export": [C(("export", "qrels"), 2), C(("export", "qrels", "--rule", "annotator:ann"), 0, "c05"),
               C(("export", "qrels", "--rule", "annotator:bo"), 2),
               C(("export", "labels"), 0), C(("export", "labels", "--llm-audit"), 2, None),
               C(("export", "run", "dense"), 2), C(("export", "facets"), 0),
               C(("export", "nuggets"), 0), C(("export", "answer-labels"), 0, None)],
    "eval": [C(("eval", "--per-query", "--format", "json"), lead_sees=None, lead_by=False),
             C(("eval", "--rule", "annotator:bo", "--per-query"), 2, None, lead_by=False)],
    "compare": [C(("compare", "bm25", "dense", "--format", "json", "--permutations", "10",
                   "--resamples", "10"), lead_sees=None, lead_by=False)],
    "report": [C(("report", "--format", "md", "-q", "-m", "P@2")),
               C(("report", "--format", "md", "-q", "--rule", "annotator:bo"), 2, None)],
    "gate": [C(("gate", "--run", "dense", "--require", "RR>=0"), lead_sees=None, lead_by=False)],
    "explain": [C(("explain", "--run", "dense", "--query", "q1", "-m", "nDCG@10")),
                C(("explain", "--run", "dense", "--query", "q1", "-m", "P@2", "--rule",
                   "annotator:bo"), 2),
                C(("explain", "--run", "dense", "--query", "q1", "-m", "AP", "--format", "json"))],
    "agree": [C(("agree", "--format", "json"), lead_by=False), C(("agree",), lead_by=False),
              C(("agree", "--answers", "--format", "json"), lead_sees=None, lead_by=False)],
    "assign": [C(("assign", "--annotators", "ann,bo", "--depth", "2"), 2, None)],
    "disputes": [C(("disputes", "--format", "json"))],
    "adjudicate": [C(("adjudicate", "--query", "q1", "--chunk", "c06", "--grade", "1",
                      "--reason", "r"), 2, None),
                   C(("adjudicate", "--query", "q1", "--chunk", "c05", "--show"), 0, "bo")],
    "quality": [C(("quality", "--format", "json"))],
    "annotate": Reason("opens the judging screen (the app needs a terminal): the screen rows "
                       "below; its --show-source is refused by the queue (test_queue_...)"),
    "backup": Reason("copies the project file, which who runs it already reads whole: on a "
                     "SQLite file the rules are a courtesy (PostgreSQL: prints pg_dump, copies "
                     "nothing)"),
    "verify": [C(("verify", "--format", "json"), lead_sees=None, lead_by=False)],
    "annotators": [C(("annotators", "--format", "json"), lead_sees=None),
                   C(("annotators", "add", "eve"), 2, None),
                   C(("annotators", "blind", "off"), 2, None),
                   C(("annotators", "roster", "closed"), 2, None),
                   C(("annotators", "token", "bo"), 2, None)],
    "review": [C(("review", "--all", "--format", "json"), 0, "bo-secret-note"),
               C(("review", "resolve", "--query", "q1", "--chunk", SECRET), 2, None)],
    "serve": Reason("starts the web server: the served app's rows below"),
    "llm-judge": [C(("llm-judge", "--queue-order", "hardest"), 2, None)],
    # aggregates: the comparisons of the runs, open in this small project (exit code 1)
    "settled": [C(("settled", "--format", "json"), 1, None, lead_by=False, lead_code=1),
                C(("settled", "--rule", "annotator:bo"), 2, None, lead_by=False, lead_code=1)],
    # ann's own queue (its first pair is not the secret one); bo's shows which pairs bo judged
    "queue": [C(("queue", "--annotator", "ann", "--limit", "1", "--format", "json"), 0, None),
              C(("queue", "--annotator", "bo", "--order", "settle", "--format", "json"), 2, None)],
}


def command_names() -> set[str]:
    _register()
    return set(typer.main.get_command(cli_app).commands)


def test_every_command_has_a_row():
    names = command_names()
    assert names - set(COMMANDS) == set(), "a command without a row in the access table"
    assert set(COMMANDS) - names == set(), "a row for a command that no longer exists"


def _argv(db: str, case: Case, by: str | None) -> list[str]:
    folder = Path(db).parent
    files = {"GUIDELINES": str(folder / "guidelines.md"), "QUERIES": str(folder / "q.jsonl")}
    (folder / "q.jsonl").write_text('{"id": "q9", "text": "a new query"}\n')
    argv = ["--db", db, *(files.get(a, a) for a in case.argv)]
    return argv + (["--by", by] if by is not None else [])


def _run(capsys, argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out + err


CASES = [pytest.param(case, id=" ".join(case.argv)) for cases in COMMANDS.values()
         if isinstance(cases, list) for case in cases]


@pytest.mark.parametrize("case", CASES)
def test_an_annotator_sees_no_other_grade_and_a_lead_does(db, capsys, monkeypatch, case):
    monkeypatch.setenv("RAGJUDGE_USER", ANN)
    before = Path(db).read_bytes()
    code, said = _run(capsys, _argv(db, case, None))
    assert code == case.annotator_code, said
    assert not [s for s in SECRETS if s in said], said
    if code == 2:
        assert "Only a lead" in said and "Traceback" not in said
        assert Path(db).read_bytes() == before, "a refused command changed the project"
    if case.lead_by:
        code, said = _run(capsys, _argv(db, case, LEAD))
    else:
        monkeypatch.setenv("RAGJUDGE_USER", LEAD)
        code, said = _run(capsys, _argv(db, case, None))
    assert code == case.lead_code, said
    if case.lead_sees is not None:
        assert case.lead_sees in said


@pytest.mark.slow
def test_a_missing_identity_is_the_least_rights(db, capsys, monkeypatch):
    monkeypatch.delenv("RAGJUDGE_USER", raising=False)
    monkeypatch.setattr("getpass.getuser", lambda: (_ for _ in ()).throw(KeyError("no user")))
    code, said = _run(capsys, ["--db", db, "export", "qrels"])
    assert code == 2 and "not known" in said
    code, said = _run(capsys, ["--db", db, "annotators", "blind", "off"])
    assert code == 2 and "not known" in said
    monkeypatch.setenv("RAGJUDGE_USER", "a\x1bb")
    code, said = _run(capsys, ["--db", db, "disputes"])
    assert code == 2 and "$RAGJUDGE_USER" in said and "\x1b" not in said


# -- screens ----------------------------------------------------------------------------------


def rendered(screen) -> str:
    """Every Static's content and every DataTable cell of ``screen``, as text."""
    console = Console(width=220, record=True, file=io.StringIO())
    for widget in screen.query(Static):
        console.print(widget.content)
    for table in screen.query(DataTable):
        for row in range(table.row_count):
            console.print(" | ".join(str(cell) for cell in table.get_row_at(row)))
    return console.export_text()


def _show(db: str, viewer: str, scenario) -> str:  # scenario: async (app, pilot, project) -> str
    from ragjudge.tui import make_app

    async def go() -> str:
        with Project.open(db) as project:
            app = make_app(project, annotator=viewer)
            async with app.run_test(size=(160, 50)) as pilot:
                await pilot.pause()
                return await scenario(app, pilot, project)

    return asyncio.run(go())


async def _agreement(app, pilot, project) -> str:
    from ragjudge.tui.screens.agreement import AgreementScreen

    screen = AgreementScreen(project)
    app.push_screen(screen)
    await wait_for(pilot, lambda: screen.view is not None)
    await pilot.press("d")
    await pilot.pause()
    return rendered(screen)


async def _open_per_query_tab(app, pilot, project):
    """The evaluation screen, on its per-query tab once the rows are there."""
    from ragjudge.tui.screens.evaluation import EvaluationScreen

    screen = EvaluationScreen(project)
    app.push_screen(screen)
    await wait_for(pilot, lambda: screen.snapshot is not None)
    await pilot.press("p")
    await wait_for(pilot, lambda: screen.snapshot.rows is not None and bool(screen._query_rows))
    return screen


async def _explanation(app, pilot, project) -> str:
    from ragjudge.tui.widgets.evalpane import ExplainModal

    screen = await _open_per_query_tab(app, pilot, project)
    await pilot.press("enter")  # q1, the first row
    await wait_for(pilot, lambda: isinstance(app.screen, ExplainModal))
    return rendered(app.screen) + rendered(screen)


async def _review(app, pilot, project) -> str:
    from ragjudge.tui.screens.review import ReviewScreen

    screen = ReviewScreen(project)
    app.push_screen(screen)
    await pilot.pause()
    await pilot.press("l")
    await pilot.pause()
    return rendered(screen)


async def _adjudicate(app, pilot, project) -> str:
    from ragjudge.tui.screens.adjudicate import AdjudicateScreen

    screen = AdjudicateScreen(project, "q1", SECRET)
    app.push_screen(screen)
    await pilot.pause()
    await pilot.pause()
    return rendered(screen) if app.screen is screen else ""


async def _judge(app, pilot, project) -> str:
    """ann judges the secret pair: her own (empty) label only, no source, no one else's mark."""
    from ragjudge.services.labels.queue import JudgingQueue
    from ragjudge.tui.screens.judge import JudgeScreen

    queue = JudgingQueue(project, app.annotator, runs=["dense"])
    screen = JudgeScreen(project, queue)
    app.push_screen(screen)
    await pilot.pause()
    screen.pair = queue.goto_pair("q1", SECRET)
    await pilot.pause()
    # the chunk's id is on screen (it is the pair to judge): nothing else of it may be
    return rendered(screen).replace(SECRET, "(the pair)")


async def _history(app, pilot, project) -> str:
    from ragjudge.tui.screens.history import HistoryScreen

    screen = HistoryScreen(project, app.annotator, project.scale)
    app.push_screen(screen)
    await pilot.pause()
    return rendered(screen) + str([o.prompt for o in screen.query_one("OptionList")._options])


async def _facets(app, pilot, project) -> str:
    from ragjudge.tui.screens.facets import FacetsScreen

    screen = FacetsScreen(project, app.annotator, "q1", SECRET)
    app.push_screen(screen)
    await pilot.pause()
    text = rendered(screen) + str([o.prompt for o in screen.query_one("OptionList")._options])
    return text.replace(SECRET, "(the pair)")


async def _home(app, pilot, project) -> str:
    await wait_for(pilot, lambda: "counting" not in rendered(app.screen))
    return rendered(app.screen)


@dataclass(frozen=True)
class Look:
    """A screen opened as ann and as dora; ``lead_sees`` is in dora's (None: nothing)."""

    scenario: Callable
    lead_sees: str | None = None


SCREENS: dict[str, Look | Reason] = {
    "AgreementScreen": Look(_agreement, SECRET),
    "EvaluationScreen": Look(_explanation, SECRET),
    "ExplainModal": Look(_explanation, SECRET),
    "ReviewScreen": Look(_review, "bo-secret-note"),
    "AdjudicateScreen": Look(_adjudicate, "bo-secret-note"),
    "JudgeScreen": Look(_judge),
    "HistoryScreen": Look(_history),
    "FacetsScreen": Look(_facets),
    "HomeScreen": Look(_home),
    "AnswerJudgeScreen": Reason("the annotator's own judgments of answers, blind to the run"),
    "NeighboursScreen": Reason("the texts of a document's chunks: no grade, no mark"),
    "GuidelinesScreen": Reason("the project's guidelines"),
    "HelpScreen": Reason("the keys of a screen"),
    "LoginScreen": Reason("a token field"),
    "TextPrompt": Reason("what the user types"),
    "ConfirmPrompt": Reason("a yes/no question"),
    "FindQuery": Reason("query ids and texts"),
    "NameChoice": Reason("annotator names (the roster, for everyone)"),
    "Refused": Reason("a service's refusal"),
}


def screen_classes() -> set[str]:
    found: set[str] = set()
    for package, modal_only in ((ragjudge.tui.screens, False), (ragjudge.tui.widgets, True)):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for name, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ != module.__name__ or not issubclass(cls, Screen):
                    continue
                from textual.screen import ModalScreen

                if modal_only and not issubclass(cls, ModalScreen):
                    continue
                found.add(name)
    return found


def test_every_screen_has_a_row():
    names = screen_classes()
    assert names - set(SCREENS) == set(), "a screen without a row in the access table"
    assert set(SCREENS) - names == set(), "a row for a screen that no longer exists"


LOOKS = [pytest.param(name, id=name) for name, look in SCREENS.items() if isinstance(look, Look)]


@pytest.mark.slow
@pytest.mark.parametrize("name", LOOKS)
def test_a_screen_shows_an_annotator_no_other_grade_and_a_lead_sees_it(db, name):
    look = SCREENS[name]
    assert isinstance(look, Look)
    shown = _show(db, ANN, look.scenario)
    assert not [s for s in SECRETS if s in shown], shown
    lead = _show(db, LEAD, look.scenario)
    if look.lead_sees is not None:
        assert look.lead_sees in lead


# -- served pages -------------------------------------------------------------------------------


def test_every_page_a_served_annotator_opens_has_a_row():
    from ragjudge.tui.served import ANNOTATOR_SCREENS, BEFORE_LOGIN

    names = {n.rsplit(".", 1)[1] for n in ANNOTATOR_SCREENS | BEFORE_LOGIN}
    names.discard("CommandPalette")  # Textual's: the app's commands, each with its own row
    assert names - set(SCREENS) == set()


@pytest.mark.slow
def test_a_served_annotator_is_refused_every_other_page(db):
    """Deny by default: each screen not listed for annotators is refused to ann's tab."""
    from textual.widgets import Input

    from ragjudge.tui.served import ANNOTATOR_SCREENS, ServedApp

    with Project.open(db) as project:
        _, token = roster.add(project, "finn", token=True, access=rights(project))
    lead_only = sorted(n for n, look in SCREENS.items()
                       if not any(s.endswith("." + n) for s in ANNOTATOR_SCREENS)
                       and n not in ("LoginScreen",))
    assert {"AgreementScreen", "AdjudicateScreen", "ReviewScreen"} <= set(lead_only)

    async def go() -> list[str]:
        from ragjudge.tui.screens.agreement import AgreementScreen
        from ragjudge.tui.screens.adjudicate import AdjudicateScreen
        from ragjudge.tui.screens.review import ReviewScreen

        opened = []
        with Project.open(db) as project:
            app = ServedApp(project)
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.pause()
                app.screen.query_one("#login-token", Input).value = token
                await pilot.press("enter")
                await pilot.pause()
                for make in (lambda: AgreementScreen(project), lambda: ReviewScreen(project),
                             lambda: AdjudicateScreen(project, "q1", SECRET)):
                    app.push_screen(make())
                    await pilot.pause()
                    opened.append(type(app.screen).__name__)
        return opened

    assert asyncio.run(go()) == ["HomeScreen"] * 3


def test_the_queue_refuses_sources_to_an_annotator_of_a_blind_project(db):
    from ragjudge.errors import UsageError
    from ragjudge.services.labels.queue import JudgingQueue

    with Project.open(db) as project:
        with pytest.raises(UsageError, match="Only a lead may see which runs"):
            JudgingQueue(project, ANN, show_source=True, access=rights(project, ANN))
        with pytest.raises(UsageError, match="not known"):
            JudgingQueue(project, ANN, show_source=True)
        view = JudgingQueue(project, LEAD, runs=["dense"], show_source=True,
                            access=rights(project, LEAD)).goto_pair("q1", SECRET)
        assert ("dense", 2) in view.sources


def test_json_of_an_explanation_carries_no_hidden_grade(db, capsys, monkeypatch):
    monkeypatch.setenv("RAGJUDGE_USER", ANN)
    code, said = _run(capsys, ["--db", db, "explain", "--run", "dense", "--query", "q1", "-m",
                               "nDCG@10", "--format", "json"])
    steps = json.loads(said)["explanations"][0]["steps"]
    hidden = [s for s in steps if s["hidden"]]
    assert [s["rank"] for s in hidden] == [2, 4]  # zz-secret and c07: not judged by ann
    assert all(s["grade"] is None and s["chunk_id"] is None and s["relevant"] is None for s in hidden)
    assert [s["chunk_id"] for s in steps if not s["hidden"]] == ["c05", "c06"]


def test_a_query_value_made_of_a_pair_ann_has_not_judged_is_not_shown(db, capsys, monkeypatch):
    """P@2 of dense on q1 is the gold of c05 and zz-secret: shown to ann, it would tell the
    secret pair's relevance. It is hidden from ann in every per-query output until ann has
    judged every pair of q1's gold; the means stay everyone's."""
    per_query = ["--db", db, "eval", "--run", "dense", "-m", "P@2", "--per-query", "--format", "json"]
    explain_p2 = ["--db", db, "explain", "--run", "dense", "--query", "q1", "-m", "P@2"]
    monkeypatch.setenv("RAGJUDGE_USER", LEAD)
    lead = json.loads(_run(capsys, per_query)[1])
    assert "q1" in lead["runs"]["dense"]["per_query"] and "hidden" not in lead
    value = lead["runs"]["dense"]["per_query"]["q1"]["P@2"]
    assert f"P@2 = 1.0000 / 2.0000 (k) = {value:.4f}" in _run(capsys, explain_p2)[1]

    monkeypatch.setenv("RAGJUDGE_USER", ANN)
    seen = json.loads(_run(capsys, per_query)[1])
    assert "q1" not in seen["runs"]["dense"]["per_query"] and "q1" in seen["hidden"]["queries"]
    assert seen["runs"]["dense"]["aggregate"] == lead["runs"]["dense"]["aggregate"]
    code, said = _run(capsys, explain_p2)
    assert code == 0 and "P@2 = not shown" in said and f"{value:.4f}" not in said
    code, said = _run(capsys, [*per_query[:-2]])  # the table says why the rows are missing
    assert "queries' own values are not shown" in said

    # once ann has judged every pair of q1's gold, q1's value is ann's to see
    with Project.open(db) as project:
        for chunk in lead_gold(project)["q1"]:
            if chunk not in ("c05", "c06"):
                record_label(project, annotator=ANN, query_id="q1", chunk_id=chunk, grade=1)
    seen = json.loads(_run(capsys, per_query)[1])
    assert "q1" in seen["runs"]["dense"]["per_query"]
    assert "q1" not in seen.get("hidden", {}).get("queries", [])


def lead_gold(project: Project) -> dict[str, dict[str, int]]:
    from ragjudge.services.scoring.evaluation import project_gold

    return project_gold(project).qrels().to_dict()


async def _per_query_tab(app, pilot, project) -> str:
    return rendered(await _open_per_query_tab(app, pilot, project))


def test_the_per_query_tab_shows_ann_no_value_of_a_query_with_a_pair_she_has_not_judged(db):
    """q1's values are made of zz-secret's gold too: ann's per-query tab lists q1 with its
    values "hidden" (she may still open it to judge); dora's shows them."""
    ann = _show(db, ANN, _per_query_tab)
    q1 = next(line for line in ann.splitlines() if line.startswith("q1 |"))
    assert "hidden" in q1 and "0." not in q1 and "1." not in q1.split("|", 4)[-1]
    assert "blind: " in ann and "values not shown" in ann
    dora = _show(db, LEAD, _per_query_tab)
    q1 = next(line for line in dora.splitlines() if line.startswith("q1 |"))
    assert "hidden" not in q1 and "values not shown" not in dora
