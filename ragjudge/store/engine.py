"""Opening a project database: SQLite (a file path) or any SQLAlchemy URL (PostgreSQL for teams).

SQLite runs in WAL mode with foreign keys on, a busy timeout and ``synchronous=FULL``: a commit
returns only once the label is in the write-ahead log on disk, so a label the screen acknowledged
survives the process being killed (and the machine losing power).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError
from sqlalchemy.pool import QueuePool

from ragjudge.retry import Backoff

from ragjudge.errors import ProjectError, UsageError
from ragjudge.safetext import mask_url
from ragjudge.safetext import quote

from ragjudge.store.sqlitefile import (  # noqa: F401 - re-exported
    DEFAULT_BUSY_TIMEOUT_MS,
    DEFAULT_DB,
    WriterQueue,
    env_db,
    expand_path,
    is_url,
    sqlite_uri,
    sqlite_writable,
)


def _env_ms(name: str, default: int, high: int) -> int:
    """A duration in milliseconds from the environment; a :class:`UsageError` naming the
    variable and the range when it is not a whole number from 0 to ``high``."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= high:
        raise UsageError(f"{name}={quote(text[:40])}: give a time in milliseconds, a whole number "
                         f"from 0 to {high:,} (unset, it is {default:,}).")
    return value


BUSY_TIMEOUT_MS = _env_ms("RAGJUDGE_BUSY_TIMEOUT_MS", DEFAULT_BUSY_TIMEOUT_MS, 3_600_000)
"""How long one SQLite statement waits for another writer's lock."""
RETRY_LIMIT_S = 30.0
"""How long a write keeps retrying a busy database before the user is told."""

T = TypeVar("T")


def database_url(db: str) -> str:
    """The SQLAlchemy URL for ``--db``: a file path means SQLite, a URL is taken as it is."""
    if is_url(db):
        try:
            url = make_url(db)
            url.port  # noqa: B018 - a bad port only fails when read
        except (ArgumentError, ValueError) as exc:
            raise ProjectError(f"--db '{mask_url(db)}' is not a valid database URL: {exc}.") from None
        return db
    return "sqlite:///" + str(expand_path(db))


def sqlite_path(db: str) -> Path | None:
    """The file of a SQLite project, or None for a server URL."""
    if not is_url(db):
        return expand_path(db)
    database_url(db)  # a clear error for a malformed URL
    url = make_url(db)
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        return Path(url.database)
    return None


SQLITE_POOL = 40
"""Connections kept open per SQLite project (and as many more at a peak)."""


def _sqlite_pragmas(dbapi_connection: sqlite3.Connection, _record: object) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    mode = cursor.execute("PRAGMA journal_mode = WAL").fetchone()
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.execute("PRAGMA synchronous = FULL")
    cursor.close()
    if mode and str(mode[0]).lower() != "wal":
        # A read-only file cannot switch journal mode; writes will fail with a clear message later.
        pass


def _sqlite_read_pragmas(dbapi_connection: sqlite3.Connection, _record: object) -> None:
    # A read-only connection leaves the journal mode as the file has it (switching is a write).
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.close()


def make_engine(db: str, *, readonly: bool = False) -> Engine:
    """A SQLAlchemy engine for ``db`` with ragjudge's connection settings.

    A SQLite file (a path, or a ``sqlite:///`` URL) is opened exactly as named, and with
    ``readonly`` read-only (for a project this user may read but not write), as
    :func:`sqlite_uri` says.
    """
    path = sqlite_path(db)
    if path is not None:
        uri = sqlite_uri(path, readonly=readonly)

        def connect() -> sqlite3.Connection:
            return sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                                   check_same_thread=False, isolation_level=None)

        # A connection to a SQLite file is a file handle and a few pragmas: enough of them are
        # kept for a server's worker threads (40) to take one each without opening a new one
        # (with its pragmas) per request, or waiting for one.
        return _sqlite_engine(create_engine("sqlite://", creator=connect, poolclass=QueuePool,
                                            pool_size=SQLITE_POOL, max_overflow=SQLITE_POOL),
                              readonly)
    url = database_url(db)
    if url.startswith("sqlite"):
        return _sqlite_engine(create_engine(
            url,
            connect_args={"timeout": BUSY_TIMEOUT_MS / 1000, "check_same_thread": False,
                          "isolation_level": None},
        ), readonly)
    try:
        return create_engine(url, pool_pre_ping=True)
    except NoSuchModuleError:
        raise ProjectError(
            f"--db '{mask_url(db)}': ragjudge knows no database of the kind '{make_url(url).drivername}'. "
            "Use a file path for SQLite or postgresql+psycopg://USER@HOST/DB for PostgreSQL."
        ) from None
    except ArgumentError as exc:
        raise ProjectError(f"--db '{mask_url(db)}' is not a valid database URL: {exc}.") from None
    except ModuleNotFoundError as exc:
        raise ProjectError(
            f"--db '{mask_url(db)}' needs the database driver '{exc.name}', which is not installed. "
            "For PostgreSQL install ragjudge with the postgres extra: pip install 'ragjudge[postgres]'."
        ) from None


def _sqlite_engine(engine: Engine, readonly: bool) -> Engine:
    # Autocommit at the driver level; SQLAlchemy issues BEGIN itself so that each
    # transaction is explicit and a write takes the lock at its start (BEGIN IMMEDIATE).
    event.listen(engine, "connect", _sqlite_read_pragmas if readonly else _sqlite_pragmas)

    @event.listens_for(engine, "begin")
    def _begin(conn) -> None:  # noqa: ANN001
        # Writers take the write lock at BEGIN (IMMEDIATE), so two writers queue on the busy
        # timeout instead of failing at their first write; readers never block anyone in WAL.
        write = conn.get_execution_options().get("ragjudge_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write and not readonly else "BEGIN")

    return engine


def is_locked_error(exc: BaseException) -> bool:
    """True for SQLite's "database is locked/busy" and PostgreSQL serialization/deadlock errors."""
    orig = getattr(exc, "orig", exc)
    text = str(orig).lower()
    if isinstance(orig, sqlite3.OperationalError):
        return "locked" in text or "busy" in text
    return "deadlock" in text or "could not serialize" in text


def with_retry(work: Callable[[], T], *, attempts: int = 12, first_delay: float = 0.02,
               limit_s: float | None = None) -> T:
    """Run ``work`` again with jittered exponential backoff while the database is busy.

    Several annotators may write to one SQLite file; the busy timeout covers most waits, and this
    covers the rest so that "database is locked" never reaches a user. After ``limit_s`` seconds
    in all (default :data:`RETRY_LIMIT_S`) the last error is raised, for the caller to explain.
    """
    deadline = time.monotonic() + (RETRY_LIMIT_S if limit_s is None else limit_s)
    backoff = Backoff(first_delay, 1.0)
    for attempt in range(1, attempts + 1):
        try:
            return work()
        except OperationalError as exc:
            if not is_locked_error(exc) or attempt == attempts or time.monotonic() > deadline:
                raise
            time.sleep(backoff.wait(attempt))
    raise AssertionError("unreachable")
