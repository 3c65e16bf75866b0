"""The line path of the TREC reader: a qrels or run file read line by line, the definition of
what ragjudge accepts in one, and the one place its problems are worded (file, line, field).

Each line is decoded strictly as UTF-8 (:class:`ragjudge.inputs.Lines`: a byte order mark at
the start is dropped, a line longer than ``MAX_LINE_BYTES`` refused) and split where Python's
``str.split`` splits (spaces, tabs, any Unicode space); blank lines are skipped. Ids holding a
control character or a NUL are refused (:func:`ragjudge.errors.text_problem`), and numbers are
read in the one syntax of :mod:`ragjudge.numeric`.

- A qrels file's first line decides how every line is read, by its number of fields (see
  :class:`QrelsRows`): TREC's ``query_id iteration chunk_id grade``, ``query_id chunk_id
  grade``, or SMART's relevance lines ``query doc 0 0``.
- A run's lines are ``query_id Q0 chunk_id rank score tag``: the score a finite number, the
  rank an integer (at most ``MAX_RANK``; 0 read as none, as many runs count from 0; a negative
  rank refused: no retriever writes one, the column is shifted or damaged).

The fast paths of the reader (:mod:`ragjudge.metrics.trec.reader`) read a file themselves only
when they can prove they read it as this path does; every other file, and every file with a
problem, is read here. Repeated lines are the callers' business: the rows are every line's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ragjudge.errors import InputError, has_control, text_problem
from ragjudge.inputs import Lines, stdin_format_hint
from ragjudge.metrics.trec.tokens import QRELS3_FIELDS, QRELS_FIELDS, RUN_FIELDS
from ragjudge.numeric import grade_problem, parse_integer, parse_number, rank_problem
from ragjudge.safetext import quote

QRELS_FORMS = ("auto", "smart")
"""How a qrels file's lines are read: ``auto`` decides by the file (see :class:`QrelsRows`),
``smart`` reads every line as SMART's ``query doc 0 0``."""

_FIELDS_OF = {"trec": QRELS_FIELDS, "three": QRELS3_FIELDS,
              "smart": ("query_id", "chunk_id", "iteration", "grade")}
_IDS = frozenset({"query_id", "chunk_id"})
_ZERO = re.compile(r"0+(\.0*)?")
AMBIGUOUS = ("every line is 'query X 0 0' with the same X: as TREC qrels ('query iteration "
             "chunk grade') it judges one chunk '0' not relevant, as a SMART relevance file "
             "(CACM, CISI) it says document X is relevant. Say which: write it as "
             "'query chunk grade' (3 fields), or read it as SMART (--format smart).")
NOT_SMART = ("a SMART relevance line is 'query doc 0 0' (as CACM's qrels.text and CISI.REL); "
             "this one's last two fields are not zeros. A file with grades is read as TREC "
             "qrels ('query 0 chunk grade' or 'query chunk grade').")

QrelsRow = tuple[int, str, str, int]
"""``(line, query_id, chunk_id, grade)``"""
RunRow = tuple[int, str, str, "int | None", float]
"""``(line, query_id, chunk_id, rank or None, score)``"""


