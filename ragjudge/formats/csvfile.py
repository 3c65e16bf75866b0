"""CSV with a header row of the JSONL field names (:mod:`ragjudge.formats.records`).

An empty cell is a missing value. ``meta`` holds a JSON object; ``cited`` a JSON list or ids
separated by spaces; ``sentences`` a JSON list of ``{"text", "citations"}`` objects; ``covered`` is ``true``/``false`` (or ``1``/``0``, ``yes``/``no``). Quoted
cells may span lines; errors name the line where the record starts. Columns a kind does not
have are refused, as unknown JSONL fields are.

**Written for spreadsheets.** A CSV file is opened in a spreadsheet more often than not, and a
spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` (or a tab or CR) as a
formula: a query id ``=HYPERLINK(...)`` or a note ``@SUM(...)`` would run on the machine of
whoever opens the export. :func:`write_csv` therefore writes such a *text* cell with a single
quote before it (``'=HYPERLINK(...)``, OWASP's advice against CSV injection; the spreadsheet
shows text), unless ``raw``. Text cells are those whose value is a string: ids, names, notes,
flag notes, comments, queries, texts, nuggets, facets, run and annotator names. Numbers (grades,
ranks, scores, weights), true/false, times and JSON cells (``meta``, ``cited``) are written as
they are: they cannot start a formula, and a negative score stays a number; so does a text that
is a plain number (an id ``-1``), which a spreadsheet reads as that number, not a formula.

The reader undoes the quote: a text cell ``'=…`` is read as ``=…`` (a spreadsheet's own way of
writing text that starts like a formula), so an export reads back exactly. To keep that true
for a text that itself starts with quotes before a formula character (``'=x``), the writer adds
one more (``''=x``) and the reader takes one away: :func:`spreadsheet_safe` and
:func:`spreadsheet_text` are inverse. With ``raw`` every cell is written exactly as stored, for
programs that read CSV literally.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import IO, Any

from pydantic import BaseModel

from ragjudge.errors import InputError
from ragjudge.formats.jsonl import DuplicateKey, duplicate_key_message, record_dict, unique_keys
from ragjudge.formats.records import FIELDS, KINDS, REQUIRED, Duplicates, build, short
from ragjudge.formats.source import Destination, Lines, Source, open_output
from ragjudge.models import RunEntry
from ragjudge.numeric import parse_integer, parse_number
from ragjudge.safetext import FORMULA_STARTS, quote, spreadsheet_safe, spreadsheet_text, visible

__all__ = ["FORMULA_STARTS", "read_csv", "spreadsheet_safe", "spreadsheet_text", "write_csv"]

_INT = {"grade", "rank", "sentence"}
_FLOAT = {"score", "weight"}
_BOOL = {"covered", "flagged"}
_OBJECT = {"meta"}
_LIST = {"cited", "sentences"}
_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}
_BLANKS = " \t"

csv.field_size_limit(2**31 - 1)


def read_csv(kind: str, source: Source, *, name: str | None = None,
             check_duplicates: bool = True, numbered: bool = False) -> Iterator[Any]:
    """Yield the records of ``kind`` from a CSV source with a header row."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}")
    lines = Lines(source, name=name, keep_newlines=True)
    file = lines.name
    physical = iter(lines)
    state = {"line": 0}

    def feed() -> Iterator[str]:
        for number, text in physical:
            state["line"] = number
            yield text

    reader = csv.reader(feed(), strict=True)
    duplicates = Duplicates(kind, file) if check_duplicates else None
    header: list[str] | None = None
    scored: bool | None = None
    required_text = set(REQUIRED[kind]) - _INT - _FLOAT - _BOOL - _OBJECT - _LIST
    while True:
        start = state["line"] + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InputError(f"the line is not valid CSV ({exc}).", file=file, line=start) from None
        if not row or all(not cell.strip() for cell in row):
            continue
        if header is None:
            header = _header(kind, row, file=file, line=start)
            continue
        if len(row) != len(header):
            raise InputError(f"the row has {len(row)} cells and the header {len(header)}.",
                             file=file, line=start)
        data = {}
        for column, cell in zip(header, row):
            if cell != "":
                data[column] = _convert(column, cell, file=file, line=start)
            elif column in required_text:
                data[column] = ""  # an empty required text is empty; ids then say "empty"
        if kind == "answers" and "text" in header and "text" not in data and "sentences" not in data:
            data["text"] = ""  # an empty answer, as its JSONL line {"text": ""} is
        record = build(kind, data, file=file, line=start)
        if isinstance(record, RunEntry):
            has_score = record.score is not None
            if scored is None:
                scored = has_score
            elif scored != has_score:
                raise InputError("some rows of this run have a score and others do not.",
                                 file=file, line=start, field="score")
        if duplicates is not None and duplicates.seen(record, start):
            continue
        yield (start, record) if numbered else record


