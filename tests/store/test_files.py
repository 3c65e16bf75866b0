"""Every file ragjudge writes goes one way (``ragjudge.files``): atomically for regular files,
never onto a project or its side files, with one clear paragraph for a disk that is full, a name
too long or a folder without permission; CSV round-trips any note; exports shown on a terminal
carry no control characters."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import select
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from projectkit import make_small_project

from ragjudge.services.overview import project_status
from ragjudge import files
from ragjudge.cli import main
from ragjudge.services.labels.events import record_label
from ragjudge.services.project.database import Project

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXPORTS = [("qrels",), ("labels",), ("run", "bm25"), ("facets",), ("nuggets",)]
HOSTILE_NOTES = ["bare\rreturn", "crlf\r\nline", "lf\nline", 'say "no"', "a, b, c", '"\r\n,"', "\x1b]0;t\x07"]


from clikit import no_project  # noqa: E402, F401 - autouse: no project named by the environment


@pytest.fixture()
def db(tmp_path) -> Path:
    path = tmp_path / "project.db"
    project = make_small_project(str(path))
    for number, note in enumerate(HOSTILE_NOTES):
        record_label(project, annotator="ann", query_id="q1", chunk_id=f"c{number + 1:02d}",
                     grade=number % 4, note=note)
    project.close()
    return path


def run(capsys, *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def cli(*args: object, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("RAGJUDGE_DB", None)
    return subprocess.run([sys.executable, "-m", "ragjudge", *map(str, args)], capture_output=True,
                          env=env, timeout=120, **kwargs)


def digest(*paths: Path) -> dict[str, str | None]:
    """The bytes of each file (None when absent), to prove that nothing changed."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None for p in paths}


def side_files(db: Path) -> list[Path]:
    return [Path(f"{db}{suffix}") for suffix in ("-wal", "-shm", "-journal", ".writelock", ".importlock")]


def one_paragraph(err: str) -> bool:
    return "Traceback" not in err and len(err.strip().splitlines()) == 1


