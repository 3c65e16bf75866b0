"""Adjudication: a lead's decision on a disputed pair, which the gold takes before any rule."""

from __future__ import annotations

from typing import TYPE_CHECKING
from ragjudge.errors import UsageError
from ragjudge.formats.records import check_typed
from ragjudge.services.access.rights import Access
from ragjudge.store.schema import Adjudication, Chunk, Query, utcnow


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


def adjudicate(
    project: Project,
    *,
    query_id: str,
    chunk_id: str,
    grade: int,
    reason: str,
    access: Access,
) -> int:
    """Record the lead's final grade for a pair (an append-only event; gold qrels use the newest
    one first), under the name of ``access``'s identity. Returns the adjudication's id. Only
    who may lead adjudicates (anyone known while the project has no lead)."""
    access.require_lead("adjudicate")
    by = access.name or ""
    scale = project.scale
    if not scale.contains(grade):
        raise UsageError(f"grade {grade} is off the project's scale {scale.describe()}.")
    if not reason or not reason.strip():
        raise UsageError("an adjudication needs a reason (--reason): it is what later readers see.")
    check_typed(reason, "The reason")
    with project.read() as session:
        if session.get(Query, query_id) is None:
            raise UsageError(f"there is no query '{query_id}' in this project.")
        if session.get(Chunk, chunk_id) is None:
            raise UsageError(f"there is no chunk '{chunk_id}' in this project.")

    def add(session) -> int:  # noqa: ANN001
        row = Adjudication(
            query_id=query_id, chunk_id=chunk_id, grade=int(grade), by=by.strip(),
            reason=reason.strip(), created_at=utcnow(),
        )
        session.add(row)
        session.flush()
        return row.id

    return project.write(add)
