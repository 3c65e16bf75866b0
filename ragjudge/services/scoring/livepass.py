"""The live evaluation's passes over whole views and over the queries a label touched.

A *full pass* (:func:`evaluate_views`) evaluates views on every query they judge, for every
run: a view's qrels are made from its grades per pair number, each run's grade matrix is
gathered from the run's layout (:class:`LayoutContext`, the same matrices as a plain
:class:`~ragjudge.metrics.context.EvalContext`, built in one gather), and the qrels' per-query
counts are computed on a view's first run and shared by its others (:class:`LivePass`). On
large matrices the (view, run) evaluations run on two threads.

A *touched pass* (:func:`evaluate_touched`) re-evaluates only the queries new labels touched:
every (view, run, query) as one row of a single small evaluation context.

The measures that need more than the qrels and the run (facets, nuggets, answers ...) are
evaluated by the caller's ``rag`` function, with the project's extras.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cached_property
from typing import Any

import numpy as np

from ragjudge.metrics import _keys
from ragjudge.metrics.context import EvalContext
from ragjudge.metrics.data import Qrels, Run
from ragjudge.metrics.evaluate import EvalResult
from ragjudge.metrics.registry import Measure
from ragjudge.services.events.labels import NO_GRADE
from ragjudge.services.scoring.livecore import LiveView, ideal_cutoffs, live_kernels
from ragjudge.services.scoring.livespace import PARALLEL_CELLS, PairSpace, worker_pool

Rag = Callable[[LiveView, str, Qrels, Run, list, Any], EvalResult]
"""``rag(view, run name, qrels, run, measures, queries)``: the values of the measures that need
the project's extras (:func:`ragjudge.metrics.evaluate.evaluate` with them)."""


class LayoutContext(EvalContext):
    """An :class:`EvalContext` whose grade matrix is gathered from pair numbers (a run's
    :class:`~ragjudge.services.scoring.livecore.RunLayout`) and a view's grades per pair number, instead of looking every ranked
    chunk up in the qrels: the same matrices (a test compares them), built in one gather.
    ``n_ret`` is the chunks ranked for each query, ``gather(depth)`` the (queries x depth)
    grade matrix.

    With ``like`` (a context of the same qrels, queries and threshold, for another run) the
    qrels side is taken from it instead of computed again: its lookups of the queries, and its
    caches of per-query counts (relevant, judged, ideal DCG), which depend on the qrels alone.
    This leans on :class:`EvalContext`'s attributes (``_qrels_row``, ``_judgment_row``, the
    ``_n_rel`` / ``_idcg`` / ``n_judged`` caches); the tests of this module compare every
    matrix, count and value with a plain context's.
    """

    def __init__(self, qrels: Qrels, run: Run | None, query_ids: np.ndarray, *, n_ret: np.ndarray,
                 gather: Callable[[int], np.ndarray], threshold: int, depth: int | None,
                 like: EvalContext | None = None) -> None:
        self._all_n_ret, self._gather = n_ret, gather
        if like is None:
            super().__init__(qrels, None, query_ids, threshold=threshold, depth=depth)
        else:
            self.qrels, self._qids = qrels, query_ids
            self.threshold = like.threshold
            self.extras = like.extras  # none: measures that read extras take the other path
            self.n_queries = like.n_queries
            self._qrels_row, self._judgment_row = like._qrels_row, like._judgment_row
            for key in ("_n_rel", "_idcg"):
                self.__dict__[key] = like.__dict__.setdefault(key, {})
            if "n_judged" in like.__dict__:
                self.__dict__["n_judged"] = like.__dict__["n_judged"]
            self._build_empty(depth)
        self.run = run
        if self.n_queries:
            self._build(run, depth)

    def _build(self, run: Run | None, depth: int | None) -> None:
        n_ret = self._all_n_ret
        size = int(n_ret.max()) if self.n_queries else 0
        if depth is not None:
            size = min(size, int(depth))
        self.depth = size
        self.n_ret = n_ret
        self.grade_matrix = self._gather(size)

    @cached_property
    def chunk_ids(self) -> np.ndarray:
        """(Q, D) ``S`` array of the chunk ids in the matrix (b"" for padding)."""
        run = self.run
        if run is None or self.depth == 0:
            return np.zeros((self.n_queries, self.depth), dtype="S8")
        row = _keys.lookup(run.query_id_bytes, self._qids)
        start = np.where(row >= 0, run.offsets[np.maximum(row, 0)], 0)
        at = start[:, None] + np.arange(self.depth)[None, :]
        valid = self.valid
        out = np.zeros((self.n_queries, self.depth), dtype=run.chunk_ids.dtype)
        out[valid] = run.chunk_ids[at[valid]]
        return out

    def prime_ideal_dcg(self, cutoffs: Iterable[int | None], gain: str) -> None:
        """Compute :meth:`ideal_dcg` at several cutoffs in one pass and keep them in its cache:
        the sum of each query's ideal gains is built rank by rank, in the order and with the
        terms :meth:`ideal_dcg` adds them (qrels rows in ideal-rank order, a zero for a gain
        not counted), and read at each cutoff: the same numbers, bit for bit."""
        cache = self.__dict__.setdefault("_idcg", {})
        todo = sorted({k for k in cutoffs if (k, gain) not in cache}, key=lambda k: (k is None, k or 0))
        if len(todo) < 2:
            return
        g = np.maximum(self.qrels.grades, 0).astype(np.float64)
        if gain == "exp":
            g = np.exp2(g) - 1.0
        rank = self.qrels.ideal_rank
        weights = np.zeros(len(g))
        positive = g > 0
        weights[positive] = g[positive] / np.log2(rank[positive] + 1.0)
        rows = self._judgment_row
        starts = self.qrels.offsets[:-1]
        sizes = np.diff(self.qrels.offsets)
        by_size = np.argsort(-sizes, kind="stable")  # queries with more judgments first
        sizes_desc = sizes[by_size]
        total = np.zeros(self.n_queries)
        top = int(sizes.max()) if len(sizes) else 0
        done = 0
        for k in todo:
            stop = top if k is None else min(int(k), top)
            while done < stop:  # add each query's judgment at ideal rank done + 1
                live = by_size[:np.searchsorted(-sizes_desc, -(done + 1), side="right")]
                at = starts[live] + done
                target = rows[at]
                keep = target >= 0
                total[target[keep]] += weights[at[keep]]
                done += 1
            cache[(k, gain)] = total.copy()


