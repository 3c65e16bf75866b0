"""The current flags and comments in plain SQL: the pairs whose newest mark event of a kind, per
annotator, sets it. One statement, for the select of :func:`ragjudge.services.events.marks.set_marks`
and for counting on any connection (:mod:`ragjudge.store.sqltext`)."""

from __future__ import annotations

from typing import Any

from ragjudge.store.sqltext import scalar

MARK_KINDS = ("flag", "comment")


def set_marks_sql(kind: str) -> str:
    """The rows ``annotator, query_id, chunk_id, text`` of every pair whose newest ``kind``
    mark event (flag or comment) sets it."""
    if kind not in MARK_KINDS:  # written into the statement: one of two words, never input
        raise ValueError(kind)
    return ("SELECT m.annotator, m.query_id, m.chunk_id, m.text FROM pair_marks m "
            "JOIN (SELECT max(id) AS id FROM pair_marks "
            f"WHERE kind = '{kind}' GROUP BY annotator, query_id, chunk_id) newest "
            "ON m.id = newest.id WHERE m.action = 'set'")


def count_set_marks(connection: Any, kind: str) -> int:
    """How many (annotator, pair) have a current ``kind`` mark."""
    return int(scalar(connection, f"SELECT count(*) FROM ({set_marks_sql(kind)}) marks") or 0)
