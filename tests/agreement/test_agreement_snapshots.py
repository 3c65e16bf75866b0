"""Snapshots of the agreement and adjudication screens (pytest-textual-snapshot).

Regenerate after an intended change with
``pytest tests/agreement/test_agreement_snapshots.py --snapshot-update`` and look at the report.
Nothing shown depends on the clock or the database path.
"""

from __future__ import annotations

import pytest

from projectkit import screen_app

from ragjudge.services.labels.events import record_label
from ragjudge.tui.screens.adjudicate import AdjudicateScreen
from ragjudge.tui.screens.agreement import AgreementScreen

pytestmark = pytest.mark.slow

SIZE = (120, 40)

GRADES = {
    ("q1", "c05"): {"ann": 0, "bob": 3, "cy": 1},
    ("q1", "c06"): {"ann": 2, "bob": 2, "cy": 2},
    ("q2", "c08"): {"ann": 1, "bob": 2},
    ("q2", "c09"): {"ann": 0, "bob": 0, "cy": 0},
    ("q3", "c11"): {"ann": 3, "cy": 3},
}


def _seed(project) -> None:
    for (query, chunk), by in GRADES.items():
        for annotator, grade in by.items():
            record_label(project, annotator=annotator, query_id=query, chunk_id=chunk,
                         grade=grade, duration_ms=2500, note="partly" if annotator == "bob" else None)


async def settle(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_agreement_overview(snap_compare, project):
    _seed(project)
    assert snap_compare(screen_app(project, lambda: AgreementScreen(project)), terminal_size=SIZE,
                        run_before=settle)


def test_agreement_pairs(snap_compare, project):
    _seed(project)

    async def pairs(pilot) -> None:
        await settle(pilot)
        await pilot.press("p")
        await pilot.pause()

    assert snap_compare(screen_app(project, lambda: AgreementScreen(project)), terminal_size=SIZE,
                        run_before=pairs)


def test_adjudicate_screen(snap_compare, project):
    _seed(project)
    assert snap_compare(screen_app(project, lambda: AdjudicateScreen(project, "q1", "c05")), terminal_size=SIZE,
                        run_before=settle)
