"""The judging service's SQL on PostgreSQL: the service tests that need only a project, run on a
fresh PostgreSQL database (skipped without ``RAGJUDGE_TEST_PG``), plus one Pilot session."""

from __future__ import annotations

import pytest
import test_judging_service as service
from tui_project import build_project, sync

from ragjudge.services.events import annotators as J_annotators
from ragjudge.services.events import state as J_state
from ragjudge.services.labels import events as J_events
from ragjudge.services.labels import queuecounts as J_counts
from ragjudge.tui import make_app

PROJECT_TESTS = [
    service.test_flag_and_comment_are_marks_beside_the_grade,
    service.test_undo_walks_back_one_event_at_a_time,
    service.test_pool_is_the_union_of_top_k_without_duplicates,
    service.test_depth_order_offers_every_querys_top_ranks_first,
    service.test_resume_at_first_unjudged_pair,
    service.test_skipped_pairs_come_back_after_the_rest,
    service.test_queue_follows_an_assignment,
    service.test_totals_count_the_pool_and_what_is_handled,
    service.test_recheck_does_not_replace_the_current_label,
    service.test_facets_and_nuggets_are_append_only_per_annotator,
]


@pytest.mark.postgres
@pytest.mark.parametrize("test", PROJECT_TESTS, ids=lambda t: t.__name__.removeprefix("test_"))
def test_on_postgres(pg_url, test):
    project = build_project(pg_url)
    try:
        test(project)
    finally:
        project.close()


@pytest.mark.postgres
@sync
async def test_judging_session_on_postgres(pg_url):
    project = build_project(pg_url)
    J_annotators.mark_guidelines_seen(project, "alice")
    J_events.record_label(project, annotator="zoe", query_id="q1", chunk_id="c02", grade=1)
    assert [row["annotator"] for row in J_counts.annotator_progress(project)] == ["alice", "zoe"]
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("2", "3", "u")
        await app.workers.wait_for_complete()
        assert app.screen.queue.totals == {"pairs": 28, "handled": 1}
    assert [s.grade for s in [J_state.current_label(project, "alice", q, c) for q, c in
                              [("q1", "c02"), ("q1", "c09")]]].count(2) == 1
    project.close()
