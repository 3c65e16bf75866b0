"""The data structures of the live evaluation, and the kernels run on them.

- :class:`LivePairs`: every judged (query, chunk) pair numbered once;
- :class:`RunLayout`: a run's ranked chunks as pair numbers;
- :class:`LiveView`: one qrels of the engine (the gold, or an annotator's view) as a grade per
  pair number, with its (queries x measures) matrix of values per run and their column sums;
- :class:`LiveLabels`: the current labels as rows of numbers (pair, annotator code, grade);
- :func:`live_kernels`: the measures' values on an evaluation context;
- the SQL a label event's reads run on the driver's cursor (:func:`driver_rows`), and the
  encoding of ids.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
import numpy as np
from ragjudge.metrics import _keys
from ragjudge.metrics.context import EvalContext
from ragjudge.metrics.registry import Measure
from ragjudge.services.events.labels import NO_GRADE


if TYPE_CHECKING:
    pass


CHANGE_COUNTER = itertools.count(1)


class LivePairs:
    """Every (query, chunk) pair that labels, adjudications or a complete reference's closed
    world judged, numbered once: the engine keeps grades per pair number, and each run's ranked
    chunks point to pair numbers (:class:`RunLayout`). Append-only: a pair keeps its number.

    ``rows`` are the pairs' query rows (the engine's query order), ``chunks`` their chunk ids
    (an ``as_ids`` array). The first ``base`` pairs are sorted by row (their rows are found by
    a search); pairs added later are listed per row.
    """

    def __init__(self, rows: np.ndarray, chunks: np.ndarray, n_rows: int, query_hash: np.ndarray) -> None:
        self._rows = np.asarray(rows, dtype=np.int64).copy()
        self._chunks = chunks.copy()
        self.n = len(self._rows)
        self.base = self.n
        self._starts = np.searchsorted(self._rows, np.arange(n_rows + 1))
        self._later: dict[int, list[int]] = {}
        self._query_hash = query_hash
        self._index: _keys.PairIndex | None = None
        self._filter = np.zeros(0, dtype=bool)
        self._shift = np.uint64(63)

    @property
    def rows(self) -> np.ndarray:
        return self._rows[:self.n]

    @property
    def chunks(self) -> np.ndarray:
        return self._chunks[:self.n]

    @property
    def width(self) -> int:
        return self._chunks.dtype.itemsize

    def of_row(self, row: int) -> np.ndarray:
        """The numbers of the pairs of one query row."""
        base = np.arange(self._starts[row], self._starts[row + 1], dtype=np.int64)
        later = self._later.get(row)
        return base if not later else np.concatenate([base, np.array(later, dtype=np.int64)])

    def index(self) -> _keys.PairIndex:
        """A hash index of every pair (rebuilt when pairs were added since), and a bit map over
        the top bits of their hashes (about 16 entries a pair)."""
        if self._index is None or len(self._index.ids) != self.n:
            self._index = _keys.PairIndex(self.rows, self.chunks, self._query_hash[self.rows])
            bits = min(26, max(10, int(np.ceil(np.log2(max(self.n, 1) * 16)))))
            self._shift = np.uint64(64 - bits)
            self._filter = np.zeros(1 << bits, dtype=bool)
            self._filter[(self._index.hashes >> self._shift).astype(np.intp)] = True
        return self._index

    def find(self, rows: np.ndarray, chunks: np.ndarray, hashes: np.ndarray | None = None) -> np.ndarray:
        """The number of each pair (-1: not numbered); ``hashes``: the pairs' ready
        :func:`ragjudge.metrics._keys.pair_hash` (a run's ``pair_hashes``). A run ranks mostly
        pairs nobody judged: the bit map lets through only the pairs that may be numbered (and
        about one in 16 of the others), and only those are looked up in the index."""
        if not len(rows) or not self.n:
            return np.full(len(rows), -1, dtype=np.int64)
        index = self.index()
        if hashes is None or index.seed != 0:
            return index.get(rows, chunks, query_hash=self._query_hash[rows])
        maybe = np.flatnonzero(self._filter[(hashes >> self._shift).astype(np.intp)])
        out = np.full(len(rows), -1, dtype=np.int64)
        out[maybe] = index.get(rows[maybe], chunks[maybe], hashes=hashes[maybe])
        return out

    def byte_order(self) -> np.ndarray:
        """Each pair's place in the order of (query row, chunk id bytes) -- the order of
        (query id, chunk id), since the rows follow the bytes of the query ids. The first
        ``base`` pairs are in that order; the pairs numbered since are merged in: each one's
        place among them is its row's start plus its row's smaller chunks (a binary search of
        that row's sorted chunks)."""
        if self.n == self.base:
            return np.arange(self.n, dtype=np.int64)
        later = np.arange(self.base, self.n, dtype=np.int64)
        order = np.lexsort([*_keys.words(self._chunks[later]).T[::-1], self._rows[later]])
        later = later[order]
        rows, chunks = self._rows[later].tolist(), self._chunks[later].tolist()
        before = np.empty(len(later), dtype=np.int64)  # base pairs before each later pair
        sorted_chunks: list[bytes] = []
        for i, (row, chunk) in enumerate(zip(rows, chunks)):
            start = int(self._starts[row])
            if i == 0 or rows[i - 1] != row:
                sorted_chunks = self._chunks[start:self._starts[row + 1]].tolist()
            before[i] = start + bisect.bisect_left(sorted_chunks, chunk)
        place = np.empty(self.n, dtype=np.int64)
        base = np.arange(self.base, dtype=np.int64)
        place[:self.base] = base + np.searchsorted(before, base, side="right")
        place[later] = before + np.arange(len(later))
        return place

    def add(self, rows: np.ndarray, chunks: np.ndarray) -> np.ndarray:
        """Number new pairs (distinct, none numbered yet); returns their numbers."""
        k = len(rows)
        if not k:
            return np.zeros(0, dtype=np.int64)
        width = max(self.width, chunks.dtype.itemsize)
        if width != self.width:
            self._chunks = self._chunks.astype(f"S{width}")
        if self.n + k > len(self._rows):
            size = max(2 * len(self._rows), self.n + k, 64)
            grown_rows = np.zeros(size, dtype=np.int64)
            grown_rows[:self.n] = self._rows[:self.n]
            grown_chunks = np.zeros(size, dtype=self._chunks.dtype)
            grown_chunks[:self.n] = self._chunks[:self.n]
            self._rows, self._chunks = grown_rows, grown_chunks
        numbers = np.arange(self.n, self.n + k, dtype=np.int64)
        self._rows[self.n:self.n + k] = rows
        self._chunks[self.n:self.n + k] = _keys.widen(chunks, width)
        self.n += k
        for row, number in zip(np.asarray(rows).tolist(), numbers.tolist()):
            self._later.setdefault(row, []).append(number)
        return numbers


@dataclass
class RunLayout:
    """A run's ranked chunks as pair numbers: ``pairs[row, rank - 1]`` is the pair number of
    the chunk the run ranks there for the query of that row (-1: a pair nobody judged, or no
    chunk), ``n_ret[row]`` how many chunks it ranks for that query."""

    pairs: np.ndarray
    n_ret: np.ndarray


@dataclass
class LiveView:
    rule: str
    measures: list[str]
    values: dict[str, np.ndarray] = field(default_factory=dict)
    present: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    totals: dict[str, np.ndarray] = field(default_factory=dict)
    """run -> per column: sum of the defined values (exact after a full pass, then running)"""
    counts: dict[str, np.ndarray] = field(default_factory=dict)
    """run -> per column: queries where the value is defined"""
    grades: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """the view's grade of each pair of :attr:`space` (:data:`NO_GRADE`: not judged)"""
    per_row: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """judged pairs of each query row"""
    judged_pairs: int = 0
    space: Any = None
    """the :class:`~ragjudge.services.scoring.livespace.PairSpace` the view's grades number its
    pairs by (its pairs, query ids and rows, :meth:`pair_numbers`)"""
    parsed: list[Measure] = field(default_factory=list)
    """``measures`` parsed"""
    plain: list[int] = field(default_factory=list)
    """columns of the measures that need only the qrels and the run"""
    rag: list[int] = field(default_factory=list)
    """columns of the measures that need the project's facets, nuggets, ..."""
    changes: int = field(default_factory=lambda: next(CHANGE_COUNTER))
    """a number new with every change of the judgments"""

    def fitted(self) -> np.ndarray:
        """:attr:`grades` for every pair numbered so far (pairs added since: not judged)."""
        n = self.space.pairs.n
        if len(self.grades) < n:
            grown = np.full(max(n, 2 * len(self.grades)), NO_GRADE, dtype=np.int64)
            grown[:len(self.grades)] = self.grades
            self.grades = grown
        return self.grades[:n]

    def set_grades(self, grades: np.ndarray) -> None:
        """Every judgment of the view at once (a grade per pair number)."""
        self.grades = grades
        judged = np.flatnonzero(self.fitted() != NO_GRADE)
        self.per_row = np.bincount(self.space.pairs.rows[judged], minlength=len(self.space.query_ids))
        self.judged_pairs = len(judged)
        self.changes = next(CHANGE_COUNTER)

    def set_query(self, row: int, judgments: dict[str, int]) -> None:
        """One query's judgments, replacing those it had."""
        grades = self.fitted()
        mine = self.space.pairs.of_row(row)
        was = mine[grades[mine] != NO_GRADE]
        grades[was] = NO_GRADE
        self.judged_pairs -= len(was)
        if judgments:
            numbers = self.space.pair_numbers(row, list(judgments))
            grades = self.fitted()
            grades[numbers] = np.fromiter(judgments.values(), dtype=np.int64, count=len(judgments))
        self.judged_pairs += len(judgments)
        self.per_row[row] = len(judgments)

    def judgments_of(self, query_id: str) -> dict[str, int]:
        row = self.space.row.get(query_id)
        if row is None or not self.per_row[row]:
            return {}
        grades = self.fitted()
        mine = self.space.pairs.of_row(row)
        mine = mine[grades[mine] != NO_GRADE]
        return dict(zip(_keys.decode(self.space.pairs.chunks[mine]), grades[mine].tolist()))

    def count_of(self, query_id: str) -> int:
        row = self.space.row.get(query_id)
        return 0 if row is None else int(self.per_row[row])

    def judged_queries(self) -> list[str]:
        return [self.space.query_ids[r] for r in np.flatnonzero(self.per_row)]

    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every current judgment: (query ids, chunk ids, grades) as object/int arrays."""
        grades = self.fitted()
        judged = np.flatnonzero(grades != NO_GRADE)
        queries = np.array(self.space.query_ids, dtype=object)
        return (queries[self.space.pairs.rows[judged]],
                np.array(_keys.decode(self.space.pairs.chunks[judged]), dtype=object),
                grades[judged].copy())

    def n_pairs(self) -> int:
        return self.judged_pairs

    def resum(self) -> None:
        """Column sums in query order, as :attr:`EvalResult.means` adds them (bit for bit)."""
        for name, matrix in self.values.items():
            defined = ~np.isnan(matrix)
            self.counts[name] = defined.sum(axis=0)
            self.totals[name] = np.where(defined, matrix, 0.0).sum(axis=0)

    def add_rows(self, rows: np.ndarray, sign: float) -> None:
        for name, matrix in self.values.items():
            part = matrix[rows]
            defined = ~np.isnan(part)
            self.counts[name] = self.counts[name] + int(sign) * defined.sum(axis=0)
            self.totals[name] = self.totals[name] + sign * np.where(defined, part, 0.0).sum(axis=0)


class LiveLabels:
    """The engine's copy of the current labels as rows of numbers — ``pair``, ``who`` (an
    annotator's code), ``grade`` — sorted by pair and annotator, kept equal to the database by
    replacing the rows of the queries that new events touch."""

    def __init__(self, pair: np.ndarray, who: np.ndarray, grade: np.ndarray, rows: np.ndarray) -> None:
        self._set(pair, who, grade, rows)

    def _set(self, pair: np.ndarray, who: np.ndarray, grade: np.ndarray, rows: np.ndarray) -> None:
        self.pair, self.who, self.grade, self.rows = pair, who, grade, rows
        self.override: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def replace(self, row: int, pair: np.ndarray, who: np.ndarray, grade: np.ndarray) -> None:
        """One query row's current labels, as just read."""
        order = np.lexsort((who, pair))
        self.override[row] = (pair[order], who[order], grade[order])

    def merged(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every current label ``(pair, who, grade)``, sorted by pair and annotator (then kept
        as the base)."""
        if self.override:
            touched = np.array(sorted(self.override), dtype=np.int64)
            keep = ~np.isin(self.rows, touched)
            pair, who, grade, rows = self.pair[keep], self.who[keep], self.grade[keep], self.rows[keep]
            parts = [self.override[r] for r in touched.tolist()]
            new_pair = np.concatenate([p[0] for p in parts])
            new_who = np.concatenate([p[1] for p in parts])
            new_grade = np.concatenate([p[2] for p in parts])
            new_rows = np.concatenate([np.full(len(p[0]), r, dtype=np.int64)
                                       for r, p in zip(touched.tolist(), parts)])
            order = np.lexsort((new_who, new_pair))
            span = int(max(who.max(initial=0), new_who.max(initial=0))) + 1
            at = np.searchsorted(pair * span + who, new_pair[order] * span + new_who[order])
            self._set(np.insert(pair, at, new_pair[order]), np.insert(who, at, new_who[order]),
                      np.insert(grade, at, new_grade[order]), np.insert(rows, at, new_rows[order]))
        return self.pair, self.who, self.grade


def ideal_cutoffs(measures: list[Measure]) -> dict[str, set]:
    """gain -> the cutoffs at which the measures read the ideal DCG (nDCG, nDCG_exp)."""
    out: dict[str, set] = {}
    for m in measures:
        gain = {"nDCG": "grade", "nDCG_exp": "exp"}.get(m.definition.name)
        if gain is not None:
            out.setdefault(gain, set()).add(m.cutoff)
    return out


def live_kernels(ctx: EvalContext, measures: list[Measure]) -> np.ndarray:
    """(queries x measures) values of ``measures`` on ``ctx``, as :func:`evaluate` computes
    them; the interpolated precisions of one relevance level share one pass (each level's
    column is computed as ``iprec`` computes it alone)."""
    from ragjudge.metrics.measures import interpolated_precision

    out = np.empty((ctx.n_queries, len(measures)))
    levels: dict[Any, list[tuple[int, float]]] = {}
    for j, m in enumerate(measures):
        if m.definition.name == "iprec":
            levels.setdefault(m.rel, []).append((j, float(m.cutoff)))
        else:
            out[:, j] = m(ctx)
    for rel, items in levels.items():
        values = interpolated_precision(ctx, np.array([level for _, level in items]), rel)
        for k, (j, _) in enumerate(items):
            out[:, j] = values[:, k]
    return out


IN_BATCH = 500


CURRENT_SQL = (
    "SELECT l.query_id, l.chunk_id, l.annotator, l.grade FROM labels AS l JOIN "
    "(SELECT max(id) AS id FROM labels WHERE query_id IN ({marks}) "
    "AND (source IS NULL OR source != ?) GROUP BY annotator, query_id, chunk_id) AS n "
    "ON l.id = n.id WHERE l.grade IS NOT NULL ORDER BY l.query_id, l.chunk_id, l.annotator"
)


DECIDED_SQL = (
    "SELECT a.query_id, a.chunk_id, a.grade FROM adjudications AS a JOIN "
    "(SELECT max(id) AS id FROM adjudications WHERE query_id IN ({marks}) "
    "GROUP BY query_id, chunk_id) AS n ON a.id = n.id"
)


def driver_rows(connection, sql: str, params: tuple) -> list[tuple]:  # noqa: ANN001
    """Rows of ``sql`` (``?`` placeholders) from the database driver's own cursor."""
    if connection.dialect.paramstyle != "qmark":
        sql = sql.replace("%", "%%").replace("?", "%s")
    cursor = connection.connection.driver_connection.cursor()
    try:
        cursor.execute(sql, params)
        return cursor.fetchall()
    finally:
        cursor.close()


def encode_ids(values: Any) -> np.ndarray:
    """Ids as :func:`ragjudge.metrics._keys.as_ids` makes them (UTF-8 bytes, NUL padded to a
    multiple of 8); ASCII ids of an array convert in numpy, without a Python call per id."""
    if isinstance(values, np.ndarray) and values.dtype == object and len(values):
        try:
            return _keys.as_ids(values.astype("U").astype("S"))
        except (UnicodeEncodeError, TypeError, ValueError):
            pass
    return _keys.as_ids(values)


def encode_id_runs(values: Any) -> np.ndarray:
    """:func:`_encode` for ids that come in runs of equal values (a view's query ids, grouped by
    query): each run's id is encoded once."""
    if not (isinstance(values, np.ndarray) and values.dtype == object and len(values)):
        return encode_ids(values)
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    return np.repeat(encode_ids(values[starts]), np.diff(np.r_[starts, len(values)]))
