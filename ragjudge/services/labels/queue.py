"""The judging queue: the pool of an annotator, in the order they judge it.

The pool of a query is the union of the top-K chunks of the chosen runs (TREC pooling). Within
a query the pairs are shuffled with a seed fixed per annotator. ``order='depth'`` goes in
rounds of growing depth (1, 2, 3, 5, 10, … K), each round visiting every query;
``order='query'`` judges a query's whole pool before the next; ``order='settle'`` first takes
the pairs of an order given from outside (:class:`PairOrder`: the pairs that most move the
comparisons of the runs not settled yet, :mod:`ragjudge.services.scoring.settled`), weighed again
on a thread of its own as labels arrive (:class:`SettleOrder`), then the rest in the depth order.

The queue's values (a query's pool, a place, the pair on screen) are in
:mod:`~ragjudge.services.labels.queuecore`, its walk through the settle order's head in
:mod:`~ragjudge.services.labels.queuehead` and its totals in
:mod:`~ragjudge.services.labels.queuecounts` (mixins of :class:`JudgingQueue`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from sqlalchemy import bindparam, select
from ragjudge.errors import UsageError
from ragjudge.services.access.rights import Access
from ragjudge.services.events.labels import not_recheck
from ragjudge.store.schema import Label
from ragjudge.services.events.annotators import check_annotator
from ragjudge.services.events.marks import NO_MARKS, PairMarks, marks_of_query
from ragjudge.services.events.state import LabelState, current_label, label_state, newest_event
from ragjudge.safetext import quote
from ragjudge.services.labels.queuecore import HEAD, PUBLISHED_RE, PairView, Position, QueryPool
from ragjudge.services.labels.queuecounts import QueueCounts, func_count
from ragjudge.services.labels.queuehead import SettleHead
from ragjudge.services.labels.settleorder import SettleOrder, Weigher


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


def annotator_seed(annotator: str) -> int:
    """A 64-bit seed fixed per annotator name (stable across runs and machines)."""
    digest = hashlib.blake2b(annotator.encode("utf-8"), digest_size=8, person=b"ragjudge").digest()
    return int.from_bytes(digest, "little")


def check_queries(project: Project, ids: list[str] | None, option: str = "--queries") -> None:
    """Ids the project does not have are a typo (or the wrong project): refused, naming them,
    instead of being left out of the queue without a word."""
    if not ids:
        return
    from ragjudge.store.schema import Query

    wanted = list(dict.fromkeys(ids))
    found: set[str] = set()
    with project.read() as session:
        for start in range(0, len(wanted), 5000):
            found.update(session.scalars(select(Query.id).where(Query.id.in_(wanted[start:start + 5000]))))
    unknown = [q for q in wanted if q not in found]
    if unknown:
        listed = ", ".join(quote(q) for q in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        noun = "query id" if len(unknown) == 1 else f"{len(unknown):,} query ids"
        raise UsageError(f"{option}: the {noun} {listed} {'is' if len(unknown) == 1 else 'are'} "
                         "not in this project.")


def check_category(project: Project, category: str | None, option: str = "--category") -> None:
    """A category no query has is a typo: refused, naming the project's categories, instead of
    an empty queue."""
    if category is None:
        return
    from ragjudge.store.schema import Query

    with project.read() as session:
        known = sorted(c for c in session.scalars(select(Query.category).where(Query.category.is_not(None))
                                                  .distinct()) if c is not None)
    if category not in known:
        raise UsageError(f"{option} {quote(category)}: no query of this project has that category "
                         f"(categories: {', '.join(known) or 'none'}).")


ORDERS = ("depth", "query", "settle")

SETTLE_WAIT = 1.0
"""Seconds the first pair waits for the first settle order (the depth order meanwhile)."""


def check_sees_sources(access: Access | None) -> None:
    """Refuse to show the runs and ranks of pairs still to judge unless ``access`` may see
    every pair's ranks (in a blind project: a lead)."""
    if access is None:
        raise UsageError("--show-source shows the runs and ranks of the pairs to judge, and who "
                         "is asking is not known. Judge without it.")
    access.require_sees_all("see which runs retrieved a pair still to judge (--show-source)")


