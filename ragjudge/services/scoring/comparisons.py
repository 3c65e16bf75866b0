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

:func:`compare_baseline` is ``ragjudge compare``'s and the evaluation screen's: one run (the
baseline A) against each other run, each pair on its own paired queries
(:func:`ragjudge.services.scoring.evaluation.pairing`), under the same choice of test, with the
p-values corrected over a family the caller names: the runs compared with A on each measure
(``compare``), or the measures of each pair (the screen's two runs over its measures).

Nothing here prints: ``ragjudge report``, ``compare`` and the screens render the
:class:`~ragjudge.metrics.allpairs.AllPairsComparison` or :class:`BaselineComparison` returned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics.allpairs import (
    CORRECTION_NAMES,
    EFFECT_NAMES,
    TEST_NAMES,
    TESTS,
    AllPairsComparison,
    compare_all_pairs,
)
from ragjudge.metrics.corrections import CORRECTIONS, correct
from ragjudge.metrics.significance import (
    BETTER_A,
    BETTER_B,
    PairedComparison,
    cohens_dz,
    verdict,
    wilcoxon_rank_biserial,
)

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


# -- a baseline against each other run ------------------------------------------------------

FAMILIES = {"runs": "the runs compared with A, per measure",
            "measures": "the measures, per pair of runs"}
"""What a correction of :func:`compare_baseline` corrects over."""

SHORT_TESTS = {"fisher": "rand", "t": "t", "wilcoxon": "Wilcoxon", "tukey": "Tukey"}
"""How a table's header names a test's p-value (``p rand``)."""

SHORT_CORRECTIONS = {"none": "none", "bonferroni": "Bonferroni", "holm": "Holm", "bh": "BH"}
"""How a table's header names a correction (``p rand (Holm)``)."""


@dataclass(frozen=True)
class BaselinePair:
    """One measure, run A (the baseline) against run B: the paired comparison as ``compare``
    always gave it (``paired``: the bootstrap interval, the randomization and t-test p-values,
    corrected alike) and the chosen test's p-value, raw and corrected, its effect size and the
    verdict that follows the corrected p. With Tukey's HSD, ``difference`` and the interval are
    its own: over the queries every run shares, the interval simultaneous over every pair."""

    paired: PairedComparison
    test: str
    correction: str
    """the correction applied (``none`` when the family has one member, or for Tukey's HSD)"""
    p_value: float
    p_adjusted: float
    effect: str
    effect_size: float
    interval: str
    """``bootstrap`` (paired percentile, unadjusted) or ``tukey`` (simultaneous)"""
    difference: float
    ci_low: float
    ci_high: float
    verdict: str
    undefined: dict[str, str] = field(default_factory=dict)

    @property
    def measure(self) -> str:
        return self.paired.measure

    @property
    def run_a(self) -> str:
        return self.paired.run_a

    @property
    def run_b(self) -> str:
        return self.paired.run_b

    @property
    def mean_a(self) -> float:
        return self.paired.mean_a

    @property
    def mean_b(self) -> float:
        return self.paired.mean_b

    @property
    def queries(self) -> int:
        return self.paired.queries

    @property
    def winner(self) -> str | None:
        return {BETTER_A: self.run_a, BETTER_B: self.run_b}.get(self.verdict)

    def as_dict(self) -> dict[str, Any]:
        """The paired comparison's fields (what ``compare`` always wrote) with the chosen
        test's: ``test``, ``correction``, ``p_value``, ``p_adjusted``, ``effect``,
        ``effect_size``, ``interval``; ``verdict`` and ``winner`` from the chosen test."""
        record = self.paired.as_dict()
        record.update(test=self.test, correction=self.correction, p_value=self.p_value,
                      p_adjusted=self.p_adjusted, effect=self.effect, effect_size=self.effect_size,
                      interval=self.interval, difference=self.difference, ci_low=self.ci_low,
                      ci_high=self.ci_high, verdict=self.verdict, winner=self.winner)
        undefined = {**record.get("undefined", {}), **self.undefined}
        record.pop("undefined", None)
        if undefined:
            record["undefined"] = undefined
        return record


@dataclass(frozen=True)
class BaselineComparison:
    """The baseline against each other run on every measure, and how it was tested."""

    baseline: str
    runs: tuple[str, ...]
    measures: tuple[str, ...]
    test: str
    correction: str
    """the correction asked for (``none`` for Tukey's HSD)"""
    family: str
    """one of :data:`FAMILIES`"""
    family_size: int
    alpha: float
    permutations: int
    resamples: int
    seed: int
    tukey_queries: int | None
    """Tukey's HSD: the queries every run shares, which it is over; None for the other tests"""
    pairs: tuple[BaselinePair, ...]
    """by measure, then run (the family ``runs``) as :func:`evaluation.compare` orders them"""

    @property
    def adjusted(self) -> bool:
        """Whether the correction changed anything: a family of two or more, and not ``none``."""
        return self.correction != "none" and self.family_size > 1

    @property
    def applied(self) -> str:
        """The correction the p-values went through: ``none`` when nothing was corrected."""
        return self.correction if self.adjusted else "none"

    def test_words(self) -> str:
        if self.test == "fisher":
            return f"{TEST_NAMES['fisher']} ({self.permutations:,} sign patterns at most, seed {self.seed})"
        if self.test == "tukey":
            k = len(self.runs)
            return (f"{TEST_NAMES['tukey']} over the {k} runs (two-way error; its p-values hold "
                    f"for all {k * (k - 1) // 2} pairs at once)")
        return TEST_NAMES[self.test]

    def correction_words(self) -> str:
        if self.test == "tukey":
            return "no further correction (Tukey's p-values are simultaneous already)"
        if self.family_size < 2:
            return (f"nothing to correct ({'one run compared with A' if self.family == 'runs' else 'one measure'}"
                    f"{', per measure' if self.family == 'runs' else ''})")
        if self.correction == "none":
            return f"p-values not corrected over {FAMILIES[self.family]}"
        return (f"p-values {CORRECTION_NAMES[self.correction]}-corrected over "
                f"{FAMILIES[self.family]} ({self.family_size})")

    def interval_words(self) -> str:
        if self.test == "tukey":
            return ("95% Tukey simultaneous intervals: adjusted like the verdict, over the "
                    f"{self.tukey_queries:,} queries every run shares")
        if self.adjusted:
            return ("95% paired bootstrap intervals, not adjusted: an interval may exclude 0 "
                    "beside 'within noise'")
        return f"95% paired bootstrap intervals ({self.resamples:,} resamples)"

    def describe(self) -> str:
        """One sentence: the test, the correction, the interval, the effect size."""
        effect = EFFECT_NAMES["rank-biserial" if self.test == "wilcoxon" else "d_z"]
        return (f"{self.test_words()}; {self.correction_words()}; {self.interval_words()}; "
                f"effect size {effect}; verdict at alpha = {self.alpha:g}.")


def compare_baseline(
    evaluation: Evaluation,
    *,
    baseline: str | None = None,
    test: str = DEFAULT_TEST,
    correction: str | None = None,
    family: str = "runs",
    alpha: float = 0.05,
    resamples: int = 10_000,
    permutations: int = 10_000,
    seed: int = 0,
) -> BaselineComparison:
    """The baseline (default: the first run) against each other run on every measure, under
    ``test`` (one of :data:`TESTS`), the p-values corrected with ``correction`` (default Holm's;
    Tukey's HSD takes none) over ``family`` (one of :data:`FAMILIES`).

    Each pair is compared as :func:`ragjudge.services.scoring.evaluation.compare` compares it
    (its paired queries, its bootstrap interval, the randomization and t-test p-values), and the
    chosen test's p-value is read from it (fisher, t) or computed on the same paired values
    (Wilcoxon's signed-rank test with the rank-biserial correlation). Tukey's HSD is over every
    run of the evaluation at once (:func:`compare_all`): the queries all of them share, its
    interval simultaneous. The verdict follows the corrected p at ``alpha``; the bootstrap
    interval is never adjusted."""
    from ragjudge.services.scoring.evaluation import compare

    correction = check_options(test, correction, alpha, resamples, permutations, seed)
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}: choose one of {', '.join(FAMILIES)}")
    names = evaluation.run_names
    base = baseline if baseline is not None else names[0]
    rows = compare(evaluation, baseline=base, alpha=alpha, resamples=resamples,
                   permutations=permutations, seed=seed,
                   correction=correction if family == "runs" else "none")
    others = [n for n in names if n != base]
    tukey = compare_all(evaluation, test="tukey", alpha=alpha) if test == "tukey" else None
    raw = [_tested(evaluation, row, test, tukey) for row in rows]
    # rows are by measure, then run: a (measures x runs) matrix of p-values
    p = np.array([r[0] for r in raw], dtype=np.float64).reshape(len(evaluation.measures), len(others))
    size = len(others) if family == "runs" else len(evaluation.measures)
    adjusted = correct(p if family == "runs" else p.T, correction if size > 1 else "none")
    adjusted = (adjusted if family == "runs" else adjusted.T).ravel()
    pairs = tuple(_pair(row, test, correction if size > 1 else "none", found, float(p_adj), alpha)
                  for row, found, p_adj in zip(rows, raw, adjusted))
    return BaselineComparison(
        baseline=base, runs=tuple(names), measures=tuple(evaluation.measures), test=test,
        correction=correction, family=family, family_size=size, alpha=alpha,
        permutations=permutations, resamples=resamples, seed=seed,
        tukey_queries=None if tukey is None else tukey.queries, pairs=pairs)


