"""Every pair of k runs compared at once, per measure (numpy only).

:func:`compare_all_pairs` takes each run's per-query values (measures x queries, the same
queries in the same order for every run) and, for each of the k (k - 1) / 2 pairs (A, B) with A
before B in the runs' order and each measure, reports the mean difference mean(B - A), an
interval for it, a p-value raw and corrected for the pairs of that measure, and an effect size
(:class:`PairResult`, gathered in :class:`AllPairsComparison`). The test is one of
:data:`TESTS`:

- ``"fisher"`` — the paired randomization test (:func:`~ragjudge.metrics.significance.
  randomization_pvalues`; Smucker, Allan & Carterette, CIKM 2007), every pair under the same
  sign patterns, the patterns applied to all runs in one matrix product.
- ``"t"`` — the paired t-test; ``"wilcoxon"`` — the Wilcoxon signed-rank test.
- ``"tukey"`` — Tukey's HSD over the runs' means (:func:`tukey_hsd`), whose p-values already
  hold for all pairs at once, so it takes no further correction.

The first three give each pair a percentile-bootstrap interval of its mean difference (the
same resamples for every pair); Tukey gives its simultaneous interval. Effect sizes: Cohen's
d_z, and the rank-biserial correlation beside the Wilcoxon test.

How ranx's ``compare`` differs (ranx 0.3.21), and why ragjudge does not follow it there:

- Tukey: ranx calls ``scipy.stats.tukey_hsd`` on the per-query scores, a one-way analysis that
  treats the runs' scores as independent groups and so counts the differences between queries,
  usually the largest source of variation in IR, as noise. The runs answer the same queries;
  ragjudge's HSD takes its error from the two-way (run + query) analysis without replication,
  df = (k - 1)(n - 1), as Carterette (ACM TOIS 30(1), 2012) and Sakai (Laboratory Experiments
  in Information Retrieval, Springer 2018) do for IR. With two runs it is exactly the paired
  t-test (q = √2 |t|). ``tukey_hsd(..., design="independent")`` gives ranx's numbers.
- Fisher: ranx draws 1,000 random swaps per pair and reports hits / 1,000, which can be 0, not
  a valid p-value for a Monte Carlo test (Phipson & Smyth 2010); ragjudge reports
  (1 + hits) / (1 + permutations), enumerates all 2^n patterns when they fit the budget (an
  exact test), and repeats itself exactly for a seed, where ranx's numba threads draw from
  generators its ``random_seed`` does not reach, so its p-values change from call to call.
- ranx reports raw p-values; ragjudge corrects them over the pairs of each measure (Holm by
  default).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from ragjudge.metrics.corrections import CORRECTIONS, correct
from ragjudge.metrics.distributions import studentized_range_ppf, studentized_range_sf
from ragjudge.metrics.significance import (
    BETTER_A,
    BETTER_B,
    cohens_dz,
    paired_bootstrap_intervals,
    paired_t_test,
    randomization_pvalues,
    verdict,
    wilcoxon_rank_biserial,
)

__all__ = [
    "AllPairsComparison",
    "PairResult",
    "TESTS",
    "TukeyHSD",
    "compare_all_pairs",
    "run_pairs",
    "tukey_hsd",
]

#: the tests :func:`compare_all_pairs` can apply
TESTS = ("fisher", "t", "wilcoxon", "tukey")

TEST_NAMES = {
    "fisher": "Fisher's randomization test",
    "t": "paired t-test",
    "wilcoxon": "Wilcoxon signed-rank test",
    "tukey": "Tukey's HSD",
}
CORRECTION_NAMES = {"none": "none", "bonferroni": "Bonferroni", "holm": "Holm",
                    "bh": "Benjamini-Hochberg"}
EFFECT_NAMES = {"d_z": "Cohen's d_z", "rank-biserial": "rank-biserial correlation"}

#: difference-matrix cells per batch of pairs: ranking one holds about eight arrays of this
#: many 8-byte cells (~64 MB)
_BATCH_CELLS = 1_000_000


def run_pairs(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (a, b) of the k (k - 1) / 2 pairs of k runs, a < b, in the order (0, 1), (0, 2),
    …, (1, 2), …: the order of :attr:`AllPairsComparison.pairs` within a measure."""
    a, b = np.triu_indices(k, 1)
    return a.astype(np.intp), b.astype(np.intp)


