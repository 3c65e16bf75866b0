"""Databases that are not right, through the real command line (``python -m ragjudge``, and
the same entry point ``ragjudge.cli.main`` called in-process where a fresh interpreter per
command would only add start-up time): a
missing folder, a locked, read-only, corrupt or truncated file, a file that is not a ragjudge
project, a newer schema — each gets a clear one-paragraph message, exit 2, and the file is not
changed (same bytes, same modification time, no files added next to it). An older schema is
migrated after a backup copy is written next to it."""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from projectkit import make_small_project
from reliability_helpers import cli_in_process as run

pytestmark = pytest.mark.slow

FAST_LOCK = (
    "import sys, ragjudge.store.engine as engine; engine.BUSY_TIMEOUT_MS = 300; "
    "import ragjudge.services.project.lite as lite; lite.DEFAULT_BUSY_TIMEOUT_MS = 300; "
    "from ragjudge.cli import main; sys.exit(main())"
)
"""The real entry point with a 0.3 s busy timeout instead of 15 s, so that the locked-file test
does not wait 15 s: the full opening's and the lean read-only path's (``status`` starts on the
latter, which takes the default unless ``RAGJUDGE_BUSY_TIMEOUT_MS`` sends it to the former)."""

LABEL_WRITE = (
    "import sys\n"
    "from ragjudge.errors import RagjudgeError\n"
    "from ragjudge.services.labels.events import record_label\n"
    "from ragjudge.services.project.database import Project\n"
    "try:\n"
    "    with Project.open(sys.argv[1]) as p:\n"
    "        record_label(p, annotator='zoe', query_id='q1', chunk_id='c01', grade=2)\n"
    "except RagjudgeError as exc:\n"
    "    print(f'ragjudge: {exc}', file=sys.stderr); sys.exit(2)\n"
)
"""A label written the way the app writes one (the TUI calls record_label on a keypress)."""


def cli(*args: str, code: str | None = None, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    command = [*prefix, sys.executable, *(["-c", code] if code else ["-m", "ragjudge"]), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


IN_A_FRESH_PROCESS = {"status"}
"""Which of :func:`commands` run as ``python -m ragjudge``; the others run in-process."""


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir()) if p.is_file()}


def write_inputs(folder: Path) -> tuple[Path, Path]:
    queries = folder / "in-queries.jsonl"
    queries.write_text('{"id": "qx", "text": "where is my parcel"}\n', encoding="utf-8")
    labels = folder / "in-labels.jsonl"
    labels.write_text('{"query_id": "q1", "chunk_id": "c01", "grade": 2, "annotator": "zoe"}\n',
                      encoding="utf-8")
    return queries, labels


def commands(db: str, folder: Path) -> dict[str, tuple[tuple[str, ...], str | None]]:
    """Every way of touching a project this test tries: (arguments, python -c code or None)."""
    queries, labels = write_inputs(folder)
    return {
        "status": (("--db", db, "status"), None),
        "import queries": (("import", "queries", str(queries), "--db", db), None),
        "import labels": (("--db", db, "import", "labels", str(labels)), None),
        "label write": ((db,), LABEL_WRITE),
        "verify": (("--db", db, "verify"), None),
    }


