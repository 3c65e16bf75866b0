"""What a judging queue is made of (:class:`~ragjudge.services.labels.queue.JudgingQueue` and
its parts in :mod:`~ragjudge.services.labels.queuehead` and
:mod:`~ragjudge.services.labels.queuecounts`): the pool of a query, a place in the queue, the
pair on screen, and the condition on the run entries a pool is made of."""

from __future__ import annotations

from dataclasses import dataclass

from ragjudge.services.events.marks import NO_MARKS, PairMarks
from ragjudge.services.events.state import LabelState
from ragjudge.store.schema import PUBLISHED

PUBLISHED_RE = PUBLISHED.format(alias="re")
"""The condition that a ``run_entries`` row aliased ``re`` is of a published run (a pool takes
no other)."""

HEAD = -1
"""``Position.round`` of a pair taken from the settle order (its ``slot`` is its place in that
order, its ``order`` which weighing of the order it comes from)."""


@dataclass
class QueryPool:
    """The pool of one query for one annotator: chunk ids in the annotator's blind order."""

    query_id: str
    chunk_ids: list[str]
    min_ranks: list[int]
    sources: list[tuple[tuple[str, int], ...]]
    states: list[LabelState | None]
    buckets: list[list[int]]
    """Per round, indexes into ``chunk_ids`` of the pairs first offered in that round."""
    marks: dict[str, PairMarks]
    """The annotator's flag and comment per chunk (chunks without marks left out)."""

    def index(self, chunk_id: str) -> int | None:
        try:
            return self.chunk_ids.index(chunk_id)
        except ValueError:
            return None

    @property
    def handled(self) -> int:
        return sum(1 for s in self.states if s is not None and s.handled)


@dataclass(frozen=True)
class Position:
    """Where the annotator is: round, query position in the queue, index within the bucket.
    In the settle order's head (``round`` :data:`HEAD`): the query's position, the pair's place
    in the order and ``order``, which weighing of it."""

    round: int
    query: int
    slot: int
    order: int = 0


@dataclass(frozen=True)
class PairView:
    """The pair on screen (everything the judging screen shows of the queue)."""

    position: Position
    query_id: str
    chunk_id: str
    pair_index: int
    """0-based rank of this pair in its query's blind order."""
    query_pairs: int
    query_handled: int
    sources: tuple[tuple[str, int], ...]
    state: LabelState | None
    recheck: bool = False
    marks: PairMarks = NO_MARKS
    """The annotator's flag and comment (none shown on a recheck, which is blind)."""
    query_slot: int = 0
    """0-based place of this pair among its query's pairs in queue order (the order ``j`` walks:
    round by round, so in the ``depth`` order a query's pairs of later rounds come after its
    pairs of earlier ones)."""
