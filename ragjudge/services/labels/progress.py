"""How far each annotator is with their assignment, in plain SQL (:mod:`ragjudge.store.sqltext`):
``ragjudge status`` reads it on a project opened in full or with the standard library alone."""

from __future__ import annotations

from typing import Any

from ragjudge.services.events.labels import RECHECK
from ragjudge.store.sqltext import fetch


def _not_recheck(alias: str) -> str:
    return f"({alias}.source IS NULL OR {alias}.source <> '{RECHECK}')"


# the assignee's newest event of the pair that is not a blind re-check, graded or skipped:
# correlated on the pair, so that SQLite answers each assignment from the label index
# (ix_labels_annotator_pair) rather than scanning every label event per assignment
_DONE = (
    "EXISTS (SELECT 1 FROM labels event WHERE event.annotator = a.annotator "
    "AND event.query_id = a.query_id AND event.chunk_id = a.chunk_id AND "
    f"{_not_recheck('event')} AND (event.grade IS NOT NULL OR event.skipped = :yes) "
    "AND NOT EXISTS (SELECT 1 FROM labels newer WHERE newer.annotator = event.annotator "
    "AND newer.query_id = event.query_id AND newer.chunk_id = event.chunk_id "
    f"AND newer.id > event.id AND {_not_recheck('newer')}))"
)


def assignment_progress(project: Any) -> dict[str, dict]:
    """``{annotator: {"assigned", "overlap", "done"}}``: pairs assigned, of them in the overlap,
    and done (current label graded or skipped); empty without assignments."""
    with project.connect() as connection:
        rows = fetch(connection,
                     "SELECT a.annotator, count(*), "
                     "sum(CASE WHEN a.overlap = :yes THEN 1 ELSE 0 END), "
                     f"sum(CASE WHEN {_DONE} THEN 1 ELSE 0 END) "
                     "FROM assignments a GROUP BY a.annotator ORDER BY a.annotator", {"yes": True})
    return {
        name: {"assigned": int(n), "overlap": int(o or 0), "done": int(d or 0)}
        for name, n, o, d in rows
    }
