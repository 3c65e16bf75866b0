"""A project for the sampling tests, importable as ``samplingkit``: 6 queries, 80 chunks, two
runs of 40 ranks (``bm25`` and ``dense``, overlapping), a lead ``lea``; each chunk's grade is
fixed by its number, so any annotator judges a pair the same way."""

from __future__ import annotations

import numpy as np
from projectkit import make_small_project, rights

from ragjudge.metrics.data import Qrels
from ragjudge.services.access import roster
from ragjudge.services.labels.events import record_label
from ragjudge.services.runs import stored

DEPTH = 40
QUERIES = 6
MEASURES = ["infAP", "statAP", "statAP_var", "xinfAP", "infNDCG", "infP@10", "xinfAP@20"]
GRADES = (0, 0, 1, 2, 0, 3, 0, 1, 0, 0)


def dense_chunk(query: int, rank: int) -> str:
    # 2 * rank covers 2..80 once for rank 1..40: no chunk twice in a query
    return f"c{(query * 7 + 2 * rank + 5) % 80 + 1:02d}"


def grade_of(chunk_id: str) -> int:
    return GRADES[int(chunk_id[1:]) % 10]


def make_project(path: str) -> str:
    from ragjudge.store.schema import Run, RunEntry

    project = make_small_project(path, queries=QUERIES, chunks=80, depth=DEPTH)

    def fill(session) -> None:
        session.add(Run(name="dense"))
        session.flush()
        for i in range(1, QUERIES + 1):
            for rank in range(1, DEPTH + 1):
                session.add(RunEntry(run="dense", query_id=f"q{i}", chunk_id=dense_chunk(i, rank),
                                     rank=rank, score=1.0 / rank))

    project.write(fill)
    roster.add(project, "lea", role="lead", access=rights(project, "lea"))
    project.close()
    return path


def pool_by_hand(project, depth: int = DEPTH) -> tuple[list[str], list[str], list[int]]:
    """The pool at ``depth`` from the runs' ranked lists: each pair's best rank, in (query,
    chunk) order."""
    best: dict[tuple[str, str], int] = {}
    for name in stored.project_run_names(project):
        for query, chunks in stored.project_run(project, name).to_ranked().items():
            for rank, chunk in enumerate(chunks[:depth], start=1):
                best[(query, chunk)] = min(best.get((query, chunk), rank), rank)
    pairs = sorted(best)
    return [q for q, _ in pairs], [c for _, c in pairs], [best[p] for p in pairs]


def sample_rows(sample) -> list[tuple[str, str, int, float, bool]]:
    """A PoolSample's pairs as (query, chunk, stratum, inclusion, drawn), sorted."""
    from ragjudge.metrics._keys import decode

    return sorted(zip(decode(sample.query_ids), decode(sample.chunk_ids), sample.stratum.tolist(),
                      sample.inclusion.tolist(), sample.drawn.tolist()))


def judge(project, pairs, annotator: str = "ann") -> None:
    for query, chunk in pairs:
        record_label(project, annotator=annotator, query_id=query, chunk_id=chunk,
                     grade=grade_of(chunk))


def drawn_pairs(stored_sample) -> list[tuple[str, str]]:
    return [(q, c) for q, c, _, _, d in sample_rows(stored_sample.pool) if d]


def trec_eval_qrels(rows, judged: dict[tuple[str, str], int]) -> Qrels:
    """trec_eval's convention for a sample, by hand: every pooled pair listed, its grade when
    drawn and judged, -1 otherwise."""
    q, c, g = [], [], []
    for query, chunk, _, _, drawn in rows:
        q.append(query)
        c.append(chunk)
        g.append(judged[(query, chunk)] if drawn and (query, chunk) in judged else -1)
    return Qrels(q, c, np.array(g, dtype=np.int64))


def strata_prels(rows, judged: dict[tuple[str, str], int]) -> str:
    """The sample as sample_eval.pl's strata file: query iteration chunk stratum grade."""
    return "".join(
        f"{q} 0 {c} {s} {judged[(q, c)] if d and (q, c) in judged else -1}\n"
        for q, c, s, _, d in rows)


def trec_run(project, name: str) -> str:
    run = stored.project_run(project, name)
    return "".join(f"{q} Q0 {c} {r} {1.0 / r} {name}\n"
                   for q, chunks in run.to_ranked().items()
                   for r, c in enumerate(chunks, start=1))
