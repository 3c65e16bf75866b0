"""LLM judge benchmark (not a test): pairs a second and ragjudge's own overhead per pair at
concurrency 1 and 8, against the loopback chat-completions server of the tests.

    python tests/bench/bench_llm_judge.py                 # 200 pairs, server answering at once
    python tests/bench/bench_llm_judge.py --pairs 500 --delay 0.05

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
    args = parser.parse_args()

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


if __name__ == "__main__":
    main()
