"""Benchmark: judging a public test collection in ragjudge's own order, and how soon ``ragjudge
settled`` knows the verdict; and ``settled``'s speed beside ``eval --db`` on 10,000 queries.

    python tests/bench/bench_settle.py [--collections DIR] [--only cacm,cisi] [--pool 20]
        [--step 100] [--orders depth,settle] [--work DIR] [--large DB] [--repeat 3]
        [--skip-replay] [--skip-speed]

Not a test (pytest does not collect it).

**Replay.** Per collection (its official judgments and ten runs built by
``tests/bench/collections.py``: BM25 with three settings and a stemmed one, TF-IDF cosine, query
likelihood with Dirichlet and Jelinek-Mercer smoothing, a stemmed one, and two fusions; built
from ``/work/collections`` into ``--collections`` when missing) a project is made with the
``ragjudge`` command (``init``, ``import chunks``, ``queries``, each ``run``), then, once per
queue order:

1. ``ragjudge queue --annotator official --order ORDER --depth POOL --limit STEP --format json``
   lists the next STEP pairs the product would give (nothing recorded);
2. their official grades are imported as that annotator's labels (``ragjudge import qrels``; a
   pair the official judgments do not list is judged 0);
3. ``ragjudge settled --depth POOL --format json`` is recorded;

until the queue is empty, every pool pair judged: that last state is the truth the claims are
checked against (the claims are about the pool's unjudged pairs; chunks outside the pool stay
not relevant, as trec_eval counts them). Beside it, the order under every official judgment
(evaluate with the whole qrels, relevant documents outside the depth-POOL pool included): the
measures that read the number of relevant documents (R@k, AP, nDCG) can differ there, which no
judging of the pool can foresee. The commands run in this process (``ragjudge.cli.main``, the
same code path as the shell's, without the interpreter's start each time).

It prints, per collection and order: **wrong certain** (certain or tied claims whose order is
not the truth's, summed over every step and comparison; must be 0), **probable held** (probable
claims whose current order is the truth's: target >= 95%), **settled** (the judged share from
which no comparison is open: ``settled`` exits 0), **cert@25%** (the share of comparisons
certain once a quarter of the pool is judged), **tau<=30%** (the mean of the tau below over the
steps with up to 30% of the pool judged: how right the ranking is early, which one step moves
less than where tau crosses 0.9) and **tau >= 0.9** (the judged share of the
pool where Kendall's tau between the runs ranked now and ranked by the truth first reaches 0.9,
and the share from which it stays there: for MAP, nDCG@10, P@10, and the mean tau over every
measure settled; the runs ranked by their current means, unjudged pairs not relevant, as
``eval`` ranks them); target: <= 25% of the pool, and the settle order sooner than the depth
order.

**Speed.** ``ragjudge --db PROJECT eval --format json`` and ``ragjudge --db PROJECT settled
--format json`` as processes, alternating ``--repeat`` times (start to exit: wall and processor
time, user + system, side by side, since a shared machine's load moves the wall time; peak
memory; the load average before and after), on
the 10,000-query project of ``bench_live_eval.py`` (10 runs of depth 100, 3 annotators, 1.4 M
labels; built when missing, several minutes): with the project's gold (the median of the three,
97% of the depth-10 pool judged) and with one annotator's grades (``--rule
annotator:annotator1``, 70% judged: more open pairs to bound and draw), every pair of runs
(``settled``'s default, 45 pairs) and each run with the next (``--pairs adjacent``, 9). Target:
settled <= 2 x eval.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

ANNOTATOR = "official"
EPS = 1e-9
TAU = 0.9
TAU_MEASURES = ("AP", "nDCG@10", "P@10")


# -- the command, in this process -----------------------------------------------------------


def ragjudge(*args: str, ok: tuple[int, ...] = (0,)) -> str:
    """``ragjudge ARGS`` through :func:`ragjudge.cli.main`; its standard output."""
    from ragjudge.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    if code not in ok:
        raise SystemExit(f"ragjudge {' '.join(args)} exited {code}: {err.getvalue().strip()}")
    return out.getvalue()


# -- the collections and their projects -----------------------------------------------------


def collections(folder: Path, only: list[str], source: Path) -> list[dict]:
    """Each wanted collection's summary (paths of its qrels, chunks, queries and runs), built
    with ``collections.py`` from ``source`` when missing."""
    missing = [name for name in only if not (folder / name / "summary.json").is_file()]
    if missing:
        print(f"building {', '.join(missing)} from {source} into {folder} ...", file=sys.stderr)
        subprocess.run([sys.executable, str(HERE / "collections.py"), str(source), "--out",
                        str(folder), "--only", ",".join(missing)], check=True,
                       stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return [json.loads((folder / name / "summary.json").read_text()) for name in only]


def top_grade(qrels_file: Path) -> int:
    with qrels_file.open() as handle:
        return max(int(line.split()[3]) for line in handle if line.strip())


def base_project(summary: dict, work: Path) -> Path:
    """The collection's project without labels (built once): chunks, queries, the runs."""
    db = work / f"{summary['collection']}.db"
    if db.exists():
        return db
    tmp = work / f"{summary['collection']}.building.db"
    tmp.unlink(missing_ok=True)
    top = top_grade(Path(summary["qrels_file"]))
    scale = "binary" if top == 1 else f"0-{top}"
    ragjudge("--db", str(tmp), "init", "--scale", scale, "--name", summary["collection"])
    ragjudge("--db", str(tmp), "import", "chunks", summary["chunks_file"], "-q")
    ragjudge("--db", str(tmp), "import", "queries", summary["queries_file"], "-q")
    for name, path in summary["runs"].items():
        ragjudge("--db", str(tmp), "import", "run", path, "--name", name, "-q")
    os.replace(tmp, db)
    return db


