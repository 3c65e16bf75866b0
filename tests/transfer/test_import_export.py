"""ragjudge import / export through the real command: bad input exits 2 naming file and line and
changes nothing; importing twice changes nothing; exports read back as they were written."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest
from clikit import run_cli

from ragjudge.cli import main


def snapshot(db: str) -> dict:
    """Every row of every table, plus the bytes of the database file."""
    connection = sqlite3.connect(db)
    try:
        tables = [r[0] for r in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        rows = {t: sorted(map(repr, connection.execute(f'SELECT * FROM "{t}"'))) for t in tables}
    finally:
        connection.close()
    return rows


def status(db: str, capsys) -> dict:
    assert main(["--db", db, "status", "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def jl(*objects) -> str:
    return "".join(json.dumps(o) + "\n" for o in objects)


def write(path: Path, content: str | bytes) -> str:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return str(path)


GOOD_RUN = "".join(f"q{q} Q0 c{c:02d} {c} {1.0 / c} dense\n" for q in range(1, 6) for c in range(1, 21))


def truncated_gz(tmp_path: Path) -> str:
    packed = gzip.compress(GOOD_RUN.encode() * 30)
    return write(tmp_path / "cut.trec.gz", packed[: len(packed) // 2])


# (kind, file name, content, extra options, expected line, words in the message)
BAD_INPUTS = [
    ("run", "malformed.trec", "q1 Q0 c01 1 1.0 r\nq1 Q0 c02 2 0.5\n", [], 2, "6 fields"),
    ("qrels", "missing.jsonl", jl({"query_id": "q1", "chunk_id": "c01", "grade": 1}, {"query_id": "q1", "grade": 1}),
     [], 2, "field 'chunk_id'"),
    ("qrels", "mistyped.jsonl", jl({"query_id": "q1", "chunk_id": "c01", "grade": "2"}), [], 1, "field 'grade'"),
    ("qrels", "unknown-field.jsonl", jl({"query_id": "q1", "chunk_id": "c01", "grade": 2, "gr": 1}), [], 1, "field 'gr'"),
    ("qrels", "offscale.qrels", "q1 0 c01 1\nq1 0 c02 4\n", [], 2, "off the project's scale 0-3"),
    ("qrels", "contradiction.qrels", "q1 0 c01 1\nq2 0 c02 1\nq1 0 c01 3\n", [], 3, "contradicts line 1"),
    ("run", "twice.trec", "q1 Q0 c01 1 1.0 r\nq1 Q0 c02 2 0.5 r\nq1 Q0 c01 3 0.2 r\n", [], 3, "appears twice"),
    ("run", "nan.trec", "q1 Q0 c01 1 1.0 r\nq1 Q0 c02 2 NaN r\n", [], 2, "field 'score'"),
    ("run", "unknown-ids.trec", "q1 Q0 c01 1 1 r\nq1 Q0 zz1 2 0.9 r\nq9 Q0 zz2 1 1 r\nq8 Q0 c01 1 1 r\n",
     [], 2, "2 query ids and 2 chunk ids are not in the project"),
    ("labels", "unknown-chunk.jsonl", jl({"query_id": "q1", "chunk_id": "nope", "grade": 1}), [], 1, "'nope' (line 1)"),
    ("queries", "differ.jsonl", jl({"id": "q1", "text": "another text"}), [], 1, "--replace"),
    ("run", "bm25.jsonl", jl({"query_id": "q1", "chunk_id": "c01", "score": 1.0}), [], None, "already has a run named 'bm25'"),
    ("chunks", "latin1.jsonl", '{"id": "c99", "text": "caf\xe9"}\n'.encode("latin-1"), [], 1, "not UTF-8"),
    ("facets", "facets.jsonl", jl({"query_id": "q1", "facet": "f", "chunk_id": "c01", "covered": 1}), [], 1, "field 'covered'"),
    ("nuggets", "nuggets.jsonl", jl({"query_id": "q1", "nugget": "n", "importance": "high"}), [], 1, "field 'importance'"),
    ("answers", "answers.jsonl", jl({"query_id": "q1", "run": "r", "text": "t", "cited": ["c01", "zz"]}), [], 1, "'zz'"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "name", "content", "options", "line", "words"), BAD_INPUTS,
                         ids=[case[1] for case in BAD_INPUTS])
def test_bad_input_exits_2_naming_file_and_line_and_changes_nothing(
        tmp_path, capsys, project_db, kind, name, content, options, line, words):
    path = write(tmp_path / name, content)
    before, before_status = snapshot(project_db), status(project_db, capsys)
    code, out, err = run_cli(capsys, "--db", project_db, "import", kind, path, *options)
    assert code == 2, err
    assert path in err and words in err
    if line is not None:
        assert f"line {line}" in err
    assert "Traceback" not in err and err.count("\n") == 1  # one paragraph
    assert snapshot(project_db) == before
    assert status(project_db, capsys) == before_status


def test_truncated_gzip_exits_2_and_changes_nothing(tmp_path, capsys, project_db):
    path = truncated_gz(tmp_path)
    before = snapshot(project_db)
    code, _, err = run_cli(capsys, "--db", project_db, "import", "run", path, "--create-missing")
    assert code == 2 and path in err and "truncated" in err and "line" in err
    assert snapshot(project_db) == before


def test_a_bad_line_after_many_batches_rolls_everything_back(tmp_path, capsys, project_db):
    # 12,000 good lines (several insert batches, thousands of placeholder chunks), then a bad one.
    lines = [f"q{i % 5 + 1} Q0 new{i} 1 {i} r" for i in range(12_000)] + ["q1 Q0 c01 1 x r"]
    path = write(tmp_path / "big.trec", "\n".join(lines) + "\n")
    before = snapshot(project_db)
    db_bytes = Path(project_db).read_bytes()
    code, _, err = run_cli(capsys, "--db", project_db, "import", "run", path, "--create-missing")
    assert code == 2 and "line 12001" in err and "field 'score'" in err
    assert snapshot(project_db) == before
    assert Path(project_db).read_bytes() == db_bytes


@pytest.mark.slow
def test_unknown_ids_message_counts_and_lists_the_first_few(tmp_path, capsys, project_db):
    lines = [f"q1 Q0 x{i:03d} 1 {100 - i} r" for i in range(30)]
    path = write(tmp_path / "many.trec", "\n".join(lines) + "\n")
    code, _, err = run_cli(capsys, "--db", project_db, "import", "run", path)
    assert code == 2
    assert "30 chunk ids are not in the project" in err
    assert "'x000' (line 1), 'x001' (line 2), 'x002' (line 3), 'x003' (line 4), 'x004' (line 5)" in err
    assert "x005" not in err and "--create-missing" in err


@pytest.mark.slow
def test_create_missing_adds_placeholders(tmp_path, capsys, project_db):
    path = write(tmp_path / "new.trec", "q1 Q0 zz1 1 1 r\nq9 Q0 c01 1 1 r\n")
    code, _, err = run_cli(capsys, "--db", project_db, "import", "run", path, "--create-missing")
    assert code == 0, err
    rows = snapshot(project_db)
    assert "('q9', '', None, None, None)" in rows["queries"]
    assert "('zz1', '', None, None)" in rows["chunks"]
    # a later queries file fills in the placeholder without --replace
    queries = write(tmp_path / "q.jsonl", jl({"id": "q9", "text": "where is my parcel?"}))
    code, _, err = run_cli(capsys, "--db", project_db, "import", "queries", queries)
    assert code == 0, err
    assert "('q9', 'where is my parcel?', None, None, None)" in snapshot(project_db)["queries"]


VALID_FILES = {
    "queries": ("queries.jsonl", jl({"id": "q1", "text": "query 1", "category": "factoid"},
                                    {"id": "q6", "text": "new query", "meta": {"lang": "en"}})),
    "chunks": ("chunks.csv", "id,text,doc_id\nc21,fresh chunk,d9\nc01,chunk 1,d1\n"),
    "run": ("dense.trec.gz", gzip.compress(GOOD_RUN.encode())),
    "qrels": ("gold.qrels", "q1 0 c01 3\nq1 0 c02 0\nq2 0 c05 1\n"),
    "labels": ("labels.jsonl", jl({"query_id": "q1", "chunk_id": "c01", "grade": 2, "annotator": "ann", "note": "n"},
                                  {"query_id": "q1", "chunk_id": "c03", "grade": 1})),
    "facets": ("facets.jsonl", jl({"query_id": "q1", "facet": "cost"},
                                  {"query_id": "q1", "facet": "cost", "chunk_id": "c01", "annotator": "ann"})),
    "nuggets": ("nuggets.jsonl", jl({"query_id": "q1", "nugget": "5 days", "importance": "vital"},
                                    {"query_id": "q1", "nugget": "5 days", "chunk_id": "c02", "support": "partial"})),
    "entities": ("entities.jsonl", jl({"query_id": "q1", "entity": "DHL"})),
    "answers": ("answers.jsonl", jl({"query_id": "q1", "run": "bm25", "text": "Five days.", "cited": ["c01"]})),
    "guidelines": ("guide.md", "# Judging\n\nGrade 3 answers the query fully.\n"),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(VALID_FILES))
def test_importing_the_same_file_twice_changes_nothing(tmp_path, capsys, project_db, kind):
    name, content = VALID_FILES[kind]
    path = write(tmp_path / name, content)
    before = snapshot(project_db)
    code, _, err = run_cli(capsys, "--db", project_db, "import", kind, path)
    assert code == 0, err
    once = snapshot(project_db)
    assert once != before
    code, _, err = run_cli(capsys, "--db", project_db, "import", kind, path)
    assert code == 0, err
    assert snapshot(project_db) == once


@pytest.mark.slow
def test_run_ranks_follow_scores_with_trec_eval_ties(tmp_path, capsys, project_db):
    # The rank column is nonsense on purpose; ties at 0.5 go to the larger chunk id first.
    path = write(tmp_path / "tied.run", "q1 Q0 c02 9 0.5 r\nq1 Q0 c10 9 0.5 r\nq1 Q0 c03 9 0.9 r\n"
                                        "q1 Q0 c01 9 0.5 r\nq2 Q0 c04 0 -1 r\n")
    code, _, err = run_cli(capsys, "--db", project_db, "import", "run", path, "--name", "tied")
    assert code == 0, err
    code, out, _ = run_cli(capsys, "--db", project_db, "export", "run", "tied")
    assert out.splitlines() == ["q1 Q0 c03 1 0.9 tied", "q1 Q0 c10 2 0.5 tied", "q1 Q0 c02 3 0.5 tied",
                                "q1 Q0 c01 4 0.5 tied", "q2 Q0 c04 1 -1.0 tied"]


@pytest.mark.slow
def test_ranked_list_run_keeps_its_order_and_replace(tmp_path, capsys, project_db):
    path = write(tmp_path / "listed.jsonl", jl({"query_id": "q1", "chunks": ["c09", "c01", "c05"]}))
    assert run_cli(capsys, "--db", project_db, "import", "run", path)[0] == 0
    _, out, _ = run_cli(capsys, "--db", project_db, "export", "run", "listed", "--format", "jsonl")
    assert [json.loads(x)["chunk_id"] for x in out.splitlines()] == ["c09", "c01", "c05"]
    other = write(tmp_path / "other.jsonl", jl({"query_id": "q2", "chunks": ["c02"]}))
    code, _, err = run_cli(capsys, "--db", project_db, "import", "run", other, "--name", "listed")
    assert code == 2 and "--replace" in err
    code, _, err = run_cli(capsys, "--db", project_db, "import", "run", other, "--name", "listed", "--replace")
    assert code == 0, err
    _, out, _ = run_cli(capsys, "--db", project_db, "export", "run", "listed")
    assert out.splitlines() == ["q2 Q0 c02 1 -1.0 listed"]


@pytest.mark.slow
def test_qrels_become_labels_and_identical_current_labels_are_skipped(tmp_path, capsys, project_db):
    from ragjudge.services.labels.events import record_label
    from ragjudge.services.project.database import Project

    path = write(tmp_path / "gold.qrels", "q1 0 c01 2\nq1 0 c02 0\n")
    assert run_cli(capsys, "--db", project_db, "import", "qrels", path, "--annotator", "nist")[0] == 0
    with Project.open(project_db) as project:
        record_label(project, annotator="nist", query_id="q1", chunk_id="c01", grade=3)
    code, _, err = run_cli(capsys, "--db", project_db, "import", "qrels", path, "--annotator", "nist")
    assert code == 0 and "1 added" in err  # c01 is back to 2; c02 was unchanged
    rows = snapshot(project_db)["labels"]
    assert len(rows) == 4 and sum("'import'" in r for r in rows) == 3


@pytest.mark.slow
def test_export_qrels_by_rule_and_labels_with_annotator_time_and_note(tmp_path, capsys, project_db):
    labels = jl(
        {"query_id": "q1", "chunk_id": "c01", "grade": 1, "annotator": "a"},
        {"query_id": "q1", "chunk_id": "c01", "grade": 2, "annotator": "b", "note": "close call"},
        {"query_id": "q1", "chunk_id": "c01", "grade": 3, "annotator": "c"},
        {"query_id": "q1", "chunk_id": "c02", "grade": 0, "annotator": "a"},
        {"query_id": "q1", "chunk_id": "c02", "grade": 3, "annotator": "b"},
    )
    path = write(tmp_path / "labels.jsonl", labels)
    assert run_cli(capsys, "--db", project_db, "import", "labels", path)[0] == 0
    expected = {"median": ["q1 0 c01 2", "q1 0 c02 0"], "max": ["q1 0 c01 3", "q1 0 c02 3"],
                "min": ["q1 0 c01 1", "q1 0 c02 0"], "annotator:b": ["q1 0 c01 2", "q1 0 c02 3"]}
    for rule, lines in expected.items():
        code, out, err = run_cli(capsys, "--db", project_db, "export", "qrels", "--rule", rule)
        assert code == 0, err
        assert out.splitlines() == lines, rule
    out_file = tmp_path / "labels.csv"
    code, _, err = run_cli(capsys, "--db", project_db, "export", "labels", "--format", "csv", "-o", str(out_file))
    assert code == 0 and "Wrote 5 labels lines" in err
    rows = out_file.read_text().splitlines()
    assert rows[0] == ("query_id,chunk_id,grade,annotator,note,created_at,flagged,flag_note,comment,"
                       "grade_name")
    assert rows[2].startswith("q1,c01,2,b,close call,20")
    code, _, err = run_cli(capsys, "--db", project_db, "export", "qrels", "--rule", "loudest")
    assert code == 2 and "--rule" in err


@pytest.mark.slow
def test_round_trip_through_a_second_project(tmp_path, capsys, project_db):
    """Everything exported from one project imports into another, which exports the same."""
    for kind in ("labels", "facets", "nuggets", "run"):
        name, content = VALID_FILES[kind]
        assert run_cli(capsys, "--db", project_db, "import", kind, write(tmp_path / name, content))[0] == 0
    second = str(tmp_path / "second.db")
    assert main(["init", "--db", second]) == 0
    for kind, fmt in (("queries", "jsonl"), ("chunks", "jsonl")):
        from ragjudge.formats import write_records
        from ragjudge.models import Chunk, Query

        records = ([Query(id=f"q{i}", text="") for i in range(1, 6)] if kind == "queries"
                   else [Chunk(id=f"c{j:02d}", text="") for j in range(1, 21)])
        write_records(kind, records, tmp_path / f"{kind}.jsonl", fmt)
        assert run_cli(capsys, "--db", second, "import", kind, str(tmp_path / f"{kind}.jsonl"))[0] == 0
    for kind, extra, fmt in (("labels", [], "jsonl"), ("labels", [], "csv"), ("facets", [], "csv"),
                             ("nuggets", [], "jsonl"), ("run", ["dense"], "trec"), ("run", ["dense"], "csv")):
        exported = tmp_path / f"export-{kind}.{fmt}"
        code, _, err = run_cli(capsys, "--db", project_db, "export", kind, *extra, "--format", fmt, "-o", str(exported))
        assert code == 0, err
        options = ["--name", "dense"] if kind == "run" else []
        code, _, err = run_cli(capsys, "--db", second, "import", kind, str(exported), *options)
        assert code == 0, err
        again = tmp_path / f"again-{kind}.{fmt}"
        assert run_cli(capsys, "--db", second, "export", kind, *extra, "--format", fmt, "-o", str(again))[0] == 0
        assert again.read_text() == exported.read_text(), kind


@pytest.mark.slow
def test_import_beir_folder_in_one_transaction(tmp_path, capsys):
    db = str(tmp_path / "beir.db")
    assert main(["init", "--db", db, "--scale", "0-2"]) == 0
    folder = tmp_path / "scifact"
    (folder / "qrels").mkdir(parents=True)
    write(folder / "corpus.jsonl", jl({"_id": "d1", "title": "T", "text": "x"}, {"_id": "d2", "text": "y"}))
    write(folder / "queries.jsonl", jl({"_id": "1", "text": "q?"}))
    write(folder / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\n1\td1\t1\n1\td3\t1\n")
    before = snapshot(db)
    code, _, err = run_cli(capsys, "--db", db, "import", "beir", str(folder))
    assert code == 2 and "test.tsv, line 3" in err and "'d3'" in err
    assert snapshot(db) == before  # the corpus and queries were rolled back too
    write(folder / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\n1\td1\t1\n1\td2\t0\n")
    code, _, err = run_cli(capsys, "--db", db, "import", "beir", str(folder))
    assert code == 0, err
    data = status(db, capsys)
    assert (data["queries"], data["chunks"], data["labels"]) == (1, 2, 2)
    assert run_cli(capsys, "--db", db, "import", "beir", str(folder))[0] == 0
    assert status(db, capsys)["labels"] == 2


@pytest.mark.slow
def test_help_has_examples(capsys):
    for command in ("import", "export"):
        code, out, _ = run_cli(capsys, command, "--help")
        assert code == 0 and "Examples" in out and f"ragjudge {command} " in out


def test_progress_callback_sees_the_whole_file(tmp_path, project):
    from ragjudge.services.transfer.importing import import_file

    path = tmp_path / "dense.trec"
    path.write_text(GOOD_RUN * 1)
    calls = []
    result = import_file(project, "run", path, progress=lambda done, total, what, *unit: calls.append((done, total, what)))
    assert result.added == 100 and result.run == "dense"
    size = path.stat().st_size
    reading = [c for c in calls if "reading" in c[2]]
    writing = [c for c in calls if "writing" in c[2]]
    assert reading[-1][:2] == (size, size)  # the whole file read
    assert writing[-1][:2] == (100, 100) and calls[-1] == writing[-1]  # then every entry written


# -- hostile input through the command: exit 0, or exit 2 naming the file with nothing changed --

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SEEDS = {
    "run": GOOD_RUN[:400],
    "qrels": "q1 0 c01 3\nq1 0 c02 0\nq2 0 c05 1\n",
    "labels": VALID_FILES["labels"][1],
    "queries": VALID_FILES["queries"][1],
    "chunks": VALID_FILES["chunks"][1],
    "facets": VALID_FILES["facets"][1],
    "nuggets": VALID_FILES["nuggets"][1],
    "answers": VALID_FILES["answers"][1],
}
_SUFFIX = {"run": ".trec", "qrels": ".qrels", "labels": ".jsonl", "queries": ".jsonl", "chunks": ".csv",
           "facets": ".jsonl", "nuggets": ".jsonl", "answers": ".jsonl"}


@pytest.mark.slow
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(_SEEDS)), cut=st.integers(0, 400), junk=st.binary(max_size=12),
       gz=st.booleans(), nan=st.booleans())
def test_fuzzed_files_through_the_command(tmp_path, capsys, project_db, kind, cut, junk, gz, nan):
    data = _SEEDS[kind].encode()
    if nan:
        data = data.replace(b"0.5", b"nan").replace(b'"grade": 2', b'"grade": NaN')
    data = data[:cut] + junk + data[cut:]
    suffix = _SUFFIX[kind]
    if gz:
        packed = gzip.compress(data)
        data, suffix = packed[: max(10, len(packed) - cut % 40)], suffix + ".gz"
    path = tmp_path / f"fuzz-{kind}{suffix}"
    path.write_bytes(data)
    before = snapshot(project_db)
    code, _, err = run_cli(capsys, "--db", project_db, "import", kind, str(path), "--name", "fz") \
        if kind == "run" else run_cli(capsys, "--db", project_db, "import", kind, str(path))
    assert "Traceback" not in err
    if code == 2:
        assert str(path) in err and err.count("\n") == 1
        assert snapshot(project_db) == before
    else:
        assert code == 0, err


@pytest.mark.slow
def test_import_from_standard_input(tmp_path, project_db):
    import subprocess
    import sys

    def ragjudge(*args: str, data: bytes) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ragjudge", "--db", project_db, *args],
                              input=data, capture_output=True, timeout=120)

    done = ragjudge("import", "run", "-", "--name", "piped", data=gzip.compress(GOOD_RUN.encode()))
    assert done.returncode == 0, done.stderr
    assert b"100 added" in done.stderr
    unnamed = ragjudge("import", "run", "-", data=GOOD_RUN.encode())
    assert unnamed.returncode == 2 and b"--name" in unnamed.stderr
