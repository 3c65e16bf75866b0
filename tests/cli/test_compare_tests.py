"""``ragjudge compare --test ... --correction ...`` against reference implementations.

On seeded random collections, the figures ``compare --format json`` prints equal the references
computed here from pytrec_eval's per-query values: the Wilcoxon signed-rank test
(``scipy.stats.wilcoxon``), the paired t-test (``scipy.stats.ttest_rel``), Fisher's
randomization test (every sign pattern enumerated, and ranx within its Monte Carlo noise),
Tukey's HSD over the two-way (run + query) error (statsmodels' OLS, scipy's studentized range)
and the corrections over the runs compared with A (statsmodels' ``multipletests``); the effect
sizes from their formulas. Plus hand-worked examples and what the table says.

ranx's Tukey HSD is the one-way design (the runs' scores as independent groups), which
``tests/metrics/test_allpairs.py`` checks against ``tukey_hsd(design="independent")``; compare
uses the two-way design (the runs answer the same queries), so its reference here is the
two-way ANOVA's error.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
import scipy.stats
from statskit import multipletests
from clikit import run_cli as _run


pytrec_eval = pytest.importorskip("pytrec_eval")

MEASURES = {"RR": "recip_rank", "P@5": "P_5", "nDCG@10": "ndcg_cut_10"}
STATSMODELS = {"holm": "holm", "bonferroni": "bonferroni", "bh": "fdr_bh"}


def collection(tmp_path, seed: int, *, queries: int = 30, runs: int = 4):
    """Random qrels (8 judged chunks a query, grades 0-3) and ``runs`` runs of 20 chunks a
    query with distinct scores, each run a little better at finding the relevant ones than the
    one before. Returns the files and pytrec_eval's per-query values {run: {measure: [...]}}."""
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    ranked: list[dict[str, dict[str, float]]] = [{} for _ in range(runs)]
    for q in range(queries):
        qid = f"q{q:02d}"
        docs = [f"d{d:02d}" for d in rng.permutation(60)]
        qrels[qid] = {d: int(rng.integers(0, 4)) for d in docs[:8]}
        for r in range(runs):
            weights = np.array([1.0 + 0.6 * r * qrels[qid].get(d, 0) for d in docs])
            order = rng.choice(len(docs), size=20, replace=False, p=weights / weights.sum())
            ranked[r][qid] = {docs[i]: float(20 - k) + rng.random() * 0.1 for k, i in enumerate(order)}
    q_path = tmp_path / f"qrels{seed}.txt"
    q_path.write_text("".join(f"{q} 0 {d} {g}\n" for q, judged in qrels.items() for d, g in judged.items()))
    paths, values = [], {}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES.values()))
    for r, run in enumerate(ranked):
        name = f"r{r}"
        path = tmp_path / f"{name}-{seed}.trec"
        path.write_text("".join(f"{q} Q0 {d} {k} {s:.6f} {name}\n" for q, docs in run.items()
                                for k, (d, s) in enumerate(sorted(docs.items(), key=lambda x: -x[1]), 1)))
        paths.append(str(path))
        per_query = evaluator.evaluate(run)
        order = sorted(per_query)
        values[name] = {m: np.array([per_query[q][key] for q in order]) for m, key in MEASURES.items()}
    return str(q_path), paths, values


def compared(capsys, q: str, runs: list[str], *options: str) -> dict:
    names = [arg for r in range(len(runs)) for arg in ("--name", f"r{r}")]
    code, out, err = _run(capsys, "compare", *runs, "--qrels", q, "-m", "RR", "-m", "P@5", "-m",
                          "nDCG@10", "--format", "json", "--resamples", "200", *names, *options)
    assert code == 0, err
    return json.loads(out)


def rows_by(data: dict) -> dict[tuple[str, str], dict]:
    return {(row["measure"], row["run_b"]): row for row in data["comparisons"]}


def corrected(p: list[float], correction: str) -> np.ndarray:
    return multipletests(p, method=STATSMODELS[correction])[1]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("correction", ["holm", "bonferroni", "bh", "none"])