def official(summary: dict) -> dict[tuple[str, str], int]:
    grades = {}
    with open(summary["qrels_file"]) as handle:
        for line in handle:
            q, _, d, g = line.split()
            grades[q, d] = int(g)
    return grades


def official_order(summary: dict, measures: list[str]) -> dict[tuple[str, str, str], float]:
    """(measure, a, b) -> mean difference under every official judgment (the runs at their
    full depth, the whole qrels)."""
    from ragjudge.metrics import Qrels, Run, evaluate_runs

    qrels = Qrels.from_trec(summary["qrels_file"])
    runs = [Run.from_trec(path, name=name) for name, path in summary["runs"].items()]
    means = {n: r.aggregate() for n, r in evaluate_runs(qrels, runs, measures).items()}
    return {(m, a, b): means[a][m] - means[b][m] for m in measures for a in means for b in means
            if a != b}


# -- one replay -------------------------------------------------------------------------------


def replay(db: Path, grades: dict[tuple[str, str], int], order: str, args: argparse.Namespace) -> list[dict]:
    """Judge the whole pool in ``order``, ``args.step`` pairs at a time; ``settled`` after each
    step (and before the first)."""
    steps = []
    labels = db.with_suffix(".step.qrels")
    while True:
        started = time.perf_counter()
        report = json.loads(ragjudge("--db", str(db), "settled", "--depth", str(args.pool),
                                     *measure_options(args), "--format", "json", ok=(0, 1)))
        report["seconds"] = time.perf_counter() - started
        steps.append(report)
        listed = json.loads(ragjudge("--db", str(db), "queue", "--annotator", ANNOTATOR, "--order",
                                     order, "--depth", str(args.pool), "--limit", str(args.step),
                                     "--format", "json"))["pairs"]
        if not listed:
            return steps
        with labels.open("w") as out:
            for pair in listed:
                q, c = pair["query_id"], pair["chunk_id"]
                out.write(f"{q} 0 {c} {grades.get((q, c), 0)}\n")
        ragjudge("--db", str(db), "import", "qrels", str(labels), "--annotator", ANNOTATOR, "-q")
        if args.progress:
            print(f"  {order}: {report['judged_pairs']:,}/{report['pool_pairs']:,} judged, "
                  f"{report['counts']}", file=sys.stderr)


def measure_options(args: argparse.Namespace) -> list[str]:
    """``-m`` for each of ``--measures`` (none: ``settled``'s default, the scorecard's)."""
    return [opt for name in args.measures.split(",") if name for opt in ("-m", name)]