def _header(kind: str, row: list[str], *, file: str, line: int) -> list[str]:
    header = [cell.strip() for cell in row]
    known = FIELDS[kind]
    for column in header:
        if column not in known:
            raise InputError(
                f"unknown column (a {kind} CSV has the columns {', '.join(known)}; the first row "
                "must be the header).", file=file, line=line, field=column or "(empty)")
    if len(set(header)) != len(header):
        twice = next(column for i, column in enumerate(header) if column in header[:i])
        raise InputError(f"the column {quote(twice)} appears twice in the header; readers disagree on "
                         "which one counts, so ragjudge takes neither: give it once.",
                         file=file, line=line, field=twice)
    return header


def _convert(column: str, cell: str, *, file: str, line: int) -> Any:
    if column in _INT or column in _FLOAT:
        # blanks around a number are padding (CSV aligned by hand); the number itself is in
        # the one syntax of every reader (ragjudge.numeric: no "1_0", no "１")
        text = cell.strip(_BLANKS)
        number = parse_integer(text) if column in _INT else parse_number(text)
        if number is None:
            what = "an integer" if column in _INT else "a number"
            raise InputError(f"{short(cell)} is not {what}.", file=file, line=line,
                             field=column)
        if isinstance(number, float) and not math.isfinite(number):
            raise InputError(f"the {column} is {text}; it must be a finite number.",
                             file=file, line=line, field=column)
        return number
    if column in _BOOL:
        lowered = cell.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise InputError(f"{short(cell)} is not true or false.", file=file, line=line, field=column)
    if column in _OBJECT:
        try:
            value = json.loads(cell, parse_constant=_refuse, object_pairs_hook=unique_keys)
        except DuplicateKey as exc:
            raise InputError(duplicate_key_message(exc.key), file=file, line=line,
                             field=f"{column}.{visible(exc.key)}") from None
        except (ValueError, RecursionError):
            raise InputError(f"{short(cell)} is not a JSON object.", file=file, line=line,
                             field=column) from None
        if not isinstance(value, dict):
            raise InputError(f"{short(cell)} is not a JSON object.", file=file, line=line, field=column)
        return value
    if column in _LIST:
        if cell.lstrip().startswith("["):
            try:
                value = json.loads(cell, parse_constant=_refuse, object_pairs_hook=unique_keys)
            except DuplicateKey as exc:
                raise InputError(duplicate_key_message(exc.key), file=file, line=line,
                                 field=column) from None
            except (ValueError, RecursionError):
                raise InputError(f"{short(cell)} is not a JSON list.", file=file, line=line,
                                 field=column) from None
            return value
        return cell.split()
    return spreadsheet_text(cell)


def _refuse(token: str) -> Any:
    raise ValueError(token)


def write_csv(records: Iterable[BaseModel | dict[str, Any]], dest: Destination, *, kind: str,
              fields: tuple[str, ...] | None = None, raw: bool = False) -> int:
    """Write a header of ``kind``'s fields, then a row per record; returns the rows written.

    A text cell that a spreadsheet would run as a formula gets a ``'`` before it unless
    ``raw`` (see the module's docstring)."""
    fields = fields or FIELDS[kind]
    count = 0
    with open_output(dest) as out:
        row = _RowWriter(out)
        row.write(fields)
        for record in records:
            data = record_dict(record) if isinstance(record, BaseModel) else record
            row.write([_cell(data.get(field), raw) for field in fields])
            count += 1
    return count


class _RowWriter:
    """CSV rows ending in ``\\n``, with every cell that holds a CR or an LF quoted.

    Python's writer quotes a cell only for the characters of its own line terminator, so with
    ``\\n`` a bare CR would go out unquoted and no reader could read the row back. The rows are
    made with ``\\r\\n`` (every CR and LF quoted, as well as commas and quotes) and written
    with ``\\n``."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.buffer = io.StringIO()
        self.writer = csv.writer(self.buffer, lineterminator="\r\n")

    def write(self, cells: list[str] | tuple[str, ...]) -> None:
        self.writer.writerow(cells)
        line = self.buffer.getvalue()
        self.buffer.seek(0)
        self.buffer.truncate()
        self.out.write(line[:-2] + "\n")


def _cell(value: Any, raw: bool = False) -> str:
    if isinstance(value, str):
        return value if raw else spreadsheet_safe(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)
