"""Benchmark of the live evaluation screen (not a pytest test): opening it, a full
recomputation, a label written -> the screen's numbers updated, the details pass and everything
on screen; on the demo project and on a generated project of 10,000 queries x 100 depth x 10
runs (1.4 M labels), beside pytrec_eval on the same project's exported qrels and runs, and
beside another checkout of ragjudge (``--before``: the code before a change).

    python tests/bench/bench_live_eval.py [--labels 40] [--large DB] [--skip-large]
        [--skip-demo] [--repeat 3] [--before DIR]

``--before DIR``: a folder holding another version's ``ragjudge`` package (for instance
``git archive COMMIT ragjudge | tar -x -C DIR``). Each measurement runs in a process of its own,
this tree's and DIR's taking turns (which goes first alternates), each on a fresh copy of the
project, --repeat times; the figures are the medians, with the load average (1 minute) read
before and after each measurement. The machine is shared: only figures from one run, side by
side, compare.

The large project is generated once with fixtures/make_large.py and imported with the ragjudge
command (several minutes), then kept at --large (default /tmp/ragjudge-bench/live-large.db);
its gold qrels and runs are exported once beside it (``<db>.export/``) for pytrec_eval.

It reports:
In the app, each time from the screen's start is given with the processor time the process
spent meanwhile (user + system, every thread: the app's, the engine's workers', SQLite's).

- open: from the screen's start to its first numbers (queries, runs and labels read, the gold
  evaluated for every run; on a large project the annotators' views, for the ranges, follow),
  in the app; and the engine alone to everything evaluated;
- everything on screen: from the screen's start to the slower numbers shown too (bootstrap
  intervals, agreement, pool coverage, what the gold is made of: the first details pass);
- the details pass alone, as the screen runs it (the engine's details, and the gold's
  composition where the details do not carry it: before, the screen asked gold() for it);
- full recomputation: every view evaluated again from the engine's copy of the labels (runs
  in memory), best of 3;
- compute per label: the engine's time to take a label event in (read the touched queries'
  labels, rebuild their gold grades, re-evaluate them for every run and view, update the sums),
  in the app and alone;
- on screen: from the label's commit to the message handler having put the new numbers in the
  widgets (includes waiting for the next poll, POLL_SECONDS).

Beside them, pytrec_eval on the exported gold qrels and the 10 runs, the shown measures that
trec_eval has: its whole process (parse the files, evaluate, average), its evaluation alone
(the files already parsed), and one query of the 10 runs (an evaluator made for that query's
qrels, then the 10 rankings), which is what a new label asks for. The screen evaluates more:
4 qrels (the gold and each of 3 annotators') x 10 runs, 46 measures on the gold (the shown
ones, Judged@10, the nDCG@1-20 curve and the 11-point precision-recall curve), 14 on the others.
Targets: open < 3 s, full recomputation < 1 s, compute per label < 5 ms, everything on screen
< 5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]



def pick_pair(engine, rnd: random.Random, names: list, top: int) -> tuple[str, list[str]] | None:
    """A random query and the first ``top`` chunks a random run ranks for it (None when that
    run does not answer the query)."""
    query = rnd.choice(engine.query_ids)
    run = engine.runs[rnd.choice(names)]
    r = engine.run_rows[run.name][engine.row[query]]
    if r < 0:
        return None
    from ragjudge.metrics import _keys

    return query, _keys.decode(run.chunk_ids[run.offsets[r]:min(run.offsets[r] + top, run.offsets[r + 1])])


def build_large(db: Path) -> None:
    folder = db.parent / "live-large-files"
    if not (folder / "labels.jsonl").exists():
        subprocess.run([sys.executable, str(ROOT / "fixtures" / "make_large.py"), "--queries", "10000",
                        "--depth", "100", "--runs", "10", "--out", str(folder)], check=True)
    tmp = db.with_suffix(".building")
    tmp.unlink(missing_ok=True)
    cli = [sys.executable, "-m", "ragjudge", "--db", str(tmp)]
    subprocess.run([*cli, "init", "--scale", "0-3"], check=True, stdout=subprocess.DEVNULL)
    for kind in ("queries", "chunks"):
        subprocess.run([*cli, "import", kind, str(folder / f"{kind}.jsonl")], check=True)
    for run in sorted((folder / "runs").glob("*.trec")):
        subprocess.run([*cli, "import", "run", str(run)], check=True)
    subprocess.run([*cli, "import", "labels", str(folder / "labels.jsonl")], check=True)
    os.replace(tmp, db)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def best_of(work, times: int = 3) -> float:
    """The shortest of ``times`` runs of ``work()``, in seconds."""
    took = []
    for _ in range(times):
        t = time.perf_counter()
        work()
        took.append(time.perf_counter() - t)
    return min(took)


def labels_alone(project, engine, rnd: random.Random, labels: int) -> list[float]:
    """``labels`` labels recorded on random pairs of the runs, each followed by the engine's
    poll: the poll's milliseconds."""
    from ragjudge.services.labels import events as judging

    names, annotators, took = list(engine.runs), list(engine.annotators), []
    for _ in range(labels):
        picked = pick_pair(engine, rnd, names, 1)
        if picked is None:
            continue
        query, (chunk,) = picked
        judging.record_label(project, annotator=rnd.choice(annotators), query_id=query,
                             chunk_id=chunk, grade=rnd.randint(0, 3))
        t = time.perf_counter()
        engine.poll()
        took.append((time.perf_counter() - t) * 1000)
    return took


