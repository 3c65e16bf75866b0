"""Every pair of an evaluation's runs compared on every measure, with corrected p-values.

:func:`compare_all` pairs the runs on the queries every one of them was evaluated on (all of
them, unless each run is averaged over the queries it answers), as
:func:`ragjudge.services.scoring.evaluation.compare` does, and hands each run's per-query values
(measures x queries) to :func:`ragjudge.metrics.allpairs.compare_all_pairs`: Fisher's
randomization test, the paired t-test, the Wilcoxon signed-rank test or Tukey's HSD, with the
p-values of each measure's k (k - 1) / 2 pairs corrected together (Holm by default; Tukey's are
simultaneous already). A measure undefined on some queries is compared on the queries where
every run has it; a run on which a measure is undefined everywhere (a run without generated
answers, for the answer measures) is left out of that measure's pairs, so that it does not
empty the others' comparison.

Nothing here prints: ``ragjudge report`` and whoever else shows comparisons render the
:class:`~ragjudge.metrics.allpairs.AllPairsComparison` returned.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics.allpairs import TESTS, AllPairsComparison, compare_all_pairs
from ragjudge.metrics.corrections import CORRECTIONS

if TYPE_CHECKING:
    from ragjudge.services.scoring.evaluation import Evaluation

DEFAULT_TEST = "fisher"
"""Fisher's randomization test: no assumption about the shape of the differences."""

DEFAULT_CORRECTION = "holm"
"""Holm's step-down: the family-wise error rate of each measure's pairs stays below alpha."""

MAX_DRAWS = 1_000_000
"""The most resamples or sign patterns asked for (the command line's limit too)."""

MAX_SEED = 2**32 - 1


def check_options(test: str, correction: str | None, alpha: float, resamples: int,
                  permutations: int, seed: int) -> str:
    """The correction to apply (``None``: Holm, or none for Tukey's HSD), after checking every
    option; a :class:`UsageError` in one paragraph for the first that is wrong."""
    if test not in TESTS:
        raise UsageError(f"--test {test}: use {', '.join(TESTS[:-1])} or {TESTS[-1]} (fisher: "
                         "Fisher's randomization test, t: the paired t-test, wilcoxon: the "
                         "Wilcoxon signed-rank test, tukey: Tukey's HSD).")
    if correction is not None and correction not in CORRECTIONS:
        raise UsageError(f"--correction {correction}: use {', '.join(CORRECTIONS[:-1])} or "
                         f"{CORRECTIONS[-1]} (bh: Benjamini-Hochberg).")
    if test == "tukey":
        if correction not in (None, "none"):
            raise UsageError(f"--correction {correction} with --test tukey: Tukey's HSD p-values "
                             "already hold for all pairs at once; leave out --correction (or "
                             "give none).")
        correction = "none"
    if not 0 < alpha < 1:
        raise UsageError(f"--alpha {alpha:g}: a significance level is between 0 and 1, such as 0.05.")
    for option, value, what in (("--resamples", resamples, "the number of bootstrap resamples"),
                                ("--permutations", permutations, "the number of sign patterns")):
        if not 1 <= value <= MAX_DRAWS:
            raise UsageError(f"{option} {value}: {what} is a whole number from 1 to {MAX_DRAWS:,}.")
    if not 0 <= seed <= MAX_SEED:
        raise UsageError(f"--seed {seed}: a seed is a whole number from 0 to {MAX_SEED:,}.")
    return correction or DEFAULT_CORRECTION


def paired_values(evaluation: Evaluation) -> tuple[list[str], dict[str, np.ndarray]]:
    """The queries every run was evaluated on (in the first run's order) and, per run, its
    per-query values there as a (measures x queries) matrix: ``result.values[rows].T``, as
    :func:`~ragjudge.services.scoring.evaluation.compare` pairs them."""
    results = [evaluation.results[name] for name in evaluation.run_names]
    common = set(results[0].query_ids).intersection(*(r.query_ids for r in results[1:]))
    order = [q for q in results[0].query_ids if q in common]
    values = {}
    for name, result in zip(evaluation.run_names, results):
        position = {q: i for i, q in enumerate(result.query_ids)}
        rows = np.array([position[q] for q in order], dtype=np.int64)
        values[name] = result.values[rows].T
    return order, values


def compare_all(
    evaluation: Evaluation,
    *,
    test: str = DEFAULT_TEST,
    correction: str | None = None,
    alpha: float = 0.05,
    resamples: int = 10_000,
    permutations: int = 10_000,
    seed: int = 0,
) -> AllPairsComparison:
    """Every pair of ``evaluation``'s runs on each of its measures (runs in the evaluation's
    order: in a pair, A is the earlier run). ``correction`` ``None`` is Holm's, or none for
    Tukey's HSD. The means of a pair are over the queries it is compared on (where the
    measure is defined for every run), so for a measure undefined on some queries they may
    differ from the run's mean in the scorecard, which is over the queries where it is defined
    for that run."""
    correction = check_options(test, correction, alpha, resamples, permutations, seed)
    if len(evaluation.run_names) < 2:
        raise UsageError("comparing runs needs at least two runs.")
    _, values = paired_values(evaluation)
    options: dict[str, Any] = dict(test=test, correction=correction, alpha=alpha,
                                   permutations=permutations, resamples=resamples, seed=seed)
    parts = []
    for runs, measures in _families(values, evaluation.measures).items():
        rows = [evaluation.measures.index(m) for m in measures]
        parts.append(compare_all_pairs({n: values[n][rows] for n in runs}, measures, **options))
    return _joined(parts, evaluation)


def _families(values: dict[str, np.ndarray], measures: list[str]) -> dict[tuple[str, ...], list[str]]:
    """The runs each measure is compared over — those where it is defined on some query (a run
    of no answers has no answer measure: leaving it out keeps the other runs' answers
    comparable) — and the measures of each such set of runs, in the measures' order."""
    families: dict[tuple[str, ...], list[str]] = {}
    for j, measure in enumerate(measures):
        runs = tuple(n for n, v in values.items() if v.shape[1] and not np.isnan(v[j]).all())
        if len(runs) < 2:
            runs = tuple(values)  # fewer than two runs have it: every pair, each undefined
        families.setdefault(runs, []).append(measure)
    return families


def _joined(parts: list[AllPairsComparison], evaluation: Evaluation) -> AllPairsComparison:
    """One comparison of every run from comparisons of some runs each, pairs in the order of
    the measures, then of the runs."""
    if len(parts) == 1 and parts[0].runs == tuple(evaluation.run_names):
        return parts[0]
    order = {name: i for i, name in enumerate(evaluation.run_names)}
    pairs = sorted((p for part in parts for p in part.pairs),
                   key=lambda p: (evaluation.measures.index(p.measure), order[p.run_a], order[p.run_b]))
    dfs = {part.df for part in parts}
    return replace(parts[0], runs=tuple(evaluation.run_names), measures=tuple(evaluation.measures),
                   exact=all(part.exact for part in parts), df=dfs.pop() if len(dfs) == 1 else None,
                   pairs=tuple(pairs))


__all__ = ["DEFAULT_CORRECTION", "DEFAULT_TEST", "check_options", "compare_all", "paired_values"]
