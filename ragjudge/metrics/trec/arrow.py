"""The pyarrow path of the TREC reader: pyarrow's CSV reader on both cores.

Used by the reader (:mod:`ragjudge.metrics.trec.reader`) when pyarrow is installed and the
input is big (``reader.ARROW_MIN_BYTES``): ragjudge's metrics need only numpy, so pyarrow is
imported here, lazily, and its absence is no error.

The CSV reader splits on single spaces, while the line path splits a line where Python's
``str.split`` does. The two agree exactly when every line is its fields joined by one space and
ended by ``\\n`` or ``\\r\\n``: no other control byte, no empty or blank line, no leading,
trailing or repeated whitespace, no byte order mark (which the reader drops), and text above
127 that is valid UTF-8 without a C1 control or a Unicode space. :func:`read` proves that from
byte counts over the raw input plus the reader's own check of the field count (and, when the
input holds bytes above 127, :func:`ragjudge.metrics.trec.source.plain_unicode`), and returns
None otherwise (or when the reader raises, a number is missing, malformed or not finite, a
grade out of bounds, a rank not plain digits), so that the numpy path or the line path reads
the file; this path words no problem.

The input is read where it lies: the reader maps a big file into memory (or hands over the
buffer it read), the CSV reader's own threads parse it a block at a time while another thread
counts its whitespace, so that a 383 MB run is read on both cores without a copy.

Ids are read as binary columns and turned into the same NUL-padded fixed-width ``S`` arrays
as the numpy path's, from the columns' offsets and data buffers, in numpy. Ranks and grades
are read as bytes and checked or converted by the numpy path's own functions, so that both
paths accept exactly the same tokens; scores are parsed as float64 by the CSV reader (whose
correctly rounded parser gives the same value as numpy and Python for every token it accepts).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ragjudge.metrics._keys import MASKS, padded_width
from ragjudge.metrics.trec.source import plain_unicode
from ragjudge.metrics.trec.tokens import RANK_DIGITS, Layout, Parsed, numbers, unaligned_words

#: bytes per block of the CSV reader (its unit of parallel work)
READ_BLOCK = 16 << 20
#: bytes per chunk of the whitespace counts
_SCAN = 1 << 20
_THREADS = min(2, os.cpu_count() or 1)


def available() -> bool:
    try:
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


def _scan(buf: np.ndarray, lo: int, hi: int, size: int,
          scratch: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[int, int, int, bool]:
    """Counts over bytes lo:hi: whitespace, CRs, and whitespace bytes followed by whitespace
    (the byte after hi is looked at, the padding after ``size`` is not), and whether a byte
    is above 126. ``scratch``: two bool arrays of at least hi - lo + 1 entries for the masks
    (reused: fresh memory for each chunk would cost a page fault per 4 kB)."""
    b = buf[lo:min(hi + 1, size)]
    m = hi - lo
    ws, other = scratch if scratch is not None else (np.empty(len(b), bool), np.empty(len(b), bool))
    ws = ws[:len(b)]
    np.less_equal(b, 32, out=ws)
    n_ws = int(np.count_nonzero(ws[:m]))
    pairs = int(np.count_nonzero(np.logical_and(ws[:-1], ws[1:], out=other[:len(b) - 1])))
    cr = int(np.count_nonzero(np.equal(b[:m], 13, out=other[:m])))
    return n_ws, cr, pairs, bool(m) and int(b[:m].max()) >= 127


def _whitespace_counts(buf: np.ndarray, lo: int, hi: int, size: int) -> tuple[int, int, int, bool]:
    """``_scan`` over bytes lo:hi, in cache-sized chunks."""
    scratch = (np.empty(_SCAN + 1, dtype=bool), np.empty(_SCAN + 1, dtype=bool))
    parts = [_scan(buf, a, min(a + _SCAN, hi), size, scratch) for a in range(lo, hi, _SCAN)]
    return (sum(p[0] for p in parts), sum(p[1] for p in parts), sum(p[2] for p in parts),
            any(p[3] for p in parts))


def _counts(buf: np.ndarray, size: int) -> tuple[int, int, int, bool]:
    """``_whitespace_counts`` of the input, and whether its bytes above 126 are plain text
    (:func:`~ragjudge.metrics.trec.source.plain_unicode`)."""
    n_ws, cr, pairs, high = _whitespace_counts(buf, 0, size, size)
    return n_ws, cr, pairs, not high or plain_unicode(buf[:size])


def _count_newlines(buf: np.ndarray, size: int) -> int:
    mask = np.empty(_SCAN, dtype=bool)
    return sum(int(np.count_nonzero(np.equal(buf[a:min(a + _SCAN, size)], 10,
                                             out=mask[:min(_SCAN, size - a)])))
               for a in range(0, size, _SCAN))


def _pool_map(fn: Callable[[Any], Any], items: list) -> list:
    if len(items) > 1 and _THREADS > 1:
        with ThreadPoolExecutor(max_workers=_THREADS) as pool:
            return list(pool.map(fn, items))
    return [fn(item) for item in items]


def _lengths(chunk: Any) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (from the chunk's own buffer, no copy) and value lengths of a binary chunk."""
    n = len(chunk)
    bufs = chunk.buffers()
    wide = chunk.type.id == _large_binary_id()
    offsets = np.frombuffer(bufs[1], dtype=np.int64 if wide else np.int32)
    offsets = offsets[chunk.offset: chunk.offset + n + 1]
    return offsets, np.diff(offsets)


