"""RAG measures computed from what people labelled: facets, nuggets, claims, entities, citations.

The seeds compute these with an LLM judge (RAGAS, AutoNuggetizer); ragjudge computes them from
annotators' labels, so every number can be audited. All of them look at the top k chunks of a
ranked run (k = the whole run when no cutoff is given):

========================================  =================================================
name                                      value for one query
========================================  =================================================
``Coverage@k``                            facets covered by >= 1 top-k chunk / facets
``NuggetRecall(all)@k``                   sum of nugget scores (full 1, partial 0.5) / nuggets
``NuggetRecall(vital)@k``                 the same over vital nuggets only
``NuggetRecall(strict,all)@k``            nuggets fully supported by >= 1 top-k chunk / nuggets
``NuggetRecall(strict,vital)@k``          the same over vital nuggets only
``NuggetRecall(weighted)@k``              sum of weight * score / sum of weights: vital 1, okay
                                          0.5 (TREC 2024's W), a nugget's own weight first
``NuggetRecall(strict,weighted)@k``       the same, full support only (TREC 2024's W strict)
``ContextRecall@k``                       reference claims fully supported in the top k / claims
``EntityRecall@k``                        reference entities found in the top-k texts / entities
``Attribution@k``                         top-k chunks cited by the run's answer / top-k chunks
========================================  =================================================

A query for which a measure has nothing to count — no facets, no nuggets (no vital nuggets for
the vital variants), no claims, no entities, no generated answer, or (Attribution) no retrieved
chunk — gets NaN: undefined, left out of the mean and counted, never a silent 0. A query with
facets, nuggets, claims or entities but no relevance grade is evaluated all the same
(``labelled_query_ids`` of :class:`ItemLabels` and :class:`EntityLabels`): its RAG measures are
computed, the measures that need grades are NaN there. Answers belong to one run, and every
run is evaluated on the same queries: Attribution is computed on every query some run answered
(``labelled_query_ids`` of :class:`CitationLabels`), and a run without an answer there is left
out of its mean, and counted (:func:`attribution_reasons`).

The data (``extras`` of an evaluation)
--------------------------------------
Each measure reads one key of ``evaluate(..., extras=...)``:

- ``extras["facets"]``   — items = facets of the queries; level 2 = "this chunk covers it";
- ``extras["nuggets"]``  — items = nuggets (kind ``nugget``): 2 full support, 1 partial;
  ``vital`` and ``weight`` per nugget;
- ``extras["claims"]``   — items = claims of the reference answers (nuggets of kind ``claim``);
- ``extras["entities"]`` — entities of the reference answers (matched in the chunks' text);
- ``extras["citations"]`` — the chunks the run's generated answer to each query cites.

Each value comes in one of two forms:

1. **Gold labels, independent of any run** (what ``ragjudge.services.scoring.rag.rag_extras`` gives):
   :class:`ItemLabels` — one entry per item (query id, name, vital, weight) and one per
   supporting (item, chunk id, level) pair, annotators already combined; :class:`EntityLabels`
   — (query id, entity text) pairs and a source of chunk texts; :class:`CitationLabels` — the
   queries the run answered and its (query id, cited chunk id) pairs. The kernel aligns them
   with the rows and ranks of the run it evaluates (:func:`aligned_extra`), so one object
   serves every run and every query subset.
2. **Aligned with the run matrix**: :class:`ItemSupport` — ``valid`` (queries x max items)
   marks each query's items (padded columns), and the support events in coordinate form
   (query row, 1-based rank, item column, level); :class:`Citations` — ``answered``,
   ``retrieved`` per query row and the cited (row, rank) pairs. Row q is the evaluation's
   query q (``EvalContext.query_ids``). A chunk that supports nothing costs nothing, and the
   first rank reaching each support level per item — all any @k measure needs, for every k at
   once (curves) — is one ``np.minimum.at``.

This module imports numpy, the standard library and ``ragjudge.errors`` only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, overload

import numpy as np
from numpy.typing import DTypeLike

from ragjudge.metrics import _keys
from ragjudge.metrics.entities import entity_hits, entity_pattern, normalize_text
from ragjudge.safetext import quote

#: ``positions(query_ids, chunk_ids) -> (rows, cols)``: where each pair is in a ranked matrix
Positions = Callable[[Any, Any], tuple[np.ndarray, np.ndarray]]

__all__ = [
    "NONE", "PARTIAL", "FULL", "SUPPORT_LEVELS", "EXTRAS_KEYS",
    "ItemSupport", "Citations", "ItemLabels", "EntityLabels", "CitationLabels",
    "coverage", "nugget_recall", "context_recall", "entity_recall", "attribution",
    "attribution_reasons", "item_recall",
    "item_scores", "item_weights", "VITAL_WEIGHT", "OKAY_WEIGHT", "normalize_text", "entity_pattern", "entity_hits", "entity_support",
    "matrix_positions", "as_id_matrix", "aligned_extra", "required_extras",
    "cutoff_rank", "id_text",
]

NONE, PARTIAL, FULL = 0, 1, 2
"""Support levels: none, partial, full (a covered facet or a found entity is ``FULL``)."""

SUPPORT_LEVELS = {"none": NONE, "partial": PARTIAL, "full": FULL}

NEVER = np.iinfo(np.int64).max
"""First-rank value of an item no ranked chunk reaches."""

EXTRAS_KEYS = ("facets", "nuggets", "claims", "entities", "citations", "answers")
"""``answers``: a run's generated answers and their judgments (:mod:`ragjudge.metrics.answers`)."""


