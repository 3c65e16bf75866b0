"""A TREC file's bytes, for the fast paths of the reader, and the proof that they are plain.

:func:`read_input` gives the whole input as one uint8 array (gzip undone, a newline at its
end, zero padding after it) or, for a big file named by its path, the file mapped into memory
where it lies (no copy). It never words a problem: an input it cannot read (a missing file, a
device, damaged gzip data, UTF-16) comes back as the :class:`ReadByLines` that the line path
(:mod:`ragjudge.metrics.trec.lines`) reads and words, so that every message has one source.

:func:`plain_text` is the first half of the fast paths' proof that they read a file as the line
path does: the line path decodes each line strictly as UTF-8 and splits it where Python's
``str.split`` does, while the tokenizers split at every byte up to 32. The two agree when the
text holds no byte order mark (the line path drops it), no control byte but the whitespace ones
(tab, line feed, vertical tab, form feed, carriage return, the separators 0x1c-0x1f), no DEL,
and, when it holds bytes above 127, is valid UTF-8 without a C1 control or a Unicode space
(U+00A0, U+2003...: Python splits there, the tokenizers do not), and no line is longer than
:data:`ragjudge.inputs.MAX_LINE_BYTES`. Anything else is read by the line path, which refuses
it or reads it.

:func:`read_bytes` is the plain reading of an input (used by the sampled judgments' reader):
it words what it cannot read.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragjudge.errors import InputError, device_problem, encoding_problem
from ragjudge.inputs import GZIP_MAGIC, MAX_LINE_BYTES, is_inline, source_name

_BOM = b"\xef\xbb\xbf"
#: bytes checked at once for UTF-8 (bounds the temporary arrays, not the input)
_DECODE_BYTES = 1 << 24


@dataclass(frozen=True)
class ReadByLines:
    """An input for the line path: ``source`` is what it reads (the path, or the bytes read
    once from a file object, standard input or a pipe), ``shown`` how its messages name it,
    ``name`` the file name the arrays carry (None for inline text)."""

    source: Any
    shown: str
    name: str | None


@dataclass
class Input:
    """The bytes of an input: ``buf`` holds them in its first ``size`` bytes, which end with a
    newline; ``padded`` says whether 8 zero bytes follow (a mapped file has none); ``lines``
    is the same input for the line path."""

    buf: np.ndarray
    size: int
    padded: bool
    lines: ReadByLines


def file_name(source: Any) -> str | None:
    """The file name a source carries into the arrays: a path's, a file object's; None for
    inline text and bytes."""
    if isinstance(source, (str, os.PathLike)) and not is_inline(source):
        return str(source)
    name = getattr(source, "name", None)
    return str(name) if isinstance(name, (str, os.PathLike)) else None


def _shown(source: Any, name: str | None) -> str:
    return name if name is not None else source_name(source)


def by_lines(source: Any, name: str | None = None) -> ReadByLines:
    """The input as the line path reads it, untouched."""
    return ReadByLines(source, _shown(source, name), name if name is not None else file_name(source))


def read_input(source: Any, *, name: str | None = None, map_from: int | None = None) -> Input | ReadByLines:
    """The input's bytes (a regular, uncompressed file named by its path, of at least
    ``map_from`` bytes, is mapped into memory, not copied), or what the line path should read
    when they cannot be had without a message."""
    lines = by_lines(source, name)
    carried = lines.name
    if isinstance(source, str) and is_inline(source):
        return _from_data(source.encode("utf-8", "surrogatepass"), lines)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _from_data(bytes(source), lines)
    if hasattr(source, "read"):
        raw = source.read()
        data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
        return _from_data(data, ReadByLines(data, lines.shown, carried))
    if str(source) == "-":
        data = sys.stdin.buffer.read()
        return _from_data(data, ReadByLines(data, lines.shown, carried))
    return _from_path(Path(source), lines, map_from)


def _from_path(path: Path, lines: ReadByLines, map_from: int | None) -> Input | ReadByLines:
    try:
        with open(path, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if device_problem(mode) is not None:
                return lines
            if not stat.S_ISREG(mode):  # a pipe (<(zcat qrels.gz)) is read once, here
                data = handle.read()
                return _from_data(data, ReadByLines(data, lines.shown, lines.name))
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(2)
            if head == GZIP_MAGIC:
                handle.seek(0)
                return _from_data(handle.read(), lines)
            if map_from is not None and size >= max(map_from, 2):
                found = _mapped(handle, size)
                if found is not None:
                    return Input(found, size, False, lines)
            buf = np.zeros(size + 9, dtype=np.uint8)
            handle.seek(0)
            got = handle.readinto(memoryview(buf)[:size])  # type: ignore[arg-type]  # an ndarray is a buffer; numpy's stubs omit it
    except (OSError, ValueError):
        return lines
    return _finish(buf, got, lines)


def _mapped(handle: Any, size: int) -> np.ndarray | None:
    """The file mapped read-only into memory when it ends with a newline (the reader then
    reads it where it lies), else None."""
    import mmap

    try:
        view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    data = np.frombuffer(view, dtype=np.uint8)  # keeps the mapping open while it lives
    if len(data) != size or data[size - 1] != 10:
        return None
    return data


def _from_data(data: bytes, lines: ReadByLines) -> Input | ReadByLines:
    if data[:2] == GZIP_MAGIC:
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
                data = gz.read()
        except (OSError, EOFError, zlib.error):
            return lines  # the line path says how far the stream reads
    buf = np.zeros(len(data) + 9, dtype=np.uint8)
    buf[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return _finish(buf, len(data), lines)


def _finish(buf: np.ndarray, size: int, lines: ReadByLines) -> Input:
    if size and buf[size - 1] != 10:
        buf[size] = 10
        size += 1
    return Input(buf, size, True, lines)


def plain_start(buf: np.ndarray, size: int) -> bool:
    """The input's start is plain: no byte order mark, nothing ``encoding_problem`` names
    (UTF-16, UTF-32, binary data)."""
    head = bytes(buf[: min(size, 4096)])
    return not head.startswith(_BOM) and encoding_problem(head, None) is None


def plain_text(buf: np.ndarray, size: int) -> bool:
    """Whether the line path splits the input's first ``size`` bytes where the tokenizers do
    and accepts its characters (see the module's docstring)."""
    view = buf[:size]
    if not plain_start(buf, size):
        return False
    controls = int(np.count_nonzero(view < 32))
    if controls != int(np.count_nonzero(view == 10)) and not _whitespace_controls(view, controls):
        return False
    if size and int(view.max()) >= 127 and not plain_unicode(view):
        return False
    return size <= MAX_LINE_BYTES or longest_line(view) <= MAX_LINE_BYTES


def _whitespace_controls(view: np.ndarray, controls: int) -> bool:
    """Every byte below 32 is one Python splits at: 9-13 and 28-31."""
    return controls == int(np.count_nonzero((view >= 9) & (view <= 13))) + int(
        np.count_nonzero((view >= 28) & (view <= 31)))


def plain_unicode(view: np.ndarray) -> bool:
    """Bytes holding some above 127: valid UTF-8 (as Python's strict decoder reads it), without
    DEL, a C1 control or a Unicode space. Only the bytes above 126 are looked at, a block at a
    time, in numpy: each lead byte must be followed by the continuation bytes it announces
    (with the second-byte bounds that rule out overlong forms, surrogates and code points
    beyond U+10FFFF), and every continuation byte must be so claimed."""
    claimed = continuations = 0
    for lo in range(0, len(view), _DECODE_BYTES):
        at = lo + np.flatnonzero(view[lo:min(lo + _DECODE_BYTES, len(view))] >= 0x7F)
        lead = view[at]
        if np.any(lead == 0x7F):
            return False
        follow = lead < 0xC0
        continuations += int(np.count_nonzero(follow))
        at, lead = at[~follow], lead[~follow]
        need = _UTF8_NEED[lead]
        if np.any(need == 0):
            return False  # C0, C1, F5-FF never start a character
        claimed += int(need.sum())
        if not _continued(view, at, lead, need) or not _plain_characters(view, at, lead):
            return False
    return claimed == continuations


#: the continuation bytes each lead byte announces (0: not a lead byte)
_UTF8_NEED = np.zeros(256, dtype=np.int64)
_UTF8_NEED[0xC2:0xE0] = 1
_UTF8_NEED[0xE0:0xF0] = 2
_UTF8_NEED[0xF0:0xF5] = 3
#: the second byte's bounds after a lead byte (UTF-8's table: no overlong form, no surrogate,
#: nothing beyond U+10FFFF)
_SECOND_LOW = np.full(256, 0x80, dtype=np.uint8)
_SECOND_HIGH = np.full(256, 0xBF, dtype=np.uint8)
_SECOND_LOW[0xE0], _SECOND_HIGH[0xED], _SECOND_LOW[0xF0], _SECOND_HIGH[0xF4] = 0xA0, 0x9F, 0x90, 0x8F


def _continued(view: np.ndarray, at: np.ndarray, lead: np.ndarray, need: np.ndarray) -> bool:
    """Each lead byte at ``at`` is followed by the continuation bytes it needs."""
    second = np.take(view, at + 1, mode="clip")  # the input ends with a newline: no overrun
    if np.any((second < _SECOND_LOW[lead]) | (second > _SECOND_HIGH[lead])):
        return False
    for step in (2, 3):
        longer = need >= step
        if longer.any():
            byte = np.take(view, at[longer] + step, mode="clip")
            if np.any((byte < 0x80) | (byte > 0xBF)):
                return False
    return True


def _plain_characters(view: np.ndarray, at: np.ndarray, lead: np.ndarray) -> bool:
    """No C1 control (U+0080-U+009F, ``c2 80``-``c2 9f``) or Unicode space (U+00A0 ``c2 a0``,
    U+1680 ``e1 9a 80``, U+2000-U+200A ``e2 80 80``-``e2 80 8a``, U+2028, U+2029, U+202F
    ``e2 80 a8/a9/af``, U+205F ``e2 81 9f``, U+3000 ``e3 80 80``) among the characters whose
    lead bytes are ``lead`` (at ``at``)."""
    some = (lead == 0xC2) | ((lead >= 0xE1) & (lead <= 0xE3))
    if not some.any():
        return True
    at, lead = at[some], lead[some]
    one = np.take(view, at + 1, mode="clip")
    two = np.take(view, at + 2, mode="clip")
    found = (lead == 0xC2) & (one <= 0xA0)
    found |= (lead == 0xE1) & (one == 0x9A) & (two == 0x80)
    found |= (lead == 0xE2) & (one == 0x80) & (((two >= 0x80) & (two <= 0x8A)) | (two == 0xA8)
                                               | (two == 0xA9) | (two == 0xAF))
    found |= (lead == 0xE2) & (one == 0x81) & (two == 0x9F)
    found |= (lead == 0xE3) & (one == 0x80) & (two == 0x80)
    return not found.any()


def longest_line(view: np.ndarray) -> int:
    """Bytes of the longest line, its newline included."""
    ends = np.flatnonzero(view == 10)
    return int(np.diff(ends, prepend=-1).max()) if len(ends) else len(view)


def read_bytes(source: Any) -> tuple[np.ndarray, int, str | None]:
    """The whole input as a uint8 array with 8 zero bytes of padding after it, its size (it
    ends with a newline) and its file name, or an :class:`InputError` saying why it cannot be
    read (a missing file, a folder, a device, damaged gzip data, UTF-16, binary data)."""
    got = read_input(source)
    if isinstance(got, Input):
        head = bytes(got.buf[: min(got.size, 4096)])
        problem = encoding_problem(head, got.lines.name)
        if problem is not None:
            raise InputError(problem, file=got.lines.name, line=1)
        return got.buf, got.size, got.lines.name
    from ragjudge.inputs import Lines

    for _ in Lines(got.source, name=got.shown):  # words what kept it from being read
        pass
    raise InputError("cannot be read.", file=got.shown)  # pragma: no cover - Lines said why
