"""services.assignment: balance, overlap, distinct judges, incremental re-runs, progress."""

from __future__ import annotations

from collections import Counter

import pytest
from projectkit import rights
from hypothesis import given, settings
from hypothesis import strategies as st

from ragjudge.errors import UsageError
from ragjudge.services.labels import assignment as svc
from ragjudge.services.labels.events import record_label, skip_pair
from ragjudge.services.gold.pool import pool_select


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    n_pairs=st.integers(0, 120),
    n_annotators=st.integers(2, 6),
    overlap=st.floats(0, 1),
    judges=st.integers(2, 6),
    seed=st.integers(0, 10),
)
def test_plan_is_balanced_and_overlap_is_judged_by_distinct_annotators(
    n_pairs, n_annotators, overlap, judges, seed
):
    judges = min(judges, n_annotators)
    pairs = [(f"q{i % 7}", f"c{i}") for i in range(n_pairs)]
    names = [f"a{k}" for k in range(n_annotators)]
    plan = svc.plan_assignment(pairs, names, overlap=overlap, judges_per_overlap=judges, seed=seed)
    loads = plan.workloads()
    assert max(loads.values()) - min(loads.values()) <= 1
    per_pair = Counter((q, c) for items in plan.pairs.values() for q, c, _ in items)
    overlap_pairs = plan.overlap_pairs()
    assert len(overlap_pairs) == round(overlap * n_pairs)
    assert set(per_pair) == set(pairs)  # every pair assigned
    for pair, n in per_pair.items():
        assert n == (judges if pair in overlap_pairs else 1)  # distinct judges, no repeats
    assert sum(loads.values()) == n_pairs + (judges - 1) * len(overlap_pairs)


def test_plan_rejects_impossible_requests():
    with pytest.raises(UsageError, match="at least that many annotators"):
        svc.plan_assignment([("q", "c")], ["a", "b"], judges_per_overlap=3)
    with pytest.raises(UsageError, match="between 0 and 1"):
        svc.plan_assignment([("q", "c")], ["a", "b"], overlap=1.5)
    with pytest.raises(UsageError, match="twice"):
        svc.plan_assignment([("q", "c")], ["a", "a"])


def test_plan_with_one_annotator_has_no_overlap():
    plan = svc.plan_assignment([("q", "c1"), ("q", "c2")], ["solo"], overlap=0.5)
    assert plan.workloads() == {"solo": 2} and not plan.overlap_pairs()


def test_assign_stores_the_pool_and_reruns_only_add_new_pairs(project):
    plan = svc.assign(project, ["ann", "bob", "cy"], overlap=0.2, depth=5, access=rights(project))
    with project.connect() as connection:
        pool = {tuple(r) for r in connection.execute(pool_select(5))}
    assigned = {(q, c) for items in plan.pairs.values() for q, c, _ in items}
    assert assigned == pool
    assert len(plan.overlap_pairs()) == round(0.2 * len(pool))
    # deeper pool: only the new pairs are distributed, the old assignment stays
    more = svc.assign(project, ["ann", "bob", "cy"], overlap=0.2, depth=8, access=rights(project))
    with project.connect() as connection:
        deeper = {tuple(r) for r in connection.execute(pool_select(8))}
    new = {(q, c) for items in more.pairs.values() for q, c, _ in items}
    assert new == deeper - pool
    progress = svc.assignment_progress(project)
    total = sum(p["assigned"] for p in progress.values())
    assert total == len(deeper) + len(svc_overlaps(project))
    assert max(p["assigned"] for p in progress.values()) - min(
        p["assigned"] for p in progress.values()) <= 1


def svc_overlaps(project) -> set:
    from sqlalchemy import select

    from ragjudge.store.schema import Assignment

    with project.connect() as connection:
        return {tuple(r) for r in connection.execute(
            select(Assignment.query_id, Assignment.chunk_id).where(Assignment.overlap.is_(True)).distinct())}


def test_queue_restriction_and_progress(project):
    svc.assign(project, ["ann", "bob"], overlap=0.5, depth=2, access=rights(project))
    mine = svc.assigned_pairs(project, "ann")
    assert mine and svc.has_assignment(project, "ann")
    assert svc.assigned_pairs(project, "nobody") is None and not svc.has_assignment(project, "nobody")
    # the clause restricts a pool select to ann's pairs
    pool = pool_select(2).subquery()
    from sqlalchemy import select

    with project.connect() as connection:
        rows = connection.execute(
            select(pool.c.query_id, pool.c.chunk_id).where(
                svc.assignment_clause("ann", pool.c.query_id, pool.c.chunk_id))
        ).all()
    assert {tuple(r) for r in rows} == mine
    first, second = sorted(mine)[:2]
    record_label(project, annotator="ann", query_id=first[0], chunk_id=first[1], grade=1)
    skip_pair(project, annotator="ann", query_id=second[0], chunk_id=second[1])
    record_label(project, annotator="ann", query_id=first[0], chunk_id=first[1], grade=0,
                 source="recheck")
    progress = svc.assignment_progress(project)
    assert progress["ann"]["done"] == 2 and progress["bob"]["done"] == 0
    assert progress["ann"]["assigned"] == len(mine)


def test_assign_unknown_run_and_replace(project):
    with pytest.raises(UsageError, match="no run named"):
        svc.assign(project, ["ann", "bob"], runs=["dense"], access=rights(project))
    svc.assign(project, ["ann", "bob"], depth=2, access=rights(project))
    svc.assign(project, ["cy", "dee"], depth=2, replace=True, access=rights(project))
    names = set(svc.assignment_progress(project))
    assert names == {"cy", "dee"}
