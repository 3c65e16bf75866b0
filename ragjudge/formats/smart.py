"""SMART's test collections: the documents and queries of CACM, CISI, MED, Cranfield, ADI, NPL
and their kin, as chunks and queries.

**The dot form** (CACM, CISI, MED, Cranfield, ADI). A record starts with a line ``.I <id>``;
its fields follow, each a line holding a dot and one upper-case letter, the field's text on the
lines after it, up to the next such line::

    .I 1
    .T
    Preliminary Report-International Algebraic Language
    .A
    Perlis, A. J.
    .W
    ...

=====  =============================  ==========================================
field  meaning                        becomes
=====  =============================  ==========================================
``W``  the text (abstract, query)     the record's ``text``
``T``  the title                      ``meta.title``; the ``text`` if no ``.W``
``A``  the authors                    ``meta.authors``
``B``  the bibliographic entry        ``meta.bibliography``
``X``  the cross-references           ``meta.references``
``K``  the keywords                   ``meta.keywords``
``C``  the classification categories  ``meta.categories``
``N``  the entry note (date, person)  ``meta.notes``
=====  =============================  ==========================================

A document is one chunk, shaped as a BEIR corpus document is: its text is the ``.W``, its title
in ``meta.title`` (the judging screen shows it above the text), its ``doc_id`` its id. A record
without ``.W`` (a third of CACM's documents have only a title) takes its title as its text, so
that no chunk is empty, and then has no ``meta.title`` (the screen would show it twice).
A field's text keeps its line breaks; blanks at the end of each line (MED pads its lines to 72
columns) and blank lines around the text are dropped. A field given twice in one record (CISI
gives each author an ``.A``; two Cranfield records have two ``.W``) is kept whole: the texts
joined by a blank line, the other fields as a list in ``meta``, as TREC SGML's are.

Ids are the SMART record numbers: an id of ASCII digits loses its leading zeros (Cranfield's
queries are ``.I 001``, CACM's relevance file says ``01``: both are ``1``), so that documents,
queries and relevance files meet. Lines may end with CR-LF (Cranfield's do); ``.I 1`` and
``.I   1`` are the same line.

Refused, with the file, the line and the field: text before the first ``.I``; a ``.I`` without
an id or with more than one; text between ``.I`` and the record's first field; a field letter
SMART does not have (``.Z``, or ``.w`` in lower case: SMART's fields are upper case, and a
misspelt field would silently become text); text on a field's own line (``.T Title``, a form no
SMART file uses; most likely a text line beginning with a dot); a query with neither ``.W`` nor
``.T`` text. A document whose fields are all empty (Cranfield's 471 and 995) is a chunk with
empty text, as a BEIR document without text is: the relevance files may name it. A record with
no field line at all at the end of the file is an end marker and skipped (CACM's
``query.text`` ends with ``.I 0``); anywhere else it is refused. The same id twice with the same
fields is read once, with different ones it is refused (:class:`~ragjudge.formats.records.Duplicates`).

**The NPL form** (NPL's ``doc-text`` and ``query-text``): a record is its number on a line of its
own, its text on the lines after, and a line holding only ``/``. Records read as the dot form's
do (text only, no fields); a record the file ends before its ``/`` is refused (a cut file).

**Relevance files** are read by the qrels reader (:func:`ragjudge.formats.trec.read_trec_qrels`):
SMART's ``query doc 0 0`` (CACM, CISI) is recognised there, and ``--format smart`` says so for a
file too short to tell. NPL's ``rlv-ass`` (a query number, then its documents over several lines,
then ``/``) and the TIME collection's ``*TEXT`` records are not read: convert them to
``query doc grade`` lines and JSONL, respectively. Cranfield's ``cranqrel`` numbers its queries
1 to 225 in the order of ``cran.qry``, whose ``.I`` run from 001 to 365 with gaps: number the
queries in file order before importing, or the relevance and the queries will not meet.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ragjudge.errors import InputError, UsageError
from ragjudge.formats.records import Duplicates, build, plain_record, short
from ragjudge.formats.source import Lines, Source
from ragjudge.formats.trec import smart_id

FIELDS = {"T": "title", "A": "authors", "B": "bibliography", "W": "text", "X": "references",
          "K": "keywords", "C": "categories", "N": "notes"}
"""SMART's field letters and the names they have in ragjudge (``W`` is the text, every other
goes into ``meta``)."""

_ID_LINE = re.compile(r"\.I(?:[ \t]+(.*?))?[ \t]*")
_FIELD_LINE = re.compile(r"\.([A-Za-z])[ \t]*")
_TEXT_ON_FIELD_LINE = re.compile(r"\.([A-HJ-Z])[ \t]+\S")
_NUMBER = re.compile(r"[ \t]*([0-9]+)[ \t]*")
_SLASH = re.compile(r"[ \t]*/[ \t]*")
_KNOWN = ", ".join(f".{letter} ({name})" for letter, name in FIELDS.items())
_SNIFF_LINES = 10_000


class _Record:
    """A record being read: its id, the line of its ``.I``, and its fields' lines."""

    def __init__(self, ident: str, line: int) -> None:
        self.id = ident
        self.line = line
        self.fields: list[tuple[str, list[str]]] = []

    def open(self, letter: str) -> None:
        self.fields.append((letter, []))

    def add(self, text: str) -> None:
        self.fields[-1][1].append(text)


