"""Edges of the input: no traceback for any of them, the same text accepted or refused alike on
SQLite and PostgreSQL, and the oddities that used to pass without a word said out loud.

Each test names what happened before. Refusals are one paragraph on stderr with exit code 2 and
leave the project as it was (its rows counted, or its file's bytes compared).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from projectkit import make_small_project, make_two_annotator_project, rights

import ragjudge
from ragjudge.cli import common, main
from ragjudge.errors import UsageError

HUGE = "1" + "0" * 30
LONG_NAME = "a" * 300  # over the 255 bytes a file name may have


from clikit import no_project  # noqa: E402, F401 - autouse: no project named by the environment


@pytest.fixture()
def db(tmp_path) -> str:
    """The small project, with labels of two annotators on three pairs of q1."""
    return make_two_annotator_project(str(tmp_path / "edges.db"))


def _run(capsys, *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    common.CLI_STATE["db"] = None
    return code, out.out, out.err


def _digest(path: str) -> str:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return hashlib.sha256("\n".join(connection.iterdump()).encode()).hexdigest()
    finally:
        connection.close()


def _one_paragraph(code: int, err: str) -> str:
    assert code == 2, (code, err)
    assert "Traceback" not in err
    assert err.startswith("ragjudge: ") and err.count("\n") == 1, err
    return err


def _refused(capsys, db: str, *args: object) -> str:
    before = _digest(db)
    code, _, err = _run(capsys, "--db", db, *args)
    _one_paragraph(code, err)
    assert _digest(db) == before
    return err


# -- integer options: bounded, the limit in the message ----------------------------------------


@pytest.mark.parametrize(("args", "needle"), [
    (("annotate", "--annotator", "ana", "--depth", HUGE), "from 1 to 100,000"),  # was OverflowError
    (("assign", "--annotators", "ana,ben", "--depth", HUGE), "from 1 to 100,000"),  # was OverflowError
    (("assign", "--annotators", "ana,ben", "--seed", "-1"), "from 0 to 4,294,967,295"),
    (("compare", "bm25", "bm25", "--seed", "-1"), "from 0 to 4,294,967,295"),  # was numpy's ValueError
    (("compare", "bm25", "bm25", "--resamples", HUGE), "from 1 to 1,000,000"),  # was "dimension exceeded"
    (("compare", "bm25", "bm25", "--permutations", HUGE), "from 1 to 1,000,000"),  # ran out of memory
    (("disputes", "--limit", HUGE), "from 0 to 1,000,000,000"),
    (("agree", "--limit", HUGE), "from 0 to 1,000,000,000"),
    (("eval", "--curve", "P", "--k", f"1-{HUGE}"), "from 1 to 100,000"),  # was OverflowError
    (("eval", "--curve", "P", "--k", HUGE), "from 1 to 100,000"),
])
def test_integer_options_out_of_range_name_the_limit(capsys, db, monkeypatch, args, needle):
    import ragjudge.tui

    monkeypatch.setattr(ragjudge.tui, "run_app", lambda *a, **k: pytest.fail("the app opened"))
    err = _refused(capsys, db, *args)
    assert args[-2] in err and needle in err
    assert "(31 digits)" in err or args[-1] in err


def test_integer_options_in_range_still_work(capsys, db):
    code, out, err = _run(capsys, "--db", db, "assign", "--annotators", "ana,ben", "--depth", "3",
                          "--seed", "4294967295", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["new_pairs"] == 15  # 5 queries, the top 3 of one run


# -- input paths: a folder that cannot be entered, a name too long ------------------------------


def _restricted_prefix() -> tuple[str, ...]:
    """Run a command so that file permissions bind it: as root, without the capabilities that
    let root read and write every file (root otherwise passes every permission check)."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot make permissions bind root")
    caps = "-dac_override,-dac_read_search,-fowner"
    return (setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}")


BATCH = """
import io, json, sys
from contextlib import redirect_stderr, redirect_stdout
from ragjudge.cli import common, main
results = []
for args in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(args)
    common.CLI_STATE["db"] = None
    results.append([code, out.getvalue(), err.getvalue()])
sys.stdout.write(json.dumps(results))
"""


