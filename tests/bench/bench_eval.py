"""Benchmark: ragjudge against pytrec_eval, ranx and ir_measures on the same TREC files.

    python tests/bench/bench_eval.py --size small|large [--dir /tmp/ragjudge-bench] [--skip ranx]
                                     [--repeat N]

Not a test (pytest does not collect it). Generates qrels and a run (1,000 queries x 100 or
10,000 x 1,000; grades 0-3, 50 judged chunks per query), then times 12 measures
{P@1,3,5,10, R@5,10,100, AP, RR, nDCG@5,10, Rprec} on each side. Every side runs in its own
subprocess, which reports its phases and its peak RSS; "process" is the wall clock of the
whole subprocess (interpreter start, imports, parsing, evaluation). For ragjudge the kernel
is "from ready matrices to the 12 means"; for ranx it is its numba evaluate on built
Qrels/Run (cold = first call in the process, warm = second call).

"ragjudge-cli" is the command a user types, ``ragjudge eval --qrels Q --run R --format json``
with the 12 measures, timed from its start to its exit. ``--repeat N`` runs every side N
times, in turns, and shows the median run of each (for the small size, where a whole process
takes a fraction of a second and one busy moment of the machine would decide the row).

Every side runs with its modules' bytecode cached, as it is after ``pip install`` (pip
compiles it): pytrec_eval's, numpy's and ranx's come compiled in site-packages; ragjudge's,
an editable install in development, is compiled before the runs, and the sides run with
bytecode writing allowed even where the environment says otherwise (PYTHONDONTWRITEBYTECODE),
so that ragjudge is not timed compiling its own source at every start.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

OURS = ["P@1", "P@3", "P@5", "P@10", "R@5", "R@10", "R@100", "AP", "RR", "nDCG@5", "nDCG@10",
        "Rprec"]
TREC = {"P": "P.1,3,5,10", "recall": "recall.5,10,100", "map": "map", "recip_rank": "recip_rank",
        "ndcg_cut": "ndcg_cut.5,10", "Rprec": "Rprec"}
RANX = ["precision@1", "precision@3", "precision@5", "precision@10", "recall@5", "recall@10",
        "recall@100", "map", "mrr", "ndcg@5", "ndcg@10", "r-precision"]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --------------------------------------------------------------------------- workers
def work_ragjudge(qrels_path: str, run_path: str) -> dict:
    t0 = time.perf_counter()
    from ragjudge.metrics import Qrels, Run, build_context, parse_measure

    t1 = time.perf_counter()
    qrels = Qrels.from_trec(qrels_path)
    run = Run.from_trec(run_path)
    t2 = time.perf_counter()
    measures = [parse_measure(m) for m in OURS]
    ctx = build_context(qrels, run)
    t3 = time.perf_counter()
    means = [float(m(ctx).mean()) for m in measures]
    t4 = time.perf_counter()
    return {"import": t1 - t0, "parse": t2 - t1, "build": t3 - t2, "kernel": t4 - t3,
            "means": dict(zip(OURS, means)), "rss_mb": _rss_mb()}


def work_cli(qrels_path: str, run_path: str) -> dict:
    cmd = [str(Path(sys.executable).parent / "ragjudge"), "eval", "--qrels", qrels_path,
           "--run", run_path, "--format", "json"]
    for m in OURS:
        cmd += ["-m", m]
    cpu = _children_cpu()
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    elapsed = time.perf_counter() - t0
    if out.returncode != 0:
        return {"error": (out.stderr or out.stdout).strip()[:300]}
    data = json.loads(out.stdout)
    run = next(iter(data["runs"].values()))
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"process_inner": elapsed, "cpu_inner": _children_cpu() - cpu,
            "means": run["aggregate"], "rss_mb": rss}


def _children_cpu() -> float:
    """Processor seconds (user + system) of the child processes waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def work_pytrec(qrels_path: str, run_path: str) -> dict:
    t0 = time.perf_counter()
    import pytrec_eval

    t1 = time.perf_counter()
    with open(qrels_path) as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    t2 = time.perf_counter()
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(TREC.values()))
    per_query = evaluator.evaluate(run)
    names = ["P_1", "P_3", "P_5", "P_10", "recall_5", "recall_10", "recall_100", "map",
             "recip_rank", "ndcg_cut_5", "ndcg_cut_10", "Rprec"]
    # -c averaging, as ragjudge's default: judged queries missing from the run count 0
    means = {n: sum(v[n] for v in per_query.values()) / len(qrels) for n in names}
    t3 = time.perf_counter()
    return {"import": t1 - t0, "parse": t2 - t1, "kernel": t3 - t2,
            "means": dict(zip(OURS, means.values())), "rss_mb": _rss_mb()}