def read_smart(kind: str, source: Source, *, name: str | None = None, check_duplicates: bool = True,
               numbered: bool = False) -> Iterator[Any]:
    """Yield the chunks (documents) or queries of a SMART file, in either form (``numbered``:
    ``(line, record)`` with the line where the record starts)."""
    if kind not in ("queries", "chunks"):
        raise UsageError(f"a SMART collection's files hold documents (import them as chunks), "
                         f"queries and relevance (qrels), not {kind}.")
    lines = Lines(source, name=name)
    duplicates = Duplicates(kind, lines.name) if check_duplicates else None
    records = _records(lines)
    for record, last in records:
        built = _built(kind, record, lines.name, last)
        if built is None or (duplicates is not None and duplicates.seen(built, record.line)):
            continue
        yield (record.line, built) if numbered else built


def _records(lines: Lines) -> Iterator[tuple[_Record, bool]]:
    """The records of either form, each with whether it is the file's last."""
    numbered = ((number, text.rstrip()) for number, text in lines)
    for number, text in numbered:
        if not text.strip():
            continue
        first = number, text
        break
    else:
        return
    reader = _npl_records if _NUMBER.fullmatch(first[1]) else _dot_records
    previous = None
    for record in reader(_chain(first, numbered), lines.name):
        if previous is not None:
            yield previous, False
        previous = record
    if previous is not None:
        yield previous, True


