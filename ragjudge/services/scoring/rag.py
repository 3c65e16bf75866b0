"""The data of the RAG measures (``ragjudge.metrics.rag``), built from a project database.

One call fills every extra an evaluation needs for one run::

    extras = rag_extras(project, run_name, measures=measures, rule=rule)
    evaluate(qrels, run, measures, extras=extras)

The extras are the project's gold labels, independent of the rank matrix
(:class:`~ragjudge.metrics.rag.ItemLabels`, ``EntityLabels``, ``CitationLabels``,
``AnswerLabels``); each measure kernel aligns them with the rows and ranks of the context it
evaluates. Only the extras the measures need are read (``measures=None``: all of them); only
``citations`` and ``answers`` depend on the run.

Given ``query_ids`` and ``chunk_matrix`` (the (queries x depth) chunk ids of a run matrix in
rank order: rank 1 in column 0, padding ``b''``, ``''`` or None), the extras come back already
aligned with those rows and ranks (:class:`ItemSupport`, :class:`Citations`).

How the annotators' labels become one judgement (the gold rule for RAG labels)
------------------------------------------------------------------------------
- An annotator's current opinion of a (facet, chunk) or (nugget, chunk) pair is their newest
  event for it. Annotators who never touched a pair have no opinion about it: they are not
  counted as a "no".
- The opinions of the annotators are combined with the same aggregation rule as the gold qrels
  (the project's rule, or ``rule``), on numbers: a facet link is 0 (not covered) or 1 (covered),
  support is 0 none, 1 partial, 2 full. The default ``median`` takes the lower median, so two
  annotators who disagree give the lower judgement (not covered, or partial rather than full),
  and three give the majority. ``max`` is "any annotator says so", ``min`` "all of them do".
  ``annotator:NAME`` uses that annotator's events only. Facets and nuggets are never adjudicated,
  so under ``adjudicated`` they fall back to ``median``.
- Removed facets and nuggets do not count. Nuggets of kind ``claim`` are the claims of the
  reference answer (ContextRecall); the others are nuggets (NuggetRecall).
- Entities are matched in the chunks' text (:func:`ragjudge.metrics.entities.entity_hits`: NFKD,
  combining marks removed, case-folded, whole words).
- Citations are those of the run's own generated answer (``answers.run`` = the run's name);
  Attribution is computed on every query some run answered.
- Judgments of the run's answers (nugget support, citation support) are combined under the same
  rule (:func:`ragjudge.services.scoring.answers.answer_labels`); the answer measures are
  computed on every query whose answers (of any run) are judged, graded or not.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any
import math

import numpy as np
from ragjudge.metrics.rag import (
    FULL,
    SUPPORT_LEVELS,
    CitationLabels,
    EntityLabels,
    ItemLabels,
    as_id_matrix,
    matrix_positions,
    required_extras,
)
from ragjudge.services.gold.support import combine_support, support_rule


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


_BATCH = 500  # ids per IN (...) clause


def rag_extras(project: Project, run_name: str | None = None, query_ids: Sequence[str] | None = None,
               chunk_matrix: Any = None, measures: Iterable[Any] | None = None, *,
               rule: str | None = None, only_queries: Sequence[str] | None = None) -> dict[str, Any]:
    """Extras for the RAG measures of ``run_name`` from the project's labels.

    Keys (only those the measures need): ``facets``, ``nuggets``, ``claims`` (ItemLabels),
    ``entities`` (EntityLabels), ``citations`` (CitationLabels of ``run_name``'s answers) and
    ``answers`` (AnswerLabels: ``run_name``'s answers and their judgments; ``only_queries``: of
    these queries only, what a live update needs).
    ``rule``: how annotators are combined (default: the project's rule; module docstring).
    With ``query_ids`` and ``chunk_matrix`` the values come back aligned with them
    (ItemSupport / Citations). Cheap when no measure needs them: nothing is read."""
    needed = required_extras(measures)
    if not needed:
        return {}
    rule = support_rule(project.rule if rule is None else rule)
    extras: dict[str, Any] = {}
    cache = project.__dict__.setdefault("_rag_support_cache", {})
    with project.connect() as connection:
        if "facets" in needed:
            extras["facets"] = _facet_labels(connection, rule, cache)
        if "nuggets" in needed:
            extras["nuggets"] = _nugget_labels(connection, rule, cache, kind="nugget")
        if "claims" in needed:
            extras["claims"] = _nugget_labels(connection, rule, cache, kind="claim")
        if "entities" in needed:
            from sqlalchemy import select

            from ragjudge.store.schema import Entity

            rows = connection.execute(select(Entity.query_id, Entity.text)
                                      .order_by(Entity.query_id, Entity.id)).all()
            extras["entities"] = EntityLabels([q for q, _ in rows], [t for _, t in rows],
                                              lambda ids: chunk_texts(project, ids),
                                              project.__dict__.setdefault("_rag_entity_matches", {}))
        if "citations" in needed:
            extras["citations"] = _citation_labels(connection, run_name)
        if "answers" in needed:
            from ragjudge.services.scoring.answers import answer_labels

            extras["answers"] = answer_labels(connection, run_name, rule, only_queries,
                                              cache=cache)
    if query_ids is None and chunk_matrix is None:
        return extras
    if query_ids is None or chunk_matrix is None or len(chunk_matrix) != len(query_ids):
        raise ValueError("rag_extras: give query_ids and a chunk_matrix with one row per query")
    query_ids = [q.decode("utf-8") if isinstance(q, bytes) else str(q) for q in query_ids]
    matrix = as_id_matrix(chunk_matrix, len(query_ids))
    positions = matrix_positions(query_ids, matrix)
    aligned: dict[str, Any] = {}
    for key, value in extras.items():
        if key == "answers":
            aligned[key] = value.align(query_ids)
        elif isinstance(value, ItemLabels):
            aligned[key] = value.align(query_ids, positions)
        elif isinstance(value, EntityLabels):
            aligned[key] = value.align(query_ids, matrix)
        else:
            retrieved = (np.char.str_len(matrix) > 0).sum(axis=1).astype(np.int64)
            aligned[key] = value.align(query_ids, retrieved, positions)
    return aligned


def chunk_texts(project: Project, ids: Sequence[str]) -> dict[str, str]:
    """``{chunk id: text}`` for the given ids (read in batches)."""
    from sqlalchemy import select

    from ragjudge.store.schema import Chunk

    ids = list(ids)
    out: dict[str, str] = {}
    with project.connect() as connection:
        for start in range(0, len(ids), _BATCH):
            batch = ids[start:start + _BATCH]
            out.update(connection.execute(select(Chunk.id, Chunk.text).where(Chunk.id.in_(batch))).all())
    return out


def _support_columns(combined, index_of: dict[int, int]) -> tuple[list[int], list[str], list[int]]:  # noqa: ANN001
    items, chunks, levels = [], [], []
    for key, chunk, level in combined:
        if level > 0 and int(key) in index_of:
            items.append(index_of[int(key)])
            chunks.append(chunk)
            levels.append(int(level))
    return items, chunks, levels


def _current_support(connection, cache: dict, table, item_column, value_column, rule: str,  # noqa: ANN001
                     value_of) -> list[tuple[int, str, int]]:  # noqa: ANN001
    """(item id, chunk id, combined value) for every (item, chunk) pair some annotator labelled
    in an append-only event ``table`` — newest event per annotator, combined under ``rule``.

    Event tables only grow, so (max id, row count) identifies their state: the result is kept
    in ``cache`` (per open project) and recomputed only when an event was added."""
    from sqlalchemy import func, select

    stamp = tuple(connection.execute(select(func.max(table.id), func.count(table.id))).one())
    key = (table.__tablename__, rule)
    if key in cache and cache[key][0] == stamp:
        return cache[key][1]
    newest = (select(func.max(table.id).label("id"))
              .group_by(item_column, table.chunk_id, table.annotator).subquery())
    rows = connection.execute(
        select(item_column, table.chunk_id, table.annotator, value_column)
        .join(newest, table.id == newest.c.id)).all()
    values = [(r, value_of(r[3])) for r in rows]
    values = [(r, v) for r, v in values if v is not None]
    combined = combine_support([str(r[0]) for r, _ in values], [r[1] for r, _ in values],
                        [r[2] for r, _ in values], [v for _, v in values], rule)
    result = [(int(key_), chunk, int(value)) for key_, chunk, value in combined]
    cache[key] = (stamp, result)
    return result


def _facet_labels(connection, rule: str, cache: dict) -> ItemLabels:  # noqa: ANN001
    from sqlalchemy import select

    from ragjudge.store.schema import Facet, FacetLink

    facets = connection.execute(
        select(Facet.id, Facet.query_id, Facet.name).where(Facet.removed.is_(False))
        .order_by(Facet.query_id, Facet.id)).all()
    index_of = {int(f[0]): i for i, f in enumerate(facets)}
    combined = _current_support(connection, cache, FacetLink, FacetLink.facet_id, FacetLink.covered,
                                rule, lambda covered: int(bool(covered)))
    combined = [(item, chunk, FULL if value >= 1 else 0) for item, chunk, value in combined
                if item in index_of]
    items, chunks, levels = _support_columns(combined, index_of)
    return ItemLabels([f[1] for f in facets], [f[2] for f in facets], None, None,
                      items, chunks, levels)


def _nugget_labels(connection, rule: str, cache: dict, *, kind: str) -> ItemLabels:  # noqa: ANN001
    from sqlalchemy import select

    from ragjudge.store.schema import Nugget, NuggetSupport

    nuggets = connection.execute(
        select(Nugget.id, Nugget.query_id, Nugget.text, Nugget.importance, Nugget.weight)
        .where(Nugget.removed.is_(False), Nugget.kind == kind)
        .order_by(Nugget.query_id, Nugget.id)).all()
    index_of = {int(n[0]): i for i, n in enumerate(nuggets)}
    combined = _current_support(connection, cache, NuggetSupport, NuggetSupport.nugget_id,
                                NuggetSupport.support, rule, SUPPORT_LEVELS.get)
    combined = [row for row in combined if row[0] in index_of]
    items, chunks, levels = _support_columns(combined, index_of)
    return ItemLabels([n[1] for n in nuggets], [n[2] for n in nuggets],
                      [n[3] == "vital" for n in nuggets],
                      [math.nan if n[4] is None else float(n[4]) for n in nuggets],
                      items, chunks, levels)


def _citation_labels(connection, run_name: str | None) -> CitationLabels:  # noqa: ANN001
    """The citations of ``run_name``'s answers, and the queries some run answered (where
    Attribution is computed for every run)."""
    from sqlalchemy import select

    from ragjudge.store.schema import Answer, Citation

    anyone = list(connection.scalars(select(Answer.query_id).distinct().order_by(Answer.query_id)))
    if run_name is None:
        return CitationLabels([], answered_by_any=anyone)
    answers = connection.execute(select(Answer.query_id).where(Answer.run == run_name)).all()
    cited = connection.execute(
        select(Answer.query_id, Citation.chunk_id).join(Citation, Citation.answer_id == Answer.id)
        .where(Answer.run == run_name).order_by(Answer.query_id, Citation.position)).all()
    return CitationLabels([a[0] for a in answers], [c[0] for c in cited], [c[1] for c in cited],
                          answered_by_any=anyone)
