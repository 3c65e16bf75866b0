"""Benchmark: ``ragjudge report`` beside the ``eval`` commands whose numbers it holds.

    python tests/bench/bench_report.py --db PROJECT [--repeat 3] [--by category]

Not a test (pytest does not collect it). Each command is its own process, timed from start to
exit (interpreter start, imports, reading, evaluating, writing), with its peak memory and the
size of what it wrote; the commands alternate ``--repeat`` times so that all see the same load
on a shared machine:

- ``eval --format json`` — the scorecard's means alone;
- ``eval --format json --ci --per-query [--by FIELD]`` — the means, intervals, per-query values
  (and strata) the report shows;
- ``report --format md`` and ``report -o FILE.html`` — all of that, plus the ranges over
  annotators, the curves, every pair of runs compared, agreement and the digests.

The report's own steps are timed once more inside one process (``build_report`` with a progress
callback that notes when each step starts) to show where its time goes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str], out_path: Path) -> tuple[float, float, int]:
    """(wall seconds, peak MB, bytes written to standard output or the file) of one process."""
    t0 = time.perf_counter()
    with open(out_path, "wb") as out, open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(cmd, stdout=out, stderr=devnull)
        _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed; run it by hand to see why.")
    return elapsed, usage.ru_maxrss / 1024, out_path.stat().st_size


def steps(db: str) -> list[tuple[str, float]]:
    """Seconds of each step of one ``build_report`` (the default options, HTML)."""
    from ragjudge.report.build import ReportOptions, build_report
    from ragjudge.report.html import render_html
    from ragjudge.services.access.visibility import access_for
    from ragjudge.services.project.database import Project

    marks: list[tuple[str, float]] = [("opening", time.perf_counter())]

    def heard(done, total, what, unit="bytes"):
        if what != marks[-1][0]:
            marks.append((what, time.perf_counter()))

    with Project.open(db) as project:
        report = build_report(project, ReportOptions(), access=access_for(project, None),
                              progress=heard)
        marks.append(("rendering HTML", time.perf_counter()))
        render_html(report)
    marks.append(("end", time.perf_counter()))
    return [(name, marks[i + 1][1] - at) for i, (name, at) in enumerate(marks[:-1])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--by", default=None, help="the strata's field, when the queries have one")
    args = parser.parse_args()
    cli = [sys.executable, "-m", "ragjudge", "--db", args.db]
    folder = Path(tempfile.mkdtemp(prefix="bench-report-"))
    html = folder / "report.html"
    commands = {
        "eval --format json": [*cli, "eval", "--format", "json", "-q"],
        "eval json --ci --per-query" + (f" --by {args.by}" if args.by else ""):
            [*cli, "eval", "--format", "json", "--ci", "--per-query", "-q",
             *(["--by", args.by] if args.by else [])],
        "report --format md": [*cli, "report", "--format", "md", "-q"],
        "report -o report.html": [*cli, "report", "-o", str(html), "-q"],
    }
    results: dict[str, list[tuple[float, float, int]]] = {name: [] for name in commands}
    for _ in range(args.repeat):
        for name, cmd in commands.items():
            wall, peak, size = timed(cmd, folder / "stdout")
            if name.endswith(".html"):
                size = html.stat().st_size
            results[name].append((wall, peak, size))
    print(f"{'command':44} {'seconds':>9} {'peak MB':>9} {'output':>10}")
    for name, runs in results.items():
        wall = statistics.mean(r[0] for r in runs)
        peak = max(r[1] for r in runs)
        print(f"{name:44} {wall:9.2f} {peak:9.0f} {runs[-1][2] / 1024:8,.0f} kB")
    print("\nthe report's steps, in one process:")
    for name, seconds in steps(args.db):
        print(f"  {name:40} {seconds:7.2f} s")


if __name__ == "__main__":
    main()
