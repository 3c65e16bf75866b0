"""The evaluation screen's slower numbers: bootstrap intervals of every mean, the annotators'
agreement, pool coverage and what the gold is made of (:class:`LiveDetails`).

The screen asks for them on a worker thread of their own, less often than for the numbers that
move with every label. Each is computed from what the engine already holds, never read again:

- the intervals of every (run, measure) from one resample index matrix
  (:func:`intervals`): the columns defined on the same queries share the draws, and their
  resampled means are one matrix product;
- the agreement from the engine's coded copy of the labels
  (:meth:`ragjudge.services.scoring.livelabels.LabelsAt.ratings`, the ratings
  ``load_ratings`` would read, then :func:`ragjudge.services.agreement.views.headline_agreement`);
- the gold's composition from the pairs' sources
  (:meth:`ragjudge.services.scoring.livelabels.LabelsAt.composition`, what ``gold()`` counts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ragjudge.metrics.significance import bootstrap_ci

if TYPE_CHECKING:
    from ragjudge.services.gold.gold import Composition
    from ragjudge.services.gold.rules import GoldPolicy
    from ragjudge.services.scoring.livelabels import LabelsAt


MIN_INTERVAL_QUERIES = 5
"""A bootstrap interval from fewer queries than this is not shown (it says too little)."""


RESAMPLED_CELLS = 4_000_000
"""At most this many (query x resample) cells per interval, so that a refresh of 10,000 queries
stays near a second: more queries, fewer resamples (never fewer than 200)."""


@dataclass(frozen=True)
class LiveDetails:
    """What is slower and may lag a little: intervals, agreement, pool coverage, the gold's
    composition."""

    version: int
    intervals: dict[str, dict[str, tuple[float, float]]]
    """run -> measure -> (low, high), the 95 % bootstrap interval of the mean"""
    resamples: int
    pool_pairs: int
    pool_judged: int
    alpha_ordinal: float | None
    alpha_nominal: float | None
    mean_kappa: float | None
    disputed: int
    disputed_by_query: dict[str, int]
    kappa_units: int = 0
    """units shared by the pairs of annotators in :attr:`mean_kappa` (each pair weighs as many)"""
    kappa_pairs: int = 0
    too_few: dict[str, list[str]] = field(default_factory=dict)
    """run -> measures defined on fewer than :data:`MIN_INTERVAL_QUERIES` queries (no interval)"""
    composition: Composition | None = None
    """what the gold is made of (as :func:`ragjudge.services.gold.gold.gold` counts it)"""


def interval_resamples(queries: int, resamples: int) -> int:
    """The resamples an interval over ``queries`` queries draws (:data:`RESAMPLED_CELLS`)."""
    if queries * resamples > RESAMPLED_CELLS:
        return max(200, RESAMPLED_CELLS // max(queries, 1))
    return resamples


def intervals(matrices: dict[str, np.ndarray], measures: list[str], resamples: int
              ) -> tuple[dict[str, dict[str, tuple[float, float]]], dict[str, list[str]]]:
    """run -> measure -> the 95 % percentile-bootstrap interval of the mean over the queries
    where the measure is defined (``matrices``: run -> (queries x measures) values, NaN
    undefined), as :meth:`ragjudge.services.scoring.evaluation.Evaluation.intervals` gives it;
    (NaN, NaN) and listed in the second value where fewer than :data:`MIN_INTERVAL_QUERIES`
    queries define it.

    Every column of every run is one row of a single (columns x queries) matrix. The columns
    defined on the same queries draw the same resamples -- those :func:`bootstrap_ci` draws for
    each alone (same seed, same number of queries) -- so each such group is one call: one
    resample index matrix, and its resampled means one matrix product."""
    names = list(matrices)
    nan = (float("nan"), float("nan"))
    found: dict[tuple[str, str], tuple[float, float]] = {}
    too_few: dict[str, list[str]] = {name: [] for name in names}
    if names and len(measures):
        stacked = np.concatenate([matrices[name] for name in names], axis=1)
        defined = ~np.isnan(stacked)
        packed = np.packbits(defined, axis=0)  # each column's defined queries as bytes
        groups: dict[bytes, list[int]] = {}
        for col in range(stacked.shape[1]):
            groups.setdefault(packed[:, col].tobytes(), []).append(col)
        for members in groups.values():
            cols = np.array(members)
            rows = np.flatnonzero(defined[:, members[0]])
            if len(rows) < MIN_INTERVAL_QUERIES:
                low = high = np.full(len(cols), np.nan)
            else:
                _, low, high = bootstrap_ci(stacked[np.ix_(rows, cols)].T, resamples=resamples, seed=0)
            for col, lo, hi in zip(cols.tolist(), np.atleast_1d(low), np.atleast_1d(high)):
                found[names[col // len(measures)], measures[col % len(measures)]] = (float(lo), float(hi))
        counts = defined.sum(axis=0)
        for i, name in enumerate(names):
            too_few[name] = [m for j, m in enumerate(measures)
                             if counts[i * len(measures) + j] < MIN_INTERVAL_QUERIES]
    return {name: {m: found.get((name, m), nan) for m in measures} for name in names}, too_few


def agreement(labels: LabelsAt, llm: frozenset[str], policy: GoldPolicy, scale: tuple[int, int],
              query_ids: list[str]) -> dict[str, Any]:
    """The people's agreement, as the screen shows it (the fields of :class:`LiveDetails` of
    those names), from the engine's labels: the LLM annotators ``llm`` left out, a complete
    reference's implied grades counted (``policy``), as ``ragjudge agree`` reads them."""
    from ragjudge.services.agreement.views import headline_agreement

    ratings, unit_rows = labels.ratings(llm, policy, scale)
    return headline_agreement(ratings, unit_rows, query_ids)
