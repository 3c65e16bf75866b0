"""A SQLite project's file as the standard library sees it: the path ``--db`` names, its URI,
the default project and busy timeout. No SQLAlchemy here: the lean reading of a project
(:mod:`ragjudge.services.project.lite`) opens the file with :mod:`sqlite3` alone, and
:mod:`ragjudge.store.engine` builds its engine from the same names."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ragjudge.errors import ProjectError

DEFAULT_DB = "ragjudge.db"
DEFAULT_BUSY_TIMEOUT_MS = 15000
"""How long one SQLite statement waits for another writer's lock, unless
``RAGJUDGE_BUSY_TIMEOUT_MS`` says otherwise (:data:`ragjudge.store.engine.BUSY_TIMEOUT_MS`)."""


def is_url(db: str) -> bool:
    """True when ``db`` is a SQLAlchemy URL rather than a file path."""
    return "://" in db


def env_db() -> str:
    """The project named by ``RAGJUDGE_DB``, else ``./ragjudge.db``."""
    return os.environ.get("RAGJUDGE_DB") or DEFAULT_DB


def expand_path(db: str) -> Path:
    """The file a ``--db`` path names, ``~`` and ``~user`` expanded; a :class:`ProjectError`
    when ``~user`` names no user of this system (or ``~`` no home, HOME being unset)."""
    try:
        return Path(db).expanduser()
    except RuntimeError:
        head = db.split("/", 1)[0]
        raise ProjectError(
            f"--db {db}: '{head}' names no home folder on this system (no such user, or HOME is "
            "not set). Give the path in full. Nothing was written."
        ) from None


def sqlite_uri(path: Path, *, readonly: bool = False, immutable: bool | None = None) -> str:
    """The SQLite URI of ``path`` exactly as named: percent-encoded, so that a ``?``, ``#`` or
    ``%`` in a file name stays part of it (in a URL they would end the path or be decoded, and
    the project would land in another file).

    ``readonly`` opens it read-only: with its write-ahead log when one is beside it (SQLite
    reads a -wal and -shm file this user may not write), else, in a folder this user cannot
    write, as an immutable file (SQLite could not create the -shm file a WAL reader needs, and
    with no -wal file every committed transaction is in the file itself). ``immutable`` True or
    False overrides that choice.
    """
    from urllib.parse import quote

    uri = "file:" + quote(str(path), safe="/")
    if readonly:
        if immutable is None:
            immutable = not os.path.exists(f"{path}-wal") and not os.access(path.parent, os.W_OK)
        uri += "?mode=ro" + ("&immutable=1" if immutable else "")
    return uri


def sqlite_writable(path: Path) -> bool:
    """Whether this process may write the SQLite project at ``path``: the file itself, and the
    write-ahead log that SQLite keeps beside it (created in the folder, or already there and
    writable when the folder is not)."""
    if not os.access(path, os.W_OK):
        return False
    if os.access(path.parent, os.W_OK):
        return True
    return all(os.access(f"{path}{suffix}", os.W_OK) for suffix in ("-wal", "-shm"))


def import_lock(path: Path | None, wait_s: float, *, blocking: bool) -> int | None:
    """An exclusive lock on ``<path>.importlock``, beside a SQLite project's file (None where
    it cannot be made, or, not ``blocking``, when another process holds it)."""
    if path is None:
        return None
    lock = Path(f"{path}.importlock")
    if not os.access(lock.parent, os.W_OK):
        return None
    return _locked(lock, wait_s if blocking else None, 0.05)


def _locked(lock: Path, wait_s: float | None, step: float) -> int | None:
    """The open file ``lock`` with an exclusive lock on it, polled every ``step`` seconds for
    up to ``wait_s`` (None: one try); None when it cannot be opened or stays held (or where
    there are no file locks: not on POSIX)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on POSIX
        return None

    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        return None
    deadline = time.monotonic() + (wait_s or 0.0)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if wait_s is None or time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(step)
        except OSError:
            os.close(fd)
            return None


def release_lock(fd: int) -> None:
    """Let go of a lock :func:`import_lock` (or :class:`WriterQueue`) took, and close its file."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def durable_writes(raw: Any, durable: bool) -> Iterator[None]:
    """With ``durable``, a SQLite connection's writes synced to disk at commit and its foreign
    keys checked (a publish), back to the everyday settings afterwards; else nothing."""
    if not durable:
        yield
        return
    raw.execute("PRAGMA synchronous = FULL")
    raw.execute("PRAGMA foreign_keys = ON")
    try:
        yield
    finally:
        raw.execute("PRAGMA synchronous = NORMAL")
        raw.execute("PRAGMA foreign_keys = OFF")


class WriterQueue:
    """Writers of one SQLite project take turns through an advisory lock on ``<db>.writelock``.

    SQLite's own busy handler makes a waiting writer sleep in growing steps (up to 100 ms), so
    with several annotators writing at once one of them can starve for seconds while the others
    keep getting the lock. Polling a file lock in 1 ms steps keeps every writer's wait short
    (measured with 8 writers: worst label 7.3 s without, 0.2 s with). Where the lock file cannot
    be made (a read-only folder) or after ``wait_s``, the write goes ahead and SQLite's busy
    timeout decides, so the queue can only help.
    """

    def __init__(self, db_path: Path, wait_s: float = 10.0) -> None:
        self.path = Path(f"{db_path}.writelock")
        self.wait_s = wait_s

    def __enter__(self) -> WriterQueue:
        self._fd = None
        if not os.access(self.path.parent, os.W_OK) or not os.access(self.path.with_suffix(""), os.W_OK):
            return self  # nothing can be written here anyway: let SQLite say so
        self._fd = _locked(self.path, self.wait_s, 0.001)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            release_lock(fd)