# ------------------------------------------------------------------------------ Tukey's HSD
@dataclass(frozen=True)
class TukeyHSD:
    """Tukey's HSD for every pair of :func:`run_pairs` and every measure."""

    q: np.ndarray
    """(pairs, measures) studentized range statistics |mean_b - mean_a| / √(MSE / n)"""
    p: np.ndarray
    """(pairs, measures) P(Q_{k, df} > q), simultaneous over the pairs of a measure"""
    margin: np.ndarray
    """(measures,) half-width of the simultaneous interval: q_{confidence; k, df} √(MSE / n)"""
    mse: np.ndarray
    """(measures,) the error mean square"""
    df: float
    """its degrees of freedom"""


def _tukey_error(scores: np.ndarray, design: str) -> tuple[np.ndarray, int]:
    """Error sum of squares per measure and its degrees of freedom."""
    k, _, n = scores.shape
    means = scores.mean(axis=2, keepdims=True)
    if design == "paired":
        # two-way layout, one value per cell: y - run mean - query mean + grand mean
        residual = scores - means - scores.mean(axis=0, keepdims=True) + means.mean(axis=0)
        return np.square(residual).sum(axis=(0, 2)), (k - 1) * (n - 1)
    return np.square(scores - means).sum(axis=(0, 2)), k * (n - 1)


def tukey_hsd(scores: np.ndarray, *, design: str = "paired", confidence: float = 0.95) -> TukeyHSD:
    """Tukey's (1953) honestly significant difference test over k runs' means.

    ``scores`` is (runs x measures x queries), or (runs x queries) for one measure. For a pair
    of runs, q = |ȳ_b - ȳ_a| / √(MSE / n), and p = P(Q > q) for the studentized range Q of k
    means with the error's df (:func:`~ragjudge.metrics.distributions.studentized_range_sf`):
    the chance that the largest of all k (k - 1) / 2 differences reaches this one if no run
    differs, so the p-values hold for the whole family (no further correction).

    - ``design="paired"`` (the runs answer the same queries): MSE is the residual mean square of
      the two-way layout y_ij = μ + run_i + query_j + e_ij, Σ (y_ij - ȳ_i. - ȳ_.j + ȳ..)² /
      ((k - 1)(n - 1)) (Carterette, ACM TOIS 30(1), 2012).
    - ``design="independent"``: the one-way within-run mean square, df = k (n - 1); this is
      ``scipy.stats.tukey_hsd`` and what ranx's ``compare(stat_test="tukey")`` reports.

    With no error at all (MSE at rounding noise) q is 0 for equal means and inf otherwise.
    """
    if design not in ("paired", "independent"):
        raise ValueError(f"unknown design {design!r}: choose 'paired' or 'independent'")
    values = np.asarray(scores, dtype=np.float64)
    if values.ndim == 2:
        values = values[:, None, :]
    k, m, n = values.shape
    if k < 2:
        raise ValueError("Tukey's HSD needs at least two runs")
    a, b = run_pairs(k)
    df = (k - 1) * (n - 1) if design == "paired" else k * (n - 1)
    if df < 1:
        nan = np.full((len(a), m), np.nan)
        return TukeyHSD(q=nan, p=nan.copy(), margin=np.full(m, np.nan), mse=np.full(m, np.nan),
                        df=float(df))
    sse, df = _tukey_error(values, design)
    means = values.mean(axis=2)
    difference = np.abs(means[b] - means[a])
    mse = sse / df
    se = np.sqrt(mse / n)
    # an error or a difference below rounding noise (1e-12 of the values' scale) is none
    noise = 1e-12 * np.maximum(1.0, np.abs(values).max(axis=(0, 2)))
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(se > noise, difference / se, np.where(difference <= noise, 0.0, np.inf))
    return TukeyHSD(
        q=q,
        p=studentized_range_sf(q, k, df),
        margin=studentized_range_ppf(confidence, k, df) * se,
        mse=mse,
        df=float(df),
    )