_Tested = tuple[float, float, float, float, float, dict[str, str]]
"""p-value, effect size, difference, interval low and high, why a figure is undefined"""


def _tested(evaluation: Evaluation, row: PairedComparison, test: str,
            tukey: AllPairsComparison | None) -> _Tested:
    """The chosen test's p-value and effect size for one row of ``compare``, with the
    difference and interval it goes with."""
    if tukey is not None:
        found = tukey.pair(row.measure, row.run_a, row.run_b)
        sign = 1.0 if found.run_a == row.run_a else -1.0
        low, high = sorted((sign * found.ci_low, sign * found.ci_high))
        return (found.p_value, sign * found.effect_size, sign * found.difference, low, high,
                dict(found.undefined))
    a, b = _paired_measure(evaluation, row)
    undefined: dict[str, str] = {}
    if test == "wilcoxon":
        _, p, effect = wilcoxon_rank_biserial(a, b) if len(a) else (math.nan, math.nan, math.nan)
    else:
        p = row.p_randomization if test == "fisher" else row.p_t_test
        effect = cohens_dz(a, b)
        why = row.undefined.get("p_randomization" if test == "fisher" else "p_t_test")
        if why:
            undefined.update(p_value=why, p_adjusted=why)
    if not len(a):
        why = "no query is paired (the runs share no query where the measure is defined)"
        undefined.update(p_value=why, p_adjusted=why, effect_size=why)
    elif len(a) == 1 and test != "wilcoxon":
        undefined["effect_size"] = "d_z needs at least two paired queries; there is one"
    elif math.isinf(effect):
        undefined["effect_size"] = (f"every paired query differs by the same amount "
                                    f"({row.difference:+g}): the differences have no spread, so "
                                    "d_z is infinite")
    return float(p), float(effect), row.difference, row.ci_low, row.ci_high, undefined