def assert_clear_refusal(result: subprocess.CompletedProcess, *needles: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    err = result.stderr.strip()
    assert "Traceback" not in err and err.startswith("ragjudge: "), err
    assert len(err.splitlines()) == 1, f"not one paragraph: {err!r}"
    lowered = err.lower()
    assert any(n in lowered for n in needles), f"{err!r} does not say {needles}"


def refuse_everywhere(db: Path, *needles: str, prefix: tuple[str, ...] = (), code_for_cli: str | None = None) -> None:
    folder = db.parent
    inputs = folder / "inputs"
    inputs.mkdir(exist_ok=True)
    for name, (args, code) in commands(str(db), inputs).items():
        before = snapshot(folder)
        if prefix or name in IN_A_FRESH_PROCESS:
            result = cli(*args, code=code or code_for_cli, prefix=prefix)
        else:
            result = run(*args, code=code)
        assert_clear_refusal(result, *needles)
        assert snapshot(folder) == before, f"{name} changed files in {folder}"


# -- the cases -------------------------------------------------------------------------------


def test_folder_does_not_exist(tmp_path):
    db = tmp_path / "no" / "such" / "folder" / "p.db"
    for name, (args, code) in commands(str(db), tmp_path).items():
        result = cli(*args, code=code) if name in IN_A_FRESH_PROCESS else run(*args, code=code)
        assert_clear_refusal(result, "does not exist")
        assert not (tmp_path / "no").exists(), name
    assert_clear_refusal(cli("--db", str(db), "init"), "does not exist")
    assert not (tmp_path / "no").exists()


def test_text_file_is_not_a_project(tmp_path):
    db = tmp_path / "notes.db"
    db.write_text("shopping list\n" * 50, encoding="utf-8")
    refuse_everywhere(db, "not a sqlite database", "not a ragjudge project")


def test_binary_junk_is_not_a_project(tmp_path):
    db = tmp_path / "junk.db"
    db.write_bytes(random.Random(3).randbytes(10_000))
    refuse_everywhere(db, "not a sqlite database", "not a ragjudge project")


def test_another_sqlite_database_is_not_a_project(tmp_path):
    db = tmp_path / "crm.db"
    other = sqlite3.connect(db)
    other.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    other.execute("INSERT INTO customers (name) VALUES ('Ada')")
    other.commit()
    other.close()
    refuse_everywhere(db, "not a ragjudge project")


def test_empty_file_is_not_opened_as_a_project(tmp_path):
    db = tmp_path / "empty.db"
    db.touch()
    refuse_everywhere(db, "no ragjudge project", "init")


def _project_copy(tmp_path: Path, name: str) -> Path:
    db = tmp_path / name
    make_small_project(str(db)).close()
    return db


def test_corrupt_pages(tmp_path):
    db = _project_copy(tmp_path, "corrupt.db")
    data = bytearray(db.read_bytes())
    rng = random.Random(11)
    for i in range(4096, len(data)):  # keep the header page, scramble every other page
        data[i] = rng.randrange(256)
    db.write_bytes(bytes(data))
    refuse_everywhere(db, "damaged", "malformed", "corrupt")


def test_truncated_file(tmp_path):
    db = _project_copy(tmp_path, "truncated.db")
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])
    refuse_everywhere(db, "damaged", "malformed", "corrupt")


def test_newer_schema_version(tmp_path):
    db = _project_copy(tmp_path, "future.db")
    raw = sqlite3.connect(db)
    raw.execute("UPDATE alembic_version SET version_num = '0999'")
    raw.commit()
    raw.close()
    refuse_everywhere(db, "newer ragjudge")


HOLD_LOCK = (
    "import sqlite3, sys\n"
    "holder = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "holder.execute('PRAGMA locking_mode = EXCLUSIVE')\n"
    "holder.execute('BEGIN EXCLUSIVE')\n"
    "holder.execute(\"INSERT INTO settings (key, value) VALUES ('held', '1')\")\n"
    "print('holding', flush=True)\n"
    "sys.stdin.read()\n"
    "holder.execute('ROLLBACK')\n"
)
"""Another process holding an exclusive lock on the project (as a long import by another tool
or a stuck writer would). It runs in its own process: POSIX locks are per process, and this test
process reading the file would release a lock it held itself."""


def test_file_locked_by_another_process(tmp_path, monkeypatch):
    db = _project_copy(tmp_path, "locked.db")
    before = db.read_bytes(), db.stat().st_mtime_ns
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        import ragjudge.store.engine as engine

        monkeypatch.setattr(engine, "BUSY_TIMEOUT_MS", 300)
        todo = commands(str(db), tmp_path)
        del todo["verify"], todo["import labels"]  # each try waits out the lock: keep it to three
        for name, (args, code) in todo.items():
            if name in IN_A_FRESH_PROCESS:
                result = cli(*args, code=FAST_LOCK)
            else:
                result = run(*args, code=code)
            assert_clear_refusal(result, "locked")
            assert (db.read_bytes(), db.stat().st_mtime_ns) == before, name
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    # once the other process let go, the project is fine and holds none of its rolled-back write
    result = cli("--db", str(db), "verify")
    assert result.returncode == 0, result.stdout + result.stderr


def _read_only_prefix() -> tuple[str, ...]:
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot make a file read-only for root")
    caps = "-dac_override,-dac_read_search,-fowner"
    return (setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}")


