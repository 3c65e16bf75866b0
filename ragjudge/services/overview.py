"""A project at a glance: the counts ``ragjudge status`` and the home screen show.

Read in plain SQL (:mod:`ragjudge.store.sqltext`), so that ``status`` reads a SQLite project
opened with the standard library alone (:class:`ragjudge.services.project.lite.LiteProject`)
with the same code as a project opened in full."""

from __future__ import annotations

from typing import Any

from ragjudge.services.events.setmarks import count_set_marks
from ragjudge.services.runs.stored import run_sizes
from ragjudge.store.sqltext import fetch, scalar


def project_status(project: Any) -> dict[str, Any]:
    """Counts for ``ragjudge status`` and the home screen (``project``: a
    :class:`~ragjudge.services.project.database.Project` or a
    :class:`~ragjudge.services.project.lite.LiteProject`)."""
    from ragjudge.services.gold.pool import pool_size_and_judged

    with project.connect() as connection:
        def count(table: str) -> int:
            return int(scalar(connection, f"SELECT count(*) FROM {table}"))

        queries, chunks, runs = count("queries"), count("chunks"), count("runs")
        annotators = count("annotators")
        labels = count("labels")
        flagged = count_set_marks(connection, "flag")
        per_annotator = dict(fetch(connection, "SELECT annotator, count(*) FROM labels GROUP BY annotator"))
        run_rows = run_sizes(connection)
        reference = fetch(connection, "SELECT name, complete FROM annotators WHERE reference = :yes "
                                      "ORDER BY name", {"yes": True})
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
