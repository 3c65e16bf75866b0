"""Generate TREC qrels and run files for the benchmark (deterministic, cached on disk)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

SIZES = {"small": (1_000, 100), "large": (10_000, 1_000)}


def generate(size: str, directory: Path) -> tuple[Path, Path]:
    """Write ``qrels.trec`` and ``run.trec`` for SIZES[size] into directory (once)."""
    n_queries, depth = SIZES[size]
    directory.mkdir(parents=True, exist_ok=True)
    qrels_path, run_path = directory / f"qrels-{size}.trec", directory / f"run-{size}.trec"
    if qrels_path.exists() and run_path.exists():
        return qrels_path, run_path
    rng = np.random.default_rng(20261122)
    corpus = 50 * n_queries * 10
    tmp_q, tmp_r = qrels_path.with_suffix(".tmp"), run_path.with_suffix(".tmp")
    with open(tmp_q, "w") as fq, open(tmp_r, "w") as fr:
        for q in range(n_queries):
            qid = f"q{q:05d}"
            docs = rng.choice(corpus, depth + 20, replace=False)
            scores = np.sort(rng.random(depth) * 30)[::-1]
            run_docs = docs[:depth]
            fr.write("".join(
                f"{qid} Q0 d{d} {r} {s:.6f} bench\n"
                for r, (d, s) in enumerate(zip(run_docs.tolist(), scores.tolist()), start=1)
            ))
            # 30 judged from the run (random ranks), 20 judged that the run missed
            judged = np.concatenate([rng.choice(run_docs, min(30, depth), replace=False), docs[depth:]])
            grades = rng.choice(4, len(judged), p=[0.55, 0.25, 0.12, 0.08])
            fq.write("".join(f"{qid} 0 d{d} {g}\n" for d, g in zip(judged.tolist(), grades.tolist())))
    os.replace(tmp_q, qrels_path)
    os.replace(tmp_r, run_path)
    return qrels_path, run_path


if __name__ == "__main__":
    import sys

    print(generate(sys.argv[1], Path(sys.argv[2] if len(sys.argv) > 2 else "/tmp/ragjudge-bench")))
