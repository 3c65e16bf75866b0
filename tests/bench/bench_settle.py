"""Benchmark: settling the comparisons of a project's runs, beside evaluating the same runs.

    python tests/bench/bench_settle.py [--queries 10000] [--runs 10] [--depth 100] [--pool 20]
                                       [--judged 0.3,0.7,0.95] [--pairs adjacent] [--repeat 3]

Not a test (pytest does not collect it). Generates close runs (one latent ranking per query,
each run a noisy copy), pools every run's top ``--pool``, judges a share of the pool at random,
then times, in one process, turn by turn (the median of ``--repeat`` turns is shown):

- **eval**: ``evaluate_runs`` of the 12 measures settle supports among the default scorecard
  (P@1,3,5,10, R@5,10,20, Success@5, RR, AP, nDCG@5,10);
- **settle**: ``Settlement(...)`` (read the runs: cells, current values, profiles) and
  ``comparisons()``: bounds, Monte Carlo draws (their number shown: fewer on a large open
  pool), weights and judge_more; the ratio to eval is the figure the budget is about;
- **queue**: ``Settlement(...).weights()``, what a judging queue refreshes (no draws).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ragjudge.metrics import Qrels, Run, evaluate_runs
from ragjudge.metrics.settle import Pool, Settlement

MEASURES = ["P@1", "P@3", "P@5", "P@10", "R@5", "R@10", "R@20", "Success@5", "RR", "AP", "nDCG@5",
            "nDCG@10"]


def collection(n_queries: int, n_runs: int, depth: int, seed: int = 1) -> tuple[list[Run], np.ndarray]:
    """Close runs over a universe of 3 x depth chunks per query, and every chunk's true grade."""
    rng = np.random.default_rng(seed)
    universe = 3 * depth
    qids = np.array([f"q{i:05d}" for i in range(n_queries)])
    runs = []
    for r in range(n_runs):
        score = -np.arange(universe, dtype=float)[None, :] + rng.normal(size=(n_queries, universe)) * depth * 0.08
        order = np.argsort(-score, axis=1)[:, :depth]
        chunks = np.char.add("c", order.ravel().astype(str))
        runs.append(Run(np.repeat(qids, depth), chunks, np.tile(-np.arange(depth, dtype=float), n_queries),
                        name=f"run{r}"))
    truth = rng.choice(4, size=(n_queries, universe), p=[0.55, 0.25, 0.12, 0.08])
    top = min(universe, 30)
    truth[:, :top] = rng.choice(4, size=(n_queries, top), p=[0.2, 0.3, 0.3, 0.2])
    return runs, truth


def judged_qrels(pool: Pool, truth: np.ndarray, share: float, seed: int = 2) -> Qrels:
    rng = np.random.default_rng(seed)
    keep = rng.random(len(pool)) < share
    q, c = pool.query_ids[keep], pool.chunk_ids[keep]
    qi = np.char.decode(q).astype("U").astype(object)
    rows = np.array([int(x[1:]) for x in qi], dtype=np.int64)
    cols = np.array([int(x[1:]) for x in np.char.decode(c).tolist()], dtype=np.int64)
    return Qrels(q, c, truth[rows, cols], top_grade=3)


def timed(work) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = work()
    return time.perf_counter() - t0, out


def one_turn(qrels: Qrels, runs: list[Run], pool: Pool, args: argparse.Namespace) -> tuple[dict, Settlement, list]:
    """One turn of every timing: eval, then settle phase by phase, then the queue alone."""
    times = {"eval": timed(lambda: evaluate_runs(qrels, runs, MEASURES))[0]}
    make = lambda: Settlement(qrels, runs, pool, MEASURES, top_grade=3, pairs=args.pairs,  # noqa: E731
                              samples=args.samples)
    times["read"], s = timed(make)
    times["bounds"], bounds = timed(s._settle_bounds)
    times["draws"], _ = timed(lambda: s._chances(bounds))
    times["queue"], _ = timed(s._queue)
    rest, comparisons = timed(s.comparisons)  # the draws again (not kept) and judge_more
    times["settle"] = times["read"] + times["bounds"] + times["queue"] + rest
    times["weights"], _ = timed(lambda: make().weights())
    return times, s, comparisons


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--pool", type=int, default=20)
    parser.add_argument("--judged", default="0.3,0.7,0.95")
    parser.add_argument("--pairs", default="adjacent", choices=["adjacent", "all"])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs, truth = collection(args.queries, args.runs, args.depth)
    pool = Pool.from_runs(runs, args.pool)
    print(f"{args.queries:,} queries x {args.runs} runs of depth {args.depth}; pool depth {args.pool}: "
          f"{len(pool):,} pairs; {len(MEASURES)} measures; pairs={args.pairs}; samples={args.samples}")
    print(f"{'judged':>7} {'eval':>7} | {'read':>6} {'bounds':>7} {'draws':>7} {'S':>4} {'queue':>6} "
          f"{'settle':>7} {'x eval':>7} | {'queue':>7} {'x eval':>7} | certain probable open")
    for share in (float(x) for x in args.judged.split(",")):
        qrels = judged_qrels(pool, truth, share)
        rows: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            times, s, comparisons = one_turn(qrels, runs, pool, args)
            for key, value in times.items():
                rows.setdefault(key, []).append(value)
        med = {k: statistics.median(v) for k, v in rows.items()}
        status = {k: sum(c.status == k for c in comparisons) for k in ("certain", "probable", "open")}
        print(f"{share:>7.0%} {med['eval']:>7.2f} | {med['read']:>6.2f} {med['bounds']:>7.2f} "
              f"{med['draws']:>7.2f} {s.samples_used:>4} {med['queue']:>6.2f} {med['settle']:>7.2f} "
              f"{med['settle'] / med['eval']:>7.1f} | {med['weights']:>7.2f} {med['weights'] / med['eval']:>7.1f} | "
              f"{status['certain']:>7} {status['probable']:>8} {status['open']:>4}")


if __name__ == "__main__":
    main()