def depth_rounds(depth: int) -> tuple[int, ...]:
    """The rounds of the ``depth`` order: 1, 2, 3, 5, 10, 20, 50, 100, ... up to ``depth``."""
    rounds = [d for d in (1, 2, 3, 5) if d < depth]
    step = 10
    while step < depth:
        rounds.extend(d for d in (step, 2 * step, 5 * step) if d < depth)
        step *= 10
    rounds.append(depth)
    return tuple(sorted(set(rounds)))


def _shuffle_key(seed: bytes, query_id: str, chunk_id: str) -> bytes:
    return hashlib.blake2b(f"{query_id}\x00{chunk_id}".encode(), digest_size=8, key=seed).digest()


_QUERY_STATES = (select(Label.id, Label.chunk_id, Label.grade, Label.skipped, Label.note,
                        Label.created_at, Label.undoes, Label.source)
                 .where(Label.annotator == bindparam("annotator"),
                        Label.query_id == bindparam("query_id"), not_recheck())
                 .order_by(Label.id))
"""An annotator's label events of one query, oldest first (built once: every pool load asks)."""

_ASSUMED = LabelState(0, 0, False, None, None, None, "upcoming")
"""The state :meth:`JudgingQueue.upcoming` gives the pairs it lists (in memory only)."""


