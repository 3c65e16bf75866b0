"""Typo protection: a session under a name the project does not know, where annotators exist,
starts only after a question (in the app) or ``--new-annotator`` (without a terminal); a
closed roster refuses new names, a retired annotator opens no session; in a blind project only
a lead sees the runs and ranks of a pair still to judge."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from projectkit import make_small_project, rights
from textual.widgets import Input, Label

from ragjudge.cli import main
from ragjudge.services.access import roster
from ragjudge.services.labels.events import record_label
from ragjudge.tui import make_app
from ragjudge.tui.screens.judge import JudgeScreen
from ragjudge.tui.screens.prompts import NameChoice, TextPrompt

SIZE = (120, 40)


@pytest.fixture
def db(tmp_path) -> str:
    path = str(tmp_path / "p.db")
    with make_small_project(path) as project:
        record_label(project, annotator="ana", query_id="q1", chunk_id="c05", grade=2)
        record_label(project, annotator="ben", query_id="q1", chunk_id="c06", grade=1)
    return path


@pytest.fixture
def project(db):
    from ragjudge.services.project.database import Project

    with Project.open(db) as project:
        yield project


def annotators(db: str) -> list[str]:
    return [r[0] for r in sqlite3.connect(db).execute("SELECT name FROM annotators ORDER BY name")]


# -- the command line, without a terminal ------------------------------------------------------


def _annotate(capsys, db: str, *argv: str) -> str:
    before = Path(db).read_bytes()
    assert main(["--db", db, "annotate", *argv]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert Path(db).read_bytes() == before
    return err


def test_an_unknown_name_is_refused_with_the_name_it_likely_means(db, capsys):
    err = _annotate(capsys, db, "--annotator", "Ana")
    assert "No annotator 'Ana'" in err and "Did you mean 'ana'?" in err and "--new-annotator" in err
    assert annotators(db) == ["ana", "ben"]


def test_answers_judging_asks_the_same(db, capsys):
    err = _annotate(capsys, db, "--answers", "--annotator", "benn")
    assert "Did you mean 'ben'?" in err


def test_new_annotator_says_the_name_is_new_on_purpose(db, capsys):
    err = _annotate(capsys, db, "--annotator", "Ana", "--new-annotator")
    assert "Did you mean" not in err and "needs a terminal" in err


@pytest.mark.slow
def test_a_known_name_or_a_first_name_is_not_questioned(db, tmp_path, capsys):
    assert "needs a terminal" in _annotate(capsys, db, "--annotator", "ana")
    fresh = str(tmp_path / "fresh.db")
    make_small_project(fresh).close()
    assert "needs a terminal" in _annotate(capsys, fresh, "--annotator", "Zed")


def test_a_closed_roster_refuses_a_new_name_even_on_purpose(db, project, capsys):
    roster.set_roster(project, "closed", access=rights(project))
    err = _annotate(capsys, db, "--annotator", "eve", "--new-annotator")
    assert "roster is closed" in err


@pytest.mark.slow
def test_a_retired_annotator_opens_no_session(db, project, capsys):
    roster.retire(project, "ben", access=rights(project))
    assert "retired" in _annotate(capsys, db, "--annotator", "ben")


@pytest.mark.slow
def test_show_source_is_for_leads_in_a_blind_project(db, project, capsys):
    roster.add(project, "dora", role="lead", access=rights(project))
    err = _annotate(capsys, db, "--annotator", "ana", "--show-source")
    assert "blind" in err and "--show-source" in err
    assert "needs a terminal" in _annotate(capsys, db, "--annotator", "dora", "--show-source")


# -- the app ---------------------------------------------------------------------------------------


def _question(app) -> str:
    return " ".join(str(label.content) for label in app.screen.query(Label))


def _run(app, keys: list[str], typed: str | None = None) -> dict:
    async def run() -> dict:
        seen: dict = {}
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            if typed is not None:  # the name prompt
                assert isinstance(app.screen, TextPrompt)
                app.screen.query_one(Input).value = typed
                await pilot.press("enter")
                await pilot.pause()
            seen["question"] = _question(app) if isinstance(app.screen, NameChoice) else None
            for key in keys:
                await pilot.press(key)
                await pilot.pause()
            seen["screen"] = app.screen
            seen["notes"] = [n.message for n in app._notifications]
        seen["return_code"] = app.return_code
        return seen

    return asyncio.run(run())


@pytest.mark.slow
def test_the_app_offers_the_known_name_and_uses_it(db, project):
    seen = _run(make_app(project, annotator="Ana", start="judge"), ["u"])
    assert seen["question"] is not None
    assert "No annotator 'Ana' in this project. Did you mean 'ana'?" in seen["question"]
    assert isinstance(seen["screen"], JudgeScreen) and seen["screen"].queue.annotator == "ana"
    assert annotators(db) == ["ana", "ben"]


@pytest.mark.slow
def test_the_app_creates_the_new_name_when_asked_to(db, project):
    seen = _run(make_app(project, annotator="Ana", start="judge"), ["c"])
    assert isinstance(seen["screen"], JudgeScreen) and seen["screen"].queue.annotator == "Ana"
    assert annotators(db) == ["Ana", "ana", "ben"]


@pytest.mark.slow
def test_cancelling_the_question_records_nothing(db, project):
    seen = _run(make_app(project, annotator="Ana", start="judge"), ["escape"])
    assert seen["return_code"] == 0
    assert annotators(db) == ["ana", "ben"]


@pytest.mark.slow
def test_the_name_prompt_asks_too(db, project):
    app = make_app(project, start="judge")
    seen = _run(app, ["u"], typed="benn")
    assert "Did you mean 'ben'?" in seen["question"]
    assert isinstance(seen["screen"], JudgeScreen) and seen["screen"].queue.annotator == "ben"


def test_the_app_with_new_annotator_does_not_ask(db, project):
    seen = _run(make_app(project, annotator="Ana", start="judge", new_annotator=True), [])
    assert seen["question"] is None
    assert isinstance(seen["screen"], JudgeScreen) and seen["screen"].queue.annotator == "Ana"


def test_the_app_refuses_a_retired_annotator(db, project):
    roster.retire(project, "ben", access=rights(project))
    seen = _run(make_app(project, annotator="ben", start="judge"), [])
    assert seen["return_code"] == 2


@pytest.mark.slow
def test_from_home_a_closed_roster_refuses_a_new_name_with_a_notification(db, project):
    roster.set_roster(project, "closed", access=rights(project))
    app = make_app(project)
    seen = _run(app, ["enter", *"eve", "enter"])
    assert not isinstance(seen["screen"], JudgeScreen)
    assert any("roster is closed" in n for n in seen["notes"])
    assert annotators(db) == ["ana", "ben"]


@pytest.mark.slow
def test_in_a_blind_project_the_app_judges_without_sources_for_an_annotator(db, project):
    roster.add(project, "dora", role="lead", access=rights(project))
    seen = _run(make_app(project, annotator="ana", start="judge", show_source=True), [])
    assert isinstance(seen["screen"], JudgeScreen) and seen["screen"].queue.show_source is False
    assert any("blind" in n for n in seen["notes"])
    seen = _run(make_app(project, annotator="dora", start="judge", show_source=True), [])
    assert seen["screen"].queue.show_source is True
