"""TREC qrels (``qid 0 docid grade``) and runs (``qid Q0 docid rank score tag``).

Fields are separated by any whitespace; blank lines are skipped. As in trec_eval, a run's order
is its scores' order, not its rank column: score descending, ties broken by docid descending
compared as byte strings (:func:`trec_order`). The rank column must be an integer (at most
``ragjudge.numeric.MAX_RANK``); it is kept in :class:`~ragjudge.models.RunEntry` when it is 1 or
more, ignored when it is 0 (many runs count from 0), and refused when it is negative (no
retriever writes one: the column is shifted or damaged). Numbers are read in the one syntax of
:mod:`ragjudge.numeric` (``1_0`` is no grade, as ``2.0`` is none).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ragjudge.errors import InputError
from ragjudge.formats.records import Duplicates, check_text, has_control, read_grade, short
from ragjudge.formats.source import Destination, Lines, Source, open_output, source_name, stdin_format_hint
from ragjudge.models import Judgment, RunEntry
from ragjudge.numeric import parse_integer, parse_number, rank_problem


_QRELS_FIELDS = ("query_id", "iteration", "chunk_id", "grade")
_RUN_FIELDS = ("query_id", "Q0", "chunk_id", "rank", "score", "tag")


def read_trec_qrels(source: Source, *, name: str | None = None, check_duplicates: bool = True,
                    numbered: bool = False, form: str = "auto",
                    tally: QrelsTally | None = None) -> Iterator[Any]:
    """Yield a :class:`Judgment` per line of a qrels file (``numbered``: ``(line, judgment)``).

    The file's first line decides how every line is read, by its number of fields, exactly as
    :func:`ragjudge.metrics.trec.read_qrels_arrays` decides for ``eval``: 4 fields are TREC's
    ``query_id iteration chunk_id grade`` (the iteration ignored, as trec_eval does), 3 are
    ``query_id chunk_id grade``, and a line with another number is an error (never a mix). A
    SMART relevance file (``query doc 0 0``: CACM's ``qrels.text``, CISI's ``CISI.REL``) is read
    as SMART when every line has that shape and the second fields differ: each pair has grade 1,
    and ids of digits lose their leading zeros (``01`` is query ``1``); with one second field on
    every line it is refused as ambiguous. ``form='smart'`` reads every line as SMART. Until a
    line shows the file is TREC, lines of SMART's shape are held back (a SMART file is held
    whole: they are small). ``tally`` is told the form read (:class:`QrelsTally`).

    The same pair twice with the same grade is read once; with another grade it is an error.
    """
    if form not in QRELS_FORMS:
        raise ValueError(f"unknown qrels form {form!r}")
    lines = Lines(source, name=name)
    file = lines.name
    duplicates = Duplicates("qrels", file) if check_duplicates else None
    width = first = 0
    held: list[tuple[int, list[str], bool]] | None = None  # SMART-shaped lines, form undecided
    read = "trec"
    for number, text in lines:
        parts = text.split()
        if not parts:
            continue
        if not width:
            width, first = len(parts), number
            _check_width(parts, text, file, number, form)
            read = "smart" if form == "smart" else ("three" if width == 3 else "trec")
            if form == "auto" and width == 4 and _smart_shaped(parts):
                held = []
        elif len(parts) != width:
            raise InputError(
                f"the line has {len(parts)} fields where the file's first line (line {first:,}) "
                f"has {width} fields: every line of a qrels file has as many fields as its "
                f"first. {short(text)}.", file=file, line=number)
        control = has_control(text)
        if held is not None:
            if _smart_shaped(parts):
                held.append((number, parts, control))
                continue
            for judgment in _held_back(held, "trec", file, duplicates, numbered):  # a TREC file after all
                yield judgment
            held = None
        judgment = _judgment(parts, read, control, file, number)
        if duplicates is None or not duplicates.seen(judgment, number):
            yield (number, judgment) if numbered else judgment
    if held:
        if len({parts[1] for _, parts, _ in held}) == 1:
            raise InputError(
                "every line is 'query X 0 0' with the same X: as TREC qrels ('query iteration "
                "chunk grade') it judges one chunk '0' not relevant, as a SMART relevance file "
                "(CACM, CISI) it says document X is relevant. Say which: write it as "
                "'query chunk grade' (3 fields), or read it as SMART (--format smart).",
                file=file, line=held[0][0])
        read = "smart"
        yield from _held_back(held, "smart", file, duplicates, numbered)
    if tally is not None:
        tally.form = read


QRELS_FORMS = ("auto", "smart")
"""How :func:`read_trec_qrels` reads a file: ``auto`` decides by the file, ``smart`` reads
every line as SMART's ``query doc 0 0``."""

