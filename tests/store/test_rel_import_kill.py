"""Imports that are killed, and annotators who label while an import runs.

A child process imports a run; a patch inside the child stops it at a chosen point (between two
short transactions, inside one, or right after the publish) and tells the parent through a
file. The parent then kills it with SIGKILL, or labels a pair meanwhile and lets it go on.

- Killed before its publish, an import leaves nothing any reader sees (status, export, the
  evaluation's runs, the judging pool), and the next opening of the project removes every row
  it wrote: each table holds exactly what it held before. Importing again works.
- Killed after its publish (a run replaced, its old entries not yet removed), the new run is
  the project's and the old entries go at the next opening.
- A label written by another process while an import is stopped between its transactions is
  committed at once: the import is alive and unpublished when the label's call returns.

The child imports either into a project opened in full or as ``ragjudge import run`` does, on
a project opened with the standard library alone (``how="lean"``): the same session writes the
run either way, and a killed lean import leaves the project as it was too.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from projectkit import make_small_project

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
QUERIES, DEPTH = 40, 250  # 10,000 lines: a dozen short transactions and more


def run_file(path: Path, *, seed: int = 0) -> Path:
    lines = [f"q{q % 5 + 1}x{q} Q0 n{seed}-{q}-{d} {d + 1} {1000 - d - seed / 10:.3f} r\n"
             for q in range(QUERIES) for d in range(DEPTH)]
    path.write_text("".join(lines), encoding="utf-8")
    return path


CHILD = textwrap.dedent("""
    import contextlib, os, sys, time
    from ragjudge.services.project.litewrite import LiteImportSession

    db, path, name, mode, folder, replace, how = sys.argv[1:8]
    folder = os.path.abspath(folder)

    def pause():
        open(os.path.join(folder, "paused"), "w").close()
        while not os.path.exists(os.path.join(folder, "go")):
            time.sleep(0.01)

    writes = [0]
    entries = [0]
    original_write = LiteImportSession.write
    original_rows = LiteImportSession.write_rows
    original_finish = LiteImportSession.finish_run

    @contextlib.contextmanager
    def write(self, **options):
        with original_write(self, **options) as connection:
            yield connection
        writes[0] += 1
        if entries[0]:
            entries[0] += 1
        if mode == "between" and entries[0] == 3:  # two batches of entries written
            pause()

    def write_rows(self, connection, sql, rows, table, columns):
        original_rows(self, connection, sql, rows, table, columns)
        if table == "run_entries" and not entries[0]:
            entries[0] = 1
        if mode == "inside" and table == "run_entries" and entries[0] >= 2:
            pause()

    def finish_run(self, *args):
        if mode == "published":
            pause()
        original_finish(self, *args)

    LiteImportSession.write = write
    LiteImportSession.write_rows = write_rows
    LiteImportSession.finish_run = finish_run
    if how == "lean":  # as the command runs it: the project opened without SQLAlchemy
        from ragjudge.cli import main

        code = main(["--db", db, "import", "run", path, "--name", name, "--create-missing",
                     "--quiet", *(["--replace"] if replace == "1" else [])])
        print("sqlalchemy loaded" if "sqlalchemy" in sys.modules else "lean", code)
        sys.exit(code)
    from ragjudge.services.transfer.importing import import_file
    from ragjudge.services.project.database import Project

    with Project.open(db) as project:
        result = import_file(project, "run", path, name=name, create_missing=True,
                             replace=replace == "1")
    print(result.summary())