def _restricted(*commands: list[str], cwd: Path) -> list[tuple[int, str, str]]:
    """Each command through the real entry point, in one interpreter whose file permissions
    bind (see :func:`_restricted_prefix`)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(ragjudge.__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    env.pop("RAGJUDGE_DB", None)
    result = subprocess.run([*_restricted_prefix(), sys.executable, "-c", BATCH,
                             json.dumps([[str(a) for a in c] for c in commands])],
                            capture_output=True, text=True, timeout=300, cwd=cwd, env=env,
                            check=False)
    assert result.returncode == 0, result.stderr
    return [tuple(r) for r in json.loads(result.stdout)]


def _check_binds(path: Path, mode: str) -> None:
    """Skip unless the permissions just set deny the restricted process ``mode`` (``X_OK``,
    ``R_OK``, ``W_OK``) on ``path`` (some file systems ignore permissions)."""
    probe = subprocess.run([*_restricted_prefix(), sys.executable, "-c",
                            f"import os, sys; sys.exit(os.access({str(path)!r}, os.{mode}))"],
                           timeout=60, check=False)
    if probe.returncode != 0:
        pytest.skip("permissions do not bind here")


@pytest.mark.slow
def test_inputs_in_a_folder_that_cannot_be_entered(tmp_path, db):
    # was: PermissionError tracebacks from Path.is_dir() (import, import beir, eval, agree)
    shut = tmp_path / "shut"
    (shut / "beir" / "qrels").mkdir(parents=True)
    (shut / "q.jsonl").write_text('{"id": "qx", "text": "x"}\n', encoding="utf-8")
    (shut / "beir" / "corpus.jsonl").write_text('{"_id": "cx", "text": "x"}\n', encoding="utf-8")
    (shut / "beir" / "queries.jsonl").write_text('{"_id": "qx", "text": "x"}\n', encoding="utf-8")
    (shut / "beir" / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nqx\tcx\t1\n",
                                                      encoding="utf-8")
    before = _digest(db)
    shut.chmod(0o000)
    try:
        _check_binds(shut, "X_OK")
        results = _restricted(
            ["--db", db, "import", "queries", shut / "q.jsonl"],
            ["--db", db, "import", "queries", shut / "no-such.jsonl"],
            ["--db", db, "import", "beir", shut / "beir"],
            ["--db", db, "eval", "--qrels", shut / "q.qrels"],
            ["--db", db, "eval", "--run", shut / "bm25.trec"],
            ["agree", "--labels", shut / "labels.jsonl"],
            ["--db", db, "annotate", "--annotator", "ana", "--queries", shut / "ids.txt"],
            cwd=tmp_path)
    finally:
        shut.chmod(0o755)
    for code, _, err in results:
        _one_paragraph(code, err)
        assert f"{shut}/" in err and "permission denied" in err, err
    assert _digest(db) == before


@pytest.mark.slow
def test_beir_qrels_folder_that_cannot_be_listed(tmp_path, db):
    # was: "a BEIR folder needs qrels/<split>.tsv files; there are none", which is untrue
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text('{"_id": "cx", "text": "x"}\n', encoding="utf-8")
    (beir / "queries.jsonl").write_text('{"_id": "qx", "text": "x"}\n', encoding="utf-8")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nqx\tcx\t1\n", encoding="utf-8")
    (beir / "qrels").chmod(0o300)  # may be entered, not listed
    try:
        _check_binds(beir / "qrels", "R_OK")
        [(code, _, err)] = _restricted(["--db", db, "import", "beir", beir], cwd=tmp_path)
    finally:
        (beir / "qrels").chmod(0o755)
    _one_paragraph(code, err)
    assert f"{beir / 'qrels'}: cannot be read: permission denied" in err


@pytest.mark.parametrize("args", [
    ("import", "queries", f"{LONG_NAME}.jsonl"),
    ("import", "queries", LONG_NAME),  # no extension: the format is sniffed from the content
    ("import", "beir", LONG_NAME),
    ("eval", "--qrels", f"{LONG_NAME}.qrels"),
    ("eval", "--run", f"{LONG_NAME}.trec"),
    ("eval", "--by", "category", "--queries", f"{LONG_NAME}.jsonl"),
    ("agree", "--labels", f"{LONG_NAME}.jsonl"),
])
def test_input_name_too_long_is_a_message_with_the_limit(capsys, db, tmp_path, monkeypatch, args):
    # was: OSError [Errno 36] File name too long, as a traceback
    monkeypatch.chdir(tmp_path)
    err = _refused(capsys, db, *args)
    assert "the name is too long for this system" in err and "at most 255 bytes" in err


def test_annotate_queries_long_value_is_read_as_ids(capsys, db, monkeypatch):
    # no file can have this name: it is an id, and an id the project does not have
    import ragjudge.tui

    monkeypatch.setattr(ragjudge.tui, "run_app", lambda *a, **k: pytest.fail("the app opened"))
    err = _refused(capsys, db, "annotate", "--annotator", "ana", "--queries", LONG_NAME)
    assert "--queries" in err and "not in this project" in err


# -- --db: every odd path is a message -----------------------------------------------------------


@pytest.mark.parametrize(("given", "needle"), [
    ("~no-such-user-here/x.db", "'~no-such-user-here' names no home folder"),  # was RuntimeError
    (f"{LONG_NAME}.db", "at most 255 bytes"),  # was OSError ENAMETOOLONG
    (f"{LONG_NAME}/x.db", "at most 255 bytes"),
    ("pipe.db", "is not a regular file"),  # a named pipe; was "empty file ... create one"
    ("sqlite://", "in memory"),  # init said "Created project" and kept nothing
    ("sqlite:///:memory:", "in memory"),
])
@pytest.mark.parametrize("command", [("status",), ("init",), ("demo", "--no-tui")])
def test_db_paths_that_cannot_be_a_project(capsys, tmp_path, monkeypatch, given, needle, command):
    # 'demo' built the project beside a device or pipe and renamed it over it: run as root
    # with --db /dev/null, that replaced the system's /dev/null with a file
    monkeypatch.chdir(tmp_path)
    if given == "pipe.db":
        os.mkfifo(tmp_path / given)
    code, _, err = _run(capsys, "--db", given, *command)
    _one_paragraph(code, err)
    assert needle in err
    assert sorted(os.listdir(tmp_path)) == (["pipe.db"] if given == "pipe.db" else [])
    if given == "pipe.db":
        assert not (tmp_path / given).is_file()


@pytest.mark.slow
def test_db_folder_and_text_file_and_missing_folder(capsys, tmp_path):
    notes = tmp_path / "notes.db"
    notes.write_text("not a database\n", encoding="utf-8")
    for given, command, needle in (
        (tmp_path, "init", "is a folder, not a project file"),  # init said "already exists"
        (tmp_path, "status", "is a folder, not a project file"),
        (notes, "status", "not a SQLite database"),
        (tmp_path / "missing" / "p.db", "init", "does not exist"),
    ):
        code, _, err = _run(capsys, "--db", given, command)
        _one_paragraph(code, err)
        assert needle in err, err
    assert notes.read_text(encoding="utf-8") == "not a database\n"


@pytest.mark.slow
def test_db_path_with_url_characters_is_the_file_named(capsys, tmp_path):
    # was: '--db q?x=1.db' made a project in the file 'q', and 'p%41.db' one in 'pA.db'
    for name in ("q?x=1.db", "p%41.db", "h#1.db"):
        code, _, err = _run(capsys, "--db", tmp_path / name, "init")
        assert code == 0, err
        assert (tmp_path / name).stat().st_size > 0
        code, out, err = _run(capsys, "--db", tmp_path / name, "status", "--format", "json")
        assert code == 0, err
        assert json.loads(out)["db"] == str(tmp_path / name)
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".db") == ["h#1.db", "p%41.db", "q?x=1.db"]


@pytest.mark.slow
def test_project_in_a_folder_this_user_cannot_write(tmp_path, db):
    # was: even 'status' failed ("read-only for this user"): WAL needs a -shm file beside it
    folder = tmp_path / "ro"
    folder.mkdir()
    project = folder / "p.db"
    shutil.copy(db, project)
    out = tmp_path / "out"
    out.mkdir()
    queries = out / "q.jsonl"
    queries.write_text('{"id": "qx", "text": "x"}\n', encoding="utf-8")
    before = (project.read_bytes(), project.stat().st_mtime_ns)
    folder.chmod(0o555)
    try:
        _check_binds(folder, "W_OK")
        reads = [["--db", project, *args] for args in (
            ["status", "--format", "json"], ["verify"], ["export", "qrels"],
            ["eval", "-m", "P@5", "--format", "json"], ["agree", "--format", "json"],
            ["disputes"], ["backup", "-o", out / "copy.db"])]
        writes = [["--db", project, *args] for args in (
            ["import", "queries", queries],
            ["adjudicate", "--query", "q1", "--chunk", "c05", "--grade", "1", "--reason", "x"],
            ["init"])]
        results = _restricted(*reads, *writes, cwd=tmp_path)
    finally:
        folder.chmod(0o755)
    for args, (code, _stdout, err) in zip(reads, results):
        assert code == 0, (args, err)
    assert json.loads(results[0][1])["queries"] == 5
    assert sqlite3.connect(out / "copy.db").execute("SELECT count(*) FROM queries").fetchone() == (5,)
    for args, (code, _, err) in zip(writes, results[len(reads):]):
        _one_paragraph(code, err)
        assert "read-only for this user" in err or "already exists" in err, (args, err)
    assert sorted(os.listdir(folder)) == ["p.db"]  # no -wal, -shm or lock file appeared
    assert (project.read_bytes(), project.stat().st_mtime_ns) == before


@pytest.mark.slow
def test_project_file_that_cannot_be_read(tmp_path, db):
    folder = tmp_path / "p"
    folder.mkdir()
    project = folder / "p.db"
    shutil.copy(db, project)
    project.chmod(0o000)
    try:
        _check_binds(project, "R_OK")
        probe = _restricted(["--db", project, "status"], ["--db", folder / "new.db", "init"],
                            cwd=tmp_path)
        folder.chmod(0o555)
        probe += _restricted(["--db", folder / "other.db", "init"], cwd=tmp_path)
    finally:
        folder.chmod(0o755)
        project.chmod(0o644)
    (code, _, err), (code2, _, err2), (code3, _, err3) = probe
    _one_paragraph(code, err)
    assert "permission denied" in err
    assert code2 == 0, err2  # a new project beside it is fine
    _one_paragraph(code3, err3)
    assert "may not write in the folder" in err3


# -- NUL characters and blank ids: refused alike by every reader, on both backends ---------------


NUL_FILES = {
    # kind: (file name, content with a NUL, line, field)
    "queries": ("q.jsonl", '{"id": "q9", "text": "a\\u0000b"}\n', 1, "text"),
    "chunks": ("c.csv", "id,text\nc99,ok\nc98,\"a\x00b\"\n", 3, "text"),
    "run": ("r.trec", "q1 Q0 c01 1 1.0 t\nq1 Q0 c\x0002 2 0.5 t\n", 2, "chunk_id"),
    "qrels": ("q.qrels", "q1 0 c01 1\nq1\x00 0 c02 1\n", 2, "query_id"),
    "labels": ("l.jsonl", '{"query_id": "q1", "chunk_id": "c01", "grade": 1, "note": "x\\u0000"}\n', 1, "note"),
    "facets": ("f.jsonl", '{"query_id": "q1", "facet": "\\u0000"}\n', 1, "facet"),
    "nuggets": ("n.jsonl", '{"query_id": "q1", "nugget": "n", "kind": "nugget"}\n{"query_id": "q2", "nugget": "a\\u0000"}\n', 2, "nugget"),
    "entities": ("e.jsonl", '{"query_id": "q1", "entity": "x\\u0000"}\n', 1, "entity"),
    "answers": ("a.jsonl", '{"query_id": "q1", "run": "bm25", "text": "t", "cited": ["c01", "c\\u0000"]}\n', 1, "cited[1]"),
    "guidelines": ("g.md", "# Guidelines\n\nGrade \x00 with care.\n", 3, None),
}


def _rows(db: str) -> dict[str, object]:
    from sqlalchemy import text

    from ragjudge.services.project.database import Project

    with Project.open(db) as project, project.connect() as connection:
        counts = {t: connection.execute(text(f"SELECT count(*) FROM {t}")).scalar() for t in (
            "queries", "chunks", "runs", "run_entries", "labels", "facets", "nuggets", "entities",
            "answers", "adjudications", "annotators")}
        counts["guidelines"] = project.get_setting("guidelines")
    return counts


@pytest.mark.parametrize("kind", sorted(NUL_FILES))
def test_nul_is_refused_at_import_on_both_backends(capsys, any_db, tmp_path, kind):
    # was: stored on SQLite; on PostgreSQL "ValueError: PostgreSQL text fields cannot contain NUL"
    make_small_project(any_db).close()
    name, content, line, field = NUL_FILES[kind]
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    before = _rows(any_db)
    code, _, err = _run(capsys, "--db", any_db, "import", kind, path)
    _one_paragraph(code, err)
    where = f"{path}, line {line}" + (f", field '{field}'" if field else "")
    assert where in err and "NUL character" in err, err
    assert _rows(any_db) == before


@pytest.mark.slow
def test_nul_in_a_beir_folder_is_refused(capsys, any_db, tmp_path):
    make_small_project(any_db).close()
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text('{"_id": "cx", "title": "t\\u0000", "text": "x"}\n', encoding="utf-8")
    (beir / "queries.jsonl").write_text('{"_id": "qx", "text": "x"}\n', encoding="utf-8")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nqx\tcx\t1\n", encoding="utf-8")
    before = _rows(any_db)
    code, _, err = _run(capsys, "--db", any_db, "import", "beir", beir)
    _one_paragraph(code, err)
    assert f"{beir / 'corpus.jsonl'}, line 1, field 'meta.title'" in err and "NUL" in err
    (beir / "corpus.jsonl").write_text('{"_id": "cx", "text": "x"}\n', encoding="utf-8")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nqx\tc\x00x\t1\n", encoding="utf-8")
    code, _, err = _run(capsys, "--db", any_db, "import", "beir", beir)
    _one_paragraph(code, err)
    assert "line 2, field 'corpus-id'" in err
    assert _rows(any_db) == before


def test_nul_typed_in_the_app_or_given_to_a_service_is_refused(any_db):
    # the app's notes, comments, flags, facets, nuggets and adjudications, a run's --name
    from ragjudge.services.gold import adjudication as agreement
    from ragjudge.services.transfer import importing
    from ragjudge.services.events import annotators as judging_annotators
    from ragjudge.services.labels import events as judging_events
    from ragjudge.services.labels import facets as judging_facets
    from ragjudge.services.project.database import Project

    make_small_project(any_db).close()
    before = _rows(any_db)
    with Project.open(any_db) as project:
        pair = {"annotator": "ana", "query_id": "q1", "chunk_id": "c05"}
        attempts = [
            lambda: judging_events.record_label(project, grade=1, note="a\x00", **pair),
            lambda: judging_events.flag_pair(project, note="\x00", **pair),
            lambda: judging_events.comment_pair(project, note="see \x00", **pair),
            lambda: judging_facets.add_facet(project, "q1", "fa\x00cet"),
            lambda: judging_facets.add_nugget(project, "q1", "nug\x00get"),
            lambda: judging_annotators.ensure_annotator(project, "an\x00a"),
            lambda: agreement.adjudicate(project, query_id="q1", chunk_id="c05", grade=1,
                                         reason="r\x00", access=rights(project, "lead")),
            lambda: importing.import_file(project, "run", "q1 Q0 c01 1 1.0 t\n", name="b\x00m"),
        ]
        for attempt in attempts:
            with pytest.raises(UsageError) as caught:
                attempt()
            assert "NUL" in str(caught.value) or "printable" in str(caught.value)
    assert _rows(any_db) == before


@pytest.mark.slow
def test_nul_in_what_a_command_reads_is_refused_alike(capsys, any_db, tmp_path, monkeypatch):
    # was on PostgreSQL: a DataError traceback from an id with a NUL in a --queries file, and
    # from the app's query finder given one
    import ragjudge.tui
    from ragjudge.services.labels.queue import JudgingQueue
    from ragjudge.services.project.database import Project

    monkeypatch.setattr(ragjudge.tui, "run_app", lambda *a, **k: pytest.fail("the app opened"))
    make_small_project(any_db).close()
    ids = tmp_path / "ids.txt"
    ids.write_text("q1\nq2\x00\n", encoding="utf-8")
    code, _, err = _run(capsys, "--db", any_db, "annotate", "--annotator", "ana", "--queries", ids)
    _one_paragraph(code, err)
    assert f"{ids}, line 2, field 'query_id'" in err and "NUL" in err
    with Project.open(any_db) as project:
        queue = JudgingQueue(project, "ana")
        assert queue.find_queries("query\x00") == []
        assert [q for q, _ in queue.find_queries("query 2")] == ["q2"]


@pytest.mark.parametrize(("kind", "content", "field"), [
    ("queries", '{"id": "   ", "text": "x"}\n', "id"),
    ("chunks", "id,text\n\"  \",x\n", "id"),
    ("run", '{"query_id": "q1", "chunks": ["c01", "  "]}\n', "chunks[1]"),
    ("run", '{"query_id": " ", "chunk_id": "c01", "score": 1.0}\n', "query_id"),
    ("labels", '{"query_id": "q1", "chunk_id": "c01", "grade": 1, "annotator": "  "}\n', "annotator"),
    ("answers", '{"query_id": "q1", "run": " ", "text": "t", "cited": []}\n', "run"),
])
def test_ids_of_only_spaces_are_refused(capsys, db, tmp_path, kind, content, field):
    # was: accepted, so a query, chunk, run or annotator nobody can see or type
    path = tmp_path / ("x.csv" if content.startswith("id,") else "x.jsonl")
    path.write_text(content, encoding="utf-8")
    err = _refused(capsys, db, "import", kind, path, *(["--name", "r"] if kind == "run" else []))
    assert f"{path}, line " in err and f"field '{field}'" in err and "only spaces" in err


@pytest.mark.slow
def test_run_names_of_only_spaces_are_refused(capsys, db, tmp_path):
    # was: eval printed a run named ' ' (import already refused one)
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 c05 1 1.0 t\n", encoding="utf-8")
    for args in (("eval", "--run", run, "--name", "  "), ("import", "run", run, "--name", "  ")):
        err = _refused(capsys, db, *args)
        assert "--name is empty" in err


# -- silent oddities, said out loud ----------------------------------------------------------------


@pytest.mark.slow
def test_annotate_queries_with_an_unknown_id_is_refused(capsys, db, monkeypatch):
    # was: 'q1,nope' opened a queue of q1 and dropped 'nope' without a word
    import ragjudge.tui

    monkeypatch.setattr(ragjudge.tui, "run_app", lambda *a, **k: pytest.fail("the app opened"))
    err = _refused(capsys, db, "annotate", "--annotator", "ana", "--queries", "q1,nope,q2,gone")
    assert "'nope', 'gone'" in err and "2 query ids" in err


def test_judging_queue_checks_queries_and_category_with_one_check(db):
    from ragjudge.services.labels.queue import JudgingQueue
    from ragjudge.services.project.database import Project

    with Project.open(db) as project:
        with pytest.raises(UsageError, match="'nope'"):
            JudgingQueue(project, "ana", queries=["q1", "nope"])
        # a known category with a typo elsewhere: still refused, though the queue has pairs
        with pytest.raises(UsageError, match=r"categories: factoid, policy"):
            JudgingQueue(project, "ana", queries=["q1"], category="Policy")
        assert JudgingQueue(project, "ana", queries=["q1", "q3"], category="factoid").query_ids == ["q1", "q3"]


@pytest.mark.slow
def test_contradicting_definitions_name_the_field_that_differs(capsys, db, tmp_path):
    # was: "both are about querie 'qd', with different ids"
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "qd", "text": "one"}\n{"id": "qd", "text": "two"}\n', encoding="utf-8")
    err = _refused(capsys, db, "import", "queries", path)
    assert "line 2, field 'text'" in err
    assert "both are about query 'qd', but the 'text' differs" in err and "querie " not in err
    chunks = tmp_path / "c.jsonl"
    chunks.write_text('{"id": "cd", "text": "x"}\n{"id": "cd", "text": "x", "doc_id": "d2"}\n',
                      encoding="utf-8")
    err = _refused(capsys, db, "import", "chunks", chunks)
    assert "chunk 'cd', but the 'doc_id' differs" in err and "field 'doc_id'" in err


def test_beir_folder_holding_no_run_is_named(capsys, db, tmp_path):
    # was: "a BEIR folder holds no run" without saying which path was taken for one
    folder = tmp_path / "runs"
    folder.mkdir()
    err = _refused(capsys, db, "import", "run", folder)
    assert f"{folder}: is a folder, not a run file: give the file itself" in err


def test_stratifying_by_a_missing_field_suggests_fields_the_queries_have(capsys, db, tmp_path):
    # was: "--by category: no query has a 'category' value. Use --by category or ..."
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q1", "text": "x", "meta": {"lang": "en", "source": "faq"}}\n',
                       encoding="utf-8")
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 c01 1\n", encoding="utf-8")
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 c01 1 1.0 t\n", encoding="utf-8")
    code, _, err = _run(capsys, "eval", "--qrels", qrels, "--run", run, "--by", "category",
                        "--queries", queries)
    _one_paragraph(code, err)
    assert "The queries have: lang, source; give one of them to --by." in err
    assert "Use --by category" not in err


@pytest.mark.slow
def test_empty_qrels_file_is_named_not_the_project(capsys, db, tmp_path):
    # was: "(the project has no labels yet ...)" for an empty --qrels file
    qrels = tmp_path / "empty.qrels"
    qrels.write_text("", encoding="utf-8")
    err = _refused(capsys, db, "eval", "--qrels", qrels, "--run", "bm25")
    assert f"the qrels file {qrels} holds no judgments" in err
    assert "the project has no labels" not in err


@pytest.mark.slow
@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_label_time_outside_the_years_utc_holds_is_refused(capsys, db, tmp_path, stamp):
    # was: OverflowError: date value out of range, as a traceback
    labels = tmp_path / "l.jsonl"
    labels.write_text(json.dumps({"query_id": "q1", "chunk_id": "c01", "grade": 1,
                                  "created_at": stamp}) + "\n", encoding="utf-8")
    err = _refused(capsys, db, "import", "labels", labels)
    assert f"{labels}, line 1, field 'created_at'" in err and "outside the years 1 to 9999" in err


@pytest.mark.slow
def test_empty_run_file_is_refused_by_eval_as_by_import(capsys, db, tmp_path):
    # was: eval scored the empty run 0 on every query without a word; import refuses it
    run = tmp_path / "empty.trec"
    run.write_text("\n", encoding="utf-8")
    for args in (("eval", "--run", run), ("import", "run", run)):
        err = _refused(capsys, db, *args)
        assert f"{run}: the file holds no run lines." in err


@pytest.mark.slow
def test_busy_timeout_from_the_environment_is_checked(db, tmp_path):
    # was: ValueError: invalid literal for int() with base 10: 'abc', as a traceback
    env = dict(os.environ, RAGJUDGE_BUSY_TIMEOUT_MS="abc")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(ragjudge.__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    result = subprocess.run([sys.executable, "-m", "ragjudge", "--db", db, "status"],
                            capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
                            check=False)
    _one_paragraph(result.returncode, result.stderr)
    assert "RAGJUDGE_BUSY_TIMEOUT_MS='abc'" in result.stderr
    assert "from 0 to 3,600,000" in result.stderr


# -- the app: no action on a closing app ----------------------------------------------------------


@pytest.mark.slow
def test_keys_queued_behind_quit_do_nothing(project):
    # was: 'q' then 'e' typed quickly raised NoMatches from the evaluation screen being mounted
    # into an app that was tearing its screens down
    import asyncio

    from textual import events

    from ragjudge.tui import make_app
    from ragjudge.tui.screens.judge import JudgeScreen

    async def scenario() -> None:
        app = make_app(project, annotator="alice", start="judge")
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            assert isinstance(app.screen, JudgeScreen)
            for key in ("q", "e", "a", "g", "h", "question_mark", "2"):  # no pause between
                event = events.Key(key, None if len(key) > 1 else key)
                event.set_sender(app)
                app._driver.send_message(event)
            await pilot.pause()
        assert app.return_code == 0
        assert app._exception is None

    asyncio.run(scenario())
    from sqlalchemy import func, select

    from ragjudge.store.schema import Label

    with project.read() as session:  # the '2' behind 'q' recorded nothing
        assert session.scalar(select(func.count()).select_from(Label)) == 0


@pytest.mark.slow
def test_nul_inside_an_answer_sentence_is_refused(capsys, db, tmp_path):
    # nested records (an answer's sentences) pass the same text check as top-level fields
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 c01 1 1.0 bm25\n", encoding="utf-8")
    assert _run(capsys, "--db", db, "import", "run", run, "--name", "fresh")[0] == 0
    before = _rows(db)
    line = ('{"query_id": "q1", "run": "fresh", "sentences": [{"text": "fine.", "citations": ["c01"]}, '
            '{"text": "bad \\u0000 one.", "citations": []}]}\n')
    answers = tmp_path / "a.jsonl"
    answers.write_text(line, encoding="utf-8")
    code, _, err = _run(capsys, "--db", db, "import", "answers", answers)
    _one_paragraph(code, err)
    assert "line 1" in err and "field 'sentences[1].text'" in err and "NUL" in err
    assert _rows(db) == before
