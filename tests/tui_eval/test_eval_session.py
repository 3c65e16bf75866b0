"""The evaluation screen in a long session, driven with Pilot: judging a query's unjudged pairs
from its explanation, wide tables, the curves' K axis."""

from __future__ import annotations

import asyncio

import pytest
from pilotkit import wait_for

from ragjudge.services.events import state as judging
from ragjudge.tui import make_app
from ragjudge.tui.screens.evaluation import EvaluationScreen
from ragjudge.tui.widgets.evalpane import ExplainModal

pytestmark = pytest.mark.slow


def walk(queue) -> list[tuple[str, str]]:
    out, view = [], queue.end(+1)
    while view is not None:
        out.append((view.query_id, view.chunk_id))
        view = queue.step(view.position, +1)
    return out


def test_j_judges_exactly_the_querys_unjudged_pairs(demo):
    asyncio.run(_judge_unjudged(demo))


async def _judge_unjudged(demo) -> None:
    from ragjudge.tui.screens.judge import JudgeScreen

    app = make_app(demo, annotator="erin", new_annotator=True)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen) and app.screen.snapshot)
        screen = app.screen
        await pilot.press("p")
        await wait_for(pilot, lambda: screen.snapshot.rows is not None and screen._query_rows)
        rows = screen._query_rows
        # a query some of whose top-10 pairs others have graded and some nobody has
        query = next(q for q in rows if 0 < len(screen.engine.unjudged_pairs(q)) < 8)
        unjudged = list(screen.engine.unjudged_pairs(query))
        for _ in range(rows.index(query)):
            await pilot.press("down")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ExplainModal))
        await pilot.press("j")
        await wait_for(pilot, lambda: isinstance(app.screen, JudgeScreen) and app.screen.pair is not None)
        judge = app.screen
        assert sorted(walk(judge.queue)) == sorted((query, c) for c in unjudged)
        for _ in unjudged:
            assert judge.pair.query_id == query and judge.pair.chunk_id in unjudged
            await pilot.press("1")
        assert judge.pair is None  # done: nothing else of the queue is offered
        graded = {(s.query_id, s.chunk_id) for s in judging.label_history(demo, "erin")}
        assert graded == {(query, c) for c in unjudged}
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)


# -- the curves' K axis ------------------------------------------------------------------------


def test_the_k_axis_has_whole_number_ticks_only(demo):
    asyncio.run(_k_ticks(demo))


async def _k_ticks(demo) -> None:
    import re

    from ragjudge.tui.evalapp import evaluation_app

    for size in ((140, 45), (100, 30), (180, 50)):
        app = evaluation_app(demo)
        async with app.run_test(size=size) as pilot:
            await wait_for(pilot, lambda app=app: isinstance(app.screen, EvaluationScreen)
                           and app.screen.snapshot)
            await pilot.press("v")
            await pilot.pause()
            plot = str(app.screen.query_one("#curve-k").render()).splitlines()
            axis = next(line for line in reversed(plot) if re.search(r"\d", line) and "K" not in line)
            ticks = re.findall(r"\d+(?:\.\d+)?", axis)
            assert len(ticks) >= 3, (size, axis)
            assert all("." not in t for t in ticks), (size, axis)
            assert all(1 <= int(t) <= 20 for t in ticks), (size, axis)


def test_whole_ticks():
    from ragjudge.tui.widgets.evalpane import whole_ticks

    assert whole_ticks(list(range(1, 21))) == [1, 5, 10, 15, 20]
    assert whole_ticks(list(range(1, 101))) == [1, 20, 40, 60, 80, 100]
    assert whole_ticks([1, 2, 3]) == [1, 2, 3]
    assert whole_ticks([]) == []


# -- wide tables ---------------------------------------------------------------------------------


def column_span(table, key: str) -> tuple[int, int]:
    """Where the column is on screen, in the table's own cells (left, right), after scrolling."""
    x = 0
    for i, column in enumerate(table.ordered_columns):
        width = column.get_render_width(table)
        if column.key.value == key:
            if i < table.fixed_columns:
                return x, x + width
            return x - int(table.scroll_x), x + width - int(table.scroll_x)
        x += width
    raise KeyError(key)


def fully_visible(table, key: str) -> bool:
    fixed = sum(c.get_render_width(table) for c in table.ordered_columns[:table.fixed_columns])
    left, right = column_span(table, key)
    return left >= (0 if key == "run" else fixed) and right <= table.scrollable_content_region.width


def test_wide_overview_scrolls_with_arrows_shows_hidden_columns_and_new_measures(demo):
    asyncio.run(_wide_overview(demo))


async def _wide_overview(demo) -> None:
    from textual.widgets import DataTable, TabbedContent

    from ragjudge.tui.evalapp import evaluation_app

    app = evaluation_app(demo)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen) and app.screen.snapshot)
        screen = app.screen
        await pilot.pause()
        table = screen.query_one("#overview-table", DataTable)
        assert app.focused is table
        measures = list(screen.snapshot.measures)
        columns = ["settled", *measures]  # the settled column (fixed, beside the run), the measures
        hidden = [m for m in measures if not fully_visible(table, m)]
        assert hidden, "the demo's scorecard fits: the test needs a wider table"
        cue = str(screen.query_one("#overview-table-cue").render())
        assert f"{len(hidden)} more ▶" in cue and "◀" not in cue
        for _ in columns:
            await pilot.press("right")
        await pilot.pause(0.6)  # the scroll animates
        assert screen.query_one(TabbedContent).active == "overview"
        assert table.cursor_coordinate.column == len(columns)
        assert fully_visible(table, columns[-1]) and table.scroll_x > 0
        cue = str(screen.query_one("#overview-table-cue").render())
        left = [m for m in measures if not fully_visible(table, m)]
        assert f"◀ {len(left)} more" in cue and "▶" not in cue
        for _ in columns:
            await pilot.press("left")
        await pilot.pause(0.6)
        assert table.scroll_x == 0
        await pilot.press("plus", *"nDCG@20", "enter")
        await wait_for(pilot, lambda: "nDCG@20" in screen.snapshot.measures)
        await pilot.pause(0.6)
        assert table.cursor_coordinate.column == len(measures) + 2  # after the run and settled columns
        assert fully_visible(table, "nDCG@20")
        await pilot.press("p")  # tabs move with their letters, and the table has the keys
        await pilot.pause()
        assert app.focused is screen.query_one("#per-query-table", DataTable)
        await pilot.press("right")
        assert screen.query_one(TabbedContent).active == "per-query"