# -- the data ------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ItemSupport:
    """Labelled items per query and which ranked chunks support them.

    - ``valid``  bool (Q, M): column ``m`` of row ``q`` is an item of query ``q``;
    - ``rows``, ``ranks``, ``items``, ``levels``: int arrays of equal length, one entry per
      (ranked chunk, item) pair with some support: the chunk at 1-based ``ranks[i]`` of query row
      ``rows[i]`` supports item ``items[i]`` at ``levels[i]`` (1 partial, 2 full);
    - ``vital``  bool (Q, M) or None (every item vital);
    - ``weight`` float (Q, M) or None: a weight set for the item, NaN where none is set (None:
      none set); see :func:`item_weights` for the weight an item then counts with;
    - ``names``  per row, the items' display names (for explanations), or None.
    """

    valid: np.ndarray
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    ranks: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    items: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    levels: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    vital: np.ndarray | None = None
    weight: np.ndarray | None = None
    names: Sequence[Sequence[str]] | None = None

    def __post_init__(self) -> None:
        valid = np.asarray(self.valid, dtype=bool)
        if valid.ndim != 2:
            raise ValueError("ItemSupport.valid must be a (queries, items) matrix")
        object.__setattr__(self, "valid", valid)
        for name in ("rows", "ranks", "items"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.int64).ravel())
        object.__setattr__(self, "levels", np.asarray(self.levels, dtype=np.int8).ravel())
        n = len(self.rows)
        if not (len(self.ranks) == len(self.items) == len(self.levels) == n):
            raise ValueError("ItemSupport: rows, ranks, items and levels differ in length")
        if n and (self.ranks.min() < 1 or self.rows.min() < 0 or self.rows.max() >= valid.shape[0]
                  or self.items.min() < 0 or self.items.max() >= valid.shape[1]):
            raise ValueError("ItemSupport: an event points outside the (queries, items) matrix")
        if n and not np.all(valid[self.rows, self.items]):
            raise ValueError("ItemSupport: an event names an item that is not valid")
        if self.vital is not None:
            object.__setattr__(self, "vital", np.asarray(self.vital, dtype=bool) & valid)
        if self.weight is not None:
            weight = np.where(valid, np.asarray(self.weight, dtype=np.float64), np.nan)
            if np.any(weight < 0) or np.any(np.isinf(weight)):
                raise ValueError("ItemSupport: weights must be finite and >= 0 (NaN: not set)")
            object.__setattr__(self, "weight", weight)

    @classmethod
    def from_levels(cls, levels: np.ndarray, valid: np.ndarray, **kwargs: Any) -> ItemSupport:
        """From a dense int (Q, D, M) tensor: ``levels[q, r, m]`` = support of item ``m`` by the
        chunk at rank ``r + 1`` of query ``q`` (0 none, 1 partial, 2 full)."""
        levels = np.asarray(levels)
        q, r, m = np.nonzero(levels)
        return cls(valid, q, r + 1, m, levels[q, r, m], **kwargs)

    @classmethod
    def empty(cls, queries: int) -> ItemSupport:
        """No items for any of ``queries`` rows (every measure NaN)."""
        return cls(np.zeros((queries, 0), dtype=bool))

    @property
    def n_queries(self) -> int:
        return self.valid.shape[0]

    @cached_property
    def first_partial(self) -> np.ndarray:
        """int64 (Q, M): the first rank whose chunk supports the item at least partially."""
        return self._first(PARTIAL)

    @cached_property
    def first_full(self) -> np.ndarray:
        """int64 (Q, M): the first rank whose chunk supports the item fully."""
        return self._first(FULL)

    def _first(self, level: int) -> np.ndarray:
        first = np.full(self.valid.shape, NEVER, dtype=np.int64)
        keep = self.levels >= level
        np.minimum.at(first, (self.rows[keep], self.items[keep]), self.ranks[keep])
        return first

    def take(self, rows: np.ndarray) -> ItemSupport:
        """The same data for a subset (or reordering) of query rows."""
        rows = np.asarray(rows, dtype=np.int64)
        position = np.full(self.n_queries, -1, dtype=np.int64)
        position[rows] = np.arange(len(rows))
        keep = position[self.rows] >= 0
        pick = lambda a: None if a is None else a[rows]  # noqa: E731
        return ItemSupport(
            self.valid[rows], position[self.rows[keep]], self.ranks[keep], self.items[keep],
            self.levels[keep], pick(self.vital), pick(self.weight),
            None if self.names is None else [self.names[i] for i in rows],
        )