class QrelsRows:
    """The rows ``(line, query_id, chunk_id, grade)`` of a qrels file, in file order.

    The file's first line decides how every line is read, by its number of fields; a line with
    another number is an error (never a mix):

    - 4 fields: TREC's ``query_id iteration chunk_id grade``, the iteration ignored (as
      trec_eval ignores it);
    - 3 fields: ``query_id chunk_id grade`` (Cranfield's ``cranqrel``, many course files);
    - SMART's relevance files have 4 fields too, ``query doc 0 0`` (CACM's ``qrels.text``),
      ``query doc 0 0.000000`` (CISI's ``CISI.REL``): every pair listed is relevant and the
      zeros mean nothing. Read as TREC, every line would judge one chunk ``0`` not relevant
      (trec_eval stops at the duplicate chunk). So a file whose every line has ``0`` as third
      field and a zero (``0``, ``0.0``...) as fourth is read as SMART when its second fields
      differ: each pair ``query doc`` has grade 1, and ids of digits lose their leading zeros
      as SMART's ``.I`` ids do (``01`` is query ``1``). When every second field is the same,
      the file reads both ways and is refused: say which (``form='smart'``, or 3 fields
      ``query chunk grade``). ``form='smart'`` reads every line as SMART, and refuses a line
      that is not ``query doc 0 0``.

    Until a line shows the file is TREC, lines of SMART's shape are held back (a SMART file is
    held whole: they are small). ``form`` is how the lines were read (``trec``, ``three`` or
    ``smart``) once they are.
    """

    def __init__(self, source: Any, *, name: str | None = None, form: str = "auto") -> None:
        if form not in QRELS_FORMS:
            raise ValueError(f"unknown qrels form {form!r}")
        self.lines = Lines(source, name=name)
        self.asked = form
        self.form = "smart" if form == "smart" else "trec"

    def __iter__(self) -> Iterator[QrelsRow]:
        file = self.lines.name
        width = first = 0
        held: list[tuple[int, list[str], str]] | None = None  # SMART-shaped lines, form undecided
        for number, text in self.lines:
            parts = text.split()
            if not parts:
                continue
            if not width:
                width, first = len(parts), number
                _check_width(parts, text, file, number, self.asked)
                self.form = "smart" if self.asked == "smart" else ("three" if width == 3 else "trec")
                if self.asked == "auto" and width == 4 and smart_shaped(parts):
                    held = []
            elif len(parts) != width:
                raise InputError(
                    f"the line has {len(parts)} fields where the file's first line (line "
                    f"{first:,}) has {width} fields: every line of a qrels file has as many fields "
                    f"as its first. {quote(text)}.", file=file, line=number)
            if held is not None:
                if smart_shaped(parts):
                    held.append((number, parts, text))
                    continue
                for line, fields, whole in held:  # a TREC file after all
                    yield _row(fields, whole, "trec", file, line)
                held = None
            yield _row(parts, text, self.form, file, number)
        if held:
            if len({parts[1] for _, parts, _ in held}) == 1:
                raise InputError(AMBIGUOUS, file=file, line=held[0][0])
            self.form = "smart"
            for line, fields, whole in held:
                yield _row(fields, whole, "smart", file, line)


def _check_width(parts: list[str], text: str, file: str, number: int, form: str) -> None:
    if form == "smart" and len(parts) != 4:
        raise InputError(f"a SMART relevance line has 4 fields 'query doc 0 0', this one has "
                         f"{len(parts)}: {quote(text)}.", file=file, line=number)
    if len(parts) not in (3, 4):
        raise InputError(
            f"a qrels line has 4 fields 'query_id 0 chunk_id grade' (or 3: 'query_id chunk_id "
            f"grade'), this one has {len(parts)}: {quote(text)}.", file=file, line=number,
            hint=stdin_format_hint(file, number))


def smart_shaped(parts: list[str]) -> bool:
    """Whether a line's fields are SMART's ``query doc 0 0`` (the last a zero, ``0.000000``)."""
    return len(parts) == 4 and parts[2] == "0" and _ZERO.fullmatch(parts[3]) is not None


def _row(parts: list[str], text: str, form: str, file: str, number: int) -> QrelsRow:
    """The row of one line read as ``form``."""
    if has_control(text):  # one test of the whole line keeps this path fast
        check_fields(_FIELDS_OF[form], parts, file, number)
    if form == "smart":
        if not smart_shaped(parts):
            raise InputError(NOT_SMART, file=file, line=number, field="grade")
        return number, smart_id(parts[0]), smart_id(parts[1]), 1
    if form == "three":
        return number, parts[0], parts[1], read_grade(parts[2], file, number)
    return number, parts[0], parts[2], read_grade(parts[3], file, number)


def check_fields(fields: tuple[str, ...], parts: list[str], file: str, number: int) -> None:
    """Refuse a field holding a NUL, or an id holding a control character, naming it."""
    for field, value in zip(fields, parts):
        problem = text_problem(value, name=field in _IDS, ident=field in _IDS)
        if problem is not None:
            raise InputError(f"the value {problem}", file=file, line=number, field=field)


def read_grade(text: str, file: str, number: int) -> int:
    """A grade column: an ASCII integer within the bounds of every grade."""
    grade = parse_integer(text)
    if grade is None:
        raise InputError(f"{quote(text)} is not an integer grade.", file=file, line=number,
                         field="grade")
    problem = grade_problem(grade)
    if problem:
        raise InputError(problem, file=file, line=number, field="grade")
    return grade