def test_wilcoxon_equals_scipy_and_the_correction_statsmodels(tmp_path, capsys, seed, correction):
    q, runs, values = collection(tmp_path, seed)
    data = compared(capsys, q, runs, "--test", "wilcoxon", "--correction", correction)
    assert data["test"] == "wilcoxon" and data["correction"] == correction
    assert data["p_adjustment"] == correction
    rows = rows_by(data)
    for measure in MEASURES:
        a = values["r0"][measure]
        p = [scipy.stats.wilcoxon(values[b][measure], a).pvalue for b in ("r1", "r2", "r3")]
        ours = [rows[measure, b]["p_value"] for b in ("r1", "r2", "r3")]
        np.testing.assert_allclose(ours, p, rtol=1e-9, atol=1e-12)
        expected = p if correction == "none" else corrected(p, correction)
        np.testing.assert_allclose([rows[measure, b]["p_adjusted"] for b in ("r1", "r2", "r3")],
                                   expected, rtol=1e-9, atol=1e-12)
        for b, p_adj in zip(("r1", "r2", "r3"), expected):
            d = values[b][measure] - a
            row = rows[measure, b]
            # the rank-biserial correlation (R+ - R-) / (R+ + R-), ranks of |d| over d != 0
            nonzero = d[d != 0]
            ranks = scipy.stats.rankdata(np.abs(nonzero))
            plus, minus = ranks[nonzero > 0].sum(), ranks[nonzero < 0].sum()
            assert row["effect"] == "rank-biserial"
            assert row["effect_size"] == pytest.approx((plus - minus) / (plus + minus), abs=1e-12)
            assert row["verdict"] == ("within noise" if p_adj >= 0.05 else
                                      "B better" if d.mean() > 0 else "A better")


@pytest.mark.parametrize("seed", [4, 5])
def test_t_test_equals_scipy_and_d_z_its_formula(tmp_path, capsys, seed):
    q, runs, values = collection(tmp_path, seed, runs=3)
    data = compared(capsys, q, runs, "--test", "t", "--correction", "holm")
    rows = rows_by(data)
    for measure in MEASURES:
        a = values["r0"][measure]
        p = [scipy.stats.ttest_rel(values[b][measure], a).pvalue for b in ("r1", "r2")]
        np.testing.assert_allclose([rows[measure, b]["p_value"] for b in ("r1", "r2")], p, rtol=1e-8)
        np.testing.assert_allclose([rows[measure, b]["p_adjusted"] for b in ("r1", "r2")],
                                   corrected(p, "holm"), rtol=1e-8)
        for b in ("r1", "r2"):
            d = values[b][measure] - a
            assert rows[measure, b]["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-9)
            # the earlier field keeps its meaning: the t-test's p, corrected alike
            assert rows[measure, b]["p_t_test"] == rows[measure, b]["p_value"]
            assert rows[measure, b]["p_t_test_adjusted"] == rows[measure, b]["p_adjusted"]


def exact_randomization(a: np.ndarray, b: np.ndarray) -> float:
    """The share of all 2^n sign patterns whose |sum of signed differences| reaches the observed
    one: the exact paired randomization test, enumerated."""
    d = b - a
    observed = abs(d.sum())
    hits = sum(abs(np.dot(signs, d)) >= observed - 1e-9
               for signs in itertools.product((1.0, -1.0), repeat=len(d)))
    return hits / 2 ** len(d)


@pytest.mark.parametrize("correction", ["holm", "bh"])
def test_fisher_on_twelve_queries_is_the_exact_test_enumerated(tmp_path, capsys, correction):
    # 2^12 = 4,096 sign patterns fit in the 10,000 drawn: the test enumerates them all
    q, runs, values = collection(tmp_path, 7, queries=12, runs=3)
    data = compared(capsys, q, runs, "--test", "fisher", "--correction", correction)
    rows = rows_by(data)
    for measure in MEASURES:
        a = values["r0"][measure]
        p = [exact_randomization(a, values[b][measure]) for b in ("r1", "r2")]
        np.testing.assert_allclose([rows[measure, b]["p_value"] for b in ("r1", "r2")], p, rtol=1e-12)
        np.testing.assert_allclose([rows[measure, b]["p_adjusted"] for b in ("r1", "r2")],
                                   corrected(p, correction), rtol=1e-12)
        for b in ("r1", "r2"):  # the earlier field: the same test
            assert rows[measure, b]["p_randomization"] == rows[measure, b]["p_value"]


@pytest.mark.slow
def test_fisher_agrees_with_ranx_within_monte_carlo_noise(tmp_path, capsys):
    ranx = pytest.importorskip("ranx")
    q, runs, _ = collection(tmp_path, 8, queries=40, runs=2)
    data = compared(capsys, q, runs, "--test", "fisher", "--permutations", "100000")
    qrels = ranx.Qrels.from_file(q, kind="trec")
    a, b = (ranx.Run.from_file(path, kind="trec") for path in runs)
    a.name, b.name = "r0", "r1"
    report = ranx.compare(qrels, [a, b], ["mrr", "precision@5", "ndcg@10"], stat_test="fisher",
                          n_permutations=100_000, random_seed=0)
    rows = rows_by(data)
    for ours, theirs in (("RR", "mrr"), ("P@5", "precision@5"), ("nDCG@10", "ndcg@10")):
        p = report.comparisons[frozenset(("r0", "r1"))][theirs]["p_value"]
        # two Monte Carlo estimates of 100,000 draws each: sd of each ≤ √(0.25 / 100,000) = 0.0016
        assert rows[ours, "r1"]["p_value"] == pytest.approx(p, abs=0.01)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [9, 10])
