"""Where an input comes from, and its lines, streamed: the floor under every reader.

A *source* is a path (``str`` or ``Path``; ``-`` is standard input), an open file object
(binary or text), or inline text (a ``str`` holding at least one newline, or ``bytes``), so
that readers test without temporary files and stream files of any size. A path ending in
``.gz`` (or any gzip data, recognised by its magic bytes) is decompressed on the fly.

Lines are decoded strictly as UTF-8. A byte sequence that is not UTF-8, a gzip stream that ends
early or is damaged, and a line longer than :data:`MAX_LINE_BYTES` are :class:`InputError`\\ s
naming the file and the line reached. The readers of :mod:`ragjudge.formats` and the TREC
reader of :mod:`ragjudge.metrics` read their lines here, so that a file's problems are worded
alike whichever reads it.

This module imports only the standard library and :mod:`ragjudge.errors`.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import sys
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, cast

from ragjudge.errors import InputError, device_problem, encoding_problem, why_unusable

Source = str | bytes | os.PathLike | IO[Any] | io.IOBase

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line a reader accepts (64 MiB): longer is almost surely not a line-based file."""

GZIP_MAGIC = b"\x1f\x8b"

Binary = io.BufferedReader | gzip.GzipFile
"""A binary stream as lines are read from it: one that can look ahead (``peek``)."""


def is_inline(source: Source) -> bool:
    """True when ``source`` is text or bytes content rather than a path or a file."""
    return isinstance(source, bytes) or (isinstance(source, str) and "\n" in source)


def source_name(source: Source) -> str:
    """How error messages name ``source``."""
    if is_inline(source):
        return "<text>"
    if isinstance(source, (str, os.PathLike)):
        return "<stdin>" if str(source) == "-" else str(source)
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else "<input>"


