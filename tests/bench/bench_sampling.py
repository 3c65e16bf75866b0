"""Benchmark: judging a sample of the pool, from drawing it to scoring the runs.

    PYTHONPATH=. python tests/bench/bench_sampling.py [--queries 2000] [--depth 100] [--size 20]

Not a test (pytest does not collect it). A generated project (``--queries`` queries, two runs of
``--depth`` ranks that overlap, every chunk a placeholder), built once in a temporary folder
with ``ragjudge init`` and ``ragjudge import run``. Each line below is one ``ragjudge`` process,
timed from start to exit (interpreter start, imports, database, output), side by side with
its peer:

- ``assign`` of the whole pool (twice: the first also writes the runs' ranks past their
  stored heads) beside ``assign --sample N`` (uniform, stratified), each with ``--replace``:
  the sample costs the pool read with each pair's best rank, the draw, and writing every pooled
  pair's row into ``pool_sample_pairs`` in the assignment's transaction, and saves assigning
  the pairs not drawn;
- once the drawn pairs are judged (imported as one annotator's qrels): ``eval --db`` of the
  sampled estimates beside ``eval --db`` of plain measures on the same gold, and beside
  ``eval --prels`` on the same sample written as a strata file with the runs as files (the
  values are compared too: they must agree).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SAMPLED = "infAP,statAP,xinfAP,infNDCG,infP@10"
PLAIN = "AP,nDCG@10,P@10,Rprec,RR"


def ragjudge(*args: str) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ragjudge", *args], capture_output=True,
                          text=True, env={**os.environ, "RAGJUDGE_DB": ""})
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"ragjudge {' '.join(args[:4])} ... failed:\n{done.stderr}")
    return elapsed, done.stdout


def build(folder: Path, n_queries: int, depth: int) -> tuple[str, list[Path]]:
    rng = np.random.default_rng(7)
    runs = [folder / "bm25.trec", folder / "dense.trec"]
    lines: list[list[str]] = [[], []]
    for q in range(n_queries):
        chunks = rng.choice(depth * 3, depth * 2, replace=False)
        shared = chunks[: depth // 2]
        for k, own in enumerate((chunks[depth // 2: depth], chunks[depth: depth + depth // 2])):
            ranked = rng.permutation(np.concatenate([shared, own]))
            lines[k] += [f"q{q} Q0 c{q}_{c} {r} {depth - r + 1} run{k}"
                         for r, c in enumerate(ranked.tolist(), start=1)]
    for path, text in zip(runs, lines):
        path.write_text("\n".join(text) + "\n")
    db = str(folder / "bench.db")
    ragjudge("init", "--db", db, "--scale", "0-3")
    for path in runs:
        ragjudge("--db", db, "import", "run", str(path), "--create-missing", "--quiet")
    return db, runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--size", type=int, default=20)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="rj-bench-sampling-"))
    db, runs = build(folder, args.queries, args.depth)
    depth = str(args.depth)
    print(f"{args.queries:,} queries, 2 runs of {args.depth} ranks, samples of {args.size} "
          f"pairs per query ({folder})")
    for label in ("assign, whole pool (heads widened first)", "assign, whole pool"):
        whole, _ = ragjudge("--db", db, "assign", "--annotators", "ann,bob", "--depth", depth,
                            "--replace", "--format", "json")
        print(f"{label:42s} {whole:7.2f} s")
    for strategy in ("uniform", "stratified"):
        took, out = ragjudge("--db", db, "assign", "--annotators", "ann,bob", "--depth", depth,
                             "--replace", "--sample", str(args.size), "--strategy", strategy,
                             "--format", "json")
        sample = json.loads(out)["sample"]
        print(f"{'assign --sample ' + strategy:42s} {took:7.2f} s   ({sample['drawn']:,} of "
              f"{sample['pooled']:,} pairs drawn)")
    # judge the drawn pairs of the current (stratified) sample: one annotator's qrels
    import sqlite3

    rows = sqlite3.connect(db).execute(
        "SELECT query_id, chunk_id, stratum, drawn FROM pool_sample_pairs WHERE sample_id = "
        "(SELECT max(id) FROM pool_samples)").fetchall()
    rng = np.random.default_rng(3)
    grades = {(q, c): int(rng.choice(4, p=[0.6, 0.2, 0.12, 0.08])) for q, c, _, d in rows if d}
    qrels = folder / "judged.qrels"
    qrels.write_text("".join(f"{q} 0 {c} {g}\n" for (q, c), g in grades.items()))
    ragjudge("--db", db, "import", "qrels", str(qrels), "--annotator", "ann", "--quiet")
    prels = folder / "sample.strata"
    prels.write_text("".join(f"{q} 0 {c} {s} {grades[(q, c)] if d else -1}\n"
                             for q, c, s, d in rows))
    files = [a for path in runs for a in ("--run", str(path))]
    plain, _ = ragjudge("--db", db, "eval", "-m", PLAIN, "--format", "json", "--quiet")
    ours, project_out = ragjudge("--db", db, "eval", "-m", SAMPLED, "--format", "json", "--quiet")
    theirs, file_out = ragjudge("eval", "--prels", str(prels), "--prels-form", "strata", *files,
                                "-m", SAMPLED, "--format", "json", "--quiet")
    print(f"{'eval --db, plain measures (' + PLAIN + ')':42s} {plain:7.2f} s")
    print(f"{'eval --db, sampled (' + SAMPLED + ')':42s} {ours:7.2f} s")
    print(f"{'eval --prels FILE --run FILES, sampled':42s} {theirs:7.2f} s")
    a = json.loads(project_out)["runs"]
    b = json.loads(file_out)["runs"]
    worst = max(abs(a[n]["aggregate"][m] - b[f"{n}"]["aggregate"][m])
                for n in ("bm25", "dense") for m in SAMPLED.split(","))
    print(f"largest difference of a mean between the project and the file: {worst:.3g}")


if __name__ == "__main__":
    main()
