"""The pages of ``ragjudge serve`` in a real browser: headless Chromium (the system's, never a
downloaded one) through Playwright, against the server on loopback.

Judging by keys, by click and by touch, with the grade checked in the database; a reload that
keeps the session; a network dropped with a key pressed meanwhile, and an answer lost on its
way back, each landing exactly one label; two tabs of one annotator; a token revoked
mid-session; an annotator refused every lead page and route; axe-core on every page; and not one
request leaving 127.0.0.1.
"""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from chromium import BROWSER_MARKS
from projectkit import rights

pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the 'test' extra has it)")

import webkit
from webkit import events

from ragjudge.services.access import roster
from ragjudge.services.project.database import Project

AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
DEADLINE = 30.0

pytestmark = BROWSER_MARKS



class Tab:
    """A browser context (its own cookies) and its page; every request is recorded, and one
    to a host other than 127.0.0.1 is aborted and remembered."""

    def __init__(self, browser, url: str, **options) -> None:
        self.context = browser.new_context(**options)
        self.url = url
        self.requests: list[str] = []
        self.outside: list[str] = []
        self.context.route("**/*", self._route)
        self.context.on("request", lambda request: self.requests.append(request.url))
        self.page = self.context.new_page()

    def _route(self, route) -> None:
        if urlsplit(route.request.url).hostname != "127.0.0.1":
            self.outside.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    def new_page(self):
        page = self.context.new_page()
        return page

    def log_in(self, token: str, page=None) -> None:
        page = page or self.page
        page.goto(self.url + "/login")
        page.fill("#token", token)
        page.click("button[type=submit]")
        page.wait_for_url(self.url + "/judge")

    def close(self) -> None:
        self.context.close()

    def loopback_only(self) -> bool:
        return bool(self.requests) and not self.outside and all(
            urlsplit(u).hostname == "127.0.0.1" or u.startswith("data:") for u in self.requests)


@pytest.fixture
def tabs(browser, web):
    opened: list[Tab] = []

    def open_tab(**options) -> Tab:
        tab = Tab(browser, web.url, **options)
        opened.append(tab)
        return tab

    yield open_tab
    for tab in opened:
        assert tab.loopback_only(), (tab.outside, tab.requests[:20])
        tab.close()


def wait_for(condition, what: str, deadline: float = DEADLINE):
    end = time.monotonic() + deadline
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def shown_pair(page) -> tuple[str, str]:
    page.wait_for_selector("#pair:not([hidden])")
    query, chunk = page.get_attribute("body", "data-pair").split("\x1f")
    return query, chunk


def next_shown(page, before: tuple[str, str]) -> tuple[str, str]:
    page.wait_for_function("(before) => document.body.dataset.pair !== before", arg="\x1f".join(before))
    return shown_pair(page)


# -- judging ---------------------------------------------------------------------------------


def test_judging_by_key_click_and_touch_stores_the_grade_shown(tabs, site):
    tab = tabs()
    tab.log_in(site.tokens["ana"])
    page = tab.page
    first = shown_pair(page)
    page.keyboard.press("2")
    second = next_shown(page, first)
    page.wait_for_function("() => document.getElementById('live').textContent.includes('saved')")
    assert page.text_content("#live").startswith("Grade 2")
    page.click("button.grade[data-grade='1']")
    third = next_shown(page, second)
    touch = tabs(has_touch=True, is_mobile=True, viewport={"width": 400, "height": 800})
    touch.log_in(site.tokens["ana"])
    on_phone = shown_pair(touch.page)
    assert on_phone == third  # the same queue, resumed where the other tab is
    touch.page.tap("button.grade[data-grade='3']")
    next_shown(touch.page, on_phone)
    assert [(q, c, g) for _, q, c, g, *_ in events(site.db, "ana")] == [
        (*first, 2), (*second, 1), (*third, 3)]


