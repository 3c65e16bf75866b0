"""The served app without a browser (Pilot): the login screen, identity from the token only,
the role gates, and nothing that reaches the server's files, shell or the internet."""

from __future__ import annotations

import asyncio
import functools
import os

import pytest
from projectkit import rights
from sqlalchemy import select
from textual.widgets import Input

from ragjudge.errors import UsageError
from ragjudge.services.access import roster
from ragjudge.services.project.database import Project
from ragjudge.store.schema import Label
from ragjudge.tui import make_app
from ragjudge.tui.screens.home import HomeScreen
from ragjudge.tui.screens.judge import JudgeScreen
from ragjudge.tui.screens.login import LoginScreen, wait_after
from ragjudge.tui.served import SERVED_ENV, ServedApp

pytestmark = pytest.mark.slow

SIZE = (120, 40)


def sync(test):
    @functools.wraps(test)
    def run(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))

    return run


def labels(project) -> list[tuple[str, str, str, int | None]]:
    with project.read() as session:
        rows = session.scalars(select(Label).order_by(Label.id))
        return [(r.annotator, r.query_id, r.chunk_id, r.grade) for r in rows]


async def log_in(app, pilot, token: str) -> None:
    await pilot.pause()
    assert isinstance(app.screen, LoginScreen)
    field = app.screen.query_one("#login-token", Input)
    field.value = token
    await pilot.press("enter")
    await pilot.pause()


def status_text(app) -> str:
    return str(app.screen.query_one("#login-status").render())


@sync
async def test_a_served_session_opens_on_the_login_screen_with_a_masked_field(served):
    with Project.open(served.db) as project:
        app = ServedApp(project)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert isinstance(app.screen, LoginScreen)
            field = app.screen.query_one("#login-token", Input)
            assert field.password is True and app.focused is field
            assert app.annotator is None and app.access().lead is False
            assert app.identity.name is None
            await pilot.press(*"rj_secret")
            assert field.value == "rj_secret"
            # nothing before login: judging, home, the evaluation are refused
            app.push_screen(HomeScreen(project))
            await pilot.pause()
            assert isinstance(app.screen, LoginScreen)


@sync
async def test_the_token_is_never_shown_in_the_clear(served):
    with Project.open(served.db) as project:
        app = ServedApp(project)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await pilot.press(*served.tokens["ana"])
            await pilot.pause()
            assert served.tokens["ana"] not in app.export_screenshot()


@sync
async def test_a_token_logs_in_as_its_annotator_and_labels_are_recorded_under_that_name(served):
    with Project.open(served.db) as project:
        app = ServedApp(project)
        async with app.run_test(size=SIZE) as pilot:
            await log_in(app, pilot, served.tokens["ana"])
            assert isinstance(app.screen, HomeScreen)
            assert app.annotator == "ana" and app.access().lead is False
            assert app.identity.how == "token"
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, JudgeScreen)
            pair = app.screen.pair
            await pilot.press("2")
            await pilot.pause()
            assert labels(project)[-1] == ("ana", pair.query_id, pair.chunk_id, 2)


@sync
async def test_a_typed_name_never_replaces_the_token_s_identity(served):
    with Project.open(served.db) as project:
        app = ServedApp(project)
        async with app.run_test(size=SIZE) as pilot:
            await log_in(app, pilot, served.tokens["ana"])
            app.annotator = "dora"  # what the terminal app's name paths would do
            assert app.annotator == "ana" and app.access().lead is False
            app.start_judging(from_home=True)
            await pilot.pause()
            assert isinstance(app.screen, JudgeScreen)
            assert app.screen.queue.annotator == "ana"


@sync
async def test_a_wrong_token_gets_the_login_screen_back_and_records_nothing(served):
    with Project.open(served.db) as project:
        before = labels(project)
        app = ServedApp(project)
        async with app.run_test(size=SIZE) as pilot:
            await log_in(app, pilot, "rj_not-a-token")
            assert isinstance(app.screen, LoginScreen) and app.annotator is None
            assert "does not open this project" in status_text(app)
            assert app.screen.query_one("#login-token", Input).value == ""
            await pilot.press("enter", "2", "s", "q")  # nothing reaches judging
            await pilot.pause()
            assert isinstance(app.screen, LoginScreen)
        assert labels(project) == before


@sync
async def test_repeated_failures_close_the_field_for_longer_each_time(served):
    with Project.open(served.db) as project:
        app = ServedApp(project)
        async with app.run_test(size=SIZE) as pilot:
            await log_in(app, pilot, "rj_wrong-1")
            field = app.screen.query_one("#login-token", Input)
            assert not field.disabled  # a first mistype is answered at once
            await log_in(app, pilot, "rj_wrong-2")
            assert field.disabled and "Try again in 1 s" in status_text(app)
            # a right token typed while the field is closed does not get in
            await pilot.press(*served.tokens["ana"], "enter")
            await pilot.pause()
            assert isinstance(app.screen, LoginScreen) and app.annotator is None
    assert [wait_after(n) for n in range(1, 9)] == [0, 1, 2, 4, 8, 16, 30, 30]


