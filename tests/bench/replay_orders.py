"""Replays, in one process, of judging a public test collection's depth-20 pool in several queue
orders: how soon the run ranking is right. Not a test (pytest does not collect it).

    python tests/bench/replay_orders.py [--only cacm,npl,cisi,cran] [--heads 0,0.02,0.1,0.3]
        [--measures AP] [--step 100] [--upto 0.3] [--expected SAMPLES] [--collections DIR]
        [--source DIR]

The same collections, pool, steps and scorecard as ``bench_settle.py`` (built with
``collections.py`` when missing), without the commands around them, so that many orders can be
compared in minutes. Each step judges the next ``--step`` pairs (their official grade; a pair
the judgments do not list is 0) and ranks the runs by their current means (unjudged pairs not
relevant, as ``eval`` ranks them). The orders:

- **depth**: rounds of growing depth (1, 2, 3, 5, 10, 20), every query in each round;
- **head=S**: the settle order of :meth:`ragjudge.metrics.settle.Settlement.weights` with
  ``HEAD_SHARE = S`` (the heaviest share S of the open pairs first, by the best rank any run
  gives them; then the rest by weight); ``head=0`` is the weights alone. The order is weighed
  again every step, pairs of weight 0 follow in the depth order, as the judging queue does.

It prints, per collection and order, the mean over the steps up to ``--upto`` of the pool of
Kendall's tau between the current ranking and the fully judged pool's (averaged over the
measures), and the judged share where that tau first reaches 0.9. With ``--expected N`` the
runs are ranked instead by their expected final means under settle's grade model, over N draws
(slower: a minute or so per collection).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_settle import collections, official  # noqa: E402

from ragjudge.metrics import Qrels, Run  # noqa: E402
from ragjudge.metrics import settle as settle_module  # noqa: E402
from ragjudge.metrics.settle import Pool, Settlement  # noqa: E402
from ragjudge.services.labels.queue import depth_rounds  # noqa: E402
from ragjudge.services.scoring.files import DEFAULT_MEASURES  # noqa: E402
from ragjudge.services.scoring.settled import split_measures  # noqa: E402

POOL = 20


def kendall(now: np.ndarray, final: np.ndarray) -> float:
    """Kendall's tau over the pairs of runs the final ranking orders (a tie now counts 0)."""
    score = count = 0
    for i in range(len(now)):
        for k in range(i + 1, len(now)):
            truth = np.sign(final[i] - final[k]) if abs(final[i] - final[k]) > 1e-9 else 0
            if truth:
                score += truth * (np.sign(now[i] - now[k]) if abs(now[i] - now[k]) > 1e-9 else 0)
                count += 1
    return score / count if count else 1.0