def smart_id(ident: str) -> str:
    """A SMART id as ragjudge keeps it: ASCII digits lose their leading zeros (``.I 001``, the
    ``01`` of CACM's qrels.text are ``1``; ``0`` stays ``0``); any other id is kept as it is."""
    if ident.isascii() and ident.isdigit():
        return ident.lstrip("0") or "0"
    return ident


def run_rows(source: Any, *, name: str | None = None) -> Iterator[RunRow]:
    """The rows ``(line, query_id, chunk_id, rank, score)`` of a TREC run, in file order
    (``rank`` None when below 1)."""
    lines = Lines(source, name=name)
    file = lines.name
    isfinite = math.isfinite
    for number, text in lines:
        parts = text.split()
        if len(parts) != 6:
            if not parts:
                continue
            raise InputError(
                f"a run line has 6 fields 'query_id Q0 chunk_id rank score tag', this one has "
                f"{len(parts)}: {quote(text)}.", file=file, line=number,
                hint=stdin_format_hint(file, number))
        if has_control(text):  # one test of the whole line keeps this path fast
            check_fields(RUN_FIELDS, parts, file, number)
        qid, _, docid, rank_text, score_text, _tag = parts
        rank = _rank(rank_text, file, number)
        score = parse_number(score_text)
        if score is None:
            raise InputError(f"{quote(score_text)} is not a number.", file=file, line=number,
                             field="score", hint=stdin_format_hint(file, number))
        if not isfinite(score):
            raise InputError(f"the score is {score_text}; scores must be finite numbers.",
                             file=file, line=number, field="score")
        yield number, qid, docid, (rank if rank >= 1 else None), score


def _rank(text: str, file: str, number: int) -> int:
    rank = parse_integer(text)
    if rank is None:
        raise InputError(f"{quote(text)} is not an integer rank.", file=file, line=number,
                         field="rank", hint=stdin_format_hint(file, number))
    too_high = rank_problem(rank)
    if too_high:
        raise InputError(too_high, file=file, line=number, field="rank")
    if rank < 0:
        raise InputError(f"the rank {text} is negative: ranks count from 1 (a run that counts "
                         "from 0 may say 0).", file=file, line=number, field="rank")
    return rank


@dataclass
class QrelsTally:
    """What a qrels reader saw besides the judgments it yields: how it read the lines
    (``form``: ``trec``, ``three`` or ``smart``, see :class:`QrelsRows`), and the lines with
    a negative grade (``negative``, the first at line ``first_negative``), which trec_eval reads
    as in the pool but not judged (:func:`unjudged_note`). :func:`ragjudge.formats.read_records`
    counts the negative grades of every format, :class:`~ragjudge.metrics.trec.QrelsArrays`
    those of a TREC file."""

    form: str | None = None
    negative: int = 0
    first_negative: int | None = None

    def count(self, grade: int | None, line: int | None) -> None:
        if grade is not None and grade < 0:
            self.negative += 1
            if self.first_negative is None:
                self.first_negative = line

    def notes(self, *, then: str = "") -> list[str]:
        """The sentences an import or an evaluation adds to its summary about the file
        (``then``: what became of the negative grades' lines, see :func:`unjudged_note`)."""
        notes = []
        if self.form == "smart":
            notes.append("Read as a SMART relevance file ('query doc 0 0', as CACM's and CISI's): "
                         "every pair listed is relevant, grade 1.")
        elif self.form == "three":
            notes.append("Read as qrels of 3 fields ('query_id chunk_id grade').")
        if self.negative:
            notes.append(unjudged_note(self.negative, then=then))
        return notes


def unjudged_note(count: int, *, then: str = "") -> str:
    """The one wording, for imports and evaluations alike, of lines with a negative grade;
    ``then`` says what became of them (an import: ``" and not imported"``)."""
    lines = "1 line" if count == 1 else f"{count:,} lines"
    return (f"{lines} with a negative grade {'was' if count == 1 else 'were'} read as "
            f"unjudged{then} (trec_eval's convention: in the pool, not judged).")
