"""Snapshots of every judging-app screen on the small project (pytest-textual-snapshot).

Regenerate after an intended change with ``pytest tests/tui/test_snapshots.py --snapshot-update``
and look at the report. Nothing on these screens depends on the clock (labels per hour appear
only after a label of the session), and the database path is relative.
"""

from __future__ import annotations

import pytest
from textual.widgets import Input
from tui_project import build_project

from ragjudge.services.events import annotators as J_annotators
from ragjudge.services.events import state as J_state
from ragjudge.services.labels import events as J_events
from ragjudge.services.labels import facets as J_facets
from ragjudge.services.labels import queue as J_queue
from ragjudge.tui import make_app

pytestmark = pytest.mark.slow

SIZE = (120, 40)


@pytest.fixture
def snap_project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    project = build_project("parcel.db")
    yield project
    project.close()


async def settle(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    for widget in pilot.app.screen.query(Input):
        widget.cursor_blink = False
    await pilot.pause()


def seen(project, name: str = "alice") -> None:
    J_annotators.mark_guidelines_seen(project, name)


def test_home(snap_compare, snap_project):
    J_events.record_label(snap_project, annotator="zoe", query_id="q1", chunk_id="c02", grade=3)
    J_events.skip_pair(snap_project, annotator="zoe", query_id="q2", chunk_id="c03")
    assert snap_compare(make_app(snap_project, annotator="alice"), terminal_size=SIZE, run_before=settle)


def test_judge_first_pair(snap_compare, snap_project):
    seen(snap_project)
    assert snap_compare(make_app(snap_project, annotator="alice", start="judge"), terminal_size=SIZE,
                        run_before=settle)


def test_judge_with_earlier_label_facets_and_nuggets(snap_compare, snap_project):
    seen(snap_project)
    facet = J_facets.add_facet(snap_project, "q1", "how many days")
    J_facets.add_facet(snap_project, "q1", "where to see the status")
    nugget = J_facets.add_nugget(snap_project, "q1", "Refunds take 5 working days", "vital")
    J_facets.add_nugget(snap_project, "q1", "Status is under Orders")
    queue = J_queue.JudgingQueue(snap_project, "alice")
    first = queue.first()
    J_events.record_label(snap_project, annotator="alice", query_id="q1", chunk_id=first.chunk_id, grade=2)
    J_events.flag_pair(snap_project, annotator="alice", query_id="q1", chunk_id=first.chunk_id, note="ask the lead")
    J_facets.set_facet_link(snap_project, annotator="alice", facet_id=facet, chunk_id=first.chunk_id, covered=True)
    J_facets.set_nugget_support(snap_project, annotator="alice", nugget_id=nugget, chunk_id=first.chunk_id,
                         support="partial")

    async def back_to_first(pilot) -> None:
        await pilot.press("left")
        await settle(pilot)

    assert snap_compare(make_app(snap_project, annotator="alice", start="judge"), terminal_size=SIZE,
                        run_before=back_to_first)


def test_judge_markup_chunk_literal(snap_compare, snap_project):
    seen(snap_project)

    async def to_markup_chunk(pilot) -> None:
        screen = pilot.app.screen
        for _ in range(8):
            if screen.pair.chunk_id == "c01":
                break
            await pilot.press("right")
        await settle(pilot)

    app = make_app(snap_project, annotator="alice", start="judge", order="query", queries=["q1"],
                   show_source=True)
    assert snap_compare(app, terminal_size=SIZE, run_before=to_markup_chunk)


def test_help(snap_compare, snap_project):
    seen(snap_project)
    assert snap_compare(make_app(snap_project, annotator="alice", start="judge"), terminal_size=SIZE,
                        press=["question_mark"], run_before=settle)


def test_guidelines_first_time(snap_compare, snap_project):
    assert snap_compare(make_app(snap_project, annotator="newbie", start="judge"), terminal_size=SIZE,
                        run_before=settle)


def test_facets_panel(snap_compare, snap_project):
    seen(snap_project)
    J_facets.add_facet(snap_project, "q1", "how many days")
    J_facets.add_nugget(snap_project, "q1", "Refunds take 5 working days", "vital")
    assert snap_compare(make_app(snap_project, annotator="alice", start="judge"), terminal_size=SIZE,
                        press=["g"], run_before=settle)


def test_name_prompt(snap_compare, snap_project):
    assert snap_compare(make_app(snap_project, start="judge"), terminal_size=SIZE, run_before=settle)


def test_find_query(snap_compare, snap_project):
    seen(snap_project)

    async def find(pilot) -> None:
        await pilot.press("slash", *"parcel")
        await settle(pilot)

    assert snap_compare(make_app(snap_project, annotator="alice", start="judge"), terminal_size=SIZE,
                        run_before=find)


def test_queue_done(snap_compare, snap_project):
    seen(snap_project)
    queue = J_queue.JudgingQueue(snap_project, "alice", queries=["q3"])
    view = queue.first()
    while view is not None:
        J_events.record_label(snap_project, annotator="alice", query_id=view.query_id, chunk_id=view.chunk_id, grade=1)
        queue.note_event(view.query_id, view.chunk_id,
                         J_state.current_label(snap_project, "alice", view.query_id, view.chunk_id))
        view = queue.after(view.position)
    assert snap_compare(make_app(snap_project, annotator="alice", start="judge", queries=["q3"]),
                        terminal_size=SIZE, run_before=settle)