# ---------------------------------------------------------------------------- the result
@dataclass(frozen=True)
class PairResult:
    """One measure, run A against run B (A before B in the runs' order), over the same queries."""

    measure: str
    run_a: str
    run_b: str
    queries: int
    """the queries compared: those where the measure is defined for every run"""
    mean_a: float
    mean_b: float
    difference: float
    """mean over queries of (B - A)"""
    ci_low: float
    ci_high: float
    """the interval of ``difference`` at the comparison's confidence (see ``interval``)"""
    p_value: float
    """the test's p-value for this pair alone (Tukey's: already over all pairs)"""
    p_adjusted: float
    """after ``correction`` over the pairs of this measure (= ``p_value`` with ``"none"``)"""
    effect_size: float
    """``effect`` of B - A: positive when B scores higher"""
    test: str
    """one of :data:`TESTS`"""
    correction: str
    """one of ``CORRECTIONS``"""
    effect: str
    """``"d_z"`` (Cohen's d_z) or ``"rank-biserial"``"""
    interval: str
    """``"bootstrap"`` (percentile, per pair) or ``"tukey"`` (simultaneous)"""
    verdict: str
    """``"B better"``, ``"A better"`` or ``"within noise"`` from ``p_adjusted``"""
    undefined: dict[str, str] = field(default_factory=dict)
    """``{field: reason}`` for every statistic that is NaN or infinite (null in JSON)"""

    @property
    def winner(self) -> str | None:
        return {BETTER_A: self.run_a, BETTER_B: self.run_b}.get(self.verdict)

    def as_dict(self) -> dict:
        """The fields as JSON-ready values, with ``winner``; ``undefined`` only when some
        statistic is."""
        record = asdict(self)
        record["winner"] = self.winner
        if not record["undefined"]:
            del record["undefined"]
        return record