class JudgingQueue(SettleHead, QueueCounts):
    """An annotator's walk through the pool (TREC pooling: the union of the chosen runs' top-K).

    Nothing proportional to the pool is held: the queue keeps the ordered list of query ids, a
    small cache of per-query pools (each one indexed select), and per touched query the lowest
    rank of a pair still to judge. ``order='depth'`` goes in rounds of growing depth
    (:func:`depth_rounds`); ``order='query'`` judges a query's whole pool before the next;
    ``order='settle'`` takes the pairs of the ``weigher``'s order first (:class:`SettleOrder`),
    then the rest in the depth order. Within a query the pairs are shuffled with a seed fixed
    per annotator. ``until_settled`` (with a ``weigher``): the queue gives no more pairs once
    the weigher says every comparison is settled (:attr:`stopped` says so).
    """

    CACHE = 64
    BATCH = 400

    def __init__(self, project, annotator: str, *, runs: list[str] | None = None,  # noqa: ANN001
                 depth: int = 10, order: str = "depth", queries: list[str] | None = None,
                 category: str | None = None, show_source: bool = False, recheck: float = 0.0,
                 use_assignment: bool = True, pairs: list[tuple[str, str]] | None = None,
                 progress: Callable[..., None] | None = None, access: Access | None = None,
                 weigher: Weigher | None = None, until_settled: bool = False,
                 wait: float | None = SETTLE_WAIT) -> None:
        """``show_source`` shows which runs retrieved each pair and at which rank: only to who
        may see every pair's ranks (``access``; None: the least rights). ``weigher``: the settle
        order's (``order='settle'`` and ``until_settled`` need one); ``wait``: how long the first
        pair waits for its first weighing (None: until it is done)."""
        if show_source:
            check_sees_sources(access)
        if order not in ORDERS:
            raise UsageError(f"--order {order}: use depth, query or settle.")
        if (order == "settle" or until_settled) and weigher is None:
            raise UsageError("the settle order and --until-settled weigh the pool's pairs on the "
                             "comparisons of the runs: open the queue with "
                             "ragjudge.services.scoring.settled.judging_queue.")
        if depth < 1:
            raise UsageError(f"--depth {depth}: the pool depth must be at least 1.")
        if not 0.0 <= recheck < 1.0:
            raise UsageError(f"--recheck {recheck}: give a share between 0 and 1, such as 0.05.")
        self.project = project
        self.annotator = check_annotator(annotator)
        self.depth = depth
        self.order = order
        self.show_source = show_source
        self.recheck_share = recheck
        self.category = category
        self.seed = annotator_seed(self.annotator)
        self._seed_bytes = self.seed.to_bytes(8, "little")
        self.rounds = depth_rounds(depth) if order in ("depth", "settle") else (depth,)
        self.until_settled = until_settled
        self.wait = wait
        self.settle = None if weigher is None else SettleOrder(weigher, self._prune)
        self.stopped: str | None = None
        """with ``until_settled``: why the queue gives no more pairs (every comparison settled)"""
        self._assumed: set[tuple[str, str]] = set()
        """pairs :meth:`upcoming` took as handled (in memory only)"""
        self.runs = self._check_runs(runs)
        from ragjudge.services.runs.head import ensure_rows

        ensure_rows(project, depth, self.runs or None, progress)  # a pool deeper than the runs' rows
        self.only: dict[str, set[str]] | None = None
        """With ``pairs``: the only chunks of each query the queue holds (judging exactly the
        pairs nobody has graded, from the evaluation screen)."""
        if pairs is not None:
            self.only = {}
            for query_id, chunk_id in pairs:
                self.only.setdefault(query_id, set()).add(chunk_id)
            queries = list(self.only)
            use_assignment = False
        check_queries(project, queries)
        check_category(project, category)
        self.assigned = use_assignment and self._has_assignment()
        self.query_ids = self._load_queries(queries, category)
        self._query_pos = {q: i for i, q in enumerate(self.query_ids)}
        self._cache: dict[str, QueryPool] = {}
        self._min_open: dict[str, int | None] = {}
        self._touched = self._touched_queries()
        import random

        self._rng = random.Random(self.seed)
        self.include_skipped = False
        self.totals: dict[str, int] | None = None
        """Pool size and handled pairs of the whole queue (set by :meth:`count_totals`)."""
        self._llm_order: str | None = None

    # -- loading ---------------------------------------------------------------------------

    def _check_runs(self, runs: list[str] | None) -> list[str] | None:
        if not runs:
            return None
        from ragjudge.store.schema import Run

        with self.project.read() as session:
            known = set(session.scalars(select(Run.name)))
        missing = [r for r in runs if r not in known]
        if missing:
            raise UsageError(f"--runs: no run named {', '.join(missing)} in this project "
                             f"(runs: {', '.join(sorted(known)) or 'none'}).")
        return list(dict.fromkeys(runs))

    def _has_assignment(self) -> bool:
        from ragjudge.store.schema import Assignment

        with self.project.read() as session:
            return session.scalar(select(Assignment.id).where(Assignment.annotator == self.annotator)
                                  .limit(1)) is not None

    def _run_filter(self, alias: str = "re") -> tuple[str, dict]:
        if not self.runs:
            return "", {}
        names = {f"run{i}": r for i, r in enumerate(self.runs)}
        return f" AND {alias}.run IN ({', '.join(':' + k for k in names)})", names

    def _load_queries(self, wanted: list[str] | None, category: str | None) -> list[str]:
        from sqlalchemy import text

        runs_sql, params = self._run_filter()
        if self.assigned:
            sql = ("SELECT q.id FROM queries q WHERE EXISTS (SELECT 1 FROM assignments a "
                   "WHERE a.annotator = :annotator AND a.query_id = q.id)")
            params = {"annotator": self.annotator}
        else:
            sql = ("SELECT q.id FROM queries q WHERE EXISTS (SELECT 1 FROM run_entries re "
                   f"WHERE re.query_id = q.id AND re.rank <= :depth{runs_sql} AND {PUBLISHED_RE})")
            params["depth"] = self.depth
        if category is not None:
            sql += " AND q.category = :category"
            params["category"] = category
        # queries in the order they were imported (SQLite's rowid); by id on other databases
        sql += " ORDER BY q.rowid" if self.project.engine.dialect.name == "sqlite" else " ORDER BY q.id"
        with self.project.connect() as connection:
            ids = [row[0] for row in connection.execute(text(sql), params)]
        if wanted is not None:
            present = set(ids)
            unknown = [q for q in wanted if q not in present]
            if unknown and len(unknown) == len(wanted):
                raise UsageError(f"--queries: none of the given queries ({', '.join(unknown[:5])}"
                                 f"{', ...' if len(unknown) > 5 else ''}) has pairs to judge "
                                 "in this pool.")
            keep = set(wanted)
            ids = [q for q in ids if q in keep]
        return ids

    def _touched_queries(self) -> set[str]:
        with self.project.read() as session:
            return set(session.scalars(select(Label.query_id).where(Label.annotator == self.annotator)
                                       .distinct()))

    def pool(self, query_id: str) -> QueryPool:
        """The query's pool for this annotator (cached)."""
        pool = self._cache.get(query_id)
        if pool is None:
            pool = self._load_pool(query_id)
            if len(self._cache) >= self.CACHE:
                self._cache.pop(next(iter(self._cache)))
            self._cache[query_id] = pool
        return pool

    def _load_pool(self, query_id: str) -> QueryPool:
        from sqlalchemy import text

        runs_sql, params = self._run_filter()
        params.update(query=query_id, depth=self.depth, annotator=self.annotator)
        if self.assigned:
            sql = ("SELECT a.chunk_id, re.run, re.rank FROM assignments a LEFT JOIN run_entries re "
                   f"ON re.query_id = a.query_id AND re.chunk_id = a.chunk_id AND {PUBLISHED_RE} "
                   "WHERE a.annotator = :annotator AND a.query_id = :query")
        else:
            sql = ("SELECT re.chunk_id, re.run, re.rank FROM run_entries re "
                   f"WHERE re.query_id = :query AND re.rank <= :depth{runs_sql} AND {PUBLISHED_RE}")
        ranks: dict[str, list[tuple[str, int]]] = {}
        only = None if self.only is None else self.only.get(query_id, set())
        if only is not None:
            ranks = {c: [] for c in only}
        with self.project.connect() as connection:
            for chunk_id, run, rank in connection.execute(text(sql), params):
                if only is not None and chunk_id not in only:
                    continue
                entry = ranks.setdefault(chunk_id, [])
                if run is not None:
                    entry.append((run, int(rank)))
            states = self._states(connection, query_id)
            marks = marks_of_query(connection, self.annotator, query_id)
        first = self._llm_first(query_id)
        chunk_ids = sorted(ranks, key=lambda c: (c not in first, _shuffle_key(self._seed_bytes, query_id, c)))
        min_ranks = [min((r for _, r in ranks[c]), default=10**9) for c in chunk_ids]
        buckets: list[list[int]] = [[] for _ in self.rounds]
        for i, rank in enumerate(min_ranks):
            buckets[self._round_of(rank)].append(i)
        return QueryPool(query_id, chunk_ids, min_ranks,
                         [tuple(sorted(ranks[c], key=lambda x: (x[1], x[0]))) for c in chunk_ids],
                         [_ASSUMED if (query_id, c) in self._assumed else states.get(c)
                          for c in chunk_ids], buckets, marks)

    def _llm_first(self, query_id: str) -> set[str]:
        """The chunks of the query an LLM's grades put first (the lead's setting, off by
        default; :func:`ragjudge.services.labels.llmhints.priorities`)."""
        from ragjudge.services.labels import llmhints as llm_judge

        if self._llm_order is None:
            self._llm_order = llm_judge.queue_order(self.project)
        if self._llm_order == "off":
            return set()
        return set(llm_judge.priorities(self.project, self.annotator, query_id, self._llm_order))

    def _round_of(self, rank: int) -> int:
        for i, d in enumerate(self.rounds):
            if rank <= d:
                return i
        return len(self.rounds) - 1

    def _states(self, connection, query_id: str) -> dict[str, LabelState]:  # noqa: ANN001
        rows = connection.execute(_QUERY_STATES, {"annotator": self.annotator, "query_id": query_id})
        out: dict[str, LabelState] = {}
        for id_, chunk_id, grade, skipped, note, created, undoes, source in rows:
            out[chunk_id] = LabelState(id_, grade, bool(skipped), note, created, undoes, source)
        return out

    # -- where the work is -----------------------------------------------------------------

    def _open(self, state: LabelState | None) -> bool:
        if state is None:
            return True
        if self.include_skipped:
            return state.grade is None
        return not state.handled

    def _min_open_rank(self, query_id: str) -> int | None:
        """The lowest rank of a pair of the query still to judge (None: nothing left)."""
        if query_id in self._cache:
            pool = self._cache[query_id]
            ranks = [r for r, s in zip(pool.min_ranks, pool.states) if self._open(s)]
            return min(ranks, default=None)
        if query_id not in self._touched:
            return 1
        if query_id not in self._min_open:
            self._fill_min_open(query_id)
        return self._min_open[query_id]

    def _fill_min_open(self, query_id: str) -> None:
        """One grouped select for a batch of touched queries from ``query_id`` onward."""
        start = self._query_pos[query_id]
        batch = [q for q in self.query_ids[start:start + 4 * self.BATCH]
                 if q in self._touched and q not in self._min_open and q not in self._cache]
        batch = batch[: self.BATCH]
        if self.assigned or self.include_skipped or self.only is not None:  # rare: per query
            for q in batch:
                self._min_open[q] = self._min_open_rank_loaded(self.pool(q))
            return
        from sqlalchemy import bindparam, text

        runs_sql, params = self._run_filter()
        params.update(depth=self.depth, annotator=self.annotator, queries=batch)
        sql = text(
            "SELECT re.query_id, MIN(re.rank) FROM run_entries re "
            f"WHERE re.query_id IN :queries AND re.rank <= :depth{runs_sql} AND {PUBLISHED_RE} AND NOT EXISTS ("
            " SELECT 1 FROM labels l WHERE l.id = (SELECT MAX(l2.id) FROM labels l2"
            "  WHERE l2.annotator = :annotator AND l2.query_id = re.query_id"
            "  AND l2.chunk_id = re.chunk_id AND (l2.source IS NULL OR l2.source <> 'recheck'))"
            " AND (l.grade IS NOT NULL OR l.skipped = TRUE)) "
            "GROUP BY re.query_id"
        ).bindparams(bindparam("queries", expanding=True))
        with self.project.connect() as connection:
            found = dict(connection.execute(sql, params).all())
        for q in batch:
            self._min_open[q] = found.get(q)

    def _min_open_rank_loaded(self, pool: QueryPool) -> int | None:
        return min((r for r, s in zip(pool.min_ranks, pool.states) if self._open(s)), default=None)

    def _first_open(self, start: Position) -> Position | None:
        """The first pair still to judge at or after ``start`` in queue order (in the settle
        order: its head, then the rounds)."""
        if start.round == HEAD:
            found = self._head_open(self._head_start(start, past=False))
            if found is not None:
                return found
            start = Position(0, 0, 0)
        return self._first_open_rounds(start)

    def _first_open_rounds(self, start: Position) -> Position | None:
        for ri in range(start.round, len(self.rounds)):
            d = self.rounds[ri]
            q0 = start.query if ri == start.round else 0
            for qp in range(q0, len(self.query_ids)):
                qid = self.query_ids[qp]
                low = self._min_open_rank(qid)
                if low is None or low > d:
                    continue
                pool = self.pool(qid)
                slot0 = start.slot if (ri == start.round and qp == start.query) else 0
                # pairs of earlier rounds left open (navigated past, undone) come first
                for rj in range(ri + 1):
                    bucket = pool.buckets[rj]
                    s0 = slot0 if rj == ri else 0
                    for slot in range(s0, len(bucket)):
                        if self._open(pool.states[bucket[slot]]):
                            return Position(rj if rj == ri else rj, qp, slot)
        return None

    # -- giving pairs (in the settle order, its head first: SettleHead) --------------------

    def upcoming(self, limit: int) -> list[tuple[str, str]]:
        """The next ``limit`` pairs this annotator would be given, in order: the walk judging
        does (:meth:`first`, then :meth:`after` each pair), each pair listed taken as handled
        in this queue's memory only. Nothing is written, and a settle order is not weighed
        again meanwhile (judging weighs it again after :data:`SETTLE_LABELS` labels). The
        queue is spent afterwards: open another to judge."""
        self._take_in(wait=True)
        if self.settle is not None and self.settle.error and self.settle.generation == 0:
            raise UsageError(self.settle.error)
        out: list[tuple[str, str]] = []
        view = self.first()
        while view is not None and len(out) < limit:
            pair = (view.query_id, view.chunk_id)
            out.append(pair)
            self._assumed.add(pair)
            self._min_open.pop(view.query_id, None)
            self._touched.add(view.query_id)
            pool = self._cache.get(view.query_id)
            if pool is not None:
                pool.states[view.pair_index] = _ASSUMED
            view = self.after(view.position)
        return out

    def open_pairs(self) -> Iterator[tuple[str, str]]:
        """Every (query id, chunk id) still to judge, in queue order, without moving: what a
        judge that works through the whole queue at once (an LLM) takes in turn (in the settle
        order: the order's pairs as weighed now, then the others in the depth order)."""
        given: set[tuple[str, str]] = set()
        if self._walks_head:
            self._take_in(wait=True)
            order = self.settle.current if self.settle is not None else None
            for i in range(len(order) if order is not None else 0):
                pair = order.pair(i) if order is not None else ("", "")
                found = self._in_pool(*pair)
                if found is not None and self._open(found[1].states[found[2]]):
                    given.add(pair)
                    yield pair
        for ri, depth in enumerate(self.rounds):
            for qid in self.query_ids:
                low = self._min_open_rank(qid)
                if low is None or low > depth:
                    continue
                pool = self.pool(qid)
                for i in pool.buckets[ri]:
                    if self._open(pool.states[i]) and (qid, pool.chunk_ids[i]) not in given:
                        yield qid, pool.chunk_ids[i]

    def first(self) -> PairView | None:
        """The first pair still to judge (where judging resumes), or None when all are done;
        a pair a lead sent back to the annotator comes before any other."""
        from ragjudge.services.labels.review import sent_back

        self._take_in(wait=True)
        if self.stopped:
            return None
        for item in sent_back(self.project, self.annotator):
            view = self.goto_pair(item.query_id, item.chunk_id)
            if view is not None:
                return view
        return self.next_open(self._origin())

    def next_open(self, start: Position) -> PairView | None:
        self._take_in()
        if self.stopped:
            return None
        origin = self._origin()
        pos = self._first_open(start)
        if pos is None and start != origin:
            pos = self._first_open(origin)
        if pos is None and not self.include_skipped:
            self.include_skipped = True  # second pass: pairs skipped without a grade
            self._min_open.clear()
            pos = self._first_open(origin)
            if pos is None:
                self.include_skipped = False
        return None if pos is None else self._given(pos)

    def _given(self, pos: Position) -> PairView:
        """The pair at ``pos``, given to the annotator (a pair of the settle order's head moves
        its cursor and counts toward its next weighing)."""
        settle = self.settle
        if pos.round == HEAD and settle is not None:
            settle.cursor = max(settle.cursor, pos.slot + 1)
            settle.taken += 1
            if settle.due():
                settle.request()
        return self.view(pos)

    def after(self, pos: Position) -> PairView | None:
        """The next pair still to judge after ``pos`` (what a grade moves on to). In the settle
        order the head comes first, from after the furthest pair given (or ``pos``)."""
        if self._walks_head:
            self._take_in()
            if self.stopped:
                return None
            found = self._head_open(self._head_start(pos, past=True))
            if found is not None:
                return self._given(found)
            if self.settle is not None and self.settle.current is not None:
                self.settle.cursor = len(self.settle.current)
                if self.settle.due():
                    self.settle.request()
            if pos.round == HEAD:
                return self.next_open(Position(0, 0, 0))
        nxt = Position(pos.round, pos.query, pos.slot + 1)
        return self.next_open(nxt)

    def view(self, pos: Position) -> PairView:
        if pos.round == HEAD:
            view = self._head_view(pos)
            if view is None:
                raise UsageError("that pair of the settle order is no longer in the queue.")
            return view
        qid = self.query_ids[pos.query]
        pool = self.pool(qid)
        i = pool.buckets[pos.round][pos.slot]
        chunk_id = pool.chunk_ids[i]
        return PairView(pos, qid, chunk_id, i, len(pool.chunk_ids), pool.handled,
                        pool.sources[i] if self.show_source else (), pool.states[i],
                        marks=pool.marks.get(chunk_id, NO_MARKS),
                        query_slot=sum(len(b) for b in pool.buckets[:pos.round]) + pos.slot)

    def refresh(self, view: PairView) -> PairView:
        if view.position.round == HEAD and self._head_view(view.position) is None:
            again = self.goto_pair(view.query_id, view.chunk_id)  # its order was let go
            if again is not None:
                return again
        return self.view(view.position)

    # -- moving without judging ------------------------------------------------------------

    def step(self, pos: Position, delta: int) -> PairView | None:
        """The neighbouring pair in queue order (judged or not), or None at either end (in the
        settle order: its head, then the rounds)."""
        if pos.round == HEAD:
            return self._head_step(pos, delta)
        found = self._step_rounds(pos, delta)
        if found is None and delta < 0 and self._walks_head:
            return self._head_last()
        return found

    def _step_rounds(self, pos: Position, delta: int) -> PairView | None:
        ri, qp, slot = pos.round, pos.query, pos.slot + delta
        for _ in range(len(self.query_ids) * len(self.rounds) + 1):
            qid = self.query_ids[qp]
            bucket = self.pool(qid).buckets[ri]
            if 0 <= slot < len(bucket):
                return self.view(Position(ri, qp, slot))
            qp += delta
            if qp >= len(self.query_ids):
                ri, qp = ri + 1, 0
            elif qp < 0:
                ri, qp = ri - 1, len(self.query_ids) - 1
            if not 0 <= ri < len(self.rounds):
                return None
            slot = 0 if delta > 0 else len(self.pool(self.query_ids[qp]).buckets[ri]) - 1
        return None

    def step_query(self, pos: Position, delta: int) -> PairView | None:
        """The first pair of the next (``delta`` +1) or previous (-1) query in queue order,
        or None at either end.

        In the ``depth`` order a query appears once per round, so this stays in the round of
        ``pos`` (crossing into the next or previous round only at the end of one): moving by
        query and by pair walk the same order and never lose the place. In the settle order's
        head, pairs are not grouped by query: this is the next (previous) pair of another query."""
        if pos.round == HEAD:
            return self._head_step(pos, delta, other_query=True)
        bucket = self.pool(self.query_ids[pos.query]).buckets[pos.round]
        edge = Position(pos.round, pos.query, len(bucket) - 1 if delta > 0 else 0)
        nxt = self.step(edge, +1 if delta > 0 else -1)
        if nxt is None or delta > 0:
            return nxt
        return self.view(Position(nxt.position.round, nxt.position.query, 0))

    def end(self, delta: int) -> PairView | None:
        """The first (``delta`` +1) or last (-1) pair of the queue order (None: empty)."""
        if not self.query_ids:
            return None
        if delta > 0:
            if self._walks_head:
                return self._head_step(Position(HEAD, 0, -1, self._origin().order), +1)
            return self.step(Position(0, 0, -1), +1)
        last = len(self.query_ids) - 1
        rnd = len(self.rounds) - 1
        return self.step(Position(rnd, last, len(self.pool(self.query_ids[last]).buckets[rnd])), -1)

    def goto_query(self, query_pos: int) -> PairView | None:
        """The query's first pair still to judge in its blind order, else its first pair."""
        if not self.query_ids:
            return None
        query_pos = max(0, min(query_pos, len(self.query_ids) - 1))
        pool = self.pool(self.query_ids[query_pos])
        first = None
        for ri, bucket in enumerate(pool.buckets):
            for slot, i in enumerate(bucket):
                if first is None:
                    first = Position(ri, query_pos, slot)
                if self._open(pool.states[i]):
                    return self.view(Position(ri, query_pos, slot))
        return None if first is None else self.view(first)

    def goto_pair(self, query_id: str, chunk_id: str) -> PairView | None:
        qp = self._query_pos.get(query_id)
        if qp is None:
            return None
        pool = self.pool(query_id)
        i = pool.index(chunk_id)
        if i is None:
            return None
        for ri, bucket in enumerate(pool.buckets):
            if i in bucket:
                return self.view(Position(ri, qp, bucket.index(i)))
        return None

    def query_position(self, query_id: str) -> int | None:
        return self._query_pos.get(query_id)

    def find_queries(self, text_: str, limit: int = 20) -> list[tuple[str, str]]:
        """Queries of the queue whose id or text contains ``text_`` (for the ``/`` finder)."""
        from ragjudge.store.schema import Query

        if "\x00" in text_:  # no query holds one (none is stored); PostgreSQL would refuse it
            return []
        pattern = f"%{text_.strip()}%"
        out = []
        with self.project.read() as session:
            rows = session.execute(
                select(Query.id, Query.text).where(Query.id.like(pattern) | Query.text.like(pattern))
                .order_by(Query.id).limit(limit * 5)
            ).all()
        for qid, qtext in rows:
            if qid in self._query_pos:
                out.append((qid, qtext))
            if len(out) >= limit:
                break
        return out

    # -- recording -------------------------------------------------------------------------

    def note_event(self, query_id: str, chunk_id: str, state: LabelState | None) -> None:
        """Keep the cached state and the totals in step with an event just written.

        A pair whose query is not cached (an undo reaching back to a query not shown since the
        queue opened, as after a restart) has its state before the event read from the
        database, so the totals move by what the event changed there too. In the settle order
        (or with ``until_settled``) every :data:`SETTLE_LABELS` labels ask for a new weighing."""
        self._touched.add(query_id)
        self._min_open.pop(query_id, None)
        if self.settle is not None:
            self.settle.labels += 1
            if self.settle.due():
                self.settle.request()
        pool = self._cache.get(query_id)
        if pool is not None:
            i = pool.index(chunk_id)
            if i is None:
                return
            before = pool.states[i]
            pool.states[i] = state
        elif self.totals is None or query_id not in self._query_pos:
            return
        else:
            pool = self.pool(query_id)  # read after the event: it holds the new state already
            if pool.index(chunk_id) is None:
                return
            with self.project.read() as session:
                before = (None if state is None else
                          label_state(newest_event(session, self.annotator, query_id, chunk_id, before=state.id)))
        if self.totals is not None:
            was = before is not None and before.handled
            now = state is not None and state.handled
            self.totals["handled"] += int(now) - int(was)

    def note_marks(self, query_id: str, chunk_id: str, marks: PairMarks) -> None:
        """Keep the cached flag and comment in step with a mark just written."""
        pool = self._cache.get(query_id)
        if pool is not None:
            pool.marks[chunk_id] = marks

    def reload_state(self, query_id: str, chunk_id: str) -> LabelState | None:
        state = current_label(self.project, self.annotator, query_id, chunk_id)
        self.note_event(query_id, chunk_id, state)
        return state

    # -- rechecks --------------------------------------------------------------------------

    def maybe_recheck(self, current: PairView | None) -> PairView | None:
        """With probability ``recheck``, one of the annotator's own earlier graded pairs, shown
        again unannounced (its earlier label hidden); graded with ``source='recheck'``."""
        if self.recheck_share <= 0 or self._rng.random() >= self.recheck_share:
            return None
        with self.project.read() as session:
            base = (select(Label.query_id, Label.chunk_id)
                    .where(Label.annotator == self.annotator, Label.grade.is_not(None),
                           Label.undoes.is_(None), Label.source == "tui"))
            count = session.scalar(select(func_count()).select_from(base.subquery())) or 0
            if count < 5:
                return None
            # leave out the last few labels: a recheck right after the first look measures memory
            offset = self._rng.randrange(count - 3)
            row = session.execute(base.order_by(Label.id).offset(offset).limit(1)).first()
        if row is None or (current and (row[0], row[1]) == (current.query_id, current.chunk_id)):
            return None
        view = self.goto_pair(row[0], row[1])
        if view is None:
            return None
        return PairView(view.position, view.query_id, view.chunk_id, view.pair_index,
                        view.query_pairs, view.query_handled, view.sources, None, recheck=True)
