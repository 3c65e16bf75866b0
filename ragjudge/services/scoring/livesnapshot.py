"""What the evaluation screen shows of the live evaluation at one moment, and how it is read
off the views.

:class:`LiveSnapshot` is an immutable copy of the numbers that change with every label (a worker
thread makes it, the UI thread renders it): each run's mean of each measure over the judged
queries, Judged@10 and the unjudged chunks of each top 10, the curves, the range of each mean
over the annotators who cover enough of the pool (:func:`ranges`), and on request one measure's
per-query column (:class:`QueryRows`) or the means per stratum of a query field.

The functions here read a :class:`~ragjudge.services.scoring.livespace.PairSpace` and its views
and change nothing; the means are column sums in query order, as
:attr:`ragjudge.metrics.evaluate.EvalResult.means` adds them (bit for bit).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from ragjudge.services.scoring.livecore import LiveView
from ragjudge.services.scoring.livespace import PairSpace

RANGE_COVERAGE = 0.5
"""The share of the pool of the judged queries an annotator's labels must cover, by default,
for their scores to enter the range over annotators."""


COVERAGE_CHOICES = (0.5, 0.75, 1.0, 0.0, 0.1, 0.25)
"""The shares the evaluation screen's key steps through."""


JUDGED = "Judged@10"


CURVE_K = tuple(range(1, 21))


PR_LEVELS = tuple(j / 10 for j in range(11))


PR_NAMES = tuple(f"iprec@{x:g}" for x in PR_LEVELS)


def gold_measures(measures: Sequence[str], curve: str) -> list[str]:
    """The gold view's columns: the shown measures, Judged@10, the curve at every k and the
    11-point precision-recall curve."""
    return list(dict.fromkeys([*measures, JUDGED, *(f"{curve}@{k}" for k in CURVE_K), *PR_NAMES]))


@dataclass(frozen=True)
class QueryRows:
    """Per-query values of one measure for every run, with each query's facts."""

    measure: str
    query_ids: list[str]
    values: dict[str, np.ndarray]
    """run -> value per query (NaN: undefined)"""
    categories: list[str | None]
    judged: np.ndarray
    """gold-judged pairs of each query"""
    hidden: frozenset[str] = frozenset()
    """queries whose values a blind reader may not see
    (:meth:`ragjudge.services.access.rights.Access.hidden_queries`): listed, their values NaN"""


@dataclass(frozen=True)
class LiveSnapshot:
    """What changes with every label: aggregates, ranges, curves, one per-query column."""

    version: int
    rule: str
    threshold: int
    measures: list[str]
    run_names: list[str]
    means: dict[str, dict[str, float]]
    """run -> measure -> mean over the judged queries (``ragjudge eval``'s number)"""
    judged_at_10: dict[str, float]
    unjudged_top10: dict[str, int]
    """run -> unjudged chunks in its top 10 over the judged queries (score is a lower bound)"""
    n_queries: int
    n_queries_total: int
    gold_pairs: int
    labels_used: int
    annotators: list[str]
    ranges: dict[str, dict[str, tuple[float, float]]]
    """run -> measure -> (min, max) over the annotators who cover enough of the pool of the
    gold value moved by each one's difference from the gold on the queries they judged (their
    grades in place of the gold's there)"""
    curve: str
    curve_values: dict[str, list[float]]
    pr_values: dict[str, list[float]]
    updated_at: datetime
    touched: tuple[str, ...]
    compute_ms: float
    rows: QueryRows | None = None
    strata: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    """stratum -> run -> measure -> mean (for the field asked for)"""
    strata_sizes: dict[str, int] = field(default_factory=dict)
    strata_field: str | None = None
    range_ends: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    """run -> measure -> (who sets the minimum, who sets the maximum) of :attr:`ranges`"""
    range_gold: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    """run -> measure -> annotator -> the gold mean on the queries that annotator judged"""
    coverage: dict[str, float] = field(default_factory=dict)
    """annotator -> share of the pool of the judged queries their labels cover"""
    min_coverage: float = RANGE_COVERAGE
    """the share an annotator needs to enter the ranges; the others have too few labels"""

    @property
    def in_ranges(self) -> list[str]:
        return [a for a, share in self.coverage.items() if share >= self.min_coverage and share > 0]

    @property
    def too_few(self) -> list[str]:
        return [a for a in self.coverage if a not in self.in_ranges]


