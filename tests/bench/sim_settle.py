"""Simulation: how soon a pool being judged settles the comparisons of close runs, judged in
depth-round order or in settle's weight order. Not a test (pytest does not collect it).

    python tests/bench/sim_settle.py [--queries 200] [--runs 8] [--pool 10] [--depth 40]
                                     [--measures P@5,nDCG@10,AP,RR,R@10] [--every 1] [--seed 7]

A random collection: per query a universe of chunks with true grades 0..3 (relevance falling
with a latent rank), and runs that rank the chunks by ``quality * grade + noise``, qualities
close to each other (so some pairs of runs differ by little). The truth is the collection once
the whole pool is judged (pool = every run's top K; chunks outside it stay unjudged, as
trec_eval counts them). Two ways to judge the pool:

- **depth**: rounds at depths 1, 2, 3, 5, 10, 20, ... K; a round visits every query and judges
  its pool pairs some run ranks within the depth;
- **weight**: the heaviest pairs of ``Settlement.weights()`` first, the weights refreshed after
  every 1% of the pool.

After each 1% judged it settles every pair of runs under every measure and prints: how many
comparisons are certain, probable, open (and tied); ``wrong`` -- certain claims whose order
differs from the truth (must be 0); ``held`` -- the share of probable claims whose order is the
truth's (target: >= 95%); ``tau`` -- Kendall's tau between the runs ranked by the current means
and by the final ones, averaged over the measures (``tau*``: ranked by the expected final means
of the draws instead, :meth:`Settlement.expected`). At the end, for the weight order: how the
``judge_more`` estimates compare with the pairs it really took to make each comparison
certain.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ragjudge.metrics import Qrels, Run
from ragjudge.metrics.settle import EPS, Pool, Settlement

TOP = 3


def collection(n_queries: int, n_runs: int, depth: int, seed: int) -> tuple[dict[str, Run], dict]:
    """Runs of close quality and the true grade of every chunk they rank."""
    rng = np.random.default_rng(seed)
    universe = depth * 3
    quality = np.linspace(0.85, 1.15, n_runs)
    rng.shuffle(quality)
    truth: dict[str, dict[str, int]] = {}
    ranked: list[dict[str, list[str]]] = [{} for _ in range(n_runs)]
    for q in range(n_queries):
        qid = f"q{q:04d}"
        latent = np.arange(universe)
        p_rel = 0.6 * np.exp(-latent / (universe / 6.0))
        grade = np.where(rng.random(universe) < p_rel, rng.choice([1, 2, 3], universe, p=[0.5, 0.3, 0.2]), 0)
        truth[qid] = {f"c{c}": int(g) for c, g in enumerate(grade)}
        shared = rng.normal(size=universe) * 0.6
        for r in range(n_runs):
            score = quality[r] * grade + shared + rng.normal(size=universe) * 0.9 - latent * 0.004
            order = np.argsort(-score)[:depth]
            ranked[r][qid] = [f"c{c}" for c in order]
    runs = {f"run{r}": Run.from_ranked(ranked[r], name=f"run{r}") for r in range(n_runs)}
    return runs, truth


def depth_order(runs: dict[str, Run], pool: Pool, pool_depth: int) -> list[tuple[str, str]]:
    """Pool pairs in depth-round order: depth 1, 2, 3, 5, 10, 20, ... K; every query each round."""
    best: dict[tuple[str, str], int] = {}
    for run in runs.values():
        for qid, chunks in run.to_ranked().items():
            for rank, chunk in enumerate(chunks[:pool_depth], start=1):
                key = (qid, chunk)
                best[key] = min(best.get(key, rank), rank)
    rounds = [d for d in (1, 2, 3, 5, 10, 20, 50, 100) if d < pool_depth] + [pool_depth]
    order: list[tuple[str, str]] = []
    done: set[tuple[str, str]] = set()
    queries = sorted({q for q, _ in best})
    by_query: dict[str, list[tuple[int, str]]] = {q: [] for q in queries}
    for (q, c), rank in best.items():
        by_query[q].append((rank, c))
    for d in rounds:
        for q in queries:
            for rank, c in sorted(by_query[q]):
                if rank <= d and (q, c) not in done:
                    done.add((q, c))
                    order.append((q, c))
    return order


def qrels_of(judged: dict[tuple[str, str], int]) -> Qrels:
    if not judged:
        return Qrels([], [], [], top_grade=TOP)
    q, c = zip(*judged)
    return Qrels(list(q), list(c), list(judged.values()), top_grade=TOP)


def kendall(now: list[float], final: list[float]) -> float:
    """Kendall's tau of the current ranking against the final one, over the pairs of runs the
    final one separates (a pair tied now counts 0)."""
    n, score, pairs = len(now), 0.0, 0
    for i in range(n):
        for j in range(i + 1, n):
            truth = final[i] - final[j]
            if abs(truth) <= EPS:
                continue
            pairs += 1
            here = now[i] - now[j]
            score += 0.0 if abs(here) <= EPS else float(np.sign(here) * np.sign(truth))
    return score / pairs if pairs else 1.0


def simulate(strategy: str, runs: dict[str, Run], truth: dict, args: argparse.Namespace) -> list[dict]:
    pool = Pool.from_runs(runs.values(), args.pool)
    pairs = list(zip(*(np.char.decode(pool.query_ids).tolist(), np.char.decode(pool.chunk_ids).tolist())))
    grade = {(q, c): truth[q][c] for q, c in pairs}
    measures = args.measures.split(",")
    final = Settlement(qrels_of(grade), runs, pool, measures, top_grade=TOP, pairs="all", samples=0)
    final_diff = {(c.measure, c.a, c.b): c.difference for c in final.comparisons()}
    final_means = {(j, name): final.mean(j, name) for j in range(len(measures)) for name in runs}
    queue = depth_order(runs, pool, args.pool) if strategy == "depth" else []
    judged: dict[tuple[str, str], int] = {}
    step = max(1, int(round(len(pairs) * args.every / 100.0)))
    rows, history = [], []
    while True:
        t0 = time.perf_counter()
        settlement = Settlement(qrels_of(judged), runs, pool, measures, top_grade=TOP, pairs="all",
                                samples=args.samples, seed=args.seed + len(judged))
        comparisons = settlement.comparisons()
        elapsed = time.perf_counter() - t0
        row = {"judged": len(judged) / len(pairs), "certain": 0, "probable": 0, "open": 0, "tied": 0,
               "wrong": 0, "held": 0, "seconds": elapsed}
        for c in comparisons:
            row[c.status] += 1
            truth_sign = np.sign(final_diff[c.measure, c.a, c.b]) if abs(final_diff[c.measure, c.a, c.b]) > EPS else 0
            if c.status == "certain" and np.sign(c.low if c.low > EPS else c.high) != truth_sign:
                row["wrong"] += 1
            if c.status == "tied" and truth_sign != 0:
                row["wrong"] += 1
            now_sign = np.sign(c.difference) if abs(c.difference) > EPS else 0
            if c.status == "probable" and now_sign == truth_sign:
                row["held"] += 1
            history.append((len(judged), c.measure, c.a, c.b, c.status, c.judge_more))
        taus = [kendall([settlement.mean(j, n) for n in runs], [final_means[j, n] for n in runs])
                for j in range(len(measures))]
        row["tau"] = float(np.mean(taus))
        row["tau_expected"] = float(np.mean([
            kendall([settlement.expected(j, n) for n in runs], [final_means[j, n] for n in runs])
            for j in range(len(measures))]))
        rows.append(row)
        if len(judged) == len(pairs):
            break
        if strategy == "weight":
            ahead = [(q, c) for q, c, _ in settlement.weights().ranked() if (q, c) not in judged]
        else:
            ahead = [p for p in queue if p not in judged]
        for q, c in ahead[:step]:
            judged[q, c] = grade[q, c]
        if not ahead:  # pairs with weight 0 only: judge the rest in pool order
            for p in pairs:
                judged.setdefault(p, grade[p])
    rows[-1]["history"] = history
    return rows


def judge_more_check(history: list[tuple]) -> str:
    """Estimated pairs to certainty vs the pairs it took (comparisons open at the time)."""
    first_certain: dict[tuple, int] = {}
    for judged, m, a, b, status, _ in history:
        if status in ("certain", "tied"):
            first_certain.setdefault((m, a, b), judged)
    ratios = []
    for judged, m, a, b, status, more in history:
        took = first_certain.get((m, a, b))
        if status not in ("certain", "tied") and took is not None and took > judged:
            ratios.append(more / (took - judged))
    if not ratios:
        return "judge_more: nothing to compare"
    r = np.array(ratios)
    within = float(np.mean((r >= 0.5) & (r <= 2.0)))
    return (f"judge_more / pairs it took (weight order, {len(r)} estimates): median {np.median(r):.2f}, "
            f"quartiles {np.quantile(r, 0.25):.2f}-{np.quantile(r, 0.75):.2f}, within a factor 2: {within:.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--pool", type=int, default=10)
    parser.add_argument("--depth", type=int, default=40)
    parser.add_argument("--measures", default="P@5,P@10,nDCG@10,AP,RR,R@10,Success@3")
    parser.add_argument("--every", type=float, default=1.0, help="report every this many %% of the pool")
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    runs, truth = collection(args.queries, args.runs, args.depth, args.seed)
    print(f"{args.queries} queries, {args.runs} runs of depth {args.depth}, pool depth {args.pool}, "
          f"measures {args.measures}, {args.samples} draws")
    results = {s: simulate(s, runs, truth, args) for s in ("depth", "weight")}
    header = f"{'judged':>7} | " + " | ".join(
        f"{s:<6} cert prob open tied wrong held  tau  tau*" for s in results)
    print(header)
    print("-" * len(header))
    for i in range(max(len(r) for r in results.values())):
        cells = []
        for rows in results.values():
            if i >= len(rows):
                cells.append(" " * 49)
                continue
            r = rows[i]
            held = f"{r['held'] / r['probable']:.0%}" if r["probable"] else "-"
            cells.append(f"{'':<6} {r['certain']:>4} {r['probable']:>4} {r['open']:>4} {r['tied']:>4} "
                         f"{r['wrong']:>5} {held:>4} {r['tau']:>4.2f} {r['tau_expected']:>5.2f}")
        judged = results["depth"][min(i, len(results["depth"]) - 1)]["judged"]
        print(f"{judged:>6.0%} | " + " | ".join(cells))
    for s, rows in results.items():
        wrong = sum(r["wrong"] for r in rows)
        probable = sum(r["probable"] for r in rows)
        held = sum(r["held"] for r in rows)
        reach = next((r["judged"] for r in rows if r["open"] + r["probable"] == 0), 1.0)
        half = next((r["judged"] for r in rows if r["certain"] + r["tied"] >= 0.5 * (r["certain"] + r["tied"] + r["open"] + r["probable"])), 1.0)
        print(f"{s}: wrong certain claims {wrong}; probable claims held {held}/{probable}"
              f" ({held / probable:.1%})" if probable else f"{s}: wrong certain claims {wrong}; no probable claims",
              f"; half the comparisons certain at {half:.0%} judged; all at {reach:.0%};"
              f" mean settle time {np.mean([r['seconds'] for r in rows]):.2f} s")
    print(judge_more_check(results["weight"][-1]["history"]))


if __name__ == "__main__":
    main()
