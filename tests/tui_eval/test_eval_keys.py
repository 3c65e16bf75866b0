"""Keys of the evaluation screen that must not mislead: scrolling the overview sideways, a lead's
setting refused to an annotator, the compare tab's two runs."""

from __future__ import annotations

import asyncio
from itertools import accumulate

from projectkit import rights
import pytest
from textual.widgets import DataTable, TabbedContent

from ragjudge.services.access import roster
from ragjudge.services.scoring.live import MEASURES_SETTING
from ragjudge.tui import make_app
from ragjudge.tui.screens.evaluation import EvaluationScreen
from ragjudge.tui.screens.prompts import Refused
from pilotkit import wait_for

pytestmark = pytest.mark.slow


def run_screen(project, annotator: str, body, size=(120, 40)):
    async def main():
        app = make_app(project, annotator=annotator)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await pilot.press("e")
            await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen)
                           and app.screen.snapshot is not None)
            screen = app.screen
            await wait_for(pilot, lambda: screen.details is not None)
            await app.workers.wait_for_complete()
            await pilot.pause(0.2)
            return await body(app, pilot, screen)

    return asyncio.run(main())


def drawn_rows(app, region) -> list[str]:
    """The characters drawn in ``region`` of the screen, row by row."""
    from screencuts import drawn_cells

    rows = drawn_cells(app)
    return ["".join(rows[y][region.x:region.right]) for y in range(region.y, region.bottom)]


def test_the_overview_scrolls_by_whole_columns_beside_the_run_and_settled_columns(demo):
    async def body(app, pilot, screen):
        table = screen.query_one("#overview-table", DataTable)
        fixed = sum(c.get_render_width(table) for c in table.ordered_columns[:table.fixed_columns])
        seen = []
        for x in (3, 7, 12, 20, 31, 45, 9999, 40, 17, 2):
            table.scroll_to(x=x, animate=False)  # as the mouse wheel or a scroll bar would
            await pilot.pause(0.05)
            scrolled = table.ordered_columns[table.fixed_columns:]
            starts = dict(zip(accumulate((c.get_render_width(table) for c in scrolled), initial=0),
                              scrolled))
            assert table.scroll_x in starts, f"scrolled to {table.scroll_x}, inside a column"
            column = starts[table.scroll_x]
            rows = drawn_rows(app, table.region)
            header = rows[0][fixed:]
            seen.append(header.split()[0])
            # the first column after the fixed ones is drawn from its first character: its
            # label heads it, and no piece of a half-hidden column shows in front of it
            assert header.startswith(" " + str(column.label)), (x, header)
            for line in rows[1:]:
                assert not line[fixed:fixed + 1].strip(), (x, line)
            assert [r[:fixed] for r in rows][1].lstrip().startswith(screen.snapshot.run_names[0])
        assert len(set(seen)) > 3, "it scrolled"
        table.scroll_to(x=table.max_scroll_x, animate=False)
        await pilot.pause(0.05)
        last = str(table.ordered_columns[-1].label)
        assert last in drawn_rows(app, table.region)[0], "the last column can be scrolled to"

    run_screen(demo, "dana", body)


def test_a_refused_plus_keeps_what_is_typed_next_and_a_and_b_never_name_one_run(demo):
    roster.add(demo, "dora", role="lead", access=rights(demo, "dora"))

    async def body(app, pilot, screen):
        await pilot.press("c")
        pair = screen.pair
        await pilot.press("plus")
        await pilot.pause()
        assert isinstance(app.screen, Refused), "dana is not a lead: a refusal, not a prompt"
        await pilot.press(*"abcdov", "enter")  # a measure's name typed on, then Enter
        await pilot.pause()
        assert app.screen is screen
        assert screen.query_one(TabbedContent).active == "compare", "no key reached the tabs"
        assert screen.pair == pair, "nor the compare tab's runs"
        assert demo.get_setting(MEASURES_SETTING) is None
        pairs = []
        for key in "aaaabbbbabab":
            await pilot.press(key)
            pairs.append(screen.pair)
        assert all(a != b for a, b in pairs), pairs
        assert {a for a, _ in pairs} == set(screen.snapshot.run_names), "a reaches every run"

    run_screen(demo, "dana", body)
