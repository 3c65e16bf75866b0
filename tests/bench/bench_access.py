"""What the access rules cost (not a test): a label recorded on a project guarded by a login
token (the served tab's, checked inside each write transaction) beside the same label unguarded,
and making an ``Access`` (the roster and the blind setting read) beside reading one setting.

    python tests/bench/bench_access.py                 # 300 labels each way, SQLite
    python tests/bench/bench_access.py --labels 1000 --db postgresql+psycopg://.../db

Prints the median and 95th percentile per operation, side by side (the two kinds of label
interleaved, each pair of writes on the same pair of ids).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))


def timed(fn, n: int) -> list[float]:
    out = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


def row(name: str, ms: list[float]) -> str:
    ms = sorted(ms)
    return f"{name:<44} {statistics.median(ms):8.3f} ms {ms[int(0.95 * (len(ms) - 1))]:8.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=int, default=300)
    parser.add_argument("--db", default=None, help="a database URL (default: a SQLite file)")
    args = parser.parse_args()
    from projectkit import make_small_project

    from ragjudge.services.access import roster
    from ragjudge.services.access.identity import from_token, token_guard
    from ragjudge.services.access.visibility import access_for
    from ragjudge.services.labels.events import record_label

    with tempfile.TemporaryDirectory() as folder:
        db = args.db or str(Path(folder) / "bench.db")
        with make_small_project(db, queries=50, chunks=200, depth=20) as project:
            roster.add(project, "dora", role="lead", access=access_for(project, "dora"))
            _, token = roster.add(project, "ana", token=True, access=access_for(project, "dora"))
            identity = from_token(project, token)
            guarded = project.guarded(token_guard(identity))
            pairs = [(f"q{1 + i % 50}", f"c{1 + (i * 7) % 200:02d}") for i in range(args.labels)]

            def label(target):
                return lambda i: record_label(target, annotator="ana", query_id=pairs[i][0],
                                              chunk_id=pairs[i][1], grade=i % 4)

            label(project)(0)  # warm: connections, caches
            plain: list[float] = []
            checked: list[float] = []
            unguarded, checking = label(project), label(guarded)
            for i in range(args.labels):  # interleaved, so that drift in the machine hits both
                plain += timed(lambda _, i=i: unguarded(i), 1)
                checked += timed(lambda _, i=i: checking(i), 1)
            made = timed(lambda i: access_for(project, "ana"), args.labels)
            setting = timed(lambda i: project.get_setting("blind"), args.labels)
        print(f"{'operation':<44} {'median':>11} {'p95':>11}")
        print(row("record_label, unguarded", plain))
        print(row("record_label, guarded by a login token", checked))
        print(row("access_for (roster + blind setting)", made))
        print(row("get_setting (one read, for scale)", setting))


if __name__ == "__main__":
    main()
