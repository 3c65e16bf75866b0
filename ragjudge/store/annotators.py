"""Creating annotator rows without races between processes."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import insert, select
from sqlalchemy.engine import Connection

from ragjudge.store.schema import Annotator, utcnow

_annotators = Annotator.__table__


def ensure_annotators(connection: Connection, names: Iterable[str]) -> set[str]:
    """Add the annotators that do not exist yet; return the names that were added.

    Two processes may meet a new annotator at the same moment (the same person on two machines).
    SQLite serialises writers, but PostgreSQL would let both insert, so there the insert skips a
    name that appeared meanwhile (``ON CONFLICT DO NOTHING``) instead of failing.
    """
    wanted = set(names)
    if not wanted:
        return set()
    have = set(connection.scalars(select(_annotators.c.name).where(_annotators.c.name.in_(wanted))))
    new = sorted(wanted - have)
    if not new:
        return set()
    rows = [{"name": n, "created_at": utcnow(), "seen_guidelines": False} for n in new]
    if connection.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        statement = pg_insert(_annotators).on_conflict_do_nothing(index_elements=["name"])
        connection.execute(statement, rows)
    else:
        connection.execute(insert(_annotators), rows)
    return set(new)