class Lines:
    """The numbered, decoded lines of a source, read lazily.

    Iterate to get ``(line_number, text)`` pairs (1-based, newline stripped). ``position`` and
    ``total`` give progress in bytes of the file as stored (compressed bytes for ``.gz``).
    """

    def __init__(self, source: Source, *, name: str | None = None,
                 max_line_bytes: int = MAX_LINE_BYTES, keep_newlines: bool = False) -> None:
        self.source = source
        self.name = name or source_name(source)
        self.max_line_bytes = max_line_bytes
        self.keep_newlines = keep_newlines
        self.line = 0
        self.total: int | None = None
        self._raw: IO[bytes] | None = None

    @property
    def position(self) -> int:
        try:
            return self._raw.tell() if self._raw is not None else 0
        except (OSError, ValueError):
            return 0

    def __iter__(self) -> Iterator[tuple[int, str]]:
        with self._open() as stream:
            if isinstance(stream, io.TextIOBase):
                yield from self._text_lines(stream)
            else:
                yield from self._binary_lines(stream)

    # -- opening -----------------------------------------------------------------------

    @contextmanager
    def _open(self) -> Iterator[Binary | io.TextIOBase]:
        source = self.source
        if isinstance(source, (str, bytes)) and is_inline(source):
            data = source if isinstance(source, bytes) else source.encode("utf-8", "surrogatepass")
            raw: IO[bytes] = io.BytesIO(data)
            self.total = len(data)
            yield self._maybe_gzip(raw)
            return
        if isinstance(source, (str, os.PathLike)):
            if str(source) == "-":
                raw = sys.stdin.buffer
                self._raw = raw
                yield self._maybe_gzip(raw)
                return
            path = Path(source)
            try:
                raw = open(path, "rb")  # noqa: SIM115 - closed below
            except FileNotFoundError:
                raise InputError("the file does not exist.", file=self.name) from None
            except IsADirectoryError:
                raise InputError("is a folder, not a file.", file=self.name) from None
            except OSError as exc:
                raise InputError(why_unusable(exc, path), file=self.name) from None
            try:
                self._raw = raw
                try:
                    status = os.fstat(raw.fileno())
                except OSError:
                    self.total = None
                else:
                    device = device_problem(status.st_mode)
                    if device is not None:
                        raise InputError(device, file=self.name)
                    self.total = status.st_size if stat.S_ISREG(status.st_mode) else None
                yield self._maybe_gzip(raw, force=path.name.endswith(".gz"))
            finally:
                raw.close()
            return
        # An open file object: text already decoded by its wrapper, or bytes we decode.
        if isinstance(source, io.TextIOBase):
            yield source
            return
        binary = cast(IO[bytes], source)  # any other file object gives bytes
        self._raw = binary
        yield self._maybe_gzip(binary)

    def _maybe_gzip(self, raw: IO[bytes], *, force: bool = False) -> Binary:
        # a stream that can peek is read as it is; a raw one gets a buffer to look ahead in
        buffered: io.BufferedReader = (cast(io.BufferedReader, raw) if hasattr(raw, "peek")
                                       else io.BufferedReader(cast(io.RawIOBase, raw)))
        if self._raw is None or self._raw is raw:
            self._raw = raw
        try:
            head = buffered.peek(2)[:2]
        except (OSError, ValueError):
            head = b""
        if force or head == GZIP_MAGIC:
            return gzip.GzipFile(fileobj=buffered, mode="rb")
        return buffered

    # -- reading -----------------------------------------------------------------------

    def _binary_lines(self, stream: Binary) -> Iterator[tuple[int, str]]:
        limit = self.max_line_bytes
        offset = 0
        self._check_head(stream)
        while True:
            try:
                raw = stream.readline(limit + 1)
            except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as exc:
                raise self._gzip_error(exc) from None
            if not raw:
                return
            self.line += 1
            if len(raw) > limit and not raw.endswith(b"\n"):
                raise InputError(
                    f"the line is longer than {limit:,} bytes; this does not look like a "
                    "line-based file (or it lacks line breaks).",
                    file=self.name, line=self.line,
                )
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"the text is not UTF-8: byte 0x{raw[exc.start]:02x} at byte offset "
                    f"{offset + exc.start} of the file (column {exc.start + 1} of the line) cannot "
                    "be decoded. Convert the file to UTF-8 (e.g. with iconv).",
                    file=self.name, line=self.line,
                ) from None
            offset += len(raw)
            if self.line == 1 and text.startswith("\ufeff"):
                text = text[1:]
            if not self.keep_newlines:
                text = text.rstrip("\r\n")
            yield self.line, text

    def _check_head(self, stream: Binary) -> None:
        """Refuse UTF-16, UTF-32 and binary data by their first bytes, before a line is read
        (a file of NUL bytes may have no line break for gigabytes)."""
        try:
            head = stream.peek(4096)[:4096]
        except (AttributeError, EOFError, gzip.BadGzipFile, zlib.error, OSError):
            return  # a damaged gzip stream: reading says so, with the line reached
        problem = encoding_problem(head, self.name)
        if problem is not None:
            raise InputError(problem, file=self.name, line=1)

    def _text_lines(self, stream: Iterable[str]) -> Iterator[tuple[int, str]]:
        iterator = iter(stream)
        while True:
            try:
                text = next(iterator)
            except StopIteration:
                return
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"the text is not UTF-8 (byte offset {exc.start} of the block being decoded). "
                    "Convert the file to UTF-8 (e.g. with iconv).",
                    file=self.name, line=self.line + 1,
                ) from None
            self.line += 1
            if len(text) > self.max_line_bytes:
                raise InputError(f"the line is longer than {self.max_line_bytes:,} characters.",
                                 file=self.name, line=self.line)
            if self.line == 1 and text.startswith("\ufeff"):
                text = text[1:]
            if not self.keep_newlines:
                text = text.rstrip("\r\n")
            yield self.line, text

    def _gzip_error(self, exc: BaseException) -> InputError:
        if isinstance(exc, EOFError):
            what = "the gzip file is truncated (it ends before its end-of-stream marker)"
        elif isinstance(exc, (gzip.BadGzipFile, zlib.error)):
            what = f"the gzip data is damaged ({exc})"
        else:
            what = f"the file could not be read ({exc})"
        return InputError(
            f"{what}; reading stopped after line {self.line}.",
            file=self.name, line=self.line + 1,
        )


def stdin_format_hint(name: str | None, line: int | None) -> str | None:
    """A hint for a first line of standard input that does not parse: '-' has no file name to
    tell its format from, so the default (TREC for runs and qrels, JSONL otherwise) was used."""
    if name == "<stdin>" and line == 1:
        return ("Standard input has no file name to tell its format by; give --format trec, "
                "jsonl or csv.")
    return None