def work_ranx(qrels_path: str, run_path: str) -> dict:
    t0 = time.perf_counter()
    import ranx

    t1 = time.perf_counter()
    qrels = ranx.Qrels.from_file(qrels_path, kind="trec")
    run = ranx.Run.from_file(run_path, kind="trec")
    t2 = time.perf_counter()
    scores = ranx.evaluate(qrels, run, RANX, make_comparable=True)
    t3 = time.perf_counter()
    scores = ranx.evaluate(qrels, run, RANX, make_comparable=True)
    t4 = time.perf_counter()
    return {"import": t1 - t0, "parse": t2 - t1, "kernel_cold": t3 - t2, "kernel": t4 - t3,
            "means": dict(zip(OURS, (float(scores[m]) for m in RANX))), "rss_mb": _rss_mb()}


def work_ir_measures(qrels_path: str, run_path: str) -> dict:
    t0 = time.perf_counter()
    import ir_measures
    from ir_measures import AP, RR, P, R, Rprec, nDCG

    t1 = time.perf_counter()
    qrels = list(ir_measures.read_trec_qrels(qrels_path))
    run = list(ir_measures.read_trec_run(run_path))
    t2 = time.perf_counter()
    measures = [P @ 1, P @ 3, P @ 5, P @ 10, R @ 5, R @ 10, R @ 100, AP, RR, nDCG @ 5,
                nDCG @ 10, Rprec]
    agg = ir_measures.calc_aggregate(measures, qrels, run)
    t3 = time.perf_counter()
    return {"import": t1 - t0, "parse": t2 - t1, "kernel": t3 - t2,
            "means": dict(zip(OURS, (float(agg[m]) for m in measures))), "rss_mb": _rss_mb()}


WORKERS = {"ragjudge": work_ragjudge, "ragjudge-cli": work_cli, "pytrec_eval": work_pytrec,
           "ranx": work_ranx, "ir_measures": work_ir_measures}


# --------------------------------------------------------------------------- driver
#: the sides' environment: bytecode written and read, as after an install (see the docstring)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def compile_ragjudge() -> None:
    """Compile ragjudge's modules (an installed package's are compiled by pip)."""
    import compileall

    import ragjudge

    compileall.compile_dir(str(Path(ragjudge.__file__).parent), quiet=1)


def run_side(side: str, qrels: Path, run: Path) -> dict:
    cpu = _children_cpu()
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--worker", side, "--qrels", str(qrels),
                          "--run", str(run)], capture_output=True, text=True, env=ENV)
    elapsed = time.perf_counter() - t0
    cpu = _children_cpu() - cpu
    if out.returncode != 0:
        return {"side": side, "error": out.stderr.strip().splitlines()[-1:] or ["failed"]}
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["side"] = side
    result["process"] = result.pop("process_inner", elapsed) if side == "ragjudge-cli" else elapsed
    result["cpu"] = result.pop("cpu_inner", cpu) if side == "ragjudge-cli" else cpu
    return result


