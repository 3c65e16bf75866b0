"""Small projects for the report's tests (importable as ``reportkit``): queries ``q1..qN`` whose
ids sort differently as text and as numbers, two runs, and labels by two annotators."""

from __future__ import annotations

HOSTILE_RUN = "<script>alert(1)</script>"
HOSTILE_QUERY = '"><img src=x onerror=alert(2)>'


def small_project(db: str, *, queries: int = 12, second_run: str = "dense",
                  query_text: str | None = None) -> None:
    """A project at ``db``: queries q1..q``queries`` (q3's text ``query_text`` when given),
    runs ``bm25`` and ``second_run``, every pair of each query's top 3 graded by ``ana`` and
    ``ben`` (who disagree on some)."""
    from projectkit import make_small_project

    from ragjudge.services.labels.events import record_label
    from ragjudge.store.schema import Query, Run, RunEntry

    project = make_small_project(db, queries=queries, chunks=20, depth=10)
    try:
        def fill(session) -> None:
            if query_text is not None:
                session.get(Query, "q3").text = query_text
            session.add(Run(name=second_run))
            session.flush()
            for i in range(1, queries + 1):
                for rank in range(1, 11):
                    j = (i * 5 + rank) % 20 + 1
                    session.add(RunEntry(run=second_run, query_id=f"q{i}", chunk_id=f"c{j:02d}",
                                         rank=rank, score=1.0 / rank))

        project.write(fill)
        for i in range(1, queries + 1):
            for rank in range(1, 4):
                chunk = f"c{(i * 3 + rank) % 20 + 1:02d}"
                grade = (i + rank) % 4
                record_label(project, annotator="ana", query_id=f"q{i}", chunk_id=chunk, grade=grade)
                record_label(project, annotator="ben", query_id=f"q{i}", chunk_id=chunk,
                             grade=grade if rank != 2 else (grade + 1) % 4)
    finally:
        project.close()