@dataclass(frozen=True)
class AllPairsComparison:
    """Every pair of ``runs`` on every measure, with how it was tested.

    ``pairs`` is ordered by measure, then by pair as :func:`run_pairs` orders them.
    """

    runs: tuple[str, ...]
    measures: tuple[str, ...]
    queries: int
    """the queries given; a measure undefined on some is compared on fewer (``PairResult.queries``)"""
    test: str
    correction: str
    effect: str
    interval: str
    alpha: float
    confidence: float
    permutations: int | None
    """sign patterns drawn (Fisher); ``None`` for other tests"""
    exact: bool
    """whether Fisher's p-values enumerate every sign pattern (an exact test) rather than sample"""
    resamples: int | None
    """bootstrap resamples of the intervals; ``None`` for Tukey's"""
    seed: int
    df: float | None
    """Tukey's error degrees of freedom, (k - 1)(q - 1) for q queries; ``None`` for the other
    tests, and when measures are compared on different numbers of queries (each has its own)"""
    pairs: tuple[PairResult, ...]

    def for_measure(self, measure: str) -> list[PairResult]:
        return [pair for pair in self.pairs if pair.measure == measure]

    def pair(self, measure: str, run_a: str, run_b: str) -> PairResult:
        """The result of ``run_a`` against ``run_b`` (in either order: it is stored with the
        earlier run as A)."""
        for pair in self.pairs:
            if pair.measure == measure and {pair.run_a, pair.run_b} == {run_a, run_b}:
                return pair
        raise KeyError((measure, run_a, run_b))

    def beats(self, measure: str) -> dict[str, list[str]]:
        """For each run, the runs it is significantly better than on ``measure`` (adjusted p
        below alpha): what ranx marks with superscripts in its report."""
        wins: dict[str, list[str]] = {run: [] for run in self.runs}
        for pair in self.for_measure(measure):
            if pair.winner is not None:
                loser = pair.run_a if pair.winner == pair.run_b else pair.run_b
                wins[pair.winner].append(loser)
        return wins

    def matrix(self, measure: str, field: str = "p_adjusted") -> np.ndarray:
        """(runs x runs) ``field`` of every pair on ``measure``, cell [i, j] for A = runs[i],
        B = runs[j]: p-values are symmetric; ``difference`` and ``effect_size`` (B - A) change
        sign across the diagonal. The diagonal is NaN."""
        if field not in ("p_value", "p_adjusted", "difference", "effect_size"):
            raise ValueError(f"no matrix of {field!r}: p_value, p_adjusted, difference or effect_size")
        index = {run: i for i, run in enumerate(self.runs)}
        out = np.full((len(self.runs), len(self.runs)), np.nan)
        sign = 1.0 if field.startswith("p_") else -1.0
        for pair in self.for_measure(measure):
            i, j = index[pair.run_a], index[pair.run_b]
            value = getattr(pair, field)
            out[i, j], out[j, i] = value, sign * value
        return out

    def describe(self) -> str:
        """One sentence naming the test, the correction, the interval and the effect size."""
        family = len(self.runs) * (len(self.runs) - 1) // 2
        if self.test == "fisher":
            how = "all sign patterns" if self.exact else f"{self.permutations:,} random sign patterns, seed {self.seed}"
            test = f"{TEST_NAMES['fisher']} ({how})"
        elif self.test == "tukey":
            df = f"df {self.df:g}" if self.df is not None else "df by measure"
            test = f"{TEST_NAMES['tukey']} (two-way error, {df}; simultaneous over the {family} pairs)"
        else:
            test = TEST_NAMES[self.test]
        if self.correction == "none":
            adjusted = "p-values not corrected"
        else:
            adjusted = f"p-values {CORRECTION_NAMES[self.correction]}-corrected over the {family} pairs of each measure"
        if self.interval == "tukey":
            interval = f"{self.confidence:.0%} Tukey simultaneous intervals"
        else:
            interval = f"{self.confidence:.0%} paired bootstrap intervals ({self.resamples:,} resamples)"
        return f"{test}; {adjusted}; {interval}; effect size {EFFECT_NAMES[self.effect]}."

    def as_dict(self) -> dict:
        record = {name: getattr(self, name) for name in (
            "runs", "measures", "queries", "test", "correction", "effect", "interval", "alpha",
            "confidence", "permutations", "exact", "resamples", "seed", "df")}
        record["runs"], record["measures"] = list(self.runs), list(self.measures)
        record["description"] = self.describe()
        record["pairs"] = [pair.as_dict() for pair in self.pairs]
        return record


# ---------------------------------------------------------------------------- the comparison
@dataclass
class _Columns:
    """Statistics of every (pair, measure), each a (pairs x measures) array."""

    difference: np.ndarray
    low: np.ndarray
    high: np.ndarray
    p: np.ndarray
    effect: np.ndarray
    mean_a: np.ndarray
    mean_b: np.ndarray


def _stack(per_query: Mapping[str, np.ndarray], measures: Sequence[str]) -> np.ndarray:
    """(runs x measures x queries), every run checked to have the same queries."""
    names = list(per_query)
    m = len(measures)
    stacked = [np.asarray(per_query[name], dtype=np.float64).reshape(m, -1) for name in names]
    n = stacked[0].shape[1]
    for name, values in zip(names, stacked):
        if values.shape[1] != n:
            raise ValueError(f"run {name!r} has {values.shape[1]} queries, run {names[0]!r} has {n}")
    return np.stack(stacked)


