"""A project at a glance: the counts ``ragjudge status`` and the home screen show."""

from __future__ import annotations

from typing import Any
from sqlalchemy import func, select
from ragjudge.store.schema import Annotator, Chunk, Label, Query, Run
from ragjudge.services.project.database import Project
from ragjudge.services.runs.stored import run_sizes


def project_status(project: Project) -> dict[str, Any]:
    """Counts for ``ragjudge status`` and the home screen."""
    from ragjudge.services.events.marks import set_marks
    from ragjudge.services.gold.pool import pool_size_and_judged

    with project.read() as session:
        count = lambda model: session.scalar(select(func.count()).select_from(model))  # noqa: E731
        queries, chunks, runs = count(Query), count(Chunk), count(Run)
        annotators = count(Annotator)
        labels = count(Label)
        flagged = count(set_marks("flag").subquery())
        per_annotator = dict(
            session.execute(select(Label.annotator, func.count()).group_by(Label.annotator)).all()
        )
        run_rows = run_sizes(session)
        reference = session.execute(select(Annotator.name, Annotator.complete)
                                    .where(Annotator.reference.is_(True)).order_by(Annotator.name)).all()
    pool = pool_size_and_judged(project)
    return {
        "project": project.name,
        "db": project.shown_db,
        "scale": project.scale.describe(),
        "threshold": project.scale.threshold,
        "rule": project.rule,
        "reference": [{"name": name, "complete": bool(complete)} for name, complete in reference],
        "queries": queries,
        "chunks": chunks,
        "runs": runs,
        "annotators": annotators,
        "labels": labels,
        "flagged": flagged,
        "labels_per_annotator": per_annotator,
        "run_summary": [
            {"name": name, "entries": n, "queries": q, "depth": d} for name, n, q, d in run_rows
        ],
        "pool": pool,
    }
