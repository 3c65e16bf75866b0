"""Messages that said something untrue or too little: a rule that finds nothing to read, a gate
that fails on a value it prints as equal to the threshold, a measure left out for a reason the
query does not have, bpref explained without its terms."""

from __future__ import annotations

import json

import goldkit
import pytest
from projectkit import rights
from clikit import run_cli as _run

from ragjudge.cli import common

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _no_project(monkeypatch):
    monkeypatch.setitem(common.CLI_STATE, "db", None)
    monkeypatch.delenv("RAGJUDGE_DB", raising=False)
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def db(tmp_path):
    path = str(tmp_path / "p.db")
    goldkit.make_project(path, tmp_path)
    return path


def test_rule_adjudicated_without_adjudications_says_so_and_counts_the_labels(capsys, db):
    code, _, err = _run(capsys, "--db", db, "eval", "--rule", "adjudicated")
    text = " ".join(err.split())
    assert code == 2
    assert "no labels yet" not in text
    # nist's 20 official grades and ana's 16 labels, by 2 annotators
    assert "no pair is adjudicated yet" in text and "the project has 36 labels by 2 annotators" in text


def test_rule_reference_without_a_reference_says_so(capsys, tmp_path):
    path = str(tmp_path / "plain.db")
    goldkit.make_project(path, tmp_path, reference=False)
    code, _, err = _run(capsys, "--db", path, "eval", "--rule", "reference")
    text = " ".join(err.split())
    assert code == 2 and "the project has no reference annotator" in text and "--reference" in text


def test_gate_prints_the_digits_that_tell_the_value_from_the_threshold(capsys, db):
    # bm25's AP under median: (1 + 2/3) / 6 = 0.2777... on each of q1..q4. 0.2778 at four
    # decimals, as the threshold 0.27778 is; at five both are 0.27778; at six 0.277778 < 0.277780
    code, out, err = _run(capsys, "--db", db, "gate", "--run", "bm25", "--require", "AP>=0.27778")
    assert code == 1
    assert "0.277778" in out and "FAIL" in out
    assert "AP = 0.277778, required >= 0.27778" in " ".join(err.split())
    # a value far from the threshold keeps four decimals
    code, out, _ = _run(capsys, "--db", db, "gate", "--run", "bm25", "--require", "AP>=0.1")
    assert code == 0 and "0.2778" in out and "0.27777" not in out
    code, out, _ = _run(capsys, "--db", db, "gate", "--run", "bm25", "--require", "AP>=0.27778",
                        "--format", "json")
    assert json.loads(out)["checks"][0]["actual"] == pytest.approx(5 / 18)


def test_a_query_scored_only_for_its_entities_is_named_for_them(capsys, db, tmp_path):
    entities = tmp_path / "entities.jsonl"
    entities.write_text('{"query_id": "q5", "entity": "chunk"}\n', encoding="utf-8")
    assert _run(capsys, "--db", db, "import", "entities", entities)[0] == 0
    code, out, err = _run(capsys, "--db", db, "eval", "-m", "P@1", "-m", "EntityRecall@5")
    assert code == 0, err
    text = " ".join(out.split())
    assert ("P@1: left out of the mean for 1 of 5 queries, where it is undefined (the query has "
            "no relevance grade, only entities: it is evaluated for EntityRecall@5).") in text
    assert "facets or nuggets" not in text


def test_explain_bpref_shows_its_terms(capsys, tmp_path):
    goldkit.make_project(str(tmp_path / "c.db"), tmp_path, complete=True)
    code, out, err = _run(capsys, "--db", tmp_path / "c.db", "explain", "--run", "bm25", "--query", "q1",
                          "-m", "bpref")
    assert code == 0, err
    # bm25 on q1 in the closed world: relevant at ranks 1 and 3 (R = 4), rank 2 judged 0,
    # N = 16 implied + 1 listed 0 = 17: (1 + (1 - 1/4)) / 4
    assert "N = 17 judged non-relevant" in " ".join(out.split())
    assert "rank 3: n = 1, term 1 - min(1, 4) / min(4, 17) = 0.7500" in out
    assert "bpref = 1.7500 / 4.0000 (R) = 0.4375" in out


def test_only_llm_labels_say_why_the_gold_is_empty(capsys, project_db):
    from ragjudge.services.access import roster
    from ragjudge.services.labels.events import record_label
    from ragjudge.services.project.database import Project

    with Project.open(project_db) as project:
        roster.add(project, "llm:judge", kind="llm", access=rights(project))
        record_label(project, annotator="llm:judge", query_id="q1", chunk_id="c05", grade=2)
    code, _, err = _run(capsys, "--db", project_db, "eval")
    text = " ".join(err.split())
    assert code == 2 and "the project has 1 label by 1 annotator" in text
    assert "LLM annotators' (llm:judge) count only when named" in text
    code, out, err = _run(capsys, "--db", project_db, "eval", "--rule", "annotator:llm:judge", "-m", "P@5")
    assert code == 0, err