def _paired_statistics(rows: np.ndarray, a: np.ndarray, b: np.ndarray, test: str) -> tuple[np.ndarray, np.ndarray]:
    """(p, effect size) of the t or Wilcoxon test and d_z or rank-biserial, batch by batch."""
    n = rows.shape[1]
    p = np.full(len(a), np.nan)
    effect = np.empty(len(a))
    batch = max(1, _BATCH_CELLS // max(n, 1))
    for start in range(0, len(a), batch):
        chunk = slice(start, start + batch)
        run_a, run_b = rows[a[chunk]], rows[b[chunk]]
        if test == "wilcoxon":
            _, p[chunk], effect[chunk] = wilcoxon_rank_biserial(run_a, run_b)
        else:
            if test == "t":
                p[chunk] = paired_t_test(run_a, run_b)[1]
            effect[chunk] = cohens_dz(run_a, run_b)
    return p, effect


def _columns(scores: np.ndarray, test: str, confidence: float, resamples: int,
             permutations: int, seed: int) -> tuple[_Columns, float | None]:
    """Every statistic of every pair on the measures of ``scores`` (runs x measures x queries,
    every value defined), and Tukey's error df."""
    k, m, n = scores.shape
    pair_a, pair_b = run_pairs(k)
    rows = scores.reshape(k * m, n)
    a = (pair_a[:, None] * m + np.arange(m)).ravel()
    b = (pair_b[:, None] * m + np.arange(m)).ravel()
    p, effect = _paired_statistics(rows, a, b, test)
    means = rows.mean(axis=1) if n else np.full(k * m, np.nan)
    df = None
    if test == "tukey":
        hsd = tukey_hsd(scores, confidence=confidence)
        difference = means[b] - means[a]
        margin = np.tile(hsd.margin, len(pair_a))
        low, high = difference - margin, difference + margin
        p, df = hsd.p.ravel(), hsd.df
    else:
        difference, low, high = paired_bootstrap_intervals(
            rows, a, b, confidence=confidence, resamples=resamples, seed=seed)
        if test == "fisher":
            p = randomization_pvalues(rows, a, b, permutations=permutations, seed=seed)
    shape = (len(pair_a), m)
    return _Columns(*(column.reshape(shape) for column in
                      (difference, low, high, p, effect, means[a], means[b]))), df


def _pair_undefined(n: int, test: str, effect: float, difference: float, df: float | None) -> dict[str, str]:
    """Why the statistics of one pair over ``n`` paired queries are NaN or infinite."""
    if n == 0:
        reason = "no query is paired (the runs share no query where the measure is defined)"
        return {name: reason for name in ("mean_a", "mean_b", "difference", "ci_low", "ci_high",
                                          "p_value", "p_adjusted", "effect_size")}
    undefined: dict[str, str] = {}
    if n == 1 and test != "wilcoxon":
        undefined["effect_size"] = "d_z needs at least two paired queries; there is one"
    elif math.isinf(effect):
        undefined["effect_size"] = (f"every paired query differs by the same amount ({difference:+g}): "
                                    "the differences have no spread, so d_z is infinite")
    if test in ("t", "tukey") and (n == 1 or (df is not None and df < 1)):
        reason = f"{TEST_NAMES[test]} needs at least two paired queries; there is one"
        undefined.update(p_value=reason, p_adjusted=reason)
        if test == "tukey":
            undefined.update(ci_low=reason, ci_high=reason)
    return undefined


def _check_options(test: str, correction: str | None) -> str:
    """The correction to apply, after checking the test and the correction asked for."""
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}: choose one of {', '.join(TESTS)}")
    if correction is None:
        correction = "none" if test == "tukey" else "holm"
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}: choose one of {', '.join(CORRECTIONS)}")
    if test == "tukey" and correction != "none":
        raise ValueError("Tukey's HSD p-values already hold for all pairs at once: "
                         "use correction 'none'")
    return correction


