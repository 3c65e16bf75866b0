"""Benchmark: how long a ``ragjudge`` command takes from start to exit, beside Python's own start.

    python tests/bench/bench_startup.py [--repeat N] [--db DEMO.db] [--before DIR] [--only LABEL ...]
    python tests/bench/bench_startup.py --importtime COMMAND [--depth N]

Not a test (pytest does not collect it). Builds the demo project (``ragjudge demo --no-tui``)
in a temporary folder unless ``--db`` names one, then runs every command below N times in fresh
processes, in turns (one of each per round, so that a busy moment of the machine falls on every
side alike), and prints the median and the fastest run of each beside ``python -c "pass"`` and
``python -c "import numpy"``, with the ratio to the numpy import, the median processor time
(user + system, which a busy machine disturbs less than the wall clock) and the load average
before and after. The *floor* lines import the libraries those commands load and do nothing
else: no command that loads them can start faster. Every side runs with bytecode cached, as after ``pip install`` (ragjudge's modules are
compiled first; see ``bench_eval.py``).

``--before DIR`` adds, beside each ragjudge command, the same command run from DIR, a folder
holding another version's ``ragjudge`` package (``git archive COMMIT ragjudge | tar -x -C DIR``),
in the same turns.

``--importtime status`` runs that command (a key of :data:`COMMANDS`) once under
``python -X importtime`` and prints the modules that cost the most, each with its cumulative
time (its own and its imports'), top-level imports only unless ``--depth`` says deeper.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the environment of every side: this tree's ragjudge, bytecode written and read as after an install
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "RAGJUDGE_DB")}
ENV["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])

#: label -> the arguments after ``python``; ``{db}`` is the demo project
COMMANDS: dict[str, list[str]] = {
    "python -c pass": ["-c", "pass"],
    "python -c 'import numpy'": ["-c", "import numpy"],
    "ragjudge --help": ["-m", "ragjudge", "--help"],
    "ragjudge status --help": ["-m", "ragjudge", "status", "--help"],
    "ragjudge status": ["-m", "ragjudge", "--db", "{db}", "status"],
    "ragjudge status --format json": ["-m", "ragjudge", "--db", "{db}", "status", "--format", "json"],
    "ragjudge eval --db": ["-m", "ragjudge", "--db", "{db}", "eval"],
    # the floors: the libraries those commands load, imported and nothing else
    "floor: typer, rich": ["-c", "import typer, typer.rich_utils"],
    # what the lean path of status and eval --db loads (sqlite3, not SQLAlchemy or pydantic)
    "floor: numpy, sqlite3, rich.table": ["-c", "import numpy, sqlite3, rich.console, rich.table"],
    "floor: + pydantic, sqlalchemy.orm, numpy": [
        "-c", "import typer, pydantic, rich.table, sqlalchemy.orm, numpy; pydantic.TypeAdapter(int)"],
}
BASELINE = "python -c 'import numpy'"
#: the targets, as multiples of the numpy import
TARGETS = {"ragjudge --help": 2.0, "ragjudge status": 3.0, "ragjudge eval --db": 3.0}


def compile_ragjudge() -> None:
    """Compile ragjudge's modules (an installed package's are compiled by pip)."""
    compileall.compile_dir(str(ROOT / "ragjudge"), quiet=1)


def build_demo(folder: Path) -> Path:
    db = folder / "demo.db"
    subprocess.run([sys.executable, "-m", "ragjudge", "demo", "--no-tui", "--db", str(db)],
                   check=True, capture_output=True, env=ENV)
    return db


BEFORE = " (before)"


def argv(label: str, db: Path) -> list[str]:
    return [sys.executable, *(a.replace("{db}", str(db)) for a in COMMANDS[label.removesuffix(BEFORE)])]


def side_env(label: str, before: Path | None) -> dict[str, str]:
    """The environment of a side: the other version's folder first on the path for a
    "(before)" side."""
    if not label.endswith(BEFORE) or before is None:
        return ENV
    return {**ENV, "PYTHONPATH": os.pathsep.join([str(before), ENV["PYTHONPATH"]])}


def time_once(args: list[str], env: dict[str, str] = ENV) -> tuple[float, float]:
    """The wall-clock and processor seconds (user + system) of one run of ``args``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                         cwd=tempfile.gettempdir())  # not this folder: the path decides the version
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({out.returncode}): {out.stderr.decode()[-500:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return elapsed, cpu


def measure(db: Path, repeat: int, labels: list[str],
            before: Path | None = None) -> dict[str, list[tuple[float, float]]]:
    times: dict[str, list[tuple[float, float]]] = {label: [] for label in labels}
    for label in labels:  # one unmeasured round: the files in the page cache for every side
        time_once(argv(label, db), side_env(label, before))
    for i in range(repeat):
        shift = i % len(labels)  # each round starts with another side
        for label in labels[shift:] + labels[:shift]:
            times[label].append(time_once(argv(label, db), side_env(label, before)))
    return times


def report(times: dict[str, list[tuple[float, float]]], repeat: int,
           loads: tuple[float, float]) -> None:
    wall = {label: [w for w, _ in runs] for label, runs in times.items()}
    cpu = {label: [c for _, c in runs] for label, runs in times.items()}
    base, base_cpu = statistics.median(wall[BASELINE]), statistics.median(cpu[BASELINE])
    print(f"{repeat} runs of each, in turns; {os.cpu_count()} cores, load average "
          f"{loads[0]:.2f} before, {loads[1]:.2f} after")
    print(f"{'command':42} {'median':>8} {'fastest':>8} {'x numpy':>8} {'cpu':>8} {'x numpy':>8}"
          f" {'target':>7}")
    for label in times:
        median, median_cpu = statistics.median(wall[label]), statistics.median(cpu[label])
        target = TARGETS.get(label)
        shown = f"<= {target:g}x" if target else ""
        print(f"{label:42} {median:7.3f}s {min(wall[label]):7.3f}s {median / base:7.2f}x "
              f"{median_cpu:7.3f}s {median_cpu / base_cpu:7.2f}x {shown:>7}")


def importtime(db: Path, label: str, depth: int, top: int) -> None:
    args = argv(label, db)
    out = subprocess.run([args[0], "-X", "importtime", *args[1:]], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=ENV)
    rows = []
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "cumulative" in line:
            continue
        own_us, cumulative, name = line[len("import time:"):].split("|")
        level = (len(name) - len(name.lstrip()) - 1) // 2
        if level < depth:
            rows.append((int(cumulative), int(own_us), level, name.strip()))
    total = sum(r[0] for r in rows if r[2] == 0)
    print(f"{label}: imports {total / 1e6:.3f} s in all (under -X importtime, which slows them)")
    for cumulative, own, level, name in sorted(rows, reverse=True)[:top]:
        print(f"  {cumulative / 1e6:7.3f} s  (own {own / 1e6:.3f})  {'  ' * level}{name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--db", type=Path, help="a demo project (default: build one)")
    parser.add_argument("--only", nargs="*", help="command labels to time (default: all)")
    parser.add_argument("--before", type=Path, help="a folder holding another version's ragjudge")
    parser.add_argument("--importtime", metavar="COMMAND", help="one of: " + ", ".join(COMMANDS))
    parser.add_argument("--depth", type=int, default=1, help="import levels shown (--importtime)")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    compile_ragjudge()
    with tempfile.TemporaryDirectory(prefix="ragjudge-startup-") as tmp:
        db = args.db or build_demo(Path(tmp))
        if args.importtime:
            importtime(db, args.importtime, args.depth, args.top)
            return
        labels = []
        for label in COMMANDS:
            if label in (BASELINE, "python -c pass") or not args.only or label in args.only:
                labels.append(label)
                if args.before is not None and label.startswith("ragjudge"):
                    labels.append(label + BEFORE)
        if args.before is not None:
            compileall.compile_dir(str(args.before / "ragjudge"), quiet=1)
        load = os.getloadavg()[0]
        times = measure(db, args.repeat, labels, args.before)
        report(times, args.repeat, (load, os.getloadavg()[0]))


if __name__ == "__main__":
    main()
