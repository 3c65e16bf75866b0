"""LLM judge benchmark (not a test): pairs a second and ragjudge's own overhead per pair at
concurrency 1 and 8, against the loopback chat-completions server of the tests.

    python tests/bench/bench_llm_judge.py                 # 200 pairs, server answering at once
    python tests/bench/bench_llm_judge.py --pairs 500 --delay 0.05
    python tests/bench/bench_llm_judge.py --dry-run       # planning: the whole list vs --dry-run's count

Overhead is the time spent in ragjudge itself per pair: building the prompt (reading the query
and chunk), hashing it, parsing the answer and committing the label and its audit row (one
transaction each); the rest of the wall time is HTTP and the server.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds the server takes per answer")
    parser.add_argument("--dry-run", action="store_true",
                        help="time the plan of the whole pool against --dry-run's first pair and count")
    args = parser.parse_args()
    if args.dry_run:
        dry_run_planning()
        return

    from llmserver import FakeLLM
    from projectkit import make_small_project

    from ragjudge.services.llm import client as svc_client
    from ragjudge.services.access.visibility import access_for
    from ragjudge.services.llm import judge as svc_judge

    queries = max(1, args.pairs // 10)
    server = FakeLLM(delay=args.delay, unparsed=False).start()
    try:
        print(f"{'concurrency':>11} {'pairs':>6} {'pairs/s':>9} {'overhead ms/pair':>17} {'wall s':>7}")
        for concurrency in (1, 8):
            with tempfile.TemporaryDirectory() as folder:
                project = make_small_project(str(Path(folder) / "bench.db"), queries=queries,
                                             chunks=max(20, args.pairs))
                try:
                    name = "llm:bench"
                    pairs = svc_judge.plan_pairs(project, name, limit=args.pairs)
                    settings = svc_client.ClientSettings(base_url=server.base_url, model="bench",
                                                  concurrency=concurrency, timeout=30)
                    summary = svc_judge.judge(project, pairs, settings, annotator=name, access=access_for(project, name))
                finally:
                    project.close()
            done = summary.done
            print(f"{concurrency:>11} {done:>6} {done / summary.wall_seconds:>9.1f} "
                  f"{1000 * summary.overhead_seconds / done:>17.2f} {summary.wall_seconds:>7.2f}")
    finally:
        server.stop()


def dry_run_planning() -> None:
    """Seconds to plan the pool of a project with 45 to 5,000 queries (depth 10, a quarter of
    the pairs already graded by the model): the whole list (``plan_pairs``, what llm-judge
    sends) against ``dry_plan`` (what --dry-run prints: the first pair and the count)."""
    import time

    from projectkit import make_small_project

    from ragjudge.services.labels.events import record_label
    from ragjudge.services.llm import judge as svc_judge

    print(f"{'queries':>8} {'pairs':>7} {'plan_pairs s':>13} {'dry_plan s':>11} {'same':>5}")
    for queries in (45, 500, 5_000):
        with tempfile.TemporaryDirectory() as folder:
            project = make_small_project(str(Path(folder) / "bench.db"), queries=queries, chunks=200)
            try:
                name = "llm:bench"
                for q, c in svc_judge.plan_pairs(project, name)[: queries * 10 // 4]:
                    record_label(project, annotator=name, query_id=q, chunk_id=c, grade=1)
                start = time.perf_counter()
                pairs = svc_judge.plan_pairs(project, name)
                full = time.perf_counter() - start
                start = time.perf_counter()
                first, count = svc_judge.dry_plan(project, name)
                dry = time.perf_counter() - start
            finally:
                project.close()
        same = "yes" if (first, count) == (pairs[0], len(pairs)) else "NO"
        print(f"{queries:>8,} {count:>7,} {full:>13.3f} {dry:>11.3f} {same:>5}")


if __name__ == "__main__":
    main()