def test_a_reload_keeps_the_session(tabs, site):
    tab = tabs()
    tab.log_in(site.tokens["ana"])
    before = shown_pair(tab.page)
    tab.page.reload()
    assert tab.page.url == tab.url + "/judge" and shown_pair(tab.page) == before
    tab.page.goto(tab.url + "/")
    tab.page.wait_for_url(tab.url + "/judge")


def test_a_key_pressed_while_offline_lands_once_when_the_network_is_back(tabs, site):
    tab = tabs()
    tab.log_in(site.tokens["ana"])
    page = tab.page
    pair = shown_pair(page)
    tab.context.set_offline(True)
    page.keyboard.press("3")
    page.wait_for_selector("#connection:not([hidden])")
    assert "connection to the server is lost" in page.inner_text("#connection")
    page.keyboard.press("1")  # refused while the first is under way: nothing else is sent
    time.sleep(1.0)
    assert events(site.db, "ana") == []
    tab.context.set_offline(False)
    next_shown(page, pair)
    time.sleep(1.0)
    assert [(q, c, g) for _, q, c, g, *_ in events(site.db, "ana")] == [(*pair, 3)]


def test_an_answer_lost_on_its_way_back_is_sent_again_and_lands_once(tabs, site):
    tab = tabs()
    tab.log_in(site.tokens["ana"])
    page = tab.page
    pair = shown_pair(page)
    tries: list[str] = []

    def lose_first_answer(route) -> None:
        tries.append(route.request.headers.get("idempotency-key"))
        if len(tries) == 1:
            route.fetch()  # the server commits the label ...
            route.abort()  # ... and the page never hears of it
        else:
            route.continue_()

    page.route("**/api/v1/labels", lose_first_answer)
    page.keyboard.press("2")
    next_shown(page, pair)
    assert len(tries) == 2 and tries[0] == tries[1]  # the same action, the same key
    assert [(q, c, g) for _, q, c, g, *_ in events(site.db, "ana")] == [(*pair, 2)]


def test_a_label_waits_through_a_busy_server(tabs, site):
    tab = tabs()
    tab.log_in(site.tokens["ana"])
    page = tab.page
    pair = shown_pair(page)
    answered: list[int] = []

    def busy_once(route) -> None:
        if not answered:
            answered.append(503)
            route.fulfill(status=503, headers={"Retry-After": "1"}, body='{"error": "error", "message": "busy"}')
        else:
            route.continue_()

    page.route("**/api/v1/labels", busy_once)
    page.keyboard.press("0")
    page.wait_for_selector("#connection:not([hidden])")
    next_shown(page, pair)
    assert [(q, c, g) for _, q, c, g, *_ in events(site.db, "ana")] == [(*pair, 0)]


def test_two_tabs_of_one_annotator_show_the_conflict_and_let_the_person_choose(tabs, site):
    tab = tabs()
    tab.log_in(site.tokens["ana"])
    other = tab.new_page()
    other.goto(tab.url + "/judge")
    pair = shown_pair(tab.page)
    assert shown_pair(other) == pair
    tab.page.keyboard.press("3")
    next_shown(tab.page, pair)
    other.keyboard.press("0")
    other.wait_for_selector("#conflict-dialog[open]")
    text = other.inner_text("#conflict-text")
    assert "grade 3" in text and "another tab" in text
    assert [g for *_, g, _, _, _ in events(site.db, "ana")] == [3]
    other.click("#conflict-mine")
    next_shown(other, pair)
    assert [(q, c, g) for _, q, c, g, *_ in events(site.db, "ana")] == [(*pair, 3), (*pair, 0)]