_FIELDS_OF = {"trec": _QRELS_FIELDS, "three": ("query_id", "chunk_id", "grade"),
              "smart": ("query_id", "chunk_id", "iteration", "grade")}
_ZERO = re.compile(r"0+(\.0*)?")


@dataclass
class QrelsTally:
    """What a qrels reader saw besides the judgments it yields: how it read the lines
    (``form``: ``trec``, ``three`` or ``smart``, see :func:`read_trec_qrels`), and the lines with
    a negative grade (``negative``, the first at line ``first_negative``), which trec_eval reads
    as in the pool but not judged (:func:`unjudged_note`). :func:`ragjudge.formats.read_records`
    counts the negative grades of every format."""

    form: str | None = None
    negative: int = 0
    first_negative: int | None = None

    def count(self, grade: int | None, line: int | None) -> None:
        if grade is not None and grade < 0:
            self.negative += 1
            if self.first_negative is None:
                self.first_negative = line

    def notes(self) -> list[str]:
        """The sentences an import or an evaluation adds to its summary about the file."""
        notes = []
        if self.form == "smart":
            notes.append("Read as a SMART relevance file ('query doc 0 0', as CACM's and CISI's): "
                         "every pair listed is relevant, grade 1.")
        if self.negative:
            notes.append(unjudged_note(self.negative))
        return notes


def unjudged_note(count: int) -> str:
    """The one wording, for imports and evaluations alike, of lines with a negative grade."""
    lines = "1 line" if count == 1 else f"{count:,} lines"
    return (f"{lines} with a negative grade {'was' if count == 1 else 'were'} read as unjudged "
            "(trec_eval's convention: in the pool, not judged).")


def _check_width(parts: list[str], text: str, file: str, number: int, form: str) -> None:
    if form == "smart" and len(parts) != 4:
        raise InputError(f"a SMART relevance line has 4 fields 'query doc 0 0', this one has "
                         f"{len(parts)}: {short(text)}.", file=file, line=number)
    if len(parts) not in (3, 4):
        raise InputError(
            f"a qrels line has 4 fields 'query_id 0 chunk_id grade' (or 3: 'query_id chunk_id "
            f"grade'), this one has {len(parts)}: {short(text)}.", file=file, line=number,
            hint=stdin_format_hint(file, number))


def _smart_shaped(parts: list[str]) -> bool:
    return len(parts) == 4 and parts[2] == "0" and _ZERO.fullmatch(parts[3]) is not None


def _held_back(held: list[tuple[int, list[str], bool]], read: str, file: str,
               duplicates: Duplicates | None, numbered: bool) -> Iterator[Any]:
    for number, parts, control in held:
        judgment = _judgment(parts, read, control, file, number)
        if duplicates is None or not duplicates.seen(judgment, number):
            yield (number, judgment) if numbered else judgment


