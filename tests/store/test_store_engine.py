"""The engine's settings and the write path: WAL, foreign keys, synchronous=FULL, busy timeout,
BEGIN IMMEDIATE for writers, retry while busy; and the services running unchanged on
PostgreSQL."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError, OperationalError

from projectkit import make_small_project
from ragjudge.services.overview import project_status
from ragjudge.errors import ProjectError
from ragjudge.store.engine import database_url, is_locked_error, make_engine, sqlite_path, with_retry


def test_sqlite_connection_settings(tmp_path):
    engine = make_engine(str(tmp_path / "p.db"))
    try:
        with engine.connect() as connection:
            pragma = lambda name: connection.exec_driver_sql(f"PRAGMA {name}").scalar()  # noqa: E731
            assert pragma("journal_mode") == "wal"
            assert pragma("foreign_keys") == 1
            assert pragma("synchronous") == 2  # FULL: a commit is on disk when it returns
            assert pragma("busy_timeout") >= 1000
    finally:
        engine.dispose()


def test_paths_and_urls(tmp_path):
    assert database_url(str(tmp_path / "x.db")) == f"sqlite:///{tmp_path / 'x.db'}"
    assert sqlite_path("sqlite:////tmp/a.db").as_posix() == "/tmp/a.db"
    assert sqlite_path("postgresql+psycopg://u@h/db") is None
    with pytest.raises(ProjectError, match="not a valid database URL"):
        database_url("://no-scheme")


def test_foreign_keys_are_enforced(project):
    from ragjudge.store.schema import Label

    with pytest.raises(IntegrityError):
        with project.engine.connect() as connection, connection.begin():
            connection.execute(Label.__table__.insert().values(
                query_id="no-such-query", chunk_id="c01", annotator="nobody", grade=1,
                skipped=False, flagged=False, created_at=text("CURRENT_TIMESTAMP")))


def _locked() -> OperationalError:
    return OperationalError("INSERT", {}, sqlite3.OperationalError("database is locked"))


def test_with_retry_retries_only_busy_errors():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 4:
            raise _locked()
        return "done"

    assert with_retry(flaky, first_delay=0.001) == "done" and len(calls) == 4
    assert is_locked_error(_locked())

    other = OperationalError("SELECT", {}, sqlite3.OperationalError("no such table: x"))
    attempts = []

    def broken():
        attempts.append(1)
        raise other

    with pytest.raises(OperationalError):
        with_retry(broken, first_delay=0.001)
    assert len(attempts) == 1


def test_writer_takes_the_lock_at_begin(project_db):
    """A write transaction starts with BEGIN IMMEDIATE: while it is open, another writer cannot
    even begin (it waits), so two writers never deadlock half-way through their transactions."""
    engine = make_engine(project_db)
    try:
        with engine.connect().execution_options(ragjudge_write=True) as connection:
            with connection.begin():
                other = sqlite3.connect(project_db, timeout=0, isolation_level=None)
                with pytest.raises(sqlite3.OperationalError, match="locked"):
                    other.execute("BEGIN IMMEDIATE")
                other.execute("BEGIN")  # readers are never blocked in WAL mode
                assert other.execute("SELECT count(*) FROM queries").fetchone() == (5,)
                other.execute("ROLLBACK")
                other.close()
    finally:
        engine.dispose()


@pytest.mark.slow
def test_write_waits_for_another_writer_instead_of_failing(project):
    """Another process holds the write lock for 0.6 s; a label written meanwhile waits and lands."""
    from ragjudge.services.labels.events import record_label

    holder = sqlite3.connect(project.db, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.6, lambda: holder.execute("COMMIT"))
    release.start()
    started = time.monotonic()
    event_id = record_label(project, annotator="ann", query_id="q1", chunk_id="c01", grade=3)
    waited = time.monotonic() - started
    release.join()
    holder.close()
    assert waited >= 0.4
    from ragjudge.store.schema import Label

    with project.read() as session:
        assert session.get(Label, event_id).grade == 3


# -- the services, unchanged, on either backend ---------------------------------------------------


def test_services_round_trip(any_db, tmp_path):
    """Project, judging, qrels, status and verify on SQLite and PostgreSQL alike."""
    from ragjudge.services.events.state import current_label
    from ragjudge.services.labels.events import record_label, undo_last
    from ragjudge.services.maintenance import verify
    from ragjudge.store.schema import Label

    project = make_small_project(any_db)
    try:
        ids = [record_label(project, annotator="ann", query_id="q1", chunk_id=f"c0{j}", grade=j % 4)
               for j in range(1, 6)]
        ids.append(record_label(project, annotator="bob", query_id="q1", chunk_id="c01", grade=2))
        assert ids == sorted(ids) and len(set(ids)) == 6
        undone = undo_last(project, "ann")
        assert undone.undone_id == ids[4]
        assert current_label(project, "ann", "q1", "c05").grade is None
        assert current_label(project, "ann", "q1", "c01").grade == 1
        status = project_status(project)
        assert (status["queries"], status["chunks"], status["labels"], status["annotators"]) == (5, 20, 7, 2)
        report = verify(project)
        assert report.ok, [c for c in report.checks if c.failed]
        assert report.tables["labels"].events == 7
        with project.connect() as connection:
            assert connection.scalar(select(func.max(Label.id))) == undone.event_id
    finally:
        project.close()


def test_import_is_one_transaction_on_either_backend(any_db, tmp_path):
    """A bad line late in the file leaves the project exactly as before (one transaction)."""
    from ragjudge.errors import InputError
    from ragjudge.services.transfer.importing import import_file

    project = make_small_project(any_db)
    try:
        good = tmp_path / "queries.jsonl"
        good.write_text("".join(f'{{"id": "n{i}", "text": "new {i}"}}\n' for i in range(50)), encoding="utf-8")
        import_file(project, "queries", good)
        assert project_status(project)["queries"] == 55
        bad = tmp_path / "more.jsonl"
        bad.write_text("".join(f'{{"id": "m{i}", "text": "more {i}"}}\n' for i in range(50))
                       + '{"id": "m50", "text": 42}\n', encoding="utf-8")
        with pytest.raises(InputError, match="line 51"):
            import_file(project, "queries", bad)
        assert project_status(project)["queries"] == 55
    finally:
        project.close()