def test_undo_flag_and_comment_from_the_keyboard(tabs, site):
    tab = tabs()
    tab.log_in(site.tokens["ana"])
    page = tab.page
    pair = shown_pair(page)
    page.keyboard.press("2")
    next_shown(page, pair)
    page.keyboard.press("u")
    page.wait_for_function("(p) => document.body.dataset.pair === p", arg="\x1f".join(pair))
    page.wait_for_function("() => document.getElementById('live').textContent.startsWith('Undone')")
    page.keyboard.press("f")
    page.wait_for_selector("#note-dialog[open]")
    assert page.evaluate("() => document.activeElement.id") == "note-text"
    page.keyboard.type("is this still <b>true</b>?")
    page.click("#note-ok")
    page.wait_for_selector("#your-flag:not([hidden])")
    assert "is this still <b>true</b>?" in page.inner_text("#your-flag")  # text, never markup
    page.keyboard.press("c")
    page.wait_for_selector("#note-dialog[open]")
    page.keyboard.type("see the FAQ")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_selector("#your-comment:not([hidden])")
    page.keyboard.press("j")
    following = next_shown(page, pair)
    page.keyboard.press("k")
    next_shown(page, following)
    assert [(g, undoes is not None) for _, _, _, g, _, _, undoes in events(site.db, "ana")] == [(2, False), (None, True)]
    with Project.open(site.db) as project:
        from ragjudge.services.events.marks import current_marks

        marks = current_marks(project, "ana", *pair)
    assert marks.flagged and marks.flag_note == "is this still <b>true</b>?" and marks.comment == "see the FAQ"


def test_a_token_revoked_mid_session_refuses_the_next_label_and_it_is_sent_after_login(tabs, site):
    tab = tabs()
    tab.log_in(site.tokens["ana"])
    page = tab.page
    pair = shown_pair(page)
    with Project.open(site.db) as project:
        new_token = roster.issue_token(project, "ana", access=rights(project, "dora"))
    # The label's own answer is awaited (the pair fetched ahead is refused too, and its banner
    # says the same words), so the test follows the grade itself.
    labels = lambda response: response.url.endswith("/api/v1/labels") and response.request.method == "POST"  # noqa: E731
    with page.expect_response(labels, timeout=DEADLINE * 1000) as refused:
        page.keyboard.press("2")
    assert refused.value.status == 401
    page.wait_for_selector("#connection:not([hidden])")
    assert "new token" in page.inner_text("#connection")
    assert events(site.db, "ana") == []
    assert page.evaluate("() => sessionStorage.getItem('ragjudge.pending')"), "the refused grade is kept"
    page.click("#connection a")
    page.fill("#token", new_token)
    with page.expect_response(labels, timeout=DEADLINE * 1000) as resent:
        page.click("button[type=submit]")
        page.wait_for_url(tab.url + "/judge")
    assert resent.value.status == 201, (resent.value.status, resent.value.text())
    wait_for(lambda: events(site.db, "ana"), "the kept label to land")
    assert [(q, c, g) for _, q, c, g, *_ in events(site.db, "ana")] == [(*pair, 2)]


def test_an_annotator_is_refused_every_lead_page_and_route(tabs, site):
    tab = tabs()
    tab.log_in(site.tokens["ana"])
    page = tab.page
    for path in ("/lead", "/lead/terminal"):
        response = page.goto(tab.url + path)
        assert response.status == 403 and "For leads" in page.inner_text("h1")
    for path in ("/api/v1/eval", "/api/v1/qrels", "/api/v1/annotators"):
        status = page.evaluate("(p) => fetch(p).then(r => r.status)", path)
        assert status == 403, path
    assert page.locator("nav a", has_text="Lead").count() == 0


def test_data_is_shown_as_text_with_controls_visible(tabs, site):
    with Project.open(site.db) as project:
        def poison(session) -> None:
            from ragjudge.store.schema import Chunk, Query

            for chunk in session.query(Chunk):
                chunk.text = "<img src=x onerror=alert(1)> query \u202eevil\x1b[31m red"
            session.get(Query, "q1").text = "query <script>alert(1)</script>"

        project.write(poison)
    tab = tabs()
    tab.log_in(site.tokens["ana"])
    page = tab.page
    shown_pair(page)
    text = page.inner_text("#chunk-text")
    assert "<img src=x onerror=alert(1)>" in text and "\u27e8U+202E\u27e9" in text and "\u241b[31m" in text
    assert page.locator("#chunk-text img").count() == 0 and page.locator("#chunk-text mark").count() >= 1
    assert page.locator("#query-text script").count() == 0