def cpu_seconds() -> float:
    """Processor time of this process so far, every thread (user + system)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def details_pass(engine) -> tuple[float, float]:
    """Seconds of the details pass as the screen runs it, wall and processor time: the
    engine's details, and the gold's composition where they do not carry it (the screen then
    asked gold() for it)."""
    started, cpu = time.perf_counter(), cpu_seconds()
    details = engine.details()
    if getattr(details, "composition", None) is None:
        from ragjudge.services.gold.gold import gold

        gold(engine.project, engine.rule, include_llm=engine.include_llm, runs=engine.runs)
    return time.perf_counter() - started, cpu_seconds() - cpu


def measure_engine(db: str, labels: int, seed: int = 13) -> dict:
    """The engine alone, before any app runs in this process (the home screen under the
    evaluation screen counts the pool of a large project in SQL in worker threads that outlive
    the app): seconds from a fresh engine to everything evaluated and its first snapshot; the
    details pass; a full recomputation, best of 3; and per label, the poll after its commit."""
    from ragjudge.services.scoring.live import LiveEvaluation
    from ragjudge.services.project.database import Project

    out: dict = {}
    project = Project.open(db)
    try:
        started, cpu = time.perf_counter(), cpu_seconds()
        engine = LiveEvaluation(project)
        engine.load()
        engine.snapshot(measure="nDCG@10")
        out["open_s"] = (time.perf_counter() - started, cpu_seconds() - cpu)
        out["details_s"] = details_pass(engine)
        out["full_s"] = best_of(engine.recompute)
        rnd = random.Random(seed)
        alone = labels_alone(project, engine, rnd, labels)
        out["label_ms"] = (statistics.median(alone), pct(alone, 0.95))
        out["details_after_labels_s"] = details_pass(engine)
    finally:
        project.close()
    return out


PYTREC_MEASURES = {"P": "P.1,3,5,10", "recall": "recall.5,10,20", "success": "success.5",
                   "recip_rank": "recip_rank", "map": "map", "ndcg_cut": "ndcg_cut.5,10",
                   "Rprec": "Rprec"}

PYTREC = r"""
import json, sys, time
started = time.perf_counter()
import pytrec_eval
measures = set(json.loads(sys.argv[1]))
qrels_path, *runs = sys.argv[2:]
with open(qrels_path) as f:
    qrels = pytrec_eval.parse_qrel(f)
