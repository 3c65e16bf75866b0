"""Read TREC qrels and run files into numpy arrays in bulk, without a Python object per line.

Formats (whitespace separated, one record a line):

- qrels: ``query_id iteration chunk_id grade`` (4 fields; the iteration is ignored, the grade
  is an integer, a negative grade means "unjudged"), or ``query_id chunk_id grade`` (3 fields,
  as Cranfield's ``cranqrel``), or a SMART relevance file ``query doc 0 0`` (CACM's
  ``qrels.text``, CISI's ``CISI.REL``: every listed pair relevant): see :func:`read_qrels_arrays`;
- run: ``query_id Q0 chunk_id rank score tag`` (6 fields; the rank column is ignored, as
  trec_eval ignores it: order comes from the score).

A source is a path, a file object, bytes, or inline text (a ``str`` containing a newline).
gzip-compressed input is recognised by its magic bytes and decompressed transparently.

How: the file is read into one uint8 array; whitespace masks locate the token boundaries of a
block of lines at a time; ids are gathered 8 bytes at a time through an unaligned uint64 view
(see ``_keys``); numbers are converted by numpy from fixed-width byte strings. A malformed line
is reported with its file, line and field (``ragjudge.errors.InputError``).

When pyarrow is installed (it is optional), a big input whose fields are separated by single
spaces is read by pyarrow's multi-threaded CSV reader instead (``_arrow``), with the same
result; a big file named by its path is mapped into memory for it rather than copied.
Anything else, including every malformed file, takes the numpy path above.
"""

from __future__ import annotations

import gzip
import io
import math
import os
import re
import stat
import zlib
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from ragjudge.errors import InputError, device_problem, encoding_problem
from ragjudge.metrics._keys import MASKS, padded_width, widen
from ragjudge.numeric import grade_problem, parse_integer, parse_number
from ragjudge.safetext import quote

QRELS_FIELDS = ("query_id", "iteration", "chunk_id", "grade")
QRELS3_FIELDS = ("query_id", "chunk_id", "grade")
RUN_FIELDS = ("query_id", "Q0", "chunk_id", "rank", "score", "tag")
QRELS_FORMS = ("auto", "smart")
"""How a qrels file's lines are read: ``auto`` decides by the file (see
:func:`read_qrels_arrays`), ``smart`` reads every line as SMART's ``query doc 0 0``."""


@dataclass(frozen=True)
class Layout:
    """Which fields of a line are read, and how: ``id_cols`` are gathered as ids (in that
    order), ``num_col`` converted to ``dtype`` (None: its tokens are kept as they are, an ``S``
    array), ``what`` names a number in messages, ``hint`` ends a message about a field count."""

    fields: tuple[str, ...]
    id_cols: tuple[int, ...]
    num_col: int
    dtype: DTypeLike | None
    what: str
    hint: str = "Fields are separated by spaces or tabs."


_QRELS_HINT = ("Every line of a qrels file has as many fields as its first: 4 (query_id "
               "iteration chunk_id grade) or 3 (query_id chunk_id grade).")
RUN_LAYOUT = Layout(RUN_FIELDS, (0, 2), 4, np.float64, "a number")
QRELS_LAYOUT = Layout(QRELS_FIELDS, (0, 2), 3, np.int64, "an integer grade", _QRELS_HINT)
QRELS3_LAYOUT = Layout(QRELS3_FIELDS, (0, 1), 2, np.int64, "an integer grade", _QRELS_HINT)
# the four fields kept, the grades as text: a file whose first line reads as SMART's
# "query doc 0 0" is decided once every line is read (see _qrels_columns)
_QRELS_WHOLE = Layout(QRELS_FIELDS, (0, 1, 2), 3, None, "an integer grade", _QRELS_HINT)

#: bytes of input tokenised at once: bounds the temporary masks, not the result
BLOCK_BYTES = 1 << 25
#: threads parsing the blocks of a big file (numpy releases the GIL in its loops)
THREADS = min(2, os.cpu_count() or 1)
#: inputs of at least this many bytes try pyarrow's CSV reader first, when it is installed
#: (see ``_arrow``: only files with one space between fields take that path)
ARROW_MIN_BYTES = 8 << 20

