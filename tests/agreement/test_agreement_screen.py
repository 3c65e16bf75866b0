"""The agreement and adjudication screens, driven with Pilot; assertions on the database."""

from __future__ import annotations

from projectkit import rights, screen_app

import asyncio
import io
import os
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static

from ragjudge.services.labels.events import record_label
from ragjudge.services.gold.qrels import gold_qrels
from ragjudge.tui.screens.adjudicate import AdjudicateScreen
from ragjudge.tui.screens.agreement import AgreementScreen

pytestmark = pytest.mark.slow

#: set RAGJUDGE_SCREENSHOTS=1 to refresh screenshots/agreement.svg (and .png) for people
SCREENSHOTS = Path(__file__).resolve().parents[2] / "screenshots"
WRITE_SCREENSHOTS = os.environ.get("RAGJUDGE_SCREENSHOTS") == "1"


def Host(project):
    """The ragjudge app on the agreement screen (the real app pushes it on 'a'), as ``lead``."""
    return screen_app(project, lambda: AgreementScreen(project))


def _seed(project) -> None:
    grades = {
        ("q1", "c05"): {"ann": 0, "bob": 3, "cy": 1},
        ("q1", "c06"): {"ann": 2, "bob": 2, "cy": 2},
        ("q2", "c08"): {"ann": 1, "bob": 2},
        ("q2", "c09"): {"ann": 0, "bob": 0, "cy": 0},
        ("q3", "c11"): {"ann": 3, "cy": 3},
    }
    for (query, chunk), by in grades.items():
        for annotator, grade in by.items():
            record_label(project, annotator=annotator, query_id=query, chunk_id=chunk, grade=grade,
                         duration_ms=2500, note="partly" if annotator == "bob" else None)


def _text(screen, selector: str) -> str:
    """The plain text of a Static's Rich content, as a 120-column console prints it."""
    from rich.console import Console

    console = Console(width=120, record=True, file=io.StringIO())
    console.print(screen.query_one(selector, Static).content)
    return console.export_text()


def test_statistics_then_adjudicate_a_disputed_pair_in_a_few_keys(project):
    _seed(project)
    asyncio.run(_adjudicate_in_a_few_keys(project))
    gold = {(q, c): g for q, c, g in gold_qrels(project)}
    assert gold[("q1", "c05")] == 2  # the decision, not the median (1)
    from ragjudge.services.gold.pairs import pair_detail

    decision = pair_detail(project, "q1", "c05", access=rights(project)).adjudications[-1]
    assert decision["reason"] == "fits" and decision["by"] == "lead"


async def _adjudicate_in_a_few_keys(project) -> None:
    app = Host(project)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, AgreementScreen)
        overview = _text(screen, "#overview-body")
        assert "Krippendorff's α ordinal" in overview and "Gwet's AC1" in overview
        assert "Fleiss' κ" in overview and "undefined" in overview  # 2 or 3 ratings per pair
        await pilot.press("d")
        table = screen.query_one("#disputed-table", DataTable)
        assert table.row_count == 2
        assert [str(c) for c in table.get_row_at(0)[:3]] == ["q1", "c05", "3"]  # largest spread
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, AdjudicateScreen)
        assert "partly" in _text(app.screen, "#adjudicate-labels")
        await pilot.press("2")
        await pilot.pause()
        for ch in "fits":
            await pilot.press(ch)
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, AgreementScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert str(table.get_row_at(0)[5]) == "2"
        if WRITE_SCREENSHOTS:
            await pilot.press("o")
            await pilot.pause()
            SCREENSHOTS.mkdir(exist_ok=True)
            app.save_screenshot("agreement.svg", str(SCREENSHOTS))
            await pilot.press("d")
            await pilot.pause()
            app.save_screenshot("agreement-disputed.svg", str(SCREENSHOTS))


def test_screen_updates_live_and_handles_no_labels(project):
    asyncio.run(_live(project))


async def _live(project) -> None:
    app = Host(project)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert "undefined" in _text(screen, "#overview-body")
        await pilot.press("p")
        assert "Fewer than two annotators" in _text(screen, "#pairs-body")
        _seed(project)
        screen.compute()  # what the timer does
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "5 pairs judged" in _text(screen, "#overview-body")
        await pilot.press("n")
        assert "ann" in _text(screen, "#by-annotator-body")
        await pilot.press("l")
        assert "self-agreement" in _text(screen, "#quality-body")
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, AgreementScreen)


def test_the_app_opens_the_agreement_screen_on_a(project):
    from ragjudge.tui import make_app

    _seed(project)

    async def drive() -> None:
        app = make_app(project)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            await pilot.press("a")
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert isinstance(app.screen, AgreementScreen)
            assert "Gwet's AC1" in _text(app.screen, "#overview-body")

    asyncio.run(drive())
