"""Current labels: every annotator's newest grade per pair, one pair or every pair at once.

An annotator's current label for a pair is their newest label event that is not a blind
re-check (``source='recheck'``); pairs whose newest event has no grade (skipped, undone) have no
current grade. :func:`read_labels` reads them in bulk: on SQLite one pass over the label events,
each column joined into one string by the database, the newest event per annotator and pair
found in numpy, ids coded once (:class:`CodedLabels`); elsewhere the portable SQL of
:func:`current_labels`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
import numpy as np
from ragjudge.numeric import MAX_GRADE
from ragjudge.store.sqltext import fetch

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection
    from sqlalchemy.sql import ClauseElement, ColumnElement, Subquery


@dataclass(frozen=True)
class LabelArrays:
    """Current labels as parallel arrays (one row per annotator and pair with a grade)."""

    query_ids: np.ndarray  # object array of str
    chunk_ids: np.ndarray
    annotators: np.ndarray
    grades: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.grades)


RECHECK = "recheck"
"""``labels.source`` of a blind re-check: it measures self-agreement and never replaces the
annotator's current label."""


NOT_RECHECK = f"(source IS NULL OR source <> '{RECHECK}')"
""":func:`not_recheck` in plain SQL (over ``labels`` unaliased)."""


def not_recheck() -> ColumnElement[bool]:
    """A clause for label events that are not blind re-checks (portable SQL: no ``IS NOT 'x'``)."""
    from sqlalchemy import or_

    from ragjudge.store.schema import Label

    return or_(Label.source.is_(None), Label.source != RECHECK)


def newest_label_ids() -> Subquery:
    """A subquery of the newest non-recheck label event id per (annotator, query, chunk)."""
    from sqlalchemy import func, select

    from ragjudge.store.schema import Label

    return (
        select(func.max(Label.id).label("id"))
        .where(not_recheck())
        .group_by(Label.annotator, Label.query_id, Label.chunk_id)
        .subquery()
    )


def current_labels(connection: Connection, *, annotator: str | None = None) -> LabelArrays:
    """Every annotator's current grade per pair (pairs whose newest event has no grade are left
    out), as :class:`LabelArrays` sorted by query, chunk and annotator (byte order of the ids);
    read in bulk by :func:`read_labels`."""
    return read_labels(connection, annotator=annotator).arrays()


def _current_statement(annotator: str | None) -> Any:
    """The portable SQL of the current labels (the newest non-recheck event per annotator and
    pair, with a grade)."""
    from sqlalchemy import select

    from ragjudge.store.schema import Label

    newest = newest_label_ids()
    stmt = (
        select(Label.query_id, Label.chunk_id, Label.annotator, Label.grade)
        .join(newest, Label.id == newest.c.id)
        .where(Label.grade.is_not(None))
        .order_by(Label.query_id, Label.chunk_id, Label.annotator)
    )
    if annotator is not None:
        stmt = stmt.where(Label.annotator == annotator)
    return stmt


def raw_rows(connection: Connection, stmt: ClauseElement) -> list[tuple]:
    """All rows of a Core select as plain tuples from the database driver's own cursor: the
    same SQL and parameters as ``connection.execute(stmt).all()``, without building a
    SQLAlchemy row per result row (a third of the time on a million labels)."""
    from sqlalchemy.sql.compiler import SQLCompiler

    compiled = stmt.compile(dialect=connection.dialect,
                            compile_kwargs={"render_postcompile": True})
    assert isinstance(compiled, SQLCompiler)  # a select compiles with the dialect's SQL compiler
    params: tuple[Any, ...] | dict[str, Any]
    if compiled.positional:
        params = tuple(compiled.params[name] for name in compiled.positiontup or ())
    else:
        params = dict(compiled.params)
    driver = connection.connection.driver_connection
    assert driver is not None  # an open connection has its driver's connection
    cursor = driver.cursor()
    try:
        cursor.execute(str(compiled), params)
        return cursor.fetchall()
    finally:
        cursor.close()


