"""Each annotator's judging queue and answer queue, shared by their tabs and guarded by a lock:
a :class:`~ragjudge.services.labels.queue.JudgingQueue` holds a cache of the annotator's label
states, so the pair shown next is re-read from the database before it is shown (a label given
meanwhile in the app or another process moves the queue on)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ragjudge.errors import RagjudgeError
from ragjudge.services.labels import answers
from ragjudge.services.labels.queue import JudgingQueue
from ragjudge.services.project.database import Project
from ragjudge.services.scoring.settled import judging_queue
from ragjudge.web.backend import writing
from ragjudge.web.backend.database import LabelWriter

DEPTH = 10
"""The judging pool's depth (the app's default): each run's top 10 per query."""
QUEUE_SECONDS = 600.0
"""A judging queue is built again after this long (new runs, assignments, a send-back)."""
IDLE_SECONDS = 1800.0
"""An annotator's queues are let go after this long without a request."""


@dataclass
class _Slot:
    lock: threading.RLock = field(default_factory=threading.RLock)
    queue: JudgingQueue | None = None
    built: float = 0.0
    answers: answers.AnswerQueue | None = None
    answers_built: float = 0.0
    used: float = field(default_factory=time.monotonic)


class Queues:
    """Each annotator's judging queue and answer queue, built on first use and again after
    :data:`QUEUE_SECONDS`; a request holds the annotator's lock while it uses them."""

    def __init__(self, project: Project, order: str = "depth") -> None:
        self.project = project
        self.order = order
        """depth, query or settle: :func:`ragjudge.services.scoring.settled.judging_queue`'s order"""
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.Lock()
        self._counting: set[str] = set()
        self._swept = time.monotonic()
        self._counter = ThreadPoolExecutor(1, thread_name_prefix="ragjudge-count")
        self.labels = LabelWriter(project)

    def slot(self, name: str) -> _Slot:
        now = time.monotonic()
        with self._lock:
            found = self._slots.get(name)
            if found is None:
                found = self._slots[name] = _Slot()
            found.used = now
            if now - self._swept > IDLE_SECONDS / 10:
                self._sweep(now)
            return found

    def _sweep(self, now: float) -> None:
        """Let go of the queues of annotators idle for :data:`IDLE_SECONDS` (built again when
        they come back): memory follows the people at work, not everyone who ever logged in."""
        self._swept = now
        for slot in self._slots.values():
            if now - slot.used > IDLE_SECONDS and slot.lock.acquire(blocking=False):
                try:
                    slot.queue = slot.answers = None
                finally:
                    slot.lock.release()

    def judging(self, slot: _Slot, name: str) -> JudgingQueue:
        """The annotator's queue (call with ``slot.lock`` held)."""
        if slot.queue is None or time.monotonic() - slot.built > QUEUE_SECONDS:
            from ragjudge.services.runs.head import ensure_rows

            with writing(self.project):  # a pool deeper than the runs' heads widens them (a
                ensure_rows(self.project, DEPTH)  # read when they are deep enough, as usual)
            slot.queue = judging_queue(self.project, name, order=self.order,  # (then nothing
                                       depth=DEPTH)  # to write; the settle order is weighed on its own thread)
            slot.built = time.monotonic()
            self._count_later(slot.queue)
        return slot.queue

    def answer_queue(self, slot: _Slot, name: str) -> answers.AnswerQueue:
        if slot.answers is None or time.monotonic() - slot.answers_built > QUEUE_SECONDS:
            slot.answers = answers.AnswerQueue(self.project, name)
            slot.answers_built = time.monotonic()
        return slot.answers

    def _count_later(self, queue: JudgingQueue) -> None:
        """The queue's totals are a scan of the pool: counted on one thread of their own, one
        queue after another (many annotators arriving at once do not start many scans at
        once), shown when done (``counting`` until then), as the app does."""
        with self._lock:
            if queue.annotator in self._counting:
                return
            self._counting.add(queue.annotator)
        self._counter.submit(self._count, queue)

    def _count(self, queue: JudgingQueue) -> None:
        try:
            queue.count_totals()
        except RagjudgeError:
            pass  # the progress line stays "counting"; judging is unaffected
        finally:
            with self._lock:
                self._counting.discard(queue.annotator)

    def forget(self, name: str) -> None:
        with self._lock:
            self._slots.pop(name, None)
