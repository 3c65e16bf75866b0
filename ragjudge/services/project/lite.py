"""A SQLite project opened for reading with the standard library alone.

``ragjudge status`` and ``ragjudge eval --db`` read a project and change nothing; opened as
:class:`~ragjudge.services.project.database.Project` they would load SQLAlchemy's ORM, the
mapped tables, Alembic's revision check and pydantic before reading a row, which costs several
times what the reading does. :meth:`LiteProject.open` opens the file read-only with
:mod:`sqlite3` instead, and the services those commands call read it through the same plain-SQL
readers as a project opened in full (:mod:`ragjudge.store.sqltext`), and decide with the same
rule code (the gold, the access rules, the metrics): there is no second reader of the rules.

It takes only a project it can be sure of: a regular SQLite file whose schema is the newest
revision, with no run import under way or left by a killed one (whose rows the full opening
removes). Anything else (a URL, a missing or odd file, an older or newer schema) is
``None``: the command runs in full, which says what is wrong or migrates. A reader that meets
something the lean reading does not do (a pool deeper than a run's stored head, which the full
path would widen) raises :class:`NotLite` before anything is printed, and the command runs in
full too.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ragjudge.numeric import GradeRange
from ragjudge.safetext import mask_url
from ragjudge.store.revisions import HEAD
from ragjudge.store.sqlitefile import (
    DEFAULT_BUSY_TIMEOUT_MS,
    env_db,
    expand_path,
    is_url,
    sqlite_uri,
)
from ragjudge.store.sqltext import DriverConnection, NotLite, fetch, json_value

DEFAULT_RULE = "median"
"""The gold rule of a project that has not set one (either way it is opened)."""


class LiteProject:
    """A SQLite project opened read-only with :mod:`sqlite3`: what the readers of ``status``
    and ``eval --db`` ask of a :class:`~ragjudge.services.project.database.Project`."""

    readonly = True
    lite = True

    def __init__(self, db: str, opener: Any) -> None:
        self.db = db
        self._opener = opener
        self._driver: sqlite3.Connection = opener()
        self._settings: dict[str, Any] | None = None
        self._scale: GradeRange | None = None

    @classmethod
    def open(cls, db: str | None = None) -> LiteProject | None:
        """The project at ``db`` (default ``RAGJUDGE_DB`` or ./ragjudge.db) opened for reading,
        or None when it is not one this class can be sure of (see the module)."""
        db = db or env_db()
        if is_url(db) or os.environ.get("RAGJUDGE_BUSY_TIMEOUT_MS", "").strip():
            return None
        try:
            path = expand_path(db)
            found = os.stat(path)
            if not stat.S_ISREG(found.st_mode) or found.st_size == 0 or not os.access(path, os.R_OK):
                return None
            with open(path, "rb") as handle:
                if handle.read(16) != b"SQLite format 3\x00":
                    return None
            wal = os.path.exists(f"{path}-wal")
            uri = sqlite_uri(path, readonly=True, immutable=not wal)

            def opener() -> sqlite3.Connection:
                return sqlite3.connect(uri, uri=True, timeout=DEFAULT_BUSY_TIMEOUT_MS / 1000,
                                       check_same_thread=False)

            project = cls(db, opener)
        except (OSError, sqlite3.Error, Exception):  # noqa: BLE001 - any doubt: the full opening says it
            return None
        try:
            tables = {row[0] for row in project._driver.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "alembic_version" not in tables or "run_imports" not in tables:
                raise NotLite()
            revision = project._driver.execute("SELECT version_num FROM alembic_version").fetchall()
            if revision != [(HEAD,)]:
                raise NotLite()
            if project._driver.execute("SELECT EXISTS (SELECT 1 FROM run_imports)").fetchone()[0]:
                raise NotLite()
            project.scale  # noqa: B018 - a scale the full opening would check: read it now
        except (sqlite3.Error, NotLite):
            project.close()
            return None
        return project

    def close(self) -> None:
        self._driver.close()

    def __enter__(self) -> LiteProject:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self) -> Any:
        """An ORM session: not for this project (see :class:`NotLite`)."""
        raise NotLite()

    def write(self, *args: Any) -> Any:
        raise NotLite()

    @contextmanager
    def connect(self) -> Iterator[DriverConnection]:
        """The connection, as ``Project.connect`` gives a SQLAlchemy one."""
        yield DriverConnection(self._driver, self._opener)

    @property
    def shown_db(self) -> str:
        return mask_url(self.db)

    def get_setting(self, key: str, default: Any = None) -> Any:
        if self._settings is None:
            with self.connect() as connection:
                self._settings = {k: json_value(connection, v) for k, v in
                                  fetch(connection, 'SELECT "key", value FROM settings')}
        return self._settings.get(key, default)

    @property
    def scale(self) -> GradeRange:
        """The scale's grades and threshold (0-3 TREC DL levels when none was set); a scale the
        full opening would refuse or read otherwise is :class:`NotLite`."""
        if self._scale is None:
            raw = self.get_setting("scale")
            if raw is None:
                self._scale = GradeRange(0, 3, 1)
            else:
                self._scale = _grades(raw)
        return self._scale

    @property
    def rule(self) -> str:
        return str(self.get_setting("rule", DEFAULT_RULE))

    @property
    def name(self) -> str:
        return str(self.get_setting("name", "ragjudge project"))


def _grades(raw: Any) -> GradeRange:
    """The stored scale's range, when it is plainly valid (else :class:`NotLite`)."""
    def whole(value: Any) -> bool:
        return type(value) is int

    levels = raw.get("levels") if isinstance(raw, dict) else None
    threshold = raw.get("threshold", 1) if isinstance(raw, dict) else None
    if not isinstance(levels, list) or len(levels) < 2 or not whole(threshold):
        raise NotLite()
    grades: list[Any] = [level.get("grade") if isinstance(level, dict) else None for level in levels]
    if not all(whole(g) for g in grades) or grades != list(range(grades[0], grades[0] + len(grades))):
        raise NotLite()
    assert isinstance(threshold, int)
    if not grades[0] <= threshold <= grades[-1]:
        raise NotLite()
    return GradeRange(grades[0], grades[-1], threshold)
