"""Gold qrels: aggregation rules over annotators' current labels, adjudication first."""

from __future__ import annotations

import pytest

from ragjudge.errors import UsageError
from ragjudge.services.project.database import Project
from ragjudge.services.gold.qrels import gold_qrels
from ragjudge.store.schema import Adjudication, Annotator, Chunk, Label, Query


@pytest.fixture()
def project(tmp_path):
    with Project.init(str(tmp_path / "g.db")) as project:
        def seed(session):
            session.add(Query(id="q1", text="refund"))
            session.add_all([Chunk(id=f"c{i}", text=f"chunk {i}") for i in range(1, 5)])
            session.add_all([Annotator(name=n) for n in ("ana", "ben", "chen")])
        project.write(seed)
        yield project


def label(project, annotator, chunk, grade):
    project.write(lambda s: s.add(Label(query_id="q1", chunk_id=chunk, annotator=annotator, grade=grade)))


def as_dict(rows):
    return {c: g for _, c, g in rows}


def test_rules_on_three_annotators(project):
    # c1: 0,1,3   c2: 2,2,1   c3: 1,2 (two annotators)   c4: only chen 3
    for a, g in zip(("ana", "ben", "chen"), (0, 1, 3)):
        label(project, a, "c1", g)
    for a, g in zip(("ana", "ben", "chen"), (2, 2, 1)):
        label(project, a, "c2", g)
    label(project, "ana", "c3", 1)
    label(project, "ben", "c3", 2)
    label(project, "chen", "c4", 3)
    assert as_dict(gold_qrels(project, "median")) == {"c1": 1, "c2": 2, "c3": 1, "c4": 3}
    assert as_dict(gold_qrels(project, "min")) == {"c1": 0, "c2": 1, "c3": 1, "c4": 3}
    assert as_dict(gold_qrels(project, "max")) == {"c1": 3, "c2": 2, "c3": 2, "c4": 3}
    # mean: c1 4/3 -> 1, c2 5/3 -> 2, c3 1.5 -> 2 (half up)
    assert as_dict(gold_qrels(project, "mean")) == {"c1": 1, "c2": 2, "c3": 2, "c4": 3}
    # majority: c1 all differ -> lowest, c2 -> 2, c3 tie -> lower
    assert as_dict(gold_qrels(project, "majority")) == {"c1": 0, "c2": 2, "c3": 1, "c4": 3}
    assert as_dict(gold_qrels(project, "annotator:ben")) == {"c1": 1, "c2": 2, "c3": 2}


def test_newest_event_wins_and_ungraded_events_drop_the_pair(project):
    label(project, "ana", "c1", 3)
    label(project, "ana", "c1", 1)
    label(project, "ana", "c2", 2)
    label(project, "ana", "c2", None)  # undone
    assert as_dict(gold_qrels(project, "median")) == {"c1": 1}


def test_adjudication_comes_first(project):
    label(project, "ana", "c1", 0)
    label(project, "ben", "c1", 0)
    project.write(lambda s: s.add(Adjudication(query_id="q1", chunk_id="c1", grade=3, by="lead", reason="r")))
    assert as_dict(gold_qrels(project, "median")) == {"c1": 3}
    assert as_dict(gold_qrels(project, "adjudicated")) == {"c1": 3}


def test_unknown_rule(project):
    with pytest.raises(UsageError, match="not a gold rule"):
        gold_qrels(project, "average")


def test_a_blind_recheck_does_not_replace_the_current_label(project):
    label(project, "ana", "c1", 3)
    project.write(lambda s: s.add(Label(query_id="q1", chunk_id="c1", annotator="ana", grade=0,
                                        source="recheck")))
    assert as_dict(gold_qrels(project, "median")) == {"c1": 3}