@dataclass(frozen=True, eq=False)
class Citations:
    """Which ranked chunks the run's generated answer cites, per query row.

    - ``answered``  bool (Q,): the run has a generated answer for the query;
    - ``retrieved`` int (Q,): how many chunks the run retrieved for the query;
    - ``rows``, ``ranks``: the cited chunks that the run retrieved, as (query row, 1-based rank);
    - ``cited_elsewhere`` int (Q,) or None: chunks the answer cites that the run did not retrieve
      (shown by explanations; they do not count).
    """

    answered: np.ndarray
    retrieved: np.ndarray
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    ranks: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    cited_elsewhere: np.ndarray | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "answered", np.asarray(self.answered, dtype=bool).ravel())
        object.__setattr__(self, "retrieved", np.asarray(self.retrieved, dtype=np.int64).ravel())
        object.__setattr__(self, "rows", np.asarray(self.rows, dtype=np.int64).ravel())
        object.__setattr__(self, "ranks", np.asarray(self.ranks, dtype=np.int64).ravel())
        if len(self.answered) != len(self.retrieved) or len(self.rows) != len(self.ranks):
            raise ValueError("Citations: arrays differ in length")
        if len(self.rows) and (self.ranks.min() < 1 or np.any(self.ranks > self.retrieved[self.rows])):
            raise ValueError("Citations: a cited rank lies outside the run")

    @classmethod
    def from_flags(cls, cited: np.ndarray, answered: np.ndarray, retrieved: np.ndarray,
                   **kwargs: Any) -> Citations:
        """From a dense bool (Q, D) matrix: ``cited[q, r]`` = the chunk at rank ``r + 1`` is
        cited by the run's answer to query ``q``."""
        q, r = np.nonzero(np.asarray(cited, dtype=bool))
        return cls(answered, retrieved, q, r + 1, **kwargs)

    @property
    def n_queries(self) -> int:
        return len(self.answered)

    def take(self, rows: np.ndarray) -> Citations:
        rows = np.asarray(rows, dtype=np.int64)
        position = np.full(self.n_queries, -1, dtype=np.int64)
        position[rows] = np.arange(len(rows))
        keep = position[self.rows] >= 0
        return Citations(
            self.answered[rows], self.retrieved[rows], position[self.rows[keep]], self.ranks[keep],
            None if self.cited_elsewhere is None else np.asarray(self.cited_elsewhere)[rows],
        )


# -- the same data independent of any run ------------------------------------------------


def _row_lookup(query_ids: Sequence[str], wanted: Sequence[str]) -> np.ndarray:
    row_of = {str(q): i for i, q in enumerate(query_ids)}
    return np.array([row_of.get(str(q), -1) for q in wanted], dtype=np.int64)


def as_id_matrix(chunk_matrix: Any, n_rows: int | None = None) -> np.ndarray:
    """A ranked chunk matrix (rows of ids; padding ``b''``, ``''`` or None) as a NUL-padded
    ``S`` array of shape (rows, depth)."""
    matrix = chunk_matrix if isinstance(chunk_matrix, np.ndarray) else np.array(
        [list(row) for row in chunk_matrix], dtype=object)
    if matrix.ndim != 2:
        matrix = matrix.reshape(n_rows if n_rows is not None else len(matrix), -1)
    if matrix.dtype.kind != "S":
        shape = matrix.shape
        matrix = _keys.as_ids([id_text(c) for c in matrix.ravel()]).reshape(shape)
    return matrix