def label_count(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        count = connection.execute("SELECT count(*) FROM labels").fetchone()[0]
    connection.close()
    return count


# -- no command writes over a project -------------------------------------------------------


@pytest.mark.parametrize("kind", EXPORTS, ids=[k[0] for k in EXPORTS])
@pytest.mark.parametrize("fmt", ["default", "csv"])
def test_export_onto_the_open_project_is_refused(capsys, db, kind, fmt):
    options = ["--format", "csv"] if fmt == "csv" else []
    before = digest(db, *side_files(db))
    code, _, err = run(capsys, "--db", db, "export", *kind, *options, "-o", db)
    assert code == 2, err
    assert str(db) in err and "ragjudge project" in err and one_paragraph(err)
    assert digest(db, *side_files(db)) == before
    assert label_count(db) == len(HOSTILE_NOTES)


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal", ".writelock", ".importlock"])
def test_export_onto_a_side_file_of_the_project_is_refused(capsys, db, suffix):
    side = Path(f"{db}{suffix}")
    before = digest(db, *side_files(db))
    code, _, err = run(capsys, "--db", db, "export", "qrels", "-o", side)
    assert code == 2 and str(side) in err and one_paragraph(err)
    assert digest(db, *side_files(db)) == before


def test_export_onto_a_partial_file_of_a_backup_in_progress_is_refused(capsys, db, tmp_path):
    partial = tmp_path / f".copy.db.partial-{os.getpid()}"
    partial.write_bytes(b"a backup being written")
    code, _, err = run(capsys, "--db", db, "export", "labels", "-o", partial)
    assert code == 2 and str(partial) in err and one_paragraph(err)
    assert partial.read_bytes() == b"a backup being written"


def test_any_other_project_is_refused_by_export_and_backup(capsys, db, tmp_path):
    other = tmp_path / "team.db"
    make_small_project(str(other)).close()
    before = digest(other)
    for args in (["export", "qrels", "-o", other], ["export", "labels", "--format", "csv", "-o", other],
                 ["backup", "-o", other, "--force"]):
        code, _, err = run(capsys, "--db", db, *args)
        assert code == 2, (args, err)
        assert str(other) in err and "ragjudge project" in err and one_paragraph(err)
    assert digest(other) == before


def test_backup_onto_the_project_itself_is_refused(capsys, db):
    before = digest(db, *side_files(db))
    code, _, err = run(capsys, "--db", db, "backup", "-o", db, "--force")
    assert code == 2 and str(db) in err and one_paragraph(err)
    assert digest(db, *side_files(db)) == before


def test_a_project_in_wal_mode_with_its_tables_still_in_the_log_is_recognised(tmp_path):
    """A project someone has open may hold its schema in the write-ahead log only."""
    path = tmp_path / "open.db"
    holder = sqlite3.connect(path)
    holder.execute("PRAGMA journal_mode = WAL")
    holder.execute("PRAGMA wal_autocheckpoint = 0")
    for table in ("alembic_version", "settings", "labels", "queries"):
        holder.execute(f"CREATE TABLE {table} (x)")
    holder.commit()
    try:
        assert Path(f"{path}-wal").stat().st_size > 0
        assert files.project_kind(path) == "project"
        with pytest.raises(files.OutputError, match="ragjudge project"):
            with files.writing(path) as out:
                out.write("x")
    finally:
        holder.close()


def test_recognising_a_project_changes_nothing(tmp_path, db):
    other = tmp_path / "plain.db"
    connection = sqlite3.connect(other)
    connection.execute("CREATE TABLE notes (x)")
    connection.commit()
    connection.close()
    before = digest(db, *side_files(db), other, *side_files(other))
    assert files.project_kind(db) == "project"
    assert files.project_kind(other) is None
    assert files.project_kind(tmp_path / "absent.db") is None
    assert digest(db, *side_files(db), other, *side_files(other)) == before
    # a SQLite file that is not a project may be replaced by an export
    with files.writing(other) as out:
        out.write("replaced\n")
    assert other.read_text() == "replaced\n"


# -- demo --fresh -----------------------------------------------------------------------------


def test_demo_fresh_refuses_a_project_it_did_not_build(capsys, db):
    before = digest(db, *side_files(db))
    code, _, err = run(capsys, "--db", db, "demo", "--fresh", "--no-tui")
    assert code == 2, err
    assert str(db) in err and "--db" in err and one_paragraph(err)
    assert digest(db, *side_files(db)) == before


def test_demo_fresh_rebuilds_a_demo_project(capsys, tmp_path):
    demo = tmp_path / "demo.db"
    assert run(capsys, "--db", demo, "demo", "--no-tui")[0] == 0
    with Project.open(str(demo)) as project:
        assert project.get_setting("demo") is True
        labels = project_status(project)["labels"]
        record_label(project, annotator="me", query_id="q01", chunk_id="faq-claims-01", grade=1)
    code, _, err = run(capsys, "--db", demo, "demo", "--fresh", "--no-tui")
    assert code == 0, err
    with Project.open(str(demo)) as project:
        assert project_status(project)["labels"] == labels  # my practice label is gone: a fresh demo
        assert project.get_setting("demo") is True
    assert not [p.name for p in tmp_path.iterdir() if ".partial-" in p.name]


@pytest.mark.postgres
def test_demo_fresh_refuses_a_postgresql_project_that_is_not_the_demo(capsys, pg_url):
    make_small_project(pg_url).close()
    with Project.open(pg_url) as project:
        before = project_status(project)
    code, _, err = run(capsys, "--db", pg_url, "demo", "--fresh", "--no-tui")
    assert code == 2 and one_paragraph(err), err
    with Project.open(pg_url) as project:
        assert project_status(project) == before
        assert project.get_setting("demo") is None


@pytest.mark.postgres
def test_demo_builds_on_an_empty_postgresql_database(capsys, pg_url):
    assert run(capsys, "--db", pg_url, "demo", "--no-tui")[0] == 0
    code, _, err = run(capsys, "--db", pg_url, "demo", "--fresh", "--no-tui")
    assert code == 0, err
    with Project.open(pg_url) as project:
        assert project.get_setting("demo") is True and project_status(project)["queries"] >= 40


# -- leftovers of a killed backup -------------------------------------------------------------


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_next_backup_removes_what_a_killed_backup_left(capsys, db, tmp_path):
    out = tmp_path / "backups"
    out.mkdir()
    pid = dead_pid()
    leftovers = [out / f".monday.db.partial-{pid}", out / f".monday.db.partial-{pid}-wal",
                 out / f".monday.db.partial-{pid}-shm", out / f".monday.db.partial-{pid}-journal"]
    for leftover in leftovers:
        leftover.write_bytes(b"half a backup")
    running = out / f".tuesday.db.partial-{os.getpid()}"  # a write still under way: kept
    running.write_bytes(b"in progress")
    others = [out / "notes.partial-12", out / ".hidden", out / f"monday.db.partial-{pid}",
              out / f".x.partial-{pid}.bak"]
    for other in others:
        other.write_bytes(b"not ragjudge's")
    code, _, err = run(capsys, "--db", db, "backup", "-o", out / "wednesday.db")
    assert code == 0, err
    assert not [p for p in leftovers if p.exists()]
    assert running.exists() and all(p.exists() for p in others)
    assert label_count(out / "wednesday.db") == len(HOSTILE_NOTES)


KILLED_WRITER = """
import os, sys, sqlite3
from ragjudge import files
with files.replacing(sys.argv[1]) as partial:
    connection = sqlite3.connect(partial)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("CREATE TABLE t (x)")
    connection.execute("INSERT INTO t VALUES (1)")
    connection.commit()
    print(partial, flush=True)
    os.kill(os.getpid(), 9)
"""


def test_a_backup_killed_while_writing_is_cleaned_by_the_next(capsys, db, tmp_path):
    target = tmp_path / "nightly.db"
    killed = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(target)], capture_output=True,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    partial = Path(killed.stdout.strip())
    assert partial.exists() and Path(f"{partial}-wal").exists() and not target.exists()
    code, _, err = run(capsys, "--db", db, "backup", "-o", target)
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    assert label_count(target) == len(HOSTILE_NOTES)