def compare_all_pairs(
    per_query: Mapping[str, np.ndarray],
    measures: Sequence[str],
    *,
    test: str = "fisher",
    correction: str | None = None,
    alpha: float = 0.05,
    confidence: float = 0.95,
    permutations: int = 10_000,
    resamples: int = 10_000,
    seed: int = 0,
) -> AllPairsComparison:
    """Compare every pair of runs on every measure (see the module's description).

    ``per_query[run]`` is a (len(measures) x n) matrix of per-query values, the same n queries in
    the same order for every run (a query a run did not answer counts 0, as in its aggregate);
    the runs' order is the mapping's. A NaN (a measure undefined on a query for a run) leaves
    that query out of that measure's comparisons, for every run: a pair is compared on the
    queries where the measure is defined for all runs, and ``mean_a``/``mean_b`` are over those.
    ``test`` is one of :data:`TESTS`; ``correction`` one of ``CORRECTIONS``, by default
    ``"holm"``, and ``"none"`` for Tukey's HSD, which refuses any other (its p-values are
    already simultaneous). The family of a correction is the k (k - 1) / 2 pairs of one measure.
    The verdict of a pair uses its adjusted p at ``alpha``.
    """
    correction = _check_options(test, correction)
    names = list(per_query)
    if len(names) < 2:
        raise ValueError("a comparison needs at least two runs")
    if not measures:
        raise ValueError("a comparison needs at least one measure")
    scores = _stack(per_query, measures)
    k, m, n = scores.shape
    pair_a, pair_b = run_pairs(k)
    defined = ~np.isnan(scores).any(axis=0)  # (measures, queries)
    groups: dict[bytes, list[int]] = {}
    for j in range(m):
        groups.setdefault(np.packbits(defined[j]).tobytes(), []).append(j)
    columns = _Columns(*(np.full((len(pair_a), m), np.nan) for _ in range(7)))
    queries = np.zeros(m, dtype=np.int64)
    dfs: dict[int, float | None] = {}
    for chosen in groups.values():
        keep = defined[chosen[0]]
        part, df = _columns(scores[:, chosen][:, :, keep], test, confidence, resamples,
                            permutations, seed)
        for name in ("difference", "low", "high", "p", "effect", "mean_a", "mean_b"):
            getattr(columns, name)[:, chosen] = getattr(part, name)
        queries[chosen] = int(keep.sum())
        dfs.update(dict.fromkeys(chosen, df))
    adjusted = correct(columns.p.T, correction).T
    effect = "rank-biserial" if test == "wilcoxon" else "d_z"
    interval = "tukey" if test == "tukey" else "bootstrap"
    results = []
    for j, measure in enumerate(measures):
        for i, (ra, rb) in enumerate(zip(pair_a.tolist(), pair_b.tolist())):
            difference = float(columns.difference[i, j])
            results.append(PairResult(
                measure=measure, run_a=names[ra], run_b=names[rb], queries=int(queries[j]),
                mean_a=float(columns.mean_a[i, j]), mean_b=float(columns.mean_b[i, j]),
                difference=difference, ci_low=float(columns.low[i, j]),
                ci_high=float(columns.high[i, j]), p_value=float(columns.p[i, j]),
                p_adjusted=float(adjusted[i, j]), effect_size=float(columns.effect[i, j]),
                test=test, correction=correction, effect=effect, interval=interval,
                verdict=verdict(difference, float(adjusted[i, j]), alpha),
                undefined=_pair_undefined(int(queries[j]), test, float(columns.effect[i, j]),
                                          difference, dfs[j]),
            ))
    distinct_df = set(dfs.values())
    return AllPairsComparison(
        runs=tuple(names), measures=tuple(measures), queries=n, test=test,
        correction=correction, effect=effect, interval=interval, alpha=alpha,
        confidence=confidence, permutations=permutations if test == "fisher" else None,
        exact=test == "fisher" and all(q <= 62 and (1 << int(q)) <= permutations for q in queries),
        resamples=None if test == "tukey" else resamples, seed=seed,
        df=distinct_df.pop() if len(distinct_df) == 1 else None, pairs=tuple(results),
    )
