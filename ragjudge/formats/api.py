"""What the :mod:`ragjudge.formats` package offers besides its submodules' own names: choosing a
format (:func:`detect_format`), and reading or writing records of any kind in any format
(:func:`read_records`, :func:`write_records`).

>>> list(read_records("qrels", "q1 0 c1 2\\n", "trec"))
[Judgment(query_id='q1', chunk_id='c1', grade=2, annotator=None, note=None)]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypedDict

from pydantic import BaseModel

from ragjudge.errors import InputError, UsageError
from ragjudge.files import is_terminal
from ragjudge.formats.beir import (
    read_beir_corpus, read_beir_qrels, read_beir_queries, write_beir,
)
from ragjudge.formats.csvfile import read_csv, write_csv
from ragjudge.formats.jsonl import read_jsonl, record_dict, write_jsonl
from ragjudge.formats.records import (
    FIELDS, KINDS, AnswerLabelRecord, EntityRecord, FacetRecord, LabelRecord, NuggetRecord,
    RankedList,
)
from ragjudge.formats.smart import read_smart, smart_format
from ragjudge.formats.source import (
    EXTENSIONS, MAX_LINE_BYTES, Lines, Source, is_inline, open_output, path_kind, read_text, source_name,
)
from ragjudge.formats.trec import (
    QrelsTally, read_trec_qrels, read_trec_run, read_tsv_texts, trec_order, trec_run_rows,
    unjudged_note, write_trec_qrels, write_trec_run,
)
from ragjudge.formats.trec_sgml import (
    SGML_FORMATS, read_trec_documents, read_trec_sgml, read_trec_topics, sgml_format,
)
from ragjudge.safetext import visible

FORMATS = ("trec", "jsonl", "csv", "beir", *SGML_FORMATS, "smart")


__all__ = [
    "FIELDS", "FORMATS", "KINDS", "MAX_LINE_BYTES", "AnswerLabelRecord", "EntityRecord", "FacetRecord",
    "LabelRecord", "Lines", "NuggetRecord", "QrelsTally", "RankedList", "Source", "detect_format", "open_output",
    "path_kind", "read_beir_corpus", "read_beir_qrels", "read_beir_queries", "read_csv", "read_jsonl",
    "read_records", "read_smart", "read_text", "read_trec_documents", "read_trec_qrels", "read_trec_run",
    "read_trec_topics", "read_tsv_texts",
    "record_dict", "source_name", "trec_order", "trec_run_rows", "unjudged_note", "write_beir", "write_csv",
    "write_jsonl", "write_records", "write_trec_qrels", "write_trec_run",
]


def detect_format(source: Source, kind: str | None = None) -> str:
    """``trec``, ``jsonl``, ``csv``, ``beir``, ``trec-sgml``, ``trec-topics`` or ``smart`` for
    ``source``: a folder is BEIR; otherwise the extension decides (``.gz`` stripped first: ``.trec
    .qrels .txt .run .tsv`` → trec, ``.jsonl .json .ndjson`` → jsonl, ``.csv`` → csv); failing
    that, the first non-blank line does (``{`` → jsonl, a header of known field names → csv, a
    first tag ``<DOC>`` → trec-sgml, ``<top>`` → trec-topics, ``.I 1`` or an NPL record → smart,
    else trec). Queries and chunks in a trec-named file (TREC ships topics as ``.txt`` as often
    as not) are SGML or SMART when their first lines say so. SMART's relevance files are TREC
    here: the qrels reader recognises their ``query doc 0 0``."""
    if isinstance(source, (str, Path)) and not is_inline(source) and str(source) != "-":
        path = Path(source)
        found = path_kind(path)
        if found == "folder":
            return "beir"
        name = path.name.lower()
        if name.endswith(".gz"):
            name = name[:-3]
        suffix = Path(name).suffix
        if suffix in EXTENSIONS:
            if EXTENSIONS[suffix] == "trec" and kind in ("queries", "chunks"):
                return sgml_format(source) or ("smart" if smart_format(source) else "trec")
            return EXTENSIONS[suffix]
        if found == "missing":
            raise InputError("the file does not exist.", file=str(source))
    elif not is_inline(source):
        return "trec" if kind in ("run", "qrels") else "jsonl"
    return _sniff(source, kind)


def _sniff(source: Source, kind: str | None) -> str:
    for _, text in Lines(source):
        stripped = text.strip()
        if not stripped:
            continue
        if stripped.startswith(("{", "[")):
            return "jsonl"
        if stripped.startswith("<") and (sgml := sgml_format(source)):
            return sgml
        if kind not in ("run", "qrels", "labels") and smart_format(source):
            return "smart"
        cells = [cell.strip().strip('"') for cell in stripped.split(",")]
        known = {f for fields in FIELDS.values() for f in fields}
        if len(cells) > 1 and all(cell in known for cell in cells):
            return "csv"
        if kind in ("queries", "chunks") and "\t" in stripped:
            return "trec"  # id<TAB>text, as TREC and MS MARCO ship one-line topics
        return "trec" if kind in (None, "run", "qrels") else "jsonl"
    return "jsonl"


def read_records(kind: str, source: Source, fmt: str = "auto", *, name: str | None = None,
                 check_duplicates: bool = True, numbered: bool = False,
                 tally: QrelsTally | None = None) -> Iterator[Any]:
    """Records of ``kind`` (one of :data:`KINDS`) from ``source`` in format ``fmt``.

    ``numbered`` yields ``(line, record)`` pairs. TREC holds runs and qrels (labels and qrels are
    read alike; 4 fields, 3, or SMART's ``query doc 0 0``: see
    :func:`~ragjudge.formats.trec.read_trec_qrels`), and queries or chunks as ``id<TAB>text``
    lines (MS MARCO's ``.tsv``); BEIR folders give queries (``queries.jsonl``), chunks
    (``corpus.jsonl``) and qrels (``qrels/*.tsv``); SMART files give queries and chunks
    (:mod:`~ragjudge.formats.smart`) and qrels.

    ``tally`` (qrels and labels) is told, once the records are read, how a TREC or SMART qrels
    file was read and how many lines had a negative grade, in any format: an import then says
    "N lines with a negative grade were read as unjudged" (:meth:`QrelsTally.notes`).
    """
    if kind not in KINDS:
        raise UsageError(f"unknown kind of record '{kind}'; one of: {', '.join(KINDS)}.")
    fmt = detect_format(source, kind) if fmt == "auto" else fmt
    records = _records(kind, source, fmt, name, check_duplicates, numbered, tally)
    if tally is not None and kind in ("qrels", "labels"):
        return _tallied(records, tally, numbered)
    return records


def _tallied(records: Iterator[Any], tally: QrelsTally, numbered: bool) -> Iterator[Any]:
    for item in records:
        line, record = item if numbered else (None, item)
        tally.count(record.grade, line)
        yield item


class _ReadOptions(TypedDict):
    """The options every reader takes."""

    check_duplicates: bool
    numbered: bool


def _records(kind: str, source: Source, fmt: str, name: str | None, check_duplicates: bool,
             numbered: bool, tally: QrelsTally | None) -> Iterator[Any]:
    options: _ReadOptions = {"check_duplicates": check_duplicates, "numbered": numbered}
    if fmt == "smart":
        if kind in ("qrels", "labels"):
            judgments = read_trec_qrels(source, name=name, form="smart", tally=tally, **options)
            return _as_labels(judgments, kind, numbered)
        return read_smart(kind, source, name=name, **options)
    if fmt == "trec":
        if kind == "run":
            return read_trec_run(source, name=name, **options)
        if kind in ("qrels", "labels"):
            return _as_labels(read_trec_qrels(source, name=name, tally=tally, **options), kind, numbered)
        if kind in ("queries", "chunks"):
            return read_tsv_texts(kind, source, name=name, **options)
        raise UsageError(f"{kind} cannot be read from TREC format; give JSONL or CSV "
                         f"(--format jsonl or csv).")
    if fmt == "jsonl":
        return read_jsonl(kind, source, name=name, **options)
    if fmt == "csv":
        return read_csv(kind, source, name=name, **options)
    if fmt in SGML_FORMATS:
        return read_trec_sgml(kind, source, fmt, name=name, **options)
    if fmt == "beir":
        if not isinstance(source, (str, Path)):
            raise UsageError("a BEIR source is a folder.")
        if kind == "queries":
            return read_beir_queries(source, **options)
        if kind == "chunks":
            return read_beir_corpus(source, **options)
        if kind in ("qrels", "labels"):
            qrels = read_beir_qrels(source, **options)
            if numbered:
                qrels = ((line, judgment) for _, line, judgment in qrels)
            return _as_labels(qrels, kind, numbered)
        raise UsageError(f"{source_name(source)} is read as a BEIR dataset (a folder), which holds "
                         f"no {kind}; give a TREC, JSONL or CSV file.")
    raise UsageError(f"unknown format '{fmt}'; one of: auto, {', '.join(FORMATS)}.")


def _as_labels(judgments: Iterator[Any], kind: str, numbered: bool) -> Iterator[Any]:
    if kind == "qrels":
        return judgments

    def convert(judgment: Any) -> LabelRecord:
        return LabelRecord(query_id=judgment.query_id, chunk_id=judgment.chunk_id, grade=judgment.grade)

    if numbered:
        return ((line, convert(j)) for line, j in judgments)
    return (convert(j) for j in judgments)


def write_records(kind: str, records: Iterable[Any], dest: Any, fmt: str, *, tag: str = "ragjudge",
                  raw: bool = False) -> int:
    """Write ``records`` of ``kind`` to ``dest`` (a path, ``-`` or a text file) in ``fmt``;
    returns the number written.

    In CSV a text cell a spreadsheet would run as a formula (``=…``, ``+…``, ``-…``, ``@…``) is
    written with a ``'`` before it; ``raw`` writes every cell exactly (see
    :mod:`ragjudge.formats.csvfile`).

    Shown on a terminal, every text field goes through :func:`ragjudge.safetext.visible`, so that
    a note or an id cannot send control sequences to it; anywhere else (a file, a pipe) the
    bytes are written exactly as stored."""
    if is_terminal(dest):
        multiline = fmt == "jsonl"  # JSON escapes a line break; in TREC and CSV it would split the row
        records = (visible_fields(record, multiline) for record in records)
        tag = visible(tag)
    if fmt == "jsonl":
        return write_jsonl(records, dest, kind=kind)
    if fmt == "csv":
        return write_csv(records, dest, kind=kind, raw=raw)
    if fmt == "trec":
        if kind == "run":
            return write_trec_run(records, dest, tag=tag)
        if kind in ("qrels", "labels"):
            return write_trec_qrels(records, dest)
        raise UsageError(f"{kind} cannot be written in TREC format; use --format jsonl or csv.")
    raise UsageError(f"unknown output format '{fmt}'; one of: trec, jsonl, csv.")


def visible_fields(value: Any, multiline: bool) -> Any:
    """``value`` (a record, a dict, a tuple or a list) with every string in it made visible."""
    if isinstance(value, str):
        return visible(value, multiline=multiline)
    if isinstance(value, BaseModel):
        return value.model_copy(update={name: visible_fields(field, multiline) for name, field in value
                                        if isinstance(field, (str, dict, list, tuple))})
    if isinstance(value, dict):
        return {key: visible_fields(field, multiline) for key, field in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(visible_fields(field, multiline) for field in value)
    return value