class LivePass:
    """One view's full evaluation (:func:`evaluate_views`): its qrels and each run's values of
    the plain measures (``prepare`` and ``evaluate``: they read the space and write only this
    pass, so they may run on a worker thread), then the rest on the calling thread
    (``finish``)."""

    def __init__(self, space: PairSpace, view: LiveView, *, threshold: int, top_grade: int,
                 answers_only: frozenset[str] = frozenset(), rag: Rag | None = None) -> None:
        self.space, self.view = space, view
        self.threshold, self.top_grade = threshold, top_grade
        self.answers_only, self.rag_values = answers_only, rag
        self.grades = view.fitted()
        self.first: EvalContext | None = None
        self.values: dict[str, np.ndarray] = {}

    def prepare(self) -> None:
        """The view's qrels, and what every run's context takes from them."""
        from ragjudge.metrics.evaluate import max_depth

        space, view, grades = self.space, self.view, self.grades
        self.qrels = space.view_qrels(grades, self.top_grade)
        self.plain = [view.parsed[j] for j in view.plain] if self.qrels.n_queries else []
        self.rag = [view.parsed[j] for j in view.rag]
        self.qids = self.qrels.query_id_bytes
        self.rows = _keys.lookup(space.query_bytes, self.qids)
        self.depth = max_depth(self.plain)
        self.source = np.full(len(grades) + 1, -1, dtype=np.int32)
        self.source[:-1] = np.maximum(grades, -1)
        self.ideal = ideal_cutoffs(self.plain)
        # every query judged and every measure plain: a run's values are its whole matrix
        self.whole = bool(self.plain) and len(self.rows) == len(view.present) \
            and view.plain == list(range(len(view.measures)))
        self.sums: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def evaluate(self, name: str) -> None:
        """The plain measures on one run (the first run's context computes the qrels' counts,
        the later ones share them); the first call prepares the pass."""
        if self.first is None:
            self.prepare()
        if not self.plain:
            return
        layout = self.space.layouts[name]
        pairs, rows, source = layout.pairs, self.rows, self.source

        def gather(size: int) -> np.ndarray:
            if len(rows) == pairs.shape[0] and size == pairs.shape[1]:
                return source[pairs]
            return source[pairs[rows, :size]]

        ctx = LayoutContext(self.qrels, self.space.runs[name], self.qids, n_ret=layout.n_ret[rows],
                            gather=gather, threshold=self.threshold, depth=self.depth, like=self.first)
        if self.first is None:
            for gain, cutoffs in self.ideal.items():
                ctx.prime_ideal_dcg(cutoffs, gain)
        values = live_kernels(ctx, self.plain)
        if name in self.answers_only:  # no ranking: its measures are undefined, as in eval
            values = np.full_like(values, np.nan)
        if self.first is None:
            self.first = ctx
        self.values[name] = values
        if self.whole:  # the values are the run's whole matrix: its column sums, here
            defined = ~np.isnan(values)
            self.sums[name] = (defined.sum(axis=0), np.where(defined, values, 0.0).sum(axis=0))

    def finish(self) -> None:
        """Put the values in the view's matrices (and evaluate the measures that need the
        project's extras), mark the evaluated queries, sum the columns."""
        view, space = self.view, self.space
        if not hasattr(self, "qrels"):
            self.prepare()
        view.present[:] = False
        if self.qrels.n_queries == 0 and not view.rag:
            for matrix in view.values.values():
                matrix[:] = np.nan
            view.resum()
            return
        if self.whole:
            for name in space.runs:
                view.values[name] = self.values[name]
                view.counts[name], view.totals[name] = self.sums[name]
            view.present[:] = True
            return
        rows = None
        for name, run in space.runs.items():
            matrix = view.values[name]
            matrix[:] = np.nan
            if self.plain:
                rows = self.rows
                matrix[np.ix_(rows, view.plain)] = self.values[name]  # type: ignore[arg-type]  # numpy's stubs omit the int lists ix_ takes
            if self.rag and self.rag_values is not None:
                result = self.rag_values(view, name, self.qrels, run, self.rag, "judged")
                rows = space.rows(result.query_ids)
                matrix[np.ix_(rows, view.rag)] = result.values  # type: ignore[arg-type]  # numpy's stubs omit the int lists ix_ takes
        if rows is not None:
            view.present[rows] = True
        view.resum()


