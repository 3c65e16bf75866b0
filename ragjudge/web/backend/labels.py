"""Labels: a grade or a skip of a pair in the annotator's queue, written only if the
annotator's newest event for the pair is the one the page saw (``seen``), else
:class:`~ragjudge.web.backend.LabelConflict`; the undo of the newest label (``expect``); the
annotator's own labelled pairs and the answers a lead gave them."""

from __future__ import annotations

from typing import Any

from ragjudge.errors import UsageError
from ragjudge.services.events.state import current_label, label_history
from ragjudge.services.labels import review
from ragjudge.services.project.database import Project
from ragjudge.web.backend import Who, state_json
from ragjudge.web.backend.database import Wanted, undo_newest
from ragjudge.web.backend.pairs import fresh, locate, open_from, pair_json
from ragjudge.web.backend.queues import Queues


def _check_grade(project: Project, grade: int | None, skip: bool) -> None:
    if skip and grade is not None:
        raise UsageError("A label is a grade or a skip, not both: give 'grade' or 'skip'.")
    if not skip and grade is None:
        raise UsageError("The label needs a 'grade' on the project's scale (or 'skip': true).")
    scale = project.scale
    if grade is not None and not scale.contains(grade):
        raise UsageError(f"Grade {grade} is not on the project's scale {scale.describe()} "
                         f"({scale.min}..{scale.max}).")


def post_label(project: Project, queues: Queues, who: Who, query_id: str, chunk_id: str, *,
               grade: int | None, skip: bool = False, seen: int | None = None,
               duration_ms: int | None = None, advance: bool = True) -> dict[str, Any]:
    """Record a grade (or a skip) of a pair in the annotator's queue, committed before this
    returns; with ``advance`` the next pair still to judge comes with the answer."""
    _check_grade(project, grade, skip)
    slot = queues.slot(who.name)
    with slot.lock:
        queue = queues.judging(slot, who.name)
        view = locate(queue, query_id, chunk_id)
        duration = None if duration_ms is None else max(0, min(int(duration_ms), 86_400_000))
        state = queues.labels.write(Wanted(who.name, query_id, chunk_id, grade, skip, seen, duration, who.digest))
        queue.note_event(query_id, chunk_id, state)
        out: dict[str, Any] = {"event_id": state.id, "label": state_json(state), "next": None}
        if advance:
            nxt = open_from(project, queue, queue.after(view.position))
            out["next"] = None if nxt is None else pair_json(project, queue, nxt)
        return out


def undo_label(project: Project, queues: Queues, who: Who, expect: int | None = None) -> dict[str, Any] | None:
    """Undo the annotator's newest label (the one numbered ``expect``, when given): a new
    event; the pair comes back with its state from before. None when nothing is left."""
    slot = queues.slot(who.name)
    with slot.lock:
        queue = queues.judging(slot, who.name)
        result = undo_newest(project, who, expect)
        if result is None:
            return None
        state = current_label(project, who.name, result["query_id"], result["chunk_id"])
        queue.note_event(result["query_id"], result["chunk_id"], state)
        view = queue.goto_pair(result["query_id"], result["chunk_id"])
        result["label"] = state_json(state)
        result["pair"] = None if view is None else pair_json(project, queue, fresh(project, queue, view))
        return result


def history(project: Project, who: Who, *, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
    """The annotator's own labelled pairs, newest first, each as it stands now."""
    return [{"query_id": h.query_id, "chunk_id": h.chunk_id, "query_text": h.query_text,
             "label": state_json(h.state)}
            for h in label_history(project, who.name, limit=limit, offset=offset)]


def news(project: Project, who: Who) -> list[dict[str, Any]]:
    """The annotator's flags and comments a lead answered since they last labelled."""
    return [i.to_json() for i in review.news_for(project, who.name)]
