"""Benchmark of the judging app (not a pytest test): keypress -> label committed -> next pair
rendered, over 500 labels, on the demo project and on a generated 10,000-query project.

    /work/venv/bin/python tests/bench/bench_tui.py [--labels 500] [--queries 10000] [--keep DIR]

Prints the median and p95 of the keypress-to-next-pair time and the start-up time to the first
pair. Targets (issue 4): median < 16 ms, p95 < 50 ms, start-up < 1.5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

WORDS = ["parcel", "delivery", "courier", "tracking", "refund", "address", "customs", "label", "return", "damaged", "late", "locker", "pickup", "signature", "weekend", "express", "insurance", "invoice", "warehouse", "driver", "route", "postcode", "redelivery", "missing", "fragile", "oversized", "international", "duty", "schedule"]


def generate_project(db: str, *, queries: int = 10_000, runs: int = 10, depth: int = 20,
                     chunks: int = 200_000, seed: int = 7) -> dict:
    """A synthetic project: ``queries`` queries, ``runs`` runs ranking ``depth`` chunks each.

    Runs overlap (they draw from a per-query candidate set of 6*depth chunks), so the depth-20
    pool holds about a million distinct pairs at 10,000 queries.
    """
    from ragjudge.services.project.database import Project

    Project.init(db, name="generated").close()
    rng = random.Random(seed)
    con = sqlite3.connect(db)
    con.execute("PRAGMA synchronous=OFF")
    con.executemany("INSERT INTO chunks (id, text, doc_id) VALUES (?, ?, ?)",
                    ((f"c{i}", " ".join(rng.choices(WORDS, k=60)), f"d{i // 5}") for i in range(chunks)))
    con.executemany("INSERT INTO queries (id, text, category) VALUES (?, ?, ?)",
                    ((f"q{i}", " ".join(rng.choices(WORDS, k=6)), ("billing", "tracking", "returns")[i % 3])
                     for i in range(queries)))
    con.executemany("INSERT INTO runs (name, created_at) VALUES (?, '2026-01-01')",
                    ((f"run{r}",) for r in range(runs)))
    entries = []
    for q in range(queries):
        candidates = rng.sample(range(chunks), 6 * depth)
        for r in range(runs):
            picked = rng.sample(candidates, depth)
            entries.extend((f"run{r}", f"q{q}", f"c{c}", rank + 1, float(depth - rank))
                           for rank, c in enumerate(picked))
        if len(entries) > 200_000:
            con.executemany("INSERT INTO run_entries (run, query_id, chunk_id, rank, score) VALUES (?,?,?,?,?)", entries)
            entries.clear()
    con.executemany("INSERT INTO run_entries (run, query_id, chunk_id, rank, score) VALUES (?,?,?,?,?)", entries)
    con.commit()
    con.execute("ANALYZE")
    con.close()
    return {"queries": queries, "runs": runs, "depth": depth}


async def measure(db: str, *, labels: int, depth: int, annotator: str = "bench") -> dict:
    """Start the app as ``ragjudge annotate`` does and grade ``labels`` pairs with digit keys."""
    from ragjudge.services.events import annotators as judging
    from ragjudge.services.project.database import Project
    from ragjudge.tui import make_app
    from ragjudge.tui.screens.judge import JudgeScreen

    with Project.open(db) as project:
        judging.mark_guidelines_seen(project, annotator)
    start = time.perf_counter()
    project = Project.open(db)
    app = make_app(project, annotator=annotator, start="judge", depth=depth)
    keypress: list[float] = []
    handler: list[float] = []
    frames: list[float] = []
    settled: list[float] = []
    shown: list[float] = []
    cpu: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        display = app._display

        def counting_display(screen, renderable) -> None:
            # called with each frame the compositor rendered (headless: not written anywhere)
            if renderable is not None:
                frames.append(time.perf_counter())
            display(screen, renderable)

        app._display = counting_display
        watch = JudgeScreen.watch_pair

        def timed_watch(screen_, pair) -> None:
            watch(screen_, pair)
            shown.append(time.perf_counter())  # the new pair's widgets are set

        JudgeScreen.watch_pair = timed_watch
        while not (isinstance(app.screen, JudgeScreen) and app.screen.pair is not None):
            await asyncio.sleep(0.001)
        await pilot.pause()
        startup = time.perf_counter() - start
        # the pool totals are counted in a worker thread after the first pair is shown (a full
        # scan on big projects); let it finish so that the figures below are per keypress only
        await app.workers.wait_for_complete()
        screen = app.screen
        scale = project.scale
        rng = random.Random(1)
        for _ in range(labels):
            before = screen.pair
            grade = rng.randint(scale.min, scale.max)
            t0, c0 = time.perf_counter(), time.process_time()
            app.simulate_key(str(grade))  # through Textual's message queue and key bindings
            while screen.pair is before:
                await asyncio.sleep(0.0002)
                if time.perf_counter() - t0 > 10:
                    raise RuntimeError(f"no next pair 10 s after a key (label {len(handler)}; "
                                       f"app screen {app.screen!r}, return code {app.return_code})")
            set_at = shown[-1]
            handler.append(set_at - t0)  # committed and the next pair's widgets set
            while not frames or frames[-1] < set_at:
                await asyncio.sleep(0.0002)
            first = next(f for f in frames if f >= set_at)
            keypress.append(first - t0)  # ... and the first frame rendered after it
            while time.perf_counter() - frames[-1] < 0.05:  # Textual may follow with more frames
                await asyncio.sleep(0.002)
            settled.append(frames[-1] - t0)
            cpu.append(time.process_time() - c0)
        await app.workers.wait_for_complete()
    project.close()

    def ms(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {
        "startup_s": round(startup, 3),
        "keypress_median_ms": round(1000 * statistics.median(keypress), 2),
        "keypress_p95_ms": round(ms(keypress, 0.95), 2),
        "handler_median_ms": round(1000 * statistics.median(handler), 2),
        "handler_p95_ms": round(ms(handler, 0.95), 2),
        "settled_median_ms": round(1000 * statistics.median(settled), 2),
        "settled_p95_ms": round(ms(settled, 0.95), 2),
        "cpu_median_ms": round(1000 * statistics.median(cpu), 2),
        "cpu_p95_ms": round(ms(cpu, 0.95), 2),
        "labels": len(keypress),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=500)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=20, help="pool depth of the big project "
                        "(20 gives about a million pool pairs at 10,000 queries)")
    parser.add_argument("--keep", type=Path, help="keep the generated databases in this folder")
    args = parser.parse_args(argv)
    folder = Path(args.keep or tempfile.mkdtemp(prefix="ragjudge-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    from ragjudge.services.transfer.demo import build_demo

    demo = folder / "demo.db"
    if not demo.exists():
        build_demo(str(demo))
    big = folder / f"big-{args.queries}.db"
    if not big.exists():
        t0 = time.perf_counter()
        generate_project(str(big), queries=args.queries, depth=args.depth)
        print(f"generated {big} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    for name, db, depth in (("demo", demo, 10), (f"{args.queries:,} queries", big, args.depth)):
        from ragjudge.services.project.database import Project
        from ragjudge.services.gold.pool import pool_size_and_judged

        with Project.open(str(db)) as project:
            pairs = pool_size_and_judged(project, depth)["pairs"]
        result = asyncio.run(measure(str(db), labels=args.labels, depth=depth))
        print(f"{name}: pool {pairs:,} pairs (top {depth}), {result['labels']} labels; start-up to "
              f"first pair {result['startup_s']:.2f} s\n"
              f"  key -> committed -> next pair's widgets set: median {result['handler_median_ms']:.1f} ms, "
              f"p95 {result['handler_p95_ms']:.1f} ms\n"
              f"  key -> first frame rendered with it:        median {result['keypress_median_ms']:.1f} ms, "
              f"p95 {result['keypress_p95_ms']:.1f} ms\n"
              f"  key -> last frame of the burst:            median {result['settled_median_ms']:.1f} ms, "
              f"p95 {result['settled_p95_ms']:.1f} ms\n"
              f"  CPU time per key (all threads):            median {result['cpu_median_ms']:.1f} ms, "
              f"p95 {result['cpu_p95_ms']:.1f} ms", flush=True)
        print(f"  (load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
