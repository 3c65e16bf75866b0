"""QA regression: a first line of standard input in another format says to give --format."""

from __future__ import annotations

import io

import pytest
from projectkit import make_small_project

from ragjudge.cli import main


from clikit import no_project  # noqa: F401 - autouse: no project named by the environment


@pytest.fixture()
def db(tmp_path) -> str:
    path = str(tmp_path / "p.db")
    make_small_project(path).close()
    return path


def _import_stdin(capsys, monkeypatch, db: str, text: str, *args: str) -> tuple[int, str]:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode()), encoding="utf-8"))
    code = main(["--db", db, "import", *args])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("text", "args"), [
    ("query_id,chunk_id,grade,annotator\nq1,c01,1,ann\n", ("labels", "-")),  # CSV read as JSONL
    ('{"query_id": "q1", "chunk_id": "c01", "score": 1.5}\n', ("run", "-", "--name", "d")),  # JSONL as TREC
    ("q1 c01\n", ("qrels", "-")),  # not TREC qrels either
])
def test_stdin_in_another_format_hints_at_format(capsys, monkeypatch, db, text, args):
    code, err = _import_stdin(capsys, monkeypatch, db, text, *args)
    assert code == 2 and err.startswith("ragjudge: <stdin>, line 1")
    assert "give --format trec, jsonl or csv" in err and err.count("\n") == 1


def test_stdin_with_format_imports(capsys, monkeypatch, db):
    code, err = _import_stdin(capsys, monkeypatch, db,
                              "query_id,chunk_id,grade,annotator\nq1,c01,1,ann\n",
                              "labels", "-", "--format", "csv")
    assert code == 0, err
    assert "1 added" in err


def test_a_file_error_has_no_stdin_hint(capsys, db, tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text("not json\n", encoding="utf-8")
    code = main(["--db", db, "import", "labels", str(labels)])
    err = capsys.readouterr().err
    assert code == 2 and "not valid JSON" in err and "--format" not in err