def _paired_measure(evaluation: Evaluation, row: PairedComparison) -> tuple[np.ndarray, np.ndarray]:
    """Run A's and run B's values of ``row``'s measure on the queries it was compared on: the
    pair's paired queries where both values are defined."""
    from ragjudge.services.scoring.evaluation import pairing

    queries = pairing(evaluation, row.run_a, row.run_b).queries
    j = evaluation.measures.index(row.measure)
    values = []
    for name in (row.run_a, row.run_b):
        result = evaluation.results[name]
        position = {q: i for i, q in enumerate(result.query_ids)}
        values.append(result.values[np.array([position[q] for q in queries], dtype=np.int64), j])
    a, b = values
    keep = ~np.isnan(a) & ~np.isnan(b)
    return a[keep], b[keep]


def _pair(row: PairedComparison, test: str, correction: str, found: _Tested, p_adjusted: float,
          alpha: float) -> BaselinePair:
    p, effect, difference, low, high, undefined = found
    return BaselinePair(
        paired=row, test=test, correction=correction, p_value=p, p_adjusted=p_adjusted,
        effect="rank-biserial" if test == "wilcoxon" else "d_z", effect_size=effect,
        interval="tukey" if test == "tukey" else "bootstrap", difference=difference, ci_low=low,
        ci_high=high, verdict=verdict(difference, p_adjusted, alpha), undefined=undefined)


__all__ = ["DEFAULT_CORRECTION", "DEFAULT_TEST", "FAMILIES", "SHORT_CORRECTIONS", "SHORT_TESTS", "BaselineComparison",
           "BaselinePair", "check_options", "compare_all", "compare_baseline", "paired_values"]