parsed = []
for path in runs:
    with open(path) as f:
        parsed.append(pytrec_eval.parse_run(f))
read = time.perf_counter()
evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
for run in parsed:
    evaluator.evaluate(run)
evaluated = time.perf_counter()
# one query, as a new label asks: an evaluator for its qrels, then the 10 rankings
single = []
for query in sorted(qrels)[:50]:
    t = time.perf_counter()
    one = pytrec_eval.RelevanceEvaluator({query: qrels[query]}, measures)
    for run in parsed:
        one.evaluate({query: run.get(query, {})})
    single.append(time.perf_counter() - t)
single.sort()
print(json.dumps({"read": read - started, "evaluate": evaluated - read,
                  "one_query_ms": 1000 * single[len(single) // 2]}))
"""


def pytrec(db: Path) -> dict:
    """pytrec_eval on the project's exported gold qrels and runs (exported once)."""
    import json

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_db_eval import export, run_names

    qrels, files = export(db, run_names(db))
    import resource

    started = time.perf_counter()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-c", PYTREC, json.dumps(list(PYTREC_MEASURES.values())),
                          str(qrels), *map(str, files)], check=True, capture_output=True, text=True)
    result = json.loads(out.stdout)
    result["process"] = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result["process_cpu"] = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    return result


async def measure(db: str, labels: int, seed: int = 11) -> dict:
    from ragjudge.services.labels import events as judging
    from ragjudge.services.project.database import Project
    from ragjudge.tui.evalapp import evaluation_app
    from ragjudge.tui.screens.evaluation import EvaluationScreen

    project = Project.open(db)
    app = evaluation_app(project)
    out: dict = {}
    async with app.run_test(size=(140, 45)) as pilot:
        t0, c0 = time.perf_counter(), cpu_seconds()
        while not (isinstance(app.screen, EvaluationScreen) and app.screen.snapshot):
            await pilot.pause(0.02)
        out["open_s"] = time.perf_counter() - t0
        out["open_wc"] = (out["open_s"], cpu_seconds() - c0)
        screen = app.screen
        while screen.snapshot.version == 0:  # a large project shows the gold's numbers first
            await pilot.pause(0.02)
        out["open_all_s"] = time.perf_counter() - t0
        out["open_all_wc"] = (out["open_all_s"], cpu_seconds() - c0)
        while screen.details is None:  # intervals, agreement, pool, composition: all on screen
            await pilot.pause(0.02)
        out["everything_s"] = time.perf_counter() - t0
        out["everything_wc"] = (out["everything_s"], cpu_seconds() - c0)
        engine = screen.engine
        rnd = random.Random(seed)
        names = list(engine.runs)
        annotators = list(engine.annotators)
        on_screen, compute = [], []
        for _ in range(labels):
            picked = pick_pair(engine, rnd, names, 10)
            if picked is None:
                continue
            query, top = picked
            seen = len(screen.applied)
            start = time.perf_counter()
            event = judging.record_label(project, annotator=rnd.choice(annotators), query_id=query,
                                         chunk_id=rnd.choice(top), grade=rnd.randint(0, 3))
            while not (len(screen.applied) > seen and screen.applied[-1][0] >= event):
                await asyncio.sleep(0.001)
            on_screen.append((screen.applied[-1][1] - start) * 1000)
            compute.append(screen.snapshot.compute_ms)
            await pilot.pause(rnd.uniform(0.05, 0.15))  # an annotator's pace, roughly
        out["on_screen_ms"] = (statistics.median(on_screen), pct(on_screen, 0.95))
        out["compute_ms"] = (statistics.median(compute), pct(compute, 0.95))
        out["labels"] = len(on_screen)
        # the engine alone, without the app sharing the interpreter: record, then poll
        with engine.lock:  # keep the screen's worker out while timing
            alone = labels_alone(project, engine, rnd, labels)
        out["alone_ms"] = (statistics.median(alone), pct(alone, 0.95))
        # a full recomputation, with the runs already in memory
        out["full_s"] = best_of(engine.recompute)
        # a rule change: the gold view evaluated again, the annotators' views kept
        rule = engine.rule
        t = time.perf_counter()
        engine.set_rule("max" if rule != "max" else "median")
        out["rule_s"] = time.perf_counter() - t
        engine.set_rule(rule)
        out["details_s"] = details_pass(engine)[0]
        out["queries"] = len(engine.query_ids)
        out["runs"] = len(engine.runs)
        out["views"] = len(engine.views)
    project.close()
    return out


def run_app(coroutine: Any) -> dict:
    """Run a measurement without waiting, at its end, for the app's leftover thread workers (the
    home screen under the evaluation screen counts the pool of a large project in SQL for
    minutes); the process ends with os._exit once it has printed."""
    loop = asyncio.new_event_loop()
    return loop.run_until_complete(coroutine)


def one_side(db: str, labels: int, large: bool) -> dict:
    """Every measurement of this process's ragjudge on ``db`` (a copy it may write to), with
    the load average before and after."""
    load = [os.getloadavg()[0]]
    out: dict = {}
    if large:
        out["engine"] = measure_engine(db, labels)
    out.update(run_app(measure(db, labels)))
    load.append(os.getloadavg()[0])
    out["load"] = load
    return out


def run_side(root: Path, db: Path, labels: int, large: bool) -> dict:
    """:func:`one_side` in a process of its own, importing ragjudge from ``root``, on a fresh
    copy of ``db``."""
    work = db.with_name(f"{db.stem}-run.db")
    shutil.copyfile(db, work)  # labels the measurement writes stay out of the kept project
    try:
        env = {**os.environ, "PYTHONPATH": str(root)}
        done = subprocess.run([sys.executable, __file__, "--side", str(work), "--labels", str(labels),
                               *(["--side-large"] if large else [])],
                              env=env, check=True, capture_output=True, text=True, cwd=root)
        return json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        for suffix in ("", "-wal", "-shm", ".writelock", ".importlock"):
            Path(f"{work}{suffix}").unlink(missing_ok=True)


def median_of(results: list[dict], *path: str) -> Any:
    """The median over runs of the figure at ``path`` (of each part of a pair alike)."""
    values = []
    for r in results:
        for key in path:
            r = r[key]
        values.append(r)
    if isinstance(values[0], (list, tuple)):
        return tuple(statistics.median(v[i] for v in values) for i in range(len(values[0])))
    return statistics.median(values)


def compare(name: str, project: Path, sides: dict[str, Path], args: argparse.Namespace,
            reference: list[dict] | None = None) -> None:
    """Every side measured ``args.repeat`` times, taking turns; the medians side by side."""
    results: dict[str, list[dict]] = {side: [] for side in sides}
    order = list(sides)
    large = reference is not None
    for r in range(args.repeat):
        for side in order if r % 2 == 0 else order[::-1]:
            print(f"  {name}: {side}, run {r + 1} of {args.repeat} ...", file=sys.stderr, flush=True)
            result = run_side(sides[side], project, args.labels, large)
            results[side].append(result)
            print(f"    first numbers {result['open_s']:.2f} s, everything on screen "
                  f"{result['everything_s']:.2f} s, details pass {result['details_s']:.2f} s, "
                  f"load {result['load'][0]:.1f}-{result['load'][1]:.1f}", file=sys.stderr, flush=True)
    report(name, results, reference, args.repeat)


def report(name: str, results: dict[str, list[dict]], reference: list[dict] | None, repeat: int) -> None:
    sides = list(results)
    first = results[sides[0]][0]
    loads = [x for side in sides for r in results[side] for x in r["load"]]
    print(f"{name}: {first['queries']:,} queries, {first['runs']} runs, {first['views']} qrels views "
          f"(gold + each annotator), {first['labels']} labels; medians of {repeat} runs per side; "
          f"load average {statistics.median(loads):.1f} (from {min(loads):.1f} to {max(loads):.1f})")
    head = "".join(f"{side:>18}" for side in sides)
    print(f"  {'':<58}{head}{'pytrec_eval' if reference else '':>14}")

    def row(label: str, path: tuple[str, ...], unit: str = "s", theirs: str = "") -> None:
        cells = []
        for side in sides:
            value = median_of(results[side], *path)
            if isinstance(value, tuple):
                digits = 2 if unit == "s" else 1
                cells.append(f"{value[0]:.{digits}f} / {value[1]:.{digits}f} {unit}".rjust(18))
            else:
                cells.append(f"{value:.2f} {unit}".rjust(18))
        print(f"  {label:<58}{''.join(cells)}{theirs:>14}")

    def pytrec(key: str, unit: str = "s") -> str:
        if not reference:
            return ""
        value = statistics.median(r[key] for r in reference)
        return f"{value:.2f} {unit}" if unit == "s" else f"{value:.1f} {unit}"

    if reference:
        print("  the engine alone (before any app ran in its process):")
        row("open, everything evaluated, wall/processor / pytrec_eval", ("engine", "open_s"), "s",
            theirs=pytrec("process"))
        row("details pass (+ the gold's composition), wall/processor", ("engine", "details_s"), "s")
        row("  the same after the labels below", ("engine", "details_after_labels_s"), "s")
        row("full recomputation / pytrec_eval's evaluation alone", ("engine", "full_s"), theirs=pytrec("evaluate"))
        row("a new label, median/p95 / pytrec_eval's one query", ("engine", "label_ms"), "ms",
            theirs=pytrec("one_query_ms", "ms"))
        print("  in the app (w/p: wall/processor):")
    row("first numbers (runs, labels read, gold evaluated), w/p", ("open_wc",))
    row("every annotator's view too (the ranges), w/p", ("open_all_wc",))
    row("everything on screen (intervals, agreement, pool), w/p", ("everything_wc",),
        theirs=pytrec("process"))
    row("compute per label, median/p95", ("compute_ms",), "ms")
    row("compute per label, engine alone, median/p95", ("alone_ms",), "ms")
    row("label -> on screen, median/p95", ("on_screen_ms",), "ms")
    row("full recomputation", ("full_s",))
    row("rule change (gold view again, annotators' views kept)", ("rule_s",))
    row("details pass, as the screen runs it", ("details_s",))
    if reference:
        print(f"  pytrec_eval's whole process: {pytrec('process')} wall, {pytrec('process_cpu')} processor")
        print(f"  pytrec_eval: {len(PYTREC_MEASURES)} measure families, 13 measures, 1 qrels x "
              f"{first['runs']} runs; reading the files {pytrec('read')} of its process")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=40)
    parser.add_argument("--large", type=Path, default=Path("/tmp/ragjudge-bench/live-large.db"))
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="runs per side (the medians are shown)")
    parser.add_argument("--before", type=Path, default=None,
                        help="a folder holding another version's ragjudge package, measured beside this one")
    parser.add_argument("--side", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--side-large", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(one_side(args.side, args.labels, args.side_large)))
        return 0
    sides = {"after" if args.before else "ragjudge": ROOT}
    if args.before:
        if not (args.before / "ragjudge" / "__init__.py").exists():
            parser.error(f"--before {args.before}: no ragjudge package in that folder.")
        sides["before"] = args.before.resolve()
    if not args.skip_demo:
        from ragjudge.services.transfer.demo import build_demo

        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "demo.db"
            build_demo(str(db))
            compare("demo", db, sides, args)
    if args.skip_large:
        return 0
    args.large.parent.mkdir(parents=True, exist_ok=True)
    if not args.large.exists():
        print(f"generating and importing the large project into {args.large} (minutes) ...")
        build_large(args.large)
    reference = [pytrec(args.large) for _ in range(args.repeat)]
    compare("large", args.large, sides, args, reference)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # not waiting for the apps' leftover worker threads (see run_app)
