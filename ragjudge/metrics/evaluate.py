"""Evaluate runs against qrels: per-query values and their means, the averaging made explicit."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics import _keys
from ragjudge.metrics.context import EvalContext
from ragjudge.metrics.data import Qrels, Run
from ragjudge.metrics.registry import Measure, parse_measure
from ragjudge.safetext import quote

#: how each ``queries=`` choice averages, as the result states it
AVERAGING = {
    "judged": "mean over every query in the qrels; a query the run does not answer counts 0 "
              "(trec_eval -c)",
    "run": "mean over the queries in both the qrels and the run (trec_eval without -c)",
    "list": "mean over the queries asked for that are in the qrels; a query the run does not "
            "answer counts 0",
}


@dataclass
class EvalResult:
    """Per-query values (``values[i, j]`` = measure j on query i) and their aggregates.

    NaN in ``values`` means the measure is undefined for that query: it is left out of the
    mean and counted in ``undefined``.
    """

    run_name: str | None
    query_ids: list[str]
    measures: list[Measure]
    values: np.ndarray
    answered: np.ndarray
    queries: str
    threshold: int
    averaging: str = field(default="")

    def __post_init__(self) -> None:
        if not self.averaging:
            self.averaging = AVERAGING[self.queries]

    @property
    def labels(self) -> list[str]:
        """Column labels: each measure as it was asked for (``str(measure)``)."""
        return [str(m) for m in self.measures]

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    def _col(self, measure: str | Measure) -> int:
        key = str(measure)
        labels = self.labels
        if key in labels:
            return labels.index(key)
        canonical = parse_measure(key).name
        for j, m in enumerate(self.measures):
            if m.name == canonical:
                return j
        raise KeyError(key)

    def column(self, measure: str | Measure) -> np.ndarray:
        """Per-query values of one measure, in ``query_ids`` order."""
        return self.values[:, self._col(measure)]

    @property
    def means(self) -> np.ndarray:
        """Mean of each measure over the queries where it is defined (NaN if none is)."""
        if self.values.size == 0:
            return np.full(len(self.measures), np.nan)
        defined = ~np.isnan(self.values)
        count = defined.sum(axis=0)
        total = np.where(defined, self.values, 0.0).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, total / np.maximum(count, 1), np.nan)

    def aggregate(self) -> dict[str, float]:
        """``{label: mean}``."""
        return dict(zip(self.labels, self.means.tolist()))

    def undefined(self) -> dict[str, int]:
        """``{label: number of queries where the measure is undefined (NaN)}``."""
        return dict(zip(self.labels, np.isnan(self.values).sum(axis=0).tolist()))

    def per_query(self) -> dict[str, dict[str, float]]:
        """``{query_id: {label: value}}``."""
        labels = self.labels
        return {q: dict(zip(labels, row)) for q, row in zip(self.query_ids, self.values.tolist())}

    def __getitem__(self, measure: str) -> float:
        return float(self.means[self._col(measure)])

    def subset(self, query_ids: Iterable[str]) -> EvalResult:
        """The same result restricted to some queries (e.g. one stratum); order kept."""
        wanted = set(query_ids)
        keep = np.array([q in wanted for q in self.query_ids], dtype=bool)
        return EvalResult(self.run_name, [q for q, k in zip(self.query_ids, keep) if k],
                          self.measures, self.values[keep], self.answered[keep], self.queries,
                          self.threshold, self.averaging)


def _query_set(qrels: Qrels, run: Run | None, queries: Any,
               labelled: np.ndarray | None = None) -> tuple[np.ndarray, str]:
    """The evaluated queries (sorted unique id bytes) and the averaging mode. ``labelled``:
    queries the labels of RAG measures cover (facets, nuggets ...), evaluated as if judged."""
    judged = qrels.query_id_bytes
    if labelled is not None and len(labelled):
        width = max(judged.dtype.itemsize, labelled.dtype.itemsize)
        judged = np.union1d(_keys.widen(judged, width), _keys.widen(labelled, width))
    if isinstance(queries, str):
        if queries == "judged":
            return judged, "judged"
        if queries == "run":
            if run is None:
                return judged[:0], "run"
            keep = _keys.lookup(run.query_id_bytes, judged) >= 0
            return judged[keep], "run"
        raise UsageError(f"queries must be 'judged', 'run' or a list of query ids, not {quote(queries)}.")
    wanted = _keys.as_ids(list(queries))
    keep = _keys.lookup(judged, wanted) >= 0
    wanted = wanted[keep]
    unique = np.unique(wanted)
    return unique, "list"


def _labelled(measures: Sequence[Measure], extras: Mapping[str, Any] | None
              ) -> tuple[np.ndarray | None, set[str]]:
    """The queries the RAG measures' labels cover (an extra's ``labelled_query_ids``: queries
    with facets, nuggets, claims or entities), and the extras keys that say so.

    Such a query is evaluated although it may have no relevance grade: its RAG measures are
    defined there, the measures that need grades are not (NaN, counted as undefined)."""
    if not extras:
        return None, set()
    ids: list[str] = []
    keys: set[str] = set()
    for key in sorted({k for m in measures for k in m.needs}):
        labelled = getattr(extras.get(key), "labelled_query_ids", None) if key in extras else None
        if labelled is not None:
            ids.extend(labelled)
            keys.add(key)
    return (np.unique(_keys.as_ids(ids)) if ids else None), keys


def _without_grades(ctx: EvalContext, qrels: Qrels) -> np.ndarray:
    """(Q,) bool: the evaluated queries the qrels do not judge."""
    return _keys.lookup(qrels.query_id_bytes, ctx.query_id_bytes) < 0


def max_depth(measures: Sequence[Measure]) -> int | None:
    """The ranks the measures read: the largest cutoff, None when one needs the whole ranking."""
    depths = [m.depth for m in measures]
    known = [d for d in depths if d is not None]
    if not depths or len(known) < len(depths):
        return None
    return max(known)


def build_context(
    qrels: Qrels,
    run: Run | None,
    *,
    threshold: int = 1,
    queries: Any = "judged",
    depth: int | None = None,
    extras: Mapping[str, Any] | None = None,
    measures: Iterable[Measure] | None = None,
) -> EvalContext:
    """Build the rank matrices of ``run`` on the chosen queries (for kernels, curves, explain).

    With ``measures``, the queries their labels cover (``extras``) are evaluated too, as in
    :func:`evaluate`."""
    labelled, _ = _labelled(list(measures or ()), extras)
    qids, _ = _query_set(qrels, run, queries, labelled)
    return EvalContext(qrels, run, qids, threshold=threshold, depth=depth, extras=extras)


def evaluate(
    qrels: Qrels,
    run: Run,
    measures: Iterable[str | Measure] | str | Measure,
    *,
    threshold: int = 1,
    queries: Any = "judged",
    extras: Mapping[str, Any] | None = None,
) -> EvalResult:
    """Evaluate one run: every measure on every query, and the mean of each.

    ``queries``: ``"judged"`` (default: every query in the qrels; one the run does not answer
    counts 0, as trec_eval -c), ``"run"`` (only queries both judged and answered, as trec_eval
    without -c) or an explicit list of query ids (those in the qrels are kept). A query the run
    answers but the qrels do not judge is ignored. ``extras`` carries data some measures need
    (``corpus_size`` for Accuracy, facet links, nugget support ...).

    A query that has labels for a RAG measure (facets, nuggets, claims or entities: see
    ``ragjudge.metrics.rag``) but no relevance grade is evaluated as well: the RAG measure is
    computed there, every measure that needs grades is NaN (undefined, counted).
    """
    if isinstance(measures, (str, Measure)):
        measures = [measures]
    parsed = [parse_measure(m) for m in measures]
    if not parsed:
        raise UsageError("no measures to evaluate.")
    labelled, label_keys = _labelled(parsed, extras)
    qids, mode = _query_set(qrels, run, queries, labelled)
    ctx = EvalContext(qrels, run, qids, threshold=threshold, depth=max_depth(parsed),
                      extras=extras)
    values = np.empty((ctx.n_queries, len(parsed)))
    ungraded = _without_grades(ctx, qrels) if labelled is not None else None
    for j, m in enumerate(parsed):
        values[:, j] = m(ctx)
        if ungraded is not None and not label_keys.intersection(m.needs):
            values[ungraded, j] = np.nan  # no relevance grade to count on that query
    return EvalResult(run.name if run is not None else None, ctx.query_ids, parsed, values,
                      ctx.answered.copy(), mode, int(threshold))


def evaluate_runs(
    qrels: Qrels,
    runs: Iterable[Run] | Mapping[str, Run],
    measures: Iterable[str | Measure],
    **options: Any,
) -> dict[str, EvalResult]:
    """Evaluate several runs against one qrels (whose index and counts are built once).

    Returns ``{run name: EvalResult}`` (a run without a name is called run1, run2, ...).
    """
    items = runs.items() if isinstance(runs, Mapping) else (
        (r.name or f"run{i}", r) for i, r in enumerate(runs, start=1))
    parsed = [parse_measure(m) for m in measures]
    out: dict[str, EvalResult] = {}
    for name, run in items:
        if name in out:
            raise UsageError(f"two runs are named {quote(name)}; give them distinct names.")
        result = evaluate(qrels, run, parsed, **options)
        result.run_name = name
        out[name] = result
    return out
