"""JSON Lines: one JSON object per line, with the field names of :mod:`ragjudge.formats.records`.

Types are checked strictly: an id must be a JSON string, a grade a JSON integer (``2``, not
``2.0`` or ``"2"``), a score a finite number. Blank lines are skipped. A ``.json`` file is read
as JSON Lines too (one object per line), never parsed whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import BaseModel

from ragjudge.errors import InputError
from ragjudge.formats.records import (
    FIELDS, KINDS, Duplicates, RankedList, build, json_type, plain_record, short,
)
from ragjudge.formats.source import Destination, Lines, Source, open_output, stdin_format_hint
from ragjudge.models import RunEntry
from ragjudge.safetext import quote


class DuplicateKey(ValueError):
    """A JSON object names the same key twice."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict, refusing a key given twice: JSON leaves the meaning of
    ``{"id": "x18", "id": "x19"}`` open and Python's reader keeps the last silently."""
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return data


def duplicate_key_message(key: str) -> str:
    return (f"the key {quote(key)} appears twice in one object; JSON readers disagree on which "
            "one counts (Python's keeps the last), so ragjudge takes neither: give it once.")


# NaN and Infinity (which Python's json accepts) are read as floats, so that the field holding
# them is named in the error (scores and weights must be finite; a grade must be an integer).
_decode = json.JSONDecoder(object_pairs_hook=unique_keys).decode


def read_jsonl(kind: str, source: Source, *, name: str | None = None,
               check_duplicates: bool = True, numbered: bool = False) -> Iterator[Any]:
    """Yield the records of ``kind`` (see :data:`~ragjudge.formats.records.KINDS`) of a JSONL
    source; ``numbered`` yields ``(line, record)``.

    A run line ``{"query_id", "chunks": [...]}`` yields one :class:`RunEntry` per chunk, ranked
    1, 2, ... in list order. A run must be consistent: either every line has a score or none has.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}")
    lines = Lines(source, name=name)
    file = lines.name
    duplicates = Duplicates(kind, file) if check_duplicates else None
    scored: bool | None = None
    for number, text in lines:
        if not text.strip():
            continue
        data = parse_object(text, file=file, line=number)
        if kind == "run":
            entries = _run_entries(data, file=file, line=number)
            for entry in entries:
                has_score = entry.score is not None
                if scored is None:
                    scored = has_score
                elif scored != has_score:
                    raise InputError(
                        "some lines of this run have a score and others do not; give every line "
                        "a score (the run is ordered by score) or none (ordered by rank, then "
                        "line).", file=file, line=number, field="score")
                if duplicates is not None:
                    duplicates.seen(entry, number)
                yield (number, entry) if numbered else entry
            continue
        record = plain_record(kind, data) or build(kind, data, file=file, line=number)
        if duplicates is not None and duplicates.seen(record, number):
            continue
        yield (number, record) if numbered else record


def parse_object(text: str, *, file: str, line: int) -> dict[str, Any]:
    """One line's JSON object, or an :class:`InputError` saying what is wrong with it."""
    try:
        data = _decode(text)
    except DuplicateKey as exc:
        raise InputError(duplicate_key_message(exc.key), file=file, line=line,
                         field=exc.key) from None
    except ValueError as exc:  # json.JSONDecodeError, or an integer too long to convert
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        column = f" at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise InputError(f"the line is not valid JSON ({message}{column}): {short(text)}.",
                         file=file, line=line, hint=stdin_format_hint(file, line)) from None
    except RecursionError:
        raise InputError("the line's JSON is nested too deeply.", file=file, line=line) from None
    if not isinstance(data, dict):
        raise InputError(f"each line must be a JSON object {{...}}, this one is {json_type(data)}.",
                         file=file, line=line)
    if "\\ud" in text or "\\uD" in text:
        # A \ud800-\udfff escape outside a surrogate pair decodes to text no database can store.
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise InputError("the line holds a lone UTF-16 surrogate escape (\\ud800-\\udfff), "
                             "which is not text.", file=file, line=line) from None
    return data


def _run_entries(data: dict[str, Any], *, file: str, line: int) -> list[RunEntry]:
    if "chunks" in data:
        ranked = build("run", data, file=file, line=line, model=RankedList)
        assert isinstance(ranked, RankedList)
        entries = []
        for position, chunk_id in enumerate(ranked.chunks, start=1):
            if not chunk_id:
                raise InputError("an empty chunk id in the list.", file=file, line=line,
                                 field=f"chunks[{position - 1}]")
            entries.append(RunEntry(query_id=ranked.query_id, chunk_id=chunk_id, rank=position))
        return entries
    return [build("run", data, file=file, line=line)]  # type: ignore[list-item]


def record_dict(record: BaseModel | dict[str, Any], kind: str | None = None) -> dict[str, Any]:
    """A record as the JSON object ragjudge writes: contract field names, unset optional
    fields left out."""
    if isinstance(record, dict):
        return {k: v for k, v in record.items() if v is not None}
    data = record.model_dump(mode="json", exclude_none=True)
    if kind is not None and kind in FIELDS:
        data = {k: data[k] for k in FIELDS[kind] if k in data}
    return data


def write_jsonl(records: Iterable[BaseModel | dict[str, Any]], dest: Destination, *,
                kind: str | None = None) -> int:
    """Write one JSON object per record; returns the number written."""
    count = 0
    with open_output(dest) as out:
        for record in records:
            out.write(json.dumps(record_dict(record, kind), ensure_ascii=False, allow_nan=False))
            out.write("\n")
            count += 1
    return count