class Collection:
    def __init__(self, summary: dict, measures: list[str], step: int) -> None:
        self.name, self.measures, self.step = summary["collection"], measures, step
        self.grades = official(summary)
        self.top = max(self.grades.values())
        self.runs = {n: Run.from_trec(path, name=n) for n, path in summary["runs"].items()}
        order_of = {}
        with open(summary["queries_file"]) as handle:
            for line in handle:
                order_of.setdefault(json.loads(line)["id"], len(order_of))
        best: dict[tuple[str, str], int] = {}
        for run in self.runs.values():
            for q, chunks in run.to_ranked().items():
                order_of.setdefault(q, len(order_of))
                for rank, c in enumerate(chunks[:POOL], start=1):
                    best[q, c] = min(best.get((q, c), rank), rank)
        self.pairs = list(best)
        self.pool = Pool.from_pairs([q for q, _ in self.pairs], [c for _, c in self.pairs])
        rounds = depth_rounds(POOL)
        self.depth_order = sorted(self.pairs, key=lambda p: (
            next(i for i, d in enumerate(rounds) if best[p] <= d), order_of[p[0]],
            hashlib.sha256(repr(p).encode()).digest()))
        self.final = self.means(self.pairs)

    def settlement(self, judged: list[tuple[str, str]], samples: int = 0) -> Settlement:
        if judged:
            qrels = Qrels.from_arrays([q for q, _ in judged], [c for _, c in judged],
                                      [self.grades.get(p, 0) for p in judged], top_grade=self.top)
        else:  # nothing judged yet: one placeholder that is no judgment
            qrels = Qrels.from_arrays(["-"], ["-"], [-1], top_grade=self.top)
        return Settlement(qrels, self.runs, self.pool, self.measures, top_grade=self.top,
                          samples=samples)

    def means(self, judged: list[tuple[str, str]], settlement: Settlement | None = None) -> np.ndarray:
        s = settlement or self.settlement(judged)
        return np.array([[s.mean(j, n) for n in s.names] for j in range(len(self.measures))])

    def replay(self, order: str, upto: float, samples: int = 0) -> list[tuple[float, float]]:
        """(judged share, mean tau) after each step until ``upto`` of the pool is judged; with
        ``samples``, the runs ranked by their expected final means under the grade model
        (:meth:`Settlement.expected`) instead of their current ones."""
        judged: list[tuple[str, str]] = []
        seen: set[tuple[str, str]] = set()
        curve = []
        while True:
            s = self.settlement(judged, samples)
            now = (np.array([[s.expected(j, n) for n in s.names] for j in range(len(self.measures))])
                   if samples and judged else self.means(judged, s))
            share = len(judged) / len(self.pairs)
            curve.append((share, float(np.mean([kendall(now[j], self.final[j])
                                                for j in range(len(self.measures))]))))
            if share >= upto or len(judged) == len(self.pairs):
                return curve
            if order == "depth":
                nxt = [p for p in self.depth_order if p not in seen][:self.step]
            else:
                settle_module.HEAD_SHARE = float(order.split("=")[1])
                heavy = [(q, c) for q, c, w in s.weights().ranked() if w > 0 and (q, c) not in seen]
                nxt = heavy[:self.step]
                if len(nxt) < self.step:
                    taken = set(nxt)
                    nxt += [p for p in self.depth_order if p not in seen and p not in taken][
                        :self.step - len(nxt)]
            seen.update(nxt)
            judged.extend(nxt)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="cacm,npl,cisi,cran")
    parser.add_argument("--heads", default="0,0.02,0.05,0.1,0.3",
                        help="HEAD_SHARE values to replay (0: the weights alone)")
    parser.add_argument("--measures", default="", help="M,M,...: default the scorecard's settleable")
    parser.add_argument("--step", type=int, default=100)
    parser.add_argument("--expected", type=int, default=0, metavar="SAMPLES",
                        help="rank the runs by their expected final means over this many draws")
    parser.add_argument("--upto", type=float, default=0.3)
    parser.add_argument("--collections", default="/tmp/ragjudge-bench/collections")
    parser.add_argument("--source", default="/work/collections")
    args = parser.parse_args()
    measures = split_measures(args.measures.split(",") if args.measures else list(DEFAULT_MEASURES))[0]
    orders = ["depth", *(f"head={h}" for h in args.heads.split(","))]
    print(f"mean tau over the steps up to {args.upto:.0%} of the pool (first share with tau >= 0.9); "
          f"{len(measures)} measures, {args.step} pairs a step")
    print(f"{'':<6} " + " ".join(f"{o:>16}" for o in orders))
    for summary in collections(Path(args.collections), args.only.split(","), Path(args.source)):
        coll = Collection(summary, measures, args.step)
        cells = []
        for order in orders:
            curve = coll.replay(order, args.upto, args.expected)
            early = [tau for share, tau in curve if share > 0]
            first = next((share for share, tau in curve if tau >= 0.9 - 1e-9), None)
            cells.append(f"{np.mean(early):.3f} ({'-' if first is None else f'{first:.0%}'})")
        print(f"{coll.name:<6} " + " ".join(f"{c:>16}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