def label_arrays_from_rows(rows) -> LabelArrays:  # noqa: ANN001
    if not rows:
        empty = np.array([], dtype=object)
        return LabelArrays(empty, empty.copy(), empty.copy(), np.array([], dtype=np.int64))
    q, c, a, g = zip(*rows)
    return LabelArrays(
        np.array(q, dtype=object), np.array(c, dtype=object), np.array(a, dtype=object),
        np.array(g, dtype=np.int64),
    )


NO_GRADE = np.iinfo(np.int64).min
"""In an array of grades per pair: the pair has no gold grade (it is not judged)."""


@dataclass(frozen=True)
class CodedLabels:
    """The current labels (as :func:`current_labels` defines them) with their ids coded once,
    without a Python object per row.

    ``queries`` and ``chunks`` are the distinct query and chunk ids (``as_ids`` arrays, sorted
    in byte order); each *pair* (a query and a chunk someone graded) is ``pair_query[p]`` and
    ``pair_chunk[p]``, indexes into them, pairs in byte order of (query id, chunk id). Each
    row is one annotator's grade of a pair: ``pair``, ``annotator`` (an index into ``names``,
    sorted) and ``grade``, rows grouped by pair and sorted by annotator within it.
    """

    queries: np.ndarray
    chunks: np.ndarray
    pair_query: np.ndarray
    pair_chunk: np.ndarray
    pair: np.ndarray
    annotator: np.ndarray
    grade: np.ndarray
    names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.grade)

    @property
    def n_pairs(self) -> int:
        return len(self.pair_query)

    def arrays(self) -> LabelArrays:
        """The same labels as :class:`LabelArrays` (object arrays of ``str``; each distinct id
        is decoded once and shared by its rows)."""
        queries = np.array(_decode(self.queries), dtype=object)
        chunks = np.array(_decode(self.chunks), dtype=object)
        names = np.array(self.names, dtype=object)
        if not len(self.grade):
            empty = np.array([], dtype=object)
            return LabelArrays(empty, empty.copy(), empty.copy(), np.array([], dtype=np.int64))
        return LabelArrays(queries[self.pair_query[self.pair]], chunks[self.pair_chunk[self.pair]],
                           names[self.annotator], self.grade.copy())

    def rows_of(self, keep: np.ndarray) -> CodedLabels:
        """The same pairs, only the rows ``keep`` (a boolean mask)."""
        return CodedLabels(self.queries, self.chunks, self.pair_query, self.pair_chunk,
                           self.pair[keep], self.annotator[keep], self.grade[keep], self.names)

    def without(self, names: Iterable[str]) -> CodedLabels:
        """Less the rows of the annotators ``names`` (as :func:`without`)."""
        codes = [i for i, n in enumerate(self.names) if n in set(names)]
        if not codes or not len(self.grade):
            return self
        return self.rows_of(~np.isin(self.annotator, codes))

    def code_of(self, name: str) -> int:
        """The annotator's index in ``names`` (-1: no label of theirs)."""
        return self.names.index(name) if name in self.names else -1

    def grade_rows(self) -> GradeRows:
        return GradeRows(self.pair, self.annotator, self.grade, self.pair_query,
                         {n: i for i, n in enumerate(self.names)})


def _decode(ids: np.ndarray) -> list[str]:
    from ragjudge.metrics._keys import decode

    return decode(ids)


def read_labels(connection: Connection, *, annotator: str | None = None) -> CodedLabels:
    """Every annotator's current grade per pair (the newest event that is not a blind re-check,
    when it has a grade), or one annotator's, as :class:`CodedLabels`.

    On SQLite the label events are read in one pass over the table, each column concatenated
    by the database into one string (:func:`_read_sqlite`), and the newest event per
    annotator and pair is found in numpy; elsewhere (or when that reading cannot be sure of
    the text: an id holding the separator byte, an unknown annotator) the rows of the SQL
    :func:`_current_statement` are coded.
    """
    if connection.dialect.name == "sqlite":
        coded = _read_sqlite(connection, annotator)
        if coded is not None:
            return coded
    rows = raw_rows(connection, _current_statement(annotator))
    from ragjudge.metrics._keys import as_ids

    if not rows:
        return _coded([], [], np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), (), None)
    q, c, a, g = zip(*rows)
    names = tuple(sorted(set(a)))
    index = {n: i for i, n in enumerate(names)}
    return _coded(as_ids(q), as_ids(c), np.fromiter((index[x] for x in a), dtype=np.int64, count=len(a)),
                  np.array(g, dtype=np.int64), names, None)


