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

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any
from sqlalchemy import func, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DatabaseError, IntegrityError, OperationalError
from ragjudge.store.engine import sqlite_path, with_retry
from ragjudge.store.sqlitefile import durable_writes, import_lock, release_lock
from ragjudge.store.sqltext import ids_in  # noqa: F401 - the importers take it from here
from ragjudge.services.project.litewrite import (  # noqa: F401 - re-exported
    DELETE_BATCH, FIRST_BATCH, MAX_BATCH, TARGET_SECONDS, abandon_run, finish_run, gc_paused, remove_generation,
    remove_leftovers, write_batches,
)
from ragjudge.store.run_arrays import (NAMES, array_parts, delete_arrays, write_part)
from ragjudge.store.schema import Run, RunEntry, RunImport, utcnow


_runs = Run.__table__


_entries = RunEntry.__table__


_imports = RunImport.__table__


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
        self._lock_fd = import_lock(sqlite_path(self.project.db), self.wait_s, blocking=True)

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            fd, self._lock_fd = self._lock_fd, None
            release_lock(fd)

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
        writers = self.project._writers
        with durable_writes(self.raw, durable), \
                writers if writers is not None else nullcontext(), _explained(self.project.db):
            transaction = with_retry(self._begin_write)
            try:
                yield self.connection
            except BaseException:
                transaction.rollback()
                raise
            transaction.commit()

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
        """See :func:`~ragjudge.services.project.litewrite.write_batches`."""
        write_batches(self, total, prepare, write, progress)

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

    def finish_run(self, name: str, generation: int, replaces: int | None) -> None:
        """See :func:`~ragjudge.services.project.litewrite.finish_run`."""
        finish_run(self, name, generation, replaces)

    def publish_run(self, connection: Connection, name: str, generation: int, meta: dict,
                    exists: bool) -> None:
        """See :func:`publish_run`."""
        publish_run(connection, name, generation, meta, exists)

    def abandon_run(self, name: str, generation: int) -> None:
        """See :func:`~ragjudge.services.project.litewrite.abandon_run`."""
        abandon_run(self, name, generation)


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


def clean_on_open(project) -> None:  # noqa: ANN001
    """At the opening of a SQLite project: remove a killed import's leftovers, when there are
    any and no import is under way (best effort: a read-only project is left as it is)."""
    try:
        with project.connect() as connection:
            if connection.scalar(select(func.count()).select_from(_imports)) == 0:
                return
    except Exception:  # noqa: BLE001 - an older schema, a locked file: nothing to do here
        return
    fd = import_lock(sqlite_path(project.db), 0.0, blocking=False)
    if fd is None:
        return
    try:
        with ImportSession(project, locked=True):
            pass
    except Exception:  # noqa: BLE001 - read-only, busy: the next import cleans up
        pass
    finally:
        release_lock(fd)


def publish_run(connection: Connection, name: str, generation: int, meta: dict, exists: bool) -> None:
    """Make ``generation`` run ``name``'s entries (inside the publishing transaction)."""
    if exists:
        connection.execute(update(_runs).where(_runs.c.name == name).values(
            generation=generation, meta=meta, created_at=utcnow()))
    else:
        connection.execute(insert(_runs).values(name=name, meta=meta, created_at=utcnow(),
                                                generation=generation))