def evaluate_views(passes: list[LivePass]) -> None:
    """Evaluate views on every query they judge, for every run (each view's :class:`LivePass`).

    Each view's qrels and first run make one task, each other (view, run) one more; on large
    matrices the tasks run on two threads (numpy lets go of the interpreter in its array
    loops), each writing only its own pass."""
    if not passes:
        return
    space = passes[0].space
    names = list(space.runs)
    cells = len(space.query_ids) * space.width * len(names) * len(passes)
    pool = worker_pool() if cells >= PARALLEL_CELLS and len(passes) * len(names) > 2 else None

    def run_all(tasks: list[tuple[LivePass, str]]) -> None:
        if pool is None:
            for task, name in tasks:
                task.evaluate(name)
        else:
            list(pool.map(lambda t: t[0].evaluate(t[1]), tasks))

    if names:
        run_all([(p, names[0]) for p in passes])
        run_all([(p, name) for name in names[1:] for p in passes if p.plain])
    for p in passes:
        p.finish()


def evaluate_touched(space: PairSpace, jobs: list[tuple[LiveView, list[str]]], *, threshold: int,
                     top_grade: int, answers_only: frozenset[str] = frozenset()) -> None:
    """The plain measures of some queries in some views (``jobs``: a view and its touched
    queries still judged), every (view, run, query) as one row of a single small evaluation
    context: its judgments are the query's under the view, its grade matrix gathered from the
    run's layout (the rows keyed by their position, as zero-padded decimals)."""
    from ragjudge.metrics.evaluate import max_depth

    jobs = [(view, judged) for view, judged in jobs if judged and view.plain]
    names = list(space.runs)
    if not jobs or not names:
        return
    columns: dict[str, int] = {}
    parsed: list[Measure] = []
    for view, _ in jobs:
        for j in view.plain:
            label = view.measures[j]
            if label not in columns:
                columns[label] = len(parsed)
                parsed.append(view.parsed[j])
    width = space.width
    counts: list[int] = []
    pairs: list[np.ndarray] = []
    grades: list[np.ndarray] = []
    blocks: list[np.ndarray] = []
    n_ret: list[np.ndarray] = []
    places: list[tuple[LiveView, int, int]] = []  # (view, run index, query row) of each row
    for view, judged in jobs:
        view_grades = view.fitted()
        rows = space.rows(judged)
        for row in rows.tolist():
            mine = space.pairs.of_row(row)
            mine = mine[view_grades[mine] != NO_GRADE]
            for i in range(len(names)):
                counts.append(len(mine))
                pairs.append(mine)
                grades.append(view_grades[mine])
                places.append((view, i, row))
        for name in names:
            layout = space.layouts[name]
            ranked = layout.pairs[rows]
            block = np.full((len(rows), width), -1, dtype=np.int32)
            block[:, :ranked.shape[1]] = np.where(
                ranked >= 0, np.maximum(view_grades[np.maximum(ranked, 0)], -1), -1)
            blocks.append(block)
            n_ret.append(layout.n_ret[rows])
    # blocks are (view, run) by query; the rows are (view, query, run): put them in order
    order: list[int] = []
    at = 0
    for _, judged in jobs:
        k = len(judged)
        for q in range(k):
            order.extend(at + i * k + q for i in range(len(names)))
        at += k * len(names)
    matrix = np.concatenate(blocks)[order]
    ranked_n = np.concatenate(n_ret)[order]
    keys = np.array([b"%010d" % k for k in range(len(counts))])
    qrels = Qrels.from_grouped(keys, np.array(counts, dtype=np.int64),
                               space.pairs.chunks[np.concatenate(pairs)], np.concatenate(grades),
                               top_grade=top_grade)
    ctx = LayoutContext(qrels, None, qrels.query_id_bytes, n_ret=ranked_n,
                        gather=lambda size: matrix[:, :size], threshold=threshold,
                        depth=max_depth(parsed))
    for gain, cutoffs in ideal_cutoffs(parsed).items():
        ctx.prime_ideal_dcg(cutoffs, gain)
    values = live_kernels(ctx, parsed)
    maps = {id(view): (np.array(view.plain), np.array([columns[view.measures[j]] for j in view.plain]))
            for view, _ in jobs}
    for k, (view, i, row) in enumerate(places):
        cols, source = maps[id(view)]
        view.values[names[i]][row, cols] = np.nan if names[i] in answers_only else values[k, source]