_UNDERSCORE = ord("_")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

#: the id columns, numbers and line numbers (None: one record a line) of a parsed input
_Parsed = tuple[list[np.ndarray], np.ndarray, np.ndarray | None]


@dataclass(frozen=True)
class QrelsArrays:
    """Columns of a qrels file; ``lines[i]`` is the 1-based line of row i. ``form`` is how its
    lines were read: ``trec`` (4 fields), ``three`` (3 fields) or ``smart`` (``query doc 0 0``,
    each pair relevant: grade 1)."""

    query_ids: np.ndarray
    chunk_ids: np.ndarray
    grades: np.ndarray
    lines: np.ndarray | None
    file: str | None
    form: str = "trec"

    def line(self, row: int) -> int:
        return int(self.lines[row]) if self.lines is not None else row + 1

    @property
    def negative(self) -> int:
        """The lines with a negative grade, which trec_eval reads as judged "not in the pool"
        (unjudged): the evaluation keeps them as unjudged, an import leaves them out."""
        return int(np.count_nonzero(self.grades < 0))


@dataclass(frozen=True)
class RunArrays:
    """Columns of a run file; ``lines[i]`` is the 1-based line of row i."""

    query_ids: np.ndarray
    chunk_ids: np.ndarray
    scores: np.ndarray
    lines: np.ndarray | None
    file: str | None

    def line(self, row: int) -> int:
        return int(self.lines[row]) if self.lines is not None else row + 1


def _source_name(source: Any) -> str | None:
    if isinstance(source, (str, os.PathLike)) and not (isinstance(source, str) and "\n" in source):
        return str(source)
    name = getattr(source, "name", None)
    return str(name) if isinstance(name, (str, os.PathLike)) else None


