"""The data of the RAG measures (``ragjudge.metrics.rag``), built from a project database.

One call fills every extra an evaluation needs for one run::

    extras = rag_extras(project, run_name, query_ids, chunk_matrix, measures, rule=rule)
    evaluate(qrels, run, measures, extras=extras)

``query_ids`` are the query rows of the run matrix and ``chunk_matrix`` the (queries x depth)
chunk ids of that matrix in rank order (rank 1 in column 0; padding is ``b''``, ``''`` or
None); the extras come back aligned with those rows and ranks. Only the extras the measures
need are built (``measures=None``: all of them).

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
- Entities are matched in the chunks' text (:func:`ragjudge.metrics.rag.entity_hits`: NFKD,
  combining marks removed, case-folded, whole words).
- Citations are those of the run's own generated answer (``answers.run`` = the run's name).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from sqlalchemy import func, select

from ragjudge.metrics.rag import (
    FULL,
    SUPPORT_LEVELS,
    Citations,
    ItemSupport,
    entity_support,
    required_extras,
)
from ragjudge.services.qrels import LabelArrays, aggregate, check_rule
from ragjudge.store.schema import (
    Answer,
    Chunk,
    Citation,
    Entity,
    Facet,
    FacetLink,
    Nugget,
    NuggetSupport,
)

__all__ = ["rag_extras", "ranked_rows"]

_BATCH = 500  # ids per IN (...) clause


def rag_extras(project, run_name: str, query_ids: Sequence[str], chunk_matrix: Any,  # noqa: ANN001
               measures: Iterable[Any] | None = None, *, rule: str | None = None
               ) -> dict[str, Any]:
    """Extras for the RAG measures of ``run_name``, aligned with ``query_ids`` × ``chunk_matrix``.

    Returns a dict with the keys the measures need among ``facets``, ``nuggets``, ``claims``
    (:class:`ItemSupport`), ``entities`` (:class:`ItemSupport`) and ``citations``
    (:class:`Citations`). Cheap when no measure needs them: nothing is read."""
    needed = required_extras(measures)
    if not needed:
        return {}
    ranked = ranked_rows(chunk_matrix)
    if len(ranked) != len(query_ids):
        raise ValueError("rag_extras: one chunk_matrix row per query id")
    row_of = {str(q): i for i, q in enumerate(query_ids)}
    rule = _support_rule(rule or project.rule)
    extras: dict[str, Any] = {}
    with project.connect() as connection:
        if "facets" in needed:
            extras["facets"] = _facets(connection, row_of, ranked, rule)
        if "nuggets" in needed:
            extras["nuggets"] = _nuggets(connection, row_of, ranked, rule, kind="nugget")
        if "claims" in needed:
            extras["claims"] = _nuggets(connection, row_of, ranked, rule, kind="claim")
        if "entities" in needed:
            extras["entities"] = _entities(connection, row_of, ranked)
        if "citations" in needed:
            extras["citations"] = _citations(connection, run_name, row_of, ranked)
    return extras


def ranked_rows(chunk_matrix: Any) -> list[list[str]]:
    """The chunk ids of each row in rank order, padding dropped, as str."""
    rows = []
    for row in chunk_matrix:
        ids = []
        for value in row:
            if value is None:
                continue
            if isinstance(value, (bytes, np.bytes_)):
                value = bytes(value).rstrip(b"\x00").decode("utf-8")
            value = str(value)
            if value:
                ids.append(value)
        rows.append(ids)
    return rows


def _support_rule(rule: str) -> str:
    rule = check_rule(rule)
    return "median" if rule == "adjudicated" else rule


def _rank_maps(ranked: list[list[str]], rows: Iterable[int]) -> dict[int, dict[str, int]]:
    # Only rows with labelled items need a chunk -> rank map.
    return {q: {c: r for r, c in reversed(list(enumerate(ranked[q], start=1)))} for q in set(rows)}


def _combine(keys: list[str], chunks: list[str], annotators: list[str], values: list[int],
             rule: str) -> list[tuple[str, str, int]]:
    """Per (item key, chunk), the annotators' current values combined under ``rule``."""
    if not keys:
        return []
    order = sorted(range(len(keys)), key=lambda i: (keys[i], chunks[i], annotators[i]))
    pick = lambda xs: np.array([xs[i] for i in order], dtype=object)  # noqa: E731
    labels = LabelArrays(pick(keys), pick(chunks), pick(annotators),
                         np.array([values[i] for i in order], dtype=np.int64))
    return aggregate(labels, rule)


