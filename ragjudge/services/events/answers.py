"""Current judgments of generated answers: the newest event per (thing judged, annotator)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from ragjudge.store.sqltext import fetch, listed, scalar

SUPPORTS = ("full", "partial", "none")


LEVELS = {"none": 0, "partial": 1, "full": 2}
"""Support as a number: agreement statistics treat it as an ordinal scale 0-2."""


BATCH = 500  # ids per IN (...) clause


@dataclass(frozen=True)
class CurrentJudgment:
    """One annotator's current judgment of one thing about an answer."""

    answer_id: int
    query_id: str
    run: str
    annotator: str
    nugget_id: int | None
    nugget: str | None
    sentence: int | None
    chunk_id: str | None
    support: str


_CURRENT = (
    "SELECT j.answer_id, a.query_id, a.run, j.annotator, j.nugget_id, n.text, j.sentence, "
    "j.chunk_id, j.support FROM answer_judgments j "
    "JOIN (SELECT max(id) AS id FROM answer_judgments "
    "GROUP BY answer_id, annotator, nugget_id, sentence, chunk_id) newest ON j.id = newest.id "
    "JOIN answers a ON a.id = j.answer_id LEFT OUTER JOIN nuggets n ON n.id = j.nugget_id "
    "WHERE j.support IS NOT NULL AND ((j.nugget_id IS NOT NULL AND n.removed = :no "
    "AND n.kind = 'nugget') OR (j.nugget_id IS NULL AND EXISTS (SELECT 1 FROM answer_citations c "
    "WHERE c.answer_id = j.answer_id AND c.sentence = j.sentence AND c.chunk_id = j.chunk_id)))"
)
"""The current judgments (an annotator's newest event per thing judged, with a support) of
things that still exist, in plain SQL (:mod:`ragjudge.store.sqltext`)."""


def current_judgments(connection: Any, *, annotators: Iterable[str] | None = None,
                      run: str | None = None, query_ids: Sequence[str] | None = None
                      ) -> list[CurrentJudgment]:
    """Every annotator's current judgment (its newest event, when it has a support) of things
    that still exist: nuggets not removed, citations the answer still has. Sorted by query, run,
    annotator, then nugget or (sentence, chunk). ``connection``: SQLAlchemy's or
    :mod:`ragjudge.store.sqltext`'s."""
    sql, params = _CURRENT, dict[str, Any](no=False)
    if annotators is not None:
        among, named = listed("annotator", annotators)
        sql += f" AND j.annotator IN ({among})"
        params.update(named)
    if run is not None:
        sql += " AND a.run = :run"
        params["run"] = run
    rows: list[Any] = []
    if query_ids is None:
        rows = fetch(connection, sql, params)
    else:
        wanted = list(dict.fromkeys(query_ids))
        for at in range(0, len(wanted), BATCH):
            among, named = listed("query", wanted[at:at + BATCH])
            rows += fetch(connection, sql + f" AND a.query_id IN ({among})", {**params, **named})
    out = [CurrentJudgment(int(r[0]), r[1], r[2], r[3], None if r[4] is None else int(r[4]), r[5],
                           None if r[6] is None else int(r[6]), r[7], r[8]) for r in rows]
    out.sort(key=lambda c: (c.query_id, c.run, c.annotator, c.nugget_id is None,
                            c.nugget_id or 0, c.sentence or 0, c.chunk_id or ""))
    return out


def judgments_stamp(connection: Any) -> int:
    """The newest answer judgment's id (see :func:`answers_stamp`)."""
    return int(scalar(connection, "SELECT max(id) FROM answer_judgments") or 0)


def answers_stamp(project) -> int:  # noqa: ANN001
    """The newest answer judgment's id: it changes exactly when a judgment was written (the
    table is append-only), and costs one index lookup, so a live screen can poll it."""
    with project.connect() as connection:
        return judgments_stamp(connection)
