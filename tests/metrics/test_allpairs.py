"""All-pairs comparison of k runs: Tukey's HSD against scipy, statsmodels and ranx, Fisher's test
against ranx, and the result object the command line and the screens render."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import statsmodels.formula.api as smf
from statsmodels.stats.multicomp import pairwise_tukeyhsd

from ragjudge.metrics.allpairs import (
    TESTS,
    AllPairsComparison,
    compare_all_pairs,
    run_pairs,
    tukey_hsd,
)
from ragjudge.metrics.corrections import CORRECTIONS, correct
from ragjudge.metrics.distributions import studentized_range_ppf
from ragjudge.metrics.significance import (
    BETTER_B,
    NOISE,
    cohens_dz,
    compare_runs,
    paired_t_test,
    rank_biserial,
    wilcoxon_test,
)

# three runs on two queries: run means 2, 4, 6, query means 3, 5, grand mean 4
HAND = np.array([[1.0, 3.0], [2.0, 6.0], [6.0, 6.0]])


def _runs(k, n, m=1, seed=0, step=0.03):
    rng = np.random.default_rng(seed)
    query_effect = rng.beta(2, 3, (m, n))
    return {f"r{i}": np.clip(query_effect + rng.normal(step * i, 0.12, (m, n)), 0, 1)
            for i in range(k)}


# ---------------------------------------------------------------------------------- Tukey's HSD
def test_run_pairs_order():
    a, b = run_pairs(4)
    assert list(zip(a.tolist(), b.tolist())) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]


@pytest.mark.slow
def test_tukey_paired_hand_worked():
    # residuals y - run mean - query mean + 4: A 0, 0; B -1, 1; C 1, -1 -> SSE 4, df (3-1)(2-1)
    # = 2, MSE 2, √(MSE / n) = 1; q = |mean difference| = 2, 4, 2
    hsd = tukey_hsd(HAND)
    assert hsd.df == 2.0
    np.testing.assert_allclose(hsd.mse, [2.0])
    np.testing.assert_allclose(hsd.q[:, 0], [2.0, 4.0, 2.0], rtol=1e-14)
    np.testing.assert_allclose(hsd.p[:, 0], scipy.stats.studentized_range.sf([2, 4, 2], 3, 2),
                               atol=1e-10)
    assert hsd.margin[0] == pytest.approx(scipy.stats.studentized_range.ppf(0.95, 3, 2), rel=1e-9)


def test_tukey_independent_hand_worked():
    # within-run squares: A 1 + 1, B 4 + 4, C 0 -> SSE 10, df 3 (2 - 1) = 3, MSE 10/3,
    # √(MSE / 2) = √(5/3); q(A, B) = 2 / √(5/3)
    hsd = tukey_hsd(HAND, design="independent")
    assert hsd.df == 3.0
    se = math.sqrt(5 / 3)
    np.testing.assert_allclose(hsd.q[:, 0], [2 / se, 4 / se, 2 / se], rtol=1e-14)


def test_tukey_two_runs_is_the_paired_t_test():
    # with k = 2 the two-way residual mean square is s_d² / 2, so q = √2 |t| and
    # P(Q_{2, n-1} > q) = P(|T_{n-1}| > |t|)
    rng = np.random.default_rng(5)
    a = rng.random(25)
    b = a + rng.normal(0.05, 0.2, 25)
    hsd = tukey_hsd(np.stack([a, b]))
    t, p = paired_t_test(a, b)
    assert hsd.df == 24
    assert hsd.q[0, 0] == pytest.approx(math.sqrt(2) * abs(t), rel=1e-12)
    assert hsd.p[0, 0] == pytest.approx(p, rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("k,n,seed", [(3, 12, 1), (5, 40, 2), (8, 150, 3)])
def test_tukey_paired_matches_two_way_anova(k, n, seed):
    # the error term of statsmodels' two-way OLS y ~ C(run) + C(query), then scipy's
    # studentized range
    runs = _runs(k, n, seed=seed)
    scores = np.stack([runs[name][0] for name in runs])
    frame = pd.DataFrame({
        "y": scores.ravel(), "run": np.repeat(np.arange(k), n), "query": np.tile(np.arange(n), k)})
    fit = smf.ols("y ~ C(run) + C(query)", data=frame).fit()
    hsd = tukey_hsd(scores)
    assert hsd.df == fit.df_resid
    assert hsd.mse[0] == pytest.approx(fit.mse_resid, rel=1e-10)
    a, b = run_pairs(k)
    q = np.abs(scores[b].mean(axis=1) - scores[a].mean(axis=1)) / math.sqrt(fit.mse_resid / n)
    np.testing.assert_allclose(hsd.p[:, 0], scipy.stats.studentized_range.sf(q, k, fit.df_resid),
                               atol=1e-10)
    margin = scipy.stats.studentized_range.ppf(0.95, k, fit.df_resid) * math.sqrt(fit.mse_resid / n)
    assert hsd.margin[0] == pytest.approx(margin, rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("k,n,seed", [(3, 10, 4), (6, 60, 5)])
def test_tukey_independent_matches_scipy_and_statsmodels(k, n, seed):
    runs = _runs(k, n, seed=seed)
    scores = np.stack([runs[name][0] for name in runs])
    hsd = tukey_hsd(scores, design="independent")
    ref = scipy.stats.tukey_hsd(*scores)
    a, b = run_pairs(k)
    np.testing.assert_allclose(hsd.p[:, 0], ref.pvalue[a, b], atol=1e-10)
    interval = ref.confidence_interval(0.95)
    difference = scores[b].mean(axis=1) - scores[a].mean(axis=1)
    # scipy's interval is of mean_i - mean_j, ours of mean_b - mean_a
    np.testing.assert_allclose(difference + hsd.margin[0], -interval.low[a, b], rtol=1e-9)
    sm = pairwise_tukeyhsd(scores.ravel(), np.repeat(np.arange(k), n))
    np.testing.assert_allclose(hsd.p[:, 0], sm.pvalues, atol=1e-10)
    np.testing.assert_allclose(np.c_[difference - hsd.margin[0], difference + hsd.margin[0]],
                               sm.confint, rtol=1e-9)


def test_tukey_many_measures_at_once_and_no_error():
    runs = _runs(4, 30, m=3, seed=9)
    scores = np.stack(list(runs.values()))
    hsd = tukey_hsd(scores)
    for j in range(3):
        one = tukey_hsd(scores[:, j, :])
        np.testing.assert_allclose(hsd.p[:, j], one.p[:, 0], rtol=1e-13)
        np.testing.assert_allclose(hsd.margin[j], one.margin[0], rtol=1e-13)
    # an additive layout (run effect + query effect exactly) leaves no error: q = inf, p = 0,
    # except for runs with equal means
    additive = np.array([[0.1, 0.5, 0.3], [0.3, 0.7, 0.5], [0.1, 0.5, 0.3]])
    hsd = tukey_hsd(additive)
    assert hsd.q[:, 0].tolist() == [math.inf, 0.0, math.inf]
    assert hsd.p[:, 0].tolist() == [0.0, 1.0, 0.0]


# ------------------------------------------------------------------------------------- ranx
@pytest.fixture(scope="module")
def ranx_collection():
    """Four runs over 14 queries, evaluated and compared by ranx (Fisher and Tukey)."""
    ranx = pytest.importorskip("ranx")
    rng = np.random.default_rng(77)
    qrels = {f"q{i:02d}": {f"d{j}": int(rng.integers(1, 3)) for j in rng.choice(30, 6, replace=False)}
             for i in range(14)}
    runs = []
    for r in range(4):
        run = {q: {f"d{j}": float(rng.random() + 0.15 * r * (f"d{j}" in qrels[q])) for j in range(30)}
               for q in qrels}
        runs.append(ranx.Run(run, name=f"r{r}"))
    qrels = ranx.Qrels(qrels)
    metrics = ["ndcg@10", "map"]
    per_query = {run.name: np.stack([ranx.evaluate(qrels, run, metric, return_mean=False)
                                     for metric in metrics]) for run in runs}
    fisher = ranx.compare(qrels, runs, metrics, stat_test="fisher", n_permutations=100_000)
    tukey = ranx.compare(qrels, runs, metrics, stat_test="tukey")
    return per_query, metrics, fisher, tukey


@pytest.mark.slow
def test_tukey_independent_equals_ranx(ranx_collection):
    per_query, metrics, _, tukey = ranx_collection
    names = list(per_query)
    hsd = tukey_hsd(np.stack([per_query[name] for name in names]), design="independent")
    a, b = run_pairs(len(names))
    for j, metric in enumerate(metrics):
        ranx_p = [tukey.comparisons[frozenset((names[i], names[k]))][metric]["p_value"]
                  for i, k in zip(a, b)]
        np.testing.assert_allclose(hsd.p[:, j], ranx_p, atol=1e-10)


@pytest.mark.slow
def test_fisher_agrees_with_ranx_within_monte_carlo_noise(ranx_collection):
    # 14 queries: all 2^14 = 16,384 sign patterns fit in the budget, so ragjudge's p is exact;
    # ranx draws 100,000 random swaps, whose p has sd √(p (1 - p) / 100,000) ≤ 0.0016
    per_query, metrics, fisher, _ = ranx_collection
    result = compare_all_pairs(per_query, metrics, test="fisher", permutations=20_000)
    assert result.exact
    for pair in result.pairs:
        theirs = fisher.comparisons[frozenset((pair.run_a, pair.run_b))][pair.measure]["p_value"]
        sd = math.sqrt(pair.p_value * (1 - pair.p_value) / 100_000)
        assert abs(pair.p_value - theirs) <= 5 * sd + 1e-5, (pair.run_a, pair.run_b, pair.measure)


# --------------------------------------------------------------------------- compare_all_pairs
def test_pairs_order_fields_and_correction():
    runs = _runs(3, 60, m=2, seed=11)
    result = compare_all_pairs(runs, ["AP", "RR"], test="t", correction="bh")
    assert isinstance(result, AllPairsComparison)
    assert [(p.measure, p.run_a, p.run_b) for p in result.pairs] == [
        ("AP", "r0", "r1"), ("AP", "r0", "r2"), ("AP", "r1", "r2"),
        ("RR", "r0", "r1"), ("RR", "r0", "r2"), ("RR", "r1", "r2")]
    for j, measure in enumerate(["AP", "RR"]):
        rows = result.for_measure(measure)
        np.testing.assert_allclose([r.p_adjusted for r in rows], correct([r.p_value for r in rows], "bh"))
        for row in rows:
            a, b = runs[row.run_a][j], runs[row.run_b][j]
            assert row.p_value == pytest.approx(paired_t_test(a, b)[1], rel=1e-12)
            assert row.effect_size == pytest.approx(cohens_dz(a, b), rel=1e-12)
            assert row.difference == pytest.approx(np.mean(b - a), abs=1e-15)
            assert (row.mean_a, row.mean_b) == (pytest.approx(a.mean()), pytest.approx(b.mean()))
            assert (row.test, row.correction, row.effect, row.interval) == ("t", "bh", "d_z", "bootstrap")


@pytest.mark.parametrize("correction", CORRECTIONS)
def test_every_correction_is_applied_per_measure(correction):
    runs = _runs(4, 30, m=2, seed=12)
    result = compare_all_pairs(runs, ["P@5", "AP"], test="fisher", correction=correction,
                               permutations=2_000, resamples=500)
    for measure in ("P@5", "AP"):
        rows = result.for_measure(measure)
        np.testing.assert_allclose([r.p_adjusted for r in rows],
                                   correct([r.p_value for r in rows], correction))


def test_wilcoxon_pairs_use_rank_biserial():
    runs = _runs(3, 40, seed=13)
    result = compare_all_pairs(runs, ["nDCG@10"], test="wilcoxon")
    assert result.effect == "rank-biserial"
    for row in result.pairs:
        a, b = runs[row.run_a][0], runs[row.run_b][0]
        assert row.p_value == wilcoxon_test(a, b)[1]
        assert row.effect_size == rank_biserial(a, b)


def test_two_runs_equal_the_baseline_comparison():
    runs = _runs(2, 50, m=2, seed=14)
    pairs = compare_all_pairs(runs, ["AP", "RR"], test="fisher")
    baseline = compare_runs(runs, ["AP", "RR"])
    for mine, theirs in zip(pairs.pairs, baseline):
        assert mine.p_value == theirs.p_randomization
        assert mine.p_adjusted == theirs.p_randomization_adjusted
        assert mine.ci_low == pytest.approx(theirs.ci_low, abs=1e-14)
        assert mine.ci_high == pytest.approx(theirs.ci_high, abs=1e-14)
        assert mine.verdict == theirs.verdict


def test_tukey_pairs_intervals_and_p_agree():
    # Tukey's simultaneous interval excludes 0 exactly when p < 1 - confidence
    runs = _runs(5, 80, m=2, seed=15, step=0.02)
    result = compare_all_pairs(runs, ["AP", "RR"], test="tukey")
    assert result.correction == "none" and result.interval == "tukey" and result.df == 4 * 79
    hsd = tukey_hsd(np.stack(list(runs.values())))
    margin = studentized_range_ppf(0.95, 5, 316) * np.sqrt(hsd.mse / 80)
    for row in result.pairs:
        j = ["AP", "RR"].index(row.measure)
        assert row.ci_high - row.difference == pytest.approx(margin[j], rel=1e-12)
        assert (row.ci_low > 0 or row.ci_high < 0) == (row.p_value < 0.05)
        assert row.p_adjusted == row.p_value
    assert {row.p_value < 0.05 for row in result.pairs} == {True, False}


def test_verdicts_winners_and_beats():
    rng = np.random.default_rng(16)
    base = rng.random((1, 200)) * 0.5
    runs = {"weak": base, "same": base + rng.normal(0, 0.01, (1, 200)), "strong": base + 0.3}
    result = compare_all_pairs(runs, ["AP"])
    strong = result.pair("AP", "strong", "weak")
    assert (strong.run_a, strong.run_b) == ("weak", "strong")
    assert strong.verdict == BETTER_B and strong.winner == "strong"
    assert strong.ci_low > 0.28 and strong.effect_size > 5
    assert result.pair("AP", "weak", "same").verdict == NOISE
    assert result.beats("AP") == {"weak": [], "same": [], "strong": ["weak", "same"]}
    with pytest.raises(KeyError):
        result.pair("AP", "weak", "nobody")
    p = result.matrix("AP")
    assert np.isnan(np.diag(p)).all() and p[0, 2] == p[2, 0] == strong.p_adjusted
    difference = result.matrix("AP", "difference")
    assert difference[0, 2] == strong.difference == -difference[2, 0]
    with pytest.raises(ValueError):
        result.matrix("AP", "verdict")


def test_describe_and_json():
    runs = _runs(3, 20, seed=17)
    result = compare_all_pairs(runs, ["AP"], permutations=5_000)
    text = result.describe()
    assert "Fisher's randomization test (5,000 random sign patterns, seed 0)" in text
    assert "Holm-corrected over the 3 pairs" in text and "bootstrap" in text and "d_z" in text
    record = json.loads(json.dumps(result.as_dict()))
    assert record["test"] == "fisher" and record["runs"] == ["r0", "r1", "r2"]
    assert set(record["pairs"][0]) >= {"measure", "run_a", "run_b", "difference", "ci_low", "ci_high",
                                       "p_value", "p_adjusted", "effect_size", "test", "correction",
                                       "effect", "interval", "verdict", "winner"}
    tukey = compare_all_pairs(runs, ["AP"], test="tukey").describe()
    assert "Tukey's HSD" in tukey and "not corrected" in tukey and "simultaneous" in tukey
    exact = compare_all_pairs({k: v[:, :8] for k, v in runs.items()}, ["AP"])
    assert exact.exact and "all sign patterns" in exact.describe()


def test_too_few_queries_say_why():
    runs = {"a": np.zeros((1, 0)), "b": np.zeros((1, 0))}
    row = compare_all_pairs(runs, ["AP"]).pairs[0]
    assert math.isnan(row.difference) and math.isnan(row.p_value) and math.isnan(row.effect_size)
    assert "no query" in row.undefined["p_value"]
    one = {"a": np.array([[0.2]]), "b": np.array([[0.7]])}
    row = compare_all_pairs(one, ["AP"], test="t").pairs[0]
    assert row.difference == pytest.approx(0.5)
    assert math.isnan(row.p_value) and set(row.undefined) >= {"p_value", "effect_size"}
    row = compare_all_pairs(one, ["AP"], test="tukey").pairs[0]
    assert math.isnan(row.p_value) and math.isnan(row.ci_low) and "ci_low" in row.undefined
    constant = {"a": np.array([[0.1, 0.2, 0.3]]), "b": np.array([[0.3, 0.4, 0.5]])}
    row = compare_all_pairs(constant, ["AP"]).pairs[0]
    assert row.effect_size == math.inf and "no spread" in row.undefined["effect_size"]


@pytest.mark.parametrize("test", TESTS)
def test_undefined_values_leave_their_queries_out_of_that_measure(test):
    # a NaN on query 3 of run r1 for RR: RR is compared on the other 39 queries for every pair,
    # AP on all 40
    runs = _runs(3, 40, m=2, seed=19)
    holed = {name: values.copy() for name, values in runs.items()}
    holed["r1"][1, 3] = np.nan
    result = compare_all_pairs(holed, ["AP", "RR"], test=test, permutations=3_000, resamples=500)
    whole = compare_all_pairs({n: v[:1] for n, v in runs.items()}, ["AP"], test=test,
                              permutations=3_000, resamples=500)
    keep = np.arange(40) != 3
    reduced = compare_all_pairs({n: v[1:, keep] for n, v in runs.items()}, ["RR"], test=test,
                                permutations=3_000, resamples=500)
    assert result.queries == 40
    for mine, theirs in zip(result.pairs, whole.pairs + reduced.pairs):
        assert mine.queries == theirs.queries
        for field in ("mean_a", "mean_b", "difference", "ci_low", "ci_high", "p_value",
                      "p_adjusted", "effect_size"):
            assert getattr(mine, field) == pytest.approx(getattr(theirs, field), rel=1e-12), field
    assert [p.queries for p in result.pairs] == [40] * 3 + [39] * 3
    if test == "tukey":
        assert result.df is None and "df by measure" in result.describe()


def test_refusals():
    runs = _runs(3, 10, seed=18)
    with pytest.raises(ValueError, match="already hold for all pairs"):
        compare_all_pairs(runs, ["AP"], test="tukey", correction="holm")
    with pytest.raises(ValueError, match=", ".join(TESTS)):
        compare_all_pairs(runs, ["AP"], test="anova")
    with pytest.raises(ValueError, match="bonferroni"):
        compare_all_pairs(runs, ["AP"], correction="fdr")
    with pytest.raises(ValueError, match="one measure"):
        compare_all_pairs({"a": np.zeros((0, 3)), "b": np.zeros((0, 3))}, [])
    with pytest.raises(ValueError, match="two runs"):
        compare_all_pairs({"a": runs["r0"]}, ["AP"])
    with pytest.raises(ValueError, match="queries"):
        compare_all_pairs({"a": runs["r0"], "b": runs["r1"][:, :5]}, ["AP"])
    with pytest.raises(ValueError, match="design"):
        tukey_hsd(np.zeros((3, 4)), design="blocked")


@pytest.mark.slow
def test_significance_modules_never_load_scipy():
    # scipy and statsmodels are references for the tests only: the library computes alone
    code = ("import sys, numpy as np\n"
            "from ragjudge.metrics.allpairs import compare_all_pairs\n"
            "runs = {'a': np.random.default_rng(0).random((2, 30)), 'b': np.random.default_rng(1).random((2, 30))}\n"
            "for test in ('fisher', 't', 'wilcoxon', 'tukey'):\n"
            "    compare_all_pairs(runs, ['AP', 'RR'], test=test, resamples=200, permutations=200)\n"
            "print(sorted(name for name in ('scipy', 'statsmodels', 'pandas') if name in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
