"""Flags and comments: an annotator's current marks on a pair (the newest ``pair_marks`` event
of each kind).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from sqlalchemy import bindparam, select
from ragjudge.services.events.setmarks import MARK_KINDS, set_marks_sql
from ragjudge.store.schema import (
    PairMark,
)


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


@dataclass(frozen=True)
class PairMarks:
    """An annotator's current flag (with its optional note) and comment on one pair."""

    flagged: bool = False
    flag_note: str | None = None
    comment: str | None = None

    def with_event(self, kind: str, action: str, text: str | None) -> PairMarks:
        """The marks after one more ``pair_marks`` event (a lead's review of someone's mark,
        kind ``review``, changes none of the lead's own marks)."""
        if kind not in MARK_KINDS:
            return self
        if kind == "flag":
            return PairMarks(action == "set", text if action == "set" else None, self.comment)
        return PairMarks(self.flagged, self.flag_note, text if action == "set" else None)

    @property
    def any(self) -> bool:
        return self.flagged or self.comment is not None


NO_MARKS = PairMarks()


_MARKS = PairMark.__table__
_QUERY_MARKS = (select(_MARKS.c.chunk_id, _MARKS.c.kind, _MARKS.c.action, _MARKS.c.text)
                .where(_MARKS.c.annotator == bindparam("annotator"),
                       _MARKS.c.query_id == bindparam("query_id"))
                .order_by(_MARKS.c.id))
_PAIR_MARKS = (select(_MARKS.c.chunk_id, _MARKS.c.kind, _MARKS.c.action, _MARKS.c.text)
               .where(_MARKS.c.annotator == bindparam("annotator"),
                      _MARKS.c.query_id == bindparam("query_id"),
                      _MARKS.c.chunk_id == bindparam("chunk_id"))
               .order_by(_MARKS.c.id))
"""Built once (a judging queue asks for every pair it shows): executing a prepared select
skips building the expression each time."""


def marks_of_query(connection, annotator: str, query_id: str,  # noqa: ANN001 - Connection/Session
                   chunk_id: str | None = None) -> dict[str, PairMarks]:
    """The annotator's current marks per chunk of the query (only chunks with a mark event)."""
    params = {"annotator": annotator, "query_id": query_id}
    if chunk_id is not None:
        params["chunk_id"] = chunk_id
    out: dict[str, PairMarks] = {}
    for chunk, kind, action, text in connection.execute(
            _QUERY_MARKS if chunk_id is None else _PAIR_MARKS, params):
        out[chunk] = out.get(chunk, NO_MARKS).with_event(kind, action, text)
    return out


def marks_of_pair(connection, query_id: str, chunk_id: str) -> dict[str, PairMarks]:  # noqa: ANN001
    """Every annotator's current marks on the pair (annotators without mark events left out)."""
    marks = PairMark.__table__
    out: dict[str, PairMarks] = {}
    for annotator, kind, action, text in connection.execute(
            select(marks.c.annotator, marks.c.kind, marks.c.action, marks.c.text)
            .where(marks.c.query_id == query_id, marks.c.chunk_id == chunk_id).order_by(marks.c.id)):
        out[annotator] = out.get(annotator, NO_MARKS).with_event(kind, action, text)
    return out


def set_marks(kind: str):  # noqa: ANN201 - Select
    """A select of ``annotator, query_id, chunk_id, text`` of every pair whose newest ``kind``
    mark event (flag or comment) sets it: the current flags, or the current comments."""
    from sqlalchemy import text

    marks = PairMark.__table__
    return text(set_marks_sql(kind)).columns(marks.c.annotator, marks.c.query_id,
                                              marks.c.chunk_id, marks.c.text)


def current_marks(project: Project, annotator: str, query_id: str, chunk_id: str) -> PairMarks:
    """The annotator's current flag and comment on the pair."""
    with project.read() as session:
        return marks_of_query(session, annotator, query_id, chunk_id).get(chunk_id, NO_MARKS)


