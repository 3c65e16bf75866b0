"""Benchmark: trec_eval's set measures, RBP and alpha-nDCG in ragjudge beside their references.

    PYTHONPATH=. python tests/metrics/bench_new_measures.py [--queries 2000] [--depth 100]

Not a test (pytest does not collect it). One generated collection (grades -1..3, 30 judged
chunks per query, a run of ``--depth`` chunks per query with distinct scores; 8 facets per
query with 40 chunk links), then per side the time from data in memory to per-query values,
and the largest difference from ragjudge's values:

- num_ret, num_rel, num_rel_ret, set_P, set_recall, set_F: pytrec_eval (trec_eval in C);
- RBP(p=0.8,rel=1): ir_measures' cwl_eval provider (Python);
- alpha_nDCG@10 and @20: pyndeval (TREC's ndeval in C, one query at a time).

ragjudge's time includes building its rank matrices (and aligning the facet links).
pyndeval's time and memory grow faster than the number of queries (measured here: 500
queries 1.4 s and 186 MB, 1,000 4.1 s and 603 MB, 2,000 21 s and 2.2 GB; 10,000 did not fit
in 24 GB), so keep ``--queries`` at a few thousand.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ragjudge.metrics import Qrels, Run, evaluate
from ragjudge.metrics.rag import FULL, ItemLabels


def collection(n_queries: int, depth: int, seed: int = 0) -> tuple[dict, dict, dict]:
    rng = np.random.default_rng(seed)
    qrels, run, facets = {}, {}, {}
    for q in range(n_queries):
        qid = f"q{q}"
        pool = [f"c{i}" for i in rng.choice(depth * 4, depth + 30, replace=False)]
        qrels[qid] = {c: int(rng.integers(-1, 4)) for c in pool[:30]}
        ranked = pool[10:10 + depth]
        run[qid] = {c: float(depth - i) for i, c in enumerate(ranked)}
        facets[qid] = [[pool[int(i)] for i in rng.choice(depth, 5, replace=False)]
                       for _ in range(8)]
    return qrels, run, facets


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--depth", type=int, default=100)
    args = parser.parse_args()
    qrels, run, facets = collection(args.queries, args.depth)
    Q, R = Qrels.from_dict(qrels), Run.from_dict(run)
    ids, items, chunks = [], [], []
    for q, covering in facets.items():
        for linked in covering:
            items += [len(ids)] * len(linked)
            chunks += linked
            ids.append(q)
    labels = ItemLabels(ids, None, support_items=items, support_chunks=chunks,
                        support_levels=[FULL] * len(items))
    rows = []

    sets = ["num_ret", "num_rel", "num_rel_ret", "set_P", "set_recall", "set_F"]
    t_ours, ours = timed(lambda: evaluate(Q, R, sets, queries="run").per_query())
    import pytrec_eval

    t_ref, ref = timed(lambda: pytrec_eval.RelevanceEvaluator(qrels, set(sets)).evaluate(run))
    diff = max(abs(ours[q][m] - ref[q][m]) for q in ref for m in sets)
    rows.append(("6 set measures", t_ours, "pytrec_eval", t_ref, diff))

    t_ours, ours = timed(lambda: evaluate(Q, R, ["RBP(p=0.8,rel=1)"], queries="run").per_query())
    import ir_measures

    q_list = [ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    r_list = [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    t_ref, ref_rbp = timed(lambda: {m.query_id: m.value for m in ir_measures.cwl_eval.iter_calc(
        [ir_measures.RBP(rel=1, p=0.8)], q_list, r_list)})
    diff = max(abs(ours[q]["RBP(p=0.8,rel=1)"] - ref_rbp[q]) for q in ref_rbp)
    rows.append(("RBP(p=0.8)", t_ours, "cwl_eval (ir_measures)", t_ref, diff))

    names = ["alpha_nDCG@10", "alpha_nDCG@20"]
    t_ours, ours = timed(lambda: evaluate(Q, R, names, queries="run",
                                          extras={"facets": labels}).per_query())
    import pyndeval

    sub = [pyndeval.SubtopicQrel(q, f"{q}-{f}", c, 1) for q, covering in facets.items()
           for f, linked in enumerate(covering) for c in linked]
    nd_run = [pyndeval.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    t_ref, ref_nd = timed(lambda: pyndeval.ndeval(sub, nd_run,
                                                  measures=["alpha-nDCG@10", "alpha-nDCG@20"]))
    diff = max(abs(ours[q][n] - ref_nd[q][n.replace("_", "-")]) for q in ref_nd for n in names)
    rows.append(("alpha_nDCG@10,@20", t_ours, "pyndeval (ndeval)", t_ref, diff))

    print(f"{args.queries} queries x {args.depth} ranked chunks")
    print(f"{'measures':<20} {'ragjudge':>9}  {'reference':<24} {'time':>8}  {'max |diff|':>10}")
    for what, mine, name, theirs, diff in rows:
        print(f"{what:<20} {mine:>8.3f}s  {name:<24} {theirs:>7.3f}s  {diff:>10.1e}")


if __name__ == "__main__":
    main()
