"""``ragjudge serve`` in a real browser (headless Chromium through Playwright): log in with a
token, judge with a key, and find the label in the project under the token's annotator; a wrong
token records nothing; two people at once; the server killed mid-session; and not one request
leaves 127.0.0.1."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

pytest.importorskip("textual_serve", reason="the 'serve' extra (textual-serve) is not installed")
pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the 'test' extra has it)")

from chromium import BROWSER_MARKS
from browserkit import Tab, start_server, wait_for
from sqlalchemy import select

from ragjudge.services.project.database import Project
from ragjudge.store.schema import Label

pytestmark = BROWSER_MARKS



@pytest.fixture
def server(served):
    running = start_server(served.db)
    yield running
    running.stop()


def labels(db: str) -> list[tuple[str, str, str, int | None]]:
    with Project.open(db) as project, project.read() as session:
        rows = session.scalars(select(Label).order_by(Label.id))
        return [(r.annotator, r.query_id, r.chunk_id, r.grade) for r in rows]


def by(db: str, name: str) -> list[tuple[str, str, str, int | None]]:
    return [row for row in labels(db) if row[0] == name]


def open_judging(tab: Tab, token: str) -> None:
    tab.log_in(token)
    mark = tab.press("Enter")
    tab.wait_for_text("of your queue", mark)


def test_an_annotator_logs_in_with_a_token_and_the_label_is_theirs(browser, server, served):
    tab = Tab(browser, server.url)
    try:
        open_judging(tab, served.tokens["ana"])
        tab.press("2")
        wait_for(lambda: by(served.db, "ana"), "ana's label in the project")
        [(who, query, chunk, grade)] = by(served.db, "ana")
        assert (who, grade) == ("ana", 2) and query.startswith("q") and chunk.startswith("c")
        assert tab.loopback_only(), (tab.outside, tab.requests, tab.sockets)
    finally:
        tab.close()


def test_a_wrong_token_records_nothing(browser, server, served):
    before = labels(served.db)
    tab = Tab(browser, server.url)
    try:
        tab.log_in("rj_" + "x" * 32, expect="does not open this project")
        for key in ("Enter", "2", "s", "Enter", "3"):
            tab.press(key)
        tab.page.wait_for_timeout(500)
        assert "of your queue" not in tab.screen_since()
        assert labels(served.db) == before
        assert tab.loopback_only()
    finally:
        tab.close()


def test_two_annotators_judge_at_once_and_neither_sees_lead_screens(browser, server, served):
    ana, ben = Tab(browser, server.url), Tab(browser, server.url)
    try:
        open_judging(ana, served.tokens["ana"])
        open_judging(ben, served.tokens["ben"])
        ben_before = len(by(served.db, "ben"))
        for _ in range(3):
            ana.press("1")
            ben.press("0")
        wait_for(lambda: len(by(served.db, "ana")) == 3 and len(by(served.db, "ben")) == ben_before + 3,
                 "both annotators' labels")
        assert {g for *_, g in by(served.db, "ana")} == {1}
        assert {g for *_, g in by(served.db, "ben")[ben_before:]} == {0}
        for tab in (ana, ben):
            mark = tab.press("a")  # agreement: everyone's grades, and adjudication from there
            tab.wait_for_text("for leads", mark)
        assert ana.loopback_only() and ben.loopback_only()
    finally:
        ana.close()
        ben.close()


def test_killing_the_server_mid_session_loses_no_acknowledged_label(browser, served):
    server = start_server(served.db)
    tab = Tab(browser, server.url)
    try:
        open_judging(tab, served.tokens["ana"])
        for count, grade in enumerate(("3", "2", "1"), start=1):
            mark = tab.press(grade)
            # the screen counts the label and shows the next pair: acknowledged
            tab.wait_for_text(f"of your queue ({count}/", mark)
        sessions = server.sessions()
        assert sessions
        server.stop(signal.SIGKILL)
        assert [g for *_, g in by(served.db, "ana")] == [3, 2, 1]
        # the tab's app process does not outlive its server
        wait_for(lambda: not set(sessions) & {int(p.name) for p in Path("/proc").glob("[0-9]*")},
                 "the session process to end with its server")
    finally:
        tab.close()
        server.stop()


def test_the_page_asks_nothing_of_any_other_host(browser, server):
    tab = Tab(browser, server.url + "?ping=https://example.org/beacon&fontsize=18")
    try:
        tab.wait_for_text("personal token")
        tab.page.wait_for_timeout(300)
        assert tab.loopback_only(), (tab.outside, tab.requests)
        paths = sorted({u.split("127.0.0.1", 1)[1].split(":", 1)[1].split("/", 1)[1] for u in tab.requests})
        assert any(p.endswith(".ttf") for p in paths) and any(p.endswith("textual.js") for p in paths)
    finally:
        tab.close()
