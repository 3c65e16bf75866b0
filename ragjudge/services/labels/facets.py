"""Facets and nuggets of a query, and an annotator's links from chunks to them (append-only
events, like labels).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session
from ragjudge.errors import UsageError
from ragjudge.formats.records import check_typed
from ragjudge.store.schema import (
    Facet,
    FacetLink,
    Nugget,
    NuggetSupport,
    utcnow,
)
from ragjudge.services.events.annotators import check_annotator, ensure_annotator_in
from ragjudge.safetext import quote
from typing import Any


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


SUPPORT_LEVELS = ("full", "partial", "none")


IMPORTANCE_LEVELS = ("vital", "okay")


@dataclass(frozen=True)
class FacetView:
    id: int
    name: str
    covered: bool
    """Whether the annotator says the chunk in view covers this facet."""


@dataclass(frozen=True)
class NuggetView:
    id: int
    text: str
    importance: str
    support: str
    """The annotator's support of this nugget by the chunk in view: full, partial or none."""
    kind: str = "nugget"
    """``nugget`` (a fact a good answer needs) or ``claim`` (a claim of the reference answer,
    for Context Recall): both are marked alike, by how fully the chunk supports them."""


_FACETS = (select(Facet.id, Facet.name).where(Facet.query_id == bindparam("query_id"),
                                              Facet.removed.is_(False)).order_by(Facet.id))
_NUGGETS = (select(Nugget.id, Nugget.text, Nugget.importance, Nugget.kind)
            .where(Nugget.query_id == bindparam("query_id"), Nugget.removed.is_(False))
            .order_by(Nugget.id))
"""A query's facets and nuggets (built once: the judging screens ask for every pair)."""


def facet_rows(session: Session, query_id: str, annotator: str | None, chunk_id: str | None) -> list[FacetView]:
    facets = session.execute(_FACETS, {"query_id": query_id}).all()
    links = newest_mark_events(session, FacetLink.covered, FacetLink.facet_id, [f[0] for f in facets], annotator, chunk_id)
    return [FacetView(fid, name, bool(links.get(fid, False)))
            for fid, name in facets]


def nugget_rows(session: Session, query_id: str, annotator: str | None, chunk_id: str | None) -> list[NuggetView]:
    rows = session.execute(_NUGGETS, {"query_id": query_id}).all()
    # nuggets first, then the claims of the reference answer (an unknown kind reads as a nugget)
    nuggets = sorted(rows, key=lambda n: n[3] == "claim")
    support = newest_mark_events(session, NuggetSupport.support, NuggetSupport.nugget_id, [n[0] for n in nuggets],
                            annotator, chunk_id)
    return [NuggetView(nid, text, importance, support.get(nid, "none"),
                       "claim" if kind == "claim" else "nugget")
            for nid, text, importance, kind in nuggets]


def facets_for(project: Project, query_id: str, *, annotator: str | None = None,
               chunk_id: str | None = None) -> list[FacetView]:
    """The query's facets (not removed), each with whether the annotator linked the chunk."""
    with project.read() as session:
        return facet_rows(session, query_id, annotator, chunk_id)


def nuggets_for(project: Project, query_id: str, *, annotator: str | None = None,
                chunk_id: str | None = None) -> list[NuggetView]:
    """The query's nuggets and claims (not removed), each with the annotator's support by the
    chunk: nuggets first, then claims."""
    with project.read() as session:
        return nugget_rows(session, query_id, annotator, chunk_id)


def _facet(session: Session, facet_id: int) -> Facet:
    facet = session.get(Facet, facet_id)
    if facet is None or facet.removed:
        raise UsageError(f"There is no facet {facet_id}.")
    return facet


def _nugget(session: Session, nugget_id: int) -> Nugget:
    nugget = session.get(Nugget, nugget_id)
    if nugget is None or nugget.removed:
        raise UsageError(f"There is no nugget {nugget_id}.")
    return nugget


def _text(value: str, what: str) -> str:
    cleaned = (value or "").strip()
    if not cleaned:
        raise UsageError(f"The {what} is empty.")
    check_typed(cleaned, f"The {what}")
    return cleaned


def add_facet(project: Project, query_id: str, name: str) -> int:
    name = _text(name, "facet name")

    def work(session: Session) -> int:
        facet = Facet(query_id=query_id, name=name, removed=False, created_at=utcnow())
        session.add(facet)
        session.flush()
        return int(facet.id)

    return project.write(work)


def rename_facet(project: Project, facet_id: int, name: str) -> None:
    name = _text(name, "facet name")
    project.write(lambda session: setattr(_facet(session, facet_id), "name", name))


