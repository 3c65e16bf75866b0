"""ragjudge eval / compare / gate on a project database: gold qrels under a rule, stored runs,
strata from the queries' category and meta."""

from __future__ import annotations

import json

import pytest
import pytrec_eval
from clikit import run_cli as _run


pytestmark = pytest.mark.slow


from clikit import no_project  # noqa: E402, F401 - autouse: no project named by the environment


def _bm25(i: int) -> list[str]:
    """The conftest project's run bm25 for query q{i}: chunk (3i + rank) % 20 + 1."""
    return [f"c{(i * 3 + rank) % 20 + 1:02d}" for rank in range(1, 11)]


# (annotator, query, rank in bm25 of the chunk, grade): ann1 and ann2 disagree on some pairs
LABELS = [
    ("ann1", 1, 1, 3), ("ann2", 1, 1, 1),
    ("ann1", 1, 4, 2), ("ann2", 1, 4, 2),
    ("ann1", 2, 2, 0), ("ann2", 2, 2, 3),
    ("ann1", 2, 7, 1), ("ann2", 2, 7, 1),
    ("ann1", 3, 3, 2), ("ann2", 3, 3, 0),
    ("ann1", 4, 1, 0), ("ann2", 4, 1, 0),
    ("ann1", 5, 9, 3), ("ann2", 5, 9, 2),
]


@pytest.fixture
def labelled(project_db, tmp_path):
    from ragjudge.services.transfer.importing import import_file
    from ragjudge.services.labels.events import record_label
    from ragjudge.services.project.database import Project

    with Project.open(project_db) as project:
        for annotator, q, rank, grade in LABELS:
            record_label(project, annotator=annotator, query_id=f"q{q}",
                         chunk_id=_bm25(q)[rank - 1], grade=grade)
        # a second stored run: bm25 reversed
        lines = [f"q{i} Q0 {c} {r} {r} rev" for i in range(1, 6)
                 for r, c in enumerate(_bm25(i), start=1)]
        path = tmp_path / "reversed.trec"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        import_file(project, "run", str(path))
    return project_db


def _gold(rule: str) -> dict[str, dict[str, int]]:
    grades: dict[tuple[str, str], list[int]] = {}
    for _, q, rank, grade in LABELS:
        grades.setdefault((f"q{q}", _bm25(q)[rank - 1]), []).append(grade)
    pick = {"median": lambda g: sorted(g)[(len(g) - 1) // 2], "max": max}[rule]
    out: dict[str, dict[str, int]] = {}
    for (q, c), g in grades.items():
        out.setdefault(q, {})[c] = pick(g)
    return out


@pytest.mark.parametrize("rule", ["median", "max"])
def test_eval_project_runs_under_a_rule_match_pytrec_eval(labelled, capsys, rule):
    args = ["eval", "--db", labelled, "-m", "nDCG@5,AP,P@3", "--per-query", "--format", "json"]
    if rule != "median":
        args += ["--rule", rule]
    code, out, err = _run(capsys, *args)
    assert code == 0, err
    data = json.loads(out)
    assert data["rule"] == rule
    assert list(data["runs"]) == ["bm25", "reversed"]  # every stored run by default
    assert data["queries"] == 5
    qrels = _gold(rule)
    bm25 = {f"q{i}": {c: 10.0 - r for r, c in enumerate(_bm25(i))} for i in range(1, 6)}
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.5", "map", "P.3"}).evaluate(bm25)
    for qid, values in data["runs"]["bm25"]["per_query"].items():
        assert values["nDCG@5"] == pytest.approx(reference[qid]["ndcg_cut_5"], abs=1e-9)
        assert values["AP"] == pytest.approx(reference[qid]["map"], abs=1e-9)
        assert values["P@3"] == pytest.approx(reference[qid]["P_3"], abs=1e-9)


def test_eval_project_one_run_by_category_and_meta(labelled, capsys):
    code, out, err = _run(capsys, "eval", "--db", labelled, "--run", "bm25", "-m", "RR",
                          "--by", "category", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert list(data["runs"]) == ["bm25"]
    # conftest: odd queries are "factoid", even ones "policy"
    assert data["strata"]["factoid"]["queries"] == 3 and data["strata"]["policy"]["queries"] == 2
    per_query = json.loads(_run(capsys, "eval", "--db", labelled, "--run", "bm25", "-m", "RR",
                                "--per-query", "--format", "json")[1])["runs"]["bm25"]["per_query"]
    factoid = [per_query[q]["RR"] for q in ("q1", "q3", "q5")]
    assert data["strata"]["factoid"]["runs"]["bm25"]["aggregate"]["RR"] == pytest.approx(
        sum(factoid) / 3)
    code, _, err = _run(capsys, "eval", "--db", labelled, "--by", "nosuchkey")
    assert code == 2 and "nosuchkey" in err


def test_eval_project_errors_are_one_paragraph(labelled, tmp_path, capsys):
    code, _, err = _run(capsys, "eval", "--db", labelled, "--run", "nosuchrun")
    assert code == 2 and "nosuchrun" in err and "bm25" in err and "Traceback" not in err
    code, _, err = _run(capsys, "eval", "--db", labelled, "--rule", "loudest")
    assert code == 2 and "loudest" in err
    code, _, err = _run(capsys, "eval", "--db", str(tmp_path / "none.db"))
    assert code == 2 and "Traceback" not in err
    code, _, err = _run(capsys, "eval", "--db", labelled, "-m", "nDCG@ten")
    assert code == 2 and "nDCG@ten" in err


def test_eval_project_qrels_with_a_run_file(labelled, tmp_path, capsys):
    path = tmp_path / "file_run.trec"
    path.write_text("".join(f"q1 Q0 {c} {r} {20 - r} f\n" for r, c in enumerate(_bm25(1), 1)))
    code, out, err = _run(capsys, "eval", "--db", labelled, "--run", str(path), "--run", "bm25",
                          "-m", "nDCG@10", "--per-query", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    runs = data["runs"]
    assert runs["file_run"]["per_query"]["q1"] == runs["bm25"]["per_query"]["q1"]
    assert runs["file_run"]["per_query"]["q2"]["nDCG@10"] == 0.0  # not answered: counts 0


def test_gate_and_compare_on_a_project(labelled, capsys):
    code, out, err = _run(capsys, "gate", "--db", labelled, "--run", "bm25",
                          "--require", "Success@10>=0.6")  # q1, q2, q5 hit
    assert code == 0, err
    code, out, err = _run(capsys, "gate", "--db", labelled, "--run", "bm25", "--run", "reversed",
                          "--require", "RR>=0.5", "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["passed"] is False
    assert {c["run"] for c in data["checks"]} == {"bm25", "reversed"}
    code, out, err = _run(capsys, "compare", "bm25", "reversed", "--db", labelled, "-m", "RR",
                          "--format", "json")
    assert code == 0, err
    row = json.loads(out)["comparisons"][0]
    assert row["run_a"] == "bm25" and row["run_b"] == "reversed" and row["queries"] == 5
