"""Import benchmark (not a test): ``ragjudge import run`` beside parsing the same file, and a label's
commit latency while the import runs.

    python tests/bench/bench_import.py                    # a 1 M line run, 1,000 queries x 1,000
    python tests/bench/bench_import.py --lines 10000000   # TREC size: 10,000 queries x 1,000
    python tests/bench/bench_import.py --depth 100        # every rank a row (100 per query)

Three figures, printed side by side in one run on one machine:

- **parse**: reading the TREC run into Python dicts (``{query: {doc: score}}``, what a script
  using pytrec_eval does first), the floor any import is measured against;
- **import**: the whole ``ragjudge import run FILE --create-missing`` process on a fresh project
  (start-up, validation, staging, publishing);
- both also in processor time (user + system, all threads), which a machine busy with other
  work disturbs less than the wall clock;
- **commit latency**: an annotator process records labels one by one through
  ``record_label`` (the call the app makes on a keypress) — once with nothing else running, then
  from the import's start to its end — and the 50th and 99th percentile of each commit are
  printed.

An import keeps the first 100 ranks of each query as rows (the run's *head*, which judging
pools read) and the whole run as arrays: ``--depth`` sets the run's depth per query (1,000, as
TREC runs; 100 makes every entry a row).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_eval import compile_ragjudge  # noqa: E402 - an installed package is compiled by pip


def write_run(path: Path, lines: int, depth: int = 100) -> None:
    """A TREC run of ``lines`` lines: ``lines // depth`` queries, ``depth`` chunks each."""
    rng = random.Random(7)
    pool = max(lines, 1_000)
    with path.open("w") as out:
        for q in range(max(1, lines // depth)):
            first = rng.randrange(pool)  # a query's chunks: distinct, spread over the collection
            rows = [f"q{q} Q0 d{(first + r * 104_729) % pool} {r + 1} {1000 - r * 0.5:.3f} bench\n"
                    for r in range(depth)]
            out.writelines(rows)


def parse_seconds(path: Path) -> tuple[float, float]:
    """Wall-clock and processor seconds to read the run into ``{query: {doc: score}}``."""
    start, cpu = time.perf_counter(), time.process_time()
    run: dict[str, dict[str, float]] = {}
    with path.open() as handle:
        for line in handle:
            q, _, d, _, score, _ = line.split()
            run.setdefault(q, {})[d] = float(score)
    return time.perf_counter() - start, time.process_time() - cpu


def children_cpu() -> float:
    """Processor seconds (user + system) of the child processes waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


LABELLER = """
import os, sys, time
from ragjudge.services.project.database import Project
from ragjudge.services.labels.events import record_label
db, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
stop = sys.argv[4] if len(sys.argv) > 4 else None
times = []
with Project.open(db) as project:
    i = 0
    while (i < n) if stop is None else not os.path.exists(stop):
        i += 1
        start = time.perf_counter()
        record_label(project, annotator="ana", query_id="lq", chunk_id=f"lc{i % 50}", grade=i % 4)
        times.append(time.perf_counter() - start)
        time.sleep(0.02)
open(out, "w").write("\\n".join(map(str, times)))
"""


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def fresh_project(folder: Path, name: str) -> str:
    db = str(folder / f"{name}.db")
    subprocess.run([sys.executable, "-m", "ragjudge", "--db", db, "init"], check=True,
                   capture_output=True, env=env())
    code = ("import sys\nfrom ragjudge.services.project.database import Project\n"
            "from ragjudge.store.schema import Chunk, Query\n"
            "with Project.open(sys.argv[1]) as p:\n"
            "    p.write(lambda s: (s.add(Query(id='lq', text='a query')),"
            " s.add_all(Chunk(id=f'lc{i}', text='a chunk') for i in range(50))))\n")
    subprocess.run([sys.executable, "-c", code, db], check=True, env=env())
    return db


def latencies(db: str, folder: Path, n: int, tag: str, stop: Path | None = None) -> subprocess.Popen:
    """An annotator recording ``n`` labels, or labelling until ``stop`` exists."""
    out = folder / f"latency-{tag}.txt"
    return subprocess.Popen([sys.executable, "-c", LABELLER, db, str(n), str(out),
                             *([str(stop)] if stop else [])], env=env())


def read_latencies(folder: Path, tag: str) -> list[float]:
    return [float(x) for x in (folder / f"latency-{tag}.txt").read_text().split()]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--depth", type=int, default=1000, help="entries per query")
    parser.add_argument("--labels", type=int, default=150,
                        help="labels the annotator records on the quiet project")
    args = parser.parse_args()
    compile_ragjudge()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        run = folder / "big.trec"
        write_run(run, args.lines, args.depth)
        size_mb = run.stat().st_size / 1e6
        parse_s, parse_cpu = min(parse_seconds(run) for _ in range(2))

        quiet_db = fresh_project(folder, "quiet")
        labeller = latencies(quiet_db, folder, args.labels, "quiet")
        labeller.wait()
        quiet = read_latencies(folder, "quiet")

        db = fresh_project(folder, "busy")
        cpu_before = children_cpu()  # the quiet annotator's process was waited for: counted here
        start = time.perf_counter()
        importer = subprocess.Popen([sys.executable, "-m", "ragjudge", "--db", db, "import", "run",
                                     str(run), "--create-missing", "--quiet"], env=env(),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        done = folder / "import-done"
        labeller = latencies(db, folder, args.labels, "busy", stop=done)
        importer_err = importer.communicate()[1]
        import_s = time.perf_counter() - start
        import_cpu = children_cpu() - cpu_before  # the importer alone (the annotator runs on)
        done.touch()
        labeller.wait()
        if importer.returncode != 0:
            print(importer_err.decode(errors="replace"), file=sys.stderr)
            return 1
        busy = read_latencies(folder, "busy")

    load = os.getloadavg()[0]
    print(f"ragjudge import benchmark: {args.lines:,} run lines ({size_mb:.0f} MB, "
          f"{max(1, args.lines // args.depth):,} queries x {args.depth:,}), "
          f"{os.cpu_count()} CPUs, load {load:.1f}")
    print()
    print(f"{'':38}{'seconds':>10}{'× parse':>10}{'processor s':>13}{'× parse':>10}")
    print(f"{'parse into Python dicts':38}{parse_s:10.2f}{1:10.2f}{parse_cpu:13.2f}{1:10.2f}")
    print(f"{'ragjudge import run (whole process)':38}{import_s:10.2f}{import_s / parse_s:10.2f}"
          f"{import_cpu:13.2f}{import_cpu / parse_cpu:10.2f}")
    print("(processor time: user + system, every thread; the import reads the file on both cores)")
    print()
    print(f"a label's commit, ms{'labels':>18}{'p50':>8}{'p99':>8}{'max':>8}")
    for name, values in (("nothing else running", quiet), ("while the import runs", busy)):
        name = f"{name:30}{len(values):8}"
        ms = [v * 1000 for v in values]
        print(f"{name:38}{statistics.median(ms):8.1f}{pct(ms, 99):8.1f}{max(ms):8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
