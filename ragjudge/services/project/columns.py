"""A run or qrels file as columns (numpy arrays) for importing in bulk.

A TREC run or qrels file is read by the TREC reader of the metrics library
(:func:`ragjudge.metrics.trec.read_run_arrays`, :func:`~ragjudge.metrics.trec.read_qrels_arrays`),
which takes its fastest path that reads the file as its line path does and words every problem
with its file, line and field; ``eval`` reads the same files through the same reader. What this
module adds is about importing: a qrels file's negative grades (unjudged, never a label), its
grades against the project's scale and its repeated pairs, checked as whole columns; a run
ranked in trec_eval's order and packed as the project stores it. A qrels file whose grades are
off the scale or whose pairs repeat is read again by the record readers of
:mod:`ragjudge.formats` (through the same line path), which drop a repeat that says the same,
refuse one that contradicts and name the line of a grade off the scale.

Other formats (JSONL, CSV, BEIR) are read record by record (:func:`record_run`).

Ids are kept as the metrics library keeps them (NUL-padded ``S`` arrays, see
:mod:`ragjudge.metrics._keys`), never as a Python object per line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
import numpy as np
from ragjudge.formats.source import Source, is_inline
from ragjudge.metrics import _keys
from ragjudge.metrics.trec import packed_ids, read_qrels_arrays, read_run_arrays


Progress = Callable[[int, "int | None", str], None]


@dataclass
class RunColumns:
    """The lines of a run file: ids as ``S`` arrays, scores (NaN where a line has none),
    the rank column (0 where a line has none, or one below 1) and each row's line."""

    query_ids: np.ndarray
    chunk_ids: np.ndarray
    scores: np.ndarray
    ranks: np.ndarray
    lines: np.ndarray

    def __len__(self) -> int:
        return len(self.query_ids)

    @property
    def scored(self) -> bool:
        """Whether the run is ordered by score (its first line has one), as imports always
        decided."""
        return bool(len(self.scores)) and not np.isnan(self.scores[0])


@dataclass
class QrelsColumns:
    """The judged lines of a TREC qrels file (each pair once, every grade on the scale), and
    what else the file held: ``unjudged`` the pairs of its lines with a negative grade (and
    their ``unjudged_lines``), ``form`` how its lines were read (``trec``, ``three``,
    ``smart``)."""

    query_ids: np.ndarray
    chunk_ids: np.ndarray
    grades: np.ndarray
    lines: np.ndarray
    unjudged: tuple[np.ndarray, np.ndarray]
    unjudged_lines: np.ndarray
    form: str

    def __len__(self) -> int:
        return len(self.query_ids)


def materialize(source: Source) -> Source:
    """Standard input or an open file read into bytes, so that it can be read twice (by the
    TREC reader, then by the record readers when the file needs them); a path or inline text
    as it is."""
    if isinstance(source, (str, os.PathLike)) and not is_inline(source) and str(source) == "-":
        return sys.stdin.buffer.read()
    if hasattr(source, "read"):
        data = source.read()
        return data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    return source


def _line_numbers(lines: np.ndarray | None, n: int) -> np.ndarray:
    return lines if lines is not None else np.arange(1, n + 1, dtype=np.int64)


def trec_run(source: Source, file: str) -> RunColumns:
    """The columns of a TREC run (``qid Q0 docid rank score tag``): every line has a score, so
    the rank column plays no part (its values are checked by the reader)."""
    arrays = read_run_arrays(source, name=file)
    n = len(arrays)
    return RunColumns(arrays.query_ids, arrays.chunk_ids, arrays.scores,
                      np.zeros(n, dtype=np.int64), _line_numbers(arrays.lines, n))


def trec_qrels(source: Source, file: str, form: str, scale_min: int,
               scale_max: int) -> QrelsColumns | None:
    """The columns of a TREC, 3-field or SMART qrels file (``form``: ``auto`` or ``smart``),
    its lines with a negative grade set apart (unjudged); None when a pair is listed twice or a
    grade is off the scale, for the record readers to say which line."""
    arrays = read_qrels_arrays(source, form=form, name=file)
    if first_repeat(arrays.query_ids, arrays.chunk_ids) is not None:
        return None  # the record readers drop repeats and name contradictions
    lines = _line_numbers(arrays.lines, len(arrays))
    q, c, g = arrays.query_ids, arrays.chunk_ids, arrays.grades
    judged = g >= 0
    unjudged = ~judged
    if len(g) and (int(g[judged].min(initial=scale_min)) < scale_min
                   or int(g.max()) > scale_max):
        return None
    return QrelsColumns(q[judged], c[judged], g[judged], lines[judged], (q[unjudged], c[unjudged]),
                        lines[unjudged], arrays.form)


