"""Qrels and runs, each built once from arrays into the layout every measure reads.

``Qrels`` holds graded judgments of (query, chunk) pairs; a negative grade means "unjudged"
(it is kept, but no measure sees it as judged). ``Run`` holds a retriever's ranked chunks per
query, in trec_eval's order: score descending, ties broken by chunk id descending as byte strings
(``strcmp``). Scores are compared as float64; trec_eval 9 and pytrec_eval store them as float32,
so two scores that differ only beyond float32 precision tie there and not here.

Ids are kept as fixed-width byte strings (see ``_keys``), never as a Python object per row.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from ragjudge.errors import InputError, UsageError
from ragjudge.metrics import _keys
from ragjudge.metrics._keys import as_ids, decode, factorize, first_duplicate, id_hash, pair_hash, words
from ragjudge.numeric import MAX_GRADE, grade_problem
from ragjudge.safetext import quote


#: a run of at least this many rows is hashed on a thread beside its ordering
CONCURRENT_ROWS = 1 << 20
_THREADS = min(2, os.cpu_count() or 1)

#: the InputError fields (file and line, or a hint) that locate a row
Where = Callable[[int], dict[str, Any]]


def _where(file: str | None, lines: np.ndarray | None, row: int,
           located: bool = True) -> dict[str, Any]:
    """file/line of a row read from a file (row i is line i + 1 unless ``lines`` says)."""
    if not located:
        return {}
    return {"file": file, "line": int(lines[row]) if lines is not None else row + 1}


def _row_or_line(file: str | None, lines: np.ndarray | None, located: bool) -> Where:
    """``where(row)`` for an InputError: the file and line of a row read from a file, else
    its 1-based row in a hint."""
    def where(row: int) -> dict[str, Any]:
        if located:
            return _where(file, lines, row)
        return {"hint": f"(row {row + 1} of the grades)"}
    return where


def _integer_grades(grades: Any, where: Where) -> np.ndarray:
    """Grades as int64: whole numbers within ±MAX_GRADE, else an InputError naming the first
    that is not (``where(row)`` locates a row: its file and line, when it has them)."""
    array = np.asarray(grades).ravel()
    if array.dtype.kind == "b":
        return array.astype(np.int64)
    if array.dtype.kind == "O":  # Python numbers, e.g. an int too large for int64
        return np.array([_one_grade(v, i, where) for i, v in enumerate(array.tolist())],
                        dtype=np.int64)
    if array.dtype.kind in "iu":
        _check_range(array, array, where)
        return array.astype(np.int64, copy=False)
    try:
        as_float = array.astype(np.float64)
    except (TypeError, ValueError):
        raise InputError("grades must be integers.", field="grade") from None
    whole = np.isfinite(as_float) & (as_float == np.round(as_float))
    if not whole.all():
        bad = int(np.flatnonzero(~whole)[0])
        raise InputError(f"grade {quote(array[bad])} is not an integer.", field="grade", **where(bad))
    _check_range(as_float, array, where)
    return as_float.astype(np.int64)


def _check_range(values: np.ndarray, shown: np.ndarray, where: Where) -> None:
    out = np.flatnonzero((values > MAX_GRADE) | (values < -MAX_GRADE))
    if len(out):
        bad = int(out[0])
        raise InputError(grade_problem(int(shown[bad])) or "", field="grade", **where(bad))


def _one_grade(value: Any, row: int, where: Where) -> int:
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and value == int(value):
        value = int(value)
    if not isinstance(value, (int, np.integer)):
        raise InputError(f"grade {quote(value)} is not an integer.", field="grade", **where(row))
    problem = grade_problem(int(value))
    if problem:
        raise InputError(problem, field="grade", **where(row))
    return int(value)


class _ByQuery:
    """What qrels and runs share: rows grouped by query, queries as sorted unique ``_qids``
    with ``offsets`` into the rows."""

    _qids: np.ndarray
    offsets: np.ndarray

    @property
    def n_queries(self) -> int:
        return len(self._qids)

    @cached_property
    def query_ids(self) -> list[str]:
        """The queries, in byte order of their ids (trec_eval's output order)."""
        return decode(self._qids)

    @property
    def query_id_bytes(self) -> np.ndarray:
        return self._qids

    def _rows_of(self, query_id: str) -> tuple[int, int] | None:
        """The row range of one query, or None when it has none."""
        row = _keys.lookup(self._qids, as_ids([query_id]))[0]
        if row < 0:
            return None
        return int(self.offsets[row]), int(self.offsets[row + 1])


class Qrels(_ByQuery):
    """Graded relevance judgments: for each query, a grade per judged chunk.

    Build with ``Qrels(query_ids, chunk_ids, grades)`` (parallel arrays or sequences),
    ``Qrels.from_dict({qid: {chunk_id: grade}})`` or ``Qrels.from_trec(path_or_text)``.
    A (query, chunk) pair judged twice, or a grade outside ±``ragjudge.numeric.MAX_GRADE``, is
    an ``InputError``.

    ``top_grade`` is the top of the grade scale the grades come from (a project passes its
    scale's); without it the top is the highest grade in these qrels. It is ERR's g_max, so
    the same for every query, whichever queries are evaluated.

    Everything the measures need from the qrels (the pair index used to look up a run's
    chunks, judged grades per query sorted for the ideal ranking, relevant counts per
    threshold) is computed once and shared by every run evaluated against these qrels.
    """

    def __init__(
        self,
        query_ids: Iterable[str] | np.ndarray,
        chunk_ids: Iterable[str] | np.ndarray,
        grades: Iterable[int] | np.ndarray,
        *,
        file: str | None = None,
        lines: np.ndarray | None = None,
        from_file: bool = False,
        top_grade: int | None = None,
    ) -> None:
        located = from_file or file is not None or lines is not None
        qids, cids = as_ids(query_ids), as_ids(chunk_ids)
        grade_array = _integer_grades(grades, _row_or_line(file, lines, located))
        if not (len(qids) == len(cids) == len(grade_array)):
            raise InputError(
                f"query_ids, chunk_ids and grades differ in length "
                f"({len(qids)}, {len(cids)}, {len(grade_array)})."
            )
        self.file = file
        self.top_grade = None if top_grade is None else int(top_grade)
        if top_grade is not None:
            self._check_scale(qids, cids, grade_array, _row_or_line(file, lines, located))
        unique, qidx = factorize(qids)
        hashes = pair_hash(id_hash(unique)[qidx], cids)
        dup = first_duplicate(hashes, qidx, cids)
        if dup is not None:
            i, j = dup
            where = _where(file, lines, j, located)
            first = f" (first at line {_where(file, lines, i, located)['line']})" if where else ""
            raise InputError(
                f"query {quote(decode(qids[j:j + 1])[0])} judges chunk {quote(decode(cids[j:j + 1])[0])} "
                f"twice{first}.",
                **where,
            )
        # rows grouped by query, grades descending within a query: the ideal ranking
        order = np.lexsort((-grade_array, qidx))
        self._qids = unique
        self.qidx = qidx[order]
        self.chunk_ids = cids[order]
        self.grades = grade_array[order]
        counts = np.bincount(self.qidx, minlength=len(unique))
        self.offsets = np.concatenate(([0], np.cumsum(counts)))
        #: 1-based position of each row in its query's ideal ranking (judged rows first)
        self.ideal_rank = np.arange(len(self.qidx)) - self.offsets[self.qidx] + 1

    def _check_scale(self, qids: np.ndarray, cids: np.ndarray, grades: np.ndarray,
                     where: Where) -> None:
        top = self.top_grade
        assert top is not None  # only called with a declared scale
        if not 1 <= top <= MAX_GRADE:
            raise UsageError(f"the top of a grade scale is from 1 to {MAX_GRADE:,}, not {top}.")
        above = np.flatnonzero(grades > top)
        if len(above):
            i = int(above[0])
            raise InputError(
                f"query {quote(decode(qids[i:i + 1])[0])} judges chunk {quote(decode(cids[i:i + 1])[0])} "
                f"with grade {int(grades[i])}, above the top of the scale ({top}).",
                field="grade", **where(i))

    @classmethod
    def from_arrays(cls, query_ids: Any, chunk_ids: Any, grades: Any, *, top_grade: int | None = None) -> Qrels:
        """Same as the constructor (query ids, chunk ids, integer grades)."""
        return cls(query_ids, chunk_ids, grades, top_grade=top_grade)

    @classmethod
    def from_grouped(cls, query_ids: np.ndarray, counts: np.ndarray, chunk_ids: np.ndarray,
                     grades: np.ndarray, *, top_grade: int | None = None) -> Qrels:
        """From judgments already grouped by query, as a project keeps them: the distinct query
        ids sorted (an ``as_ids`` array), each one's number of judgments, and every judgment's
        chunk id and grade grouped by query, each (query, chunk) pair once (not checked). Only
        the order within each query is made (grades descending: the ideal ranking), the same
        layout the constructor gives the same rows, without its search for repeated pairs."""
        self = cls.__new__(cls)
        counts = np.asarray(counts, dtype=np.int64)
        cids = as_ids(chunk_ids)
        grade_array = _integer_grades(grades, _row_or_line(None, None, False))
        n = len(grade_array)
        if not (len(cids) == n == int(counts.sum())):
            raise InputError(f"{int(counts.sum())} judgments counted for {len(cids)} chunk ids "
                             f"and {n} grades.")
        qids = as_ids(query_ids)
        if len(counts) and not counts.all():  # a query without judgments is not in qrels
            qids, counts = qids[counts > 0], counts[counts > 0]
        qidx = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
        self.file = None
        self.top_grade = None if top_grade is None else int(top_grade)
        if top_grade is not None and n and int(grade_array.max()) > top_grade or \
                top_grade is not None and not 1 <= top_grade <= MAX_GRADE:
            self._check_scale(qids[qidx], cids, grade_array, _row_or_line(None, None, False))
        if n:
            low, high = int(grade_array.min()), int(grade_array.max())
            span = high - low + 1
            if len(counts) * span * n < (1 << 62):  # (query, grade descending, row) in one integer
                order = np.sort((qidx * span + (high - grade_array)) * n + np.arange(n)) % n
            else:
                order = np.lexsort((-grade_array, qidx))
        else:
            order = np.zeros(0, dtype=np.int64)
        self._qids = qids
        self.qidx = qidx
        self.chunk_ids = cids[order]
        self.grades = grade_array[order]
        self.offsets = np.concatenate(([0], np.cumsum(counts)))
        self.ideal_rank = np.arange(n) - self.offsets[self.qidx] + 1
        return self

    @classmethod
    def from_dict(cls, judgments: Mapping[str, Mapping[str, int]], *,
                  top_grade: int | None = None) -> Qrels:
        """From ``{query_id: {chunk_id: grade}}`` (pytrec_eval's layout)."""
        q, c, g = [], [], []
        for qid, chunks in judgments.items():
            for cid, grade in chunks.items():
                q.append(qid)
                c.append(cid)
                g.append(grade)
        return cls(q, c, g, top_grade=top_grade)

    @classmethod
    def from_trec(cls, source: Any) -> Qrels:
        """From a TREC qrels file, file object or inline text (gzip read transparently)."""
        from ragjudge.metrics.trec import read_qrels_arrays

        arrays = read_qrels_arrays(source)
        return cls(arrays.query_ids, arrays.chunk_ids, arrays.grades, file=arrays.file,
                   lines=arrays.lines, from_file=True)

    def __len__(self) -> int:
        return len(self.grades)

    def __repr__(self) -> str:
        return f"Qrels({self.n_queries} queries, {len(self)} judgments)"

    @cached_property
    def index(self) -> _keys.PairIndex:
        """Hash index from (query row, chunk id) to the judgment row."""
        return _keys.PairIndex(self.qidx, self.chunk_ids, id_hash(self._qids)[self.qidx])

    @cached_property
    def max_grade(self) -> int:
        """The top of the grade scale: ``top_grade`` when given, else the highest grade in
        these qrels (the scale as far as they show it; 0 without grades)."""
        if self.top_grade is not None:
            return self.top_grade
        return int(self.grades.max()) if len(self.grades) else 0

    def to_dict(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {qid: {} for qid in self.query_ids}
        qids = self.query_ids
        for q, c, g in zip(self.qidx.tolist(), decode(self.chunk_ids), self.grades.tolist()):
            out[qids[q]][c] = g
        return out

    def for_query(self, query_id: str) -> dict[str, int]:
        """``{chunk_id: grade}`` of one query (empty when the query has no judgments)."""
        rows = self._rows_of(query_id)
        if rows is None:
            return {}
        lo, hi = rows
        return dict(zip(decode(self.chunk_ids[lo:hi]), self.grades[lo:hi].tolist()))


class Run(_ByQuery):
    """A retriever's ranked chunks per query, sorted once into trec_eval's order.

    Build with ``Run(query_ids, chunk_ids, scores)`` (parallel arrays),
    ``Run.from_ranked({qid: [chunk_id, ...]})`` (lists keep their order; scores are not
    needed), ``Run.from_dict({qid: {chunk_id: score}})`` or ``Run.from_trec(path_or_text)``.
    A chunk listed twice for one query is an ``InputError``.

    After construction the rows are grouped by query and in rank order: query ``i`` (of
    ``query_ids``) owns rows ``offsets[i]:offsets[i + 1]``.
    """

    def __init__(
        self,
        query_ids: Iterable[str] | np.ndarray,
        chunk_ids: Iterable[str] | np.ndarray,
        scores: Iterable[float] | np.ndarray | None = None,
        *,
        name: str | None = None,
        ordered: bool = False,
        file: str | None = None,
        lines: np.ndarray | None = None,
        from_file: bool = False,
    ) -> None:
        located = from_file or file is not None or lines is not None
        qids, cids = as_ids(query_ids), as_ids(chunk_ids)
        n = len(qids)
        if scores is None:
            if not ordered:
                raise InputError("a run without scores must be given in rank order (ordered=True).")
            score_array = -np.arange(n, dtype=np.float64)
        else:
            score_array = np.asarray(scores, dtype=np.float64).ravel()
        if not (len(cids) == n == len(score_array)):
            raise InputError(
                f"query_ids, chunk_ids and scores differ in length "
                f"({n}, {len(cids)}, {len(score_array)})."
            )
        if not np.all(np.isfinite(score_array)):
            bad = int(np.flatnonzero(~np.isfinite(score_array))[0])
            raise InputError(f"score {quote(score_array[bad])} is not a finite number.",
                             field="score", **_where(file, lines, bad, located))
        self.name = name
        self.file = file
        unique, qidx, counts = factorize(qids, counts=True)

        def hashed() -> tuple[np.ndarray, tuple[int, int] | None]:
            hashes = pair_hash(id_hash(unique)[qidx], cids)
            return hashes, first_duplicate(hashes, qidx, cids)

        if n >= CONCURRENT_ROWS and _THREADS > 1:
            # the pair hashes and the check for a chunk listed twice (a sort) run beside the
            # ordering, which reads the same arrays and writes none of them
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=1) as pool:
                hashing = pool.submit(hashed)
                placed = self._place(qidx, cids, score_array, ordered)
                hashes, dup = hashing.result()
        else:
            hashes, dup = hashed()
            placed = None
        if dup is not None:
            i, j = dup
            where = _where(file, lines, j, located)
            first = f" (first at line {_where(file, lines, i, located)['line']})" if where else ""
            raise InputError(
                f"query {quote(decode(qids[j:j + 1])[0])} lists chunk {quote(decode(cids[j:j + 1])[0])} "
                f"twice{first}; a run ranks each chunk once per query.",
                field="chunk_id",
                **where,
            )
        order, qidx, cids, score_array, moves = placed or self._place(qidx, cids, score_array, ordered)
        if order is not None:
            lines = lines[order] if lines is not None else order + 1 if located else None
            hashes = hashes[order]
        if moves is not None:
            # tied rows share their query and score: only their chunk ids (and what follows a
            # row: its hash, its line) move, and only within the ties
            to, source = moves
            if order is None:  # cids and lines may be the caller's arrays
                cids = cids.copy()
                if lines is None and located:
                    lines = np.arange(1, len(cids) + 1, dtype=np.int64)
                elif lines is not None:
                    lines = lines.copy()
            cids[to] = cids[source]
            hashes[to] = hashes[source]
            if lines is not None:
                lines[to] = lines[source]
        #: hash of (query id, chunk id) per row, shared with the qrels' pair index
        self.pair_hashes = hashes
        self._qids = unique
        self.qidx = qidx
        self.chunk_ids = cids
        self.scores = score_array
        self.lines = lines
        self.offsets = np.concatenate(([0], np.cumsum(counts)))

    @classmethod
    def _place(cls, qidx: np.ndarray, cids: np.ndarray, scores: np.ndarray, ordered: bool) -> tuple[
            np.ndarray | None, np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
        """Where the rows go: the permutation ``_order`` (or None), the query indexes, chunk
        ids and scores in that order, and the moves of ``_tie_moves`` to apply after it (or
        None)."""
        order = cls._order(qidx, cids, scores, ordered)
        if order is not None:
            qidx, cids, scores = qidx[order], cids[order], scores[order]
        moves = None if ordered else cls._tie_moves(qidx, cids, scores)
        return order, qidx, cids, scores, moves

    @staticmethod
    def _order(qidx: np.ndarray, cids: np.ndarray, scores: np.ndarray, ordered: bool) -> np.ndarray | None:
        """A permutation grouping the rows by query with scores descending (ties are settled
        by ``_tie_moves``), or None when the rows already are so.

        Retrievers write runs grouped by query and sorted by score, so the common case costs
        two comparisons per row and no sort.
        """
        n = len(qidx)
        if n < 2:
            return None
        same_q = qidx[1:] == qidx[:-1]
        grouped = n - int(np.count_nonzero(same_q)) == int(qidx.max()) + 1
        if ordered or (grouped and not np.any(same_q & (scores[:-1] < scores[1:]))):
            if not grouped or not np.all(qidx[1:] >= qidx[:-1]):
                return np.argsort(qidx, kind="stable")
            return None
        return np.lexsort((-scores, qidx))

    @staticmethod
    def _tie_moves(qidx: np.ndarray, cids: np.ndarray,
                   scores: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """For rows grouped by query, scores descending: the rows ``to`` that take the rows
        ``source`` (``row[to] = row[source]``) so that tied scores are in chunk id descending
        order (trec_eval's tie rule), or None when they already are. Rows move only within
        their tie, so their query and score stay."""
        if len(qidx) < 2:
            return None
        tied = np.flatnonzero((qidx[1:] == qidx[:-1]) & (scores[1:] == scores[:-1]))
        if len(tied) == 0:
            return None
        w = words(cids)
        a, b = w[tied], w[tied + 1]
        diff = a != b
        first = np.argmax(diff, axis=1)
        rows = np.arange(len(tied))
        if np.all(a[rows, first] > b[rows, first]):
            return None
        # sort only the rows that belong to a tie, within their tie
        in_tie = np.zeros(len(qidx), dtype=bool)
        in_tie[tied] = True
        in_tie[tied + 1] = True
        members = np.flatnonzero(in_tie)
        new_tie = np.ones(len(members), dtype=bool)
        new_tie[1:] = ~np.isin(members[1:] - 1, tied) | (members[1:] - 1 != members[:-1])
        tie_id = np.cumsum(new_tie)
        wm = w[members]
        keys = [~wm[:, j] for j in range(wm.shape[1] - 1, -1, -1)]
        local = np.lexsort(keys + [tie_id])
        return members, members[local]

    @classmethod
    def from_arrays(cls, query_ids: Any, chunk_ids: Any, scores: Any, *, name: str | None = None) -> Run:
        """Same as the constructor (query ids, chunk ids, scores)."""
        return cls(query_ids, chunk_ids, scores, name=name)

    @classmethod
    def from_grouped(cls, query_ids: np.ndarray, counts: np.ndarray, chunk_ids: np.ndarray, *,
                     name: str | None = None) -> Run:
        """From rows already in this class's layout, as a project stores a run: the distinct
        query ids sorted (an ``as_ids`` array), each one's number of rows, and every row's
        chunk id grouped by query in rank order (each chunk once per query). Nothing is
        sorted or searched, so that a stored run of millions of rows opens in a moment."""
        self = cls.__new__(cls)
        counts = np.asarray(counts, dtype=np.int64)
        self.name = name
        self.file = None
        self._qids = as_ids(query_ids)
        self.qidx = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
        self.chunk_ids = as_ids(chunk_ids)
        n = len(self.chunk_ids)
        if len(self.qidx) != n:
            raise InputError(f"{int(counts.sum())} rows counted for {n} chunk ids.")
        self.scores = -np.arange(n, dtype=np.float64)
        self.lines = None
        self.pair_hashes = pair_hash(id_hash(self._qids)[self.qidx], self.chunk_ids)
        self.offsets = np.concatenate(([0], np.cumsum(counts)))
        return self

    @classmethod
    def from_ranked(cls, ranked: Mapping[str, Sequence[str]], *, name: str | None = None) -> Run:
        """From ``{query_id: [chunk_id, ...]}``, best first; the lists keep their order."""
        q: list[str] = []
        c: list[str] = []
        for qid, chunks in ranked.items():
            q.extend([qid] * len(chunks))
            c.extend(chunks)
        return cls(q, c, None, name=name, ordered=True)

    @classmethod
    def from_dict(cls, scored: Mapping[str, Mapping[str, float]], *, name: str | None = None) -> Run:
        """From ``{query_id: {chunk_id: score}}`` (pytrec_eval's layout)."""
        q, c, s = [], [], []
        for qid, chunks in scored.items():
            for cid, score in chunks.items():
                q.append(qid)
                c.append(cid)
                s.append(score)
        return cls(q, c, np.array(s, dtype=np.float64), name=name)

    @classmethod
    def from_trec(cls, source: Any, *, name: str | None = None) -> Run:
        """From a TREC run file, file object or inline text (gzip read transparently)."""
        from ragjudge.metrics.trec import read_run_arrays

        arrays = read_run_arrays(source)
        if name is None and arrays.file is not None:
            from pathlib import Path

            name = Path(arrays.file).name.split(".")[0] or Path(arrays.file).name
        return cls(arrays.query_ids, arrays.chunk_ids, arrays.scores, name=name,
                   file=arrays.file, lines=arrays.lines, from_file=True)

    def __len__(self) -> int:
        return len(self.chunk_ids)

    def __repr__(self) -> str:
        label = f"{self.name!r}, " if self.name else ""
        return f"Run({label}{self.n_queries} queries, {len(self)} entries)"

    @property
    def depth(self) -> int:
        """The longest ranking of any query."""
        return int(np.max(np.diff(self.offsets))) if self.n_queries else 0

    def ranking(self, query_id: str) -> list[tuple[str, float]]:
        """``[(chunk_id, score), ...]`` of one query in rank order (empty if absent)."""
        rows = self._rows_of(query_id)
        if rows is None:
            return []
        lo, hi = rows
        return list(zip(decode(self.chunk_ids[lo:hi]), self.scores[lo:hi].tolist()))

    def to_ranked(self) -> dict[str, list[str]]:
        ids = decode(self.chunk_ids)
        return {qid: ids[self.offsets[i]:self.offsets[i + 1]] for i, qid in enumerate(self.query_ids)}
