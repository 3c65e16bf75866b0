"""The numpy path of the TREC reader: a whole input tokenised in bulk, without a Python object
per line.

The input is one uint8 array (:mod:`ragjudge.metrics.trec.source`); whitespace masks locate the
token boundaries of a block of lines at a time; ids are gathered 8 bytes at a time through an
unaligned uint64 view (:func:`gather`); numbers written as plain decimals are read a column
of bytes at a time (:func:`plain_decimals`), any other by numpy from fixed-width byte strings.
Blocks of a big input are parsed on a few threads (numpy releases the GIL in its
loops).

This path words no problem: a line with another number of fields, a number numpy cannot read
or reads otherwise than :mod:`ragjudge.numeric` (``1_0``), a non-finite score, a grade out of
bounds, a rank column that is not plain digits: :func:`parse` returns None and the reader
hands the input to the line path, which names the file, the line and the field.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ragjudge.metrics._keys import gather, packed_ids, unaligned_words, widen  # noqa: F401 - packed_ids re-exported
from ragjudge.numeric import MAX_GRADE

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

QRELS_FIELDS = ("query_id", "iteration", "chunk_id", "grade")
QRELS3_FIELDS = ("query_id", "chunk_id", "grade")
RUN_FIELDS = ("query_id", "Q0", "chunk_id", "rank", "score", "tag")


@dataclass(frozen=True)
class Layout:
    """Which fields of a line are read, and how: ``id_cols`` are gathered as ids (in that
    order), ``num_col`` converted to ``dtype`` (None: its tokens are kept as they are, an ``S``
    array); ``rank_col`` (runs) must be plain digits, as the line path reads a rank."""

    fields: tuple[str, ...]
    id_cols: tuple[int, ...]
    num_col: int
    dtype: DTypeLike | None
    rank_col: int | None = None


RUN_LAYOUT = Layout(RUN_FIELDS, (0, 2), 4, np.float64, rank_col=3)
QRELS_LAYOUT = Layout(QRELS_FIELDS, (0, 2), 3, np.int64)
QRELS3_LAYOUT = Layout(QRELS3_FIELDS, (0, 1), 2, np.int64)
#: the four fields kept, the grades as text: a file whose first line reads as SMART's
#: "query doc 0 0" is decided once every line is read (see ``reader``)
QRELS_WHOLE = Layout(QRELS_FIELDS, (0, 1, 2), 3, None)

#: bytes of input tokenised at once: bounds the temporary masks, not the result
BLOCK_BYTES = 1 << 25
#: threads parsing the blocks of a big file (numpy releases the GIL in its loops)
THREADS = min(2, os.cpu_count() or 1)

_UNDERSCORE = ord("_")
_ZERO, _NINE = ord("0"), ord("9")
#: the longest rank the fast paths read (the line path reads any up to ``MAX_RANK``)
RANK_DIGITS = 9

#: the id columns, numbers and line numbers (None: one record a line) of a parsed input
Parsed = tuple[list[np.ndarray], np.ndarray, np.ndarray | None]


def blocks(buf: np.ndarray, size: int) -> Iterator[tuple[int, int]]:
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


def split(block: np.ndarray, nfields: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """Token starts and ends (n_records, nfields) of one block, and the lines that hold them
    (None when line i of the block holds record i); None when a line holds another number of
    fields."""
    # fast path: exactly one separator byte between fields and "\n" right after the last one,
    # so the separators are the token ends and each token starts one byte after a separator
    seps: np.ndarray = np.flatnonzero(block <= 32)
    n, rest = divmod(len(seps), nfields)
    if n and not rest:
        seps = seps.reshape(n, nfields)
        starts = np.empty_like(seps)
        np.add(seps[:, :-1], 1, out=starts[:, 1:])
        starts[0, 0] = 0
        np.add(seps[:-1, -1], 1, out=starts[1:, 0])
        # each line's last separator a newline, and no other newline: every separator is
        # one, so the block has n newlines exactly when no other one is
        if (np.all(block[seps[:, -1]] == 10) and np.all(seps > starts)
                and np.count_nonzero(block == 10) == n):
            return starts, seps, None
    return _split_slow(block, nfields)


def _split_slow(block: np.ndarray, nfields: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    ws = block <= 32
    tok = ~ws
    start_mask = tok.copy()
    start_mask[1:] &= ws[:-1]
    end_mask = tok
    end_mask[:-1] &= ws[1:]
    starts = np.flatnonzero(start_mask)
    ends = np.flatnonzero(end_mask) + 1
    newlines = np.flatnonzero(block == 10)
    line_of = np.searchsorted(newlines, starts)
    counts = np.bincount(line_of, minlength=len(newlines))
    if np.any((counts != 0) & (counts != nfields)):
        return None
    keep = np.flatnonzero(counts == nfields)
    return starts.reshape(-1, nfields), ends.reshape(-1, nfields), keep + 1


def concat(parts: list[np.ndarray], default: DTypeLike) -> np.ndarray:
    """Blocks' columns as one (``S`` columns widened to the widest)."""
    if not parts:
        return np.zeros(0, dtype=default)
    if parts[0].dtype.kind == "S":
        width = max(p.dtype.itemsize for p in parts)
        parts = [widen(p, width) for p in parts]
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def numbers(tokens: np.ndarray, dtype: DTypeLike) -> np.ndarray | None:
    """The tokens converted when every one is a number of :mod:`ragjudge.numeric`'s syntax
    that the line path reads to the same value (a finite score; an integer grade within
    ``MAX_GRADE``), else None. Plain decimals (:func:`plain_decimals`) are converted here; the
    other tokens, if any, by numpy, which also reads Python's digit separator (``1_0`` as 10):
    a token holding ``_`` is left to the line path."""
    values, plain = plain_decimals(tokens, points=dtype is np.float64)
    if not plain.all():
        rest = np.flatnonzero(~plain)
        converted = _converted(tokens[rest], dtype)
        if converted is None:
            return None
        values[rest] = converted
    if dtype is not np.float64 and len(values) and (
            int(values.min()) < -MAX_GRADE or int(values.max()) > MAX_GRADE):
        return None
    return values