def read_bytes(source: Any) -> tuple[np.ndarray, int, str | None]:
    """The whole input as a uint8 array with 8 zero bytes of padding, its size, its name.

    The data always ends with a newline (one is added when the file lacks it).
    """
    name = _source_name(source)
    data: bytes | None = None
    if isinstance(source, str) and "\n" in source:
        data = source.encode("utf-8")
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    elif hasattr(source, "read"):
        raw = source.read()
        data = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
    else:
        path = Path(source)
        try:
            with open(path, "rb") as handle:
                mode = os.fstat(handle.fileno()).st_mode
                device = device_problem(mode)
                if device is not None:
                    raise InputError(device, file=name)
                if not stat.S_ISREG(mode):  # a pipe (<(zcat qrels.gz)): its size says nothing
                    data = handle.read()
                elif handle.read(2) == b"\x1f\x8b":
                    handle.seek(0)
                    data = _gunzip(handle, name)
                else:
                    size = os.fstat(handle.fileno()).st_size
                    buf = np.zeros(size + 9, dtype=np.uint8)
                    handle.seek(0)
                    got = handle.readinto(memoryview(buf)[:size])  # type: ignore[arg-type]  # an ndarray is a buffer; numpy's stubs omit it
                    _check_text(buf[: min(got, 4096)].tobytes(), name)
                    return _finish(buf, got, name)
        except FileNotFoundError:
            raise InputError("no such file.", file=name) from None
        except IsADirectoryError:
            raise InputError("is a directory, not a TREC file.", file=name) from None
        except PermissionError:
            raise InputError("cannot be read (permission denied).", file=name) from None
    if data[:2] == b"\x1f\x8b":
        data = _gunzip(io.BytesIO(data), name)
    _check_text(data[:4096], name)
    buf = np.zeros(len(data) + 9, dtype=np.uint8)
    buf[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return _finish(buf, len(data), name)


def _check_text(head: bytes, name: str | None) -> None:
    """Refuse UTF-16, UTF-32 and binary data by their first bytes: read as TREC text they
    would be lines of NUL-split fields, or none at all."""
    problem = encoding_problem(head, name)
    if problem is not None:
        raise InputError(problem, file=name, line=1)


def _gunzip(handle: Any, name: str | None) -> bytes:
    try:
        with gzip.GzipFile(fileobj=handle) as gz:
            return gz.read()
    except (OSError, EOFError, zlib.error) as error:
        raise InputError(f"is not a valid gzip file ({error}).", file=name) from None


def _finish(buf: np.ndarray, size: int, name: str | None) -> tuple[np.ndarray, int, str | None]:
    if size and buf[size - 1] != 10:
        buf[size] = 10
        size += 1
    return buf, size, name


def _unaligned_words(buf: np.ndarray) -> np.ndarray:
    """A uint64 view starting at every byte offset (numpy handles the unaligned loads)."""
    return np.ndarray(shape=(len(buf) - 7,), dtype="<u8", buffer=buf, strides=(1,))


def _blocks(buf: np.ndarray, size: int) -> Iterator[tuple[int, int]]:
    """(start, end) of blocks of whole lines of about BLOCK_BYTES each."""
    pos = 0
    while pos < size:
        end = min(pos + BLOCK_BYTES, size)
        if end < size:
            back = max(pos, end - (1 << 16))
            while True:
                nl = np.flatnonzero(buf[back:end] == 10)
                if len(nl):
                    end = back + int(nl[-1]) + 1
                    break
                if back == pos:  # a line longer than the block: take the line whole
                    nxt = np.flatnonzero(buf[end:size] == 10)
                    end = end + int(nxt[0]) + 1
                    break
                back = max(pos, back - (1 << 16))
        yield pos, end
        pos = end


def _split(block: np.ndarray, nfields: int, first_line: int, fields: tuple[str, ...],
           name: str | None, hint: str = RUN_LAYOUT.hint) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Token starts and ends (n_records, nfields) of one block, and the lines that hold them
    (None when line i of the block holds record i)."""
    # fast path: exactly one separator byte between fields and "\n" right after the last one,
    # so the separators are the token ends and each token starts one byte after a separator
    seps: np.ndarray = np.flatnonzero(block <= 32)
    n, rest = divmod(len(seps), nfields)
    if n and not rest:
        seps = seps.reshape(n, nfields)
        starts = np.empty_like(seps)
        starts[:, 1:] = seps[:, :-1] + 1
        starts[0, 0] = 0
        starts[1:, 0] = seps[:-1, -1] + 1
        if (np.all(block[seps[:, -1]] == 10) and np.all(seps > starts)
                and not np.any(block[seps[:, :-1]] == 10)):
            return starts, seps, None
    return _split_slow(block, nfields, first_line, fields, name, hint)


def _split_slow(block: np.ndarray, nfields: int, first_line: int, fields: tuple[str, ...],
                name: str | None, hint: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ws = block <= 32
    tok = ~ws
    start_mask = tok.copy()
    start_mask[1:] &= ws[:-1]
    end_mask = tok
    end_mask[:-1] &= ws[1:]
    starts = np.flatnonzero(start_mask)
    ends = np.flatnonzero(end_mask) + 1
    newlines = np.flatnonzero(block == 10)
    n = len(newlines)
    line_of = np.searchsorted(newlines, starts)
    counts = np.bincount(line_of, minlength=n)
    bad = np.flatnonzero((counts != 0) & (counts != nfields))
    if len(bad):
        i = int(bad[0])
        found = int(counts[i])
        what = ", ".join(fields)
        raise InputError(
            f"expected {nfields} fields ({what}), found {found}.",
            file=name,
            line=first_line + i + 1,
            hint=hint,
        )
    keep = np.flatnonzero(counts == nfields)
    return starts.reshape(-1, nfields), ends.reshape(-1, nfields), first_line + keep + 1


def _gather(view: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Tokens as a NUL-padded ``S`` array of width 8k, 8 bytes per gather."""
    n = len(starts)
    if n == 0:
        return np.zeros(0, dtype="S8")
    k = padded_width(int(lengths.max())) // 8
    out = np.empty((n, k), dtype="<u8")
    last = len(view) - 1
    for j in range(k):
        at = starts + 8 * j
        if j:
            np.minimum(at, last, out=at)
        rest = np.clip(lengths - 8 * j, 0, 8)
        np.bitwise_and(view[at], MASKS[rest], out=out[:, j])
    return out.view(f"S{8 * k}").ravel()


def _concat(parts: list[np.ndarray], default: DTypeLike) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype=default)
    if parts[0].dtype.kind == "S":
        width = max(p.dtype.itemsize for p in parts)
        parts = [widen(p, width) for p in parts]
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def _numbers(tokens: np.ndarray, dtype: DTypeLike, lines_of: Callable[[int], int], name: str | None,
             field: str, what: str) -> np.ndarray:
    """The tokens converted by numpy, in the number syntax of every ragjudge reader
    (``ragjudge.numeric``): numpy also reads Python's digit separator (``1_0`` as 10), so a
    token holding ``_`` takes the slow path, which names the first bad token and its line."""
    try:
        values = tokens.astype(dtype)
    except (ValueError, OverflowError):
        values = None
    if values is not None and len(tokens) and np.any(tokens.view(np.uint8) == _UNDERSCORE):
        values = None
    if values is not None and dtype is np.float64:
        finite = np.isfinite(values)
        if finite.all():
            return values
        bad = int(np.flatnonzero(~finite)[0])
        raise InputError(f"{quote(tokens[bad].decode('utf-8', 'replace'))} is not a finite number.",
                         file=name, line=lines_of(bad), field=field)
    if values is not None:
        return values
    strict = parse_number if dtype is np.float64 else parse_integer
    for i, token in enumerate(tokens.tolist()):
        text = token.decode("utf-8", "replace")
        value = strict(text)
        if value is None:
            raise InputError(f"{quote(text)} is not {what}.", file=name, line=lines_of(i),
                             field=field)
        if dtype is np.float64 and not math.isfinite(value):
            raise InputError(f"{quote(text)} is not a finite number.", file=name, line=lines_of(i),
                             field=field)
        if dtype is not np.float64 and not _INT64_MIN <= value <= _INT64_MAX:
            problem = grade_problem(int(value)) if field == "grade" else f"{quote(text)} is out of range."
            raise InputError(problem or "", file=name, line=lines_of(i), field=field)
    raise InputError(f"a {field} value cannot be read.", file=name, field=field)


