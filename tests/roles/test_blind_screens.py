"""Blind means blind: rendered as annotator ``ana`` (``dora`` is the lead), no screen of the app
shows a grade ``ben`` gave to a pair ana has not judged, nor the gold grade or a run's rank of
such a pair; the lead sees them. Assertions are on the text the widgets render."""

from __future__ import annotations

import asyncio
import io

import pytest
from projectkit import make_small_project, rights
from rich.console import Console
from textual.widgets import DataTable, Static
from pilotkit import wait_for

from ragjudge.services.access import roster
from ragjudge.services.access import visibility
from ragjudge.services.labels.events import record_label
from ragjudge.tui import make_app
from ragjudge.tui.screens.adjudicate import AdjudicateScreen
from ragjudge.tui.screens.agreement import AgreementScreen
from ragjudge.tui.screens.evaluation import EvaluationScreen
from ragjudge.tui.screens.prompts import Refused
from ragjudge.tui.widgets.evalpane import ExplainModal

pytestmark = pytest.mark.slow

#: bm25 ranks q1's chunks c05 (1), c06 (2), c07 (3), ... c14 (10)
BEN_ONLY = ("c07", "c09")


@pytest.fixture
def project(tmp_path):
    """q1/c05: ana 2, ben 0 (disputed); ben alone graded q1/c07 (3) and q1/c09 (1); dora leads."""
    with make_small_project(str(tmp_path / "p.db")) as project:
        record_label(project, annotator="ana", query_id="q1", chunk_id="c05", grade=2)
        record_label(project, annotator="ben", query_id="q1", chunk_id="c05", grade=0)
        record_label(project, annotator="ben", query_id="q1", chunk_id="c07", grade=3)
        record_label(project, annotator="ben", query_id="q1", chunk_id="c09", grade=1)
        roster.add(project, "dora", role="lead", access=rights(project))
        yield project


def rendered(screen) -> str:
    """Every Static's content and every DataTable cell of ``screen``, as text, every tab."""
    console = Console(width=200, record=True, file=io.StringIO())
    for widget in screen.query(Static):
        console.print(widget.content)
    for table in screen.query(DataTable):
        for row in range(table.row_count):
            console.print(" | ".join(str(cell) for cell in table.get_row_at(row)))
    return console.export_text()


# -- the agreement screen --------------------------------------------------------------------


def _agreement(project, viewer: str) -> dict:
    async def run() -> dict:
        app = make_app(project, annotator=viewer)
        async with app.run_test(size=(140, 45)) as pilot:
            await pilot.pause()
            screen = AgreementScreen(project)
            app.push_screen(screen)
            await wait_for(pilot, lambda: screen.view is not None)
            await pilot.press("d")
            await pilot.press("enter")
            await pilot.pause()
            opened = app.screen
            text = rendered(screen) + rendered(opened)
            return {"text": text, "rows": screen.query_one("#disputed-table", DataTable).row_count,
                    "opened": opened, "app": app}

    return asyncio.run(run())


def test_an_annotator_sees_other_grades_on_the_agreement_screen_only_of_pairs_she_judged(project):
    record_label(project, annotator="cy", query_id="q1", chunk_id="c07", grade=0)  # ben 3: disputed
    seen = _agreement(project, "ana")
    assert seen["rows"] == 1 and "ana=2, ben=0" in seen["text"]
    assert "c07" not in seen["text"] and "ben=3" not in seen["text"]
    assert "1 more disputed pairs not shown" in seen["text"]
    assert "pairs judged" in seen["text"], "the statistics stay"
    assert not isinstance(seen["opened"], AdjudicateScreen), "Enter adjudicates only for a lead"
    assert isinstance(seen["opened"], Refused)


def test_the_lead_sees_every_grade_on_the_agreement_screen(project):
    seen = _agreement(project, "dora")
    assert seen["rows"] == 1
    assert "ana=2, ben=0" in seen["text"]
    assert isinstance(seen["opened"], AdjudicateScreen)


