"""The pairs of an annotator's judging queue as the pages show them: each read afresh from the
database before it is shown (a pair labelled elsewhere since the queue read it is passed over),
with the query's and the chunk's texts kept a minute."""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ragjudge.services.events.marks import NO_MARKS, marks_of_query
from ragjudge.services.labels import facets as marks
from ragjudge.services.labels import review, texts
from ragjudge.services.labels.queue import JudgingQueue, PairView
from ragjudge.services.project.database import Project
from ragjudge.terms import segments
from ragjudge.web.backend import NotFound, Who, state_json
from ragjudge.web.backend.database import newest_label
from ragjudge.web.backend.queues import Queues

NEXT_LIMIT = 20
"""The most pairs one request for next pairs returns."""
SHAPE_SECONDS = 10.0
"""How long whether a query has facets or nuggets is taken as known (one added here is seen at
once; one added in the app or by an import, within this long)."""


class TextCache:
    """Query and chunk texts, kept a minute (they change only by an import), and whether a
    query has facets or nuggets at all, kept :data:`SHAPE_SECONDS`."""

    def __init__(self, size: int = 2048, seconds: float = 60.0) -> None:
        self.size, self.seconds = size, seconds
        self._items: OrderedDict[tuple[str, str], tuple[float, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def forget(self, kind: str, key: str) -> None:
        with self._lock:
            self._items.pop((kind, key), None)

    def get(self, kind: str, key: str, load: Callable[[], Any], seconds: float | None = None) -> Any:
        now = time.monotonic()
        with self._lock:
            found = self._items.get((kind, key))
            if found is not None and now - found[0] < (self.seconds if seconds is None else seconds):
                return found[1]
        value = load()
        with self._lock:
            self._items[(kind, key)] = (now, value)
            self._items.move_to_end((kind, key))
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value


_TEXTS: weakref.WeakKeyDictionary[Project, TextCache] = weakref.WeakKeyDictionary()
_TEXTS_LOCK = threading.Lock()


def text_cache(project: Project) -> TextCache:
    """The text cache of one open project."""
    with _TEXTS_LOCK:
        found = _TEXTS.get(project)
        if found is None:
            found = _TEXTS[project] = TextCache()
        return found


def query_json(project: Project, query_id: str) -> dict[str, Any]:
    q = text_cache(project).get("query", query_id, lambda: texts.query_text(project, query_id))
    return {"id": q.id, "text": q.text, "description": q.description, "category": q.category,
            "narrative": q.narrative}


def chunk_json(project: Project, chunk_id: str, query_text: str) -> dict[str, Any]:
    c = text_cache(project).get("chunk", chunk_id, lambda: texts.chunk_text(project, chunk_id))
    return {"id": c.id, "doc_id": c.doc_id, "title": c.title, "section": c.section, "text": c.text,
            "segments": segments(c.text, query_text)}


def fresh(project: Project, queue: JudgingQueue, view: PairView) -> PairView:
    """The pair with its label state and marks as the database has them now (one connection,
    two indexed reads)."""
    name = queue.annotator
    with project.connect() as connection:
        state = newest_label(connection, name, view.query_id, view.chunk_id)
        marks = marks_of_query(connection, name, view.query_id, view.chunk_id).get(
            view.chunk_id, NO_MARKS)
    if state != view.state:
        queue.note_event(view.query_id, view.chunk_id, state)
    if marks != view.marks:
        queue.note_marks(view.query_id, view.chunk_id, marks)
    return PairView(view.position, view.query_id, view.chunk_id, view.pair_index, view.query_pairs,
                    queue.pool(view.query_id).handled, view.sources, state, view.recheck, marks,
                    view.query_slot)


def _annotated(project: Project, query_id: str) -> bool:
    """Whether the query has facets or nuggets (the judging page's panel has something to
    show), known for :data:`SHAPE_SECONDS`."""
    return text_cache(project).get("annotated", query_id, lambda: any(
        marks.marks_for(project, query_id)), seconds=SHAPE_SECONDS)


def pair_json(project: Project, queue: JudgingQueue, view: PairView) -> dict[str, Any]:
    name = queue.annotator
    query = query_json(project, view.query_id)
    # a lead answers a flag or comment: none to look for on a pair without one
    answer = (review.answer_for(project, name, view.query_id, view.chunk_id)
              if view.marks.any else None)
    facets, nuggets = (marks.marks_for(project, view.query_id, annotator=name, chunk_id=view.chunk_id)
                       if _annotated(project, view.query_id) else ([], []))
    totals = queue.totals
    return {
        "query": query,
        "chunk": chunk_json(project, view.chunk_id, query["text"]),
        "label": state_json(view.state),
        "seen": None if view.state is None else view.state.id,
        "marks": {"flagged": view.marks.flagged, "flag_note": view.marks.flag_note,
                  "comment": view.marks.comment},
        "review": None if answer is None else answer.to_json(),
        "facets": [{"id": f.id, "name": f.name, "covered": f.covered} for f in facets],
        "nuggets": [{"id": n.id, "text": n.text, "importance": n.importance, "support": n.support,
                     "kind": n.kind} for n in nuggets],
        "progress": {"pair": view.query_slot + 1, "pairs": view.query_pairs,
                     "judged": view.query_handled, "query": view.position.query + 1,
                     "queries": len(queue.query_ids),
                     "queue_pairs": None if totals is None else totals["pairs"],
                     "queue_handled": None if totals is None else totals["handled"]},
    }


def open_from(project: Project, queue: JudgingQueue, view: PairView | None) -> PairView | None:
    """``view`` or the first pair after it still open once its state is read afresh: pairs
    labelled elsewhere since the queue read them are passed over."""
    for _ in range(200):  # each turn settles one stale pair; a bound against a changing pool
        if view is None:
            return None
        found = fresh(project, queue, view)
        if found.state is None or not found.state.handled or queue.include_skipped and found.state.grade is None:
            return found
        view = queue.after(view.position)
    return view


def locate(queue: JudgingQueue, query_id: str, chunk_id: str) -> PairView:
    view = queue.goto_pair(query_id, chunk_id)
    if view is None:
        raise NotFound(f"The pair {query_id!r} / {chunk_id!r} is not in your queue.")
    return view


def next_pairs(project: Project, queues: Queues, who: Who, n: int = 1, *,
               after: tuple[str, str] | None = None) -> dict[str, Any]:
    """The next ``n`` pairs still to judge: from where judging resumes, or after the pair
    ``after`` (query id, chunk id) in queue order. Nothing moves; an empty list means done."""
    n = max(1, min(n, NEXT_LIMIT))
    slot = queues.slot(who.name)
    with slot.lock:
        queue = queues.judging(slot, who.name)
        view = queue.first() if after is None else queue.after(locate(queue, *after).position)
        out: list[dict[str, Any]] = []
        while view is not None and len(out) < n:
            view = open_from(project, queue, view)
            if view is None:
                break
            out.append(pair_json(project, queue, view))
            view = queue.after(view.position)
        return {"pairs": out, "empty": not queue.query_ids}


def pair_at(project: Project, queues: Queues, who: Who, query_id: str, chunk_id: str,
            step: int = 0) -> dict[str, Any] | None:
    """The pair itself (``step`` 0), or its neighbour in queue order (-1, +1, judged or not):
    what ``k`` and ``j`` show. None past either end."""
    slot = queues.slot(who.name)
    with slot.lock:
        queue = queues.judging(slot, who.name)
        view: PairView | None = locate(queue, query_id, chunk_id)
        if step:
            assert view is not None
            view = queue.step(view.position, step)
        if view is None:
            return None
        return pair_json(project, queue, fresh(project, queue, view))
