"""A SQLite project's file as the standard library sees it: the path ``--db`` names, its URI,
the default project and busy timeout. No SQLAlchemy here: the lean reading of a project
(:mod:`ragjudge.services.project.lite`) opens the file with :mod:`sqlite3` alone, and
:mod:`ragjudge.store.engine` builds its engine from the same names."""

from __future__ import annotations

import os
from pathlib import Path

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
