"""The report in a real browser (headless Chromium through Playwright, the system's
/usr/bin/chromium; none is ever downloaded): no request leaves the page, nothing the page
carries is refused by its own Content-Security-Policy, its numbers are ``eval --format json``'s,
sorting a table works (query ids in natural order), and hostile names stay text."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the 'test' extra has it)")

from chromium import BROWSER_MARKS
from projectkit import ragjudge
from reportkit import HOSTILE_QUERY, HOSTILE_RUN, small_project


pytestmark = BROWSER_MARKS



class Opened:
    """A report open in its own browser context; every request but the file's own is refused
    and remembered, and so are console errors and dialogs."""

    def __init__(self, browser, path: Path) -> None:
        self.url = path.resolve().as_uri()
        self.context = browser.new_context()
        self.requests: list[str] = []
        self.outside: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", self._dialog)
        self.page.goto(self.url)
        self.page.wait_for_load_state("load")

    def _route(self, route) -> None:
        if route.request.url == self.url:
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def close(self) -> None:
        self.context.close()

    def column(self, table: str, header: str) -> list[str]:
        """The ``data-sort`` of one column of ``table`` (a CSS selector), in the rows' order."""
        return self.page.eval_on_selector(table, """(t, header) => {
            const i = [...t.tHead.rows[0].cells].findIndex(c => c.textContent.trim() === header);
            return [...t.tBodies[0].rows].map(r => r.cells[i].getAttribute('data-sort'));
        }""", header)

    def click(self, table: str, header: str) -> None:
        self.page.locator(f"{table} thead button", has_text=header).first.click()


@pytest.fixture
def demo_page(browser, demo_html):
    opened = Opened(browser, demo_html)
    yield opened
    opened.close()


def test_no_request_leaves_the_page_and_nothing_is_refused(demo_page):
    page = demo_page.page
    page.locator("#per-query details summary").first.click()
    page.locator("#curves details summary").first.click()
    page.mouse.wheel(0, 20000)
    assert demo_page.outside == [] and demo_page.requests == [demo_page.url]
    # the inline style and script match the page's policy: no violation, the script ran
    assert demo_page.errors == []
    assert page.evaluate("getComputedStyle(document.body).maxWidth") == "1200px"
    policy = page.get_attribute("meta[http-equiv=Content-Security-Policy]", "content")
    assert policy.startswith("default-src 'none'") and "img-src 'none'" in policy
    assert page.locator("script").count() == 1 and page.locator("img, iframe, link, object").count() == 0


def test_the_numbers_on_the_page_are_evals(demo_page, demo_eval):
    cells = demo_page.page.eval_on_selector_all("#scorecard-table td", """cells => cells.map(c => [
        c.parentElement.dataset.run, c.dataset.measure, c.dataset.value,
        c.querySelector('span').textContent, c.querySelector('.ci').dataset.low,
        c.querySelector('.ci').dataset.high])""")
    assert len(cells) == 3 * len(demo_eval["measures"]) == 3 * 18
    for run, measure, value, text, low, high in cells:
        expected = demo_eval["runs"][run]["aggregate"][measure]
        if expected is None:  # undefined on every query (title_only has no answers)
            assert (value, text, low, high) == ("", "–", "", "")
            continue
        assert float(value) == expected
        assert text.lstrip("*") == f"{expected:.4f}"  # what a reader sees
        assert [float(low), float(high)] == demo_eval["runs"][run]["ci95"][measure]


def test_sorting_a_per_query_table_by_a_run(demo_page, demo_eval):
    table = "table.per-query[data-key='AP']"
    demo_page.page.locator("#per-query summary", has_text="AP per query").click()
    demo_page.click(table, "hybrid")
    ascending = [float(v) for v in demo_page.column(table, "hybrid")]
    expected = sorted(data["AP"] for data in demo_eval["runs"]["hybrid"]["per_query"].values())
    assert ascending == expected
    assert demo_page.page.get_attribute(f"{table} th:has(button:text('hybrid'))", "aria-sort") == "ascending"
    demo_page.click(table, "hybrid")
    assert [float(v) for v in demo_page.column(table, "hybrid")] == expected[::-1]
    demo_page.click(table, "query")
    queries = demo_page.page.eval_on_selector(table, "t => [...t.tBodies[0].rows].map(r => r.dataset.query)")
    assert queries == sorted(demo_eval["runs"]["hybrid"]["per_query"])  # zero-padded ids: as text


def test_query_ids_sort_as_numbers_within_text(browser, tmp_path):
    db = str(tmp_path / "small.db")
    small_project(db)
    out = tmp_path / "small.html"
    made = ragjudge("report", "--db", db, "-o", str(out), "-q", "--by", "ana", "-m", "P@3,AP")
    assert made.returncode == 0, made.stderr
    opened = Opened(browser, out)
    try:
        table = "table.per-query[data-key='P@3']"
        natural = [f"q{i}" for i in range(1, 13)]

        def order() -> list[str]:
            return opened.page.eval_on_selector(table, "t => [...t.tBodies[0].rows].map(r => r.dataset.query)")

        assert order() == natural  # as written
        opened.click(table, "query")
        assert order() == natural
        opened.click(table, "query")
        assert order() == natural[::-1]
        opened.click(table, "bm25")
        values = [float(v) for v in opened.column(table, "bm25")]
        assert values == sorted(values) and not any(math.isnan(v) for v in values)
        assert sorted(natural) != natural  # text order would put q10 before q2
        assert opened.outside == [] and opened.errors == []
    finally:
        opened.close()


def test_hostile_names_stay_text(browser, tmp_path):
    db = str(tmp_path / "hostile.db")
    small_project(db, second_run=HOSTILE_RUN, query_text=HOSTILE_QUERY)
    out = tmp_path / "hostile.html"
    made = ragjudge("report", "--db", db, "-o", str(out), "-q", "--by", "ana", "-m", "P@3,AP")
    assert made.returncode == 0, made.stderr
    raw = out.read_text(encoding="utf-8")
    assert "<script>alert" not in raw and "<img" not in raw
    opened = Opened(browser, out)
    try:
        page = opened.page
        assert opened.dialogs == [] and opened.outside == [] and opened.errors == []
        assert page.locator("script").count() == 1 and page.locator("img").count() == 0
        names = page.eval_on_selector_all("#scorecard-table th[scope=row]", "e => e.map(x => x.textContent)")
        assert any(HOSTILE_RUN in name for name in names)
        texts = page.eval_on_selector_all("table.per-query td.text", "e => e.map(x => x.textContent)")
        assert HOSTILE_QUERY in texts
        legend = page.eval_on_selector_all("svg.plot .legend text", "e => e.map(x => x.textContent)")
        assert HOSTILE_RUN in legend
    finally:
        opened.close()