def _as_ids(values: Any) -> np.ndarray:
    if isinstance(values, np.ndarray) and values.dtype.kind == "S":
        return _keys.as_ids(values)
    return _keys.as_ids([id_text(v) for v in values])


def matrix_positions(query_ids: Sequence[str], chunk_matrix: Any) -> Positions:
    """A ``positions(query_ids, chunk_ids) -> (rows, cols)`` function over a ranked chunk matrix
    (rank 1 in column 0; padding ``b''``, ``''`` or None), like ``EvalContext.positions``:
    row -1 for a query not in ``query_ids``, column -1 for a chunk not in that row (the first
    column when a row repeats a chunk). Vectorised: ids become integer codes once."""
    qbytes = _as_ids(query_ids)
    qorder = np.argsort(qbytes, kind="stable")
    qsorted = qbytes[qorder]
    matrix = as_id_matrix(chunk_matrix, len(qbytes))
    depth = max(matrix.shape[1], 1)
    flat = matrix.ravel()
    cells = np.flatnonzero(np.char.str_len(flat) > 0)
    unique, codes = _keys.factorize(flat[cells])
    n_unique = max(len(unique), 1)
    keys, first = np.unique((cells // depth) * n_unique + codes, return_index=True)
    key_cols = cells[first] % depth

    def positions(qids: Any, chunks: Any) -> tuple[np.ndarray, np.ndarray]:
        pos = _keys.lookup(qsorted, _as_ids(qids))
        rows = np.where(pos >= 0, qorder[np.maximum(pos, 0)], -1)
        code = _keys.lookup(unique, _as_ids(chunks))
        cols = np.full(len(rows), -1, dtype=np.int64)
        if len(keys):
            key = rows * n_unique + code
            at = np.minimum(np.searchsorted(keys, key), len(keys) - 1)
            found = (rows >= 0) & (code >= 0) & (keys[at] == key)
            cols = np.where(found, key_cols[at], -1)
        return rows, cols

    return positions


def _encoded(labels: Any, name: str) -> np.ndarray:
    """``labels.<name>`` as a NUL-padded ``S`` array, encoded once per labels object (so that
    evaluating several runs with the same labels encodes the ids once)."""
    cache = labels.__dict__.setdefault("_encoded", {})
    if name not in cache:
        cache[name] = _keys.as_ids([id_text(v) for v in getattr(labels, name)])
    return cache[name]


def id_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).rstrip(b"\x00").decode("utf-8")
    return str(value)


@dataclass(frozen=True, eq=False)
class ItemLabels:
    """Gold labels of facets, nuggets or claims, independent of any run.

    Items: ``query_ids[i]`` is the query of item ``i``; ``names``, ``vital``, ``weight`` per item
    (optional; a weight of None or NaN is not set: :func:`item_weights`). Support:
    ``support_items[j]`` (an item index), ``support_chunks[j]`` (a chunk id) and
    ``support_levels[j]`` (1 partial, 2 full — a covered facet is 2): the combined judgement
    of the annotators for that (item, chunk) pair. A kernel aligns them with the rows and ranks
    of the run it evaluates (:meth:`align`), so one object serves every run.
    """

    query_ids: Sequence[str]
    names: Sequence[str] | None = None
    vital: Sequence[bool] | None = None
    weight: Sequence[float | None] | None = None
    support_items: Sequence[int] = ()
    support_chunks: Sequence[str] = ()
    support_levels: Sequence[int] = ()

    @property
    def labelled_query_ids(self) -> list[str]:
        """The queries that have items: evaluated even without a relevance grade."""
        return [id_text(q) for q in self.query_ids]

    def placement(self, query_ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray, int]:
        """Where each item goes among evaluated ``query_ids``: its row (-1 when its query is
        not evaluated), its column within the row's items (in the order the items are given),
        and the width (the most items of one row)."""
        item_row = _row_lookup(query_ids, self.query_ids)
        n_rows = len(query_ids)
        counts = np.bincount(item_row[item_row >= 0], minlength=n_rows) if n_rows else np.zeros(0)
        width = int(counts.max()) if len(counts) else 0
        order = np.argsort(item_row, kind="stable")
        sorted_rows = item_row[order]
        item_col = np.empty(len(item_row), dtype=np.int64)
        item_col[order] = np.arange(len(order)) - np.searchsorted(sorted_rows, sorted_rows)
        return item_row, item_col, width

    def support_chunk_ids(self) -> np.ndarray:
        """``support_chunks`` as a NUL-padded ``S`` array (encoded once per object)."""
        return _encoded(self, "support_chunks")

    def align(self, query_ids: Sequence[str], positions: Positions) -> ItemSupport:
        """ItemSupport for evaluated ``query_ids`` (rows) and a ``positions`` function giving
        each (query, chunk) pair's row and 0-based column (-1 when absent)."""
        item_row, item_col, width = self.placement(query_ids)
        n_rows = len(query_ids)
        valid = np.zeros((n_rows, width), dtype=bool)
        keep = item_row >= 0
        valid[item_row[keep], item_col[keep]] = True

        def spread(values: Any, dtype: DTypeLike, fill: Any) -> np.ndarray | None:
            if values is None:
                return None
            out = np.full((n_rows, width), fill, dtype=dtype)
            out[item_row[keep], item_col[keep]] = np.asarray(values, dtype=dtype)[keep]
            return out

        names: list[list[str]] | None = None
        if self.names is not None:
            names = [[] for _ in range(n_rows)]
            for i in np.flatnonzero(keep):
                names[item_row[i]].append(str(self.names[int(i)]))
        items = np.asarray(self.support_items, dtype=np.int64)
        levels = np.asarray(self.support_levels, dtype=np.int64)
        rows = cols = np.zeros(0, dtype=np.int64)
        if len(items):
            query_bytes, chunk_bytes = _encoded(self, "query_ids"), _encoded(self, "support_chunks")
            rows, cols = positions(query_bytes[items], chunk_bytes)
        ok = (rows >= 0) & (cols >= 0) & (levels > 0) if len(items) else np.zeros(0, bool)
        return ItemSupport(valid, rows[ok], cols[ok] + 1, item_col[items[ok]] if len(items) else
                           np.zeros(0, np.int64), levels[ok], spread(self.vital, bool, False),
                           spread(self.weight, np.float64, np.nan), names)


@dataclass(eq=False)
class EntityLabels:
    """Entities of the reference answers, independent of any run: ``query_ids[i]`` is the
    query of entity ``texts[i]``. ``chunk_text`` gives chunk texts: a mapping, or a function
    from a list of chunk ids to a mapping (e.g. a database read). Matches are kept in
    ``matches`` per (entity, chunk text), so several runs over the same chunks match each pair
    once; pass one dict to several objects to share them (an edited entity or chunk text is
    simply another key)."""

    query_ids: Sequence[str]
    texts: Sequence[str]
    chunk_text: Any
    matches: dict = field(default_factory=dict, repr=False)

    @property
    def labelled_query_ids(self) -> list[str]:
        """The queries that have entities: evaluated even without a relevance grade."""
        return [id_text(q) for q in self.query_ids]

    def align(self, query_ids: Sequence[str], chunk_matrix: Any) -> ItemSupport:
        """ItemSupport over the evaluated ``query_ids`` and their ranked ``chunk_matrix``."""
        row_of = {str(q): i for i, q in enumerate(query_ids)}
        entities: list[list[str]] = [[] for _ in query_ids]
        for q, text in zip(self.query_ids, self.texts):
            r = row_of.get(str(q))
            if r is not None:
                entities[r].append(str(text))
        ranked = [[id_text(c) for c in chunk_matrix[r]] if entities[r] else []
                  for r in range(len(query_ids))]
        wanted = sorted({c for row in ranked for c in row if c})
        texts = self._texts(wanted)
        normalized: dict[str, str] = {}
        patterns: dict[str, re.Pattern[str] | None] = {}
        rows, ranks, items = [], [], []
        for r, names in enumerate(entities):
            for rank, chunk in enumerate(ranked[r], start=1):
                if not chunk:
                    continue
                text = texts.get(chunk, "")
                for m, name in enumerate(names):
                    key = (name, text)
                    if key not in self.matches:
                        if name not in patterns:
                            patterns[name] = entity_pattern(name)
                        if text not in normalized:
                            normalized[text] = normalize_text(text)
                        pattern = patterns[name]
                        self.matches[key] = (pattern is not None
                                             and pattern.search(normalized[text]) is not None)
                    if self.matches[key]:
                        rows.append(r)
                        ranks.append(rank)
                        items.append(m)
        width = max((len(e) for e in entities), default=0)
        valid = np.zeros((len(query_ids), width), dtype=bool)
        for r, names in enumerate(entities):
            valid[r, : len(names)] = True
        return ItemSupport(valid, np.asarray(rows), np.asarray(ranks), np.asarray(items),
                           np.full(len(rows), FULL, np.int8),
                           names=entities)

    def _texts(self, ids: list[str]) -> Mapping[str, str]:
        if not ids:
            return {}
        if callable(self.chunk_text):
            return self.chunk_text(ids)
        return self.chunk_text


@dataclass(frozen=True, eq=False)
class CitationLabels:
    """A run's generated answers, independent of the rank matrix: ``answered`` lists the
    queries the run has an answer for; ``query_ids[j]`` cites ``chunk_ids[j]``;
    ``answered_by_any`` the queries some run (this one or another) has an answer for."""

    answered: Sequence[str]
    query_ids: Sequence[str] = ()
    chunk_ids: Sequence[str] = ()
    answered_by_any: Sequence[str] = ()

    @property
    def labelled_query_ids(self) -> list[str]:
        """The queries evaluated for Attribution even without a relevance grade: those some
        run answered (every run is evaluated on them; one without an answer there is left
        out, and counted)."""
        return [id_text(q) for q in self.answered_by_any]

    def align(self, query_ids: Sequence[str], retrieved: np.ndarray, positions: Positions) -> Citations:
        """Citations over the evaluated ``query_ids``; ``retrieved[q]`` = chunks ranked for
        row q; ``positions`` as for :meth:`ItemLabels.align`."""
        answered_rows = _row_lookup(query_ids, self.answered)
        answered = np.zeros(len(query_ids), dtype=bool)
        answered[answered_rows[answered_rows >= 0]] = True
        rows = cols = np.zeros(0, dtype=np.int64)
        if len(self.query_ids):
            rows, cols = positions(_encoded(self, "query_ids"), _encoded(self, "chunk_ids"))
        elsewhere = np.bincount(rows[(rows >= 0) & (cols < 0)], minlength=len(query_ids))
        ok = (rows >= 0) & (cols >= 0)
        pairs = np.unique(np.stack([rows[ok], cols[ok] + 1], axis=1), axis=0) if ok.any() else \
            np.zeros((0, 2), dtype=np.int64)
        return Citations(answered, retrieved, pairs[:, 0], pairs[:, 1], cited_elsewhere=elsewhere)


# -- kernels -------------------------------------------------------------------------------


def cutoff_rank(k: int | None) -> int:
    return NEVER - 1 if k is None else int(k)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1),
                        np.nan)


