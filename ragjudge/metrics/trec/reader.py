"""The TREC reader: a qrels or run file as numpy arrays, read by the fastest path that can
prove it reads the file as the line path does.

Three paths read the same language (:mod:`ragjudge.metrics.trec.lines` defines it):

1. **pyarrow** (:mod:`~ragjudge.metrics.trec.arrow`), when pyarrow is installed (it is
   optional) and the input has at least :data:`ARROW_MIN_BYTES`: a file whose every line is
   its fields joined by single spaces is read by pyarrow's CSV reader on both cores, a big
   file named by its path where it lies (mapped into memory, not copied);
2. **numpy** (:mod:`~ragjudge.metrics.trec.tokens`): any other input whose text is plain
   (:func:`~ragjudge.metrics.trec.source.plain_text`: no byte order mark, control byte,
   Unicode space or invalid UTF-8) is tokenised in bulk;
3. **lines** (:mod:`~ragjudge.metrics.trec.lines`): everything else, and every input with a
   problem. The fast paths word nothing; when they cannot prove a file is read the same way
   (a line with another number of fields, a number Python reads otherwise, a rank that is not
   plain digits, a SMART file whose form is in doubt), the line path reads it and names the
   file, the line and the field of the first problem.

So ``Qrels.from_trec``, ``eval --qrels/--run``, ``import qrels`` and ``import run`` accept and
refuse the same files with the same words, whichever path reads them.

A source is a path, a file object, bytes, or inline text (a ``str`` containing a newline).
gzip-compressed input is recognised by its magic bytes and decompressed transparently.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ragjudge.metrics._keys import as_ids
from ragjudge.metrics.trec import tokens
from ragjudge.metrics.trec.lines import QRELS_FORMS, QrelsRows, run_rows
from ragjudge.metrics.trec.source import ReadByLines, by_lines, plain_start, plain_text, read_input
from ragjudge.metrics.trec.tokens import QRELS3_LAYOUT, QRELS_LAYOUT, QRELS_WHOLE, RUN_LAYOUT, Layout

#: inputs of at least this many bytes try pyarrow's CSV reader first, when it is installed
#: (only files with one space between fields take that path)
ARROW_MIN_BYTES = 8 << 20
#: the fast paths the reader may take, in order (the tests take them away to compare)
FAST_PATHS: tuple[str, ...] = ("arrow", "numpy")


@dataclass(frozen=True)
class QrelsArrays:
    """Columns of a qrels file; ``lines[i]`` is the 1-based line of row i (None: line i + 1).
    ``form`` is how its lines were read: ``trec`` (4 fields), ``three`` (3 fields) or
    ``smart`` (``query doc 0 0``, each pair relevant: grade 1)."""

    query_ids: np.ndarray
    chunk_ids: np.ndarray
    grades: np.ndarray
    lines: np.ndarray | None
    file: str | None
    form: str = "trec"

    def __len__(self) -> int:
        return len(self.grades)

    def line(self, row: int) -> int:
        return int(self.lines[row]) if self.lines is not None else row + 1

    @property
    def negative(self) -> int:
        """The lines with a negative grade, which trec_eval reads as judged "not in the pool"
        (unjudged): the evaluation keeps them as unjudged, an import leaves them out."""
        return int(np.count_nonzero(self.grades < 0))


@dataclass(frozen=True)
class RunArrays:
    """Columns of a run file; ``lines[i]`` is the 1-based line of row i (None: line i + 1)."""

    query_ids: np.ndarray
    chunk_ids: np.ndarray
    scores: np.ndarray
    lines: np.ndarray | None
    file: str | None

    def __len__(self) -> int:
        return len(self.scores)

    def line(self, row: int) -> int:
        return int(self.lines[row]) if self.lines is not None else row + 1


def read_qrels_arrays(source: Any, *, form: str = "auto", name: str | None = None) -> QrelsArrays:
    """A qrels file as arrays (its forms: :class:`~ragjudge.metrics.trec.lines.QrelsRows`;
    ``form='smart'`` reads every line as SMART's ``query doc 0 0``). ``name`` names the file
    in messages and in the arrays (a path's own name by default)."""
    if form not in QRELS_FORMS:
        raise ValueError(f"unknown qrels form {form!r}")
    fast = _fast(source, name, partial(_qrels_layout, form))
    if isinstance(fast, ReadByLines):
        return _qrels_by_lines(fast, form)
    layout, (ids, numbers, lines), read = fast
    if layout is not QRELS_WHOLE:
        return QrelsArrays(ids[0], ids[1], numbers, trivial(lines), read.name,
                           "trec" if layout is QRELS_LAYOUT else "three")
    decided = _qrels_columns(ids, numbers, trivial(lines), read.name, form)
    return decided if decided is not None else _qrels_by_lines(read, form)


def read_run_arrays(source: Any, *, name: str | None = None) -> RunArrays:
    """A TREC run file (``query_id Q0 chunk_id rank score tag``) as arrays, in file order
    (order by score is the :class:`~ragjudge.metrics.data.Run`'s business). ``name`` names
    the file in messages and in the arrays (a path's own name by default)."""
    fast = _fast(source, name, lambda buf, size: RUN_LAYOUT)
    if isinstance(fast, ReadByLines):
        return _run_by_lines(fast)
    _, (ids, scores, lines), read = fast
    return RunArrays(ids[0], ids[1], scores, trivial(lines), read.name)


def trivial(lines: np.ndarray | None) -> np.ndarray | None:
    """None for line numbers 1..n (row i on line i + 1), else the line numbers: every path
    gives the same."""
    if lines is None or len(lines) == 0 or int(lines[-1]) == len(lines):
        return None  # increasing from 1, and n of them ending at n: 1..n
    return lines


def _fast(source: Any, name: str | None, choose: Callable[[np.ndarray, int], Layout]
          ) -> tuple[Layout, tokens.Parsed, ReadByLines] | ReadByLines:
    """(the layout read, the columns, the input) from a fast path, or the input for the line
    path."""
    if not FAST_PATHS:
        return by_lines(source, name)
    got = read_input(source, name=name, map_from=ARROW_MIN_BYTES if "arrow" in FAST_PATHS else None)
    if isinstance(got, ReadByLines):
        return got
    size, read = got.size, got.lines
    if not plain_start(got.buf, size):
        return read
    layout = choose(got.buf, size)
    arrow = _arrow_module() if "arrow" in FAST_PATHS and size >= ARROW_MIN_BYTES else None
    if arrow is not None:
        box = [got.buf]
        got.buf = np.zeros(0, dtype=np.uint8)  # the box holds the only reference: freed once parsed
        parsed = arrow.read(box, size, layout)
        if parsed is not None:
            return layout, parsed, read
        got.buf = box[0]
    if "numpy" not in FAST_PATHS:
        return read
    buf = got.buf if got.padded else _padded(got.buf, size)
    del got
    if not plain_text(buf, size):
        return read
    parsed = tokens.parse(buf, size, layout)
    return read if parsed is None else (layout, parsed, read)


def _arrow_module() -> Any:
    """The pyarrow path when pyarrow is installed (imported only for an input big enough)."""
    try:
        from ragjudge.metrics.trec import arrow
    except ImportError:  # pragma: no cover
        return None
    return arrow if arrow.available() else None


def _padded(data: np.ndarray, size: int) -> np.ndarray:
    buf = np.zeros(size + 9, dtype=np.uint8)
    buf[:size] = data[:size]
    return buf


def _qrels_by_lines(read: ReadByLines, form: str) -> QrelsArrays:
    rows = QrelsRows(read.source, name=read.shown, form=form)
    numbers, queries, chunks, grades = [], [], [], []
    for line, query_id, chunk_id, grade in rows:
        numbers.append(line)
        queries.append(query_id)
        chunks.append(chunk_id)
        grades.append(grade)
    return QrelsArrays(as_ids(queries), as_ids(chunks), np.array(grades, dtype=np.int64),
                       trivial(np.array(numbers, dtype=np.int64)), read.name, rows.form)


def _run_by_lines(read: ReadByLines) -> RunArrays:
    numbers, queries, chunks, scores = [], [], [], []
    for line, query_id, chunk_id, _, score in run_rows(read.source, name=read.shown):
        numbers.append(line)
        queries.append(query_id)
        chunks.append(chunk_id)
        scores.append(score)
    return RunArrays(as_ids(queries), as_ids(chunks), np.array(scores, dtype=np.float64),
                     trivial(np.array(numbers, dtype=np.int64)), read.name)


# -- the forms of a qrels file, on the fast paths ------------------------------------------

_SEPARATORS = bytes.maketrans(bytes(range(33)), b" " * 33)
_ZERO = re.compile(rb"0+(\.0*)?")


def _first_fields(buf: np.ndarray, size: int) -> list[bytes]:
    """The fields of the first line holding any (fields split at bytes <= 32, as the
    tokenizer splits them)."""
    at = 0
    while at < size:
        end = _next_newline(buf, at, size)
        fields = bytes(buf[at:end]).translate(_SEPARATORS).split()
        if fields:
            return fields
        at = end + 1
    return []


def _next_newline(buf: np.ndarray, at: int, size: int) -> int:
    step = 1 << 16
    for lo in range(at, size, step):
        found = np.flatnonzero(buf[lo:min(size, lo + step)] == 10)
        if len(found):
            return lo + int(found[0])
    return size


def _qrels_layout(form: str, buf: np.ndarray, size: int) -> Layout:
    fields = _first_fields(buf, size)
    if form == "smart" or (len(fields) == 4 and fields[2] == b"0" and _ZERO.fullmatch(fields[3])):
        return QRELS_WHOLE  # decided when every line is read
    return QRELS3_LAYOUT if len(fields) == 3 else QRELS_LAYOUT


def _zeros(tokens: np.ndarray) -> np.ndarray:
    """Which ``S`` tokens are a zero as SMART writes one: ``0``, ``00``, ``0.``, ``0.000000``."""
    if len(tokens) == 0:
        return np.zeros(0, dtype=bool)
    table = tokens.view(np.uint8).reshape(len(tokens), tokens.dtype.itemsize)
    dots = np.count_nonzero(table == ord("."), axis=1)
    allowed = np.all((table == ord("0")) | (table == ord(".")) | (table == 0), axis=1)
    return (table[:, 0] == ord("0")) & allowed & (dots <= 1)


def _qrels_columns(ids: list[np.ndarray], grade_text: np.ndarray, lines: np.ndarray | None,
                   name: str | None, form: str) -> QrelsArrays | None:
    """A four-field file whose first line reads as SMART: SMART when every line does (and
    its second fields differ, unless ``form`` says SMART), else TREC; None when the line path
    must say what is wrong with it."""
    queries, second, third = ids
    shaped = (third == b"0") & _zeros(grade_text)
    if shaped.all():
        if form == "auto" and len(second) and (second == second[0]).all():
            return None  # ambiguous: refused by the line path
        return QrelsArrays(smart_ids(queries), smart_ids(second),
                           np.ones(len(second), dtype=np.int64), lines, name, "smart")
    if form == "smart":
        return None
    grades = tokens.numbers(grade_text, np.int64)
    return None if grades is None else QrelsArrays(queries, third, grades, lines, name, "trec")


def smart_ids(ids: np.ndarray) -> np.ndarray:
    """SMART's ids as ragjudge keeps them: an id of ASCII digits loses its leading zeros
    (``001`` and ``01`` are ``1``; ``0`` stays ``0``), any other id is kept as it is."""
    if len(ids) == 0:
        return ids
    values = [value.lstrip(b"0") or b"0" if value.isdigit() else value for value in ids.tolist()]
    return as_ids(values)
