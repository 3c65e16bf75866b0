"""A query and a chunk as the judging screens show them, and a chunk's neighbours in its
document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from sqlalchemy import select


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


@dataclass(frozen=True)
class QueryText:
    id: str
    text: str
    description: str | None
    category: str | None
    narrative: str | None


@dataclass(frozen=True)
class ChunkText:
    id: str
    text: str
    doc_id: str | None
    title: str | None = None
    """``meta.title`` (the document's title, as chunkers and TREC documents give it)."""
    section: str | None = None
    """``meta.section`` (the heading the chunk sits under)."""


CHUNK_ORDER_KEYS = ("chunk_index", "position", "index", "order")
"""``meta`` fields that give a chunk's place in its document (the first one every chunk of the
document has as a whole number is used; without one, chunks go by id)."""


def _meta_text(meta: Any, key: str) -> str | None:
    value = meta.get(key) if isinstance(meta, dict) else None
    if value is None or isinstance(value, (dict, list)) or str(value).strip() == "":
        return None
    return str(value)


def query_text(project: Project, query_id: str) -> QueryText:
    from ragjudge.store.schema import Query

    with project.read() as session:
        row = session.get(Query, query_id)
        if row is None:
            return QueryText(query_id, "", None, None, None)
        meta = row.meta if isinstance(row.meta, dict) else {}
        narrative = meta.get("narrative")
        return QueryText(row.id, row.text, row.description, row.category,
                         str(narrative) if narrative else None)


def chunk_text(project: Project, chunk_id: str) -> ChunkText:
    from ragjudge.store.schema import Chunk

    with project.read() as session:
        row = session.get(Chunk, chunk_id)
        if row is None:
            return ChunkText(chunk_id, "", None)
        return ChunkText(row.id, row.text, row.doc_id, _meta_text(row.meta, "title"),
                         _meta_text(row.meta, "section"))


def document_order(project: Project, doc_id: str) -> list[str]:
    """The ids of the document's chunks in their order: by the first of
    :data:`CHUNK_ORDER_KEYS` that every chunk of the document holds as a whole number, else by
    id."""
    from ragjudge.store.schema import Chunk

    with project.read() as session:
        rows = session.execute(select(Chunk.id, Chunk.meta).where(Chunk.doc_id == doc_id)).all()
    for key in CHUNK_ORDER_KEYS:
        places = [m.get(key) if isinstance(m, dict) else None for _, m in rows]
        if rows and all(isinstance(p, int) and not isinstance(p, bool) for p in places):
            return [cid for _, cid in sorted(zip(places, (r[0] for r in rows)))]
    return sorted(r[0] for r in rows)


def chunk_neighbours(project: Project, chunk_id: str) -> tuple[ChunkText | None, ChunkText | None]:
    """The chunks before and after this one in its document (None at an end, or without a
    ``doc_id``)."""
    chunk = chunk_text(project, chunk_id)
    if not chunk.doc_id:
        return None, None
    order = document_order(project, chunk.doc_id)
    i = order.index(chunk_id)
    return (chunk_text(project, order[i - 1]) if i > 0 else None,
            chunk_text(project, order[i + 1]) if i + 1 < len(order) else None)


def query_texts(project: Project) -> dict[str, QueryText]:
    """Every query of the project as :func:`query_text` gives one, read in one select."""
    from ragjudge.store.schema import Query

    with project.connect() as connection:
        rows = connection.execute(select(Query.id, Query.text, Query.description, Query.category,
                                         Query.meta)).all()
    out = {}
    for qid, text, description, category, meta in rows:
        narrative = meta.get("narrative") if isinstance(meta, dict) else None
        out[qid] = QueryText(qid, text, description, category, str(narrative) if narrative else None)
    return out