def item_scores(support: ItemSupport, k: int | None, *, strict: bool = True) -> np.ndarray:
    """float (Q, M): each item's score at cutoff k — 1 if some top-k chunk supports it fully,
    else (``strict=False``) 0.5 if some top-k chunk supports it partially, else 0."""
    k = cutoff_rank(k)
    full = support.first_full <= k
    if strict:
        return full.astype(np.float64)
    partial = support.first_partial <= k
    return np.where(full, 1.0, np.where(partial, 0.5, 0.0))


VITAL_WEIGHT, OKAY_WEIGHT = 1.0, 0.5
"""The TREC 2024 RAG track's nugget weights (Pradeep et al. 2024): its weighted score W counts a
vital nugget 1 and an okay one 0.5."""


def item_weights(valid: np.ndarray, vital: np.ndarray | None, weight: np.ndarray | None
                 ) -> np.ndarray:
    """float (Q, M): the weight each item counts with in a weighted score, in this order:

    1. the item's own weight, where one is set (finite, not NaN);
    2. else its importance, as the TREC 2024 RAG track weighs nuggets: vital 1, okay 0.5;
    3. else (no importance known: every item vital) 1.

    0 for padded columns."""
    if vital is None:
        by_importance = np.ones(valid.shape)
    else:
        by_importance = np.where(vital, VITAL_WEIGHT, OKAY_WEIGHT)
    if weight is not None:
        by_importance = np.where(np.isnan(weight), by_importance, weight)
    return np.where(valid, by_importance, 0.0)


