"""A run or qrels file as columns (numpy arrays) for importing in bulk.

Two readers give the same columns:

- the *plain* reader, for a TREC file whose every line is its fields joined by one space
  (what retrievers and trec_eval write): pyarrow's CSV reader splits it on both cores
  (:func:`ragjudge.metrics._arrow.plain_table`), and each column is checked as a whole;
- the *record* reader: the line-by-line readers of :mod:`ragjudge.formats`, for every other
  file (JSONL, CSV, tabs, blank lines, ...).

The plain reader accepts only what it can prove the record reader accepts with the same values:
UTF-8 text without a byte order mark and without the Unicode spaces Python splits on, ranks and
grades of ASCII digits, scores in plain decimal or exponent notation that parse to finite
numbers, grades on the project's scale, lines no longer than the record reader's limit, no pair
twice in a qrels file. Anything else sends the whole file to the record reader, which reads it
as it always has and names the first bad line with its file, line and field: every message
comes from one place, whichever reader a file takes.

Ids are kept as the metrics library keeps them (NUL-padded ``S`` arrays, see
:mod:`ragjudge.metrics._keys`), never as a Python object per line.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
import numpy as np
from ragjudge.formats.source import MAX_LINE_BYTES, Source, is_inline
from ragjudge.metrics import _keys


Progress = Callable[[int, "int | None", str], None]


# Tokens whose value the record readers (Python's int() and float()) and pyarrow agree on,
# written so that nothing Python reads differently (underscores, other digits, "infinity")
# passes: anything else goes to the record reader, which decides.
_INTEGER = rb"^-?[0-9]{1,9}$"


_NUMBER = rb"^[-+]?([0-9]{1,40}(\.[0-9]{0,40})?|\.[0-9]{1,40})([eE][-+]?[0-9]{1,3})?$"


_UNICODE_SPACE = re.compile("[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")


_BOM = b"\xef\xbb\xbf"


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
    """The lines of a TREC qrels file, each pair once."""

    query_ids: np.ndarray
    chunk_ids: np.ndarray
    grades: np.ndarray
    lines: np.ndarray

    def __len__(self) -> int:
        return len(self.query_ids)


def materialize(source: Source) -> Source:
    """Standard input or an open file read into bytes, so that both readers can read it (the
    plain one first, the record one after it when the file is not plain); a path or inline
    text as it is."""
    if isinstance(source, (str, os.PathLike)) and not is_inline(source) and str(source) == "-":
        return sys.stdin.buffer.read()
    if hasattr(source, "read"):
        data = source.read()
        return data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    return source


def _plain_bytes(source: Source) -> tuple[np.ndarray, int] | None:
    """The input as the metrics library's TREC reader holds it (gzip undone, a newline at the
    end, zero padding), or None when the record reader should read it (a missing file, a
    damaged gzip stream, a byte order mark, text that is not UTF-8 or holds Unicode spaces,
    a line too long)."""
    from ragjudge.errors import InputError
    from ragjudge.metrics.trec import read_bytes

    try:
        buf, size, _ = read_bytes(source)
    except (InputError, OSError):
        return None
    if size == 0 or bytes(buf[:3]) == _BOM:
        return None
    view = buf[:size]
    if int(view.max()) >= 0x80:
        try:
            text = view.tobytes().decode("utf-8")
        except UnicodeDecodeError:
            return None
        if _UNICODE_SPACE.search(text):
            return None
        del text
    if size > MAX_LINE_BYTES:
        ends = np.flatnonzero(view == 10)
        if len(ends) and int(np.diff(ends, prepend=-1).max()) > MAX_LINE_BYTES:
            return None
    return buf, size


def _all(column: Any, pattern: bytes) -> bool:
    import pyarrow.compute as pc

    return bool(pc.all(pc.match_substring_regex(column, pattern)).as_py()) if len(column) else True


def _ids(columns: list[Any]) -> list[np.ndarray] | None:
    from ragjudge.metrics import _arrow

    plan = _arrow._plan_ids(columns)
    return None if plan is None else _arrow._gather_ids(plan)


def plain_run(source: Source) -> RunColumns | None:
    """The columns of a plain TREC run (``qid Q0 docid rank score tag``), or None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ragjudge.metrics import _arrow

    read = _plain_bytes(source)
    if read is None:
        return None
    buf, size = read
    binary = pa.binary()
    plain = _arrow.plain_table(buf, size, 6, {0: binary, 2: binary, 3: binary, 4: binary})
    del buf
    if plain is None:
        return None
    table, _ = plain
    rank_text, score_text = table.column("f3"), table.column("f4")
    if not (_all(rank_text, _INTEGER) and _all(score_text, _NUMBER)):
        return None
    scores = numbers(pc.cast(pc.cast(score_text, pa.string()), pa.float64()), np.float64)
    if not np.isfinite(scores).all():
        return None
    ranks = numbers(pc.cast(pc.cast(rank_text, pa.string()), pa.int64()), np.int64)
    ids = _ids([table.column("f0"), table.column("f2")])
    if ids is None:
        return None
    n = table.num_rows
    return RunColumns(ids[0], ids[1], np.ascontiguousarray(scores, dtype=np.float64),
                      np.where(ranks >= 1, ranks, 0).astype(np.int64),
                      np.arange(1, n + 1, dtype=np.int64))


def plain_qrels(source: Source, scale_min: int, scale_max: int) -> QrelsColumns | None:
    """The columns of a plain TREC qrels file (``qid 0 docid grade``) whose grades are all on
    the scale and whose pairs are all distinct, or None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ragjudge.metrics import _arrow

    read = _plain_bytes(source)
    if read is None:
        return None
    buf, size = read
    binary = pa.binary()
    plain = _arrow.plain_table(buf, size, 4, {0: binary, 2: binary, 3: binary})
    del buf
    if plain is None:
        return None
    table, _ = plain
    grade_text = table.column("f3")
    if not _all(grade_text, _INTEGER):
        return None
    grades = numbers(pc.cast(pc.cast(grade_text, pa.string()), pa.int64()), np.int64)
    if len(grades) and (int(grades.min()) < scale_min or int(grades.max()) > scale_max):
        return None
    ids = _ids([table.column("f0"), table.column("f2")])
    if ids is None:
        return None
    n = table.num_rows
    columns = QrelsColumns(ids[0], ids[1], np.ascontiguousarray(grades, dtype=np.int64),
                           np.arange(1, n + 1, dtype=np.int64))
    if first_repeat(columns.query_ids, columns.chunk_ids) is not None:
        return None  # the record reader drops repeats and names contradictions
    return columns


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


def numbers(column: Any, dtype: Any) -> np.ndarray:
    """A numeric pyarrow column without nulls as one numpy array, read from its buffers:
    pyarrow's own ``to_numpy`` imports pandas when it is installed (a third of a second
    of every command's start)."""
    parts = [np.frombuffer(chunk.buffers()[1], dtype=dtype)[chunk.offset:chunk.offset + len(chunk)]
             for chunk in column.chunks if len(chunk)]
    if any(chunk.null_count for chunk in column.chunks):
        raise ValueError("a column with nulls")  # the plain reader's checks exclude them
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


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
    from ragjudge.metrics.trec import _gather, _unaligned_words

    n = len(lengths)
    if n == 0:
        return np.zeros(0, dtype="S8")
    buf = np.zeros(len(data) + 9, dtype=np.uint8)
    buf[:len(data)] = data
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return _gather(_unaligned_words(buf), starts, lengths.astype(np.int64))


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