def _judgment(parts: list[str], read: str, control: bool, file: str, number: int) -> Judgment:
    """The judgment of one line read as ``read`` (its fields checked for control characters
    when ``control``: the line holds one)."""
    if control:
        check_text(zip(_FIELDS_OF[read], parts), file=file, line=number)
    if read == "smart":
        if not _smart_shaped(parts):
            raise InputError("a SMART relevance line is 'query doc 0 0' (as CACM's qrels.text and "
                             "CISI.REL); this one's last two fields are not zeros. A file with "
                             "grades is read as TREC qrels ('query 0 chunk grade' or 'query chunk "
                             "grade').", file=file, line=number, field="grade")
        return Judgment(query_id=smart_id(parts[0]), chunk_id=smart_id(parts[1]), grade=1)
    qid, docid, grade_text = (parts[0], parts[1], parts[2]) if read == "three" else (
        parts[0], parts[2], parts[3])
    return Judgment(query_id=qid, chunk_id=docid, grade=read_grade(grade_text, file=file, line=number))


def smart_id(ident: str) -> str:
    """A SMART id as ragjudge keeps it: ASCII digits lose their leading zeros (``.I 001``, the
    ``01`` of CACM's qrels.text are ``1``; ``0`` stays ``0``); any other id is kept as it is."""
    if ident.isascii() and ident.isdigit():
        return ident.lstrip("0") or "0"
    return ident


def read_trec_run(source: Source, *, name: str | None = None, check_duplicates: bool = True,
                  numbered: bool = False) -> Iterator[Any]:
    """Yield a :class:`RunEntry` per line of a TREC run, in file order (``numbered``: with line).

    Every line needs six fields; the score must be a finite number and the rank an integer. A
    chunk listed twice for one query is an error (``check_duplicates``; this keeps every pair
    in memory, so huge runs are better checked by the database, as ``ragjudge import`` does).
    """
    duplicates = Duplicates("run", name or source_name(source)) if check_duplicates else None
    for number, qid, docid, rank, score in trec_run_rows(source, name=name):
        entry = RunEntry(query_id=qid, chunk_id=docid, score=score, rank=rank)
        if duplicates is not None:
            duplicates.seen(entry, number)
        yield (number, entry) if numbered else entry


def trec_run_rows(source: Source, *, name: str | None = None) -> Iterator[tuple[int, str, str, int | None, float]]:
    """The checked fields of each line of a TREC run as plain tuples ``(line, query_id,
    chunk_id, rank, score)`` (``rank`` None when below 1): the fast path for bulk imports."""
    lines = Lines(source, name=name)
    isfinite = math.isfinite
    for number, text in lines:
        parts = text.split()
        if len(parts) != 6:
            if not parts:
                continue
            raise InputError(
                f"a run line has 6 fields 'query_id Q0 chunk_id rank score tag', this one has "
                f"{len(parts)}: {short(text)}.", file=lines.name, line=number,
                hint=stdin_format_hint(lines.name, number))
        if has_control(text):  # one test of the whole line keeps this path fast
            check_text(zip(_RUN_FIELDS, parts), file=lines.name, line=number)
        qid, _, docid, rank_text, score_text, _tag = parts
        rank: int | None = parse_integer(rank_text)
        if rank is None:
            raise InputError(f"{short(rank_text)} is not an integer rank.", file=lines.name,
                             line=number, field="rank",
                             hint=stdin_format_hint(lines.name, number))
        too_high = rank_problem(rank)
        if too_high:
            raise InputError(too_high, file=lines.name, line=number, field="rank")
        if rank < 0:
            raise InputError(f"the rank {rank_text} is negative: ranks count from 1 (a run that "
                             "counts from 0 may say 0).", file=lines.name, line=number,
                             field="rank")
        score = parse_number(score_text)
        if score is None:
            raise InputError(f"{short(score_text)} is not a number.", file=lines.name,
                             line=number, field="score",
                             hint=stdin_format_hint(lines.name, number))
        if not isfinite(score):
            raise InputError(f"the score is {score_text}; scores must be finite numbers.",
                             file=lines.name, line=number, field="score")
        yield number, qid, docid, (rank if rank >= 1 else None), score


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
