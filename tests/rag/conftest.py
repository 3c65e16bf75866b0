"""Shared data of the RAG tests: a small project with facets, nuggets, claims, entities and
answers on top of the shared ``project`` fixture (queries q1..q5, chunks c01..c20, run bm25:
for q1 rank r holds c(r+4); for q3, c11 … c20)."""

from __future__ import annotations

import pytest

from ragjudge.store.schema import (
    Annotator,
    Answer,
    Chunk,
    Citation,
    Entity,
    Facet,
    FacetLink,
    Nugget,
    NuggetSupport,
)


def fill(session) -> None:
    session.add_all(Annotator(name=n) for n in ("alice", "bob", "carol"))
    session.get(Chunk, "c05").text = "Brasília is a city in Brazil, designed as the capital."
    session.get(Chunk, "c15").text = "Inaugurated on April 21, 1960."
    f1, f2, f3 = (Facet(query_id="q1", name=n) for n in ("construction", "design", "renovation"))
    f4 = Facet(query_id="q1", name="old", removed=True)
    session.add_all([f1, f2, f3, f4])
    session.flush()

    def link(facet, chunk, who, covered=True):
        session.add(FacetLink(facet_id=facet.id, chunk_id=chunk, annotator=who, covered=covered))
        session.flush()  # ids follow the order of events

    link(f1, "c05", "alice")
    link(f1, "c05", "bob")
    link(f2, "c07", "alice")
    link(f2, "c07", "alice", False)
    link(f2, "c09", "alice")
    link(f3, "c12", "alice")
    link(f3, "c12", "bob", False)
    link(f4, "c05", "alice")

    n1 = Nugget(query_id="q1", text="height", importance="vital")
    n2 = Nugget(query_id="q1", text="year", importance="vital")
    n3 = Nugget(query_id="q1", text="visitors", importance="okay", weight=2.0)
    n4 = Nugget(query_id="q1", text="gone", importance="vital", removed=True)
    cl1 = Nugget(query_id="q1", text="claim one", kind="claim")
    cl2 = Nugget(query_id="q1", text="claim two", kind="claim")
    session.add_all([n1, n2, n3, n4, cl1, cl2])
    session.flush()

    def support(nugget, chunk, who, level):
        session.add(NuggetSupport(nugget_id=nugget.id, chunk_id=chunk, annotator=who, support=level))
        session.flush()

    support(n1, "c06", "alice", "full")
    support(n1, "c06", "bob", "full")
    support(n2, "c05", "alice", "partial")
    support(n2, "c05", "bob", "partial")
    support(n2, "c13", "alice", "full")
    support(n3, "c20", "alice", "full")  # c20 is not in q1's run
    support(n3, "c08", "alice", "partial")
    support(n4, "c05", "alice", "full")
    support(cl1, "c07", "carol", "full")
    support(cl2, "c07", "carol", "full")
    support(cl2, "c07", "carol", "none")

    session.add_all(Entity(query_id="q1", text=t) for t in ("Brazil", "Brasília", "April 21, 1960"))
    session.add(Entity(query_id="q3", text="april 21, 1960"))

    a1 = Answer(query_id="q1", run="bm25", text="…")
    a2 = Answer(query_id="q2", run="other", text="…")
    a3 = Answer(query_id="q3", run="bm25", text="…")
    session.add_all([a1, a2, a3])
    session.flush()
    session.add_all(Citation(answer_id=a1.id, chunk_id=c, position=i)
                    for i, c in enumerate(["c05", "c07", "c20"]))


@pytest.fixture
def rag_project(project):
    project.write(fill)
    return project