def item_recall(support: ItemSupport, k: int | None, *, strict: bool = True,
                vital_only: bool = False, weighted: bool = False) -> np.ndarray:
    """float (Q,): (sum over counted items of weight x score) / (sum of their weights).

    Counted items: the valid ones (the vital ones with ``vital_only``); weight 1 unless
    ``weighted`` (:func:`item_weights`). NaN where a query has no counted item (or zero total
    weight)."""
    counted = support.valid
    if vital_only:
        counted = counted & (support.vital if support.vital is not None else counted)
    weight = counted.astype(np.float64)
    if weighted:
        weight = weight * item_weights(support.valid, support.vital, support.weight)
    scores = item_scores(support, k, strict=strict)
    return _ratio((weight * scores).sum(axis=1), weight.sum(axis=1))


def coverage(facets: ItemSupport, k: int | None) -> np.ndarray:
    """Coverage Recall@k, per query: the share of the query's facets its top k covers.

    Coverage@k = |{facets f : some chunk in the top k covers f}| / |facets of the query|

    NaN for a query without facets."""
    return item_recall(facets, k, strict=True)


def nugget_recall(nuggets: ItemSupport, k: int | None, *, strict: bool, vital_only: bool,
                  weighted: bool = False) -> np.ndarray:
    """Nugget Recall@k (TREC 2024 RAG Track, Pradeep et al. 2024), per query.

    A nugget's score s_n at cutoff k is 1 when some top-k chunk supports it fully, 0.5 when the
    best support in the top k is partial (0 in the strict variants), else 0:

        NuggetRecall@k = sum_n w_n s_n / sum_n w_n

    over all nuggets (``all``) or the vital ones (``vital``), with w_n = 1, or with ``weighted``
    the nugget's own weight where one is set, else vital 1 and okay 0.5 (TREC 2024's weighted
    score; :func:`item_weights`). NaN when there is no nugget to count."""
    return item_recall(nuggets, k, strict=strict, vital_only=vital_only, weighted=weighted)