def test_tukey_equals_the_two_way_anova_and_scipys_studentized_range(tmp_path, capsys, seed):
    smf = pytest.importorskip("statsmodels.formula.api")
    import pandas as pd

    q, runs, values = collection(tmp_path, seed, runs=4)
    data = compared(capsys, q, runs, "--test", "tukey")
    assert data["correction"] == "none" and data["interval"] == {
        "level": 0.95, "adjusted": True, "method": "Tukey simultaneous"}
    rows = rows_by(data)
    k = 4
    for measure in MEASURES:
        n = len(values["r0"][measure])
        frame = pd.DataFrame({"y": np.concatenate([values[f"r{r}"][measure] for r in range(k)]),
                              "run": np.repeat(np.arange(k), n), "query": np.tile(np.arange(n), k)})
        fit = smf.ols("y ~ C(run) + C(query)", data=frame).fit()
        se = math.sqrt(fit.mse_resid / n)
        margin = scipy.stats.studentized_range.ppf(0.95, k, fit.df_resid) * se
        for b in ("r1", "r2", "r3"):
            difference = values[b][measure].mean() - values["r0"][measure].mean()
            p = scipy.stats.studentized_range.sf(abs(difference) / se, k, fit.df_resid)
            row = rows[measure, b]
            assert row["p_value"] == pytest.approx(p, abs=1e-9)
            assert row["p_adjusted"] == row["p_value"]
            assert row["ci_low"] == pytest.approx(difference - margin, abs=1e-9)
            assert row["ci_high"] == pytest.approx(difference + margin, abs=1e-9)


# -- hand-worked ------------------------------------------------------------------------------