def screen_measures(db: Path, measures: str) -> None:
    """Make ``measures`` the evaluation screen's, which the settle order weighs (a lead's
    setting; the benchmark's project has no roles)."""
    from ragjudge.services.project.database import open_project
    from ragjudge.services.scoring.live import MEASURES_SETTING

    project = open_project(str(db))
    try:
        project.set_settings({MEASURES_SETTING: measures.split(",")})
    finally:
        project.close()


def certain_at(steps: list[dict], share: float) -> float:
    """The share of comparisons certain (or tied) at the first step with ``share`` of the pool
    judged."""
    for report in steps:
        if report["judged_pairs"] >= share * report["pool_pairs"]:
            counts = report["counts"]
            return (counts["certain"] + counts.get("tied", 0)) / max(sum(counts.values()), 1)
    return 1.0


def sign(x: float) -> int:
    return 0 if abs(x) <= EPS else (1 if x > 0 else -1)


def check(steps: list[dict], truth: dict[tuple[str, str, str], float]) -> dict:
    """Wrong certain claims, probable claims held, and the tau curve, against ``truth``."""
    wrong = probable = held = 0
    for report in steps:
        for c in report["comparisons"]:
            final = sign(truth[c["measure"], c["a"], c["b"]])
            if c["status"] in ("certain", "tied"):
                # certain: the sign of its bounds; tied: 0
                wrong += sign(c["low"] if c["low"] > EPS else c["high"]) != final
            elif c["status"] == "probable":
                probable += 1
                held += sign(c["difference"]) == final
    return {"wrong": wrong, "probable": probable, "held": held}


def taus(report: dict, truth: dict[tuple[str, str, str], float]) -> dict[str, float]:
    """Kendall's tau per measure between the runs ranked now and by ``truth``, from every pair's
    difference (a pair the truth ties is left out; one tied now counts 0)."""
    score: dict[str, float] = {}
    count: dict[str, int] = {}
    for c in report["comparisons"]:
        final = sign(truth[c["measure"], c["a"], c["b"]])
        if final == 0:
            continue
        score[c["measure"]] = score.get(c["measure"], 0.0) + sign(c["difference"]) * final
        count[c["measure"]] = count.get(c["measure"], 0) + 1
    return {m: score[m] / count[m] for m in count}


def tau_curve(steps: list[dict], truth: dict, measure: str | None) -> list[tuple[float, float]]:
    """(judged share, tau) after each step: of ``measure``, or the mean over the measures."""
    curve = []
    for report in steps:
        tau = taus(report, truth)
        value = tau.get(measure, 1.0) if measure else (sum(tau.values()) / len(tau) if tau else 1.0)
        curve.append((report["judged_pairs"] / max(report["pool_pairs"], 1), value))
    return curve


def reached(curve: list[tuple[float, float]]) -> tuple[float, float]:
    """The judged share where tau first reaches TAU, and the one from which it stays there."""
    first = next(share for share, tau in curve if tau >= TAU - EPS)
    stays = 1.0
    for share, tau in reversed(curve):
        if tau < TAU - EPS:
            break
        stays = share
    return first, stays


def early_tau(steps: list[dict], truth: dict, measure: str | None, upto: float = 0.3) -> float:
    """The mean tau over the steps with at most ``upto`` of the pool judged (and more than none):
    how right the ranking is early on, less at the mercy of one step than where tau crosses 0.9."""
    values = [tau for share, tau in tau_curve(steps, truth, measure) if 0 < share <= upto + EPS]
    return sum(values) / len(values) if values else float("nan")


def all_settled(steps: list[dict]) -> float:
    """The judged share from which no comparison is open (what ``settled`` exits 0 on)."""
    share = 1.0
    for report in reversed(steps):
        if report["counts"]["open"]:
            break
        share = report["judged_pairs"] / max(report["pool_pairs"], 1)
    return share


def final_truth(steps: list[dict]) -> dict[tuple[str, str, str], float]:
    last = steps[-1]
    if last["judged_pairs"] != last["pool_pairs"]:
        raise SystemExit(f"the replay ended with {last['judged_pairs']:,} of {last['pool_pairs']:,} "
                         "pool pairs judged")
    truth = {}
    for c in last["comparisons"]:
        truth[c["measure"], c["a"], c["b"]] = c["difference"]
        truth[c["measure"], c["b"], c["a"]] = -c["difference"]
    return truth