def context_recall(claims: ItemSupport, k: int | None, *, strict: bool = True) -> np.ndarray:
    """Context Recall@k (RAGAS's definition, Es et al. 2023, with people as the judge).

    ContextRecall@k = |{claims of the reference answer fully supported by a top-k chunk}|
                      / |claims of the reference answer|

    (``strict=False``: partial support counts 0.5). NaN for a query without claims."""
    return item_recall(claims, k, strict=strict)


def entity_recall(entities: ItemSupport, k: int | None) -> np.ndarray:
    """Context Entities Recall@k (RAGAS), per query.

    EntityRecall@k = |RE ∩ RCE_k| / |RE|, RE = entities of the reference answer, RCE_k = those
    found in the text of a top-k chunk (:func:`entity_hits` says what "found" means).
    NaN for a query without entities."""
    return item_recall(entities, k, strict=True)


def attribution_reasons(citations: Citations) -> list[str | None]:
    """Why Attribution is undefined on each row (None where it is defined): the run has no
    answer to the query, or it ranks no chunk for it."""
    return ["the run has no answer" if not answered else
            "the run ranks no chunk for the query" if not retrieved else None
            for answered, retrieved in zip(citations.answered.tolist(), citations.retrieved.tolist())]


def attribution(citations: Citations, k: int | None) -> np.ndarray:
    """Chunk Attribution Rate@k, per query: the share of the top k the answer cites.

    Attribution@k = |{top-k chunks cited by the run's answer}| / |top-k chunks|

    where |top-k chunks| = min(k, chunks the run retrieved), as in the seed's example (3 cited of
    10 retrieved = 0.300). Citations of chunks the run did not retrieve do not count. NaN when
    the run has no answer for the query or retrieved nothing."""
    k = cutoff_rank(k)
    cited = np.bincount(citations.rows[citations.ranks <= k], minlength=citations.n_queries)
    shown = np.minimum(citations.retrieved, k)
    value = _ratio(cited.astype(np.float64), shown.astype(np.float64))
    return np.where(citations.answered, value, np.nan)


# -- entity support ------------------------------------------------------------------------


def entity_support(entities: Sequence[Sequence[str]], ranked_texts: Sequence[Sequence[str]]
                   ) -> ItemSupport:
    """ItemSupport for EntityRecall from raw data: per query row, its reference entities and the
    texts of its ranked chunks (rank 1 first)."""
    if len(entities) != len(ranked_texts):
        raise ValueError("entity_support: one list of entities and one of texts per query")
    width = max((len(e) for e in entities), default=0)
    valid = np.zeros((len(entities), width), dtype=bool)
    rows, ranks, items = [], [], []
    for q, (names, texts) in enumerate(zip(entities, ranked_texts)):
        valid[q, : len(names)] = True
        if not names or not texts:
            continue
        r, m = np.nonzero(entity_hits(names, texts))
        rows.append(np.full(len(r), q))
        ranks.append(r + 1)
        items.append(m)
    cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0, np.int64)  # noqa: E731
    rows_a, ranks_a, items_a = cat(rows), cat(ranks), cat(items)
    return ItemSupport(valid, rows_a, ranks_a, items_a, np.full(len(rows_a), FULL, np.int8),
                       names=[list(e) for e in entities])


