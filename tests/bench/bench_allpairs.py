"""Benchmark: every pair of k runs compared on m measures, ragjudge against ranx, same scores.

    python tests/bench/bench_allpairs.py [--runs 20] [--queries 2000] [--measures 10]
                                         [--repeat 3] [--skip-ranx]

Not a test (pytest does not collect it). Draws per-query scores for k runs (a query effect
shared by every run, a run effect, and noise, clipped to [0, 1]; seeded), then times the
statistics only: evaluation is not timed on either side. ragjudge is
``compare_all_pairs(per_query, measures, test=...)``, which also draws a bootstrap interval for
every pair (Tukey's interval is computed); ranx is the function ``ranx.compare`` calls after
evaluating, ``compute_statistical_significance`` (p-values only), with its numba code compiled
and loaded before the clock starts. Each row is the median of ``--repeat`` runs.

ranx's Fisher test draws 1,000 permutations by default and runs once per ordered pair (k (k - 1)
calls); ragjudge's default is 10,000 sign patterns shared by the k (k - 1) / 2 pairs, and it is
also timed with 1,000. The last lines compare the p-values: Tukey with ranx's one-way design
must agree to rounding; Fisher's agree within the Monte Carlo noise of 1,000 draws
(sd = √(p (1 - p) / 1000) ≤ 0.016).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def scores(k: int, n: int, m: int, seed: int = 20261122) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    query_effect = rng.beta(2, 3, (m, n))
    return {
        f"run{i:02d}": np.clip(query_effect + rng.normal(0.004 * i, 0.15, (m, n)), 0.0, 1.0)
        for i in range(k)
    }


def timed(repeat: int, function, *args, **kwargs) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function(*args, **kwargs)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--measures", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-ranx", action="store_true")
    args = parser.parse_args()

    from ragjudge.metrics.allpairs import compare_all_pairs, run_pairs, tukey_hsd

    per_query = scores(args.runs, args.queries, args.measures)
    measures = [f"M{j}" for j in range(args.measures)]
    names = list(per_query)
    k, pairs = len(names), len(names) * (len(names) - 1) // 2
    print(f"{k} runs x {args.queries} queries x {args.measures} measures: {pairs} pairs per "
          f"measure, {pairs * args.measures} comparisons; median of {args.repeat}\n")
    rows: list[tuple[str, str, float]] = []
    ours: dict[str, object] = {}
    for label, test, permutations in [("fisher", "fisher", 10_000), ("fisher", "fisher", 1_000),
                                      ("tukey", "tukey", 0), ("t", "t", 0),
                                      ("wilcoxon", "wilcoxon", 0)]:
        seconds, result = timed(args.repeat, compare_all_pairs, per_query, measures, test=test,
                                permutations=max(permutations, 1))
        detail = f"{permutations:,} sign patterns" if test == "fisher" else ""
        rows.append(("ragjudge", f"{label} {detail}".strip() + " + bootstrap CIs" * (test != "tukey"), seconds))
        ours[f"{test}{permutations or ''}"] = result

    ranx_p: dict[str, object] = {}
    if not args.skip_ranx:
        from ranx.statistical_tests import compute_statistical_significance

        metric_scores = {name: {mm: per_query[name][j] for j, mm in enumerate(measures)}
                         for name in names}
        small = {name: {mm: v[:50] for mm, v in metric_scores[name].items()} for name in names[:2]}
        for test in ("fisher", "tukey"):  # compile / load numba before timing
            compute_statistical_significance(names[:2], small, stat_test=test)
        for test in ("fisher", "tukey"):
            seconds, result = timed(args.repeat, compute_statistical_significance, names,
                                    metric_scores, stat_test=test, n_permutations=1000)
            rows.append(("ranx 0.3.21", f"{test}" + (" 1,000 permutations" if test == "fisher" else ""), seconds))
            ranx_p[test] = result

    width = max(len(r[1]) for r in rows)
    print(f"{'side':<12} {'test':<{width}}  seconds")
    for side, label, seconds in rows:
        print(f"{side:<12} {label:<{width}}  {seconds:8.2f}")

    if ranx_p:
        a, b = run_pairs(k)
        matrix = np.stack([per_query[name] for name in names])
        hsd = tukey_hsd(matrix, design="independent")
        ranx_tukey = np.array([[ranx_p["tukey"][frozenset((names[i], names[j]))][mm]["p_value"]
                                for mm in measures] for i, j in zip(a, b)])
        print(f"\nTukey, ranx's one-way design: max |p_ragjudge - p_ranx| = "
              f"{np.abs(hsd.p - ranx_tukey).max():.1e}")
        fisher = ours["fisher10000"]
        mine = np.array([[fisher.pair(mm, names[i], names[j]).p_value for mm in measures]
                         for i, j in zip(a, b)])
        theirs = np.array([[ranx_p["fisher"][frozenset((names[i], names[j]))][mm]["p_value"]
                            for mm in measures] for i, j in zip(a, b)])
        sd = np.sqrt(mine * (1 - mine) / 1000 + mine * (1 - mine) / 10_000)
        print(f"Fisher: mean |p_ragjudge - p_ranx| = {np.abs(mine - theirs).mean():.4f}, "
              f"{np.mean(np.abs(mine - theirs) <= 3 * sd + 1e-3):.1%} within 3 sd of the Monte Carlo "
              f"noise; pairs significant at 0.05 (raw): ragjudge {np.mean(mine < 0.05):.1%}, "
              f"ranx {np.mean(theirs < 0.05):.1%}")
        paired = ours["tukey"]
        print(f"Tukey, paired (ragjudge's default) vs ranx's one-way: pairs with p < 0.05 "
              f"{np.mean([r.p_value < 0.05 for r in paired.pairs]):.1%} vs {np.mean(ranx_tukey < 0.05):.1%}")


if __name__ == "__main__":
    main()
