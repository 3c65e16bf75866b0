"""``annotate --until-settled``: judging stops once every comparison of adjacent runs on the
evaluation screen is settled, and says so; through the judging queue (what ``annotate`` opens)
and on the judging screen, on the one-pair project of ``settledkit`` (A - B = (1 - b2) / 4:
open until b2 is judged, settled whatever its grade)."""

from __future__ import annotations

import pytest
from settledkit import ONE_GRADES, label_count

from ragjudge.services.events.state import LabelState
from ragjudge.services.labels.events import record_label
from ragjudge.services.project.database import Project
from ragjudge.services.scoring.settled import judging_queue

STOP = "Every comparison of adjacent runs is settled"


def grade_and_move(queue, view, grade: int):
    """Record ``grade`` for the pair on view, let the settle order's weighing finish, move on."""
    event = record_label(queue.project, annotator=queue.annotator, query_id=view.query_id,
                         chunk_id=view.chunk_id, grade=grade)
    queue.note_event(view.query_id, view.chunk_id, LabelState(event, grade, False, None, None, None, "tui"))
    queue.settle.wait(None)
    return queue.after(view.position)


@pytest.mark.parametrize("grade", [0, 1])
def test_the_queue_stops_once_the_deciding_pair_is_judged(one_db, grade):
    with Project.open(one_db) as project:
        queue = judging_queue(project, "ana", order="settle", until_settled=True, wait=None)
        view = queue.first()
        assert (view.query_id, view.chunk_id) == ("q2", "b2") and queue.stopped is None
        judged = 0
        while view is not None:
            judged += 1
            # ana grades the pairs ref judged as ref did, so only b2 changes the gold
            view = grade_and_move(queue, view, ONE_GRADES.get((view.query_id, view.chunk_id), grade))
        assert queue.stopped is not None and queue.stopped.startswith(STOP)
        assert "1 certain" in queue.stopped if grade == 0 else "1 tied" in queue.stopped
    # b2, then at most the pair given while its weighing was under way: not ana's 6 pairs
    assert 1 <= judged <= 2
    assert label_count(one_db) == len(ONE_GRADES) + judged


def test_without_until_settled_judging_goes_on(one_db):
    with Project.open(one_db) as project:
        queue = judging_queue(project, "ana", order="settle", wait=None)
        view, judged = queue.first(), 0
        while view is not None:
            judged += 1
            view = grade_and_move(queue, view, ONE_GRADES.get((view.query_id, view.chunk_id), 0))
        assert queue.stopped is None
    assert judged == 6  # every pool pair


def test_a_settled_project_gives_no_pair_and_says_why(one_db):
    with Project.open(one_db) as project:
        record_label(project, annotator="ref", query_id="q2", chunk_id="b2", grade=0)
        queue = judging_queue(project, "ana", order="depth", until_settled=True, wait=None)
        assert queue.first() is None
        assert queue.stopped.startswith(STOP) and "more labels would not change the ranking" in queue.stopped
        # the plain queue still has every pair for ana
        assert judging_queue(project, "ana", order="depth").first() is not None


@pytest.mark.slow
def test_the_judging_screen_exits_with_the_message(one_db):
    import asyncio

    from ragjudge.tui import make_app

    messages: list[str | None] = []
    pressed: list[str] = []
    shown: list[str] = []

    async def drive() -> None:
        with Project.open(one_db) as project:
            app = make_app(project, annotator="ana", start="judge", order="settle", until_settled=True)
            leave = app.exit

            def exit_(*args, **kwargs):
                messages.append(kwargs.get("message"))
                leave(*args, **kwargs)

            app.exit = exit_
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.pause()
                if not hasattr(app.screen, "queue"):  # the guidelines, shown once
                    await pilot.press("enter")
                    await pilot.pause()
                shown.append(str(app.screen.query_one("#progress").render()))
                for _ in range(6):
                    if messages:
                        break
                    screen = app.screen
                    pair = (screen.pair.query_id, screen.pair.chunk_id)
                    key = "y" if ONE_GRADES.get(pair, 0) == 1 else "n"
                    pressed.append(key)
                    await pilot.press(key)
                    screen.queue.settle.wait(None)
                    await pilot.pause()

    asyncio.run(drive())
    # the progress line says what --until-settled waits for: b2 open, one comparison
    assert "1 of 1 comparisons open" in shown[0], shown
    assert messages and messages[0].startswith(STOP)
    assert f"({len(pressed)} labels this session.)" in messages[0]
    assert 1 <= len(pressed) <= 2


def test_the_queue_says_how_many_comparisons_are_open_until_they_settle(one_db):
    """With --until-settled the queue tells how many comparisons of adjacent runs are still open
    (what the judging screen's progress line shows): the one comparison while b2 is unjudged,
    none once it is; without --until-settled it does not weigh the statuses and says nothing."""
    with Project.open(one_db) as project:
        # a pair ana has judged already: the settle order drops it from each weighing (and keeps
        # the count of open comparisons doing so)
        record_label(project, annotator="ana", query_id="q1", chunk_id="a1", grade=1)
        queue = judging_queue(project, "ana", order="settle", until_settled=True, wait=None)
        view = queue.first()
        queue.settle.wait(None)
        assert queue.still_open == (1, 1)
        assert (view.query_id, view.chunk_id) == ("q2", "b2")
        grade_and_move(queue, view, 0)
        assert queue.still_open == (0, 1)
        plain = judging_queue(project, "ben", order="settle", wait=None)
        plain.first()
        plain.settle.wait(None)
        assert plain.still_open is None