_SEP = 0x1F


_GRADE_OFFSET = MAX_GRADE + 1


PARALLEL_LABELS = 200_000
"""From this many label events their query ids and chunk ids are read on a connection of their
own, at the same time as the grades (SQLite lets go of the interpreter while it reads)."""


def _read_sqlite(connection: Connection, annotator: str | None) -> CodedLabels | None:
    """Every label event of the table (of one annotator) as aggregates: query ids and chunk ids
    each joined by the unit separator, and per event one integer packing its grade (0 for
    none), its annotator's index and whether it is a blind re-check. A scan of a rowid table by
    its key visits the events in id order, so the last event of an annotator and pair in the
    strings is their newest; both statements read the events up to the same id (events are
    never changed, only added), so that they line up even when read on separate connections.
    None when the text cannot be split for sure."""
    raw = connection.connection.driver_connection
    assert raw is not None  # an open connection has its driver's connection
    # sorted as Python sorts names (by code point, which is also the order of their UTF-8 bytes)
    names = tuple(sorted(n for (n,) in raw.execute("SELECT name FROM annotators").fetchall()))
    if annotator is not None:
        names = (annotator,)
    if len(names) > 500:
        return None
    (top,) = raw.execute("SELECT max(id) FROM labels").fetchone()
    empty = _coded(np.zeros(0, dtype="S8"), np.zeros(0, dtype="S8"), np.zeros(0, dtype=np.int64),
                   np.zeros(0, dtype=np.int64), names, None)
    if not top:
        return empty
    n = len(names) + 1  # index len(names): an annotator the table does not know
    case = "CASE annotator " + " ".join("WHEN ? THEN " + str(i) for i in range(len(names))) \
        + f" ELSE {n - 1} END" if names else str(n - 1)
    where = " FROM labels WHERE id > 0 AND id <= ?" + (" AND annotator = ?" if annotator else "")
    tail = [top] + ([annotator] if annotator else [])
    statements = [
        (f"SELECT count(*), group_concat((ifnull(grade + {_GRADE_OFFSET}, 0) * {n} + {case}) * 2 "
         f"+ (source IS ?), ','){where}", [*names, RECHECK, *tail]),
        (f"SELECT group_concat(query_id, x'1f'), group_concat(chunk_id, x'1f'){where}", tail),
    ]

    def ids(row: tuple) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """The ids of each aggregate's text, factorized (on the thread that read them)."""
        out: list[tuple[np.ndarray, np.ndarray] | None] = []
        for text in row:
            split = None if text is None else _split_ids(text, text.count(b"\x1f") + 1)
            out.append(None if split is None else _factorize(split))
        return out

    (count, packed), (q, c) = _aggregates(connection, statements, int(top) >= PARALLEL_LABELS,
                                          [lambda row: row, ids])
    if not count:
        return empty
    values = _integers(packed, count)
    if values is None or q is None or c is None or len(q[1]) != count or len(c[1]) != count:
        return None
    recheck = values % 2 == 1
    code = values // 2
    who = code % n
    grade_code = code // n
    if np.any(who == n - 1) or np.any((grade_code < 0) | (grade_code > 2 * MAX_GRADE + 1)):
        return None
    keep = ~recheck
    if keep.all():
        return _coded(q, c, who, grade_code - _GRADE_OFFSET, names, grade_code == 0)
    return _coded(_rows_of(q, keep), _rows_of(c, keep), who[keep], grade_code[keep] - _GRADE_OFFSET,
                  names, grade_code[keep] == 0)


