"""Curves as data: Metric@K for K = 1..N, and the interpolated precision-recall curve.

Seed 000 §5.2 (Metric@K curves: "what is the optimal K?") and §1.5 (interpolated P-R curve at
recall 0.0, 0.1, ..., 1.0, whose trapezoidal area is ``AUC_PR``). The rank matrices are built
once per curve; each point reuses them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics.data import Qrels, Run
from ragjudge.metrics.evaluate import AVERAGING, build_context
from ragjudge.metrics.measures import RECALL_LEVELS, interpolated_precision
from ragjudge.metrics.registry import Measure, parse_measure
from ragjudge.numeric import cutoff_problem


#: the most per-query values a Metric@K curve holds (queries x cutoffs; 8 bytes each)
MAX_CURVE_VALUES = 50_000_000


@dataclass
class Curve:
    """One curve: ``x`` (K or recall level), ``y`` (mean over queries), ``per_query`` (Q, len(x))."""

    measure: str
    x_label: str
    x: np.ndarray
    y: np.ndarray
    per_query: np.ndarray
    query_ids: list[str]
    averaging: str

    def rows(self) -> list[dict[str, float]]:
        """``[{x_label: x, "value": y}, ...]`` for JSON/CSV output."""
        return [{self.x_label: (int(a) if self.x_label == "k" else float(a)), "value": float(b)}
                for a, b in zip(self.x.tolist(), self.y.tolist())]

    def to_dict(self) -> dict[str, Any]:
        return {"measure": self.measure, "x": self.x_label, "averaging": self.averaging,
                "points": self.rows()}

    @property
    def area(self) -> float:
        """Trapezoidal area under the mean curve (for the P-R curve: mean AUC_PR)."""
        if len(self.x) < 2:
            return 0.0
        return float(np.sum((self.y[1:] + self.y[:-1]) * 0.5 * np.diff(self.x)))


def _base_measure(measure: str | Measure) -> tuple[Measure, int | None]:
    try:
        parsed = parse_measure(measure)
    except UsageError:
        if not isinstance(measure, str) or "@" in measure:
            raise
        parsed = parse_measure(f"{measure}@1")  # a family name such as "P": K is the x axis
        parsed = Measure(parsed.definition, None, parsed.params, measure)
    d = parsed.definition
    if d.cutoff == "none" or d.cutoff_kind is not int:
        raise UsageError(f"{parsed} has no rank cutoff, so it has no Metric@K curve; "
                         "use a measure written with @k (P, R, nDCG, AP, RR, Success ...).")
    return parsed, parsed.cutoff


def metric_at_k(
    qrels: Qrels,
    run: Run,
    measure: str | Measure,
    ks: Iterable[int] | None = None,
    *,
    threshold: int = 1,
    queries: Any = "judged",
    extras: Mapping[str, Any] | None = None,
) -> Curve:
    """Mean (and per-query) value of ``measure@K`` for each K in ``ks``.

    ``measure`` is written with or without a cutoff (``"nDCG"``, ``"P(rel=2)"``,
    ``"nDCG@20"``); ``ks`` defaults to 1..cutoff when one is given, else 1..the run's depth
    (at most 100).
    """
    parsed, given = _base_measure(measure)
    if ks is None:
        top = given if given is not None else min(max(run.depth, 1), 100)
        ks = range(1, top + 1)
    if isinstance(ks, range) and len(ks) and cutoff_problem(max(ks[0], ks[-1])):
        raise UsageError(f"{parsed}: {cutoff_problem(max(ks[0], ks[-1]))}")  # before listing it
    ks = [int(k) for k in ks]
    if not ks:
        raise UsageError("a Metric@K curve needs at least one K.")
    problem = cutoff_problem(min(ks)) or cutoff_problem(max(ks))
    if problem:
        raise UsageError(f"{parsed}: {problem}")
    ctx = build_context(qrels, run, threshold=threshold, queries=queries, depth=max(ks),
                        extras=extras, measures=[parsed])
    if ctx.n_queries * len(ks) > MAX_CURVE_VALUES:
        raise UsageError(
            f"{parsed}: a curve of {len(ks):,} cutoffs over {ctx.n_queries:,} queries holds "
            f"{ctx.n_queries * len(ks):,} values, more than {MAX_CURVE_VALUES:,}; ask for fewer "
            "cutoffs (e.g. --k 1,5,10,20,50,100).")
    values = np.empty((ctx.n_queries, len(ks)))
    for j, k in enumerate(ks):
        values[:, j] = Measure(parsed.definition, k, parsed.params)(ctx)
    name = Measure(parsed.definition, None, parsed.params).name
    with np.errstate(invalid="ignore"):
        mean = np.nanmean(values, axis=0) if ctx.n_queries else np.full(len(ks), np.nan)
    mode = queries if isinstance(queries, str) else "list"
    return Curve(name, "k", np.array(ks), mean, values, ctx.query_ids, AVERAGING[mode])


def pr_curve(
    qrels: Qrels,
    run: Run,
    *,
    levels: Iterable[float] | None = None,
    threshold: int = 1,
    rel: int | None = None,
    queries: Any = "judged",
) -> Curve:
    """The interpolated precision-recall curve (trec_eval ``iprec_at_recall``), 11 points by
    default; ``curve.area`` is the mean AUC_PR."""
    x = RECALL_LEVELS if levels is None else np.array([float(v) for v in levels])
    ctx = build_context(qrels, run, threshold=threshold, queries=queries)
    values = interpolated_precision(ctx, x, rel)
    mean = values.mean(axis=0) if ctx.n_queries else np.full(len(x), np.nan)
    mode = queries if isinstance(queries, str) else "list"
    return Curve("iprec", "recall", x, mean, values, ctx.query_ids, AVERAGING[mode])