# -- atomic writes and their errors -----------------------------------------------------------


def test_a_failed_export_leaves_the_old_file_and_no_partial(capsys, tmp_path):
    db = tmp_path / "p.db"
    project = make_small_project(str(db))

    def spaced(session) -> None:
        from ragjudge.store.schema import Query, RunEntry

        session.add(Query(id="q 9", text="a query id with a space"))
        session.flush()
        session.add(RunEntry(run="bm25", query_id="q 9", chunk_id="c01", rank=1, score=1.0))

    project.write(spaced)
    project.close()
    target = tmp_path / "bm25.trec"
    target.write_text("the old run\n")
    code, _, err = run(capsys, "--db", db, "export", "run", "bm25", "-o", target)
    assert code == 2 and one_paragraph(err), err
    assert target.read_text() == "the old run\n"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_an_export_replaces_a_file_whole_and_keeps_its_mode(capsys, db, tmp_path):
    target = tmp_path / "gold.qrels"
    target.write_text("x" * 100_000)
    os.chmod(target, 0o640)
    code, _, err = run(capsys, "--db", db, "export", "qrels", "-o", target)
    assert code == 0, err
    assert target.read_text().startswith("q1 0 c01 0\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_gzipped_export_is_written_atomically_too(capsys, db, tmp_path):
    import gzip

    target = tmp_path / "labels.jsonl.gz"
    code, _, err = run(capsys, "--db", db, "export", "labels", "-o", target)
    assert code == 0, err
    lines = gzip.decompress(target.read_bytes()).decode().splitlines()
    assert [json.loads(line)["note"] for line in lines] == HOSTILE_NOTES


def test_dev_full_says_the_disk_is_full(capsys, db):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    code, _, err = run(capsys, "--db", db, "export", "labels", "-o", "/dev/full")
    assert code == 2 and "/dev/full" in err and "disk is full" in err and one_paragraph(err), err


@pytest.mark.parametrize("where", ["write", "fsync", "replace"])
def test_disk_full_leaves_no_partial_file(capsys, db, tmp_path, monkeypatch, where):
    target = tmp_path / "out" / "labels.jsonl"
    target.parent.mkdir()
    target.write_text("before\n")
    real = {"write": os.write, "fsync": os.fsync, "replace": os.replace}[where]

    def full(*args):
        if where == "fsync" and not _is_file_fd(args[0]):
            return real(*args)
        raise OSError(errno.ENOSPC, "No space left on device")

    if where == "write":
        monkeypatch.setattr(files._Raw, "write", lambda raw, data: full())
    else:
        monkeypatch.setattr(files.os, where, full)
    code, _, err = run(capsys, "--db", db, "export", "labels", "-o", target)
    assert code == 2 and "disk is full" in err and str(target) in err and one_paragraph(err)
    assert sorted(p.name for p in target.parent.iterdir()) == ["labels.jsonl"]
    assert target.read_text() == "before\n"


def _is_file_fd(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


@pytest.mark.parametrize("command", [("export", "qrels"), ("export", "labels", "--format", "csv"), ("backup",)])
def test_a_name_too_long_says_so(capsys, db, tmp_path, command):
    target = tmp_path / ("n" * 300 + ".out")
    code, _, err = run(capsys, "--db", db, *command, "-o", target)
    assert code == 2 and "too long" in err and one_paragraph(err), err
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("project.db")) == []


def test_a_name_just_short_enough_is_written(capsys, db, tmp_path):
    target = tmp_path / ("n" * 249 + ".qrels")
    code, _, err = run(capsys, "--db", db, "export", "qrels", "-o", target)
    assert code == 0, err
    assert target.read_text().startswith("q1 0 c01")


@pytest.mark.parametrize("command", [("export", "qrels"), ("backup",)])
def test_a_folder_without_permission_says_so(capsys, db, tmp_path, monkeypatch, command):
    target = tmp_path / "locked" / "gold.out"
    target.parent.mkdir()
    real = os.open

    def denied(path, *args, **kwargs):
        if Path(path).parent == target.parent:
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(files.os, "open", denied)
    code, _, err = run(capsys, "--db", db, *command, "-o", target)
    assert code == 2 and "permission denied" in err and str(target) in err and one_paragraph(err), err
    assert list(target.parent.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into any folder")
def test_a_real_folder_without_permission_says_so(db, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        result = cli("--db", db, "export", "qrels", "-o", locked / "gold.qrels")
        err = result.stderr.decode()
        assert result.returncode == 2 and "permission" in err.lower() and one_paragraph(err)
    finally:
        locked.chmod(0o700)


def test_a_missing_folder_and_a_folder_as_target_say_so(capsys, db, tmp_path):
    code, _, err = run(capsys, "--db", db, "export", "qrels", "-o", tmp_path / "nope" / "g.qrels")
    assert code == 2 and "does not exist" in err and one_paragraph(err)
    code, _, err = run(capsys, "--db", db, "export", "qrels", "-o", tmp_path)
    assert code == 2 and "folder" in err and one_paragraph(err)


def test_dev_stdout_is_written_in_place(db):
    piped = cli("--db", db, "export", "qrels", "-o", "/dev/stdout")
    assert piped.returncode == 0 and piped.stdout.startswith(b"q1 0 c01 0\n"), piped.stderr


def test_a_fifo_is_written_in_place(capsys, db, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    code, _, err = run(capsys, "--db", db, "export", "qrels", "-o", fifo)
    reader.join(timeout=60)
    assert code == 0, err
    assert received and received[0].startswith(b"q1 0 c01 0\n")
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_symlinked_target_replaces_the_file_it_points_to(capsys, db, tmp_path):
    real = tmp_path / "real.qrels"
    real.write_text("old\n")
    link = tmp_path / "link.qrels"
    link.symlink_to(real)
    code, _, err = run(capsys, "--db", db, "export", "qrels", "-o", link)
    assert code == 0, err
    assert link.is_symlink() and real.read_text().startswith("q1 0 c01 0\n")


def test_the_migration_backup_goes_through_the_same_write(tmp_path, monkeypatch):
    from ragjudge.store import migrate

    calls: list[Path] = []
    real = files.replacing

    def spy(target, **kwargs):
        calls.append(Path(target))
        return real(target, **kwargs)

    monkeypatch.setattr(files, "replacing", spy)
    db = tmp_path / "old.db"
    make_small_project(str(db)).close()
    copy = migrate.backup_before_migration(db, "0001")
    assert calls == [copy] and files.project_kind(copy) == "project"
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]


# -- CSV --------------------------------------------------------------------------------------


def test_csv_round_trips_notes_with_line_breaks_quotes_and_commas(capsys, db, tmp_path):
    target = tmp_path / "labels.csv"
    code, _, err = run(capsys, "--db", db, "export", "labels", "--format", "csv", "-o", target)
    assert code == 0, err
    assert b'"bare\rreturn"' in target.read_bytes()
    copy = tmp_path / "copy.db"
    make_small_project(str(copy)).close()
    code, _, err = run(capsys, "--db", copy, "import", "labels", target)
    assert code == 0, err
    with sqlite3.connect(copy) as connection:
        notes = [row[0] for row in connection.execute("SELECT note FROM labels ORDER BY chunk_id")]
    connection.close()
    assert notes == HOSTILE_NOTES


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                        max_size=12), min_size=1, max_size=4))
def test_csv_cells_read_back_as_written(notes):
    import io

    from ragjudge.formats import read_records, write_records

    records = [{"query_id": "q1", "chunk_id": f"c{i}", "grade": 1, "note": note or None}
               for i, note in enumerate(notes)]
    out = io.StringIO()
    write_records("labels", records, out, "csv")
    back = list(read_records("labels", out.getvalue().encode(), "csv"))
    assert [r.note or None for r in back] == [r["note"] for r in records]