def median_run(results: list[dict]) -> dict:
    """The run of median whole-process time (an error if any run failed)."""
    failed = [r for r in results if "error" in r]
    if failed:
        return failed[0]
    ordered = sorted(results, key=lambda r: r["process"])
    return ordered[(len(ordered) - 1) // 2]


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:8.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=["small", "large"], default="small")
    parser.add_argument("--dir", default="/tmp/ragjudge-bench")
    parser.add_argument("--skip", action="append", default=[], help="a side to leave out")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each side (the median is shown)")
    parser.add_argument("--worker")
    parser.add_argument("--qrels")
    parser.add_argument("--run")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(WORKERS[args.worker](args.qrels, args.run)))
        return
    from _gen import SIZES, generate

    qrels, run = generate(args.size, Path(args.dir))
    nq, depth = SIZES[args.size]
    print(f"{args.size}: {nq:,} queries x {depth:,} = {nq * depth:,} run lines "
          f"({os.path.getsize(run) / 1e6:.0f} MB), {os.path.getsize(qrels) / 1e6:.1f} MB qrels; "
          f"12 measures" + (f"; median of {args.repeat} runs per side" if args.repeat > 1 else ""))
    compile_ragjudge()
    load = os.getloadavg()[0]
    sides = [side for side in WORKERS if side not in args.skip]
    runs: dict[str, list[dict]] = {side: [] for side in sides}
    for turn in range(max(1, args.repeat)):
        for side in sides:
            print(f"  running {side} ({turn + 1}/{max(1, args.repeat)}) ...", file=sys.stderr, flush=True)
            runs[side].append(run_side(side, qrels, run))
    print(f"{os.cpu_count()} cores, load average {load:.1f} before, {os.getloadavg()[0]:.1f} after; "
          "processor s: user + system of the median run, every thread")
    rows = [median_run(runs[side]) for side in sides]
    base = next((r for r in rows if r["side"] == "pytrec_eval" and "error" not in r), None)
    ours = next((r for r in rows if r["side"] == "ragjudge" and "error" not in r), None)
    head = (f"{'side':<13}{'process s':>10}{'parse s':>9}{'kernel s':>9}{'cold s':>9}"
            f"{'peak MB':>9}{'process vs pytrec':>19}{'kernel vs ragjudge':>20}"
            f"{'processor s':>13}{'vs pytrec':>11}")
    print(head)
    print("-" * len(head))
    for r in rows:
        if "error" in r:
            print(f"{r['side']:<13} error: {r['error']}")
            continue
        ratio = f"{r['process'] / base['process']:.2f}x" if base else "-"
        kratio = (f"{r['kernel'] / ours['kernel']:.1f}x"
                  if ours and r.get("kernel") and ours["kernel"] > 0 else "-")
        kernel = r.get("kernel")
        if r["side"] == "ragjudge":
            kernel = r["kernel"]
        cpu_ratio = f"{r['cpu'] / base['cpu']:.2f}x" if base and base["cpu"] > 0 else "-"
        print(f"{r['side']:<13}{fmt(r['process']):>10}{fmt(r.get('parse')):>9}{fmt(kernel):>9}"
              f"{fmt(r.get('kernel_cold')):>9}{r['rss_mb']:>9.0f}{ratio:>19}{kratio:>20}"
              f"{fmt(r['cpu']):>13}{cpu_ratio:>11}")
    if ours:
        print(f"ragjudge phases: import {ours['import']:.2f}s, parse {ours['parse']:.2f}s, "
              f"matrices {ours['build']:.2f}s, kernel {ours['kernel']:.3f}s")
    # the sides must agree on what they compute (ranx differs on purpose in a few defaults)
    if base and ours:
        worst = max(abs(ours["means"][m] - base["means"][m]) for m in OURS)
        print(f"max |ragjudge - pytrec_eval| over the 12 means: {worst:.2e}")


if __name__ == "__main__":
    main()
