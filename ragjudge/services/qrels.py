"""Gold qrels: one grade per (query, chunk) pair from the annotators' current labels.

A pair's gold grade is its newest adjudication if any, else the aggregate of every annotator's
current grade under a rule (ragjudge/ARCHITECTURE.md):

- ``median`` (default) — the lower median: with grades [1, 2] it is 1;
- ``majority`` — the most frequent grade, ties going to the lower grade (a conservative choice);
- ``mean`` — the arithmetic mean rounded half up to a whole grade;
- ``min`` / ``max``;
- ``annotator:NAME`` — that annotator's grades only (adjudications still come first);
- ``adjudicated`` — adjudicated pairs only.

A *reference* annotator (a collection's official qrels, ``ragjudge import qrels --reference``)
is not one more opinion: on the pairs it graded its grade is the gold (unless adjudicated) and
the rule decides only the other pairs (:func:`gold_labels`). A *complete* reference declares
every pair of its queries that it does not list not relevant, as trec_eval reads such qrels:
those pairs count as judged at the bottom of the scale (:func:`implied_labels`,
:func:`complete_runs`) without a row being written for them.

The current labels are read in bulk (:func:`read_labels`: on SQLite one pass over the label
events, each column joined into one string by the database; ids coded once, no Python object
per row) and the gold grade of every pair is computed at once from those codes
(:func:`coded_gold`, :func:`aggregate_pairs`); :func:`aggregate` and :func:`gold_labels` are the
same rules pair by pair, on :class:`LabelArrays`, for the few pairs a label event touches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import func, or_, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql import ClauseElement, ColumnElement, Subquery
from sqlalchemy.sql.compiler import SQLCompiler

from ragjudge.errors import UsageError
from ragjudge.numeric import MAX_GRADE
from ragjudge.models import AGGREGATION_RULES
from ragjudge.store.schema import Adjudication, Annotator, Label

if TYPE_CHECKING:
    from ragjudge.metrics.data import Run
    from ragjudge.services.project import Project

RULES = (*AGGREGATION_RULES, "annotator:NAME", "adjudicated")


@dataclass(frozen=True)
class LabelArrays:
    """Current labels as parallel arrays (one row per annotator and pair with a grade)."""

    query_ids: np.ndarray  # object array of str
    chunk_ids: np.ndarray
    annotators: np.ndarray
    grades: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.grades)


@dataclass(frozen=True)
class GoldPolicy:
    """Which annotators' grades decide the gold before the rule: the reference annotators, and
    those of them that are complete (an unlisted pair of their queries is not relevant)."""

    reference: frozenset[str] = frozenset()
    complete: frozenset[str] = frozenset()
    lowest: int = 0
    """the bottom of the scale: the grade of a pair a complete reference does not list"""

    def applies(self, rule: str) -> bool:
        """The reference decides under the aggregation rules; ``annotator:NAME`` and
        ``adjudicated`` ask for something else."""
        return bool(self.reference) and rule in AGGREGATION_RULES

    def completes(self, rule: str) -> bool:
        """Whether unlisted pairs of a complete reference's queries count as judged under
        ``rule`` (the aggregation rules, and the complete reference's own labels)."""
        if not self.complete:
            return False
        return rule in AGGREGATION_RULES or (
            rule.startswith("annotator:") and rule.split(":", 1)[1] in self.complete)

    def complete_queries(self, labels: LabelArrays, rule: str | None = None) -> set[str]:
        """The queries a complete reference has graded (its world is closed there); under
        ``annotator:NAME``, those of that reference only."""
        if len(labels) == 0 or (rule is not None and not self.completes(rule)):
            return set()
        names = self.complete
        if rule is not None and rule.startswith("annotator:"):
            names = frozenset([rule.split(":", 1)[1]])
        mine = np.isin(labels.annotators, list(names))
        return set(labels.query_ids[mine].tolist())


def gold_policy(connection: Connection, lowest: int) -> GoldPolicy:
    """The project's reference annotators (``annotators.reference``) as a :class:`GoldPolicy`."""
    rows = connection.execute(
        select(Annotator.name, Annotator.complete).where(Annotator.reference.is_(True))).all()
    return GoldPolicy(frozenset(n for n, _ in rows), frozenset(n for n, c in rows if c), int(lowest))


def closed_queries(project: Project, rule: str) -> tuple[GoldPolicy, set[str]]:
    """The project's gold policy and the queries where unlisted pairs count as judged under
    ``rule`` (a complete reference's)."""
    with project.connect() as connection:
        policy = gold_policy(connection, project.scale.min)
        if not policy.completes(rule):
            return policy, set()
        names = sorted(policy.complete)
        if rule.startswith("annotator:"):
            names = [rule.split(":", 1)[1]]
        queries: set[str] = set()
        for name in names:
            queries |= set(current_labels(connection, annotator=name).query_ids.tolist())
    return policy, queries


def implied_labels(labels: LabelArrays, policy: GoldPolicy) -> LabelArrays:
    """``labels`` and, for each complete reference, its grade ``policy.lowest`` on every pair
    of its queries that another annotator graded and it does not list: those pairs are judged
    not relevant by the reference (for the gold and for agreement). Rows stay grouped by pair."""
    if not policy.complete or len(labels) == 0:
        return labels
    q, c, a = labels.query_ids, labels.chunk_ids, labels.annotators
    extra_q: list[str] = []
    extra_c: list[str] = []
    extra_a: list[str] = []
    for name in sorted(policy.complete):
        mine = a == name
        if not mine.any():
            continue
        queries = set(q[mine].tolist())
        listed = set(zip(q[mine].tolist(), c[mine].tolist()))
        in_scope = np.fromiter((x in queries for x in q.tolist()), dtype=bool, count=len(q))
        missing = sorted({p for p in zip(q[in_scope].tolist(), c[in_scope].tolist())} - listed)
        extra_q += [p[0] for p in missing]
        extra_c += [p[1] for p in missing]
        extra_a += [name] * len(missing)
    if not extra_q:
        return labels
    q = np.concatenate([q, np.array(extra_q, dtype=object)])
    c = np.concatenate([c, np.array(extra_c, dtype=object)])
    a = np.concatenate([a, np.array(extra_a, dtype=object)])
    g = np.concatenate([labels.grades, np.full(len(extra_q), policy.lowest, dtype=np.int64)])
    order = np.lexsort((a.astype(str), c.astype(str), q.astype(str)))
    return LabelArrays(q[order], c[order], a[order], g[order])


def gold_labels(labels: LabelArrays, policy: GoldPolicy | None, rule: str) -> LabelArrays:
    """The labels the gold rule aggregates (the one place that decides whose grades count):
    on a pair a reference annotator graded (a complete one: any pair of its queries), only the
    reference's grades; elsewhere everyone's. ``labels`` are grouped by pair."""
    if policy is None or not policy.applies(rule) or len(labels) == 0:
        return labels
    labels = implied_labels(labels, policy)
    q, c, a = labels.query_ids, labels.chunk_ids, labels.annotators
    is_reference = np.isin(a, list(policy.reference))
    if not is_reference.any():
        return labels
    new = np.ones(len(q), dtype=bool)
    new[1:] = (q[1:] != q[:-1]) | (c[1:] != c[:-1])
    pair = np.cumsum(new) - 1
    has_reference = np.bincount(pair, weights=is_reference) > 0
    keep = is_reference | ~has_reference[pair]
    return LabelArrays(q[keep], c[keep], a[keep], labels.grades[keep])


def complete_runs(q: np.ndarray, c: np.ndarray, g: np.ndarray, queries: set[str],
                  runs: Iterable[Run], lowest: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Judgments (query ids, chunk ids, grades) and, on each of ``queries`` (a complete
    reference's), grade ``lowest`` for every chunk a run ranks that has none: a closed world
    for Judged@k, bpref and pool coverage, made for the runs at hand instead of stored."""
    if not queries:
        return q, c, g
    judged = {p for p in zip(q.tolist(), c.tolist()) if p[0] in queries}
    extra: dict[tuple[str, str], None] = {}
    for run in runs:
        for qid, chunks in ranked_chunks(run, queries).items():
            for cid in chunks:
                if (qid, cid) not in judged:
                    extra.setdefault((qid, cid))
    if not extra:
        return q, c, g
    eq, ec = zip(*extra)
    return (np.concatenate([q, np.array(eq, dtype=object)]),
            np.concatenate([c, np.array(ec, dtype=object)]),
            np.concatenate([np.asarray(g, dtype=np.int64), np.full(len(eq), lowest, dtype=np.int64)]))


def ranked_chunks(run: Run, queries: set[str]) -> dict[str, list[str]]:
    """The chunks ``run`` ranks for each of ``queries`` (that it answers), in rank order."""
    from ragjudge.metrics._keys import decode

    out: dict[str, list[str]] = {}
    names = run.query_ids
    for i, qid in enumerate(names):
        if qid in queries:
            out[qid] = decode(run.chunk_ids[run.offsets[i]:run.offsets[i + 1]])
    return out


def check_rule(rule: str) -> str:
    if rule in AGGREGATION_RULES or rule == "adjudicated":
        return rule
    if rule.startswith("annotator:") and len(rule) > len("annotator:"):
        return rule
    raise UsageError(
        f"--rule '{rule}' is not an aggregation rule. Use one of: median, majority, mean, min, "
        "max, adjudicated, or annotator:NAME."
    )


RECHECK = "recheck"
"""``labels.source`` of a blind re-check: it measures self-agreement and never replaces the
annotator's current label."""


def not_recheck() -> ColumnElement[bool]:
    """A clause for label events that are not blind re-checks (portable SQL: no ``IS NOT 'x'``)."""
    return or_(Label.source.is_(None), Label.source != RECHECK)


def newest_label_ids() -> Subquery:
    """A subquery of the newest non-recheck label event id per (annotator, query, chunk)."""
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


def _to_arrays(rows) -> LabelArrays:  # noqa: ANN001
    if not rows:
        empty = np.array([], dtype=object)
        return LabelArrays(empty, empty.copy(), empty.copy(), np.array([], dtype=np.int64))
    q, c, a, g = zip(*rows)
    return LabelArrays(
        np.array(q, dtype=object), np.array(c, dtype=object), np.array(a, dtype=object),
        np.array(g, dtype=np.int64),
    )



# -- current labels in bulk, ids coded once ------------------------------------------------


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
    from ragjudge.services.bulk import unpack_ids

    return unpack_ids(np.ascontiguousarray(buf[buf != _SEP]), lengths)


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


def aggregate_pairs(pair: np.ndarray, grade: np.ndarray, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """The rule's grade of each pair from its annotators' grades, for every pair at once:
    ``(pairs, grades)``, the pairs ascending. Rows must be grouped by pair.

    Rules (as :func:`aggregate`): the lower median ``g[(n - 1) // 2]`` of the sorted grades;
    ``min``; ``max``; ``mean`` rounded half up ``floor(mean + 0.5)``; ``majority`` the most
    frequent grade, ties to the lower."""
    if not len(grade):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    new = np.ones(len(grade), dtype=bool)
    new[1:] = pair[1:] != pair[:-1]
    gid = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    counts = np.diff(np.r_[starts, len(grade)])
    if rule == "mean":
        out = np.floor(np.bincount(gid, weights=grade) / counts + 0.5).astype(np.int64)
    elif rule == "majority":
        low = int(grade.min())
        span = int(grade.max()) - low + 1
        keys, n = np.unique(gid * span + (grade - low), return_counts=True)
        group, value = keys // span, keys % span + low
        first = np.lexsort((value, -n, group))
        take = first[np.r_[True, group[first][1:] != group[first][:-1]]]
        out = value[take]
    else:
        low = int(grade.min())
        span = int(grade.max()) - low + 1
        # each pair's grades in order: (pair, grade) in one integer, sorted
        ordered = np.sort(gid * span + (grade - low)) - gid * span + low
        if rule == "median":
            out = ordered[starts + (counts - 1) // 2]
        elif rule == "min":
            out = ordered[starts]
        else:  # max
            out = ordered[starts + counts - 1]
    return pair[starts], np.asarray(out, dtype=np.int64)


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


def coded_gold_labels(rows: GradeRows, policy: GoldPolicy | None,
                      rule: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`gold_labels` on coded rows: the rows ``(pair, annotator, grade)`` the rule
    aggregates, grouped by pair. A complete reference's implied grades (:func:`implied_labels`)
    are rows added on the pairs of its queries others graded and it does not list."""
    pair, who, grade = rows.pair, rows.annotator, rows.grade
    if policy is None or not policy.applies(rule) or not len(grade):
        return pair, who, grade
    n_pairs = len(rows.pair_query)
    query = rows.pair_query
    n_queries = int(query.max()) + 1 if n_pairs else 0
    parts = [(pair, who, grade)]
    for name in sorted(policy.complete):
        code = rows.code_of(name)
        mine = who == code
        if code < 0 or not mine.any():
            continue
        listed = np.zeros(n_pairs, dtype=bool)
        listed[pair[mine]] = True
        scope = np.zeros(n_queries, dtype=bool)
        scope[query[pair[mine]]] = True
        missing = np.unique(pair[scope[query[pair]] & ~listed[pair]])
        if len(missing):
            parts.append((missing, np.full(len(missing), code, dtype=np.int64),
                          np.full(len(missing), policy.lowest, dtype=np.int64)))
    if len(parts) > 1:
        pair, who, grade = (np.concatenate([p[i] for p in parts]) for i in range(3))
        order = np.lexsort((who, pair))
        pair, who, grade = pair[order], who[order], grade[order]
    codes = [rows.code_of(n) for n in policy.reference]
    is_reference = np.isin(who, [c for c in codes if c >= 0])
    if not is_reference.any():
        return pair, who, grade
    has_reference = np.zeros(n_pairs, dtype=bool)
    has_reference[pair[is_reference]] = True
    keep = is_reference | ~has_reference[pair]
    return pair[keep], who[keep], grade[keep]


def coded_gold(rows: GradeRows, policy: GoldPolicy | None, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """``(pairs, grades)``: the gold grade of every pair the rule grades (adjudications not
    included), the same grades as :func:`aggregate` over :func:`gold_labels`."""
    rule = check_rule(rule)
    if rule == "adjudicated":
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    pair, who, grade = coded_gold_labels(rows, policy, rule)
    if rule.startswith("annotator:"):
        keep = who == rows.code_of(rule.split(":", 1)[1])
        return pair[keep], grade[keep]
    return aggregate_pairs(pair, grade, rule)


def _byte_order(q: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The permutation sorting pairs of ``as_ids`` arrays by (query, chunk) bytes."""
    from ragjudge.metrics._keys import words

    keys = [*words(c).T[::-1], *words(q).T[::-1]]
    return np.lexsort(keys)


def gold_qrel_arrays(project: Project, rule: str | None = None, *,
                     include_llm: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The gold qrels of a project as arrays ``(query ids, chunk ids, grades)`` (ids as
    ``as_ids`` arrays), sorted by query and chunk: the judgments of :func:`gold_qrels`,
    computed from the labels read in bulk."""
    from ragjudge.metrics._keys import as_ids, lookup, widen

    rule = check_rule(rule or project.rule)
    with project.connect() as connection:
        annotator = rule.split(":", 1)[1] if rule.startswith("annotator:") else None
        if annotator is not None:
            _check_annotator_known(connection, annotator)
        labels = read_labels(connection, annotator=annotator)
        if annotator is None and not include_llm:
            labels = labels.without(llm_annotators(connection))
        decided = adjudications(connection)
        policy = gold_policy(connection, project.scale.min)
    if policy.complete and policy.applies(rule):
        # the implied grades of a complete reference are rows of their own: the label arrays
        merged = {(q, c): g for q, c, g in aggregate(gold_labels(labels.arrays(), policy, rule), rule)}
        merged.update(decided)
        triples = sorted((q, c, g) for (q, c), g in merged.items())
        if not triples:
            return as_ids([]), as_ids([]), np.zeros(0, dtype=np.int64)
        tq, tc, tg = zip(*triples)
        return as_ids(tq), as_ids(tc), np.array(tg, dtype=np.int64)
    pairs, grades = coded_gold(labels.grade_rows(), policy, rule)
    q = labels.queries[labels.pair_query[pairs]]
    c = labels.chunks[labels.pair_chunk[pairs]]
    if not decided:
        return q, c, grades
    dq = as_ids([k[0] for k in decided])
    dc = as_ids([k[1] for k in decided])
    dg = np.array(list(decided.values()), dtype=np.int64)
    # the gold pairs an adjudication decides give way to it
    qi, ci = lookup(labels.queries, dq), lookup(labels.chunks, dc)
    known = (qi >= 0) & (ci >= 0)
    pair_key = labels.pair_query[pairs] * max(len(labels.chunks), 1) + labels.pair_chunk[pairs]
    decided_key = qi[known] * max(len(labels.chunks), 1) + ci[known]
    keep = ~np.isin(pair_key, decided_key)
    qw = max(q.dtype.itemsize, dq.dtype.itemsize)
    cw = max(c.dtype.itemsize, dc.dtype.itemsize)
    q = np.concatenate([widen(q[keep], qw), widen(dq, qw)])
    c = np.concatenate([widen(c[keep], cw), widen(dc, cw)])
    g = np.concatenate([grades[keep], dg])
    order = _byte_order(q, c)
    return q[order], c[order], g[order]


def aggregate(labels: LabelArrays, rule: str) -> list[tuple[str, str, int]]:
    """Aggregate several annotators' grades per pair under ``rule`` (adjudication not included)."""
    rule = check_rule(rule)
    if rule.startswith("annotator:"):
        keep = labels.annotators == rule.split(":", 1)[1]
        return [(q, c, int(g)) for q, c, g in zip(labels.query_ids[keep], labels.chunk_ids[keep],
                                                  labels.grades[keep])]
    if rule == "adjudicated" or len(labels) == 0:
        return []
    # Rows are sorted by pair; find each pair's run of rows.
    keys = np.char.add(np.char.add(labels.query_ids.astype(str), "\x00"), labels.chunk_ids.astype(str))
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    ends = np.r_[starts[1:], len(keys)]
    out = []
    for start, end in zip(starts, ends):
        grades = np.sort(labels.grades[start:end])
        out.append((labels.query_ids[start], labels.chunk_ids[start], _combine(grades, rule)))
    return out


def _combine(grades: np.ndarray, rule: str) -> int:
    if rule == "median":
        return int(grades[(len(grades) - 1) // 2])
    if rule == "min":
        return int(grades[0])
    if rule == "max":
        return int(grades[-1])
    if rule == "mean":
        return int(np.floor(grades.mean() + 0.5))
    values, counts = np.unique(grades, return_counts=True)
    return int(values[np.argmax(counts)])  # argmax takes the first, i.e. lowest, tied grade


def adjudications(connection: Connection) -> dict[tuple[str, str], int]:
    """The newest adjudicated grade per pair."""
    newest = select(func.max(Adjudication.id).label("id")).group_by(
        Adjudication.query_id, Adjudication.chunk_id).subquery()
    rows = connection.execute(
        select(Adjudication.query_id, Adjudication.chunk_id, Adjudication.grade)
        .join(newest, Adjudication.id == newest.c.id)
    ).all()
    return {(q, c): int(g) for q, c, g in rows}


def _check_annotator_known(connection: Connection, name: str) -> None:
    """``--rule annotator:NAME`` with a name the project does not know is a typo, not 0 qrels."""
    known = sorted(set(connection.execute(select(Annotator.name)).scalars())
                   | set(connection.execute(select(Label.annotator).distinct()).scalars()))
    if name not in known:
        raise UsageError(
            f"--rule 'annotator:{name}': the project has no annotator named {name!r} "
            f"(annotators: {', '.join(known) or 'none yet'})."
        )


def llm_annotators(connection: Connection) -> frozenset[str]:
    """The annotators of kind ``llm`` (their grades stay out of the gold unless asked)."""
    return frozenset(connection.execute(select(Annotator.name).where(Annotator.kind == "llm")).scalars())


def without(labels: LabelArrays, names: frozenset[str]) -> LabelArrays:
    """``labels`` less the rows of the annotators ``names``."""
    if not names or not len(labels):
        return labels
    keep = ~np.isin(labels.annotators, list(names))
    return LabelArrays(labels.query_ids[keep], labels.chunk_ids[keep], labels.annotators[keep],
                       labels.grades[keep])


def gold_qrels(project: Project, rule: str | None = None, *,
               include_llm: bool = False) -> list[tuple[str, str, int]]:
    """The gold qrels of a project: adjudication first, else ``rule`` (default: the project's).
    LLM annotators' grades count only under ``annotator:NAME`` or with ``include_llm``.
    Sorted by query and chunk (:func:`gold_qrel_arrays`)."""
    from ragjudge.metrics._keys import decode

    q, c, g = gold_qrel_arrays(project, rule, include_llm=include_llm)
    return list(zip(decode(q), decode(c), g.tolist()))