def run_replays(args: argparse.Namespace) -> None:
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    orders = args.orders.split(",")
    found = collections(Path(args.collections), args.only.split(","), Path(args.source))
    print(f"Replay: pool = every run's top {args.pool}; {args.step} pairs a step; orders: "
          f"{', '.join(orders)}; unlisted pairs judged 0")
    header = (f"{'':<7} {'order':<7} {'pool':>6} {'steps':>5} {'s/step':>6} | {'wrong':>5} "
              f"{'probable held':>17} | {'wrong*':>6} {'held*':>6} | {'settled':>7} {'cert@25%':>8} {'tau<=30%':>8} | tau >= 0.9 "
              "(first/stays): " + " ".join(f"{m:>9}" for m in TAU_MEASURES) + f" {'mean':>9}")
    print(header)
    print("-" * len(header))
    per_measure: dict[tuple[str, str], dict[str, float]] = {}
    for summary in found:
        base = base_project(summary, work)
        grades = official(summary)
        for order in orders:
            db = work / f"{summary['collection']}-{order}.db"
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
            shutil.copyfile(base, db)
            if args.measures:
                screen_measures(db, args.measures)
            steps = replay(db, grades, order, args)
            truth = final_truth(steps)
            everything = official_order(summary, steps[-1]["measures"])
            ours, theirs = check(steps, truth), check(steps, everything)
            held = f"{ours['held']:,}/{ours['probable']:,} {ours['held'] / max(ours['probable'], 1):>5.1%}"
            held_all = f"{theirs['held'] / max(theirs['probable'], 1):.1%}"
            shown = set(steps[-1]["measures"])
            reach = [reached(tau_curve(steps, truth, m)) if m is None or m in shown else None
                     for m in (*TAU_MEASURES, None)]
            print(f"{summary['collection']:<7} {order:<7} {steps[-1]['pool_pairs']:>6,} "
                  f"{len(steps) - 1:>5} {statistics.mean(s['seconds'] for s in steps):>6.2f} | "
                  f"{ours['wrong']:>5} {held:>17} | {theirs['wrong']:>6} {held_all:>6} | "
                  f"{all_settled(steps):>7.0%} {certain_at(steps, 0.25):>8.0%} "
                  f"{early_tau(steps, truth, None):>8.3f} | {'':<16}"
                  + " ".join(f"{r[0]:>4.0%}/{r[1]:<4.0%}" if r else f"{'-':^9}" for r in reach), flush=True)
            per_measure[summary["collection"], order] = {
                m: reached(tau_curve(steps, truth, m))[0] for m in steps[-1]["measures"]}
            if args.keep:
                (work / f"{summary['collection']}-{order}.json").write_text(json.dumps(steps))
    print("wrong: certain (or tied) claims whose order is not the fully judged pool's, over every "
          "step and comparison; probable held: probable claims whose current order is the fully "
          "judged pool's; * the same against every official judgment (relevant documents outside "
          "the pool counted); settled: the judged share from which no comparison is open (settled "
          "exits 0); cert@25%: the share of comparisons certain (or tied) once a quarter of the pool is judged; tau<=30%: the mean tau (over the measures) of the steps with up to 30% of the pool judged; tau >= 0.9: the judged share of the pool where Kendall's tau of the run "
          "ranking (current means) against the fully judged pool's first reaches 0.9, and from "
          "which it stays there.")
    print_per_measure(per_measure, orders)


def print_per_measure(per_measure: dict[tuple[str, str], dict[str, float]], orders: list[str]) -> None:
    """Where tau first reaches 0.9, measure by measure, and per collection how often the settle
    order gets there before, with or after depth rounds."""
    if not per_measure:
        return
    measures = list(next(iter(per_measure.values())))
    print("\ntau >= 0.9 first reached, measure by measure (the judged share of the pool):")
    print(f"{'':<7} {'order':<7} " + " ".join(f"{m:>9}" for m in measures))
    for (coll, order), first in per_measure.items():
        print(f"{coll:<7} {order:<7} " + " ".join(f"{first.get(m, 1.0):>9.0%}" for m in measures))
    if "depth" in orders and "settle" in orders:
        for coll in dict.fromkeys(c for c, _ in per_measure):
            depth, settle = per_measure.get((coll, "depth")), per_measure.get((coll, "settle"))
            if depth is None or settle is None:
                continue
            before = sum(settle[m] < depth[m] - EPS for m in measures)
            after = sum(settle[m] > depth[m] + EPS for m in measures)
            print(f"{coll}: the settle order first, on {before} of {len(measures)} measures; "
                  f"the same step on {len(measures) - before - after}; later on {after}")


