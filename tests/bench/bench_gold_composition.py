"""Benchmark (not a pytest test): what showing the gold's composition costs, on the large
project of bench_live_eval.py (10,000 queries x 100 depth x 10 runs, 1.4 M labels).

    python tests/bench/bench_gold_composition.py [--large DB] [--repeat 3]

It reports, best of --repeat:
- the evaluation screen's details pass (intervals, agreement, pool coverage) beside the count
  of the gold's composition the screen now adds to it (:func:`ragjudge.services.gold.gold.gold`,
  asked again only when labels arrived or the rule changed);
- gold() beside the gold qrels the commands read before (``gold_qrel_arrays``, the same rule
  code without the composition), so the composition's own cost shows;
- the same with one annotator made a complete reference (on a copy): the closed world over
  the 10 runs (``closure``), which every command that scores such a project pays;
- ``eval --qrels --complete``'s closure of the exported qrels over the 10 runs
  (:func:`ragjudge.services.scoring.files.close_qrels`).

Build the project first with ``python tests/bench/bench_live_eval.py`` (it keeps it at
/tmp/ragjudge-bench/live-large.db).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def best(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", default="/tmp/ragjudge-bench/live-large.db")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from ragjudge.services.gold.gold import gold
    from ragjudge.services.gold.qrels import gold_qrel_arrays
    from ragjudge.services.project.database import Project
    from ragjudge.services.scoring.files import close_qrels
    from ragjudge.services.scoring.live import LiveEvaluation

    db = Path(args.large)
    if not db.exists():
        print(f"{db} does not exist: build it with tests/bench/bench_live_eval.py first.")
        return 1
    rows = []
    with Project.open(str(db)) as project:
        engine = LiveEvaluation(project)
        engine.load()
        runs = engine.runs
        rows.append(("details pass (intervals, agreement, pool)", best(args.repeat, engine.details)))
        rows.append(("composition: gold(runs=the engine's)",
                     best(args.repeat, lambda: gold(project, engine.rule, runs=runs))))
        rows.append(("gold qrels as the commands read them before",
                     best(args.repeat, lambda: gold_qrel_arrays(project))))
        found = gold(project, runs=runs)
        print(f"  composition: {found.composition.describe()}")
        qrels = found.qrels()
        rows.append((f"close_qrels: {len(qrels):,} judgments over {len(runs)} runs "
                     f"({sum(len(r) for r in runs.values()):,} entries)",
                     best(args.repeat, lambda: close_qrels(qrels, runs.values()))))
        name = found.composition.annotators[0]
    copy = db.with_name(db.stem + "-reference.db")
    shutil.copyfile(db, copy)
    try:
        with Project.open(str(copy)) as project:
            from ragjudge.services.access.roster import set_reference

            set_reference(project, name, complete=True)
            found = gold(project, runs=runs)
            print(f"  with {name} a complete reference: {found.composition.describe()}")
            rows.append((f"gold() with {name} a complete reference (closed world)",
                         best(args.repeat, lambda: gold(project, runs=runs))))
    finally:
        for path in copy.parent.glob(copy.name + "*"):
            path.unlink()
    width = max(len(label) for label, _ in rows)
    for label, seconds in rows:
        print(f"{label:<{width}}  {seconds * 1000:>9.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