def _parse_block(buf: np.ndarray, view: np.ndarray, lo: int, hi: int, layout: Layout,
                 name: str | None) -> tuple[list[np.ndarray], np.ndarray, np.ndarray | None, int] | InputError:
    """One block of whole lines -> (id columns, numbers, lines or None, line count), line
    numbers relative to the block; an InputError is returned, not raised, with its line
    relative too (the caller knows the block's first line only when all blocks are split)."""
    block = buf[lo:hi]
    fields = layout.fields
    try:
        s, e, lines = _split(block, len(fields), 0, fields, name, layout.hint)
        n_lines = len(s) if lines is None else int(np.count_nonzero(block == 10))
        s = s + lo
        e = e + lo
        ids = [_gather(view, s[:, col], e[:, col] - s[:, col]) for col in layout.id_cols]
        col = layout.num_col
        tokens = _gather(view, s[:, col], e[:, col] - s[:, col])
        nums = tokens if layout.dtype is None else _numbers(
            tokens, layout.dtype, partial(_line_of, lines, 0), name, fields[col], layout.what)
    except InputError as error:
        return error
    return ids, nums, lines, n_lines


def _mapped(source: Any) -> tuple[np.ndarray, int] | None:
    """The bytes of the file ``source`` names, mapped read-only into memory (no copy), and its
    size, when the pyarrow path may read it there: a file of at least ``ARROW_MIN_BYTES``, not
    gzip, ending with a newline. None otherwise, and when it cannot be opened or mapped
    (``read_bytes`` then reads it, or tells why it cannot)."""
    if not isinstance(source, (str, os.PathLike)) or (isinstance(source, str) and "\n" in source):
        return None
    import mmap

    try:
        if not stat.S_ISREG(os.stat(source).st_mode):
            return None  # a pipe is read once, by read_bytes; a device is refused there
        with open(source, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < max(ARROW_MIN_BYTES, 2):
                return None
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    data = np.frombuffer(mapped, dtype=np.uint8)  # keeps the mapping open while it lives
    if len(data) != size or data[size - 1] != 10 or bytes(data[:2]) == b"\x1f\x8b":
        return None
    return data, size


def _read(source: Any, layout: Layout | Callable[[np.ndarray, int], Layout]
          ) -> tuple[Layout, list[np.ndarray], np.ndarray, np.ndarray | None, str | None]:
    """(the layout read, id columns, numbers, lines or None, name) of ``source``; a callable
    ``layout`` chooses it from the input's bytes (``buf``, ``size``)."""
    mapped = _mapped(source)
    if mapped is not None:  # a big file: the pyarrow path reads it where it lies
        box = [mapped[0]]
        del mapped
        chosen = layout(box[0], len(box[0])) if callable(layout) else layout
        fast = _read_arrow(box, len(box[0]), _source_name(source), chosen)
        if fast is not None:
            return (chosen, *fast, _source_name(source))
        del box  # not plain: numpy parses it from a padded copy, as any other input
        tried = True
    else:
        tried = False
    buf, size, name = read_bytes(source)
    chosen = layout(buf, size) if callable(layout) else layout
    if size >= ARROW_MIN_BYTES and not tried:
        box = [buf]
        del buf  # the box holds the only reference: the fast path frees it once parsed
        fast = _read_arrow(box, size, name, chosen)
        if fast is not None:
            return (chosen, *fast, name)
        buf = box[0]
    view = _unaligned_words(buf)
    blocks = list(_blocks(buf, size))
    if len(blocks) > 2 and THREADS > 1:
        # numpy releases the GIL in the masks, nonzero, gathers and conversions: blocks of a
        # big file are parsed on a few threads
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            results = list(pool.map(lambda b: _parse_block(buf, view, b[0], b[1], chosen, name), blocks))  # noqa: F821 - bound again after the del
    else:
        results = [_parse_block(buf, view, lo, hi, chosen, name) for lo, hi in blocks]
    idparts: list[list[np.ndarray]] = [[] for _ in chosen.id_cols]
    nparts, lparts = [], []
    any_lines = False
    line0 = 0
    for result in results:
        if isinstance(result, InputError):
            raise InputError(result.message, file=result.file, field=result.field,
                             hint=result.hint,
                             line=None if result.line is None else result.line + line0)
        ids, nums, lines, n_lines = result
        for parts, column in zip(idparts, ids):
            parts.append(column)
        nparts.append(nums)
        lparts.append((line0, len(nums), lines))
        any_lines = any_lines or lines is not None
        line0 += n_lines
    del view, buf
    lines_all = None
    if any_lines:
        lines_all = np.concatenate([
            L + z if L is not None else np.arange(z + 1, z + m + 1) for z, m, L in lparts
        ]) if lparts else np.zeros(0, dtype=np.int64)
    numbers = _concat(nparts, "S8" if chosen.dtype is None else chosen.dtype)
    return chosen, [_concat(parts, "S8") for parts in idparts], numbers, lines_all, name


def _read_arrow(box: list, size: int, name: str | None, layout: Layout) -> _Parsed | None:
    """The columns from pyarrow's CSV reader when it is installed and the file is plain (one
    space between fields); None sends the input to the numpy tokenizer (see ``_arrow``)."""
    try:
        from ragjudge.metrics import _arrow
    except ImportError:  # pragma: no cover
        return None
    if not _arrow.available():
        return None
    return _arrow.read(box, size, name, layout)


def _line_of(lines: np.ndarray | None, first_line: int, i: int) -> int:
    return int(lines[i]) if lines is not None else first_line + i + 1


def read_qrels_arrays(source: Any, *, form: str = "auto") -> QrelsArrays:
    """Parse a qrels file into arrays. Its first line decides how every line is read, by its
    number of fields; a line with another number is an error (never a mix):

    - 4 fields: TREC's ``query_id iteration chunk_id grade``, the iteration ignored;
    - 3 fields: ``query_id chunk_id grade`` (Cranfield's ``cranqrel``, many course files);
    - SMART's relevance files have 4 fields too, ``query doc 0 0`` (CACM's ``qrels.text``),
      ``query doc 0 0.000000`` (CISI's ``CISI.REL``): every pair listed is relevant and the
      zeros mean nothing. Read as TREC, every line would judge one chunk ``0`` not relevant
      (trec_eval stops at the duplicate chunk). So a file whose every line has ``0`` as third
      field and a zero (``0``, ``0.0``...) as fourth is read as SMART when its second fields
      differ: each pair ``query doc`` has grade 1, and ids of digits lose their leading zeros
      as SMART's ``.I`` ids do (``01`` is query ``1``). When every second field is the same, the
      file reads both ways and is refused: say which (``form='smart'``, or 3 fields
      ``query chunk grade``). ``form='smart'`` reads every line as SMART, and refuses a line
      that is not ``query doc 0 0``.
    """
    if form not in QRELS_FORMS:
        raise ValueError(f"unknown qrels form {form!r}")
    chosen, ids, numbers, lines, name = _read(source, partial(_qrels_layout, form))
    if chosen is not _QRELS_WHOLE:
        return QrelsArrays(ids[0], ids[1], numbers, lines, name,
                           "trec" if chosen is QRELS_LAYOUT else "three")
    return _qrels_columns(ids, numbers, lines, name, form)


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


_SEPARATORS = bytes.maketrans(bytes(range(33)), b" " * 33)
_ZERO = re.compile(rb"0+(\.0*)?")


def _qrels_layout(form: str, buf: np.ndarray, size: int) -> Layout:
    fields = _first_fields(buf, size)
    if form == "smart" or (len(fields) == 4 and fields[2] == b"0" and _ZERO.fullmatch(fields[3])):
        return _QRELS_WHOLE  # decided when every line is read
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
                   name: str | None, form: str) -> QrelsArrays:
    """A four-field file whose first line reads as SMART: SMART when every line does (and
    its second fields differ, unless ``form`` says SMART), else TREC."""
    queries, second, third = ids
    shaped = (third == b"0") & _zeros(grade_text)
    if shaped.all():
        if form == "auto" and len(second) and (second == second[0]).all():
            raise InputError(
                "every line is 'query X 0 0' with the same X: as TREC qrels ('query iteration "
                "chunk grade') it judges one chunk '0' not relevant, as a SMART relevance file "
                "(CACM, CISI) it says document X is relevant. Say which: write it as "
                "'query chunk grade' (3 fields), or read it as SMART (--format smart).",
                file=name, line=_line_of(lines, 0, 0))
        return QrelsArrays(smart_ids(queries), smart_ids(second), np.ones(len(second), dtype=np.int64),
                           lines, name, "smart")
    if form == "smart":
        row = int(np.flatnonzero(~shaped)[0])
        raise InputError("a SMART relevance line is 'query doc 0 0' (as CACM's qrels.text and "
                         "CISI.REL); this one's last two fields are not zeros. A file with grades "
                         "is read as TREC qrels ('query 0 chunk grade' or 'query chunk grade').",
                         file=name, line=_line_of(lines, 0, row), field="grade")
    grades = _numbers(grade_text, np.int64, partial(_line_of, lines, 0), name, "grade",
                      "an integer grade")
    return QrelsArrays(queries, third, grades, lines, name, "trec")


def smart_ids(ids: np.ndarray) -> np.ndarray:
    """SMART's ids as ragjudge keeps them: an id of ASCII digits loses its leading zeros
    (``001`` and ``01`` are ``1``; ``0`` stays ``0``), any other id is kept as it is."""
    if len(ids) == 0:
        return ids
    values = [value.lstrip(b"0") or b"0" if value.isdigit() else value for value in ids.tolist()]
    return np.array(values, dtype=ids.dtype)


def read_run_arrays(source: Any) -> RunArrays:
    """Parse a TREC run file (``query_id Q0 chunk_id rank score tag``) into arrays."""
    _, ids, scores, lines, name = _read(source, RUN_LAYOUT)
    return RunArrays(ids[0], ids[1], scores, lines, name)