@sync
async def test_a_retired_annotator_s_token_no_longer_logs_in(served):
    with Project.open(served.db) as project:
        roster.retire(project, "ana", access=rights(project))
        app = ServedApp(project)
        async with app.run_test(size=SIZE) as pilot:
            await log_in(app, pilot, served.tokens["ana"])
            assert isinstance(app.screen, LoginScreen) and app.annotator is None


@sync
async def test_an_annotator_cannot_open_agreement_or_adjudication(served):
    from ragjudge.tui.screens.adjudicate import AdjudicateScreen

    with Project.open(served.db) as project:
        app = ServedApp(project)
        async with app.run_test(size=SIZE) as pilot:
            await log_in(app, pilot, served.tokens["ana"])
            await pilot.press("a")  # the home screen's way to agreement
            await pilot.pause()
            assert isinstance(app.screen, HomeScreen)
            assert any("for leads" in n.message for n in app._notifications)
            app.push_screen(AdjudicateScreen(project, "q1", "c05"))
            await pilot.pause()
            assert isinstance(app.screen, HomeScreen)
            await pilot.press("enter")
            await pilot.pause()
            await pilot.press("a")  # and from judging
            await pilot.pause()
            assert isinstance(app.screen, JudgeScreen)


@sync
async def test_a_lead_opens_agreement(served):
    from ragjudge.tui.screens.agreement import AgreementScreen

    with Project.open(served.db) as project:
        app = ServedApp(project)
        async with app.run_test(size=SIZE) as pilot:
            await log_in(app, pilot, served.tokens["dora"])
            assert app.annotator == "dora" and app.access().lead is True
            await pilot.press("a")
            await pilot.pause()
            assert isinstance(app.screen, AgreementScreen)


@sync
async def test_the_evaluation_shows_an_annotator_no_other_annotator_s_view_nor_settings(served):
    from ragjudge.tui.screens.evaluation import EvaluationScreen

    with Project.open(served.db) as project:
        measures = project.get_setting("measures")
        app = ServedApp(project)
        async with app.run_test(size=SIZE) as pilot:
            await log_in(app, pilot, served.tokens["ana"])
            await pilot.press("e")
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, EvaluationScreen)
            for _ in range(100):  # the first snapshot, computed in a worker
                if screen.snapshot is not None:
                    break
                await asyncio.sleep(0.05)
            assert "ben" in screen.snapshot.annotators
            seen = set()
            for _ in range(12):
                await pilot.press("g")
                seen.add(screen.rule)
            assert "annotator:ben" not in seen and "median" in seen
            await pilot.press("plus")
            await pilot.pause()
            from ragjudge.tui.screens.prompts import Refused

            assert isinstance(app.screen, Refused)  # no prompt: the measures are a lead's setting
            await pilot.press(*"P@3", "enter")  # what was typed stays in the refusal
            await pilot.pause()
            assert app.screen is screen
        assert project.get_setting("measures") == measures


@sync
async def test_no_palette_entry_or_action_writes_a_file_or_opens_anything(served, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with Project.open(served.db) as project:
        app = ServedApp(project)
        async with app.run_test(size=SIZE) as pilot:
            await log_in(app, pilot, served.tokens["dora"])
            titles = [c.title for c in app.get_system_commands(app.screen)]
            assert "Theme" in titles and "Screenshot" not in titles
            opened = []
            monkeypatch.setattr(app._driver, "open_url", lambda *a, **k: opened.append(a), raising=False)
            app.action_screenshot()
            app.save_screenshot()
            app.deliver_screenshot()
            app.deliver_text(__import__("io").StringIO("x"))
            app.open_url("https://example.org")
            app.action_suspend_process()
            await pilot.press("ctrl+z")
            await pilot.pause()
            assert opened == []
            assert app.is_running
    assert not [p.name for p in tmp_path.rglob("*") if not p.name.startswith("served.db")]


def test_in_a_served_process_the_app_takes_no_annotator_name(served, monkeypatch):
    monkeypatch.setenv(SERVED_ENV, "1")
    with Project.open(served.db) as project:
        with pytest.raises(UsageError, match="takes no --annotator"):
            make_app(project, annotator="dora", start="judge")
        app = make_app(project, start="judge")
        assert isinstance(app, ServedApp) and app.start == "login" and app.annotator is None


def test_the_session_process_refuses_to_run_unserved(monkeypatch, capsys):
    from ragjudge.serve.session import main

    monkeypatch.delenv(SERVED_ENV, raising=False)
    assert main() == 2
    assert "ragjudge serve" in capsys.readouterr().err
    assert os.environ.get(SERVED_ENV) is None


@sync
async def test_a_revoked_token_ends_the_session_and_a_new_role_applies(served):
    with Project.open(served.db) as project:
        app = ServedApp(project)
        async with app.run_test(size=SIZE) as pilot:
            await log_in(app, pilot, served.tokens["ana"])
            roster.set_role(project, "ana", "lead", access=rights(project))
            app._check_token()
            assert app.access().lead is True and not app.closing
            roster.issue_token(project, "ana", access=rights(project))  # the old token stops working
            app._check_token()
            await pilot.pause()
            assert app.closing
