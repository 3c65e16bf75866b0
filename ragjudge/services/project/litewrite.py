"""A run import on a SQLite project with the standard library's :mod:`sqlite3` alone.

An import of a big run spends most of its time reading the file and ranking it; what it writes
is a few dozen short transactions. Opened the usual way (:class:`~ragjudge.services.project.
database.Project`, :class:`~ragjudge.services.project.staging.ImportSession`) it first loads
SQLAlchemy's engine and ORM, the mapped tables and pydantic, about half a second of processor
before a line is read. :class:`LiteImportSession` does what a run import asks of a session in
plain SQL on its own :mod:`sqlite3` connection, under the same two locks (the import lock, one
import at a time, and the writers' queue, see :class:`~ragjudge.store.sqlitefile.WriterQueue`)
and with the same transactions as the session it stands for (see
:mod:`ragjudge.services.project.staging`: rows staged under a new generation in short
transactions that each take their turn with the annotators, one durable transaction that
publishes). Every run import into a SQLite project goes through it, whichever way the project
was opened; :class:`LiteWriteProject` is the project as ``ragjudge import run`` opens it
without SQLAlchemy (:mod:`ragjudge.cli.lean`).

What killed imports left (:func:`remove_leftovers`) is removed here too, in plain SQL, for
both kinds of session.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import numpy as np

from ragjudge.errors import ProjectError
from ragjudge.retry import Backoff
from ragjudge.store.keys import sqlite_time, utcnow
from ragjudge.store.revisions import HEAD
from ragjudge.store.run_arrays import CREATED, NAMES, array_parts, delete_arrays, pack_ids, read_named
from ragjudge.store.sqlitefile import (
    DEFAULT_BUSY_TIMEOUT_MS,
    WriterQueue,
    durable_writes,
    expand_path,
    import_lock,
    is_url,
    release_lock,
    sqlite_uri,
    sqlite_writable,
)
from ragjudge.store.sqltext import DriverConnection, execute, fetch, scalar

#: one run entry (run, generation, query, chunk, rank, score), as both import sessions write it
RUN_ENTRIES_SQL = ("INSERT INTO run_entries (run, generation, query_id, chunk_id, rank, score) "
                   "VALUES (?, ?, ?, ?, ?, ?)")

TARGET_SECONDS = 0.04
"""How long one batch of a run's entries holds SQLite's write lock, about (each batch also
writes the index pages it touched to the log: smaller batches write them more often)."""

FIRST_BATCH = 1_000

MAX_BATCH = 50_000

DELETE_BATCH = 5_000

_ATTEMPTS = 12
"""Tries of a ``BEGIN IMMEDIATE`` that finds the database busy beyond the busy timeout."""


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cycle collector off while an import reads millions of records: each collection
    walks every object alive, and an import keeps a growing set of them (the keys seen, for
    duplicates) while it makes and drops records by the thousand, so the collections came
    more and more often (a million labels read in 190 s instead of 38). Records hold no
    cycles; the collector is back on at the end."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def write_batches(session: Any, total: int, prepare: Callable[[int, int], Any],
                  write: Callable[[Any, Any], None], progress: Callable[[int], None] | None = None) -> None:
    """Write ``range(total)`` in write transactions of ``session`` of about
    :data:`TARGET_SECONDS` each (the batch size adapts to the machine): ``prepare(start, stop)``
    makes a batch's rows, ``write(connection, rows)`` writes them. The next batch is prepared
    on a thread while the database writes the current one (SQLite lets other threads run
    meanwhile)."""
    from concurrent.futures import ThreadPoolExecutor

    start = 0
    session.batch_rows = FIRST_BATCH  # rows of another table may cost otherwise: learn again
    with ThreadPoolExecutor(max_workers=1) as pool:
        stop = min(total, start + session.batch_rows)
        pending = pool.submit(prepare, start, stop) if start < total else None
        while pending is not None:
            rows = pending.result()
            following = min(total, stop + session.batch_rows)
            pending = pool.submit(prepare, stop, following) if stop < total else None
            began = time.perf_counter()
            with session.write() as connection:
                write(connection, rows)
            took = time.perf_counter() - began
            if session.sqlite:
                rate = (stop - start) / max(took, 1e-4)
                session.batch_rows = int(min(MAX_BATCH, max(200, rate * TARGET_SECONDS)))
            else:
                session.batch_rows = MAX_BATCH
            start, stop = stop, following
            if progress is not None:
                progress(start)


class LiteWriteProject:
    """A SQLite project as a run import needs it, opened with :mod:`sqlite3` alone: its file,
    its writers' queue and its settings."""

    lite = True
    readonly = False

    def __init__(self, db: str) -> None:
        self.db = db
        self.path = expand_path(db)
        self.writers = WriterQueue(self.path)
        self._settings: dict[str, Any] | None = None

    @classmethod
    def open(cls, db: str) -> LiteWriteProject | None:
        """The project at ``db``, or None unless it is plainly one this class can write: a
        regular SQLite file this user may write, with the newest schema and no run import
        under way or left by a killed one (the full opening migrates, cleans up or says what is
        wrong). ``RAGJUDGE_BUSY_TIMEOUT_MS`` set: None too (the full opening checks it)."""
        if is_url(db) or os.environ.get("RAGJUDGE_BUSY_TIMEOUT_MS", "").strip():
            return None
        try:
            project = cls(db)
            found = os.stat(project.path)
            if not stat.S_ISREG(found.st_mode) or found.st_size == 0 or not sqlite_writable(project.path):
                return None
            with open(project.path, "rb") as handle:
                if handle.read(16) != b"SQLite format 3\x00":
                    return None
            connection = sqlite3.connect(sqlite_uri(project.path, readonly=True), uri=True,
                                         timeout=DEFAULT_BUSY_TIMEOUT_MS / 1000)
            try:
                tables = {row[0] for row in connection.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'")}
                if not {"alembic_version", "run_imports", "settings"} <= tables:
                    return None
                if connection.execute("SELECT version_num FROM alembic_version").fetchall() != [(HEAD,)]:
                    return None
                if connection.execute("SELECT EXISTS (SELECT 1 FROM run_imports)").fetchone()[0]:
                    return None
                project._settings = {key: json.loads(value) if isinstance(value, str) else value
                                     for key, value in connection.execute('SELECT "key", value FROM settings')}
            finally:
                connection.close()
        except (OSError, ValueError, sqlite3.Error, ProjectError):
            return None
        return project

    def get_setting(self, key: str, default: Any = None) -> Any:
        assert self._settings is not None  # read by open()
        return self._settings.get(key, default)

    def import_session(self) -> LiteImportSession:
        return LiteImportSession(self.db, self.path, self.writers, DEFAULT_BUSY_TIMEOUT_MS)

    def close(self) -> None:
        pass

    def __enter__(self) -> LiteWriteProject:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def import_session_of(project: Any) -> LiteImportSession:
    """The session a run import into a SQLite ``project`` writes through, however it was
    opened (a :class:`~ragjudge.services.project.database.Project` or a
    :class:`LiteWriteProject`)."""
    if getattr(project, "lite", False):
        return project.import_session()
    from ragjudge.store.engine import BUSY_TIMEOUT_MS, sqlite_path

    path = sqlite_path(project.db)
    assert path is not None  # a SQLite project has its file
    return LiteImportSession(project.db, path, project._writers, BUSY_TIMEOUT_MS)


class LiteImportSession:
    """One run import's :mod:`sqlite3` connection, lock and transactions on a SQLite project
    (use as a context manager); the methods a run import calls on an
    :class:`~ragjudge.services.project.staging.ImportSession`, in plain SQL."""

    sqlite = True

    def __init__(self, db: str, path: Any, writers: WriterQueue | None, busy_ms: int, *,
                 wait_s: float = 3600.0) -> None:
        self.db = db
        self.path = path
        self.writers = writers
        self.busy_ms = busy_ms
        self.wait_s = wait_s
        self.batch_rows = FIRST_BATCH
        self._raw: sqlite3.Connection | None = None
        self._lock_fd: int | None = None

    def _open(self) -> sqlite3.Connection:
        raw = sqlite3.connect(sqlite_uri(self.path), uri=True, timeout=self.busy_ms / 1000,
                              check_same_thread=False, isolation_level=None)
        raw.execute(f"PRAGMA busy_timeout = {int(self.busy_ms)}")
        raw.execute("PRAGMA journal_mode = WAL")
        # staged rows need no fsync of their own: the publishing commit (FULL) syncs the log
        # they are in; references were checked by the import, and placeholders come with the
        # publish
        raw.execute("PRAGMA synchronous = NORMAL")
        raw.execute("PRAGMA foreign_keys = OFF")
        raw.execute("PRAGMA cache_size = -65536")
        return raw

    @property
    def raw(self) -> sqlite3.Connection:
        """The session's :mod:`sqlite3` connection (open between ``__enter__`` and ``__exit__``)."""
        if self._raw is None:
            raise RuntimeError("the import session is not open")
        return self._raw

    @property
    def connection(self) -> DriverConnection:
        """The connection as the plain-SQL readers take it (:mod:`ragjudge.store.sqltext`)."""
        return DriverConnection(self.raw, self._open)

    def __enter__(self) -> LiteImportSession:
        self._lock_fd = import_lock(self.path, self.wait_s, blocking=True)
        try:
            with _explained(self.db):
                self._raw = self._open()
            remove_leftovers(self)
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._close()

    def _close(self) -> None:
        try:
            if self._raw is not None:
                self._raw.close()
        finally:
            self._raw = None
            if self._lock_fd is not None:
                fd, self._lock_fd = self._lock_fd, None
                release_lock(fd)

    # -- transactions ---------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[DriverConnection]:
        """Reads of the project, in one transaction (one snapshot)."""
        raw = self.raw
        with _explained(self.db):
            raw.execute("BEGIN")
        try:
            yield self.connection
        finally:
            if raw.in_transaction:
                raw.execute("ROLLBACK")

    @contextmanager
    def write(self, *, durable: bool = False) -> Iterator[DriverConnection]:
        """One short write transaction, taking its turn with the annotators (through the
        writers' queue and ``BEGIN IMMEDIATE``). ``durable``: synced to disk at commit, with
        the foreign keys checked (the publish)."""
        raw = self.raw
        with durable_writes(raw, durable), \
                self.writers if self.writers is not None else nullcontext(), _explained(self.db):
            self._begin_write()
            try:
                yield self.connection
            except BaseException:
                if raw.in_transaction:
                    raw.execute("ROLLBACK")
                raise
            raw.execute("COMMIT")

    def _begin_write(self) -> None:
        """``BEGIN IMMEDIATE``, tried again with backoff while the database stays busy beyond
        the busy timeout (as every writer of the project does)."""
        backoff = Backoff(0.02, 1.0)
        deadline = time.monotonic() + 30.0
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                self.raw.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                text = str(exc).lower()
                if not ("locked" in text or "busy" in text) or attempt == _ATTEMPTS \
                        or time.monotonic() > deadline:
                    raise
                time.sleep(backoff.wait(attempt))

    def batches(self, total: int, prepare: Callable[[int, int], Any], write: Callable[[Any, Any], None],
                progress: Callable[[int], None] | None = None) -> None:
        """See :func:`write_batches`."""
        write_batches(self, total, prepare, write, progress)

    # -- run generations ------------------------------------------------------------------

    def begin_run(self, name: str) -> tuple[int, int | None]:
        """A new generation for run ``name``'s entries, registered as an import under way:
        ``(generation, the generation it replaces or None)``."""
        with self.write() as connection:
            current = scalar(connection, "SELECT generation FROM runs WHERE name = :name", {"name": name})
            top = max(scalar(connection, "SELECT max(generation) FROM runs") or 0,
                      scalar(connection, "SELECT max(generation) FROM run_imports") or 0)
            generation = top + 1
            execute(connection, "INSERT INTO run_imports (generation, run, replaces, created_at) "
                                "VALUES (:generation, :run, :replaces, :created_at)",
                    {"generation": generation, "run": name, "replaces": current,
                     "created_at": sqlite_time(utcnow())})
        return generation, current

    def write_rows(self, connection: Any, sql: str, rows: Sequence[tuple], table: str,
                   columns: Sequence[str]) -> None:
        """Rows into ``table`` (``sql`` inserts one)."""
        self.raw.executemany(sql, rows)

    def store_arrays(self, name: str, generation: int, arrays: dict[str, np.ndarray]) -> None:
        """The run's arrays, one stored piece per write transaction (a few megabytes)."""
        with self.write() as connection:
            delete_arrays(connection, name, generation, NAMES)
        for key, array in arrays.items():
            for part in array_parts(name, generation, key, array):
                with self.write():
                    _insert_parts(self.raw, [part])

    def stage_placeholders(self, name: str, generation: int, queries: Sequence[str],
                           chunks: Sequence[str]) -> None:
        """The empty queries and chunks of ``--create-missing``, before the publish, in short
        transactions: first their ids as arrays of the import's generation
        (:data:`~ragjudge.store.run_arrays.CREATED`), so that what a killed import wrote is
        known and removed; the publish adopts them (:meth:`finish_run`)."""
        packed = (*pack_ids(list(queries)), *pack_ids(list(chunks)))
        with self.write():
            _insert_parts(self.raw, [part for key, array in zip(CREATED, packed)
                                     for part in array_parts(name, generation, key, array)])
        for table, ids in (("queries", sorted(queries)), ("chunks", sorted(chunks))):
            sql = f"INSERT OR IGNORE INTO {table} (id, text) VALUES (?, '')"

            def prepare(start: int, stop: int, ids: list[str] = ids) -> list[tuple[str]]:
                return [(i,) for i in ids[start:stop]]

            def write(connection: Any, rows: list[tuple[str]], sql: str = sql) -> None:
                self.raw.executemany(sql, rows)

            self.batches(len(ids), prepare, write)

    def publish_run(self, connection: Any, name: str, generation: int, meta: dict, exists: bool) -> None:
        """Make ``generation`` run ``name``'s entries (inside the publishing transaction)."""
        values = {"name": name, "meta": json.dumps(meta), "created_at": sqlite_time(utcnow()),
                  "generation": generation}
        if exists:
            execute(connection, "UPDATE runs SET generation = :generation, meta = :meta, "
                                "created_at = :created_at WHERE name = :name", values)
        else:
            execute(connection, "INSERT INTO runs (name, meta, created_at, generation) "
                                "VALUES (:name, :meta, :created_at, :generation)", values)

    def finish_run(self, name: str, generation: int, replaces: int | None) -> None:
        """See :func:`finish_run`."""
        finish_run(self, name, generation, replaces)

    def abandon_run(self, name: str, generation: int) -> None:
        """See :func:`abandon_run`."""
        abandon_run(self, name, generation)


def _insert_parts(raw: sqlite3.Connection, parts: list[dict]) -> None:
    raw.executemany("INSERT INTO run_arrays (run, generation, name, part, dtype, data) "
                    "VALUES (:run, :generation, :name, :part, :dtype, :data)", parts)


def _forget_import(connection: Any, generation: int) -> None:
    execute(connection, "DELETE FROM run_imports WHERE generation = :generation", {"generation": generation})


@contextmanager
def _explained(db: str) -> Iterator[None]:
    """A database that refuses a write (read-only, locked too long, damaged) as the one
    paragraph every command gives for it."""
    try:
        yield
    except sqlite3.IntegrityError:
        raise
    except (sqlite3.OperationalError, sqlite3.DatabaseError) as exc:
        from ragjudge.services.project.dberrors import describe_db_error

        raise ProjectError(describe_db_error(db, exc)) from None


# -- what killed imports left: for either kind of session ----------------------------------


def finish_run(session: Any, name: str, generation: int, replaces: int | None) -> None:
    """After the publish: its placeholders are the project's (their record goes), the
    replaced generation's entries and arrays are removed in batches, then the import's line in
    ``run_imports``."""
    with session.write() as connection:
        delete_arrays(connection, name, generation, CREATED)
    if replaces is not None and replaces != generation:
        remove_generation(session, name, replaces)
    with session.write() as connection:
        _forget_import(connection, generation)


def abandon_run(session: Any, name: str, generation: int) -> None:
    """An import that stops before its publish: its entries and its line removed."""
    remove_generation(session, name, generation)
    with session.write() as connection:
        _forget_import(connection, generation)


def remove_generation(session: Any, name: str, generation: int) -> None:
    """Every entry and array of one generation of a run, in short transactions on SQLite."""
    where = {"run": name, "generation": generation}
    if not session.sqlite:
        with session.write() as connection:
            execute(connection, "DELETE FROM run_entries WHERE run = :run AND generation = :generation", where)
            delete_arrays(connection, name, generation)
        return
    sql = ("DELETE FROM run_entries WHERE rowid IN (SELECT rowid FROM run_entries "
           "WHERE run = ? AND generation = ? LIMIT ?)")
    while True:
        with session.write():
            gone = session.raw.execute(sql, (name, generation, DELETE_BATCH)).rowcount
        if gone < DELETE_BATCH:
            break
    _remove_placeholders(session, name, generation)
    with session.write() as connection:
        delete_arrays(connection, name, generation)


def _remove_placeholders(session: Any, name: str, generation: int) -> None:
    """The placeholders an unpublished import wrote (its :data:`CREATED` arrays), where they
    are still empty."""
    from ragjudge.services.project.columns import decode, unpack_ids

    with session.read() as connection:
        arrays = read_named(connection, name, generation, CREATED)
    for what in ("chunks", "queries"):
        data, lengths = arrays.get(f"created_{what}"), arrays.get(f"created_{what}_lengths")
        if data is None or lengths is None or not len(lengths):
            continue
        ids = decode(unpack_ids(data, lengths))
        sql = f"DELETE FROM {what} WHERE id = ? AND text = ''"
        for at in range(0, len(ids), DELETE_BATCH):
            with session.write():
                session.raw.executemany(sql, [(i,) for i in ids[at:at + DELETE_BATCH]])


def remove_leftovers(session: Any) -> int:
    """What killed imports left (their lines in ``run_imports``): the entries of a generation
    never published, or those of a generation its publish replaced. Returns how many imports
    were cleaned up. The caller holds the import lock."""
    with session.read() as connection:
        left = fetch(connection, "SELECT generation, run, replaces FROM run_imports ORDER BY generation")
    for generation, name, replaces in left:
        with session.read() as connection:
            published = scalar(connection, "SELECT generation FROM runs WHERE name = :name", {"name": name})
        if published == generation:  # killed after its publish: the placeholders are adopted
            with session.write() as connection:
                delete_arrays(connection, name, generation, CREATED)
            if replaces is not None and replaces != generation:
                remove_generation(session, name, replaces)
        else:
            remove_generation(session, name, generation)
        with session.write() as connection:
            _forget_import(connection, generation)
    return len(left)


__all__ = ["LiteImportSession", "LiteWriteProject", "gc_paused", "import_session_of", "remove_generation",
           "remove_leftovers", "write_batches"]
