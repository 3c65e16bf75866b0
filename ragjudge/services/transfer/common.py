"""What every import shares: the result it reports, numbered records, batches and checks."""

from __future__ import annotations

import io
import os
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import IO, Any
from sqlalchemy import (
    Column, MetaData, Table,
)
from sqlalchemy.engine import Connection
from ragjudge.errors import InputError, UsageError
from ragjudge.formats import read_records
from ragjudge.formats.beir import (
    read_beir_corpus, read_beir_queries,
)
from ragjudge.formats.source import Source, is_inline, path_kind
from ragjudge.formats.trec import QrelsTally
from ragjudge.services.transfer.idcheck import FIRST_FEW  # noqa: F401 - re-exported
from ragjudge.services.transfer.result import ImportResult, Progress  # noqa: F401 - re-exported


BATCH = 5000
"""Rows per executemany batch (and ids per ``IN (...)`` lookup: SQLite allows 32,766 variables)."""


DEFAULT_ANNOTATOR = "imported"


class _Counting(io.RawIOBase):
    """A raw file that reports how many bytes were read (for a progress bar)."""

    def __init__(self, raw: IO[bytes], total: int | None, description: str, progress: Progress) -> None:
        self._raw = raw
        self._total = total
        self._description = description
        self._progress = progress
        self._done = 0
        self._reported = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count = self._raw.readinto(buffer)  # type: ignore[attr-defined]
        self._done += count or 0
        if self._done - self._reported >= 1 << 20 or not count:
            self._reported = self._done
            self._progress(self._done, self._total, self._description)
        return count or 0


@contextmanager
def numbered(kind: str, source: Source, fmt: str, file: str, progress: Progress | None,
             beir: bool = False, tally: QrelsTally | None = None) -> Iterator[Iterator[tuple[int, Any]]]:
    """``(line, record)`` pairs of the file (runs: tuples, see :func:`_records`); ``tally``
    (qrels and labels) hears how a qrels file's lines were read."""
    if beir:  # ``source`` is the BEIR folder
        reader = read_beir_corpus if kind == "chunks" else read_beir_queries
        yield reader(source, numbered=True)  # type: ignore[arg-type]
        return
    if progress is not None and isinstance(source, (str, os.PathLike)) and not is_inline(source) \
            and str(source) != "-" and fmt != "beir" and path_kind(source) == "file":
        path = Path(source)
        with open(path, "rb") as raw:
            total = os.fstat(raw.fileno()).st_size
            counting = _Counting(raw, total, f"{kind} {path.name}", progress)
            yield _records(kind, counting, fmt, file, tally)
            progress(total, total, f"{kind} {path.name}")
        return
    yield _records(kind, source, fmt, file, tally)


def _records(kind: str, source: Source, fmt: str, file: str,
             tally: QrelsTally | None = None) -> Iterator[Any]:
    """Numbered records; a run (JSONL, CSV: a TREC run is read as columns) as ``(line,
    query_id, chunk_id, rank, score)`` tuples, its duplicates left for the import to find (a
    reader would hold every pair in memory)."""
    if kind != "run":
        return read_records(kind, source, fmt, name=file, numbered=True,
                            tally=tally if kind in ("qrels", "labels") else None)
    entries = read_records("run", source, fmt, name=file, check_duplicates=False, numbered=True)
    return ((line, e.query_id, e.chunk_id, e.rank, e.score) for line, e in entries)


def batches(items: Iterable[Any], size: int = BATCH) -> Iterator[list[Any]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def check_annotator(name: str, *, file: str | None = None, line: int | None = None) -> str:
    cleaned = (name or "").strip()
    problem = None
    if not cleaned:
        problem = "the annotator name is empty."
    elif len(cleaned) > 255 or any(not ch.isprintable() for ch in cleaned):
        problem = "an annotator name must be printable and under 256 characters."
    if problem:
        if file is None:
            raise UsageError(f"--annotator: {problem}")
        raise InputError(problem, file=file, line=line, field="annotator")
    return cleaned


def temp_table(connection: Connection, *columns: Column) -> Table:
    table = Table(f"rj_import_{uuid.uuid4().hex[:12]}", MetaData(), *columns, prefixes=["TEMPORARY"])
    table.create(connection)
    return table


def _bytewise(column: Any, connection: Connection) -> Any:
    """``column`` compared as byte strings (SQLite's default BINARY; "C" on PostgreSQL)."""
    return column.collate("C") if connection.dialect.name == "postgresql" else column


def json_text(column: Any, connection: Connection) -> Any:
    """A column of JSON text as the project's JSON column takes it."""
    from sqlalchemy import JSON, cast

    return cast(column, JSON) if connection.dialect.name == "postgresql" else column