def means(view: LiveView, rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """run -> mean of each column over the view's judged queries (``rows``: a subset of them,
    ascending), summed in query order like :attr:`EvalResult.means`."""
    out = {}
    if rows is None:
        for name in view.values:
            count, total = view.counts[name], view.totals[name]
            with np.errstate(invalid="ignore", divide="ignore"):
                out[name] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        return out
    every = len(rows) == len(view.present)  # rows are ascending and distinct: all of them
    for name, matrix in view.values.items():
        m = matrix if every else matrix[rows]
        defined = ~np.isnan(m)
        count = defined.sum(axis=0)
        total = np.where(defined, m, 0.0).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return out


def gold_numbers(space: PairSpace, gold: LiveView, measures: list[str], curve: str) -> dict[str, Any]:
    """The gold view's means of the shown measures, Judged@10, the unjudged chunks of each run's
    top 10 over the judged queries, the curve and the precision-recall curve: the fields of
    :class:`LiveSnapshot` of those names."""
    averages = means(gold)
    col = {m: j for j, m in enumerate(gold.measures)}
    unjudged = {}
    for name, matrix in gold.values.items():
        shown = np.minimum(space.run_lengths[name], 10)
        # a query evaluated for its nuggets alone has no grade: its top 10 is unjudged
        judged = np.nan_to_num(np.rint(matrix[:, col[JUDGED]] * 10))
        unjudged[name] = int(np.where(gold.present, shown - judged, 0).sum())
    return {
        "means": {n: {m: float(v[col[m]]) for m in measures} for n, v in averages.items()},
        "judged_at_10": {n: float(v[col[JUDGED]]) for n, v in averages.items()},
        "unjudged_top10": unjudged,
        "curve_values": {n: [float(v[col[f"{curve}@{k}"]]) for k in CURVE_K] for n, v in averages.items()},
        "pr_values": {n: [float(v[col[p]]) for p in PR_NAMES] for n, v in averages.items()},
    }


def ranges(space: PairSpace, views: dict[str, LiveView], gold: LiveView, measures: list[str],
           code: dict[str, int], min_coverage: float) -> dict[str, Any]:
    """The range of each mean over the annotators whose labels cover at least ``min_coverage``
    of the pool of the judged queries, each scored on the queries they judged (their difference
    from the gold there, moved onto the gold's mean); who sets each end; the gold on each one's
    queries; everyone's coverage (``code``: each annotator's code)."""
    judged = gold.per_row > 0
    coverage = {rule.split(":", 1)[1]: space.coverage(code.get(rule.split(":", 1)[1], -1), judged)
                for rule in views if rule.startswith("annotator:")}
    spans: dict[str, dict[str, tuple[float, float]]] = {n: {} for n in space.runs}
    ends: dict[str, dict[str, tuple[str, str]]] = {n: {} for n in space.runs}
    golds: dict[str, dict[str, dict[str, float]]] = {n: {} for n in space.runs}
    enough = [a for a, share in coverage.items() if share >= min_coverage and share > 0]
    overall = means(gold)
    on_rows: dict[bytes, dict[str, np.ndarray]] = {}  # annotators who judged the same queries
    for name in enough:
        view = views[f"annotator:{name}"]
        own = means(view)
        rows = np.flatnonzero(view.present & gold.present)
        same = on_rows.get(rows.tobytes())
        if same is None:
            same = on_rows[rows.tobytes()] = means(gold, rows)
        for run in space.runs:
            for j, m in enumerate(measures):
                k = gold.measures.index(m)
                value = float(overall[run][k] + own[run][j] - same[run][k])
                if np.isnan(value):
                    continue
                golds[run].setdefault(m, {})[name] = float(same[run][k])
                low, high = spans[run].get(m, (value, value))
                lo_name, hi_name = ends[run].get(m, (name, name))
                if value < low:
                    low, lo_name = value, name
                if value > high:
                    high, hi_name = value, name
                spans[run][m] = (low, high)
                ends[run][m] = (lo_name, hi_name)
    return {"ranges": spans, "range_ends": ends, "range_gold": golds,
            "coverage": dict(sorted(coverage.items())), "min_coverage": min_coverage}


def query_rows(space: PairSpace, gold: LiveView, measure: str,
               hidden: frozenset[str] = frozenset()) -> QueryRows:
    """One measure's value on every judged query, per run, with each query's facts; the
    values of the ``hidden`` queries (a blind reader's) are NaN, and the rows say so."""
    j = gold.measures.index(measure)
    rows = np.flatnonzero(gold.present)
    query_ids = [space.query_ids[r] for r in rows]
    values = {n: m[rows, j].copy() for n, m in gold.values.items()}
    secret = frozenset(hidden.intersection(query_ids))
    if secret:
        mask = np.array([q in secret for q in query_ids])
        for column in values.values():
            column[mask] = np.nan
    return QueryRows(
        measure=measure,
        query_ids=query_ids,
        values=values,
        categories=[space.categories[r] for r in rows],
        judged=gold.per_row[rows].copy(),
        hidden=secret,
    )


def fields(space: PairSpace) -> list[str]:
    """Query fields to stratify by: ``category`` and every key of the queries' meta."""
    keys: dict[str, None] = {"category": None}
    for meta in space.meta:
        for key in meta:
            keys.setdefault(str(key), None)
    return list(keys)


def strata_of(space: PairSpace, by: str) -> list[str]:
    """Each query's stratum for ``by`` (``category`` or a meta key), as ``ragjudge eval --by``."""
    from ragjudge.services.scoring.evaluation import stratum_of

    if by == "category":
        return [stratum_of(c) for c in space.categories]
    return [stratum_of(m.get(by)) for m in space.meta]


def strata(space: PairSpace, gold: LiveView, measures: list[str], by: str,
           hidden: frozenset[str] = frozenset()) -> tuple[dict, dict]:
    """stratum -> run -> measure -> mean over the stratum's judged queries, and each stratum's
    size (strata of no value last); a stratum of one ``hidden`` query (a blind reader's: it
    would show that query's values) is left out."""
    from ragjudge.services.scoring.evaluation import NO_STRATUM

    labels = np.array(strata_of(space, by), dtype=object)
    out: dict[str, dict[str, dict[str, float]]] = {}
    sizes: dict[str, int] = {}
    present = gold.present
    names = sorted(set(labels[present].tolist()), key=lambda s: (s == NO_STRATUM, s))
    for stratum in names:
        rows = np.flatnonzero(present & (labels == stratum))
        if len(rows) == 1 and space.query_ids[int(rows[0])] in hidden:
            continue
        averages = means(gold, rows)
        sizes[stratum] = len(rows)
        out[stratum] = {n: {m: float(v[j]) for j, m in enumerate(measures)} for n, v in averages.items()}
    return out, sizes