def _large_binary_id() -> int:
    import pyarrow as pa

    return pa.large_binary().id


#: values gathered at once: the temporaries of a block stay in the processor's cache and are
#: reused from block to block (fresh memory for each would cost a page fault per 4 kB)
_GATHER_ROWS = 1 << 15


def _gather_chunk(out: np.ndarray, chunk: Any, offsets: np.ndarray, lengths: np.ndarray) -> None:
    """Fill the (n, k) uint64 rows ``out`` with the chunk's NUL-padded values, 8 bytes per
    gather, a block of values at a time (from a copy of the block's bytes with 8 zero bytes
    after it, read as unaligned words)."""
    source = np.frombuffer(chunk.buffers()[2], dtype=np.uint8)
    n = len(lengths)
    rows = min(n, _GATHER_ROWS)
    widest = max(int(offsets[min(lo + rows, n)]) - int(offsets[lo]) for lo in range(0, n, rows))
    data = np.zeros(widest + 9, dtype=np.uint8)
    at = np.empty(rows, dtype=np.int64)
    rest = np.empty(rows, dtype=np.int64)
    mask = np.empty(rows, dtype=np.uint64)
    for lo in range(0, n, rows):
        hi = min(lo + rows, n)
        m = hi - lo
        base, end = int(offsets[lo]), int(offsets[hi])
        data[: end - base] = source[base:end]
        data[end - base: end - base + 9] = 0
        words = unaligned_words(data[: end - base + 9])
        last = len(words) - 1
        np.subtract(offsets[lo:hi], base, out=at[:m])
        for j in range(out.shape[1]):
            if j:
                at[:m] += 8
                np.minimum(at[:m], last, out=at[:m])
            if out.shape[1] == 1:  # every value within one word: its length is its mask's
                np.take(MASKS, lengths[lo:hi], out=mask[:m])
            else:
                np.subtract(lengths[lo:hi], 8 * j, out=rest[:m])
                np.clip(rest[:m], 0, 8, out=rest[:m])
                np.take(MASKS, rest[:m], out=mask[:m])
            np.bitwise_and(words[at[:m]], mask[:m], out=out[lo:hi, j])  # (take would copy words)


def _plan_ids(columns: list) -> list[list[tuple[Any, tuple[np.ndarray, np.ndarray]]]] | None:
    """Measure each binary column (chunked): None if a value is empty, else what
    ``_gather_ids`` needs (the measuring runs on threads)."""
    chunks = [[chunk for chunk in column.chunks if len(chunk)] for column in columns]
    flat = [chunk for per_column in chunks for chunk in per_column]
    measured = _pool_map(_lengths, flat)
    if any(int(lengths.min()) <= 0 for _, lengths in measured):
        return None
    plan, at = [], 0
    for per_column in chunks:
        mine = measured[at: at + len(per_column)]
        at += len(per_column)
        plan.append(list(zip(per_column, mine)))
    return plan


