"""Marks, facets and nuggets of a pair in the annotator's queue: a flag (with a note) or a
comment, a facet added or linked to the chunk, a nugget added or its support by the chunk."""

from __future__ import annotations

from typing import Any

from ragjudge.services.labels import events as label_events
from ragjudge.services.labels import facets as marks
from ragjudge.services.project.database import Project
from ragjudge.web.backend import SOURCE, NotFound, Who, writing
from ragjudge.web.backend.pairs import locate, text_cache
from ragjudge.web.backend.queues import Queues


def _in_queue(queues: Queues, who: Who, query_id: str, chunk_id: str) -> None:
    slot = queues.slot(who.name)
    with slot.lock:
        locate(queues.judging(slot, who.name), query_id, chunk_id)


def set_mark(project: Project, queues: Queues, who: Who, query_id: str, chunk_id: str, *,
             kind: str, text: str | None, clear: bool) -> dict[str, Any]:
    """Flag (with a note) or unflag the pair, or set or clear the comment on it."""
    _in_queue(queues, who, query_id, chunk_id)
    where = dict(annotator=who.name, query_id=query_id, chunk_id=chunk_id, source=SOURCE)
    with writing(project):
        if kind == "flag":
            marks = (label_events.unflag_pair(who.guarded(project), **where) if clear
                     else label_events.flag_pair(who.guarded(project), note=text, **where))
        else:
            marks = label_events.comment_pair(who.guarded(project), note=None if clear else text, **where)
    slot = queues.slot(who.name)
    with slot.lock:
        if slot.queue is not None:
            slot.queue.note_marks(query_id, chunk_id, marks)
    return {"flagged": marks.flagged, "flag_note": marks.flag_note, "comment": marks.comment}


def _facets_json(project: Project, who: Who, query_id: str, chunk_id: str) -> dict[str, Any]:
    facets, nuggets = marks.marks_for(project, query_id, annotator=who.name, chunk_id=chunk_id)
    return {"facets": [{"id": f.id, "name": f.name, "covered": f.covered} for f in facets],
            "nuggets": [{"id": n.id, "text": n.text, "importance": n.importance,
                         "support": n.support, "kind": n.kind} for n in nuggets]}


def add_facet(project: Project, queues: Queues, who: Who, query_id: str, chunk_id: str,
              name: str) -> dict[str, Any]:
    _in_queue(queues, who, query_id, chunk_id)
    with writing(project):
        marks.add_facet(who.guarded(project), query_id, name)
    text_cache(project).forget("annotated", query_id)
    return _facets_json(project, who, query_id, chunk_id)


def link_facet(project: Project, queues: Queues, who: Who, query_id: str, chunk_id: str,
               facet_id: int, covered: bool) -> dict[str, Any]:
    _in_queue(queues, who, query_id, chunk_id)
    if facet_id not in {f.id for f in marks.facets_for(project, query_id)}:
        raise NotFound(f"Query {query_id!r} has no facet {facet_id}.")
    with writing(project):
        marks.set_facet_link(who.guarded(project), annotator=who.name, facet_id=facet_id, chunk_id=chunk_id,
                               covered=covered)
    return _facets_json(project, who, query_id, chunk_id)


def add_nugget(project: Project, queues: Queues, who: Who, query_id: str, chunk_id: str,
               text: str, importance: str) -> dict[str, Any]:
    _in_queue(queues, who, query_id, chunk_id)
    with writing(project):
        marks.add_nugget(who.guarded(project), query_id, text, importance)
    text_cache(project).forget("annotated", query_id)
    return _facets_json(project, who, query_id, chunk_id)


def support_nugget(project: Project, queues: Queues, who: Who, query_id: str, chunk_id: str,
                   nugget_id: int, support: str) -> dict[str, Any]:
    _in_queue(queues, who, query_id, chunk_id)
    if nugget_id not in {n.id for n in marks.nuggets_for(project, query_id)}:
        raise NotFound(f"Query {query_id!r} has no nugget {nugget_id}.")
    with writing(project):
        marks.set_nugget_support(who.guarded(project), annotator=who.name, nugget_id=nugget_id,
                                   chunk_id=chunk_id, support=support)
    return _facets_json(project, who, query_id, chunk_id)
