"""TREC qrels (``qid 0 docid grade``) and runs (``qid Q0 docid rank score tag``) as records.

The lines are read by the TREC reader's line path (:mod:`ragjudge.metrics.trec.lines`), which
defines what a TREC file may hold and words every problem; ``eval`` and ``import`` read the
same files through the same reader (:mod:`ragjudge.metrics.trec.reader`), so the three accept
and refuse alike. Fields are separated by any whitespace; blank lines are skipped. As in
trec_eval, a run's order is its scores' order, not its rank column: score descending, ties
broken by docid descending compared as byte strings (:func:`trec_order`). The rank column must
be an integer (at most ``ragjudge.numeric.MAX_RANK``); it is kept in
:class:`~ragjudge.models.RunEntry` when it is 1 or more, ignored when it is 0 (many runs count
from 0), and refused when it is negative (no retriever writes one: the column is shifted or
damaged). Numbers are read in the one syntax of :mod:`ragjudge.numeric` (``1_0`` is no grade,
as ``2.0`` is none).

What this module adds to the rows: records (:class:`~ragjudge.models.Judgment`,
:class:`~ragjudge.models.RunEntry`), repeated lines (:class:`~ragjudge.formats.records.Duplicates`:
a repeat that says the same is read once, one that contradicts is refused), and the tally of a
qrels file (:class:`QrelsTally`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ragjudge.errors import InputError
from ragjudge.formats.records import Duplicates, check_text, short
from ragjudge.formats.source import Destination, Lines, Source, open_output, source_name
from ragjudge.metrics.trec import QRELS_FORMS, QrelsRows, QrelsTally, run_rows, smart_id, unjudged_note
from ragjudge.models import Judgment, RunEntry

__all__ = ["QRELS_FORMS", "QrelsTally", "read_trec_qrels", "read_trec_run", "read_tsv_texts",
           "smart_id", "trec_order", "trec_run_rows", "unjudged_note", "write_trec_qrels",
           "write_trec_run"]


def read_trec_qrels(source: Source, *, name: str | None = None, check_duplicates: bool = True,
                    numbered: bool = False, form: str = "auto",
                    tally: QrelsTally | None = None) -> Iterator[Any]:
    """Yield a :class:`Judgment` per line of a qrels file (``numbered``: ``(line, judgment)``).

    The file's first line decides how every line is read, by its number of fields (4: TREC's
    ``query_id iteration chunk_id grade``, 3: ``query_id chunk_id grade``, SMART's ``query doc
    0 0`` by its shape; see :class:`ragjudge.metrics.trec.QrelsRows`); ``form='smart'`` reads
    every line as SMART. ``tally`` is told the form read (:class:`QrelsTally`).

    The same pair twice with the same grade is read once; with another grade it is an error.
    """
    rows = QrelsRows(source, name=name, form=form)
    duplicates = Duplicates("qrels", rows.lines.name) if check_duplicates else None
    for number, query_id, chunk_id, grade in rows:
        judgment = Judgment(query_id=query_id, chunk_id=chunk_id, grade=grade)
        if duplicates is None or not duplicates.seen(judgment, number):
            yield (number, judgment) if numbered else judgment
    if tally is not None:
        tally.form = rows.form


def read_trec_run(source: Source, *, name: str | None = None, check_duplicates: bool = True,
                  numbered: bool = False) -> Iterator[Any]:
    """Yield a :class:`RunEntry` per line of a TREC run, in file order (``numbered``: with line).

    Every line needs six fields; the score must be a finite number and the rank an integer. A
    chunk listed twice for one query is an error (``check_duplicates``; this keeps every pair
    in memory, so huge runs are better read as arrays, as ``ragjudge import`` reads them).
    """
    duplicates = Duplicates("run", name or source_name(source)) if check_duplicates else None
    for number, qid, docid, rank, score in trec_run_rows(source, name=name):
        entry = RunEntry(query_id=qid, chunk_id=docid, score=score, rank=rank)
        if duplicates is not None:
            duplicates.seen(entry, number)
        yield (number, entry) if numbered else entry


def trec_run_rows(source: Source, *, name: str | None = None) -> Iterator[tuple[int, str, str, int | None, float]]:
    """The checked fields of each line of a TREC run as plain tuples ``(line, query_id,
    chunk_id, rank, score)`` (``rank`` None when below 1)."""
    return run_rows(source, name=name)


def trec_order(entries: Iterable[RunEntry]) -> list[RunEntry]:
    """Entries sorted as trec_eval ranks them: by query id, then score descending, ties broken
    by chunk id descending as byte strings. Entries without a score keep their order after the
    scored ones of their query (a ranked list keeps its order)."""
    ordered = sorted(entries, key=lambda e: e.chunk_id.encode("utf-8", "surrogatepass"), reverse=True)
    ordered.sort(key=lambda e: (e.score is None, -(e.score or 0.0)))
    ordered.sort(key=lambda e: e.query_id)
    return ordered


def write_trec_qrels(judgments: Iterable[Judgment | tuple[str, str, int]], dest: Destination) -> int:
    """Write ``qid 0 docid grade`` lines; returns the number written."""
    count = 0
    with open_output(dest) as out:
        for item in judgments:
            qid, docid, grade = _triple(item)
            _check_token(qid, "query_id")
            _check_token(docid, "chunk_id")
            out.write(f"{qid} 0 {docid} {int(grade)}\n")
            count += 1
    return count


def write_trec_run(entries: Iterable[RunEntry], dest: Destination, *, tag: str = "ragjudge") -> int:
    """Write ``qid Q0 docid rank score tag`` lines in the order given.

    A missing rank is the entry's position in its query; a missing score is written as
    ``-rank`` so that trec_eval's score order is the given order.
    """
    tag = "_".join(tag.split()) or "ragjudge"
    count = 0
    position = 0
    previous = None
    with open_output(dest) as out:
        for entry in entries:
            _check_token(entry.query_id, "query_id")
            _check_token(entry.chunk_id, "chunk_id")
            position = position + 1 if entry.query_id == previous else 1
            previous = entry.query_id
            rank = entry.rank if entry.rank is not None else position
            score = entry.score if entry.score is not None else -float(rank)
            out.write(f"{entry.query_id} Q0 {entry.chunk_id} {rank} {score!r} {tag}\n")
            count += 1
    return count


def _triple(item: Judgment | tuple[str, str, int]) -> tuple[str, str, int]:
    if isinstance(item, tuple):
        return item
    return item.query_id, item.chunk_id, item.grade


def _check_token(value: str, field: str) -> None:
    if not value or value.split(None, 1) != [value]:
        raise InputError(
            f"{short(value)} cannot be written in TREC format, whose fields are separated by "
            "whitespace. Export as JSONL or CSV instead.", field=field)


def read_tsv_texts(kind: str, source: Source, *, name: str | None = None,
                   check_duplicates: bool = True, numbered: bool = False) -> Iterator[Any]:
    """Queries or chunks as ``id<TAB>text`` lines (TREC topics as MS MARCO ships them:
    ``queries.tsv``, ``collection.tsv``). The text is everything after the first tab."""
    from ragjudge.models import Chunk, Query

    model = Query if kind == "queries" else Chunk
    lines = Lines(source, name=name)
    duplicates = Duplicates(kind, lines.name) if check_duplicates else None
    for number, text in lines:
        if not text.strip():
            continue
        ident, tab, body = text.partition("\t")
        if not tab:
            raise InputError(f"a {kind} line of a TSV file is 'id<TAB>text'; this one has no tab: "
                             f"{short(text)}.", file=lines.name, line=number)
        if not ident.strip():
            raise InputError("the id is empty.", file=lines.name, line=number, field="id")
        record = model(id=ident.strip(), text=body)
        check_text(record, file=lines.name, line=number)
        if duplicates is not None and duplicates.seen(record, number):
            continue
        yield (number, record) if numbered else record