# -- which extras a measure needs ------------------------------------------------------------

_PREFIX_EXTRAS = {
    "Coverage": "facets",
    "NuggetRecall": "nuggets",
    "ContextRecall": "claims",
    "EntityRecall": "entities",
    "Attribution": "citations",
    "alpha_nDCG": "facets",
    "AnswerNuggets": "answers",
    "CitationPrecision": "answers",
    "CitationRecall": "answers",
}


def required_extras(measures: Iterable | None) -> set[str]:
    """The extras keys that ``measures`` (names or measure objects) read; all of them for None.

    A measure object says so through its ``requires`` attribute; a name through its family
    (``Coverage@5`` needs ``facets``)."""
    if measures is None:
        return set(EXTRAS_KEYS)
    if isinstance(measures, str):
        measures = [measures]
    needed: set[str] = set()
    for given in measures:
        requires = getattr(given, "requires", None)
        if requires is not None and not isinstance(given, str):
            needed.update(k for k in ([requires] if isinstance(requires, str) else requires)
                          if k in EXTRAS_KEYS)
            continue
        name = str(given)
        family = re.split(r"[(@]", name, maxsplit=1)[0].strip()
        if family in _PREFIX_EXTRAS:
            needed.add(_PREFIX_EXTRAS[family])
    return needed


# -- explanations --------------------------------------------------------------------------


# -- registered measures -----------------------------------------------------------------------
# The registry (``ragjudge.metrics.registry``) imports this module on the first measure lookup.

from ragjudge.errors import UsageError  # noqa: E402

_EXPECTED = {"facets": ItemLabels, "nuggets": ItemLabels, "claims": ItemLabels,
             "entities": EntityLabels, "citations": CitationLabels}


@overload
def aligned_extra(ctx: Any, key: Literal["citations"]) -> Citations: ...
@overload
def aligned_extra(ctx: Any, key: str) -> ItemSupport: ...
def aligned_extra(ctx: Any, key: str) -> ItemSupport | Citations:
    """``ctx.extras[key]`` aligned with the context's rows and ranks (once per context).

    The extra may already be aligned (:class:`ItemSupport` / :class:`Citations` with one row per
    evaluated query, in ``ctx.query_ids`` order) or run-independent (:class:`ItemLabels`,
    :class:`EntityLabels`, :class:`CitationLabels`), which is aligned here."""
    cache = ctx.__dict__.setdefault("_rag_aligned", {})
    if key in cache:
        return cache[key]
    value = ctx.extras[key]
    if isinstance(value, ItemLabels):
        value = value.align(ctx.query_ids, _context_positions(ctx))
    elif isinstance(value, EntityLabels):
        value = value.align(ctx.query_ids, ctx.chunk_ids)
    elif isinstance(value, CitationLabels):
        value = value.align(ctx.query_ids, ctx.n_ret, _context_positions(ctx))
    want = Citations if key == "citations" else ItemSupport
    if not isinstance(value, want):
        raise UsageError(f"extras[{quote(key)}] must be a {want.__name__} or a "
                         f"{_EXPECTED[key].__name__}, not {type(value).__name__}.")
    if value.n_queries != ctx.n_queries:
        raise UsageError(f"extras[{quote(key)}] has {value.n_queries} query rows but the evaluation "
                         f"has {ctx.n_queries}; align it with the evaluated queries.")
    cache[key] = value
    return value


def _context_positions(ctx: Any) -> Positions:
    """``ctx.positions`` with the chunk ids encoded at the width of the run's ids.

    The context finds a (query, chunk) pair by a hash of the id's fixed-width bytes, so ids must
    have the run's width; an id longer than every id of the run cannot be in it."""
    width = ctx.chunk_ids.dtype.itemsize

    def positions(qids: Any, chunks: Any) -> tuple[np.ndarray, np.ndarray]:
        ids = chunks if isinstance(chunks, np.ndarray) and chunks.dtype.kind == "S" else \
            _keys.as_ids([id_text(c) for c in chunks])
        fits = np.char.str_len(ids) <= width  # (str_len does not count the NUL padding)
        rows, cols = ctx.positions(qids, _keys.widen(ids, width) if ids.dtype.itemsize < width
                                   else ids.astype(f"S{width}"))
        return rows, np.where(fits, cols, -1)

    return positions
