"""Who is at the keyboard, as every screen sees it: a lead known by the login name alone opens
the review and agreement screens as that lead, and no screen asks for a name first."""

from __future__ import annotations

import sqlite3

import pytest

from projectkit import rights
from tui_project import sync

from ragjudge.services.access import roster
from ragjudge.services.labels.events import flag_pair
from ragjudge.tui import make_app
from ragjudge.tui.screens.adjudicate import AdjudicateScreen
from ragjudge.tui.screens.agreement import AgreementScreen
from ragjudge.tui.screens.prompts import Refused, TextPrompt
from ragjudge.tui.screens.review import ReviewScreen

pytestmark = pytest.mark.slow


def reviews(db) -> list[tuple]:
    return sqlite3.connect(db).execute(
        "SELECT annotator, query_id, chunk_id, action FROM pair_marks WHERE kind = 'review'").fetchall()


@sync
async def test_a_lead_by_login_name_reviews_and_adjudicates_with_no_name_asked(project, tmp_path,
                                                                            monkeypatch):
    roster.add(project, "dora", role="lead", access=rights(project, "dora"))
    roster.add(project, "ana", access=rights(project, "dora"))
    flag_pair(project, annotator="ana", query_id="q1", chunk_id="c02", note="is this a refund?")
    monkeypatch.delenv("RAGJUDGE_USER", raising=False)
    monkeypatch.setattr("getpass.getuser", lambda: "dora")
    app = make_app(project)  # no --annotator: the login name is who looks
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        await pilot.press("v")
        await pilot.pause()
        review = app.screen
        assert isinstance(review, ReviewScreen), type(review)
        assert not review.mine_only, "a lead walks everyone's items"
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, AdjudicateScreen), "adjudication opens for the lead"
        await pilot.press("escape", "r")
        await pilot.pause()
        assert isinstance(app.screen, TextPrompt)
        assert "note" in app.screen.title_text, "the prompt asks for a note, not a name"
        await pilot.press("enter")
        await pilot.pause()
        assert reviews(tmp_path / "t.db") == [("dora", "q1", "c02", "resolve")]
        await pilot.press("escape", "a")
        await pilot.pause()
        assert isinstance(app.screen, AgreementScreen)
        await pilot.press("v")
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen) and not app.screen.mine_only


@sync
async def test_an_annotator_by_login_name_gets_a_refusal_not_a_name_prompt(project, monkeypatch):
    roster.add(project, "dora", role="lead", access=rights(project, "dora"))
    flag_pair(project, annotator="ana", query_id="q1", chunk_id="c02", note="is this a refund?")
    monkeypatch.delenv("RAGJUDGE_USER", raising=False)
    monkeypatch.setattr("getpass.getuser", lambda: "ana")
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        await pilot.press("v")
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen) and app.screen.mine_only
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, Refused)