# -- answers ---------------------------------------------------------------------------------


def test_a_key_on_the_answers_page_judges_the_item_shown(browser, tmp_path):
    site = webkit.build_project(str(tmp_path / "answers.db"), answers=True, folder=tmp_path)
    running = webkit.start(site.db)
    tab = Tab(browser, running.url)
    try:
        tab.log_in(site.tokens["ben"])
        page = tab.page
        page.goto(running.url + "/answers")
        page.wait_for_selector("#answer:not([hidden])")
        assert "five days" in page.inner_text("#item-what")
        page.keyboard.press("2")
        page.wait_for_function("() => document.body.dataset.item === '1'")
        assert "free returns" in page.inner_text("#item-what")
        page.keyboard.press("j")
        page.keyboard.press("j")
        page.wait_for_function("() => document.body.dataset.item === '3'")
        what = page.inner_text("#item-what")
        assert "Citation 1 of" in what and "c05" in what and "Parcels ship in five days." in what
        assert page.inner_text("#cited-id") == "c05"
        page.click("button.support[data-support='partial']")
        page.wait_for_function("() => document.body.dataset.item === '4'")
        with Project.open(site.db) as project, project.connect() as connection:
            from ragjudge.services.events.answers import current_judgments

            judged = [(j.nugget, j.sentence, j.chunk_id, j.support)
                      for j in current_judgments(connection, annotators=["ben"])]
        assert judged == [("five days", None, None, "full"), (None, 0, "c05", "partial")]
        assert tab.loopback_only()
    finally:
        tab.close()
        running.stop()


# -- accessibility ---------------------------------------------------------------------------