def _layout(items: list[tuple[int, str, str]], n_rows: int):  # noqa: ANN202
    """Columns for items given as (item id, query row, name): valid matrix, column per id, names."""
    per_row: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for item_id, q, name in items:
        per_row[q].append((item_id, name))
    width = max((len(v) for v in per_row.values()), default=0)
    valid = np.zeros((n_rows, width), dtype=bool)
    names: list[list[str]] = [[] for _ in range(n_rows)]
    where: dict[int, tuple[int, int]] = {}
    for q, entries in per_row.items():
        for m, (item_id, name) in enumerate(entries):
            valid[q, m] = True
            names[q].append(name)
            where[item_id] = (q, m)
    return valid, names, where


def _events(combined, where, rank_of) -> tuple[list[int], list[int], list[int], list[int]]:  # noqa: ANN001
    rows, ranks, items, levels = [], [], [], []
    for key, chunk, level in combined:
        if level <= 0:
            continue
        q, m = where[int(key)]
        rank = rank_of[q].get(chunk)
        if rank is None:  # the run did not retrieve this chunk for the query
            continue
        rows.append(q)
        ranks.append(rank)
        items.append(m)
        levels.append(level)
    return rows, ranks, items, levels


def _facets(connection, row_of: dict[str, int], ranked, rule: str) -> ItemSupport:  # noqa: ANN001
    facets = connection.execute(
        select(Facet.id, Facet.query_id, Facet.name).where(Facet.removed.is_(False))
        .order_by(Facet.query_id, Facet.id)).all()
    items = [(int(i), row_of[q], name) for i, q, name in facets if q in row_of]
    valid, names, where = _layout(items, len(ranked))
    if not where:
        return ItemSupport(valid, names=names)
    newest = (select(func.max(FacetLink.id).label("id"))
              .group_by(FacetLink.facet_id, FacetLink.chunk_id, FacetLink.annotator).subquery())
    links = connection.execute(
        select(FacetLink.facet_id, FacetLink.chunk_id, FacetLink.annotator, FacetLink.covered)
        .join(newest, FacetLink.id == newest.c.id)).all()
    links = [row for row in links if int(row[0]) in where]
    if rule.startswith("annotator:"):
        links = [row for row in links if row[2] == rule.split(":", 1)[1]]
    combined = _combine([str(r[0]) for r in links], [r[1] for r in links], [r[2] for r in links],
                        [int(bool(r[3])) for r in links], rule)
    combined = [(key, chunk, FULL if value >= 1 else 0) for key, chunk, value in combined]
    rank_of = _rank_maps(ranked, (q for q, _ in where.values()))
    return ItemSupport(valid, *_events(combined, where, rank_of), names=names)


