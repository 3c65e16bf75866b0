"""Benchmark: ``ragjudge eval --db PROJECT`` beside pytrec_eval on the project's exported files.

    python tests/bench/bench_db_eval.py [--db /tmp/rj-large/large.db] [--runs N] [--repeat 3]

Not a test (pytest does not collect it). ragjudge evaluates every run of the project (or the
first ``--runs N``, by name) against the project's gold qrels, straight from the database:
``ragjudge eval --db PROJECT --format json``. The reference is pytrec_eval's whole process on
the same qrels and runs exported once with ``ragjudge export qrels`` / ``ragjudge export run``
(kept beside the project in ``<db>.export/``): parse the qrels and every run file, evaluate,
average over the judged queries (trec_eval -c, ragjudge's default). Both sides compute the 13
measures of ragjudge's default scorecard that trec_eval has (every default but
ContextPrecision@5); ragjudge is timed with its full default scorecard too.

Each side is its own process, timed from start to exit (interpreter start, imports, reading,
evaluation, output), with its peak memory; the sides alternate ``--repeat`` times, so that
both see the same load on a shared machine. The means of the two sides are compared at the end.

The project: by default the large one of ``bench_live_eval.py`` (10,000 queries x 100 x 10
runs, 1.4 M labels), built once with fixtures/make_large.py and ``ragjudge import`` when
missing (several minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

OURS = ["P@1", "P@3", "P@5", "P@10", "R@5", "R@10", "R@20", "Success@5", "RR", "AP", "nDCG@5",
        "nDCG@10", "Rprec"]
TREC = {"P": "P.1,3,5,10", "recall": "recall.5,10,20", "success": "success.5",
        "recip_rank": "recip_rank", "map": "map", "ndcg_cut": "ndcg_cut.5,10", "Rprec": "Rprec"}
TREC_NAMES = ["P_1", "P_3", "P_5", "P_10", "recall_5", "recall_10", "recall_20", "success_5",
              "recip_rank", "map", "ndcg_cut_5", "ndcg_cut_10", "Rprec"]

PYTREC = r"""
import json, sys
import pytrec_eval
measures, names = json.loads(sys.argv[1]), json.loads(sys.argv[2])
qrels_path, *runs = sys.argv[3:]
with open(qrels_path) as f:
    qrels = pytrec_eval.parse_qrel(f)
evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(measures))
out = {}
for path in runs:
    with open(path) as f:
        run = pytrec_eval.parse_run(f)
    per_query = evaluator.evaluate(run)
    # -c: a judged query the run does not answer counts 0
    out[path] = {n: sum(v[n] for v in per_query.values()) / len(qrels) for n in names}
print(json.dumps(out))
"""


def count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(1 for _ in handle)


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak MB, standard output) of one process (its own peak, from wait4)."""
    out_path = Path(f"/tmp/bench-db-eval-{os.getpid()}.out")
    t0 = time.perf_counter()
    with open(out_path, "wb") as out, open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(cmd, stdout=out, stderr=devnull)
        _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = out_path.read_text()
    out_path.unlink()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:6])} ... failed (exit {proc.returncode}); run it by hand "
                         "to see why")
    return elapsed, usage.ru_maxrss / 1024, text


def build_project(db: Path) -> None:
    sys.path.insert(0, str(HERE))
    from bench_live_eval import build_large

    db.parent.mkdir(parents=True, exist_ok=True)
    print(f"generating and importing the project into {db} (minutes) ...", file=sys.stderr)
    build_large(db)


def export(db: Path, runs: list[str]) -> tuple[Path, list[Path]]:
    folder = Path(f"{db}.export")
    folder.mkdir(exist_ok=True)
    stamp = folder / "stamp"
    mtime = str(db.stat().st_mtime_ns)
    cli = [sys.executable, "-m", "ragjudge", "--db", str(db)]
    if not stamp.exists() or stamp.read_text() != mtime:
        for old in folder.glob("*"):
            old.unlink()
    qrels = folder / "gold.qrels"
    if not qrels.exists():
        subprocess.run([*cli, "export", "qrels", "-o", str(qrels), "-q"], check=True,
                       stderr=subprocess.DEVNULL)
    paths = []
    for name in runs:
        path = folder / f"{name}.trec"
        if not path.exists():
            subprocess.run([*cli, "export", "run", name, "-o", str(path), "-q"], check=True,
                           stderr=subprocess.DEVNULL)
        paths.append(path)
    stamp.write_text(mtime)
    return qrels, paths


def run_names(db: Path) -> list[str]:
    from ragjudge.services.runs.stored import project_run_names
    from ragjudge.services.project.database import Project

    project = Project.open(str(db))
    try:
        return project_run_names(project)
    finally:
        project.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path("/tmp/ragjudge-bench/live-large.db"))
    parser.add_argument("--runs", type=int, default=None, help="evaluate only the first N runs")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not args.db.exists():
        build_project(args.db)
    names = run_names(args.db)
    if args.runs:
        names = names[:args.runs]
    qrels, files = export(args.db, names)
    lines = sum(count_lines(path) for path in files)
    judgments = count_lines(qrels)
    print(f"{args.db}: {len(names)} runs, {lines:,} run lines, {judgments:,} gold judgments; "
          f"13 measures (ragjudge's default scorecard less ContextPrecision@5)")

    exe = str(Path(sys.executable).parent / "ragjudge")
    runs_args = [a for n in names for a in ("--run", n)]
    ours = [exe, "--db", str(args.db), "eval", *runs_args, "--format", "json", "-q"]
    sides = {
        "ragjudge eval --db": ours + [a for m in OURS for a in ("-m", m)],
        "pytrec_eval (files)": [sys.executable, "-c", PYTREC, json.dumps(list(TREC.values())),
                                json.dumps(TREC_NAMES), str(qrels), *map(str, files)],
        "ragjudge eval --db, 14 defaults": ours,
    }
    times: dict[str, list[float]] = {s: [] for s in sides}
    peaks: dict[str, float] = {}
    outputs: dict[str, str] = {}
    for _ in range(args.repeat):
        for side, cmd in sides.items():
            elapsed, rss, out = timed(cmd)
            times[side].append(elapsed)
            peaks[side] = max(peaks.get(side, 0.0), rss)
            outputs[side] = out
    base = statistics.median(times["pytrec_eval (files)"])
    print(f"{'side':<34}{'median s':>9}{'min s':>8}{'max s':>8}{'peak MB':>9}{'vs pytrec_eval':>16}")
    for side in sides:
        t = times[side]
        print(f"{side:<34}{statistics.median(t):>9.2f}{min(t):>8.2f}{max(t):>8.2f}"
              f"{peaks[side]:>9.0f}{statistics.median(t) / base:>15.2f}x")
    ours_means = json.loads(outputs["ragjudge eval --db"])["runs"]
    theirs = json.loads(outputs["pytrec_eval (files)"])
    worst = 0.0
    for name, path in zip(names, files):
        for ours_m, trec_m in zip(OURS, TREC_NAMES):
            worst = max(worst, abs(ours_means[name]["aggregate"][ours_m] - theirs[str(path)][trec_m]))
    print(f"max |ragjudge - pytrec_eval| over {len(names)} runs x 13 means: {worst:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