""")


def deep_project(db: str) -> None:
    """A small project whose imports keep every rank as a row (many short transactions)."""
    project = make_small_project(db)
    project.set_settings({"run_rows_depth": DEPTH})
    project.close()


def start_child(tmp_path: Path, db: str, path: Path, name: str, mode: str, *,
                replace: bool = False, how: str = "full") -> subprocess.Popen:
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    for flag in ("paused", "go"):
        (tmp_path / flag).unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, str(script), db, str(path), name, mode, str(tmp_path),
                             "1" if replace else "0", how], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_paused(tmp_path: Path, child: subprocess.Popen) -> None:
    deadline = time.monotonic() + 300
    while not (tmp_path / "paused").exists():
        if child.poll() is not None:
            raise AssertionError(f"the import ended before its stop: {child.communicate()}")
        if time.monotonic() > deadline:
            child.kill()
            raise AssertionError("the import never reached its stop")
        time.sleep(0.01)


def kill(child: subprocess.Popen) -> None:
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL


def raw_tables(db: str) -> dict[str, list]:
    """Every row of every table, read without ragjudge (which would clean up)."""
    connection = sqlite3.connect(db)
    try:
        names = [r[0] for r in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name")]
        return {t: sorted(map(repr, connection.execute(f'SELECT * FROM "{t}"'))) for t in names}
    finally:
        connection.close()


def visible(db: str, monkeypatch) -> dict:
    """What readers see, with the clean-up at opening turned off."""
    from ragjudge.services.runs import stored as evaluation
    from ragjudge.services.transfer import exporting
    from ragjudge.services.project import staging
    from ragjudge.services.gold.pool import pool_size_and_judged
    from ragjudge.services.project.database import Project
    from ragjudge.services.overview import project_status
    from ragjudge.store.schema import PUBLISHED

    monkeypatch.setattr(staging, "clean_on_open", lambda project: None)
    try:
        with Project.open(db) as project:
            status = project_status(project)
            runs = evaluation.project_run_names(project)
            exported = {name: [(e.query_id, e.chunk_id, e.rank) for e in exporting.run_entries(project, name)]
                        for name in runs}
            with project.connect() as connection:
                pool = connection.exec_driver_sql(
                    "SELECT count(*) FROM run_entries re WHERE re.rank <= 10 AND "
                    + PUBLISHED.format(alias="re")
                ).scalar()
            return {"status": status, "runs": runs, "entries": exported,
                    "pool": pool_size_and_judged(project), "published rows": pool}
    finally:
        monkeypatch.undo()


def reopen(db: str) -> None:
    from ragjudge.services.project.database import Project

    Project.open(db).close()


@pytest.mark.parametrize("how", ["full", "lean"])
@pytest.mark.parametrize("mode", ["between", "inside"])
def test_a_killed_import_leaves_the_project_as_it_was(tmp_path, monkeypatch, mode, how):
    db = str(tmp_path / "kill.db")
    deep_project(db)
    path = run_file(tmp_path / "big.trec")
    before_raw, before_seen = raw_tables(db), visible(db, monkeypatch)
    child = start_child(tmp_path, db, path, "big", mode, how=how)
    wait_paused(tmp_path, child)
    kill(child)
    left = raw_tables(db)
    assert len(left["run_entries"]) > len(before_raw["run_entries"])  # it had written rows
    assert left["run_imports"]
    seen = visible(db, monkeypatch)
    # ... which nobody sees; only the placeholders it wrote (empty chunks no run names) are
    # counted until the next opening removes them
    assert seen["status"]["chunks"] > before_seen["status"]["chunks"]
    for counted in (seen, before_seen):
        del counted["status"]["chunks"], counted["status"]["queries"]
    assert seen == before_seen
    reopen(db)
    assert raw_tables(db) == before_raw
    # and importing again works
    from ragjudge.services.transfer.importing import import_file
    from ragjudge.services.project.database import Project
    from ragjudge.services.overview import project_status

    with Project.open(db) as project:
        result = import_file(project, "run", path, name="big", create_missing=True)
        assert result.added == QUERIES * DEPTH
        assert project_status(project)["run_summary"][0] == {"name": "big", "entries": QUERIES * DEPTH,
                                                      "queries": QUERIES, "depth": DEPTH}
    assert raw_tables(db)["run_imports"] == []


@pytest.mark.parametrize("how", ["full", "lean"])
def test_an_import_killed_after_its_publish_keeps_the_new_run(tmp_path, monkeypatch, how):
    from ragjudge.services.transfer.importing import import_file
    from ragjudge.services.project.database import Project

    db = str(tmp_path / "replace.db")
    deep_project(db)
    old, new = run_file(tmp_path / "old.trec"), run_file(tmp_path / "new.trec", seed=1)
    with Project.open(db) as project:
        import_file(project, "run", old, name="big", create_missing=True)
    child = start_child(tmp_path, db, new, "big", "published", replace=True, how=how)
    wait_paused(tmp_path, child)
    kill(child)
    seen = visible(db, monkeypatch)
    chunks = {c for _, c, _ in seen["entries"]["big"]}
    assert len(seen["entries"]["big"]) == QUERIES * DEPTH and all(c.startswith("n1-") for c in chunks)
    reopen(db)
    connection = sqlite3.connect(db)
    try:
        generations = connection.execute("SELECT DISTINCT generation FROM run_entries WHERE run = 'big'").fetchall()
        published = connection.execute("SELECT generation FROM runs WHERE name = 'big'").fetchall()
        assert generations == published
        assert connection.execute("SELECT count(*) FROM run_imports").fetchone() == (0,)
        assert connection.execute("SELECT count(DISTINCT generation) FROM run_arrays WHERE run = 'big'"
                                  ).fetchone() == (1,)
    finally:
        connection.close()


@pytest.mark.parametrize("how", ["full", "lean"])
def test_a_label_commits_while_an_import_runs(tmp_path, how):
    from ragjudge.services.runs.stored import project_run_names
    from ragjudge.services.events.state import current_label
    from ragjudge.services.labels.events import record_label
    from ragjudge.services.project.database import Project

    db = str(tmp_path / "busy.db")
    deep_project(db)
    path = run_file(tmp_path / "big.trec")
    child = start_child(tmp_path, db, path, "big", "between", how=how)
    try:
        wait_paused(tmp_path, child)
        with Project.open(db) as project:
            event = record_label(project, annotator="ann", query_id="q1", chunk_id="c01", grade=2)
            # the label is committed while the import is alive and its run not yet published
            assert child.poll() is None
            assert "big" not in project_run_names(project)
            assert current_label(project, "ann", "q1", "c01").grade == 2
        (tmp_path / "go").touch()
        out, err = child.communicate(timeout=600)
        assert child.returncode == 0, err
        if how == "lean":  # the command took the lean path: SQLAlchemy never loaded
            assert out.split() == ["lean", "0"]
        with Project.open(db) as project:
            assert "big" in project_run_names(project)
            assert current_label(project, "ann", "q1", "c01").grade == 2
            with project.connect() as connection:
                assert connection.exec_driver_sql("SELECT max(id) FROM labels").scalar() == event
    finally:
        if child.poll() is None:
            child.kill()


def test_importing_a_big_run_twice_changes_nothing(tmp_path):
    from ragjudge.services.transfer.importing import import_file
    from ragjudge.services.project.database import Project

    db = str(tmp_path / "twice.db")
    deep_project(db)
    path = run_file(tmp_path / "big.trec")
    with Project.open(db) as project:
        first = import_file(project, "run", path, name="big", create_missing=True)
    once = raw_tables(db)
    with Project.open(db) as project:
        again = import_file(project, "run", path, name="big", create_missing=True)
    assert (first.added, again.added, again.unchanged) == (QUERIES * DEPTH, 0, QUERIES * DEPTH)
    assert raw_tables(db) == once
    assert json.dumps(once["run_imports"]) == "[]"
