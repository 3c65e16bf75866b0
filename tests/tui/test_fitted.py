"""Panels and bars that say where they cut (ragjudge/tui/widgets/fitted.py), and the judging
screen's top line at 80 columns."""

from __future__ import annotations

import asyncio

from rich.text import Text
from screencuts import drawn_cells
from textual.app import App, ComposeResult
from tui_project import sync

from ragjudge.tui import make_app
from ragjudge.tui.widgets.fitted import Fitted, Part, fit_line

PARTS = (Part(Text("Parcelwise support (demo)"), cut=True),
         Part(Text("annotator dana"), Text("dana")),
         Part(Text("order depth (round 1 of 5: top 1)"), Text("round 1/5")),
         Part(Text("pool top 10")),
         Part(Text("blind")))


def test_a_bar_tightens_then_shortens_from_the_end_then_cuts_what_may_be_cut():
    # 25 + 14 + 33 + 11 + 5 = 88 cells of parts, 4 separators of 5 or 3 cells
    assert fit_line(PARTS, 120).plain == ("Parcelwise support (demo)  ·  annotator dana  ·  order depth "
                                          "(round 1 of 5: top 1)  ·  pool top 10  ·  blind")
    assert fit_line(PARTS, 100).plain.count("  ·  ") == 0  # 88 + 4·3 = 100: tight separators
    assert fit_line(PARTS, 100).cell_len == 100
    # 99 cells: the order's short form first (the last part with one), 88 - 33 + 9 + 12 = 76
    assert fit_line(PARTS, 99).plain == ("Parcelwise support (demo) · annotator dana · round 1/5 · "
                                         "pool top 10 · blind")
    # 70: 'dana' too (66 cells); 60: the project's name cut to 25 - 6 = 19 cells with its '…'
    assert fit_line(PARTS, 70).plain == "Parcelwise support (demo) · dana · round 1/5 · pool top 10 · blind"
    assert fit_line(PARTS, 60).plain == "Parcelwise support… · dana · round 1/5 · pool top 10 · blind"
    # below what the cut parts may give (12 cells each), the line's end is cut last
    narrow = fit_line(PARTS, 40).plain
    assert len(narrow) == 40 and narrow.startswith("Parcelwise …") and narrow.endswith("…")


class Panel(App):
    CSS = "Fitted { height: 3; width: 30; }"

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        yield Fitted(self.text)


def drawn(text: str) -> list[str]:
    async def run() -> list[str]:
        app = Panel(text)
        async with app.run_test(size=(40, 6)) as pilot:
            await pilot.pause()
            return ["".join(row[:30]).rstrip() for row in drawn_cells(app)[:3]]

    return asyncio.run(run())


def test_a_panel_ends_its_last_line_in_an_ellipsis_only_when_there_is_more():
    assert drawn("one\ntwo\nthree") == ["one", "two", "three"]
    assert drawn("one\ntwo\nthree\nfour") == ["one", "two", "three…"]
    full = drawn("a line of exactly thirty cells\nb\nc line of exactly thirty cells\nd")
    assert full[2] == "c line of exactly thirty cell…", "a full line gives its last cell"


@sync
async def test_the_judging_screen_s_top_line_keeps_the_pool_and_blind_at_80_columns(project):
    from ragjudge.services.events.annotators import mark_guidelines_seen

    mark_guidelines_seen(project, "dana")
    app = make_app(project, annotator="dana", start="judge")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        top = "".join(drawn_cells(app)[0])
        assert "dana" in top and "pool top 10" in top and "blind" in top, top
        await pilot.resize_terminal(200, 40)
        await pilot.pause()
        top = "".join(drawn_cells(app)[0])
        assert "annotator dana  ·  order depth (round 1 of" in top, "a wide one says it in full"