def _chain(first: tuple[int, str], rest: Iterator[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    yield first
    yield from rest


def _dot_records(lines: Iterator[tuple[int, str]], file: str) -> Iterator[_Record]:
    record: _Record | None = None
    for number, text in lines:
        if text.startswith("."):
            ident = _ID_LINE.fullmatch(text)
            if ident is not None:
                if record is not None:
                    yield record
                record = _Record(_record_id(ident.group(1), file, number), number)
                continue
            field = _FIELD_LINE.fullmatch(text)
            if field is not None:
                if record is None:
                    raise _before_first_id(file, number)
                record.open(_letter(field.group(1), file, number))
                continue
            written = _TEXT_ON_FIELD_LINE.match(text)
            if written is not None and written.group(1) in FIELDS:
                raise InputError(
                    f"{short(text)} holds text on the line of field .{written.group(1)}; in a "
                    "SMART file a field's line holds the field alone, its text on the lines after. "
                    "If this is a line of text that begins with a dot, put a space before it.",
                    file=file, line=number, field=f".{written.group(1)}")
        if record is None:
            if text.strip():
                raise _before_first_id(file, number)
            continue
        if not record.fields:
            if text.strip():
                raise InputError(f"text after '.I {record.id}' before any field line: the record's "
                                 f"text belongs after a field line such as .W. {short(text)}.",
                                 file=file, line=number)
            continue
        record.add(text)
    if record is not None:
        yield record


def _record_id(written: str | None, file: str, line: int) -> str:
    if not written:
        raise InputError("the .I line has no id: a SMART record starts with '.I <id>'.",
                         file=file, line=line, field=".I")
    if len(written.split()) > 1:
        raise InputError(f"the .I line holds more than an id: {short(written)}.", file=file,
                         line=line, field=".I")
    return smart_id(written)


def _letter(letter: str, file: str, line: int) -> str:
    if letter in FIELDS:
        return letter
    case = " (SMART's fields are upper case)" if letter.upper() in FIELDS else ""
    raise InputError(f"unknown SMART field .{letter}{case}; the fields are {_KNOWN}.",
                     file=file, line=line, field=f".{letter}")


def _before_first_id(file: str, line: int) -> InputError:
    return InputError("text before the first .I line: a SMART file is records that each start "
                      "with '.I <id>'.", file=file, line=line)


def _npl_records(lines: Iterator[tuple[int, str]], file: str) -> Iterator[_Record]:
    record: _Record | None = None
    for number, text in lines:
        if record is None:
            if not text.strip():
                continue
            ident = _NUMBER.fullmatch(text)
            if ident is None:
                raise InputError(f"an NPL record starts with its number on a line of its own, "
                                 f"not {short(text.strip())}.", file=file, line=number)
            record = _Record(smart_id(ident.group(1)), number)
            record.open("W")
        elif _SLASH.fullmatch(text):
            yield record
            record = None
        else:
            record.add(text)
    if record is not None:
        raise InputError("the file ends inside this record: an NPL record ends with a line "
                         "holding only '/'. Is the file cut short?", file=file, line=record.line)


def _built(kind: str, record: _Record, file: str, last: bool) -> Any:
    """The chunk or query of ``record``; None for an empty record at the end of the file."""
    if not record.fields:
        if last:
            return None
        raise InputError(f"the record '.I {record.id}' has no field; a record holds at least "
                         ".W (its text) or .T (its title).", file=file, line=record.line, field=".I")
    values: dict[str, list[str]] = {}
    for letter, text in record.fields:
        value = "\n".join(text).strip()
        if value:
            values.setdefault(letter, []).append(value)
    texts = values.pop("W", None) or values.pop("T", None) or []
    if not texts and kind == "queries":
        raise InputError(f"the query '.I {record.id}' has neither text (.W) nor title (.T).",
                         file=file, line=record.line, field=".W")
    meta: dict[str, Any] = {FIELDS[letter]: found[0] if len(found) == 1 else found
                            for letter, found in values.items()}
    fields: dict[str, Any] = {"id": record.id, "text": "\n\n".join(texts), "meta": meta or None}
    if kind == "chunks":
        fields["doc_id"] = record.id
    return plain_record(kind, fields) or build(kind, fields, file=file, line=record.line)


def smart_format(source: Source, *, name: str | None = None) -> bool:
    """Whether ``source`` is a SMART file: its first non-blank line is ``.I <id>``, or (NPL) a
    number alone and a line ``/`` closes that record within the first lines. Reads only
    those."""
    lines = iter(Lines(source, name=name))
    for _, text in lines:
        if text.strip():
            break
    else:
        return False
    if _ID_LINE.fullmatch(text.rstrip()) is not None:
        return bool(text.split()[1:])
    if _NUMBER.fullmatch(text.rstrip()) is None:
        return False
    for count, (_, text) in enumerate(lines):
        if _SLASH.fullmatch(text.rstrip()):
            return count > 0
        if count > _SNIFF_LINES or _NUMBER.fullmatch(text.rstrip()):
            return False
    return False
