"""Importing labels and marks: staged in a temporary table, checked, published in one
transaction.

A line with a negative grade is not a label: trec_eval reads it as a pair in the pool that was
not judged, and so does ragjudge. It is left out (and counted in the import's notes), or, for a
complete reference (``import qrels --reference --complete``), recorded as a skip event of its
annotator: a skip is how a project says "seen, not graded", and the gold's closed world
(:func:`ragjudge.services.gold.gold.closure`) leaves the pairs a complete reference skipped
unjudged instead of making them not relevant.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
import numpy as np
from sqlalchemy import (
    Boolean, Column, DateTime, Integer, String, Table, Text, and_, false, func, insert, literal, null, or_, select, union,
)
from sqlalchemy.engine import Connection
from ragjudge.errors import InputError
from ragjudge.formats.source import Source
from ragjudge.formats.trec import QrelsTally
from ragjudge.services.project import columns as bulk
from ragjudge.services.project.staging import ImportSession
from ragjudge.store.annotators import ensure_annotators
from ragjudge.store.schema import (
    Annotator, Label, PairMark, utcnow,
)
from datetime import UTC
from ragjudge.services.transfer.common import BATCH, ImportResult, Progress, batches, check_annotator, numbered, temp_table
from ragjudge.services.transfer.definitions import ReferenceCheck, check_long_ids, too_long, too_long_key


labels_table = Label.__table__


marks_table = PairMark.__table__


annotators_table = Annotator.__table__


class LabelImport:
    """A qrels or labels file: its lines staged in a temporary table (each checked as it
    always was), their ids checked, then the label and mark events that change something
    written in one transaction."""

    def __init__(self, session: ImportSession, file: str, annotator: str, scale: Any,
                 create_missing: bool, result: ImportResult,
                 pending: dict[str, Table] | None = None, keep_unjudged: bool = False) -> None:
        self.session = session
        self.keep_unjudged = keep_unjudged  # negative grades recorded as skips (a complete reference)
        self.unjudged = 0  # lines with a negative grade
        self.staged = 0
        self.file = file
        self.annotator = annotator
        self.scale = scale
        self.create_missing = create_missing
        self.result = result
        self.pending = pending
        self.annotators: set[str] = set()
        self.known: dict[str, str] = {}  # annotator names of the lines, as checked
        self.marked = False  # whether any line has a flag or comment: else their SQL is left out
        self.names = ("line", "query_id", "chunk_id", "annotator", "grade", "note", "created_at",
                      "flagged", "flag_note", "comment", "skipped")
        with session.stage() as connection:
            self.stage_table = temp_table(
                connection, Column("line", Integer), Column("query_id", String()),
                Column("chunk_id", String()), Column("annotator", String()), Column("grade", Integer),
                Column("note", Text), Column("created_at", DateTime), Column("flagged", Boolean),
                Column("flag_note", Text), Column("comment", Text), Column("skipped", Boolean))
        mark = "?" if session.sqlite else "%s"
        self.sql = (f"INSERT INTO {self.stage_table.name} ({', '.join(self.names)}) "
                    f"VALUES ({', '.join([mark] * len(self.names))})")
        self.refs: ReferenceCheck | None = None

    def stage_file(self, kind: str, source: Source, fmt: str, progress: Progress | None) -> None:
        """A file's lines: a TREC or SMART qrels file as columns, any other through the record
        readers (and a qrels file the columns cannot take: a pair twice, a grade off the scale)."""
        tally = QrelsTally()
        if fmt in ("trec", "smart"):
            source = bulk.materialize(source)
            columns = bulk.trec_qrels(source, self.file, "smart" if fmt == "smart" else "auto",
                                      self.scale.min, self.scale.max)
            if columns is not None:
                self._stage_columns(columns, progress)
                tally.form = columns.form
                self._note(tally)
                return
        with numbered(kind, source, fmt, self.file, progress, tally=tally) as records:
            self.stage_records(records)
        self._note(tally)

    def _note(self, tally: QrelsTally) -> None:
        """What the import says about the file: how a TREC file's lines were read (3 fields,
        SMART), and its lines with a negative grade."""
        tally.negative = self.unjudged
        then = (" and recorded as skipped, which keeps them out of --complete's closed world"
                if self.keep_unjudged else " and not imported")
        self.result.notes.extend(tally.notes(then=then))

    def _stage_columns(self, columns: bulk.QrelsColumns, progress: Progress | None) -> None:
        skips = len(columns.unjudged_lines) if self.keep_unjudged else 0
        query_ids, chunk_ids, lines = columns.query_ids, columns.chunk_ids, columns.lines
        if skips:
            query_ids = np.concatenate([query_ids, columns.unjudged[0]]) if len(columns) else columns.unjudged[0]
            chunk_ids = np.concatenate([chunk_ids, columns.unjudged[1]]) if len(columns) else columns.unjudged[1]
            lines = np.concatenate([lines, columns.unjudged_lines])
        check_long_ids(query_ids, chunk_ids, lines, self.file)
        self.unjudged = len(columns.unjudged_lines)
        n = len(lines)
        self.result.read = len(columns) + self.unjudged
        self.staged = n
        if n:
            self.annotators.add(self.annotator)
        queries, chunks = bulk.decode(query_ids), bulk.decode(chunk_ids)
        grades = columns.grades.tolist() + [None] * skips
        skipped = [None] * len(columns) + [True] * skips
        numbers = lines.tolist()
        for at in range(0, n, BATCH * 10):
            rows = [(numbers[i], queries[i], chunks[i], self.annotator, grades[i], None, None, None,
                     None, None, skipped[i]) for i in range(at, min(n, at + BATCH * 10))]
            with self.session.stage() as connection:
                self.session.write_rows(connection, self.sql, rows, self.stage_table.name, self.names)
            if progress is not None:
                progress(min(n, at + BATCH * 10), n, f"qrels {self.file}: staging", "lines")

    def stage_records(self, records: Iterable[tuple[int, Any]]) -> None:
        file, scale = self.file, self.scale
        for batch in batches(records):
            rows: list[tuple[Any, ...]] = []
            for line, record in batch:
                if too_long_key(record.query_id) or too_long_key(record.chunk_id):
                    too_long(record.query_id, record.chunk_id, file, line)
                skip = record.grade is not None and record.grade < 0  # unjudged, see the module
                if skip:
                    self.unjudged += 1
                    if not self.keep_unjudged:
                        continue
                elif record.grade is not None and not scale.contains(record.grade):
                    raise InputError(
                        f"grade {record.grade} is off the project's scale {scale.min}-{scale.max}. "
                        "Nothing was imported.", file=file, line=line, field="grade")
                who = self.annotator if record.annotator is None else self.known.get(record.annotator)
                if who is None:
                    who = self.known[record.annotator] = check_annotator(record.annotator, file=file, line=line)
                self.annotators.add(who)
                if skip:
                    rows.append((line, record.query_id, record.chunk_id, who, None, None, None, None,
                                 None, None, True))
                    continue
                created = getattr(record, "created_at", None)
                if created is not None and created.tzinfo is not None:
                    created = created.astimezone(UTC).replace(tzinfo=None)
                flagged = getattr(record, "flagged", None)
                comment = getattr(record, "comment", None)
                rows.append((line, record.query_id, record.chunk_id, who, record.grade, record.note,
                             created, flagged, getattr(record, "flag_note", None), comment, None))
                self.marked = self.marked or flagged is not None or comment is not None
            with self.session.stage() as connection:
                self.session.write_rows(connection, self.sql, rows, self.stage_table.name, self.names)
            self.staged += len(rows)
            self.result.read += len(batch)

    def check(self) -> None:
        """Ids the project lacks: refused (or, with ``create_missing``, made at the publish).
        Then what changes something, found outside the write lock: the label events (a line
        identical to the annotator's current label adds nothing) and the flag and comment
        events, kept in temporary tables for :meth:`publish` to copy."""
        if self.staged == 0:
            return
        with self.session.read() as connection:
            self.refs = ReferenceCheck(connection, self.create_missing, self.result)
            self.refs.check_staged(self.stage_table, self.pending)
            self.refs.raise_if_missing(self.file)
        with self.session.stage() as connection:
            self._changes(connection)

    def _changes(self, connection: Connection) -> None:
        stage = self.stage_table
        newest = (select(func.max(labels_table.c.id)).where(
            labels_table.c.annotator == stage.c.annotator, labels_table.c.query_id == stage.c.query_id,
            labels_table.c.chunk_id == stage.c.chunk_id).scalar_subquery())
        current = labels_table.alias("current")
        changed = or_(
            current.c.id.is_(None), current.c.grade.is_(None), current.c.grade != stage.c.grade,
            current.c.skipped.is_(True),
            and_(stage.c.note.is_not(None), or_(current.c.note.is_(None), current.c.note != stage.c.note)),
        )
        changed = and_(stage.c.grade.is_not(None), changed)
        # a negative grade of a complete reference: a skip, unless the pair's newest event is one
        skip = and_(stage.c.skipped.is_(True),
                    or_(current.c.id.is_(None), current.c.grade.is_not(None), current.c.skipped.is_not(True)))
        when = func.coalesce(stage.c.created_at, literal(utcnow(), DateTime))
        self.new_labels = temp_table(
            connection, Column("line", Integer), Column("query_id", String()), Column("chunk_id", String()),
            Column("annotator", String()), Column("grade", Integer), Column("note", Text),
            Column("created_at", DateTime), Column("skipped", Boolean))
        connection.execute(insert(self.new_labels).from_select(
            ["line", "query_id", "chunk_id", "annotator", "grade", "note", "created_at", "skipped"],
            select(stage.c.line, stage.c.query_id, stage.c.chunk_id, stage.c.annotator, stage.c.grade,
                   stage.c.note, when, func.coalesce(stage.c.skipped, false()))
            .select_from(stage.outerjoin(current, current.c.id == newest)).where(or_(changed, skip))))
        changes = _mark_changes(stage) if self.marked else ()
        self.new_marks = None
        if changes:
            self.new_marks = temp_table(
                connection, Column("seq", Integer, primary_key=True), Column("line", Integer),
                Column("query_id", String()), Column("chunk_id", String()), Column("annotator", String()),
                Column("kind", String()), Column("action", String()), Column("text", Text),
                Column("created_at", DateTime))
            for change in changes:
                for action, condition in change.wanted:
                    text = stage.c.flag_note if change.kind == "flag" else stage.c.comment
                    connection.execute(insert(self.new_marks).from_select(
                        ["line", "query_id", "chunk_id", "annotator", "kind", "action", "text",
                         "created_at"],
                        select(stage.c.line, stage.c.query_id, stage.c.chunk_id, stage.c.annotator,
                               literal(change.kind, String), literal(action, String),
                               text if action == "set" else null(), when)
                        .select_from(stage.outerjoin(change.current, change.current.c.id == change.newest))
                        .where(condition).order_by(stage.c.line)))
            lines = union(select(self.new_labels.c.line), select(self.new_marks.c.line)).subquery()
            added = connection.scalar(select(func.count()).select_from(lines))
        else:
            added = connection.scalar(select(func.count()).select_from(self.new_labels))
        self.result.added = added or 0
        self.result.unchanged = self.staged - self.result.added

    def publish(self, connection: Connection) -> None:
        """The events :meth:`check` found, copied in one transaction (with the placeholders of
        ``create_missing`` and the annotators the lines name)."""
        if self.result.read == 0:
            self.result.notes.append("The file holds no labels.")
            return
        if self.refs is not None:
            self.refs.create_staged(connection)
        ensure_annotators(connection, self.annotators)
        if not self.result.added:
            return
        new = self.new_labels
        connection.execute(insert(labels_table).from_select(
            ["query_id", "chunk_id", "annotator", "grade", "note", "created_at", "source",
             "skipped", "flagged"],
            select(new.c.query_id, new.c.chunk_id, new.c.annotator, new.c.grade, new.c.note,
                   new.c.created_at, literal("import", String), new.c.skipped, false()).order_by(new.c.line)))
        if self.new_marks is not None:
            marks = self.new_marks
            connection.execute(insert(marks_table).from_select(
                ["query_id", "chunk_id", "annotator", "kind", "action", "text", "created_at", "source"],
                select(marks.c.query_id, marks.c.chunk_id, marks.c.annotator, marks.c.kind,
                       marks.c.action, marks.c.text, marks.c.created_at, literal("import", String))
                .order_by(marks.c.seq)))


@dataclass
class _MarkChange:
    """How the lines of a staged labels file change one kind of mark (flag or comment): the
    annotator's current event of that kind (``current``, joined on ``newest``) and the
    conditions for a ``set`` (and a ``clear``) event."""

    kind: str
    current: Any
    newest: Any
    wanted: tuple[tuple[str, Any], ...]


def _mark_changes(stage: Table) -> tuple[_MarkChange, ...]:
    """A line sets the flag when it says ``flagged`` true and the flag is not set with the same
    note, clears it when it says false and the flag is set; it sets the comment when it has one
    that is not already the comment. Fields the line leaves out change nothing."""
    changes = []
    for kind, given, text in (("flag", stage.c.flagged.is_(True), stage.c.flag_note),
                              ("comment", stage.c.comment.is_not(None), stage.c.comment)):
        current = marks_table.alias(f"current_{kind}")
        newest = (select(func.max(marks_table.c.id)).where(
            marks_table.c.annotator == stage.c.annotator, marks_table.c.query_id == stage.c.query_id,
            marks_table.c.chunk_id == stage.c.chunk_id, marks_table.c.kind == kind).scalar_subquery())
        is_set = current.c.action == "set"
        wanted = [("set", and_(given, or_(current.c.id.is_(None), ~is_set,
                                          current.c.text.is_distinct_from(text))))]
        if kind == "flag":
            wanted.append(("clear", and_(stage.c.flagged.is_(False), is_set)))
        changes.append(_MarkChange(kind, current, newest, tuple(wanted)))
    return tuple(changes)
