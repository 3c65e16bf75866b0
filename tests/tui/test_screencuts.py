"""The checker of text cut off without an ellipsis (tests/screencuts.py), on small apps whose
cuts are known: it must report each cut and nothing that fits or says where it cuts."""

from __future__ import annotations

import asyncio

from screencuts import cut_texts, fits
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Footer, Label, Static

HINT = "c: create the new name (a new annotator with an empty history) · Escape: cancel"
LINES = "\n".join(f"line {i} of the panel" for i in range(1, 9))


def test_fits_compares_without_whitespace_and_lets_an_ellipsis_stand_for_any_run():
    assert fits("abc", "abc")
    assert fits("abc…", "abcdef")
    assert fits("a…f", "abcdef")
    assert fits("ab…de…", "abcdefgh")
    assert not fits("abc", "abcdef"), "cut without an ellipsis"
    assert not fits("x…", "abcdef"), "what is drawn is not the text"
    assert not fits("ab…ba", "abcdef"), "the pieces must come in order"


class Board(App):
    """One widget of each kind, in a box too small for some of them."""

    CSS = """
    #box { width: 30; height: auto; }
    .nowrap { text-wrap: nowrap; text-overflow: ellipsis; }
    #short { height: 3; }
    #scroll { height: 3; }
    """

    def __init__(self, *widgets: Static) -> None:
        super().__init__()
        self.widgets = widgets

    def compose(self) -> ComposeResult:
        with Vertical(id="box"):
            yield from self.widgets


def cuts_of(*widgets, size=(60, 20)) -> list[str]:
    async def run() -> list[str]:
        app = Board(*widgets)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            return cut_texts(app)

    return asyncio.run(run())


def test_a_label_wider_than_its_box_is_a_cut_mid_word():
    cuts = cuts_of(Label(HINT, id="hint"))
    assert len(cuts) == 1 and "#hint" in cuts[0]
    assert "empty history" in cuts[0], "what is lost is named"


def test_the_same_text_wrapped_or_cut_with_an_ellipsis_is_no_cut():
    assert cuts_of(Static(HINT, id="wrapped")) == []
    assert cuts_of(Static(HINT, id="ellipsis", classes="nowrap")) == []


def test_lines_below_a_panel_s_edge_are_a_cut_unless_they_scroll():
    cuts = cuts_of(Static(LINES, id="short"))
    assert len(cuts) == 1 and "#short" in cuts[0] and "line 4" in cuts[0]
    assert cuts_of(VerticalScroll(Static(LINES, id="inner"), id="scroll")) == []


def test_a_footer_key_with_no_room_is_reported():
    class Keys(App):
        BINDINGS = [Binding(k, f"press_{k}", f"the {k} key of many") for k in "abcdefghij"]

        def compose(self) -> ComposeResult:
            yield Footer()

    async def run(width: int) -> list[str]:
        app = Keys()
        async with app.run_test(size=(width, 10)) as pilot:
            await pilot.pause()
            return cut_texts(app)

    narrow, wide = asyncio.run(run(60)), asyncio.run(run(250))
    assert narrow and all("footer: key" in c for c in narrow)
    # the app's own ^p palette key may be laid out after ours (and cut too), depending on when
    # the footer first renders: the last of our keys is what must be reported
    ours = [c for c in narrow if "palette" not in c]
    assert ours and "the j key of many" in ours[-1]
    assert wide == []
