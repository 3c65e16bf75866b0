"""The settle order of a judging queue: pairs to judge first, given from outside the queue
(:class:`PairOrder`: the pairs that most move the comparisons of the runs not settled yet, as
:func:`ragjudge.services.scoring.settled.queue_order` weighs them), weighed again on a thread of
its own as labels arrive (:class:`SettleOrder`) so that no key waits for it.
:class:`~ragjudge.services.labels.queue.JudgingQueue` takes its pairs first, then the rest of
the pool in the depth order."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ragjudge.errors import RagjudgeError

SETTLE_LABELS = 20
"""The settle order is weighed again after this many labels of the annotator ..."""

SETTLE_BATCH = 50
"""... or once this many of its pairs were taken, or when none of it is left to judge."""

@dataclass(frozen=True)
class PairOrder:
    """Pairs to judge first, in order, given from outside the queue (the settle order): query and chunk ids as ``str`` or bytes sequences (numpy ``S`` arrays do). With
    ``until_settled``, ``settled`` says why judging may stop (None: not yet), and ``open`` how
    many of the ``comparisons`` are still open (None: not weighed)."""

    query_ids: Sequence[str] | Sequence[bytes] | np.ndarray
    chunk_ids: Sequence[str] | Sequence[bytes] | np.ndarray
    settled: str | None = None
    open: int | None = None
    comparisons: int | None = None

    def __len__(self) -> int:
        return len(self.query_ids)

    def pair(self, i: int) -> tuple[str, str]:
        return pair_text(self.query_ids[i]), pair_text(self.chunk_ids[i])


def pair_text(value: str | bytes) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


Weigher = Callable[[], PairOrder]
"""What weighs the settle order (:func:`ragjudge.services.scoring.settled.queue_order`)."""


@dataclass
class SettleOrder:
    """A queue's settle order, weighed on a thread of its own so that no key waits for it: asked
    for when the queue opens, again after :data:`SETTLE_LABELS` labels or once
    :data:`SETTLE_BATCH` of its pairs were taken (or none is left); a new order is taken in at the
    queue's next move. ``prune`` drops from a fresh order the pairs the annotator has handled."""

    weigher: Weigher
    prune: Callable[[PairOrder], PairOrder] | None = None
    generation: int = 0
    """how many orders were taken in (0: none yet)"""
    cursor: int = 0
    """the place in the current order after the furthest pair given"""
    labels: int = 0
    taken: int = 0
    error: str | None = None
    """why the last weighing failed (the queue goes on in the depth order)"""
    orders: dict[int, PairOrder] = field(default_factory=dict)
    _pending: PairOrder | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _done: threading.Event = field(default_factory=threading.Event)

    KEEP = 4
    """orders kept for the positions of pairs given from them"""

    @property
    def current(self) -> PairOrder | None:
        return self.orders.get(self.generation)

    @property
    def asked(self) -> bool:
        return self._thread is not None

    def due(self) -> bool:
        order = self.current
        return (self.labels >= SETTLE_LABELS or self.taken >= SETTLE_BATCH
                or (order is not None and self.cursor >= len(order)))

    def request(self) -> None:
        """Weigh the order again on a thread of its own (unless a weighing is under way)."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self.labels = self.taken = 0
            self._done.clear()
            self._thread = threading.Thread(target=self._weigh, name="ragjudge-settle-order",
                                            daemon=True)
            self._thread.start()

    def _weigh(self) -> None:
        try:
            order = self.weigher()
            if self.prune is not None:
                order = self.prune(order)
            with self._lock:
                self._pending = order
                self.error = None
        except RagjudgeError as exc:
            self.error = str(exc)
        finally:
            self._done.set()

    def wait(self, timeout: float | None) -> None:
        """Wait for the weighing under way, ``timeout`` seconds at most (None: until done)."""
        if self._thread is not None:
            self._done.wait(timeout)

    def take_in(self) -> PairOrder | None:
        """The order weighed since the last call, now the current one (None: none came)."""
        with self._lock:
            order, self._pending = self._pending, None
        if order is None:
            return None
        self.generation += 1
        self.orders[self.generation] = order
        self.orders.pop(self.generation - self.KEEP, None)
        self.cursor = 0
        return order
