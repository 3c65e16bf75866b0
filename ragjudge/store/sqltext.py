"""Reading a project in plain SQL, on a SQLAlchemy connection or on the standard library's
:mod:`sqlite3` alone.

The readers that ``status`` and ``eval --db`` need are written once, in portable SQL with
``:name`` parameters, and run on either kind of connection: a SQLAlchemy ``Connection`` (the
project as every command opens it: on SQLite the statement goes to the driver's own
connection, elsewhere through ``sqlalchemy.text``) or a :class:`DriverConnection` (the lean
reading of a SQLite project, :mod:`ragjudge.services.project.lite`, which loads neither
SQLAlchemy nor pydantic). Rows come back as plain tuples with the driver's values: booleans as
they are stored (0/1 on SQLite), JSON as text on SQLite (:func:`json_value`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any


PUBLISHED = ("EXISTS (SELECT 1 FROM runs published WHERE published.name = {alias}.run "
             "AND published.generation = {alias}.generation)")
"""The SQL condition that a ``run_entries`` row (under the alias given) belongs to a published
run: ``PUBLISHED.format(alias="re")``."""


class NotLite(Exception):
    """The lean reading met what only a project opened in full handles (a statement built with
    SQLAlchemy, a head to widen): the command runs in full (:mod:`ragjudge.cli.lean`)."""


class _Dialect:
    name = "sqlite"
    paramstyle = "qmark"


class DriverConnection:
    """A :mod:`sqlite3` connection with the few attributes of a SQLAlchemy ``Connection`` the
    readers use: ``dialect.name``, ``connection.driver_connection`` and ``engine.connect()`` (a
    second connection to the same file, for reading on another thread)."""

    dialect = _Dialect()

    def __init__(self, driver: sqlite3.Connection, opener: Any) -> None:
        self.driver_connection = driver
        self._opener = opener

    @property
    def connection(self) -> DriverConnection:
        return self

    @property
    def engine(self) -> DriverConnection:
        return self

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        """A SQLAlchemy statement: not for this connection (see :class:`NotLite`)."""
        raise NotLite()

    scalar = scalars = execute

    @contextmanager
    def connect(self) -> Iterator[DriverConnection]:
        other = DriverConnection(self._opener(), self._opener)
        try:
            yield other
        finally:
            other.driver_connection.close()


def driver_of(connection: Any) -> sqlite3.Connection | None:
    """The :mod:`sqlite3` connection under ``connection`` (None: another database)."""
    if connection.dialect.name != "sqlite":
        return None
    driver = connection.connection.driver_connection
    assert driver is not None  # an open connection has its driver's connection
    return driver


def fetch(connection: Any, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple]:
    """Every row of ``sql`` (``:name`` parameters from ``params``) as plain tuples."""
    driver = driver_of(connection)
    if driver is not None:
        return driver.execute(sql, dict(params or {})).fetchall()
    from sqlalchemy import text

    return [tuple(row) for row in connection.execute(text(sql), dict(params or {}))]


def execute(connection: Any, sql: str, params: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None) -> int:
    """Run a statement that returns no rows (``params``: one mapping, or a list of them for
    many rows); how many rows it changed."""
    driver = driver_of(connection)
    many = isinstance(params, Sequence)
    if driver is not None:
        cursor = driver.executemany(sql, params) if many else driver.execute(sql, dict(params or {}))  # type: ignore[arg-type]
        return cursor.rowcount
    from sqlalchemy import text

    result = connection.execute(text(sql), list(params) if many else dict(params or {}))  # type: ignore[arg-type]
    return result.rowcount


def scalar(connection: Any, sql: str, params: Mapping[str, Any] | None = None) -> Any:
    """The first column of the first row of ``sql`` (None: no row)."""
    rows = fetch(connection, sql, params)
    return rows[0][0] if rows else None


def listed(prefix: str, values: Iterable[Any]) -> tuple[str, dict[str, Any]]:
    """``values`` as ``:prefix0, :prefix1, ...`` for an ``IN (...)`` and their parameters."""
    params = {f"{prefix}{i}": value for i, value in enumerate(values)}
    return ", ".join(f":{name}" for name in params) or "NULL", params


def json_value(connection: Any, value: Any) -> Any:
    """A JSON column's value as Python: SQLite's driver gives the text, others the value."""
    if isinstance(value, str) and connection.dialect.name == "sqlite":
        return json.loads(value)
    return value


def ids_in(connection: Any, table: Any, ids: Sequence[str], batch: int = 500) -> set[str]:
    """The ids of ``ids`` that ``table`` holds, through the driver's cursor: looked up
    ``batch`` at a time (one statement text, prepared once), or, when they are many for the
    size of the table, by reading every id of the table once. ``table``: its name, or a
    SQLAlchemy table."""
    name = getattr(table, "name", table)
    mark = "?" if connection.dialect.paramstyle == "qmark" else "%s"
    cursor: Any = connection.connection.driver_connection.cursor()
    try:
        if len(ids) > 20_000:
            cursor.execute(f"SELECT count(*) FROM {name}")
            if len(ids) * 4 > cursor.fetchone()[0]:
                cursor.execute(f"SELECT id FROM {name}")
                every = {row[0] for row in cursor.fetchall()}
                return {i for i in ids if i in every}
        found: set[str] = set()
        full = f"SELECT id FROM {name} WHERE id IN ({', '.join([mark] * batch)})"
        for at in range(0, len(ids), batch):
            part = ids[at:at + batch]
            sql = full if len(part) == batch else (
                f"SELECT id FROM {name} WHERE id IN ({', '.join([mark] * len(part))})")
            cursor.execute(sql, part)
            found.update(row[0] for row in cursor.fetchall())
        return found
    finally:
        cursor.close()