def _rows_of(factorized: tuple[np.ndarray, np.ndarray], keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Factorized ids (distinct ids, each row's index) of the rows ``keep`` only (ids no row
    keeps dropped)."""
    unique, index = factorized
    index = index[keep]
    used = np.zeros(len(unique), dtype=bool)
    used[index] = True
    if used.all():
        return unique, index
    return unique[used], (np.cumsum(used) - 1)[index]


def _aggregates(connection: Connection, statements: list[tuple[str, list[Any]]], parallel: bool,
                then: list[Callable[[tuple], Any]]) -> list[Any]:
    """``then[i]`` of the one row of each SQLite statement, text as bytes: the first on
    ``connection``, the others (with ``parallel``) each on a connection of its own on a worker
    thread, where its ``then`` runs too."""
    def one(driver: Any, sql: str, params: list[Any]) -> tuple:
        before = driver.text_factory
        driver.text_factory = bytes
        try:
            return tuple(driver.execute(sql, params).fetchone())
        finally:
            driver.text_factory = before

    def elsewhere(sql: str, params: list[Any], after: Callable[[tuple], Any]) -> Any:
        with connection.engine.connect() as other:
            return after(one(other.connection.driver_connection, sql, params))

    raw = connection.connection.driver_connection
    if not parallel:
        return [after(one(raw, sql, params)) for (sql, params), after in zip(statements, then)]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(statements) - 1) as pool:
        later = [pool.submit(elsewhere, sql, params, after)
                 for (sql, params), after in zip(statements[1:], then[1:])]
        first = then[0](one(raw, *statements[0]))
        return [first, *(f.result() for f in later)]


def _integers(text: bytes, count: int) -> np.ndarray | None:
    """``count`` integers written in decimal and joined by commas (None for anything else)."""
    import warnings

    if b"." in text or b"e" in text:  # a grade stored as a real number: read it row by row
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            values = np.fromstring(text, dtype=np.int64, sep=",")
        except (DeprecationWarning, ValueError):
            return None
    return values if len(values) == count else None


def _split_ids(text: bytes, count: int) -> np.ndarray | None:
    """``count`` ids joined by the unit separator as an ``as_ids`` array (None when the text
    does not split into exactly ``count`` ids: an id holds the separator)."""
    buf = np.frombuffer(text, dtype=np.uint8)
    seps = np.flatnonzero(buf == _SEP)
    if len(seps) != count - 1:
        return None
    starts = np.empty(count, dtype=np.int64)
    starts[0] = 0
    starts[1:] = seps + 1
    lengths = np.empty(count, dtype=np.int64)
    lengths[:-1] = seps - starts[:-1]
    lengths[-1] = len(buf) - starts[-1]
    top = int(lengths.max())
    width = max(8, -(-top // 8) * 8)
    if int(lengths.min()) == top:  # ids of one length: rows of a matrix, separators dropped
        grid = np.frombuffer(text + b"\x1f", dtype=np.uint8).reshape(count, top + 1)
        out = np.zeros((count, width), dtype=np.uint8)
        out[:, :top] = grid[:, :top]
        return out.view(f"S{width}").ravel()
    from ragjudge.metrics._keys import packed_ids

    return packed_ids(np.ascontiguousarray(buf[buf != _SEP]), lengths)


def _factorize(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct ids (byte order) and each row's index among them."""
    from ragjudge.metrics._keys import factorize

    if not len(ids):
        return ids[:0], np.zeros(0, dtype=np.int64)
    heads = 1 + int(np.count_nonzero(ids[1:] != ids[:-1]))
    if heads * 4 <= len(ids):  # ids mostly in runs of equal ones (labels written query by query)
        unique, index = factorize(ids)[:2]
        return unique, index
    if ids.dtype.itemsize == 8:  # one big-endian word: its numeric order is the byte order
        words, inverse = np.unique(ids.view(">u8").astype(np.uint64), return_inverse=True)
        return words.astype(">u8").view("S8"), inverse.ravel().astype(np.int64)
    unique, inverse = np.unique(ids, return_inverse=True)
    return unique, inverse.ravel().astype(np.int64)


def _coded(q: Any, c: Any, annotator: np.ndarray, grade: np.ndarray, names: tuple[str, ...],
           ungraded: np.ndarray | None) -> CodedLabels:
    """Label events (ids as ``as_ids`` arrays, or already factorized: (distinct ids, each
    row's index), in event order) as :class:`CodedLabels`: the newest event per annotator and
    pair kept (the last one), those without a grade (``ungraded``) then dropped."""
    from ragjudge.metrics._keys import as_ids

    queries, qi = q if isinstance(q, tuple) else _factorize(as_ids(q))
    chunks, ci = c if isinstance(c, tuple) else _factorize(as_ids(c))
    n = max(len(names), 1)
    rows = len(qi)
    if len(queries) * len(chunks) * n * max(rows, 1) < (1 << 62):
        # (pair, annotator, event) packed in one integer: a plain sort orders by key, then event
        packed = np.sort(((qi * len(chunks) + ci) * n + annotator) * rows + np.arange(rows))
        order = packed % max(rows, 1)
        sorted_key = packed // max(rows, 1)
        last = np.ones(rows, dtype=bool)
        last[:-1] = sorted_key[1:] != sorted_key[:-1]
    else:
        order = np.lexsort((np.arange(rows), annotator, ci, qi))
        a, b, d = qi[order], ci[order], annotator[order]
        last = np.ones(rows, dtype=bool)
        last[:-1] = (a[1:] != a[:-1]) | (b[1:] != b[:-1]) | (d[1:] != d[:-1])
    take = order[last]
    if ungraded is not None:
        take = take[~ungraded[take]]
    qi, ci, annotator, grade = qi[take], ci[take], annotator[take], grade[take]
    new = np.ones(len(qi), dtype=bool)
    new[1:] = (qi[1:] != qi[:-1]) | (ci[1:] != ci[:-1])
    pair = np.cumsum(new) - 1
    return CodedLabels(queries, chunks, qi[new], ci[new], pair.astype(np.int64),
                       annotator.astype(np.int64), grade.astype(np.int64), tuple(names))


@dataclass(frozen=True)
class GradeRows:
    """Annotators' grades as rows of codes: ``pair`` (a pair's number), ``annotator`` (a code)
    and ``grade``, grouped by pair and sorted by annotator code within it; ``pair_query`` the
    query (a code) of each pair, and ``codes`` each annotator's code."""

    pair: np.ndarray
    annotator: np.ndarray
    grade: np.ndarray
    pair_query: np.ndarray
    codes: dict[str, int]

    def code_of(self, name: str) -> int:
        return self.codes.get(name, -1)


def adjudications(connection: Connection) -> dict[tuple[str, str], int]:
    """The newest adjudicated grade per pair (``connection``: SQLAlchemy's or
    :mod:`ragjudge.store.sqltext`'s, as for every plain-SQL reader here)."""
    rows = fetch(connection, "SELECT a.query_id, a.chunk_id, a.grade FROM adjudications a "
                             "JOIN (SELECT max(id) AS id FROM adjudications "
                             "GROUP BY query_id, chunk_id) newest ON a.id = newest.id")
    return {(q, c): int(g) for q, c, g in rows}


def llm_annotators(connection: Connection) -> frozenset[str]:
    """The annotators of kind ``llm`` (their grades stay out of the gold unless asked)."""
    return frozenset(n for (n,) in fetch(connection, "SELECT name FROM annotators WHERE kind = 'llm'"))


def without(labels: LabelArrays, names: frozenset[str]) -> LabelArrays:
    """``labels`` less the rows of the annotators ``names``."""
    if not names or not len(labels):
        return labels
    keep = ~np.isin(labels.annotators, list(names))
    return LabelArrays(labels.query_ids[keep], labels.chunk_ids[keep], labels.annotators[keep],
                       labels.grades[keep])
