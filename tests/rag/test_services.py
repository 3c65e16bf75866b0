"""From a small project database (facets, nuggets, claims, entities, answers inserted with the
ORM) to RAG measure values, through ``services.rag.rag_extras``.

The run ``bm25`` of the shared small project ranks, for q1, c05 c06 … c14 (rank r holds
c(r+4)); for q3, c11 … c20 (c15 at rank 5).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sqlalchemy import select

from ragjudge.metrics.rag import (
    attribution,
    context_recall,
    coverage,
    entity_recall,
    nugget_recall,
)
from ragjudge.services.scoring.rag import rag_extras
from ragjudge.store.schema import RunEntry


def run_matrix(project, run: str = "bm25"):
    with project.connect() as connection:
        rows = connection.execute(select(RunEntry.query_id, RunEntry.chunk_id).where(RunEntry.run == run)
                                  .order_by(RunEntry.query_id, RunEntry.rank)).all()
    query_ids = sorted({q for q, _ in rows})
    depth = max(sum(1 for q2, _ in rows if q2 == q) for q in query_ids)
    matrix = np.full((len(query_ids), depth), b"", dtype="S8")
    fill_at = {q: 0 for q in query_ids}
    for q, c in rows:
        matrix[query_ids.index(q), fill_at[q]] = c.encode()
        fill_at[q] += 1
    return query_ids, matrix


def test_coverage_from_project(rag_project):
    query_ids, matrix = run_matrix(rag_project)
    facets = rag_extras(rag_project, "bm25", query_ids, matrix, ["Coverage@10"])["facets"]
    q1 = query_ids.index("q1")
    # median rule: construction covered at rank 1 (alice and bob); design at rank 5 (alice's
    # newest events: c07 withdrawn, c09 covered); renovation: alice yes, bob no -> lower median no
    assert coverage(facets, 10)[q1] == pytest.approx(2 / 3)
    assert coverage(facets, 4)[q1] == pytest.approx(1 / 3)
    assert coverage(facets, 5)[q1] == pytest.approx(2 / 3)
    assert list(facets.names[q1]) == ["construction", "design", "renovation"]
    others = [i for i, q in enumerate(query_ids) if q != "q1"]
    assert np.all(np.isnan(coverage(facets, 10)[others]))


def test_coverage_under_other_rules(rag_project):
    query_ids, matrix = run_matrix(rag_project)
    q1 = query_ids.index("q1")
    anyone = rag_extras(rag_project, "bm25", query_ids, matrix, ["Coverage@10"], rule="max")["facets"]
    assert coverage(anyone, 10)[q1] == pytest.approx(1.0)
    assert coverage(anyone, 7)[q1] == pytest.approx(2 / 3)
    bob = rag_extras(rag_project, "bm25", query_ids, matrix, ["Coverage@10"],
                     rule="annotator:bob")["facets"]
    assert coverage(bob, 10)[q1] == pytest.approx(1 / 3)
    adjudicated = rag_extras(rag_project, "bm25", query_ids, matrix, ["Coverage@10"],
                             rule="adjudicated")["facets"]  # falls back to median
    assert coverage(adjudicated, 10)[q1] == pytest.approx(2 / 3)


def test_nugget_recall_from_project(rag_project):
    query_ids, matrix = run_matrix(rag_project)
    nuggets = rag_extras(rag_project, "bm25", query_ids, matrix, ["NuggetRecall(all)@5"])["nuggets"]
    q1 = query_ids.index("q1")
    # @5: height full at rank 2; year partial at rank 1 (full only at rank 9); visitors partial
    # at rank 4 (its full support is from c20, which the run did not retrieve)
    nr = lambda k, **kw: nugget_recall(nuggets, k, **kw)[q1]  # noqa: E731
    assert nr(5, strict=True, vital_only=True) == pytest.approx(0.5)
    assert nr(5, strict=True, vital_only=False) == pytest.approx(1 / 3)
    assert nr(5, strict=False, vital_only=True) == pytest.approx(0.75)
    assert nr(5, strict=False, vital_only=False) == pytest.approx(2 / 3)
    assert nr(5, strict=False, vital_only=False, weighted=True) == pytest.approx(2.5 / 4)
    assert nr(10, strict=True, vital_only=True) == pytest.approx(1.0)
    assert math.isnan(nugget_recall(nuggets, 10, strict=False, vital_only=False)[query_ids.index("q2")])


def test_context_recall_from_project(rag_project):
    query_ids, matrix = run_matrix(rag_project)
    claims = rag_extras(rag_project, "bm25", query_ids, matrix, ["ContextRecall@5"])["claims"]
    q1 = query_ids.index("q1")
    # claim one fully supported by c07 (rank 3); claim two's newest event is "none"
    assert context_recall(claims, 10)[q1] == pytest.approx(0.5)
    assert context_recall(claims, 2)[q1] == 0.0
    assert list(claims.names[q1]) == ["claim one", "claim two"]


def test_entity_recall_from_project(rag_project):
    query_ids, matrix = run_matrix(rag_project)
    entities = rag_extras(rag_project, "bm25", query_ids, matrix, ["EntityRecall@5"])["entities"]
    q1, q3 = query_ids.index("q1"), query_ids.index("q3")
    assert entity_recall(entities, 10)[q1] == pytest.approx(2 / 3)  # the Brasília example: 2 of 3 entities found
    assert entity_recall(entities, 4)[q3] == 0.0
    assert entity_recall(entities, 5)[q3] == 1.0  # c15 at rank 5 holds the date
    assert math.isnan(entity_recall(entities, 10)[query_ids.index("q2")])


def test_attribution_from_project(rag_project):
    query_ids, matrix = run_matrix(rag_project)
    citations = rag_extras(rag_project, "bm25", query_ids, matrix, ["Attribution@10"])["citations"]
    q1, q2, q3 = (query_ids.index(q) for q in ("q1", "q2", "q3"))
    values = attribution(citations, 10)
    assert values[q1] == pytest.approx(2 / 10)  # c05 and c07 cited and retrieved; c20 not retrieved
    assert attribution(citations, 3)[q1] == pytest.approx(2 / 3)
    assert math.isnan(values[q2])  # q2's answer belongs to another run
    assert values[q3] == 0.0  # an answer citing nothing
    assert citations.cited_elsewhere[q1] == 1


def test_only_needed_extras_are_built(rag_project):
    query_ids, matrix = run_matrix(rag_project)
    assert rag_extras(rag_project, "bm25", query_ids, matrix, ["P@5", "nDCG@10"]) == {}
    extras = rag_extras(rag_project, "bm25", query_ids, matrix, None)
    assert set(extras) == {"facets", "nuggets", "claims", "entities", "citations", "answers"}


def test_rows_follow_the_given_order_and_str_matrices(rag_project):
    query_ids, matrix = run_matrix(rag_project)
    order = query_ids[::-1]
    str_matrix = np.array([[c.decode() for c in row] for row in matrix[::-1]], dtype=object)
    facets = rag_extras(rag_project, "bm25", order, str_matrix, ["Coverage@10"])["facets"]
    assert coverage(facets, 10)[order.index("q1")] == pytest.approx(2 / 3)


def test_end_to_end_through_evaluate(rag_project):
    """Gold qrels and the stored run from the project, the extras from ``rag_extras`` (not
    aligned: each kernel aligns them), every RAG measure by name."""
    from ragjudge.metrics.evaluate import evaluate
    from ragjudge.services.scoring.evaluation import project_qrels
    from ragjudge.services.runs.stored import project_run
    from ragjudge.store.schema import Label

    def judge(session) -> None:
        for q in ("q1", "q2", "q3", "q4"):
            session.add(Label(query_id=q, chunk_id="c05", annotator="alice", grade=1))

    rag_project.write(judge)
    qrels, rule = project_qrels(rag_project)
    run = project_run(rag_project, "bm25")
    measures = ["Coverage@5", "Coverage@10", "NuggetRecall(strict,vital)@5", "NuggetRecall(all)@5",
                "NuggetRecall(weighted)@5", "ContextRecall@10", "EntityRecall@10", "EntityRecall@5",
                "Attribution@10", "Attribution@3", "P@1"]
    extras = rag_extras(rag_project, "bm25", measures=measures, rule=rule)
    assert set(extras) == {"facets", "nuggets", "claims", "entities", "citations"}
    result = evaluate(qrels, run, measures, extras=extras)
    pq = result.per_query()
    assert pq["q1"]["Coverage@5"] == pytest.approx(2 / 3)
    assert pq["q1"]["NuggetRecall(strict,vital)@5"] == pytest.approx(0.5)
    assert pq["q1"]["NuggetRecall(all)@5"] == pytest.approx(2 / 3)
    assert pq["q1"]["NuggetRecall(weighted)@5"] == pytest.approx(2.5 / 4)
    assert pq["q1"]["ContextRecall@10"] == pytest.approx(0.5)
    assert pq["q1"]["EntityRecall@10"] == pytest.approx(2 / 3)
    assert pq["q3"]["EntityRecall@5"] == 1.0
    assert pq["q1"]["Attribution@10"] == pytest.approx(0.2)
    assert pq["q1"]["Attribution@3"] == pytest.approx(2 / 3)
    assert pq["q3"]["Attribution@10"] == 0.0
    agg, undefined = result.aggregate(), result.undefined()
    assert undefined["Coverage@5"] == 3 and agg["Coverage@5"] == pytest.approx(2 / 3)
    assert undefined["EntityRecall@5"] == 2
    assert agg["EntityRecall@5"] == pytest.approx((2 / 3 + 1) / 2)
    assert undefined["Attribution@10"] == 2  # q2 (another run's answer) and q4 (no answer)
    assert undefined["P@1"] == 0


def test_new_events_are_seen_by_the_next_call(rag_project):
    """Combined support is cached per open project until an event is added."""
    from ragjudge.services.labels.facets import set_facet_link
    from ragjudge.store.schema import Facet, Nugget, NuggetSupport

    query_ids, matrix = run_matrix(rag_project)
    q1 = query_ids.index("q1")
    first = rag_extras(rag_project, "bm25", query_ids, matrix, ["Coverage@10"])["facets"]
    again = rag_extras(rag_project, "bm25", query_ids, matrix, ["Coverage@10"])["facets"]
    assert coverage(first, 10)[q1] == coverage(again, 10)[q1] == pytest.approx(2 / 3)
    with rag_project.read() as session:
        renovation = session.query(Facet).filter_by(name="renovation").one().id
    # bob changes his mind about c12: alice and bob now agree it covers renovation (rank 8)
    set_facet_link(rag_project, annotator="bob", facet_id=renovation, chunk_id="c12", covered=True)
    after = rag_extras(rag_project, "bm25", query_ids, matrix, ["Coverage@10"])["facets"]
    assert coverage(after, 10)[q1] == pytest.approx(1.0)
    assert coverage(after, 7)[q1] == pytest.approx(2 / 3)

    def withdraw(session) -> None:
        height = session.query(Nugget).filter_by(text="height").one()
        for who in ("alice", "bob"):
            session.add(NuggetSupport(nugget_id=height.id, chunk_id="c06", annotator=who,
                                      support="none"))

    nuggets = rag_extras(rag_project, "bm25", query_ids, matrix, ["NuggetRecall@5"])["nuggets"]
    assert nugget_recall(nuggets, 5, strict=True, vital_only=True)[q1] == pytest.approx(0.5)
    rag_project.write(withdraw)
    nuggets = rag_extras(rag_project, "bm25", query_ids, matrix, ["NuggetRecall@5"])["nuggets"]
    assert nugget_recall(nuggets, 5, strict=True, vital_only=True)[q1] == 0.0


def test_a_nugget_without_a_weight_of_its_own_counts_by_its_importance(rag_project):
    """TREC 2024 RAG's weighted score: vital 1, okay 0.5, unless the nugget has its own weight.
    With visitors' weight 2.0 taken away: (1 x 1 + 1 x 0.5 + 0.5 x 0.5) / (1 + 1 + 0.5) = 0.7."""
    from sqlalchemy import update

    from ragjudge.store.schema import Nugget

    rag_project.write(lambda s: s.execute(update(Nugget).where(Nugget.text == "visitors").values(weight=None)))
    query_ids, matrix = run_matrix(rag_project)
    nuggets = rag_extras(rag_project, "bm25", query_ids, matrix, ["NuggetRecall(weighted)@5"])["nuggets"]
    q1 = query_ids.index("q1")
    assert nugget_recall(nuggets, 5, strict=False, vital_only=False, weighted=True)[q1] == pytest.approx(0.7)
    # a nugget added in the app has no weight of its own either
    from ragjudge.services.labels.facets import add_nugget

    added = add_nugget(rag_project, "q1", "opening hours")
    with rag_project.read() as session:
        assert session.get(Nugget, added).weight is None
