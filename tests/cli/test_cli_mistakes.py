"""QA regressions: common command-line mistakes give one clear paragraph, exit 2, change nothing."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest
from projectkit import make_two_annotator_project
from clikit import run_cli as _run

from ragjudge.errors import UsageError
from ragjudge.services.labels.queue import JudgingQueue
from ragjudge.services.project.database import Project


from clikit import no_project  # noqa: F401 - autouse: no project named by the environment


@pytest.fixture()
def db(tmp_path) -> str:
    """The small project, with labels of two annotators on three pairs of q1."""
    return make_two_annotator_project(str(tmp_path / "qa.db"))


def _digest(path: str) -> str:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return hashlib.sha256("\n".join(connection.iterdump()).encode()).hexdigest()
    finally:
        connection.close()


def _assert_usage_error(capsys, db: str, *args: str) -> str:
    before = _digest(db)
    code, out, err = _run(capsys, "--db", db, *args)
    assert code == 2, (code, out, err)
    assert "Traceback" not in err
    assert err.startswith("ragjudge: ") and err.count("\n") == 1, err  # one paragraph
    assert _digest(db) == before
    return err


def test_export_qrels_rule_with_unknown_annotator_is_refused(capsys, db, tmp_path):
    # was: exit 0 and an empty qrels file
    target = tmp_path / "alice.qrels"
    err = _assert_usage_error(capsys, db, "export", "qrels", "--rule", "annotator:alice", "-o", target)
    assert "'alice'" in err and "ana, ben" in err
    assert not target.exists()


def test_export_qrels_rule_with_known_annotator_still_works(capsys, db):
    code, out, err = _run(capsys, "--db", db, "export", "qrels", "--rule", "annotator:ben")
    assert code == 0, err
    assert out.split("\n") == ["q1 0 c05 1", "q1 0 c06 0", "q1 0 c07 3", ""]


def test_eval_rule_with_unknown_annotator_names_the_annotator(capsys, db):
    # was: "the project has no labels yet", which is false
    err = _assert_usage_error(capsys, db, "eval", "--rule", "annotator:alice")
    assert "no annotator named 'alice'" in err


def test_annotate_unknown_category_is_refused_before_the_screen_opens(capsys, db, monkeypatch):
    # was: the judging screen opened on an empty queue
    import ragjudge.tui

    opened = []
    monkeypatch.setattr(ragjudge.tui, "run_app", lambda *a, **k: opened.append(k))
    err = _assert_usage_error(capsys, db, "annotate", "--annotator", "ana", "--category", "biling")
    assert "'biling'" in err and "factoid, policy" in err
    assert opened == []


def test_judging_queue_unknown_category_is_a_usage_error(db):
    with Project.open(db) as project, pytest.raises(UsageError, match="biling"):
        JudgingQueue(project, "ana", category="biling")


@pytest.mark.slow
def test_judging_queue_known_category_still_loads(db):
    with Project.open(db) as project:
        queue = JudgingQueue(project, "ana", category="policy")
        assert queue.query_ids == ["q2", "q4"]


def test_adjudicate_show_with_grade_is_refused(capsys, db):
    # was: --grade silently ignored, exit 0, no adjudication stored
    err = _assert_usage_error(capsys, db, "adjudicate", "--query", "q1", "--chunk", "c07",
                              "--grade", "2", "--reason", "x", "--show")
    assert "--show" in err and "--grade" in err


@pytest.mark.parametrize("command", ["disputes", "agree"])
def test_negative_limit_is_refused(capsys, db, command):
    # was: accepted (disputes listed every pair, agree cut the list at -1)
    err = _assert_usage_error(capsys, db, command, "--limit", "-1")
    assert "--limit -1" in err


def test_import_missing_field_names_the_misspelt_field(capsys, db, tmp_path):
    # was: only "the required field is missing", hiding the typo that caused it
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"query_id": "q1", "chunk_id": "c05", "grde": 2, "annotator": "cy"}\n',
                      encoding="utf-8")
    err = _assert_usage_error(capsys, db, "import", "labels", labels)
    assert "line 1" in err and "field 'grade'" in err and "'grde'" in err


def test_import_wrong_kind_of_file_says_so(capsys, db, tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"query_id": "q1", "chunk_id": "c05", "grade": 2, "annotator": "cy"}\n',
                      encoding="utf-8")
    err = _assert_usage_error(capsys, db, "import", "chunks", labels)
    assert "field 'id'" in err and "'query_id', 'chunk_id', 'grade', 'annotator'" in err
    assert "is this a chunks file?" in err


def test_agree_scale_narrower_than_the_grades_names_scale(capsys, db):
    # was: "field 'grade': grade 3 ... is not a whole grade of the scale 0-2" (no option named)
    err = _assert_usage_error(capsys, db, "agree", "--scale", "0-2")
    assert err.startswith("ragjudge: --scale 0-2: grade 3 ") and "its own 0-3" in err