def test_read_only_file(tmp_path):
    prefix = _read_only_prefix()
    db = _project_copy(tmp_path, "readonly.db")
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    db.chmod(0o444)
    try:
        before = db.read_bytes(), db.stat().st_mtime_ns
        todo = commands(str(db), inputs)
        # reading a read-only project works ...
        for name in ("status", "verify"):
            args, code = todo.pop(name)
            result = cli(*args, code=code, prefix=prefix)
            assert result.returncode == 0, (name, result.stderr)
        # ... and every write is refused with a message about permissions
        for name, (args, code) in todo.items():
            result = cli(*args, code=code, prefix=prefix)
            assert_clear_refusal(result, "read-only")
            assert (db.read_bytes(), db.stat().st_mtime_ns) == before, name
    finally:
        db.chmod(0o644)


# -- older schema ----------------------------------------------------------------------------


def _project_at_first_revision(db: Path) -> None:
    from sqlalchemy import text

    from ragjudge.store import migrate
    from ragjudge.store.engine import make_engine

    engine = make_engine(str(db))
    migrate.upgrade(engine, migrate.REVISIONS[0])
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO settings (key, value) VALUES ('scale', :s), ('name', '\"old\"')"),
                           {"s": json.dumps({"levels": [{"grade": g, "name": f"g{g}"} for g in range(4)],
                                             "threshold": 1})})
        connection.execute(text("INSERT INTO queries (id, text) VALUES ('q1', 'old query')"))
        connection.execute(text("INSERT INTO chunks (id, text) VALUES ('c1', 'old chunk')"))
        connection.execute(text("INSERT INTO annotators (name, created_at, seen_guidelines) "
                                "VALUES ('ann', '2025-01-01 00:00:00', 0)"))
        connection.execute(text(
            "INSERT INTO labels (query_id, chunk_id, annotator, grade, skipped, flagged, created_at) "
            "VALUES ('q1', 'c1', 'ann', 2, 0, 0, '2025-01-01 00:00:01')"))
    engine.dispose()


def test_older_schema_is_migrated_after_a_backup_copy(tmp_path):
    db = tmp_path / "old.db"
    _project_at_first_revision(db)
    assert len(__import__("ragjudge.store.migrate", fromlist=["REVISIONS"]).REVISIONS) >= 2
    original_rows = sqlite3.connect(db).execute("SELECT * FROM labels").fetchall()

    result = cli("--db", str(db), "status", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["labels"] == 1

    backups = sorted(tmp_path.glob("old.db.before-*.bak"))
    assert len(backups) == 1, list(tmp_path.iterdir())
    copy = sqlite3.connect(backups[0])
    assert copy.execute("SELECT version_num FROM alembic_version").fetchall() == [("0001",)]
    assert copy.execute("SELECT * FROM labels").fetchall() == original_rows
    assert copy.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    copy.close()

    from ragjudge.store.migrate import HEAD

    migrated = sqlite3.connect(db)
    assert migrated.execute("SELECT version_num FROM alembic_version").fetchall() == [(HEAD,)]
    assert migrated.execute("SELECT * FROM labels").fetchall() == original_rows
    migrated.close()
    assert run("--db", str(db), "verify").returncode == 0
    # opening again neither migrates nor copies again
    assert run("--db", str(db), "status").returncode == 0
    assert len(list(tmp_path.glob("old.db.before-*.bak"))) == 1


# -- server URLs that are not right ---------------------------------------------------------------

@pytest.mark.parametrize("url, needles", [
    pytest.param("postgresql+psycopg://u@127.0.0.1:notaport/db", ("not a valid database url",),
                 id="bad-port"),
    pytest.param("nosuchdb://host/db", ("nosuchdb",), id="unknown-dialect"),
    pytest.param("postgresql+nosuchdriver://u@host/db", ("nosuchdriver",),
                 id="unknown-driver"),
    pytest.param("postgresql+psycopg://u@127.0.0.1:1/db", ("127.0.0.1",), id="no-server"),
])
def test_server_urls_that_are_not_right(url, needles):
    for args in (("--db", url, "status"), ("--db", url, "verify"), ("--db", url, "backup")):
        result = cli(*args) if args[-1] in IN_A_FRESH_PROCESS else run(*args)
        assert result.returncode == 2, (args, result.stderr[-2000:])
        err = result.stderr.strip()
        assert "Traceback" not in err and err.startswith("ragjudge: "), err
        assert any(n in err.lower() for n in needles), err
        assert len(err.splitlines()) == 1, f"not one paragraph: {err!r}"
