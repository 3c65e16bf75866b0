"""The RAG measures by name in ``ragjudge eval``, ``gate``, ``compare`` and ``explain`` on a project
database (the data of ``conftest.rag_project``: facets, nuggets, claims, entities, answers).
"""

from __future__ import annotations

import json

import pytest
from clikit import run_cli as _run


pytestmark = pytest.mark.slow


from clikit import no_project  # noqa: E402, F401 - autouse: no project named by the environment


@pytest.fixture
def rag_db(rag_project, project_db):
    from ragjudge.store.schema import Label

    def judge(session) -> None:
        for q in ("q1", "q2", "q3", "q4"):
            session.add(Label(query_id=q, chunk_id="c05", annotator="alice", grade=1))

    rag_project.write(judge)
    return project_db


MEASURES = ["Coverage@5", "NuggetRecall(strict,vital)@5", "NuggetRecall(all)@5",
            "ContextRecall@10", "EntityRecall@10", "Attribution@10"]


def test_eval_json(capsys, rag_db):
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


def test_gate(capsys, rag_db):
    code, out, err = _run(capsys, "gate", "--db", rag_db, "--run", "bm25",
                          "--require", "Coverage@5>=0.6", "--require", "EntityRecall@10>=0.8")
    assert code == 0, err  # 0.667 and 0.833
    code, out, err = _run(capsys, "gate", "--db", rag_db, "--run", "bm25",
                          "--require", "Coverage@5>=0.6", "--require", "Attribution@10>=0.5")
    assert code == 1, err  # Attribution@10 = mean(0.2, 0.0) = 0.1
    assert "Attribution@10" in out


def test_explain(capsys, rag_db):
    code, out, err = _run(capsys, "explain", "--db", rag_db, "--run", "bm25", "--query", "q1",
                          "-m", "Coverage@5", "-m", "Attribution@10")
    assert code == 0, err
    assert "Coverage@5 = 0.6667" in out
    assert "construction" in out and "renovation" in out
    assert "2 / 10 = 0.2000" in out  # Attribution@10: c05 and c07 cited in the top 10


def test_compare(capsys, rag_db, tmp_path):
    from ragjudge.services.transfer.importing import import_file
    from ragjudge.services.project.database import Project

    # bm25 reversed: q1's top 5 is c14 … c10 (no facet covered there)
    lines = [f"q{i} Q0 c{(i * 3 + r) % 20 + 1:02d} {11 - r} {r} rev" for i in range(1, 6)
             for r in range(1, 11)]
    path = tmp_path / "reversed.trec"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with Project.open(rag_db) as project:
        import_file(project, "run", str(path))
    code, out, err = _run(capsys, "compare", "--db", rag_db, "bm25", "reversed", "-m", "Coverage@5",
                          "--format", "json")
    assert code == 0, err
    row, = json.loads(out)["comparisons"]
    # only q1 has facets: compared on that one query, undefined ones left out
    assert row["queries"] == 1
    assert row["mean_a"] == pytest.approx(2 / 3) and row["mean_b"] == 0.0
    assert row["verdict"] == "within noise"  # one query decides nothing
