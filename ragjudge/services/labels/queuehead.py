"""The judging queue's walk through the head of the settle order (:class:`SettleHead`, a mixin of
:class:`~ragjudge.services.labels.queue.JudgingQueue`): the pairs of the order weighed last
(:class:`~ragjudge.services.labels.settleorder.SettleOrder`) that the queue holds and the
annotator has still to judge, taken before the rounds of the depth order. A pair of the head is
at :class:`~ragjudge.services.labels.queuecore.Position` round :data:`HEAD`: its ``slot`` is its
place in the order, its ``order`` which weighing it comes from, so that stepping back walks the
order the annotator was given even after a newer one was taken in."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from ragjudge.services.events.marks import NO_MARKS
from ragjudge.services.labels.queuecore import HEAD, PairView, Position, QueryPool
from ragjudge.services.labels.settleorder import PairOrder, SettleOrder

if TYPE_CHECKING:
    from ragjudge.services.events.state import LabelState


class SettleHead:
    """The settle order's head of a judging queue (a mixin: the queue sets what is annotated
    here, and gives its pools and its steps through the rounds)."""

    project: Any
    annotator: str
    order: str
    settle: SettleOrder | None
    until_settled: bool
    wait: float | None
    stopped: str | None
    show_source: bool
    query_ids: list[str]
    _query_pos: dict[str, int]

    if TYPE_CHECKING:
        def pool(self, query_id: str) -> QueryPool: ...

        def step(self, pos: Position, delta: int) -> PairView | None: ...

        def _open(self, state: LabelState | None) -> bool: ...

    @property
    def _walks_head(self) -> bool:
        return self.order == "settle" and self.settle is not None

    def _origin(self) -> Position:
        """Where the queue order begins (the settle order's head, else the first round)."""
        if self._walks_head:
            return Position(HEAD, 0, 0, self.settle.generation if self.settle else 0)
        return Position(0, 0, 0)

    def _take_in(self, *, wait: bool = False) -> None:
        """Take in an order weighed since the last move (the first time, ask for one and wait
        up to ``self.wait`` seconds); with ``until_settled``, stop when it says so."""
        settle = self.settle
        if settle is None:
            return
        if not settle.asked:
            settle.request()
        if wait and settle.generation == 0:
            settle.wait(self.wait)
        order = settle.take_in()
        if order is not None and self.until_settled and order.settled:
            self.stopped = order.settled

    @property
    def still_open(self) -> tuple[int, int] | None:
        """With ``until_settled``: (open, all) comparisons of the settle order taken in last;
        None before it is weighed, or without ``until_settled``."""
        order = self.settle.current if self.settle is not None else None
        if order is None or order.open is None or order.comparisons is None:
            return None
        return order.open, order.comparisons

    def _head_start(self, pos: Position, *, past: bool) -> int:
        """The place in the current order to look from: after the furthest pair given, or
        after ``pos`` when it is further in the same order (``past``: ``pos`` excluded)."""
        settle = self.settle
        if settle is None:
            return 0
        if pos.round == HEAD and pos.order == settle.generation:
            return max(pos.slot + 1, settle.cursor) if past else pos.slot
        return settle.cursor if past else 0

    def _in_pool(self, query_id: str, chunk_id: str) -> tuple[int, QueryPool, int] | None:
        """(query position, pool, index in the pool) of a pair of this queue, else None."""
        qp = self._query_pos.get(query_id)
        if qp is None:
            return None
        pool = self.pool(query_id)
        i = pool.index(chunk_id)
        return None if i is None else (qp, pool, i)

    def _head_open(self, start: int) -> Position | None:
        """The first pair of the current settle order from ``start`` that this queue holds and
        the annotator has still to judge."""
        settle = self.settle
        order = None if settle is None else settle.current
        if order is None or settle is None:
            return None
        for i in range(max(start, 0), len(order)):
            found = self._in_pool(*order.pair(i))
            if found is not None and self._open(found[1].states[found[2]]):
                return Position(HEAD, found[0], i, settle.generation)
        return None

    def _head_view(self, pos: Position) -> PairView | None:
        order = None if self.settle is None else self.settle.orders.get(pos.order)
        if order is None or not 0 <= pos.slot < len(order):
            return None
        query_id, chunk_id = order.pair(pos.slot)
        found = self._in_pool(query_id, chunk_id)
        if found is None:
            return None
        _, pool, i = found
        ri = next(r for r, bucket in enumerate(pool.buckets) if i in bucket)
        slot = sum(len(b) for b in pool.buckets[:ri]) + pool.buckets[ri].index(i)
        return PairView(pos, query_id, chunk_id, i, len(pool.chunk_ids), pool.handled,
                        pool.sources[i] if self.show_source else (), pool.states[i],
                        marks=pool.marks.get(chunk_id, NO_MARKS), query_slot=slot)

    def _head_step(self, pos: Position, delta: int, *, other_query: bool = False) -> PairView | None:
        """The neighbouring pair of the settle order that this queue holds (judged or not);
        past its end the first pair of the rounds, before its start None."""
        settle = self.settle
        order = None if settle is None else settle.orders.get(pos.order)
        generation = pos.order
        if order is None and settle is not None:
            order, generation, pos = settle.current, settle.generation, Position(HEAD, pos.query, -1)
        if order is not None:
            here = self.query_ids[pos.query] if 0 <= pos.query < len(self.query_ids) else None
            i = pos.slot + delta
            while 0 <= i < len(order):
                query_id, chunk_id = order.pair(i)
                found = self._in_pool(query_id, chunk_id)
                if found is not None and not (other_query and query_id == here):
                    view = self._head_view(Position(HEAD, found[0], i, generation))
                    if view is not None:
                        return view
                i += delta
        return self.step(Position(0, 0, -1), +1) if delta > 0 else None

    def _head_last(self) -> PairView | None:
        order = None if self.settle is None else self.settle.current
        if order is None:
            return None
        return self._head_step(Position(HEAD, 0, len(order), self.settle.generation if self.settle else 0), -1)

    def _prune(self, order: PairOrder) -> PairOrder:
        """A fresh settle order without the pairs the annotator has handled (on the weighing's
        thread: one read of their labels)."""
        from sqlalchemy import text

        from ragjudge.metrics import _keys

        if not len(order):
            return order
        sql = text(
            "SELECT l.query_id, l.chunk_id FROM labels l JOIN (SELECT MAX(id) AS id FROM labels "
            " WHERE annotator = :annotator AND (source IS NULL OR source <> 'recheck') "
            " GROUP BY query_id, chunk_id) n ON n.id = l.id "
            "WHERE l.grade IS NOT NULL OR l.skipped = TRUE")
        with self.project.connect() as connection:
            rows = connection.execute(sql, {"annotator": self.annotator}).all()
        if not rows:
            return order
        q, c = _keys.as_ids(order.query_ids), _keys.as_ids(order.chunk_ids)
        dq, dc = _keys.as_ids([r[0] for r in rows]), _keys.as_ids([r[1] for r in rows])
        wq, wc = max(q.dtype.itemsize, dq.dtype.itemsize), max(c.dtype.itemsize, dc.dtype.itemsize)
        keep = ~np.isin(_keys.pair_keys(q, c, wq, wc), _keys.pair_keys(dq, dc, wq, wc))
        return dataclasses.replace(order, query_ids=q[keep], chunk_ids=c[keep])
