"""The RAG measures by name in ``ragjudge eval``, ``gate`` and ``explain`` on a project database
(the data of ``conftest.rag_project``: facets, nuggets, claims, entities, answers).

Known gaps outside tests/rag, marked as expected failures of exactly that kind (any other
failure, e.g. a wrong value, fails these tests):

- ``services.evaluation._project_extras`` imports ``context`` from ``ragjudge.metrics.evaluate``,
  which does not exist; the whole call should be
  ``rag_extras(project, name, measures=parsed, rule=rule)`` (no context needed);
- ``ragjudge explain`` needs ``ragjudge.metrics.explain`` and, for these measures, the project's
  extras: ``ragjudge.metrics.rag.explain_rag(qrels, run, query, m, extras=rag_extras(...))``.
"""

from __future__ import annotations

import json

import pytest

from ragjudge.cli import common, main


@pytest.fixture(autouse=True)
def _no_project(monkeypatch):  # noqa: ANN001
    monkeypatch.setitem(common._state, "db", None)
    monkeypatch.delenv("RAGJUDGE_DB", raising=False)


def _run(capsys, *args: str) -> tuple[int, str, str]:  # noqa: ANN001
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def rag_db(rag_project, project_db):  # noqa: ANN001, ANN201
    from ragjudge.store.schema import Label

    def judge(session) -> None:  # noqa: ANN001
        for q in ("q1", "q2", "q3", "q4"):
            session.add(Label(query_id=q, chunk_id="c05", annotator="alice", grade=1))

    rag_project.write(judge)
    return project_db


MEASURES = ["Coverage@5", "NuggetRecall(strict,vital)@5", "NuggetRecall(all)@5",
            "ContextRecall@10", "EntityRecall@10", "Attribution@10"]


KNOWN_GAP = pytest.mark.xfail(raises=ImportError, strict=False,
                              reason="services.evaluation._project_extras imports a missing name")


@KNOWN_GAP
def test_eval_json(capsys, rag_db):  # noqa: ANN001
    args = ["eval", "--db", rag_db, "--run", "bm25", "--per-query", "--format", "json"]
    for m in MEASURES:
        args += ["-m", m]
    code, out, err = _run(capsys, *args)
    assert code == 0, err
    data = json.loads(out)
    per_query = data["runs"]["bm25"]["per_query"]
    assert per_query["q1"]["Coverage@5"] == pytest.approx(2 / 3)
    assert per_query["q1"]["NuggetRecall(strict,vital)@5"] == pytest.approx(0.5)
    assert per_query["q1"]["NuggetRecall(all)@5"] == pytest.approx(2 / 3)
    assert per_query["q1"]["ContextRecall@10"] == pytest.approx(0.5)
    assert per_query["q1"]["EntityRecall@10"] == pytest.approx(2 / 3)
    assert per_query["q1"]["Attribution@10"] == pytest.approx(0.2)
    aggregate = data["runs"]["bm25"]["aggregate"]
    assert aggregate["Coverage@5"] == pytest.approx(2 / 3)  # q2..q4 have no facets: left out
    assert aggregate["EntityRecall@10"] == pytest.approx((2 / 3 + 1) / 2)


@KNOWN_GAP
def test_gate(capsys, rag_db):  # noqa: ANN001
    code, out, err = _run(capsys, "gate", "--db", rag_db, "--run", "bm25",
                          "--require", "Coverage@5>=0.6", "--require", "EntityRecall@10>=0.8")
    assert code == 0, err  # 0.667 and 0.833
    code, out, err = _run(capsys, "gate", "--db", rag_db, "--run", "bm25",
                          "--require", "Coverage@5>=0.6", "--require", "Attribution@10>=0.5")
    assert code == 1, err  # Attribution@10 = mean(0.2, 0.0) = 0.1
    assert "Attribution@10" in out


@pytest.mark.xfail(raises=ImportError, strict=False, reason="ragjudge.metrics.explain is missing")
def test_explain(capsys, rag_db):  # noqa: ANN001
    code, out, err = _run(capsys, "explain", "--db", rag_db, "--run", "bm25", "--query", "q1",
                          "-m", "Coverage@5")
    if code == 2 and "needs facets" in err:
        pytest.xfail("ragjudge explain does not pass the project's extras to RAG measures yet")
    assert code == 0, err
    assert "construction" in out and "renovation" in out