AXE_RUN = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations
    .filter(v => v.impact === "serious" || v.impact === "critical")
    .map(v => v.id + " (" + v.impact + "): " + v.nodes.map(n => n.target.join(" ")).slice(0, 3).join(", "));
}"""


def axe_violations(page) -> list[str]:
    page.add_script_tag(path=str(AXE))
    return page.evaluate(AXE_RUN)


@pytest.mark.parametrize("width", [400, 1280])
def test_axe_finds_no_serious_violation_on_any_page(browser, tmp_path, width):
    site = webkit.build_project(str(tmp_path / "axe.db"), answers=True, folder=tmp_path)
    running = webkit.start(site.db)
    options = {"bypass_csp": True, "viewport": {"width": width, "height": 900}}  # to inject axe
    found: dict[str, list[str]] = {}
    lead, annotator = Tab(browser, running.url, **options), Tab(browser, running.url, **options)
    try:
        page = annotator.page
        page.goto(running.url + "/login")
        found["login"] = axe_violations(page)
        page.fill("#token", "rj_wrong")
        page.click("button[type=submit]")
        found["login refused"] = axe_violations(page)
        annotator.log_in(site.tokens["ana"])
        shown_pair(page)
        found["judge"] = axe_violations(page)
        page.keyboard.press("?")
        page.wait_for_selector("#help-dialog[open]")
        found["judge keys"] = axe_violations(page)
        page.keyboard.press("Escape")
        page.keyboard.press("1")
        page.wait_for_function("() => document.getElementById('live').textContent.includes('saved')")
        page.goto(running.url + "/history")
        found["history"] = axe_violations(page)
        page.goto(running.url + "/guidelines")
        found["guidelines"] = axe_violations(page)
        page.goto(running.url + "/answers")
        page.wait_for_selector("#answer:not([hidden])")
        found["answers"] = axe_violations(page)
        page.goto(running.url + "/lead")
        found["refusal"] = axe_violations(page)
        lead.log_in(site.tokens["dora"])
        lead.page.goto(running.url + "/lead")
        found["lead"] = axe_violations(lead.page)
        assert annotator.loopback_only() and lead.loopback_only()
    finally:
        annotator.close()
        lead.close()
        running.stop()
    assert {page: v for page, v in found.items() if v} == {}


def test_judging_works_from_the_keyboard_alone_with_visible_focus(tabs, site):
    tab = tabs()
    tab.log_in(site.tokens["ana"])
    page = tab.page
    pair = shown_pair(page)
    page.keyboard.press("Tab")  # the skip link first
    assert page.evaluate("() => document.activeElement.className") == "skip"
    page.focus("button.grade[data-grade='2']")
    page.keyboard.press("Enter")
    next_shown(page, pair)
    outline = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"
    assert page.evaluate("() => document.activeElement.dataset.grade") == "2"
    assert page.get_attribute("#live", "aria-live") == "polite"


def test_the_page_fits_a_phone_and_200_percent_zoom(browser, web, site):
    for options in ({"viewport": {"width": 400, "height": 800}},
                    {"viewport": {"width": 640, "height": 400}, "device_scale_factor": 2}):  # 1280 x 800 at 200 %
        tab = Tab(browser, web.url, **options)
        try:
            tab.log_in(site.tokens["ana"])
            shown_pair(tab.page)
            overflow = tab.page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, options
            assert tab.page.is_visible("button.grade[data-grade='0']")
        finally:
            tab.close()


def test_no_request_leaves_loopback(tabs, site):
    tab = tabs()
    tab.log_in(site.tokens["ana"])
    shown_pair(tab.page)
    for path in ("/history", "/guidelines", "/answers"):
        tab.page.goto(tab.url + path)
    assert tab.loopback_only() and any("/api/v1/pairs/next" in u for u in tab.requests)



def test_a_lead_opens_the_terminal_app_in_the_browser(tabs, site, web):
    pytest.importorskip("textual_serve", reason="the lead terminal needs textual-serve")
    tab = tabs()
    tab.log_in(site.tokens["dora"])
    page = tab.page
    page.goto(tab.url + "/lead")
    with page.expect_websocket() as opened:
        page.click("a[href='/lead/terminal']")
    assert urlsplit(opened.value.url).hostname == "127.0.0.1"
    assert urlsplit(opened.value.url).path == "/lead/terminal/ws"
    page.wait_for_selector("body.-first-byte", timeout=DEADLINE * 1000)
    assert len(web.ctx.terminals) == 1
    page.goto(tab.url + "/judge")  # leaving the page ends the terminal and its process
    wait_for(lambda: not web.ctx.terminals, "the terminal's process to end")


def test_a_label_is_given_again_from_your_labels(tabs, site):
    tab = tabs()
    tab.log_in(site.tokens["ana"])
    page = tab.page
    pair = shown_pair(page)
    page.keyboard.press("1")
    next_shown(page, pair)
    page.keyboard.press("l")
    page.wait_for_url(tab.url + "/history")
    assert page.locator("table.history tbody tr").count() == 1
    page.click("table.history a")
    page.wait_for_function("(p) => document.body.dataset.pair === p", arg="\x1f".join(pair))
    assert "You gave grade 1" in page.inner_text("#your-label")
    page.keyboard.press("3")  # its seen is the grade 1 event: a relabel, not a conflict
    next_shown(page, pair)
    assert [(q, c, g) for _, q, c, g, *_ in events(site.db, "ana")] == [(*pair, 1), (*pair, 3)]
    page.goto(tab.url + "/judge?query_id=q1&chunk_id=nope")  # a pair not in the queue: the next one
    shown_pair(page)
    page.wait_for_function("() => document.getElementById('live').textContent.includes('not in your queue')")
