"""Whether the ids of a file's columns are in the project, and short enough for the store (no
SQLAlchemy here: the lean run import checks them too)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ragjudge.errors import InputError
from ragjudge.services.project import columns as bulk
from ragjudge.services.transfer.result import ImportResult
from ragjudge.store.keys import MAX_KEY_BYTES, key_bytes
from ragjudge.store.sqltext import ids_in

FIRST_FEW = 5
"""Missing ids named in a refusal (the first ones, by line)."""


class IdCheck:
    """The query and chunk ids of whole columns checked against the project, in bulk: the
    missing ones are counted (and the first few named with their lines) for
    :meth:`raise_if_missing`, unless ``create_missing``. ``connection``: SQLAlchemy's or
    :mod:`ragjudge.store.sqltext`'s."""

    def __init__(self, connection: Any, create_missing: bool, result: ImportResult) -> None:
        self.connection = connection
        self.create_missing = create_missing
        self.result = result
        self.missing: dict[str, dict[str, int]] = {"query": {}, "chunk": {}}
        self.count = {"query": 0, "chunk": 0}

    def check_columns(self, what: str, ids: np.ndarray, lines: np.ndarray) -> list[str]:
        """The ids of ``ids`` (an ``S`` array, with each row's line) the project lacks, read in
        bulk; without ``create_missing`` they are counted for :meth:`raise_if_missing`."""
        table = "queries" if what == "query" else "chunks"
        distinct, first = bulk.distinct(ids)
        texts = bulk.decode(distinct)
        found = ids_in(self.connection, table, texts)
        lacking = [i for i, text in enumerate(texts) if text not in found]
        if not lacking or self.create_missing:
            return [texts[i] for i in lacking]
        self.count[what] += len(lacking)
        first_lines = lines[first[lacking]]
        for k in np.argsort(first_lines, kind="stable")[:FIRST_FEW]:
            self.missing[what][texts[lacking[k]]] = int(first_lines[k])
        return [texts[i] for i in lacking]

    def raise_if_missing(self, file: str) -> None:
        parts = []
        first_line: int | None = None
        field_name = None
        for what, plural in (("query", "queries"), ("chunk", "chunks")):
            count = self.count[what]
            if not count:
                continue
            first = sorted(self.missing[what].items(), key=lambda item: item[1])[:FIRST_FEW]
            if first_line is None or first[0][1] < first_line:
                first_line, field_name = first[0][1], f"{what}_id"
            listed = ", ".join(f"'{i}' (line {line})" for i, line in first)
            noun = f"{what} id" if count == 1 else f"{what} ids"
            parts.append((f"{count:,} {noun}", f"{plural}: {listed}", plural))
        if not parts:
            return
        counts = " and ".join(p[0] for p in parts)
        verb = "is" if counts.startswith("1 ") and len(parts) == 1 else "are"
        raise InputError(
            f"{counts} {verb} not in the project (first {'; '.join(p[1] for p in parts)}). "
            f"Import the {' and '.join(p[2] for p in parts)} first, or pass --create-missing to "
            "add them as placeholders with empty text. Nothing was imported.",
            file=file, line=first_line, field=field_name)


MAX_ID = MAX_KEY_BYTES
"""The longest id, run name or category the store holds, in bytes of UTF-8, on every backend."""


def too_long_key(value: str) -> bool:
    return key_bytes(value) > MAX_ID


def too_long(query_id: str, chunk_id: str, file: str, line: int) -> None:
    field_name = "query_id" if too_long_key(query_id) else "chunk_id"
    size = max(key_bytes(query_id), key_bytes(chunk_id))
    raise InputError(f"the id is {size:,} bytes long (in UTF-8); ids have at most {MAX_ID}.",
                     file=file, line=line, field=field_name)


def check_long_ids(query_ids: np.ndarray, chunk_ids: np.ndarray, lines: np.ndarray, file: str) -> None:
    """The first line with an id longer than the store holds, as :func:`_too_long` says it."""
    rows = np.union1d(bulk.longer_than(query_ids, MAX_ID), bulk.longer_than(chunk_ids, MAX_ID))
    if len(rows):
        row = int(rows[np.argmin(lines[rows])])
        query_id, chunk_id = bulk.decode(np.array([query_ids[row], chunk_ids[row]]))
        too_long(query_id, chunk_id, file, int(lines[row]))
