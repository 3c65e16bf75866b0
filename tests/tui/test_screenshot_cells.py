"""The screenshot script draws lines, blocks and braille as shapes (screenshots/make_screenshots.py):
each character's shapes, and an SVG text element rewritten around them."""

from __future__ import annotations

import re

import pytest
from test_screens_fit import scenes


@pytest.fixture(scope="module")
def shots():
    return scenes()


def test_every_box_drawing_character_but_the_diagonals_is_read_from_its_name(shots):
    for cp in range(0x2500, 0x2580):
        parsed = shots.box_arms(chr(cp))
        if chr(cp) in "╱╲╳":
            assert parsed is None
        else:
            assert parsed is not None and parsed[0], chr(cp)
    assert shots.box_arms("┼") == ({"n": 1, "s": 1, "w": 1, "e": 1}, 1, False)
    assert shots.box_arms("╭") == ({"s": 1, "e": 1}, 1, True)
    assert shots.box_arms("┡") == ({"n": 2, "s": 1, "e": 2}, 1, False)  # UP HEAVY AND RIGHT DOWN LIGHT
    assert shots.box_arms("╟") == ({"n": 3, "s": 3, "e": 1}, 1, False)  # VERTICAL DOUBLE AND RIGHT SINGLE
    assert shots.box_arms("┄") == ({"w": 1, "e": 1}, 3, False)  # LIGHT TRIPLE DASH HORIZONTAL
    assert shots.box_arms("╸") == ({"w": 2}, 1, False)
    assert shots.box_arms("a") is None


def test_blocks_fill_their_fraction_of_the_cell(shots):
    assert shots.block_boxes("█") == [(0, 0, 1, 1, 1)]
    assert shots.block_boxes("▄") == [(0, 0.5, 1, 0.5, 1)]
    assert shots.block_boxes("▊") == [(0, 0, 0.75, 1, 1)]  # the input's outline: 6/8 of the cell
    assert shots.block_boxes("▎") == [(0, 0, 0.25, 1, 1)]
    assert shots.block_boxes("▒") == [(0, 0, 1, 1, 0.5)]
    assert sorted(shots.block_boxes("▚")) == [(0, 0, 0.5, 0.5, 1), (0.5, 0.5, 0.5, 0.5, 1)]
    assert shots.block_boxes("x") is None


def test_braille_dots_are_where_their_bits_say(shots):
    assert shots.braille_dots("⠀", 0, 0, "c") == []
    assert len(shots.braille_dots("⣿", 0, 0, "c")) == 8
    (dot,) = shots.braille_dots("⠁", 0, 0, "c")  # dot 1: left column, top row
    assert 'cx="3.05"' in dot and 'cy="3.05"' in dot
    (dot,) = shots.braille_dots("⢀", 0, 0, "c")  # dot 8: right column, bottom row
    assert 'cx="9.15"' in dot and 'cy="21.35"' in dot
    assert shots.braille_dots("a", 0, 0, "c") is None


def test_a_text_element_keeps_its_letters_and_gives_its_lines_to_shapes(shots):
    text = ('<text class="t-r2" x="24.4" y="44.4" textLength="48.8" '
            'clip-path="url(#t-line-1)">│a⚑─</text>')
    covered = {ord("a")}
    svg, missing = shots.draw_cells(f"<g>{text}</g>", covered)
    assert missing == {"⚑"}, "a letter the font lacks is named"
    kept = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert kept == ["&#160;a⚑&#160;"], "the line characters leave spaces in place"
    rects = re.findall(r'<rect class="t-r2" x="([0-9.]+)"', svg)
    assert len(rects) == 4, "│ and ─: two arms each"
    # the first cell starts at x = 24.4; the last (─) at 24.4 + 3 · 12.2 = 61
    assert float(rects[0]) < 24.4 + 12.2 and max(map(float, rects)) >= 61 - 1
    assert shots.draw_cells(text.replace("│a⚑─", "abc"), {97, 98, 99}) == (text.replace("│a⚑─", "abc"), set())