# -- exports shown on a terminal --------------------------------------------------------------


@pytest.fixture()
def hostile(tmp_path) -> Path:
    db = tmp_path / "hostile.db"
    project = make_small_project(str(db))

    def add(session) -> None:
        from ragjudge.store.schema import Query, Run, RunEntry

        session.add(Query(id="q\x1b]0;owned\x07", text="hostile id"))
        session.add(Run(name="r\x07un"))
        session.flush()
        session.add(RunEntry(run="r\x07un", query_id="q\x1b]0;owned\x07", chunk_id="c01", rank=1, score=1.0))

    project.write(add)
    record_label(project, annotator="ann", query_id="q\x1b]0;owned\x07", chunk_id="c01", grade=2,
                 note="\x1b]52;c;aGk=\x07 and \x9b31m red")
    project.close()
    return db


def on_a_terminal(*args: object) -> bytes:
    """What ``ragjudge ARGS`` writes to its standard output when that is a terminal (a pty)."""
    master, slave = os.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "dumb"}
    env.pop("RAGJUDGE_DB", None)
    process = subprocess.Popen([sys.executable, "-m", "ragjudge", *map(str, args)], stdout=slave,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    chunks = []
    while select.select([master], [], [], 60)[0]:
        try:
            data = os.read(master, 65536)
        except OSError:  # the other end closed
            break
        if not data:
            break
        chunks.append(data)
    process.wait(timeout=60)
    os.close(master)
    assert process.returncode == 0, process.stderr.read()
    return b"".join(chunks)


def in_process_on_a_terminal(monkeypatch, *args: object) -> str:
    """The same in this process: standard output replaced by the slave end of a pty."""
    master, slave = os.openpty()
    stream = open(slave, "w", encoding="utf-8", newline="\n", closefd=True)  # noqa: SIM115
    monkeypatch.setattr(sys, "stdout", stream)
    try:
        code = main([str(a) for a in args])
        stream.flush()
    finally:
        monkeypatch.undo()
        stream.close()
    chunks = []
    while select.select([master], [], [], 0)[0]:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert code == 0
    return b"".join(chunks).decode("utf-8")


def assert_no_controls(text: str) -> None:
    assert "q␛]0;owned␇" in text
    for control in ("\x1b", "\x07", "\x9b"):
        assert control not in text


def test_an_export_shown_on_a_terminal_carries_no_control_characters(hostile):
    text = on_a_terminal("--db", hostile, "export", "labels", "--format", "csv").decode("utf-8")
    assert_no_controls(text)
    assert "␛]52;c;aGk=␇ and ⟨U+009B⟩31m red" in text


@pytest.mark.parametrize("args", [("labels",), ("run", "r\x07un"), ("qrels", "--rule", "annotator:ann"),
                                  ("labels", "--format", "csv")],
                         ids=["jsonl", "trec-run", "trec-qrels", "csv"])
def test_every_export_format_shown_on_a_terminal_is_made_visible(monkeypatch, hostile, args):
    text = in_process_on_a_terminal(monkeypatch, "--db", hostile, "export", *args)
    assert_no_controls(text)
    if args[0] == "run":
        assert text.splitlines()[0].split() == ["q␛]0;owned␇", "Q0", "c01", "1", "1.0", "r␇un"]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_exports_to_a_file_or_a_pipe_keep_the_bytes_as_stored(capsys, hostile, tmp_path, fmt):
    import csv
    import json

    note = "\x1b]52;c;aGk=\x07 and \x9b31m red"
    code, piped, _ = run(capsys, "--db", hostile, "export", "labels", "--format", fmt)
    assert code == 0
    target = tmp_path / f"labels.{fmt}"
    assert run(capsys, "--db", hostile, "export", "labels", "--format", fmt, "-o", target)[0] == 0
    assert target.read_bytes() == piped.encode("utf-8")
    # read as plain CSV or JSON: ragjudge's import refuses the id, which holds an ESC
    with open(target, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle)) if fmt == "csv" else [json.loads(line) for line in handle]
    assert note in [row.get("note") for row in rows]


def test_trec_to_a_file_keeps_the_ids_as_stored(capsys, hostile, tmp_path):
    target = tmp_path / "r.trec"
    assert run(capsys, "--db", hostile, "export", "run", "r\x07un", "-o", target)[0] == 0
    assert target.read_bytes() == b"q\x1b]0;owned\x07 Q0 c01 1 1.0 r\x07un\n"