def _nuggets(connection, row_of: dict[str, int], ranked, rule: str, *, kind: str) -> ItemSupport:  # noqa: ANN001
    rows = connection.execute(
        select(Nugget.id, Nugget.query_id, Nugget.text, Nugget.importance, Nugget.weight)
        .where(Nugget.removed.is_(False), Nugget.kind == kind)
        .order_by(Nugget.query_id, Nugget.id)).all()
    rows = [r for r in rows if r[1] in row_of]
    valid, names, where = _layout([(int(i), row_of[q], text) for i, q, text, _, _ in rows],
                                  len(ranked))
    vital = np.zeros(valid.shape, dtype=bool)
    weight = np.zeros(valid.shape, dtype=np.float64)
    for i, _, _, importance, w in rows:
        q, m = where[int(i)]
        vital[q, m] = importance == "vital"
        weight[q, m] = 1.0 if w is None else float(w)
    if not where:
        return ItemSupport(valid, vital=vital, weight=weight, names=names)
    newest = (select(func.max(NuggetSupport.id).label("id"))
              .group_by(NuggetSupport.nugget_id, NuggetSupport.chunk_id, NuggetSupport.annotator)
              .subquery())
    support = connection.execute(
        select(NuggetSupport.nugget_id, NuggetSupport.chunk_id, NuggetSupport.annotator,
               NuggetSupport.support)
        .join(newest, NuggetSupport.id == newest.c.id)).all()
    support = [r for r in support if int(r[0]) in where and r[3] in SUPPORT_LEVELS]
    if rule.startswith("annotator:"):
        support = [r for r in support if r[2] == rule.split(":", 1)[1]]
    combined = _combine([str(r[0]) for r in support], [r[1] for r in support],
                        [r[2] for r in support], [SUPPORT_LEVELS[r[3]] for r in support], rule)
    rank_of = _rank_maps(ranked, (q for q, _ in where.values()))
    return ItemSupport(valid, *_events(combined, where, rank_of), vital=vital, weight=weight,
                       names=names)


def _entities(connection, row_of: dict[str, int], ranked) -> ItemSupport:  # noqa: ANN001
    rows = connection.execute(
        select(Entity.query_id, Entity.text).order_by(Entity.query_id, Entity.id)).all()
    entities: list[list[str]] = [[] for _ in ranked]
    for q, text in rows:
        if q in row_of:
            entities[row_of[q]].append(text)
    wanted = sorted({c for q, names in enumerate(entities) if names for c in ranked[q]})
    text_of = _chunk_texts(connection, wanted)
    texts = [[text_of.get(c, "") for c in ranked[q]] if names else []
             for q, names in enumerate(entities)]
    return entity_support(entities, texts)


def _chunk_texts(connection, ids: list[str]) -> dict[str, str]:  # noqa: ANN001
    out: dict[str, str] = {}
    for start in range(0, len(ids), _BATCH):
        batch = ids[start:start + _BATCH]
        out.update(connection.execute(select(Chunk.id, Chunk.text).where(Chunk.id.in_(batch))).all())
    return out


def _citations(connection, run_name: str, row_of: dict[str, int], ranked) -> Citations:  # noqa: ANN001
    n = len(ranked)
    answered = np.zeros(n, dtype=bool)
    retrieved = np.array([len(r) for r in ranked], dtype=np.int64)
    elsewhere = np.zeros(n, dtype=np.int64)
    answers = connection.execute(select(Answer.id, Answer.query_id).where(Answer.run == run_name)).all()
    answer_row = {int(a): row_of[q] for a, q in answers if q in row_of}
    for q in answer_row.values():
        answered[q] = True
    cited: dict[int, set[str]] = defaultdict(set)
    ids = sorted(answer_row)
    for start in range(0, len(ids), _BATCH):
        batch = ids[start:start + _BATCH]
        for answer_id, chunk_id in connection.execute(
                select(Citation.answer_id, Citation.chunk_id).where(Citation.answer_id.in_(batch))):
            cited[answer_row[int(answer_id)]].add(chunk_id)
    rows, ranks = [], []
    for q, chunks in cited.items():
        rank_of = _rank_maps(ranked, [q])[q]
        for chunk in chunks:
            rank = rank_of.get(chunk)
            if rank is None:
                elsewhere[q] += 1
            else:
                rows.append(q)
                ranks.append(rank)
    return Citations(answered, retrieved, rows, ranks, cited_elsewhere=elsewhere)
