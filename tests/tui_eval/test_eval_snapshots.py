"""Snapshots of each tab of the evaluation screen on the demo project (pytest-textual-snapshot).

Regenerate after an intended change with
``pytest tests/tui_eval/test_eval_snapshots.py --snapshot-update`` and look at the report. The
clock of the header is frozen; bootstrap intervals and comparisons use fixed seeds.
"""

from __future__ import annotations

import time

import pytest
from textual.widgets import DataTable

from ragjudge.tui.evalapp import evaluation_app
from ragjudge.tui.screens.evaluation import EvaluationScreen

pytestmark = pytest.mark.slow

SIZE = (140, 45)


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch):
    monkeypatch.setattr(EvaluationScreen, "clock", staticmethod(lambda snapshot: "12:00:00"))


async def ready(pilot) -> EvaluationScreen:
    end = time.monotonic() + 30
    app = pilot.app
    def quiet() -> bool:
        screen = app.screen
        return (isinstance(screen, EvaluationScreen) and screen.snapshot is not None
                and screen.details is not None and screen.details.version == screen.snapshot.version
                and not any(screen._busy.values()))

    while not quiet():
        assert time.monotonic() < end
        await pilot.pause(0.05)
    await pilot.pause()
    return app.screen


def tab(key: str, settle=None):
    async def run_before(pilot) -> None:
        screen = await ready(pilot)
        if key:
            await pilot.press(key)
        end = time.monotonic() + 30
        while not ((settle is None or settle(screen)) and screen.requests.empty()
                   and not any(screen._busy.values())):
            assert time.monotonic() < end
            await pilot.pause(0.05)
        await pilot.pause(0.3)

    return run_before


@pytest.mark.parametrize(("name", "key", "settle"), [
    ("overview", "", None),
    ("per_query", "p", lambda s: s.snapshot.rows is not None
     and s.query_one("#per-query-table", DataTable).row_count == len(s.snapshot.rows.query_ids)),
    ("curves", "v", None),
    ("strata", "s", lambda s: s.snapshot.strata_field is not None
     and s.query_one("#strata-table", DataTable).row_count > 0),
    ("compare", "c", lambda s: s.query_one("#compare-table", DataTable).row_count > 0),
])
def test_each_tab_on_the_demo(snap_compare, demo, name, key, settle):
    assert snap_compare(evaluation_app(demo), terminal_size=SIZE, run_before=tab(key, settle))
