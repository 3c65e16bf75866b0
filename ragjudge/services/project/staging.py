"""How an import writes without holding up anyone else.

An import used to be one transaction: on SQLite that held the project's only write lock from the
first line read to the last row written, and every annotator's label waited (seconds for a big
run, then "database is locked"). Now an import is an :class:`ImportSession`:

- **one import at a time** per project, through a lock of its own (``<db>.importlock`` on
  SQLite, an advisory lock on PostgreSQL), which annotators never take;
- **staging outside the write lock**: rows are checked and prepared in memory and in a
  temporary table of the session's connection (SQLite keeps temporary tables apart from the
  project file: writing them takes no lock on it);
- **short write transactions**: a run's entries are written in batches of a few tens of
  milliseconds each under a new *generation* nobody reads yet (see
  :class:`ragjudge.store.schema.Run`); each batch takes its turn with the annotators through the
  writer queue, so a label waits for at most one batch;
- **an atomic publish**: one small transaction makes the new generation the run's (and adds the
  placeholders of ``--create-missing``, the labels or definitions of the file, from the staging
  table in one ``INSERT ... SELECT``); a replaced run's old entries are removed afterwards, in
  batches, out of every reader's sight.

A killed import leaves only rows of an unpublished generation, which no reader selects, and its
line in ``run_imports``; the next import, or the next opening of the project, removes them
(:func:`remove_leftovers`). On PostgreSQL writers do not block each other, so the session is one
transaction from the first row to the publish (rows go in with ``COPY``): a killed import is
rolled back by the server.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DatabaseError, IntegrityError, OperationalError
from ragjudge.store.engine import with_retry
from ragjudge.store.run_arrays import (CREATED, NAMES, array_parts, delete_arrays, pack_ids, read_named,
                                       write_arrays, write_part)
from ragjudge.store.schema import Run, RunEntry, RunImport, utcnow


_runs = Run.__table__


_entries = RunEntry.__table__


_imports = RunImport.__table__


TARGET_SECONDS = 0.04
"""How long one batch of a run's entries holds SQLite's write lock, about (each batch also
writes the index pages it touched to the log: smaller batches write them more often)."""


FIRST_BATCH = 1_000


MAX_BATCH = 50_000


DELETE_BATCH = 5_000


_ADVISORY_KEY = 0x7261676A  # "ragj": PostgreSQL's lock key for imports of one database


class ImportSession:
    """One import's connection, lock and transactions (use as a context manager)."""

    def __init__(self, project, *, wait_s: float = 3600.0, locked: bool = False) -> None:  # noqa: ANN001
        """``locked``: the caller holds the import lock already."""
        self.project = project
        self.locked = locked
        self.sqlite = project.engine.dialect.name == "sqlite"
        self.wait_s = wait_s
        self._connection: Connection | None = None
        self._lock_fd: int | None = None
        self._outer: Any = None
        self.batch_rows = FIRST_BATCH

    @property
    def connection(self) -> Connection:
        """The session's own connection (open between ``__enter__`` and ``__exit__``)."""
        if self._connection is None:
            raise RuntimeError("the import session is not open")
        return self._connection

    @property
    def raw(self) -> Any:
        """The database driver's connection under :attr:`connection`."""
        return self.connection.connection.driver_connection

    # -- opening and closing --------------------------------------------------------------

    def __enter__(self) -> ImportSession:
        self._connection = self.project.engine.connect()
        try:
            self._lock()
            if self.sqlite:
                raw = self.raw
                # staged rows need no fsync of their own: the publishing commit (FULL) syncs the
                # log they are in; references were checked by the import, and placeholders come
                # with the publish
                raw.execute("PRAGMA synchronous = NORMAL")
                raw.execute("PRAGMA foreign_keys = OFF")
                raw.execute("PRAGMA cache_size = -65536")
            else:
                self._outer = self.connection.begin()
            remove_leftovers(self)
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        try:
            if self._outer is not None and self._outer.is_active:
                if kind is None:
                    self._outer.commit()
                else:
                    self._outer.rollback()
        finally:
            self._close()

    def _close(self) -> None:
        try:
            if self._connection is not None:
                if not self.sqlite and not self.locked:
                    # the lock belongs to the server's session, which outlives this connection
                    # in the pool: released here, or the next import in this process waits forever
                    try:
                        if self._connection.in_transaction():
                            self._connection.rollback()
                        self._connection.exec_driver_sql(f"SELECT pg_advisory_unlock({_ADVISORY_KEY})")
                        self._connection.commit()
                    except Exception:  # noqa: BLE001 - a broken connection is discarded, lock and all
                        self._connection.invalidate()
                if self.sqlite:
                    try:
                        self.raw.execute("PRAGMA synchronous = FULL")
                        self.raw.execute("PRAGMA foreign_keys = ON")
                    except Exception:  # noqa: BLE001 - a broken connection is discarded anyway
                        pass
                self._connection.close()
        finally:
            self._connection = None
            self._unlock()

    def _lock(self) -> None:
        if self.locked:
            return
        if not self.sqlite:
            self.connection.exec_driver_sql(f"SELECT pg_advisory_lock({_ADVISORY_KEY})")
            self.connection.commit()
            return
        self._lock_fd = _file_lock(self.project.db, self.wait_s, blocking=True)

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            import fcntl

            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    # -- transactions ---------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """Reads of the project (and of the session's temporary tables)."""
        if not self.sqlite:
            yield self.connection
            return
        with self.connection.begin():
            yield self.connection

    @contextmanager
    def stage(self) -> Iterator[Connection]:
        """Writes to the session's temporary tables only (no lock on the project)."""
        with self.read() as connection:
            yield connection

    @contextmanager
    def write(self, *, durable: bool = False) -> Iterator[Connection]:
        """One short write transaction on SQLite, taking its turn with the annotators (through
        the writer queue and ``BEGIN IMMEDIATE``); within the one transaction elsewhere.
        ``durable``: synced to disk at commit (the publish)."""
        if not self.sqlite:
            yield self.connection
            return
        raw = self.raw
        if durable:
            raw.execute("PRAGMA synchronous = FULL")
            raw.execute("PRAGMA foreign_keys = ON")
        try:
            writers = self.project._writers
            with writers if writers is not None else _nothing(), _explained(self.project.db):
                transaction = with_retry(self._begin_write)
                try:
                    yield self.connection
                except BaseException:
                    transaction.rollback()
                    raise
                transaction.commit()
        finally:
            if durable:
                raw.execute("PRAGMA synchronous = NORMAL")
                raw.execute("PRAGMA foreign_keys = OFF")

    def _begin_write(self):  # noqa: ANN202
        connection = self.connection.execution_options(ragjudge_write=True)
        try:
            return connection.begin()
        except OperationalError:
            if connection.in_transaction():
                connection.rollback()
            raise
        finally:
            self.connection.execution_options(ragjudge_write=False)

    def batches(self, total: int, prepare: Callable[[int, int], Any],
                write: Callable[[Connection, Any], None],
                progress: Callable[[int], None] | None = None) -> None:
        """Write ``range(total)`` in write transactions of about :data:`TARGET_SECONDS` each
        (the batch size adapts to the machine): ``prepare(start, stop)`` makes a batch's rows,
        ``write(connection, rows)`` writes them. The next batch is prepared on a thread while
        the database writes the current one (SQLite lets other threads run meanwhile)."""
        from concurrent.futures import ThreadPoolExecutor

        start = 0
        self.batch_rows = FIRST_BATCH  # rows of another table may cost otherwise: learn again
        with ThreadPoolExecutor(max_workers=1) as pool:
            stop = min(total, start + self.batch_rows)
            pending = pool.submit(prepare, start, stop) if start < total else None
            while pending is not None:
                rows = pending.result()
                following = min(total, stop + self.batch_rows)
                pending = pool.submit(prepare, stop, following) if stop < total else None
                began = time.perf_counter()
                with self.write() as connection:
                    write(connection, rows)
                took = time.perf_counter() - began
                if self.sqlite:
                    rate = (stop - start) / max(took, 1e-4)
                    self.batch_rows = int(min(MAX_BATCH, max(200, rate * TARGET_SECONDS)))
                else:
                    self.batch_rows = MAX_BATCH
                start, stop = stop, following
                if progress is not None:
                    progress(start)

    # -- run generations ------------------------------------------------------------------

    def begin_run(self, name: str) -> tuple[int, int | None]:
        """A new generation for run ``name``'s entries, registered as an import under way:
        ``(generation, the generation it replaces or None)``."""
        with self.write() as connection:
            current = connection.scalar(select(_runs.c.generation).where(_runs.c.name == name))
            top = max(connection.scalar(select(func.max(_runs.c.generation))) or 0,
                      connection.scalar(select(func.max(_imports.c.generation))) or 0)
            generation = top + 1
            connection.execute(insert(_imports).values(generation=generation, run=name,
                                                       replaces=current, created_at=utcnow()))
        return generation, current

    def run_entries_sql(self) -> str:
        return ("INSERT INTO run_entries (run, generation, query_id, chunk_id, rank, score) "
                "VALUES (?, ?, ?, ?, ?, ?)")

    def write_rows(self, connection: Connection, sql: str, rows: Sequence[tuple], table: str,
                   columns: Sequence[str]) -> None:
        """Rows into ``table``: ``executemany`` on SQLite, ``COPY`` on PostgreSQL."""
        if self.sqlite:
            self.raw.executemany(sql, rows)
            return
        cursor = self.raw.cursor()
        with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def store_arrays(self, name: str, generation: int, arrays: dict) -> None:
        """The run's arrays, one stored piece per write transaction (a few megabytes)."""
        with self.write() as connection:
            delete_arrays(connection, name, generation, NAMES)
        for key, array in arrays.items():
            for part in array_parts(name, generation, key, array):
                with self.write() as connection:
                    write_part(connection, part)

    def stage_placeholders(self, name: str, generation: int, queries: Sequence[str],
                           chunks: Sequence[str]) -> None:
        """The empty queries and chunks of ``--create-missing``, before the publish, in short
        transactions (SQLite): first their ids as arrays of the import's generation
        (:data:`~ragjudge.store.run_arrays.CREATED`), so that what a killed import wrote is
        known and removed; the publish adopts them (:meth:`finish_run`)."""
        q_bytes, q_lengths = pack_ids(list(queries))
        c_bytes, c_lengths = pack_ids(list(chunks))
        with self.write() as connection:
            write_arrays(connection, name, generation, dict(zip(CREATED, (q_bytes, q_lengths, c_bytes, c_lengths))),
                         replace=False)
        for table, ids in (("queries", sorted(queries)), ("chunks", sorted(chunks))):
            sql = f"INSERT OR IGNORE INTO {table} (id, text) VALUES (?, '')"

            def prepare(start: int, stop: int, ids: list[str] = ids) -> list[tuple[str]]:
                return [(i,) for i in ids[start:stop]]

            def write(connection: Connection, rows: list[tuple[str]], sql: str = sql) -> None:
                self.raw.executemany(sql, rows)

            self.batches(len(ids), prepare, write)

    def finish_run(self, name: str, generation: int, replaces: int | None) -> None:
        """After the publish: its placeholders are the project's (their record goes), the
        replaced generation's entries and arrays are removed in batches, then the import's
        line in ``run_imports``."""
        with self.write() as connection:
            delete_arrays(connection, name, generation, CREATED)
        if replaces is not None and replaces != generation:
            remove_generation(self, name, replaces)
        with self.write() as connection:
            connection.execute(delete(_imports).where(_imports.c.generation == generation))

    def abandon_run(self, name: str, generation: int) -> None:
        """An import that stops before its publish: its entries and its line removed."""
        remove_generation(self, name, generation)
        with self.write() as connection:
            connection.execute(delete(_imports).where(_imports.c.generation == generation))


