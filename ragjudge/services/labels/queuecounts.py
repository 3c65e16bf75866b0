"""Counting: a judging queue's pool and the pairs its annotator has handled
(:class:`QueueCounts`, a mixin of :class:`~ragjudge.services.labels.queue.JudgingQueue`), and
every annotator's grades, skips, flags and events (:func:`annotator_progress`, for the home
screen)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from ragjudge.services.events.marks import set_marks
from ragjudge.services.labels.queuecore import PUBLISHED_RE, QueryPool

if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


class QueueCounts:
    """The totals of a judging queue (a mixin: the queue sets what is annotated here, and
    reads its pools)."""

    project: Any
    annotator: str
    depth: int
    assigned: bool
    only: dict[str, set[str]] | None
    query_ids: list[str]
    totals: dict[str, int] | None

    if TYPE_CHECKING:
        def _run_filter(self, alias: str = "re") -> tuple[str, dict]: ...

        def _load_pool(self, query_id: str) -> QueryPool: ...

    def count_totals(self) -> dict[str, int]:
        """The queue's pool size and how many pairs the annotator has handled (a full scan:
        run it in a worker on big projects)."""
        from sqlalchemy import text

        runs_sql, params = self._run_filter()
        params.update(depth=self.depth, annotator=self.annotator)
        if self.assigned:
            pool_sql = "SELECT query_id, chunk_id FROM assignments re WHERE re.annotator = :annotator"
        else:
            pool_sql = (f"SELECT DISTINCT re.query_id, re.chunk_id FROM run_entries re "
                        f"WHERE re.rank <= :depth{runs_sql} AND {PUBLISHED_RE}")
        subset = len(self.query_ids)
        with self.project.connect() as connection:
            total_queries = connection.execute(text("SELECT COUNT(*) FROM queries")).scalar()
            filtered = subset != total_queries or self.only is not None
            if filtered:
                # small subsets: count per query through the cache-free loader
                pairs = handled = 0
                for qid in self.query_ids:
                    pool = self._load_pool(qid)
                    pairs += len(pool.chunk_ids)
                    handled += pool.handled
                self.totals = {"pairs": pairs, "handled": handled}
                return self.totals
            pairs = connection.execute(text(f"SELECT COUNT(*) FROM ({pool_sql}) p"), params).scalar()
            handled = connection.execute(text(
                f"SELECT COUNT(*) FROM ({pool_sql}) p JOIN labels l ON l.id = ("
                " SELECT MAX(l2.id) FROM labels l2 WHERE l2.annotator = :annotator"
                " AND l2.query_id = p.query_id AND l2.chunk_id = p.chunk_id"
                " AND (l2.source IS NULL OR l2.source <> 'recheck')) WHERE (l.grade IS NOT NULL OR l.skipped = TRUE)"
            ), params).scalar()
        self.totals = {"pairs": int(pairs or 0), "handled": int(handled or 0)}
        return self.totals


def func_count():  # noqa: ANN201
    from sqlalchemy import func

    return func.count()


def annotator_progress(project: Project) -> list[dict]:
    """Per annotator: current grades, skipped pairs, flagged pairs, events and kind (human or
    llm), for the home screen."""
    from sqlalchemy import func, text

    with project.connect() as connection:
        rows = connection.execute(text(
            "SELECT a.name, "
            " (SELECT COUNT(*) FROM labels l WHERE l.annotator = a.name) AS events, a.kind "
            "FROM annotators a ORDER BY a.name")).all()
        current = connection.execute(text(
            "SELECT l.annotator, SUM(CASE WHEN l.grade IS NOT NULL THEN 1 ELSE 0 END), "
            " SUM(CASE WHEN l.grade IS NULL AND l.skipped = TRUE THEN 1 ELSE 0 END) "
            "FROM labels l JOIN (SELECT MAX(id) AS id "
            " FROM labels WHERE source IS NULL OR source <> 'recheck' GROUP BY annotator, query_id, chunk_id) n "
            " ON n.id = l.id "
            "GROUP BY l.annotator")).all()
        flagged = set_marks("flag").subquery()
        flags: dict[str, int] = dict(connection.execute(select(flagged.c.annotator, func.count())
                                        .group_by(flagged.c.annotator)).all())
    by_name = {name: (int(g or 0), int(s or 0)) for name, g, s in current}
    out = []
    for name, events, kind in rows:
        graded, skipped = by_name.get(name, (0, 0))
        out.append({"annotator": name, "graded": graded, "skipped": skipped,
                    "flagged": int(flags.get(name, 0)), "events": int(events or 0),
                    "kind": kind or "human"})
    return out
