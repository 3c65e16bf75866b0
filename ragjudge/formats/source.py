"""Where an input comes from, and its lines, streamed (:mod:`ragjudge.inputs`, re-exported
here for the readers of :mod:`ragjudge.formats`), and where output goes.

Every reader of :mod:`ragjudge.formats` takes a *source*: a path (``str`` or ``Path``; ``-`` is
standard input), an open file object (binary or text), or inline text (a ``str`` holding at least
one newline, or ``bytes``); see :class:`ragjudge.inputs.Lines` for how its lines are read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from ragjudge.errors import InputError, why_unusable
from ragjudge.inputs import (
    GZIP_MAGIC, MAX_LINE_BYTES, Lines, Source, is_inline, source_name, stdin_format_hint,
)

__all__ = ["GZIP_MAGIC", "MAX_LINE_BYTES", "Destination", "Lines", "Source", "is_inline",
           "open_output", "path_kind", "read_text", "source_name", "stdin_format_hint"]


EXTENSIONS = {
    ".trec": "trec", ".qrels": "trec", ".txt": "trec", ".run": "trec", ".tsv": "trec",
    ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl",
    ".csv": "csv",
}
"""A file's format by its extension (``.gz`` stripped first), as ``--format auto`` decides it
(:func:`ragjudge.formats.api.detect_format`)."""


def extension_format(path: str | os.PathLike) -> str | None:
    """The format :data:`EXTENSIONS` gives a file's name, or None."""
    from pathlib import PurePath

    name = PurePath(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return EXTENSIONS.get(PurePath(name).suffix)


def path_kind(path: str | os.PathLike, *, name: str | None = None) -> str:
    """``'file'``, ``'folder'`` or ``'missing'`` for an input path (a device or pipe counts as a
    file: it is read as one). A path the system will not even look at (a folder on the way this
    user may not enter, a name too long) is an :class:`InputError` naming it, where
    ``Path.exists()`` would raise a traceback."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError as exc:
        raise InputError(why_unusable(exc, path), file=name or str(path)) from None
    except ValueError:  # an embedded NUL byte: no file has such a name
        return "missing"
    return "folder" if stat.S_ISDIR(mode) else "file"


def read_text(source: Source, *, name: str | None = None) -> str:
    """The whole text of a (small) source, e.g. Markdown guidelines, strictly UTF-8."""
    lines = Lines(source, name=name, keep_newlines=True)
    return "".join(text for _, text in lines)


Destination = str | os.PathLike | IO[str]


@contextmanager
def open_output(dest: Destination) -> Iterator[IO[str]]:
    """A text stream to write to: a path (``.gz`` compressed; ``-`` is standard output) or an
    open text file, which is left open. Paths are written through :func:`ragjudge.files.writing`
    (UTF-8, ``\\n`` line ends, atomically, never over a project)."""
    if isinstance(dest, (str, os.PathLike)):
        from ragjudge.files import writing  # only a command that writes loads tempfile & co.

        with writing(dest) as handle:
            yield handle
        return
    yield dest