def _converted(tokens: np.ndarray, dtype: DTypeLike) -> np.ndarray | None:
    """The tokens converted by numpy (a score finite), or None where the line path must read
    them."""
    try:
        values = tokens.astype(dtype)
    except (ValueError, OverflowError):
        return None
    if len(tokens) and np.any(tokens.view(np.uint8) == _UNDERSCORE):
        return None
    if dtype is np.float64 and not np.isfinite(values).all():
        return None
    return values


#: the most digits a plain decimal has: the integer its digits spell is exact in a float64
#: (10**15 < 2**53)
PLAIN_DIGITS = 15
#: its longest spelling: a sign, the digits and a point
PLAIN_BYTES = PLAIN_DIGITS + 2
#: 10**k for k digits after the point, each exact in a float64 (every 10**k up to 10**22 is)
_POWERS = 10.0 ** np.arange(PLAIN_DIGITS + 1)
_POINT, _MINUS = ord("."), ord("-")
#: the bytes a plain decimal cannot start with (a digit, a point or a sign can)
_NOT_FIRST = np.ones(256, dtype=bool)
_NOT_FIRST[[*range(_ZERO, _NINE + 1), _POINT, _MINUS, ord("+")]] = False


def plain_decimals(tokens: np.ndarray, *, points: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(values, plain) of NUL-padded ``S`` tokens: ``plain[i]`` when token i is a plain
    decimal, an optional sign and 1 to :data:`PLAIN_DIGITS` ASCII digits with at most one
    point among them (none unless ``points``), and then ``values[i]`` is its value (float64,
    or int64 without points); the values of the other tokens mean nothing.

    Every plain decimal is a number of :mod:`ragjudge.numeric`'s syntax. It is read one
    column of bytes at a time, without a Python object per token: its digits spell an integer
    N < 10**15 < 2**53 and its k digits after the point give 10**k, both exact in a float64;
    IEEE 754 division is correctly rounded, so N / 10**k is the float64 nearest the decimal,
    the value Python's ``float()`` and numpy give it (the fast path of W. D. Clinger, "How to
    read floating point numbers accurately", PLDI 1990)."""
    n = len(tokens)
    table = tokens.view(np.uint8).reshape(n, tokens.dtype.itemsize)
    width = tokens.dtype.itemsize
    while width and not table[:, width - 1].any():
        width -= 1
    whole = np.zeros(n, dtype=np.int64)  # the digits, as one integer
    digits = np.zeros(n, dtype=np.uint8)
    places = np.zeros(n, dtype=np.uint8)  # digits after the point
    after = np.zeros(n, dtype=bool)  # past the point
    odd = _NOT_FIRST[table[:, 0]] if width else np.zeros(n, dtype=bool)
    if width > PLAIN_BYTES:  # tokens are their bytes then NULs: these are too long
        odd |= table[:, PLAIN_BYTES] != 0
    for j in range(min(width, PLAIN_BYTES)):
        column = table[:, j]
        digit = column - np.uint8(_ZERO)  # wraps around below "0": a digit is below 10
        is_digit = digit < 10
        digit *= is_digit
        whole *= is_digit * np.uint8(9) + np.uint8(1)  # x 10 at a digit, x 1 elsewhere
        whole += digit
        digits += is_digit
        places += after & is_digit
        point = column == _POINT
        if j:  # after the first byte: digits, a point, and the NULs after the token
            odd |= ~(is_digit | point | (column == 0))
        odd |= (point & after) if points else point
        after |= point
    plain = ~odd & (digits >= 1) & (digits <= PLAIN_DIGITS)
    negative = table[:, 0] == _MINUS if width else np.zeros(n, dtype=bool)
    if not points:
        return np.where(negative, -whole, whole), plain
    np.minimum(places, PLAIN_DIGITS, out=places)  # more only where the token is not plain
    values = whole / _POWERS[places]
    np.negative(values, out=values, where=negative)
    return values, plain


def plain_ranks(tokens: np.ndarray) -> bool:
    """Whether every token is 1 to ``RANK_DIGITS`` ASCII digits: a rank the line path reads
    (``0`` as none, the others as they are) and refuses in no case."""
    if len(tokens) == 0:
        return True
    table = tokens.view(np.uint8).reshape(len(tokens), tokens.dtype.itemsize)
    head = table[:, :RANK_DIGITS]
    digit = (head >= _ZERO) & (head <= _NINE)
    if not digit[:, 0].all() or not (digit | (head == 0)).all():
        return False
    return not table[:, RANK_DIGITS:].any()


def _parse_block(buf: np.ndarray, view: np.ndarray, lo: int, hi: int,
                 layout: Layout) -> tuple[list[np.ndarray], np.ndarray, np.ndarray | None, int] | None:
    """One block of whole lines -> (id columns, numbers, lines or None, line count), line
    numbers relative to the block; None when the block is not read as the line path reads it."""
    block = buf[lo:hi]
    found = split(block, len(layout.fields))
    if found is None:
        return None
    s, e, lines = found
    del found  # the arrays below replace s and e: their memory is reused at once
    n_lines = len(s) if lines is None else int(np.count_nonzero(block == 10))
    s += lo
    e += lo
    if layout.rank_col is not None:
        col = layout.rank_col
        if not plain_ranks(gather(view, s[:, col], e[:, col] - s[:, col])):
            return None
    ids = [gather(view, s[:, col], e[:, col] - s[:, col]) for col in layout.id_cols]
    col = layout.num_col
    tokens = gather(view, s[:, col], e[:, col] - s[:, col])
    nums = tokens if layout.dtype is None else numbers(tokens, layout.dtype)
    if nums is None:
        return None
    return ids, nums, lines, n_lines


def parse(buf: np.ndarray, size: int, layout: Layout) -> Parsed | None:
    """(id columns, numbers, lines or None) of the input in ``buf`` (``size`` bytes ending
    with a newline, 8 zero bytes after them), or None: the line path reads it."""
    view = unaligned_words(buf)
    spans = list(blocks(buf, size))
    if len(spans) > 2 and THREADS > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            results = list(pool.map(lambda b: _parse_block(buf, view, b[0], b[1], layout), spans))
    else:
        results = [_parse_block(buf, view, lo, hi, layout) for lo, hi in spans]
    idparts: list[list[np.ndarray]] = [[] for _ in layout.id_cols]
    nparts, lparts = [], []
    any_lines = False
    line0 = 0
    for result in results:
        if result is None:
            return None
        ids, nums, lines, n_lines = result
        for parts, column in zip(idparts, ids):
            parts.append(column)
        nparts.append(nums)
        lparts.append((line0, len(nums), lines))
        any_lines = any_lines or lines is not None
        line0 += n_lines
    lines_all = None
    if any_lines:
        lines_all = np.concatenate([
            L + z if L is not None else np.arange(z + 1, z + m + 1) for z, m, L in lparts
        ]) if lparts else np.zeros(0, dtype=np.int64)
    numbers_all = concat(nparts, "S8" if layout.dtype is None else layout.dtype)
    return [concat(parts, "S8") for parts in idparts], numbers_all, lines_all
