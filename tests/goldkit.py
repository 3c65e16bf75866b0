"""A project whose gold mixes a collection's official qrels with the team's labels: the outside
testers' finding in miniature, importable from any test folder as ``goldkit``.

Queries q1..q5, chunks c01..c30, three runs of depth 10 per query:

- ``bm25``: chunk (3i + rank) % 30 + 1 at rank 1..10 (the ``make_small_project`` run);
- ``dense``: chunk (3i + 10 + rank) % 30 + 1, ten chunks bm25 never retrieves;
- ``hybrid``: bm25 and dense interleaved, its first five chunks each.

The official qrels (:func:`official`) grade four chunks of q1..q4: bm25's ranks 1 and 3 (grades
2 and 1), dense's rank 5 (1) and dense's rank 1 (0), plus a relevant chunk none of the runs
retrieves. The team (:func:`team_labels`): ana grades dense's ranks 2 and 3 of q1..q4 relevant
(pairs the official qrels never list) and disagrees with the official grades of bm25's rank 1
and dense's rank 1. Under the official qrels alone bm25 is ahead of dense on AP; with ana's
labels dense is ahead.
"""

from __future__ import annotations

from pathlib import Path

RUNS = ("bm25", "dense", "hybrid")
OFFICIAL_QUERIES = ("q1", "q2", "q3", "q4")


def bm25(i: int) -> list[str]:
    return [f"c{(i * 3 + rank) % 30 + 1:02d}" for rank in range(1, 11)]


def dense(i: int) -> list[str]:
    return [f"c{(i * 3 + 10 + rank) % 30 + 1:02d}" for rank in range(1, 11)]


def hybrid(i: int) -> list[str]:
    return [c for pair in zip(bm25(i)[:5], dense(i)[:5]) for c in pair]


RANKINGS = {"bm25": bm25, "dense": dense, "hybrid": hybrid}


def unretrieved(i: int) -> str:
    """A chunk of query q{i} that no run retrieves."""
    retrieved = set(bm25(i)) | set(dense(i))
    return next(f"c{j:02d}" for j in range(1, 31) if f"c{j:02d}" not in retrieved)


def official() -> dict[str, dict[str, int]]:
    out = {}
    for i in range(1, 5):
        out[f"q{i}"] = {bm25(i)[0]: 2, bm25(i)[2]: 1, dense(i)[4]: 1, dense(i)[0]: 0,
                        unretrieved(i): 3}
    return out


def team_labels() -> list[tuple[str, str, str, int]]:
    """(annotator, query, chunk, grade): 8 labels on unlisted pairs, 8 on listed ones."""
    out = []
    for i in range(1, 5):
        q = f"q{i}"
        out += [("ana", q, dense(i)[1], 2), ("ana", q, dense(i)[2], 2),
                ("ana", q, dense(i)[0], 3), ("ana", q, bm25(i)[0], 0)]
    return out


def run_lines(name: str) -> str:
    ranking = RANKINGS[name]
    return "".join(f"q{i} Q0 {c} {r} {1.0 / r} {name}\n" for i in range(1, 6)
                   for r, c in enumerate(ranking(i), start=1))


def run_dict(name: str) -> dict[str, dict[str, float]]:
    """A run as pytrec_eval takes it (scores 1/rank: the same order as the file)."""
    return {f"q{i}": {c: 1.0 / r for r, c in enumerate(RANKINGS[name](i), start=1)}
            for i in range(1, 6)}


def write_files(folder: Path) -> tuple[Path, dict[str, Path]]:
    """The official qrels file and one TREC file per run in ``folder``."""
    qrels = folder / "official.qrels"
    qrels.write_text("".join(f"{q} 0 {c} {g}\n" for q, chunks in official().items()
                             for c, g in chunks.items()), encoding="utf-8")
    runs = {}
    for name in RUNS:
        runs[name] = folder / f"{name}.trec"
        runs[name].write_text(run_lines(name), encoding="utf-8")
    return qrels, runs


def make_project(db: str, folder: Path, *, complete: bool = False, team: bool = True,
                 reference: bool = True) -> None:
    """The project: queries, chunks, the three runs, the official qrels imported as the
    reference ``nist`` (``complete``: relevant-only qrels, an unlisted pair is not relevant;
    without ``reference``, as one more annotator) and, with ``team``, ana's labels."""
    from projectkit import make_small_project

    from ragjudge.services.access.visibility import access_for
    from ragjudge.services.labels.events import record_label
    from ragjudge.services.transfer.importing import import_file

    qrels, runs = write_files(folder)
    project = make_small_project(db, queries=5, chunks=30)
    try:
        for name in ("dense", "hybrid"):
            import_file(project, "run", str(runs[name]))
        # a new project has no lead: whoever builds it marks the reference
        import_file(project, "qrels", str(qrels), annotator="nist", reference=reference,
                    complete=complete, access=access_for(project, "builder"))
        if team:
            for annotator, q, c, g in team_labels():
                record_label(project, annotator=annotator, query_id=q, chunk_id=c, grade=g)
    finally:
        project.close()