def remove_facet(project: Project, facet_id: int) -> None:
    """Hide the facet; its links stay in the event table."""
    project.write(lambda session: setattr(_facet(session, facet_id), "removed", True))


def set_facet_link(project: Project, *, annotator: str, facet_id: int, chunk_id: str, covered: bool) -> int:
    """Append an event: the annotator says the chunk covers (or not) the facet."""
    annotator = check_annotator(annotator)

    def work(session: Session) -> int:
        ensure_annotator_in(session, annotator)
        _facet(session, facet_id)
        link = FacetLink(facet_id=facet_id, chunk_id=chunk_id, annotator=annotator,
                         covered=bool(covered), created_at=utcnow())
        session.add(link)
        session.flush()
        return int(link.id)

    return project.write(work)


def add_nugget(project: Project, query_id: str, text: str, importance: str = "okay",
               kind: str = "nugget") -> int:
    """A new nugget of the query, or with ``kind="claim"`` a claim of its reference answer
    (what ContextRecall counts)."""
    text = _text(text, "nugget text")
    if importance not in IMPORTANCE_LEVELS:
        raise UsageError(f"Nugget importance {quote(importance)} must be vital or okay.")
    if kind not in ("nugget", "claim"):
        raise UsageError(f"A nugget's kind {quote(kind)} must be nugget or claim.")

    def work(session: Session) -> int:
        nugget = Nugget(query_id=query_id, text=text, importance=importance, kind=kind,
                        weight=None, removed=False, created_at=utcnow())
        session.add(nugget)
        session.flush()
        return int(nugget.id)

    return project.write(work)


def edit_nugget(project: Project, nugget_id: int, *, text: str | None = None,
                importance: str | None = None) -> None:
    if importance is not None and importance not in IMPORTANCE_LEVELS:
        raise UsageError(f"Nugget importance {quote(importance)} must be vital or okay.")
    new_text = _text(text, "nugget text") if text is not None else None

    def work(session: Session) -> None:
        nugget = _nugget(session, nugget_id)
        if new_text is not None:
            nugget.text = new_text
        if importance is not None:
            nugget.importance = importance

    project.write(work)


def remove_nugget(project: Project, nugget_id: int) -> None:
    project.write(lambda session: setattr(_nugget(session, nugget_id), "removed", True))


def set_nugget_support(project: Project, *, annotator: str, nugget_id: int, chunk_id: str, support: str) -> int:
    """Append an event: how fully the chunk supports the nugget (full, partial, none)."""
    annotator = check_annotator(annotator)
    if support not in SUPPORT_LEVELS:
        raise UsageError(f"Nugget support {quote(support)} must be full, partial or none.")

    def work(session: Session) -> int:
        ensure_annotator_in(session, annotator)
        _nugget(session, nugget_id)
        row = NuggetSupport(nugget_id=nugget_id, chunk_id=chunk_id, annotator=annotator,
                            support=support, created_at=utcnow())
        session.add(row)
        session.flush()
        return int(row.id)

    return project.write(work)


def _newest_marks(value_col: Any, key_col: Any) -> Any:
    table = key_col.class_
    return (select(key_col, value_col)
            .where(key_col.in_(bindparam("ids", expanding=True)),
                   table.chunk_id == bindparam("chunk_id"), table.annotator == bindparam("annotator"))
            .order_by(table.id))


_NEWEST_MARKS: dict[Any, Any] = {}
"""The prepared select per (value, key) column pair: built once, as the selects above."""


def newest_mark_events(session: Session, value_col: Any, key_col: Any, ids: list[int],
                       annotator: str | None, chunk_id: str | None) -> dict[int, Any]:
    """The newest mark's ``value_col`` (a link's ``covered``, a support's level) per facet or
    nugget id, for the annotator and chunk: one select of two columns, no rows as objects."""
    if not ids or not annotator or not chunk_id:
        return {}
    stmt = _NEWEST_MARKS.get((value_col, key_col))
    if stmt is None:
        stmt = _NEWEST_MARKS[(value_col, key_col)] = _newest_marks(value_col, key_col)
    rows = session.execute(stmt, {"ids": list(ids), "chunk_id": chunk_id, "annotator": annotator}).all()
    return {key: value for key, value in rows}  # later (newer) rows win


def marks_for(project: Project, query_id: str, *, annotator: str | None = None,
              chunk_id: str | None = None) -> tuple[list[FacetView], list[NuggetView]]:
    """The query's facets and nuggets with the annotator's marks for the chunk, in one session."""
    with project.read() as session:
        return (facet_rows(session, query_id, annotator, chunk_id),
                nugget_rows(session, query_id, annotator, chunk_id))
