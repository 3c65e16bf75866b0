"""Benchmark of the judging app (not a pytest test): keypress -> label committed -> next pair
rendered, over 500 labels, on the demo project and on a generated 10,000-query project.

    /work/venv/bin/python tests/bench/bench_tui.py [--labels 500] [--queries 10000] [--keep DIR]

Prints the median and p95 of the keypress-to-next-pair time and the start-up time to the first
pair. Targets (issue 4): median < 16 ms, p95 < 50 ms, start-up < 1.5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("parcel delivery courier tracking refund address customs label return damaged late "
         "locker pickup signature weekend express insurance invoice warehouse driver route "
         "postcode redelivery missing fragile oversized international duty schedule").split()


def generate_project(db: str, *, queries: int = 10_000, runs: int = 10, depth: int = 20,
                     chunks: int = 200_000, seed: int = 7) -> dict:
    """A synthetic project: ``queries`` queries, ``runs`` runs ranking ``depth`` chunks each.

    Runs overlap (they draw from a per-query candidate set of 6*depth chunks), so the depth-20
    pool holds about a million distinct pairs at 10,000 queries.
    """
    from ragjudge.services.project import Project

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
