"""The evaluation screen in a long session, driven with Pilot: judging a query's unjudged pairs
from its explanation, wide tables, the curves' K axis."""

from __future__ import annotations

import asyncio
import time

from ragjudge.services import judging
from ragjudge.tui import make_app
from ragjudge.tui.screens.evaluation import EvaluationScreen
from ragjudge.tui.widgets.evalpane import ExplainModal


async def wait_for(pilot, predicate, timeout: float = 15.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "the evaluation screen did not catch up"
        await pilot.pause(0.05)


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

    app = make_app(demo, annotator="erin")
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

    from ragjudge.tui.screens.evaluation import evaluation_app

    for size in ((140, 45), (100, 30), (180, 50)):
        app = evaluation_app(demo)
        async with app.run_test(size=size) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen) and app.screen.snapshot)
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
