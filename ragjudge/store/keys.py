"""The store's limit on ids and names, without SQLAlchemy (the schema and the lean run import
both check it)."""

from __future__ import annotations

from datetime import UTC, datetime

MAX_KEY_BYTES = 800
"""The longest id, run name or category, in bytes of UTF-8, on every backend alike. PostgreSQL's
index entries hold about 2,700 bytes and three keys share one in the (annotator, query, chunk)
and (run, query, chunk) indexes; 800 leaves room for an annotator name of 255 characters."""


def key_bytes(value: str) -> int:
    """The length of an id or name as the store limits it (:data:`MAX_KEY_BYTES`)."""
    return len(value.encode("utf-8", "surrogatepass"))


def utcnow() -> datetime:
    """Now, in UTC, without tzinfo (SQLite stores naive datetimes; every time here is UTC)."""
    return datetime.now(UTC).replace(tzinfo=None)


def sqlite_time(value: datetime) -> str:
    """A time as SQLAlchemy's ``DateTime`` stores it in SQLite (``2026-11-27 22:40:05.000123``),
    for rows written with the driver alone."""
    return value.isoformat(sep=" ", timespec="microseconds")
