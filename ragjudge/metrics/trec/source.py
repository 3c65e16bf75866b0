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

import codecs
import gzip
import io
import os
import re
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
#: where Python's str.split splits or the line path refuses a character, in UTF-8 above 127:
#: the C1 controls (U+0085 among them) and the Unicode spaces
_NOT_PLAIN = re.compile(rb"\xc2[\x80-\x9f\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]"
                        rb"|\xe2\x81\x9f|\xe3\x80\x80")
#: bytes decoded at once when checking UTF-8 (bounds the decoder's output, not the input)
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
    """Bytes holding some above 127: valid UTF-8, without DEL, a C1 control or a Unicode space
    (decoded a block at a time, the text thrown away)."""
    data = view.tobytes()
    if b"\x7f" in data or _NOT_PLAIN.search(data) is not None:
        return False
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for at in range(0, len(data), _DECODE_BYTES):
            decoder.decode(data[at: at + _DECODE_BYTES])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


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