def _gather_ids(plan: list[list[tuple[Any, tuple[np.ndarray, np.ndarray]]]]) -> list[np.ndarray]:
    """Each planned column as one ``S`` array of width 8k, its chunks gathered on threads
    straight into the result."""
    outs, jobs = [], []
    for parts in plan:
        total = sum(len(lengths) for _, (_, lengths) in parts)
        longest = max((int(lengths.max()) for _, (_, lengths) in parts), default=0)
        out = np.empty((total, padded_width(longest) // 8), dtype="<u8")
        row = 0
        for chunk, (offsets, lengths) in parts:
            jobs.append((out[row: row + len(lengths)], chunk, offsets, lengths))
            row += len(lengths)
        outs.append(out)
    _pool_map(lambda job: _gather_chunk(*job), jobs)
    return [out.view(f"S{out.shape[1] * 8}").ravel() for out in outs]


def _plain_ranks(column: Any) -> bool:
    """Every value of a binary column is 1 to ``RANK_DIGITS`` ASCII digits (as
    :func:`~ragjudge.metrics.trec.tokens.plain_ranks` asks), read from the chunks' offsets and
    data buffers without gathering the values."""
    for chunk in column.chunks:
        if not len(chunk):
            continue
        offsets, lengths = _lengths(chunk)
        if int(lengths.min()) < 1 or int(lengths.max()) > RANK_DIGITS:
            return False
        data = np.frombuffer(chunk.buffers()[2], dtype=np.uint8)[int(offsets[0]):int(offsets[-1])]
        if np.any(np.subtract(data, ord("0"), dtype=np.uint8) > 9):  # below "0" wraps round
            return False
    return True


def _float_values(column: Any) -> np.ndarray:
    """A float64 column without nulls as one numpy array (read from the chunks' value
    buffers: ``to_numpy`` would cost a long first-call set-up of pyarrow's conversions)."""
    out = np.empty(len(column), dtype=np.float64)
    at = 0
    for chunk in column.chunks:
        n = len(chunk)
        if n == 0:
            continue
        values = np.frombuffer(chunk.buffers()[1], dtype=np.float64)
        out[at: at + n] = values[chunk.offset: chunk.offset + n]
        at += n
    return out


def plain_table(buf: np.ndarray, size: int, nf: int, include: dict[int, Any]) -> Any | None:
    """Columns ``include`` (field index -> pyarrow type, named ``f<index>``) of the input as a
    pyarrow table when every line is ``nf`` non-empty fields joined by one space and its text
    is plain (see the module's docstring), else None.

    ``buf`` holds the input in its first ``size`` bytes (ending with a newline). A big input
    is read by the CSV reader's own threads (one per core, a block of ``READ_BLOCK`` bytes
    each) while another thread counts its whitespace."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    if size == 0 or buf[0] <= 32 or bytes(buf[:3]) == b"\xef\xbb\xbf":
        return None  # a leading blank; a byte order mark: the reader drops it, the line path too
    names = [f"f{i}" for i in range(nf)]
    types = {names[i]: kind for i, kind in include.items()}
    big = size >= 2 * READ_BLOCK and _THREADS > 1
    read_options = pacsv.ReadOptions(column_names=names, block_size=READ_BLOCK, use_threads=big)
    parse_options = pacsv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False,
                                       escape_char=False, newlines_in_values=False,
                                       ignore_empty_lines=False)
    convert_options = pacsv.ConvertOptions(column_types=types,
                                           include_columns=[names[i] for i in sorted(include)],
                                           strings_can_be_null=False,
                                           quoted_strings_can_be_null=False)

    def read_table() -> Any:
        try:
            return pacsv.read_csv(pa.py_buffer(buf[:size]), read_options=read_options,
                                  parse_options=parse_options, convert_options=convert_options)
        except (pa.ArrowException, ValueError):
            return None

    if big:  # the counts and the text's check (numpy, without the GIL) run beside the reader
        with ThreadPoolExecutor(max_workers=1) as pool:
            counting = pool.submit(_counts, buf, size)
            table = read_table()
            n_ws, cr, pairs, plain = counting.result()
    else:
        table = read_table()
        if table is None:
            return None
        n_ws, cr, pairs, plain = _counts(buf, size)
    if table is None:
        return None
    n = table.num_rows
    # every line "f1 f2 ... fn\n" (or "\r\n") with non-empty fields <=> the whitespace bytes
    # are exactly n(nf-1) spaces and n line ends, no two of them adjacent except "\r\n":
    # the reader saw nf fields on each of its n rows, so it already used n(nf-1) spaces and
    # n line ends (every "\n" and "\r" ends a row for it); the counts leave room for nothing
    # else (no other control byte), the "\n" count rules out a lone "\r" as a line end, and
    # no adjacency rules out empty fields, leading or trailing blanks and blank lines
    if cr == 0:
        if n_ws != n * nf or pairs != 0:
            return None
    elif n_ws != n * nf + cr or pairs != cr or _count_newlines(buf, size) != n:
        return None
    return table if plain else None


def read(box: list, size: int, layout: Layout) -> Parsed | None:
    """(id columns, numbers, lines or None) parsed by pyarrow, or None: another path reads it.

    ``box`` holds the input (the reader's buffer or mapped file, ``size`` bytes used); once
    the input is known to be parsed, the box is emptied so that the buffer is freed early.
    """
    import pyarrow as pa

    buf = box[0]
    dtype = layout.dtype
    float_scores = dtype is np.float64
    include = {col: pa.binary() for col in layout.id_cols}
    include[layout.num_col] = pa.float64() if float_scores else pa.binary()
    if layout.rank_col is not None:
        include[layout.rank_col] = pa.binary()
    table = plain_table(buf, size, len(layout.fields), include)
    if table is None:
        return None
    if layout.rank_col is not None and not _plain_ranks(table.column(f"f{layout.rank_col}")):
        return None
    column = table.column(f"f{layout.num_col}")
    nums: np.ndarray | None
    if float_scores:
        if column.null_count:
            return None
        nums = _float_values(column)
        if not np.isfinite(nums).all():
            return None
    else:
        plan = _plan_ids([column])
        if plan is None:
            return None
        nums = _gather_ids(plan)[0]
        if dtype is not None:  # else the tokens as they are, for the reader to decide
            nums = numbers(nums, dtype)
            if nums is None:
                return None
    plan = _plan_ids([table.column(f"f{col}") for col in layout.id_cols])
    if plan is None:
        return None
    # parsed: the raw input is no longer needed (the caller's box held the last reference)
    del buf, column
    box.clear()
    ids = _gather_ids(plan)
    del plan, table
    pa.default_memory_pool().release_unused()  # give the reader's memory back at once
    return ids, nums, None  # line i holds row i: no blank line is plain