def test_with_blind_off_an_annotator_sees_the_disputes_but_cannot_adjudicate(project):
    visibility.set_blind(project, False, access=rights(project))
    seen = _agreement(project, "ana")
    assert seen["rows"] == 1 and "ana=2, ben=0" in seen["text"]
    assert not isinstance(seen["opened"], AdjudicateScreen)


# -- the adjudication screen -------------------------------------------------------------------


def _adjudicate_screen(project, viewer: str) -> tuple[str, bool, list[str]]:
    async def run() -> tuple[str, bool, list[str]]:
        app = make_app(project, annotator=viewer)
        async with app.run_test(size=(140, 45)) as pilot:
            await pilot.pause()
            screen = AdjudicateScreen(project, "q1", "c05")
            app.push_screen(screen)
            await pilot.pause()
            await pilot.pause()
            notes = [n.message for n in app._notifications]
            return rendered(screen), app.screen is screen, notes

    return asyncio.run(run())


def test_the_adjudication_screen_refuses_an_annotator_and_shows_nothing(project):
    text, open_, notes = _adjudicate_screen(project, "ana")
    assert not open_
    assert "ben" not in text
    assert any("Only a lead may adjudicate" in n for n in notes)


def test_the_adjudication_screen_shows_the_lead_every_label(project):
    text, open_, _ = _adjudicate_screen(project, "dora")
    assert open_ and "ben" in text and "ana" in text


def test_a_non_lead_cannot_adjudicate_through_the_services_either(project):
    from ragjudge.errors import UsageError
    from ragjudge.services.gold.adjudication import adjudicate
    from ragjudge.services.gold.pairs import pair_detail

    with pytest.raises(UsageError, match="Only a lead may adjudicate"):
        adjudicate(project, query_id="q1", chunk_id="c05", grade=1, reason="x",
                   access=rights(project, "ana"))
    assert not pair_detail(project, "q1", "c05", access=rights(project)).adjudications


# -- the evaluation screen's explanation -----------------------------------------------------------


def _explanation(project, viewer: str) -> str:
    async def run() -> str:
        app = make_app(project, annotator=viewer)
        async with app.run_test(size=(140, 45)) as pilot:
            await pilot.pause()
            screen = EvaluationScreen(project)
            app.push_screen(screen)
            await wait_for(pilot, lambda: screen.snapshot is not None)
            await pilot.press("p")
            await wait_for(pilot, lambda: screen.snapshot.rows is not None and screen._query_rows)
            assert screen._query_rows[0] == "q1"
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, ExplainModal))
            return rendered(app.screen) + rendered(screen)

    return asyncio.run(run())


def test_the_explanation_hides_grades_and_ranks_of_pairs_the_annotator_has_not_judged(project):
    text = _explanation(project, "ana")
    assert "nDCG@10 for query q1" in text
    for chunk in BEN_ONLY:
        assert chunk not in text
    assert "not shown: you have not judged this pair" in text
    assert "Ideal ranking: not shown" in text
    assert "grade   3" not in text and "grade   1" not in text
    own = next(line for line in text.splitlines() if "c05" in line and line.strip().startswith("1"))
    assert own.split()[2] == "0", "ana sees the gold grade of the pair she judged"


def test_the_lead_sees_the_whole_explanation(project):
    text = _explanation(project, "dora")
    for chunk in BEN_ONLY:
        assert chunk in text
    assert "not shown" not in text
    assert "grade   3" in text


def test_may_see_pair_is_the_one_rule(project):
    def see(name, chunk):
        return rights(project, name).may_see_pair("q1", chunk)

    assert see("ana", "c05") and not see("ana", "c07")
    assert see("dora", "c07") and see("ben", "c07")
    assert not see("stranger", "c05") and not see(None, "c05")
    visibility.set_blind(project, False, access=rights(project))
    assert see("ana", "c07") and not see(None, "c07"), "an unknown identity sees nothing more"
