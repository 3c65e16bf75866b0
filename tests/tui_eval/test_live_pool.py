"""The pool the evaluation screen counts (every run's top 10, distinct (query, chunk) pairs,
per query and in all): once the runs are laid out over the labels' pair numbers, the numbered
pairs are counted from the pool flags and only the others told apart by their ids; the counts
are those of a plain set of the runs' top 10, with pairs numbered after the labels, and with a
query the runs rank that the engine's queries do not list (in the size, in no query's row)."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from ragjudge.services.events.labels import read_labels
from ragjudge.services.labels import events as judging
from ragjudge.services.runs import stored
from ragjudge.services.scoring.livespace import POOL_DEPTH, PairSpace, Queries, read_queries


def _runs(project) -> dict:
    return {n: stored.project_run(project, n) for n in stored.project_run_names(project)}


def _plain_pool(runs: dict, listed: list[str]) -> tuple[list[int], int]:
    """Per listed query and in all: the distinct pairs of every run's top POOL_DEPTH, as sets."""
    pairs = {(q, c) for run in runs.values() for q, ranked in run.to_ranked().items()
             for c in ranked[:POOL_DEPTH]}
    per_query = Counter(q for q, _ in pairs)
    return [per_query.get(q, 0) for q in listed], len(pairs)


def _space(project, runs: dict, drop: str | None) -> PairSpace:
    queries = read_queries(project)
    keep = [i for i, q in enumerate(queries.ids) if q != drop]
    listed = Queries([queries.ids[i] for i in keep], queries.id_bytes[keep],
                     [queries.categories[i] for i in keep], [queries.meta[i] for i in keep])
    space = PairSpace(listed, runs)
    with project.connect() as connection:
        space.number_labels(read_labels(connection))
    return space


@pytest.mark.parametrize("drop", [False, True], ids=["every-query", "a-query-not-listed"])
def test_the_pool_counted_from_the_layouts_equals_a_set_of_the_top_entries(demo, drop):
    rnd = random.Random(3)
    runs = _runs(demo)
    ranked = {n: r.to_ranked() for n, r in runs.items()}
    for _ in range(60):  # labels on ranked pairs, some below the pool's depth
        run = rnd.choice(sorted(ranked))
        q = rnd.choice(sorted(ranked[run]))
        judging.record_label(demo, annotator=rnd.choice(["ana", "ben"]), query_id=q,
                             chunk_id=rnd.choice(ranked[run][q][:15]), grade=rnd.randint(0, 3))
    dropped = sorted(ranked[sorted(ranked)[0]])[0] if drop else None
    space = _space(demo, runs, dropped)
    assert dropped not in space.query_ids
    # pairs numbered after the labels (as a new label numbers them): the rest of one query's top
    q = space.query_ids[1]
    top = [c for r in ranked.values() for c in r.get(q, [])[:POOL_DEPTH]]
    space.numbers_of(np.full(len(top), space.row[q]), top)
    per_query, total = _plain_pool(runs, space.query_ids)
    assert space.pool_rows.tolist() == per_query
    assert space.pool_total == total > sum(per_query) if drop else space.pool_total == total == sum(per_query)
    # and the counts of every entry told apart by its ids (before the runs are laid out)
    whole = space._distinct_pairs([space._top_entries(n, r) for n, r in runs.items()])
    assert whole[0].tolist() == per_query and whole[1] == total
