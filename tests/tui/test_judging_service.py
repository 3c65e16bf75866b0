"""services.judging: label events, undo, the queue's blind order, depth rounds, resume, rechecks."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from ragjudge.errors import UsageError
from ragjudge.services.events import annotators as J_annotators
from ragjudge.services.events import marks as J_marks
from ragjudge.services.events import state as J_state
from ragjudge.services.labels import events as J_events
from ragjudge.services.labels import facets as J_facets
from ragjudge.services.labels import queue as J_queue
from ragjudge.store.schema import Annotator, Label


def walk(queue: J_queue.JudgingQueue, grade: int = 1, limit: int = 100) -> list[tuple[str, str]]:
    """Grade every pair of the queue in order; returns the pairs as visited."""
    seen = []
    view = queue.first()
    while view is not None and len(seen) < limit:
        seen.append((view.query_id, view.chunk_id))
        event = J_events.record_label(queue.project, annotator=queue.annotator, query_id=view.query_id,
                               chunk_id=view.chunk_id, grade=grade)
        queue.note_event(view.query_id, view.chunk_id,
                         J_state.LabelState(event, grade, False, None, None, None, "tui"))
        view = queue.after(view.position)
    return seen


def test_record_label_creates_annotator_and_checks_scale(project):
    event = J_events.record_label(project, annotator="ann", query_id="q1", chunk_id="c02", grade=3,
                           duration_ms=1234)
    with project.read() as s:
        row = s.get(Label, event)
        assert (row.grade, row.duration_ms, row.source, row.annotator) == (3, 1234, "tui", "ann")
        assert s.get(Annotator, "ann") is not None
    for bad in (4, -1, True, "2"):
        with pytest.raises(UsageError):
            J_events.record_label(project, annotator="ann", query_id="q1", chunk_id="c02", grade=bad)


def test_flag_and_comment_are_marks_beside_the_grade(project):
    J_events.record_label(project, annotator="a", query_id="q1", chunk_id="c02", grade=2)
    J_events.flag_pair(project, annotator="a", query_id="q1", chunk_id="c02", note="check")
    J_events.comment_pair(project, annotator="a", query_id="q1", chunk_id="c02", note="later")
    state = J_state.current_label(project, "a", "q1", "c02")
    assert (state.grade, state.note) == (2, None)  # no label event for a flag or a comment
    assert J_marks.current_marks(project, "a", "q1", "c02") == J_marks.PairMarks(True, "check", "later")


def test_undo_walks_back_one_event_at_a_time(project):
    e1 = J_events.record_label(project, annotator="a", query_id="q1", chunk_id="c02", grade=1)
    e2 = J_events.record_label(project, annotator="a", query_id="q1", chunk_id="c09", grade=2)
    e3 = J_events.record_label(project, annotator="a", query_id="q1", chunk_id="c02", grade=3)
    J_events.record_label(project, annotator="b", query_id="q1", chunk_id="c02", grade=0)  # not a's
    u1 = J_events.undo_last(project, "a")
    assert (u1.undone_id, u1.grade) == (e3, 1)  # c02 back to its grade before e3
    assert J_state.current_label(project, "a", "q1", "c02").grade == 1
    u2 = J_events.undo_last(project, "a")
    assert (u2.undone_id, u2.chunk_id, u2.grade) == (e2, "c09", None)
    u3 = J_events.undo_last(project, "a")
    assert (u3.undone_id, u3.grade) == (e1, None)
    assert J_events.undo_last(project, "a") is None
    assert J_state.current_label(project, "b", "q1", "c02").grade == 0
    with project.read() as s:  # nothing was updated or deleted: 4 labels + 3 undo events
        assert len(s.scalars(select(Label)).all()) == 7


def test_depth_rounds():
    assert J_queue.depth_rounds(10) == (1, 2, 3, 5, 10)
    assert J_queue.depth_rounds(20) == (1, 2, 3, 5, 10, 20)
    assert J_queue.depth_rounds(100) == (1, 2, 3, 5, 10, 20, 50, 100)
    assert J_queue.depth_rounds(4) == (1, 2, 3, 4)
    assert J_queue.depth_rounds(1) == (1,)


def test_pool_is_the_union_of_top_k_without_duplicates(project):
    queue = J_queue.JudgingQueue(project, "a", depth=2, order="query")
    seen = walk(queue)
    # top-2 of bm25 and dense per query (hand-worked from the fixture's rankings)
    expected = {("q1", "c02"), ("q1", "c09"), ("q2", "c03"), ("q2", "c12"),
                ("q3", "c04"), ("q3", "c10"), ("q4", "c05"), ("q4", "c11")}
    assert len(seen) == len(set(seen)) == 8
    assert set(seen) == expected


@pytest.mark.slow
def test_depth_order_offers_every_querys_top_ranks_first(project):
    seen = walk(J_queue.JudgingQueue(project, "a", depth=5, order="depth"))
    first_round = {("q1", "c02"), ("q1", "c09"), ("q2", "c03"), ("q2", "c12"),
                   ("q3", "c04"), ("q3", "c10"), ("q4", "c05"), ("q4", "c11")}
    # round 1 (rank 1 of either run) = these 8 (each query's two runs put them at 1 and 2),
    # so the first 8 pairs are exactly the rank-1 pairs, in query order
    assert set(seen[:8]) == first_round
    assert [q for q, _ in seen[:8]] == sorted(q for q, _ in seen[:8])
    assert len(seen) == len(set(seen))


def test_query_order_finishes_a_query_first(project):
    seen = walk(J_queue.JudgingQueue(project, "a", depth=5, order="query"))
    queries = [q for q, _ in seen]
    assert queries == sorted(queries)  # q1's whole pool, then q2's, ...
    assert queries.count("q1") == 7  # union of the two top-5 lists of q1


def test_blind_order_is_stable_per_annotator_and_differs_between_annotators(project):
    def order(name: str) -> list[tuple[str, str]]:
        queue = J_queue.JudgingQueue(project, name, depth=5, order="query")
        out, view = [], queue.first()
        while view is not None:
            out.append((view.query_id, view.chunk_id))
            view = queue.step(view.position, +1)
        return out

    alice = order("alice")
    assert alice == order("alice")
    assert sorted(alice) == sorted(order("bob"))
    assert alice != order("bob")


@pytest.mark.slow
def test_resume_at_first_unjudged_pair(project):
    queue = J_queue.JudgingQueue(project, "a", depth=5)
    full = walk(J_queue.JudgingQueue(project, "shadow", depth=5))  # same pool, another order
    assert len(full) == 28
    view = queue.first()
    done = []
    for _ in range(5):
        done.append((view.query_id, view.chunk_id))
        J_events.record_label(project, annotator="a", query_id=view.query_id, chunk_id=view.chunk_id, grade=2)
        queue.note_event(view.query_id, view.chunk_id, J_state.current_label(project, "a", view.query_id, view.chunk_id))
        view = queue.after(view.position)
    expected_next = (view.query_id, view.chunk_id)
    fresh = J_queue.JudgingQueue(project, "a", depth=5).first()  # a restart
    assert (fresh.query_id, fresh.chunk_id) == expected_next
    assert expected_next not in done


def test_skipped_pairs_come_back_after_the_rest(project):
    queue = J_queue.JudgingQueue(project, "a", depth=1, order="query")
    first = queue.first()
    J_events.skip_pair(project, annotator="a", query_id=first.query_id, chunk_id=first.chunk_id)
    queue.note_event(first.query_id, first.chunk_id, J_state.current_label(project, "a", first.query_id, first.chunk_id))
    rest = walk(queue)
    assert rest[-1] == (first.query_id, first.chunk_id)
    assert len(rest) == 8


def test_subset_by_queries_and_category(project):
    assert J_queue.JudgingQueue(project, "a", queries=["q3", "q1"]).query_ids == ["q1", "q3"]
    assert J_queue.JudgingQueue(project, "a", category="tracking").query_ids == ["q2"]
    with pytest.raises(UsageError):
        J_queue.JudgingQueue(project, "a", queries=["nope"])
    with pytest.raises(UsageError):
        J_queue.JudgingQueue(project, "a", runs=["nope"])
    only_bm25 = walk(J_queue.JudgingQueue(project, "a", runs=["bm25"], depth=1))
    assert sorted(only_bm25) == [("q1", "c02"), ("q2", "c03"), ("q3", "c04"), ("q4", "c05")]


def test_queue_follows_an_assignment(project):
    from ragjudge.store.schema import Assignment

    J_annotators.ensure_annotator(project, "a")
    project.write(lambda s: s.add_all([Assignment(annotator="a", query_id="q2", chunk_id="c07"),
                                       Assignment(annotator="a", query_id="q4", chunk_id="c05")]))
    seen = walk(J_queue.JudgingQueue(project, "a", depth=10))
    assert sorted(seen) == [("q2", "c07"), ("q4", "c05")]


@pytest.mark.slow
def test_totals_count_the_pool_and_what_is_handled(project):
    queue = J_queue.JudgingQueue(project, "a", depth=5)
    assert queue.count_totals() == {"pairs": 28, "handled": 0}
    walk(queue, limit=3)
    assert queue.totals["handled"] == 3
    assert J_queue.JudgingQueue(project, "a", depth=5).count_totals() == {"pairs": 28, "handled": 3}


def test_recheck_does_not_replace_the_current_label(project):
    queue = J_queue.JudgingQueue(project, "a", depth=5, recheck=0.9)
    walk(queue, grade=2, limit=8)
    recheck = None
    for _ in range(50):
        recheck = queue.maybe_recheck(None)
        if recheck is not None:
            break
    assert recheck is not None and recheck.recheck and recheck.state is None
    J_events.record_label(project, annotator="a", query_id=recheck.query_id, chunk_id=recheck.chunk_id,
                   grade=0, source="recheck")
    assert J_state.current_label(project, "a", recheck.query_id, recheck.chunk_id).grade == 2
    undo = J_events.undo_last(project, "a")
    assert undo.source == "recheck"
    assert J_state.current_label(project, "a", recheck.query_id, recheck.chunk_id).grade == 2


def test_facets_and_nuggets_are_append_only_per_annotator(project):
    facet = J_facets.add_facet(project, "q1", "timing")
    J_facets.set_facet_link(project, annotator="a", facet_id=facet, chunk_id="c02", covered=True)
    assert [f.covered for f in J_facets.facets_for(project, "q1", annotator="a", chunk_id="c02")] == [True]
    assert [f.covered for f in J_facets.facets_for(project, "q1", annotator="b", chunk_id="c02")] == [False]
    J_facets.set_facet_link(project, annotator="a", facet_id=facet, chunk_id="c02", covered=False)
    assert [f.covered for f in J_facets.facets_for(project, "q1", annotator="a", chunk_id="c02")] == [False]
    J_facets.rename_facet(project, facet, "refund timing")
    assert J_facets.facets_for(project, "q1")[0].name == "refund timing"
    nugget = J_facets.add_nugget(project, "q1", "5 working days", "vital")
    J_facets.set_nugget_support(project, annotator="a", nugget_id=nugget, chunk_id="c02", support="full")
    assert J_facets.nuggets_for(project, "q1", annotator="a", chunk_id="c02")[0].support == "full"
    with pytest.raises(UsageError):
        J_facets.set_nugget_support(project, annotator="a", nugget_id=nugget, chunk_id="c02", support="most")
    J_facets.remove_nugget(project, nugget)
    J_facets.remove_facet(project, facet)
    assert J_facets.facets_for(project, "q1") == [] and J_facets.nuggets_for(project, "q1") == []
