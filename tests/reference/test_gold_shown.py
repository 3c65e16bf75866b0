"""Every output that scores against a project says what its gold is made of: the rule, the
reference, how many pairs the reference decided and how many the other annotators added.

The finding this answers: official qrels imported ``--reference`` (not complete) and one
person's labels on pairs the official qrels never list; the labels joined the gold, the AP order
of two runs swapped, and the footer said only "gold rule: median".
"""

from __future__ import annotations

import json

import goldkit
import pytest
from projectkit import rights

from ragjudge.cli import common, main

pytestmark = pytest.mark.slow

# goldkit's gold under median: nist's 5 pairs on each of q1..q4 (20), and ana's 8 labels on pairs
# nist never lists; ana's 8 labels on listed pairs change nothing.
LINE = "gold: median · reference nist: 20 pairs, 8 pairs from other annotators"
GOLD = {"rule": "median", "reference": "nist", "complete": False, "pairs": 28,
        "reference_pairs": 20, "implied_pairs": 0, "other_pairs": 8, "adjudicated": 0}


@pytest.fixture(autouse=True)
def _no_project(monkeypatch):
    monkeypatch.setitem(common.CLI_STATE, "db", None)
    monkeypatch.delenv("RAGJUDGE_DB", raising=False)
    monkeypatch.setenv("COLUMNS", "200")


def _run(capsys, *args: str) -> tuple[int, str, str]:
    """Exit code, standard output and standard error, each with its whitespace made single
    spaces (a table's footer wraps at the console's width) unless it is JSON or CSV."""
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    if "--format" in args:
        return code, out.out, " ".join(out.err.split())
    return code, " ".join(out.out.split()), " ".join(out.err.split())


@pytest.fixture
def db(tmp_path):
    path = str(tmp_path / "p.db")
    goldkit.make_project(path, tmp_path)
    return path


def _gold_of(data: dict) -> dict:
    return {k: data["gold"][k] for k in GOLD}


def test_eval_table_footer_and_json_name_the_reference_and_the_added_pairs(capsys, db):
    code, out, err = _run(capsys, "--db", db, "eval", "-m", "AP")
    assert code == 0, err
    assert LINE in out
    code, out, err = _run(capsys, "--db", db, "eval", "-m", "AP", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert _gold_of(data) == GOLD and data["gold"]["annotators"] == ["ana", "nist"]


def test_eval_under_the_reference_alone_says_so(capsys, db):
    code, out, err = _run(capsys, "--db", db, "eval", "-m", "AP", "--rule", "reference", "--format", "json")
    assert code == 0, err
    gold = json.loads(out)["gold"]
    assert (gold["rule"], gold["reference_pairs"], gold["other_pairs"]) == ("reference", 20, 0)
    code, out, _ = _run(capsys, "--db", db, "eval", "-m", "AP", "--rule", "reference")
    assert "gold: reference · reference nist: 20 pairs" in out and "other annotators" not in out


def test_eval_csv_stays_data_and_says_the_gold_on_standard_error(capsys, db):
    import csv
    import io

    code, out, err = _run(capsys, "--db", db, "eval", "-m", "AP", "--format", "csv")
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["run", "query", "AP"] and len(rows) == 4  # header and three runs
    assert LINE in err


def test_a_file_qrels_has_no_gold_object(capsys, db, tmp_path):
    code, out, err = _run(capsys, "eval", "--qrels", tmp_path / "official.qrels", "--run",
                          tmp_path / "bm25.trec", "-m", "AP", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["gold"] is None


def test_gate_shows_the_gold(capsys, db):
    code, out, _ = _run(capsys, "--db", db, "gate", "--run", "bm25", "--require", "AP>=0.1")
    assert code == 0 and LINE in out
    code, out, _ = _run(capsys, "--db", db, "gate", "--run", "bm25", "--require", "AP>=0.1",
                        "--format", "json")
    assert code == 0 and _gold_of(json.loads(out)) == GOLD


def test_compare_shows_the_gold(capsys, db):
    code, out, err = _run(capsys, "--db", db, "compare", "bm25", "dense", "-m", "AP",
                          "--permutations", "100", "--resamples", "100")
    assert code == 0, err
    assert LINE in out
    code, out, _ = _run(capsys, "--db", db, "compare", "bm25", "dense", "-m", "AP",
                        "--permutations", "100", "--resamples", "100", "--format", "json")
    assert _gold_of(json.loads(out)) == GOLD


def test_explain_shows_the_gold(capsys, db):
    code, out, err = _run(capsys, "--db", db, "explain", "--run", "dense", "--query", "q1", "-m", "AP")
    assert code == 0, err
    assert LINE in out
    code, out, _ = _run(capsys, "--db", db, "explain", "--run", "dense", "--query", "q1", "-m", "AP",
                        "--format", "json")
    assert _gold_of(json.loads(out)) == GOLD


def test_adjudications_are_counted(capsys, db):
    from ragjudge.services.gold.adjudication import adjudicate
    from ragjudge.services.project.database import Project

    with Project.open(db) as project:
        adjudicate(project, query_id="q1", chunk_id=goldkit.dense(1)[1], grade=0, reason="off", access=rights(project, "lead"))
    code, out, _ = _run(capsys, "--db", db, "eval", "-m", "AP", "--format", "json")
    gold = json.loads(out)["gold"]
    assert (gold["reference_pairs"], gold["other_pairs"], gold["adjudicated"]) == (20, 7, 1)
    code, out, _ = _run(capsys, "--db", db, "eval", "-m", "AP")
    assert "gold: median · reference nist: 20 pairs, 7 pairs from other annotators · 1 adjudicated" in out


def test_curves_show_the_gold(capsys, db):
    code, out, err = _run(capsys, "--db", db, "eval", "--curve", "P", "--k", "1-3", "--format", "json")
    assert code == 0, err
    assert _gold_of(json.loads(out)) == GOLD
    code, out, _ = _run(capsys, "--db", db, "eval", "--curve", "P", "--k", "1-3")
    assert LINE in out
    code, out, err = _run(capsys, "--db", db, "eval", "--curve", "P", "--k", "1-3", "--format", "csv")
    assert out.splitlines()[0] == "k,bm25,dense,hybrid" and LINE in err


def test_csv_from_a_file_writes_nothing_on_standard_error(capsys, db, tmp_path):
    code, out, err = _run(capsys, "eval", "--qrels", tmp_path / "official.qrels", "--run",
                          tmp_path / "bm25.trec", "-m", "AP", "--format", "csv")
    assert code == 0 and err == "" and out.splitlines()[0] == "run,query,AP"
    code, out, err = _run(capsys, "eval", "--qrels", tmp_path / "official.qrels", "--run",
                          tmp_path / "bm25.trec", "-m", "AP", "--format", "csv", "--complete")
    assert code == 0 and "complete: 32 unlisted chunks the runs retrieve on its 4 queries" in err
