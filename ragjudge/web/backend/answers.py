"""The annotator's answer queue: an answer as the answer page shows it, one judgment of it (a
nugget's support, or a cited chunk's support of a sentence), and the undo of the newest."""

from __future__ import annotations

from typing import Any

from ragjudge.services.labels import answers
from ragjudge.services.project.database import Project
from ragjudge.web.backend import SOURCE, NotFound, Who, writing
from ragjudge.web.backend.pairs import chunk_json, query_json
from ragjudge.web.backend.queues import Queues


def _answer_json(project: Project, queue: answers.AnswerQueue, position: int) -> dict[str, Any]:
    view = queue.view(position)
    query = query_json(project, view.query_id)
    cited = sorted({c for s in view.sentences for c in s.citations})
    done, total = queue.progress()
    return {
        "answer_id": view.answer_id, "position": position, "count": len(queue),
        "query": query,
        "sentences": [{"text": s.text, "citations": list(s.citations)} for s in view.sentences],
        "items": [{"nugget_id": i.nugget_id, "nugget": i.nugget, "vital": i.vital,
                   "sentence": i.sentence, "chunk_id": i.chunk_id, "support": i.support}
                  for i in view.items],
        "chunks": {c: chunk_json(project, c, query["text"]) for c in cited},
        "progress": {"answers_done": done, "answers": total, "open_items": view.open},
    }


def answer_at(project: Project, queues: Queues, who: Who, *, position: int | None = None,
              answer_id: int | None = None) -> dict[str, Any] | None:
    """An answer of the annotator's answer queue, by position or id; without either, the first
    with something left to judge (None: every answer is judged, or there are none)."""
    slot = queues.slot(who.name)
    with slot.lock:
        queue = queues.answer_queue(slot, who.name)
        if answer_id is not None:
            position = queue.position_of(answer_id)
            if position is None:
                raise NotFound(f"There is no answer {answer_id} to judge.")
        elif position is None:
            position = queue.first_open()
            if position is None:
                return None
        if not 0 <= position < len(queue):
            raise NotFound(f"There is no answer at position {position} (there are {len(queue)}).")
        return _answer_json(project, queue, position)


def judge_answer(project: Project, queues: Queues, who: Who, answer_id: int, *, support: str,
                 nugget_id: int | None, sentence: int | None, chunk_id: str | None,
                 duration_ms: int | None = None) -> dict[str, Any]:
    """One judgment of an answer (a nugget's support, or a cited chunk's support of a
    sentence), committed before this returns; the answer as it stands after it."""
    slot = queues.slot(who.name)
    with slot.lock:
        queue = queues.answer_queue(slot, who.name)
        position = queue.position_of(answer_id)
        if position is None:
            raise NotFound(f"There is no answer {answer_id} to judge.")
        with writing(project):
            event = answers.record_answer_judgment(
                who.guarded(project), annotator=who.name, answer_id=answer_id, support=support,
                nugget_id=nugget_id, sentence=sentence, chunk_id=chunk_id,
                duration_ms=duration_ms, source=SOURCE)
        return {"event_id": event, "answer": _answer_json(project, queue, position)}


def undo_answer_judgment(project: Project, queues: Queues, who: Who) -> dict[str, Any] | None:
    slot = queues.slot(who.name)
    with slot.lock:
        queue = queues.answer_queue(slot, who.name)
        with writing(project):
            result = answers.undo_last_answer_judgment(who.guarded(project), who.name)
        if result is None:
            return None
        position = queue.position_of(result.answer_id)
        return {"event_id": result.event_id, "undone_id": result.undone_id,
                "nugget_id": result.nugget_id, "sentence": result.sentence,
                "chunk_id": result.chunk_id, "support": result.support,
                "answer": None if position is None else _answer_json(project, queue, position)}