@contextmanager
def _nothing() -> Iterator[None]:
    yield


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


@contextmanager
def _explained(db: str) -> Iterator[None]:
    """A database that refuses a write (read-only, locked too long, damaged) as the one
    paragraph every command gives for it."""
    try:
        yield
    except (OperationalError, DatabaseError) as exc:
        if isinstance(exc, IntegrityError):
            raise
        from ragjudge.errors import ProjectError
        from ragjudge.services.project.dberrors import describe_db_error

        raise ProjectError(describe_db_error(db, exc)) from None


def _file_lock(db: str, wait_s: float, *, blocking: bool) -> int | None:
    """An exclusive lock on ``<db>.importlock`` (None where it cannot be made, or, not
    ``blocking``, when another process holds it)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on POSIX
        return None
    from ragjudge.store.engine import sqlite_path

    path = sqlite_path(db)
    if path is None:
        return None
    lock = Path(f"{path}.importlock")
    if not os.access(lock.parent, os.W_OK):
        return None
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        return None
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if not blocking or time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.05)
        except OSError:
            os.close(fd)
            return None


def remove_generation(session: ImportSession, name: str, generation: int) -> None:
    """Every entry and array of one generation of a run, in short transactions on SQLite."""
    if not session.sqlite:
        with session.write() as connection:
            connection.execute(delete(_entries).where(_entries.c.run == name,
                                                      _entries.c.generation == generation))
            delete_arrays(connection, name, generation)
        return
    sql = ("DELETE FROM run_entries WHERE rowid IN (SELECT rowid FROM run_entries "
           "WHERE run = ? AND generation = ? LIMIT ?)")
    while True:
        with session.write() as connection:
            cursor = session.raw.execute(sql, (name, generation, DELETE_BATCH))
            gone = cursor.rowcount
        if gone < DELETE_BATCH:
            break
    _remove_placeholders(session, name, generation)
    with session.write() as connection:
        delete_arrays(connection, name, generation)


def _remove_placeholders(session: ImportSession, name: str, generation: int) -> None:
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


def remove_leftovers(session: ImportSession) -> int:
    """What killed imports left (their lines in ``run_imports``): the entries of a generation
    never published, or those of a generation its publish replaced. Returns how many imports
    were cleaned up. The caller holds the import lock."""
    with session.read() as connection:
        left = connection.execute(select(_imports.c.generation, _imports.c.run, _imports.c.replaces)
                                  .order_by(_imports.c.generation)).all()
    for generation, name, replaces in left:
        with session.read() as connection:
            published = connection.scalar(select(_runs.c.generation).where(_runs.c.name == name))
        if published == generation:  # killed after its publish: the placeholders are adopted
            with session.write() as connection:
                delete_arrays(connection, name, generation, CREATED)
            if replaces is not None and replaces != generation:
                remove_generation(session, name, replaces)
        else:
            remove_generation(session, name, generation)
        with session.write() as connection:
            connection.execute(delete(_imports).where(_imports.c.generation == generation))
    return len(left)


def clean_on_open(project) -> None:  # noqa: ANN001
    """At the opening of a SQLite project: remove a killed import's leftovers, when there are
    any and no import is under way (best effort: a read-only project is left as it is)."""
    try:
        with project.connect() as connection:
            if connection.scalar(select(func.count()).select_from(_imports)) == 0:
                return
    except Exception:  # noqa: BLE001 - an older schema, a locked file: nothing to do here
        return
    fd = _file_lock(project.db, 0.0, blocking=False)
    if fd is None:
        return
    try:
        import fcntl

        try:
            with ImportSession(project, locked=True):
                pass
        except Exception:  # noqa: BLE001 - read-only, busy: the next import cleans up
            pass
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def publish_run(connection: Connection, name: str, generation: int, meta: dict, exists: bool) -> None:
    """Make ``generation`` run ``name``'s entries (inside the publishing transaction)."""
    if exists:
        connection.execute(update(_runs).where(_runs.c.name == name).values(
            generation=generation, meta=meta, created_at=utcnow()))
    else:
        connection.execute(insert(_runs).values(name=name, meta=meta, created_at=utcnow(),
                                                generation=generation))


def ids_in(connection: Connection, table: Any, ids: Sequence[str], batch: int = 500) -> set[str]:
    """The ids of ``ids`` that ``table`` holds, through the driver's cursor: looked up
    ``batch`` at a time (one statement text, prepared once), or, when they are many for the
    size of the table, by reading every id of the table once."""
    mark = "?" if connection.dialect.paramstyle == "qmark" else "%s"
    cursor: Any = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        if len(ids) > 20_000:
            cursor.execute(f"SELECT count(*) FROM {table.name}")
            if len(ids) * 4 > cursor.fetchone()[0]:
                cursor.execute(f"SELECT id FROM {table.name}")
                every = {row[0] for row in cursor.fetchall()}
                return {i for i in ids if i in every}
        found: set[str] = set()
        full = f"SELECT id FROM {table.name} WHERE id IN ({', '.join([mark] * batch)})"
        for at in range(0, len(ids), batch):
            part = ids[at:at + batch]
            sql = full if len(part) == batch else (
                f"SELECT id FROM {table.name} WHERE id IN ({', '.join([mark] * len(part))})")
            cursor.execute(sql, part)
            found.update(row[0] for row in cursor.fetchall())
        return found
    finally:
        cursor.close()