# -- speed --------------------------------------------------------------------------------------


def timed(cmd: list[str]) -> tuple[float, float, float, int]:
    """(wall seconds, processor seconds (user + system), peak MB, exit code) of one process."""
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(cmd, stdout=devnull, stderr=devnull)
        _, status, usage = os.wait4(proc.pid, 0)
    return (time.perf_counter() - t0, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
            os.waitstatus_to_exitcode(status))


def run_speed(args: argparse.Namespace) -> None:
    large = Path(args.large)
    if not large.exists():
        sys.path.insert(0, str(HERE))
        from bench_live_eval import build_large

        large.parent.mkdir(parents=True, exist_ok=True)
        print(f"generating and importing the 10,000-query project into {large} (minutes) ...",
              file=sys.stderr)
        build_large(large)
    cli = [sys.executable, "-m", "ragjudge", "--db", str(large)]
    print(f"\nSpeed on {large} (10,000 queries x 10 runs of depth 100), processes alternating, "
          f"{args.repeat} times; median wall seconds / processor seconds (user + system) (peak MB); "
          f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'gold':<28} {'eval --db':>22} {'settled':>22} {'x eval (wall/cpu)':>18}  settled's verdict")
    one = ["--rule", "annotator:annotator1"]
    for label, extra, more in (("median of 3 annotators", [], []), ("annotator1 alone", one, []),
                               ("annotator1, --pairs adjacent", one, ["--pairs", "adjacent"])):
        took: dict[str, list[tuple[float, float, float, int]]] = {"eval": [], "settled": []}
        for _ in range(args.repeat):
            took["eval"].append(timed([*cli, "eval", "--format", "json", *extra]))
            took["settled"].append(timed([*cli, "settled", "--format", "json", *extra, *more]))
        wall = {k: statistics.median(t[0] for t in v) for k, v in took.items()}
        cpu = {k: statistics.median(t[1] for t in v) for k, v in took.items()}
        mem = {k: max(t[2] for t in v) for k, v in took.items()}
        code = took["settled"][-1][3]
        verdict = {0: "every comparison settled (exit 0)", 1: "some open (exit 1)"}.get(code, f"exit {code}")
        cell = {k: f"{wall[k]:.1f} / {cpu[k]:.1f} ({mem[k]:.0f})" for k in took}
        print(f"{label:<28} {cell['eval']:>22} {cell['settled']:>22} "
              f"{wall['settled'] / wall['eval']:>8.2f} / {cpu['settled'] / cpu['eval']:.2f}  {verdict}",
              flush=True)
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", default="/tmp/ragjudge-bench/collections",
                        help="collections.py's output folder (built here when missing)")
    parser.add_argument("--source", default="/work/collections",
                        help="the raw collections (cacm/, cisi/, ...) to build from")
    parser.add_argument("--only", default="cacm,cisi")
    parser.add_argument("--pool", type=int, default=20, help="pool depth")
    parser.add_argument("--step", type=int, default=100, help="pairs judged a step")
    parser.add_argument("--orders", default="depth,settle")
    parser.add_argument("--work", default="/tmp/ragjudge-bench/settle")
    parser.add_argument("--large", default="/tmp/ragjudge-bench/live-large.db")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-replay", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--measures", default="",
                        help="M,M,...: the evaluation screen's measures (what the settle order "
                             "weighs) and settled's -m; default the scorecard's")
    parser.add_argument("--keep", action="store_true", help="keep every step's settled JSON in --work")
    parser.add_argument("--progress", action="store_true", help="a line on stderr per step")
    args = parser.parse_args()
    if not args.skip_replay:
        run_replays(args)
    if not args.skip_speed:
        run_speed(args)


if __name__ == "__main__":
    main()