def _write(path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.fixture
def six_queries(tmp_path):
    """Six queries, one relevant chunk r each. A ranks r 2nd on every query (RR 1/2); B ranks it
    1st on q1..q5 and 3rd on q6: differences B - A = +1/2 five times and 1/3 - 1/2 = -1/6 once.
    C equals A."""
    q = _write(tmp_path / "q.txt", "".join(f"q{i} 0 r 1\n" for i in range(1, 7)))
    a = _write(tmp_path / "A.trec", "".join(f"q{i} Q0 x 1 3 A\nq{i} Q0 r 2 2 A\n" for i in range(1, 7)))
    b = _write(tmp_path / "B.trec", "".join(f"q{i} Q0 r 1 3 B\n" for i in range(1, 6))
               + "q6 Q0 x 1 3 B\nq6 Q0 y 2 2 B\nq6 Q0 r 3 1 B\n")
    c = _write(tmp_path / "C.trec", (tmp_path / "A.trec").read_text().replace(" A\n", " C\n"))
    return q, a, b, c


def test_wilcoxon_and_fisher_worked_by_hand(six_queries, capsys):
    q, a, b, c = six_queries
    code, out, err = _run(capsys, "compare", a, b, c, "--qrels", q, "-m", "RR", "--test",
                          "wilcoxon", "--format", "json")
    assert code == 0, err
    row_b, row_c = json.loads(out)["comparisons"]
    # |d| = 1/6 has rank 1 and the five 1/2 share ranks 2..6: R- = 1, R+ = 20, W = 1. Exact
    # (n = 6 <= 13): P(R+ >= 20) over the 64 sign patterns, i.e. R- <= 1 with ranks {1, 4 x5}
    # (mean rank 4): R- = 0 (1 pattern) or R- = 1 (the 1 alone: 1 pattern) -> 2/64; two-sided 4/64
    assert row_b["p_value"] == pytest.approx(4 / 64)
    # rank-biserial (20 - 1) / 21
    assert row_b["effect_size"] == pytest.approx(19 / 21)
    # C = A: every difference 0, p = 1; Holm over (1/16, 1): 2/16 and 1
    assert row_c["p_value"] == 1.0
    assert [row_b["p_adjusted"], row_c["p_adjusted"]] == pytest.approx([2 * 4 / 64, 1.0])
    assert row_b["verdict"] == "within noise"
    code, out, err = _run(capsys, "compare", a, b, "--qrels", q, "-m", "RR", "--format", "json")
    (row,) = json.loads(out)["comparisons"]
    # Fisher, exact over 2^6 = 64 patterns: |sum| >= 5/2 - 1/6 = 7/3 needs all five 1/2 of one
    # sign (a flipped one takes 1 off: at most 5/3), the 1/6 either way (7/3 or 8/3): 2 patterns
    # and their negations -> 4/64
    assert row["p_value"] == pytest.approx(4 / 64)
    assert row["verdict"] == "within noise" and row["p_adjusted"] == row["p_value"]  # one pair
    # d_z: mean(d) = (5/2 - 1/6) / 6 = 7/18, sd over (n - 1)
    d = np.array([0.5] * 5 + [1 / 3 - 0.5])
    assert row["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1))


def test_the_table_says_which_test_and_correction_and_which_figure_is_adjusted(six_queries, capsys):
    q, a, b, c = six_queries
    code, out, _ = _run(capsys, "compare", a, b, c, "--qrels", q, "-m", "RR", "--test",
                        "wilcoxon", "--correction", "bh")
    assert code == 0
    flat = " ".join(out.split())
    assert "95% CI (unadjusted)" in flat and "p Wilcoxon (BH)" in flat and "r (rank-biserial)" in flat
    assert "Test: Wilcoxon signed-rank test" in flat
    assert "Benjamini-Hochberg-corrected over the runs compared with A, per measure" in flat
    assert "the 95% interval is not adjusted, so it may exclude 0 beside 'within noise'" in flat
    code, out, _ = _run(capsys, "compare", a, b, "--qrels", q, "-m", "RR", "--test", "t")
    flat = " ".join(out.split())
    assert "one run compared with A: nothing to correct" in flat and "(Holm)" not in flat
    assert "95% CI " in flat and "unadjusted" not in flat
    code, out, _ = _run(capsys, "compare", a, b, c, "--qrels", q, "-m", "RR", "--test", "tukey")
    flat = " ".join(out.split())
    assert "95% CI (Tukey, all pairs)" in flat and "p Tukey (all pairs)" in flat
    assert "verdict and interval agree" in flat and "unadjusted" not in flat
    code, out, _ = _run(capsys, "compare", a, b, c, "--qrels", q, "-m", "RR", "--correction", "none")
    flat = " ".join(out.split())
    assert "p-values not corrected (--correction none)" in flat and "(Holm)" not in flat


@pytest.mark.parametrize(("options", "said"), [
    (("--test", "anova"), "--test anova: use fisher, t, wilcoxon or tukey"),
    (("--correction", "sidak"), "--correction sidak: use none, bonferroni, holm or bh"),
    (("--test", "tukey", "--correction", "holm"), "--correction holm with --test tukey"),
])
def test_a_wrong_test_or_correction_is_one_paragraph_before_any_work(six_queries, capsys, options, said):
    q, a, b, _ = six_queries
    code, out, err = _run(capsys, "compare", a, b, "--qrels", q, *options)
    assert code == 2 and out == "" and said in err
    assert err.count("\n") == 1 and "Traceback" not in err