def record_run(rows: Iterable[tuple[int, str, str, int | None, float | None]]) -> RunColumns:
    """The columns of a run read line by line: ``(line, query_id, chunk_id, rank, score)``."""
    lines: list[int] = []
    queries: list[str] = []
    chunks: list[str] = []
    ranks: list[int] = []
    scores: list[float] = []
    nan = float("nan")
    for line, query_id, chunk_id, rank, score in rows:
        lines.append(line)
        queries.append(query_id)
        chunks.append(chunk_id)
        ranks.append(rank or 0)
        scores.append(nan if score is None else score)
    return RunColumns(_encode(queries), _encode(chunks), np.array(scores, dtype=np.float64),
                      np.array(ranks, dtype=np.int64), np.array(lines, dtype=np.int64))


def _encode(ids: list[str]) -> np.ndarray:
    if not ids:
        return np.zeros(0, dtype="S8")
    return _keys.as_ids([i.encode("utf-8", "surrogatepass") for i in ids])


def first_repeat(query_ids: np.ndarray, chunk_ids: np.ndarray) -> tuple[int, int] | None:
    """Rows ``(i, j)``, ``i < j``, of the first row that repeats an earlier row's pair (the
    smallest such ``j``), or None."""
    unique, qidx = _keys.factorize(query_ids)
    hashes = _keys.pair_hash(_keys.id_hash(unique)[qidx], chunk_ids)
    return _keys.first_duplicate(hashes, qidx, chunk_ids)


def longer_than(ids: np.ndarray, limit: int) -> np.ndarray:
    """Rows whose id has more than ``limit`` bytes (none when the array is not that wide)."""
    if ids.dtype.itemsize <= limit:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.char.str_len(ids) > limit)


def distinct(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ids of an ``S`` array (in no particular order) and the row where each
    first occurs, found through their hashes (each group checked on its exact bytes)."""
    if len(ids) == 0:
        return ids[:0], np.zeros(0, dtype=np.int64)
    hashes = _keys.id_hash(ids)
    order = np.argsort(hashes, kind="stable")
    sorted_hashes = hashes[order]
    new = np.ones(len(ids), dtype=bool)
    new[1:] = sorted_hashes[1:] != sorted_hashes[:-1]
    heads = order[new]
    if not np.array_equal(ids[order], ids[heads[np.cumsum(new) - 1]]):
        unique, first = np.unique(ids, return_index=True)  # two ids share a hash
        return unique, first
    return ids[heads], heads


def decode(ids: np.ndarray) -> list[str]:
    """Ids back to text (they are UTF-8: both readers checked)."""
    return [b.decode("utf-8", "surrogatepass") for b in ids.tolist()]


def unpack_ids(data: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Packed ids (their bytes one after another, and their lengths; see
    :mod:`ragjudge.store.run_arrays`) as an ``S`` array of the metrics library's width."""
    return packed_ids(data, lengths)


@dataclass
class RankedRun:
    """A run's rows in the order they are stored: grouped by query (queries in byte order), in
    rank order within a query; ``order`` maps them to the file's rows."""

    query_ids: np.ndarray
    """the distinct query ids, sorted"""
    qidx: np.ndarray
    offsets: np.ndarray
    chunk_ids: np.ndarray
    scores: np.ndarray
    """NaN where the line had no score"""
    order: np.ndarray

    def __len__(self) -> int:
        return len(self.chunk_ids)

    @property
    def ranks(self) -> np.ndarray:
        return np.arange(len(self.qidx), dtype=np.int64) - self.offsets[self.qidx] + 1

    def arrays(self) -> dict[str, np.ndarray]:
        """What :mod:`ragjudge.store.run_arrays` stores."""
        from ragjudge.store.run_arrays import pack_ids

        q_bytes, q_lengths = pack_ids(self.query_ids)
        c_bytes, c_lengths = pack_ids(self.chunk_ids)
        return {"query_ids": q_bytes, "query_ids_lengths": q_lengths,
                "offsets": self.offsets.astype(np.int64), "chunk_ids": c_bytes,
                "chunk_ids_lengths": c_lengths, "scores": self.scores}


def rank(columns: RunColumns) -> RankedRun:
    """trec_eval's order for a run with scores (score descending, ties by chunk id descending as
    bytes; a line without a score after the scored ones of its query); for a run without, the
    rank column (lines without one last), then the line. Pairs must be distinct."""
    from ragjudge.metrics.data import Run

    n = len(columns)
    positions = np.arange(1, n + 1, dtype=np.int64)
    q, c, scores = columns.query_ids, columns.chunk_ids, columns.scores
    if columns.scored:
        given = scores
        if np.isnan(scores).any():  # after every score of the file: after its query's scored lines
            low = float(np.nanmin(scores))
            given = np.where(np.isnan(scores), np.nextafter(low, -np.inf) if low > -np.finfo(float).max
                             else low, scores)
        run = Run(q, c, given, lines=positions)
        first = None
    else:
        ranks = columns.ranks
        last = np.where(ranks > 0, ranks, np.iinfo(np.int64).max)
        first = np.lexsort((columns.lines, last))
        run = Run(q[first], c[first], None, ordered=True, lines=positions)
    order = run.lines - 1 if run.lines is not None else np.arange(n)
    if first is not None:
        order = first[order]
    return RankedRun(run.query_id_bytes, run.qidx, run.offsets, run.chunk_ids, scores[order], order)
