"""Importing files into a project: each import is ONE transaction, all or nothing.

Every kind of file (queries, chunks, a run, qrels, labels, facets, nuggets, entities, answers,
answer labels, guidelines, a BEIR folder) is read with :mod:`ragjudge.formats` and written in one
transaction: the first bad line (an :class:`~ragjudge.errors.InputError` naming file, line and
field) rolls everything back, so the project is exactly as before.

What importing means, per kind:

- **queries / chunks**: new ids are added; an id already in the project with the same fields is
  left alone; with other fields it is refused (``replace`` updates it) unless the project's row
  is an empty placeholder left by ``create_missing``, which the file fills in.
- **run**: the entries of run ``name`` (default: the file's stem), ranked by score descending,
  ties by chunk id descending as byte strings (trec_eval's order), or by the given rank then line
  for a run without scores. Importing the identical run again changes nothing; different entries
  under an existing name are refused unless ``replace``. Bulk path: the lines go in batches into
  a temporary table, and SQL checks ids, finds duplicates, ranks and copies them over, so a
  10-million-line run never becomes 10 million Python objects.
- **qrels / labels**: label events of the line's annotator (default ``annotator``), source
  ``import``. A line identical to the annotator's current label of the pair adds nothing (its
  grade equal, and its note equal when the line has one), so importing twice changes nothing.
  A labels line's ``flagged``/``flag_note`` and ``comment`` become flag and comment events
  (``pair_marks``) unless the annotator's current flag and comment are already so; a line
  without a grade carries only those.
- **facets / nuggets / entities / answers**: definitions are added when new; facet coverage and
  nugget support become append-only events unless identical to the annotator's current one. An
  answer is stored with its sentences (plain text is split into sentences) and citations; its run
  must be in the project.
- **answer-labels**: judgments of answers (how fully an answer supports a nugget; how fully a
  cited chunk supports a sentence) become append-only events, unless identical to the
  annotator's current judgment; the answers and nuggets they name must be in the project.
- **guidelines**: Markdown text stored in the setting ``guidelines``.

Ids the project lacks are refused with their count and the first few ids (and where they are),
unless ``create_missing``: then placeholder queries and chunks with empty text are added.
A grade off the project's scale is an :class:`InputError` at its line.
"""

from __future__ import annotations

import io
import json
import os
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from itertools import islice, repeat
from pathlib import Path
from typing import IO, Any, NoReturn

import numpy as np

from sqlalchemy import (
    Boolean, Column, DateTime, Integer, MetaData, String, Table, Text, and_, delete,
    exists, false, func, insert, literal, null, or_, select, union, update,
)
from sqlalchemy.engine import Connection, CursorResult
from sqlalchemy.orm import Session

from ragjudge.errors import InputError, UsageError
from ragjudge.formats import detect_format, read_records, read_text, source_name
from ragjudge.formats.beir import (
    beir_file, beir_qrels_files, read_beir_corpus, read_beir_qrels, read_beir_queries,
)
from ragjudge.formats.records import check_text, check_typed
from ragjudge.formats.sentences import split_sentences
from ragjudge.formats.source import Source, is_inline, path_kind
from ragjudge.formats.trec import trec_run_rows
from ragjudge.services import bulk, runhead
from ragjudge.services.staging import ImportSession, gc_paused, ids_in, publish_run
from ragjudge.store.annotators import ensure_annotators
from ragjudge.store.schema import (
    Annotator, Answer, AnswerCitation, AnswerJudgment, AnswerSentence, Chunk, Citation, Entity,
    Facet, FacetLink, Label, Nugget, NuggetSupport, MAX_KEY_BYTES, PairMark, Query, Run, RunEntry,
    Setting, key_bytes, utcnow,
)
from datetime import UTC

BATCH = 5000
"""Rows per executemany batch (and ids per ``IN (...)`` lookup: SQLite allows 32,766 variables)."""

FIRST_FEW = 5
DEFAULT_ANNOTATOR = "imported"
IMPORT_KINDS = ("queries", "chunks", "run", "qrels", "labels", "facets", "nuggets", "entities",
                "answers", "guidelines", "answer-labels")

Progress = Callable[..., None]
"""``progress(done, total_or_None, description, unit="bytes")``, called now and then (see
:mod:`ragjudge.cli.progress`): bytes of a file read, or entries, lines, records written."""

_queries = Query.__table__
_chunks = Chunk.__table__
_labels = Label.__table__
_marks = PairMark.__table__
_annotators = Annotator.__table__


@dataclass
class ImportResult:
    """What an import did (all counts are lines or rows of the one file)."""

    kind: str
    file: str
    read: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    created_queries: int = 0
    created_chunks: int = 0
    run: str | None = None
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        what = f"run '{self.run}'" if self.run else self.kind
        parts = [f"{self.added:,} added"]
        if self.updated:
            parts.append(f"{self.updated:,} updated")
        if self.unchanged:
            parts.append(f"{self.unchanged:,} already in the project")
        text = f"{self.file}: {what}: {self.read:,} read, " + ", ".join(parts) + "."
        if self.created_queries or self.created_chunks:
            text += (f" Created {self.created_queries:,} placeholder queries and "
                     f"{self.created_chunks:,} placeholder chunks (empty text).")
        for note in self.notes:
            text += " " + note
        return text


# -- the entry points ----------------------------------------------------------------------


@gc_paused()
def import_file(project, kind: str, source: Source, *, fmt: str = "auto", name: str | None = None,  # noqa: ANN001
                annotator: str = DEFAULT_ANNOTATOR, create_missing: bool = False,
                replace: bool = False, progress: Progress | None = None,
                reference: bool = False, complete: bool = False) -> ImportResult:
    """Import ``source`` as ``kind`` (one of :data:`IMPORT_KINDS`): all of it or nothing, without
    holding the project's write lock longer than a short transaction (see
    :mod:`ragjudge.services.staging`). With ``reference`` (qrels and labels), the file's
    annotators become reference annotators (``complete``: their unlisted pairs are not
    relevant) in the transaction that writes the labels."""
    if kind not in IMPORT_KINDS:
        raise UsageError(f"cannot import '{kind}'; one of: {', '.join(IMPORT_KINDS)}, beir.")
    annotator = _check_annotator(annotator)
    file = source_name(source)
    if kind == "guidelines":
        return import_guidelines(project, source)
    if fmt == "auto":
        fmt = detect_format(source, kind)
    if fmt == "beir" and kind in ("run", "facets", "nuggets", "entities", "answers", "answer-labels"):
        raise UsageError(f"{file} is read as a BEIR dataset (a folder), which holds no {kind}; "
                         "give a TREC, JSONL or CSV file.")
    if kind == "run" and name is None:
        name = run_name_for(source)
    elif kind == "run" and name is not None and not name.strip():  # was imported silently as a run named 'run'
        raise UsageError("--name is empty: a run name must be 1 to 255 characters. Nothing was imported.")
    check_typed(name, "--name")
    scale = project.scale
    if kind == "run":
        return _import_run(project, source, fmt, file, name or "run", create_missing, replace,
                           progress)
    if kind in ("queries", "chunks", "qrels", "labels"):
        result = ImportResult(kind=kind, file=file)
        with ImportSession(project) as session:
            part: _Definitions | _Labels
            if kind in ("queries", "chunks"):
                definitions = _Definitions(session, kind, file, replace, result)
                with _numbered(kind, source, fmt, file, progress) as records:
                    definitions.stage(records)
                part = definitions
            else:
                labels = _Labels(session, file, annotator, scale, create_missing, result)
                labels.stage_file(kind, source, fmt, progress)
                labels.check()
                part = labels
            with session.write(durable=True) as connection:
                part.publish(connection)
                if reference and isinstance(part, _Labels):
                    _mark_reference(connection, part, complete)
        return result

    def work(session: Session) -> ImportResult:
        connection = session.connection()
        result = ImportResult(kind=kind, file=file)
        refs = _References(connection, create_missing, result)
        with _numbered(kind, source, fmt, file, progress) as records:
            if kind == "facets":
                _import_facets(connection, records, file, annotator, refs, result)
            elif kind == "nuggets":
                _import_nuggets(connection, records, file, annotator, refs, result)
            elif kind == "entities":
                _import_entities(connection, records, file, refs, result)
            elif kind == "answers":
                _import_answers(connection, records, file, refs, replace, result)
            elif kind == "answer-labels":
                _import_answer_labels(connection, records, file, annotator, refs, result)
        return result

    return project.write(work)


def import_guidelines(project, source: Source) -> ImportResult:  # noqa: ANN001
    """Store a Markdown file as the project's judging guidelines (setting ``guidelines``)."""
    file = source_name(source)
    text = read_text(source)
    check_text([("guidelines", text)], file=file, line=1)
    result = ImportResult(kind="guidelines", file=file, read=1)

    def work(session: Session) -> ImportResult:
        row = session.get(Setting, "guidelines")
        if row is not None and row.value == text:
            result.unchanged = 1
        elif row is None:
            session.add(Setting(key="guidelines", value=text))
            result.added = 1
        else:
            row.value = text
            result.updated = 1
        return result

    return project.write(work)


@gc_paused()
def import_beir(project, folder: str | Path, *, split: str | None = None,  # noqa: ANN001
                annotator: str = DEFAULT_ANNOTATOR, create_missing: bool = False,
                replace: bool = False, progress: Progress | None = None,
                reference: bool = False, complete: bool = False) -> list[ImportResult]:
    """Import a BEIR folder's corpus (as chunks), queries and qrels (as labels of
    ``annotator``): staged, then published in one transaction."""
    annotator = _check_annotator(annotator)
    folder = Path(folder)
    found = path_kind(folder)
    if found != "folder":
        what = "does not exist" if found == "missing" else "is not a folder"
        raise InputError(f"{what}; a BEIR dataset is a folder holding corpus.jsonl, "
                         "queries.jsonl and qrels/.", file=str(folder))
    corpus = beir_file(folder, "corpus.jsonl")
    queries = beir_file(folder, "queries.jsonl")
    qrels_files = beir_qrels_files(folder, split)
    scale = project.scale
    results: list[ImportResult] = []
    with ImportSession(project) as session:
        parts: list[_Definitions | _Labels] = []
        staged: dict[str, Any] = {}
        for kind, path in (("chunks", corpus), ("queries", queries)):
            result = ImportResult(kind=kind, file=str(path))
            definitions = _Definitions(session, kind, str(path), replace, result)
            with _numbered(kind, folder, "beir", str(path), progress, beir=True) as records:
                definitions.stage(records)
            staged[kind] = definitions.new
            parts.append(definitions)
            results.append(result)
        for path in qrels_files:
            result = ImportResult(kind="qrels", file=str(path))
            labels = _Labels(session, str(path), annotator, scale, create_missing, result,
                             pending=staged)
            records = ((line, judgment) for _, line, judgment in read_beir_qrels(folder, path=path, numbered=True))
            labels.stage_records(records)
            labels.check()
            parts.append(labels)
            results.append(result)
        with session.write(durable=True) as connection:
            for part in parts:
                part.publish(connection)
                if reference and isinstance(part, _Labels):
                    _mark_reference(connection, part, complete)
    return results


@gc_paused()
def import_ir_datasets(project, name: str, *, split: str | None = None,  # noqa: ANN001
                       annotator: str | None = None, create_missing: bool = False,
                       replace: bool = False, progress: Progress | None = None,
                       reference: bool = False, complete: bool = False) -> list[ImportResult]:
    """Import an ir_datasets dataset's documents (as chunks), queries and qrels (as labels of
    ``annotator``, by default the dataset's name) in one transaction, as :func:`import_beir`
    does a BEIR folder. ``progress`` counts records, not bytes."""
    from ragjudge.formats.irds import dataset_count, dataset_parts, load_dataset, read_dataset

    dataset, full = load_dataset(name, split)
    annotator = _check_annotator(full if annotator is None else annotator)
    parts = dataset_parts(dataset)
    if not parts:
        raise UsageError(f"the ir_datasets dataset '{full}' has no documents, queries or qrels.")
    scale = project.scale
    results: list[ImportResult] = []
    with ImportSession(project) as session:
        staged_parts: list[_Definitions | _Labels] = []
        staged: dict[str, Any] = {}
        for kind in parts:
            file = f"ir_datasets:{full} {'docs' if kind == 'chunks' else kind}"
            result = ImportResult(kind=kind, file=file)
            total = dataset_count(dataset, kind)
            report = None if progress is None else (
                lambda done, total=total, file=file: progress(done, total, file, "records"))
            records = read_dataset(dataset, full, kind, numbered=True, progress=report)
            if kind == "qrels":
                labels = _Labels(session, file, annotator, scale, create_missing, result,
                                 pending=staged)
                labels.stage_records(records)
                labels.check()
                staged_parts.append(labels)
            else:
                definitions = _Definitions(session, kind, file, replace, result)
                definitions.stage(records)
                staged[kind] = definitions.new
                staged_parts.append(definitions)
            results.append(result)
        with session.write(durable=True) as connection:
            for part in staged_parts:
                part.publish(connection)
                if reference and isinstance(part, _Labels):
                    _mark_reference(connection, part, complete)
    return results


def _mark_reference(connection: Connection, labels: _Labels, complete: bool) -> None:
    """Make the annotators of an imported qrels file reference annotators (``--reference``)."""
    from ragjudge.services.roster import mark_reference

    names = sorted(labels.annotators or {labels.annotator})
    mark_reference(connection, names, complete=complete)
    closed = " (complete: an unlisted pair of their queries is not relevant)" if complete else ""
    labels.result.notes.append(f"Reference annotator{'s' if len(names) > 1 else ''}: "
                        f"{', '.join(names)}{closed}.")


def run_name_for(source: Source) -> str:
    """The default name of a run: its file's name without extensions (``bm25.trec.gz`` → bm25)."""
    if is_inline(source) or not isinstance(source, (str, os.PathLike)) or str(source) == "-":
        name = getattr(source, "name", None)
        if not isinstance(name, str) or name.startswith("<"):
            raise UsageError("Name the run with --name (it does not come from a file name).")
        source = name
    stem = Path(source).name
    if stem.endswith(".gz"):
        stem = stem[:-3]
    return Path(stem).stem or stem


# -- reading -------------------------------------------------------------------------------


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
def _numbered(kind: str, source: Source, fmt: str, file: str, progress: Progress | None,
              beir: bool = False) -> Iterator[Iterator[tuple[int, Any]]]:
    """``(line, record)`` pairs of the file (runs: tuples, see :func:`_records`)."""
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
            yield _records(kind, counting, fmt, file)
            progress(total, total, f"{kind} {path.name}")
        return
    yield _records(kind, source, fmt, file)


def _records(kind: str, source: Source, fmt: str, file: str) -> Iterator[Any]:
    """Numbered records; a run as ``(line, query_id, chunk_id, rank, score)`` tuples, its
    duplicates left for the database to find (a reader would hold every pair in memory)."""
    if kind != "run":
        return read_records(kind, source, fmt, name=file, numbered=True)
    if fmt == "trec":
        return trec_run_rows(source, name=file)
    entries = read_records("run", source, fmt, name=file, check_duplicates=False, numbered=True)
    return ((line, e.query_id, e.chunk_id, e.rank, e.score) for line, e in entries)


def _batches(items: Iterable[Any], size: int = BATCH) -> Iterator[list[Any]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _check_annotator(name: str, *, file: str | None = None, line: int | None = None) -> str:
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


# -- ids the project lacks -----------------------------------------------------------------


class _References:
    """Checks that the query and chunk ids a file names exist; collects the missing ones (or
    creates empty placeholders for them with ``create_missing``)."""

    def __init__(self, connection: Connection, create_missing: bool, result: ImportResult) -> None:
        self.connection = connection
        self.create_missing = create_missing
        self.result = result
        self.missing: dict[str, dict[str, int]] = {"query": {}, "chunk": {}}
        self.count = {"query": 0, "chunk": 0}
        self._known_queries: set[str] = set()
        self.staged: list[tuple[str, Table, Any, Any]] = []

    def check(self, queries: dict[str, int], chunks: dict[str, int]) -> None:
        """``queries``/``chunks`` map the ids of a batch to the first line naming them."""
        for what, ids in (("query", queries), ("chunk", chunks)):
            for ident, line in ids.items():
                if _too_long_key(ident):
                    raise InputError(f"the {what} id is {key_bytes(ident):,} bytes long (in UTF-8); "
                                     f"ids have at most {MAX_ID}.", file=self.result.file,
                                     line=line, field=f"{what}_id")
        unknown = {q: line for q, line in queries.items() if q not in self._known_queries}
        self._check("query", _queries, unknown)
        self._known_queries.update(q for q in unknown if q not in self.missing["query"])
        self._check("chunk", _chunks, chunks)

    def _check(self, what: str, table: Table, ids: dict[str, int]) -> None:
        if not ids:
            return
        wanted = [i for i in ids if i not in self.missing[what]]
        found: set[str] = set()
        for part in _batches(wanted):
            found.update(self.connection.scalars(select(table.c.id).where(table.c.id.in_(part))))
        lacking = [i for i in wanted if i not in found]
        if not lacking:
            return
        if self.create_missing:
            self.connection.execute(insert(table), [{"id": i, "text": ""} for i in lacking])
            if what == "query":
                self.result.created_queries += len(lacking)
            else:
                self.result.created_chunks += len(lacking)
            return
        for i in lacking:
            self.missing[what][i] = ids[i]
        self.count[what] += len(lacking)

    def check_staged(self, stage: Table, pending: dict[str, Table] | None = None) -> None:
        """The same check, in SQL, over a staging table with ``line, query_id, chunk_id``
        (reads only: with ``create_missing`` the placeholders are made by
        :meth:`create_staged`, in the publishing transaction). ``pending``: the staged new
        queries and chunks of the same import, which count as in the project."""
        for what, table, column in (("query", _queries, stage.c.query_id), ("chunk", _chunks, stage.c.chunk_id)):
            absent = self._absent(what, table, column, pending)
            if self.connection.execute(select(column).where(absent).limit(1)).first() is None:
                continue  # the common case, found without grouping every line
            if self.create_missing:
                self.staged.append((what, table, column, absent))
                continue
            grouped = select(column.label("id"), func.min(stage.c.line).label("line")).where(absent).group_by(column)
            count = self.connection.scalar(select(func.count()).select_from(grouped.subquery()))
            if count:
                self.count[what] = count
                first = grouped.subquery()
                for row in self.connection.execute(select(first.c.id, first.c.line).order_by(first.c.line).limit(FIRST_FEW)):
                    self.missing[what][row.id] = row.line

    @staticmethod
    def _absent(what: str, table: Table, column: Any, pending: dict[str, Table] | None) -> Any:
        absent = ~exists().where(table.c.id == column)
        staged = (pending or {}).get("queries" if what == "query" else "chunks")
        if staged is not None:
            absent = and_(absent, ~exists().where(staged.c.id == column))
        return absent

    def create_staged(self, connection: Connection) -> None:
        """The placeholders :meth:`check_staged` found missing (in the publishing transaction)."""
        for what, table, column, absent in self.staged:
            missing = select(column).where(absent).distinct()
            count = connection.scalar(select(func.count()).select_from(missing.subquery()))
            if count:
                connection.execute(insert(table).from_select(
                    ["id", "text"], select(column, literal("")).where(absent).distinct()))
                if what == "query":
                    self.result.created_queries += count
                else:
                    self.result.created_chunks += count

    def check_columns(self, what: str, ids: np.ndarray, lines: np.ndarray) -> list[str]:
        """The ids of ``ids`` (an ``S`` array, with each row's line) the project lacks, read in
        bulk; without ``create_missing`` they are counted for :meth:`raise_if_missing`."""
        table = _queries if what == "query" else _chunks
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


def _ensure_annotators(connection: Connection, names: Iterable[str]) -> None:
    ensure_annotators(connection, names)


def _temp_table(connection: Connection, *columns: Column) -> Table:
    table = Table(f"rj_import_{uuid.uuid4().hex[:12]}", MetaData(), *columns, prefixes=["TEMPORARY"])
    table.create(connection)
    return table


def _bytewise(column: Any, connection: Connection) -> Any:
    """``column`` compared as byte strings (SQLite's default BINARY; "C" on PostgreSQL)."""
    return column.collate("C") if connection.dialect.name == "postgresql" else column


# -- queries and chunks --------------------------------------------------------------------

_DEFINITION_COLUMNS = {"queries": ("text", "description", "category", "meta"),
                       "chunks": ("text", "doc_id", "meta")}


class _Definitions:
    """A queries or chunks file: compared with the project batch by batch (reads only), the new
    and the changed rows staged in temporary tables, then published in one transaction."""

    def __init__(self, session: ImportSession, kind: str, file: str, replace: bool,
                 result: ImportResult) -> None:
        self.session = session
        self.kind = kind
        self.file = file
        self.replace = replace
        self.result = result
        self.table = _queries if kind == "queries" else _chunks
        self.columns = _DEFINITION_COLUMNS[kind]
        types = {"text": Text, "description": Text, "category": String, "doc_id": String, "meta": Text}
        with session.stage() as connection:
            self.new = _temp_table(connection, Column("id", String()),
                                   *(Column(c, types[c]) for c in self.columns))
            self.changed = _temp_table(connection, Column("id", String()),
                                       *(Column(c, types[c]) for c in self.columns))
        self._sql = {}
        for name, table in (("new", self.new), ("changed", self.changed)):
            names = ("id", *self.columns)
            mark = "?" if session.sqlite else "%s"
            self._sql[name] = (table.name, names, f"INSERT INTO {table.name} ({', '.join(names)}) "
                                                  f"VALUES ({', '.join([mark] * len(names))})")

    def stage(self, records: Iterable[tuple[int, Any]]) -> None:
        kind, columns, result, file = self.kind, self.columns, self.result, self.file
        conflicts: list[tuple[int, str, str]] = []
        conflict_count = 0
        for batch in _batches(records):
            result.read += len(batch)
            ids = [record.id for _, record in batch]
            new: list[tuple] = []
            changed: list[tuple] = []
            with self.session.read() as connection:
                existing = {row.id: row for row in connection.execute(
                    select(self.table.c.id, *(self.table.c[c] for c in columns))
                    .where(self.table.c.id.in_(ids)))}
            for line, record in batch:
                if _too_long_key(record.id):
                    raise InputError(f"the id is {key_bytes(record.id):,} bytes long (in UTF-8); ids have "
                                     f"at most {MAX_ID}.", file=file, line=line, field="id")
                category = getattr(record, "category", None)
                if category is not None and _too_long_key(category):
                    raise InputError(f"the category is {key_bytes(category):,} bytes long (in UTF-8); "
                                     f"a category has at most {MAX_ID}.", file=file, line=line,
                                     field="category")
                values = {c: getattr(record, c) for c in columns}
                row = existing.get(record.id)
                if row is None:
                    new.append(self._row(record.id, values))
                    continue
                differing = [c for c in columns if getattr(row, c) != values[c]]
                if not differing:
                    result.unchanged += 1
                elif self.replace or _is_placeholder(row, columns):
                    changed.append(self._row(record.id, values))
                else:
                    conflict_count += 1
                    if len(conflicts) < FIRST_FEW:
                        conflicts.append((line, record.id, differing[0]))
            with self.session.stage() as connection:
                for name, rows in (("new", new), ("changed", changed)):
                    if rows:
                        table, names, sql = self._sql[name]
                        self.session.write_rows(connection, sql, rows, table, names)
            result.added += len(new)
            result.updated += len(changed)
        if conflict_count:
            line, first_id, column = conflicts[0]
            listed = ", ".join(f"'{i}' (line {n}, {c})" for n, i, c in conflicts)
            raise InputError(
                f"{conflict_count:,} {kind} of the file differ from the project's under the same id "
                f"(first: {listed}). Pass --replace to update them. Nothing was imported.",
                file=file, line=line, field=column)
        if result.read == 0:
            result.notes.append("The file holds no records.")

    def _row(self, ident: str, values: dict[str, Any]) -> tuple:
        # meta as the JSON text the project's JSON column holds (SQL NULL when there is none)
        return (ident, *(None if c == "meta" and values[c] is None
                         else json.dumps(values[c]) if c == "meta" else values[c]
                         for c in self.columns))

    def publish(self, connection: Connection) -> None:
        """The staged rows into the project, from the temporary tables in SQL."""
        table, columns = self.table, self.columns
        meta = _json_text(self.new.c.meta, connection)
        connection.execute(insert(table).from_select(
            ["id", *columns], select(self.new.c.id, *(self.new.c[c] if c != "meta" else meta
                                                     for c in columns))))
        if self.result.updated:
            values = {c: select(self.changed.c[c] if c != "meta" else _json_text(self.changed.c.meta, connection))
                      .where(self.changed.c.id == table.c.id).scalar_subquery() for c in columns}
            connection.execute(update(table).where(table.c.id.in_(select(self.changed.c.id)))
                               .values(values))


def _json_text(column: Any, connection: Connection) -> Any:
    """A column of JSON text as the project's JSON column takes it."""
    from sqlalchemy import JSON, cast

    return cast(column, JSON) if connection.dialect.name == "postgresql" else column


def _is_placeholder(row: Any, columns: tuple[str, ...]) -> bool:
    return row.text == "" and all(getattr(row, c) is None for c in columns if c != "text")


# -- runs ----------------------------------------------------------------------------------


MAX_ID = MAX_KEY_BYTES
"""The longest id, run name or category the store holds, in bytes of UTF-8, on every backend."""


def _too_long_key(value: str) -> bool:
    return key_bytes(value) > MAX_ID


def _too_long(query_id: str, chunk_id: str, file: str, line: int) -> None:
    field_name = "query_id" if _too_long_key(query_id) else "chunk_id"
    size = max(key_bytes(query_id), key_bytes(chunk_id))
    raise InputError(f"the id is {size:,} bytes long (in UTF-8); ids have at most {MAX_ID}.",
                     file=file, line=line, field=field_name)


def _check_long_ids(query_ids: np.ndarray, chunk_ids: np.ndarray, lines: np.ndarray, file: str) -> None:
    """The first line with an id longer than the store holds, as :func:`_too_long` says it."""
    rows = np.union1d(bulk.longer_than(query_ids, MAX_ID), bulk.longer_than(chunk_ids, MAX_ID))
    if len(rows):
        row = int(rows[np.argmin(lines[rows])])
        query_id, chunk_id = bulk.decode(np.array([query_ids[row], chunk_ids[row]]))
        _too_long(query_id, chunk_id, file, int(lines[row]))


def _run_columns(source: Source, fmt: str, file: str, progress: Progress | None) -> bulk.RunColumns:
    """The run's lines as columns: the plain reader when the file is plain TREC, the record
    readers otherwise (and for the message of any bad line)."""
    if fmt == "trec":
        size = _size_of(source)
        description = f"run {file}: reading"
        if progress is not None:
            progress(0, size, description)
        columns = bulk.plain_run(source)
        if columns is not None:
            if progress is not None:
                progress(size or 0, size, description)
            return columns
    with _numbered("run", source, fmt, file, progress) as records:
        return bulk.record_run(records)  # type: ignore[arg-type]  # runs come as plain tuples


def _size_of(source: Source) -> int | None:
    """The bytes of a file source (as stored: compressed for ``.gz``), for progress."""
    if isinstance(source, (bytes, bytearray)):
        return len(source)
    if isinstance(source, (str, os.PathLike)) and not is_inline(source) and str(source) != "-":
        try:
            return os.stat(source).st_size
        except OSError:
            return None
    return None


def _import_run(project, source: Source, fmt: str, file: str, name: str,  # noqa: ANN001
                create_missing: bool, replace: bool, progress: Progress | None) -> ImportResult:
    """A run: read and checked as columns, staged under a new generation in short
    transactions, published in one small one (:mod:`ragjudge.services.staging`)."""
    name = name.strip()
    if not name or len(name) > 255:
        raise UsageError("--name: a run name must be 1 to 255 characters.")
    result = ImportResult(kind="run", file=file, run=name)
    source = bulk.materialize(source)
    columns = _run_columns(source, fmt, file, progress)
    result.read = len(columns)
    if result.read == 0:
        raise InputError("the file holds no run lines.", file=file)
    _check_long_ids(columns.query_ids, columns.chunk_ids, columns.lines, file)
    repeat = bulk.first_repeat(columns.query_ids, columns.chunk_ids)
    head = runhead.head_depth(project)
    with ImportSession(project) as session:
        with session.read() as connection:
            refs = _References(connection, create_missing, result)
            if create_missing and repeat is None:  # nothing refused: the ranked run's distinct queries
                ranked = bulk.rank(columns)
                missing_queries = refs.check_columns("query", ranked.query_ids,
                                                     columns.lines[ranked.order[ranked.offsets[:-1]]])
            else:
                missing_queries = refs.check_columns("query", columns.query_ids, columns.lines)
            if not create_missing:  # every chunk must be there
                missing_chunks = refs.check_columns("chunk", columns.chunk_ids, columns.lines)
                refs.raise_if_missing(file)
            if repeat is not None:
                _duplicate(columns, repeat, file)
            if not create_missing:
                ranked = bulk.rank(columns)
            in_head = runhead.head_rows(ranked.offsets, ranked.qidx, 0, head)
            if create_missing:  # placeholders for the head's chunks only (see runhead)
                missing_chunks = refs.check_columns("chunk", ranked.chunk_ids[in_head],
                                                    columns.lines[ranked.order[in_head]])
                if len(in_head) < len(ranked):
                    result.notes.append(
                        f"Chunks ranked below {head} that the project lacks get their placeholders "
                        "when a judging pool first reaches that deep.")
            current = connection.scalar(select(_runs.c.generation).where(_runs.c.name == name))
            if current is not None and _same_run_or_refuse(connection, name, current, ranked,
                                                           file, result, replace):
                return result
        arrays = ranked.arrays()
        del columns
        generation, replaces = session.begin_run(name)

        def placeholders(connection: Connection) -> None:  # PostgreSQL: COPY
            for table, ids in ((_queries, missing_queries), (_chunks, missing_chunks)):
                session.write_rows(connection, "", [(i, "") for i in sorted(ids)], table.name, ("id", "text"))
            result.created_queries = len(missing_queries)
            result.created_chunks = len(missing_chunks)

        try:
            if not session.sqlite:  # one transaction: the entries' references come first
                with session.write() as connection:
                    placeholders(connection)
            else:  # before the publish, in short transactions, removed if the import dies
                session.stage_placeholders(name, generation, missing_queries, missing_chunks)
                result.created_queries = len(missing_queries)
                result.created_chunks = len(missing_chunks)
            _stage_entries(session, name, generation, ranked, in_head, progress)
            session.store_arrays(name, generation, arrays)
            meta = runhead.run_meta(file, head, arrays)
            with session.write(durable=True) as connection:
                publish_run(connection, name, generation, meta, replaces is not None)
        except BaseException:
            with suppress(Exception):  # the next import or opening removes what is left
                session.abandon_run(name, generation)
            raise
        session.finish_run(name, generation, replaces)
    result.added = result.read
    if replaces is not None:
        result.updated = 1
        result.notes.append(f"Replaced the earlier run '{name}'.")
    return result


_runs = Run.__table__
_entries = RunEntry.__table__


def _stage_entries(session: ImportSession, name: str, generation: int, ranked: bulk.RankedRun,
                   rows: np.ndarray, progress: Progress | None) -> None:
    """The run's head (its entries at positions ``rows``, see :mod:`ragjudge.services.runhead`)
    under ``generation``, batch by batch, in storage order."""
    queries = np.array(bulk.decode(ranked.query_ids), dtype=object)
    ranks = ranked.ranks[rows]
    scores = ranked.scores[rows]
    qidx = ranked.qidx[rows]
    chunk_ids = ranked.chunk_ids[rows]
    has_none = bool(np.isnan(scores).any())
    sql = session.run_entries_sql()
    total = len(rows)
    description = f"run {name}: writing entries"

    def prepare(start: int, stop: int) -> list[tuple]:
        part = scores[start:stop]
        values = ([None if v != v else v for v in part.tolist()] if has_none else part.tolist())
        return list(zip(repeat(name), repeat(generation), queries[qidx[start:stop]].tolist(),
                        bulk.decode(chunk_ids[start:stop]), ranks[start:stop].tolist(), values))

    def write(connection: Connection, rows: list[tuple]) -> None:
        session.write_rows(connection, sql, rows, "run_entries",
                           ("run", "generation", "query_id", "chunk_id", "rank", "score"))

    report = None if progress is None else (lambda done: progress(done, total, description, "entries"))
    if report is not None:
        report(0)
    session.batches(total, prepare, write, report)


def _duplicate(columns: bulk.RunColumns, repeat: tuple[int, int], file: str) -> NoReturn:
    """The first line that lists a chunk its query listed before."""
    first, second = repeat
    query_id, chunk_id = bulk.decode(np.array([columns.query_ids[second], columns.chunk_ids[second]]))
    raise InputError(
        f"chunk '{chunk_id}' appears twice for query '{query_id}' (first on line "
        f"{int(columns.lines[first])}); a run lists each chunk of a query once. Nothing was imported.",
        file=file, line=int(columns.lines[second]), field="chunk_id")


def _same_run_or_refuse(connection: Connection, name: str, generation: int,
                        ranked: bulk.RankedRun, file: str, result: ImportResult,
                        replace: bool) -> bool:
    """A run of the same name is in the project: the same entries change nothing (True), with
    ``replace`` too (a replace would rewrite the run's time); other entries are refused with how
    many differ, unless ``replace`` (False)."""
    from ragjudge.services.evaluation import stored_arrays

    old = stored_arrays(connection, name, generation)
    new = ranked.arrays()
    same = all(len(old[key]) == len(new[key]) and np.array_equal(old[key], new[key], equal_nan=key == "scores")
               for key in new)
    if same:
        result.unchanged = result.read
        result.notes.append("The project already holds this run; nothing changed.")
        return True
    if replace:
        return False
    new_keys, old_keys = _entry_keys(new), _entry_keys(old)
    new_only = int(np.count_nonzero(~np.isin(new_keys, old_keys)))
    old_only = int(np.count_nonzero(~np.isin(old_keys, new_keys)))
    raise InputError(
        f"the project already has a run named '{name}' with other entries ({new_only:,} "
        f"of the file's entries are not in it, {old_only:,} of its entries are not in the "
        "file). Pass --replace to replace it, or --name to import under another name. "
        "Nothing was imported.", file=file)


def _entry_keys(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """One 64-bit key per entry of stored run arrays: its query, chunk, rank and score."""
    from ragjudge.metrics._keys import id_hash, mix, pair_hash

    queries = bulk.unpack_ids(arrays["query_ids"], arrays["query_ids_lengths"])
    chunks = bulk.unpack_ids(arrays["chunk_ids"], arrays["chunk_ids_lengths"])
    offsets = arrays["offsets"]
    counts = np.diff(offsets)
    qidx = np.repeat(np.arange(len(counts)), counts)
    ranks = np.arange(len(chunks)) - offsets[qidx] + 1
    keys = pair_hash(id_hash(queries)[qidx], chunks)
    keys = mix(keys, ranks.astype(np.uint64))
    scores = np.where(np.isnan(arrays["scores"]), np.inf, arrays["scores"])
    return mix(keys, scores.view(np.uint64))


# -- qrels and labels ----------------------------------------------------------------------


class _Labels:
    """A qrels or labels file: its lines staged in a temporary table (each checked as it
    always was), their ids checked, then the label and mark events that change something
    written in one transaction."""

    def __init__(self, session: ImportSession, file: str, annotator: str, scale: Any,
                 create_missing: bool, result: ImportResult,
                 pending: dict[str, Table] | None = None) -> None:
        self.session = session
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
                      "flagged", "flag_note", "comment")
        with session.stage() as connection:
            self.stage_table = _temp_table(
                connection, Column("line", Integer), Column("query_id", String()),
                Column("chunk_id", String()), Column("annotator", String()), Column("grade", Integer),
                Column("note", Text), Column("created_at", DateTime), Column("flagged", Boolean),
                Column("flag_note", Text), Column("comment", Text))
        mark = "?" if session.sqlite else "%s"
        self.sql = (f"INSERT INTO {self.stage_table.name} ({', '.join(self.names)}) "
                    f"VALUES ({', '.join([mark] * len(self.names))})")
        self.refs: _References | None = None

    def stage_file(self, kind: str, source: Source, fmt: str, progress: Progress | None) -> None:
        """A file's lines: a plain TREC qrels file in bulk, any other through the record readers."""
        if fmt == "trec":
            source = bulk.materialize(source)
            columns = bulk.plain_qrels(source, self.scale.min, self.scale.max)
            if columns is not None:
                self._stage_columns(columns, progress)
                return
        with _numbered(kind, source, fmt, self.file, progress) as records:
            self.stage_records(records)

    def _stage_columns(self, columns: bulk.QrelsColumns, progress: Progress | None) -> None:
        _check_long_ids(columns.query_ids, columns.chunk_ids, columns.lines, self.file)
        n = len(columns)
        self.result.read = n
        if n:
            self.annotators.add(self.annotator)
        queries, chunks = bulk.decode(columns.query_ids), bulk.decode(columns.chunk_ids)
        lines, grades = columns.lines.tolist(), columns.grades.tolist()
        for at in range(0, n, BATCH * 10):
            rows = [(lines[i], queries[i], chunks[i], self.annotator, grades[i], None, None, None,
                     None, None) for i in range(at, min(n, at + BATCH * 10))]
            with self.session.stage() as connection:
                self.session.write_rows(connection, self.sql, rows, self.stage_table.name, self.names)
            if progress is not None:
                progress(min(n, at + BATCH * 10), n, f"qrels {self.file}: staging", "lines")

    def stage_records(self, records: Iterable[tuple[int, Any]]) -> None:
        file, scale = self.file, self.scale
        for batch in _batches(records):
            rows = []
            for line, record in batch:
                if _too_long_key(record.query_id) or _too_long_key(record.chunk_id):
                    _too_long(record.query_id, record.chunk_id, file, line)
                if record.grade is not None and not scale.contains(record.grade):
                    raise InputError(
                        f"grade {record.grade} is off the project's scale {scale.min}-{scale.max}. "
                        "Nothing was imported.", file=file, line=line, field="grade")
                who = self.annotator if record.annotator is None else self.known.get(record.annotator)
                if who is None:
                    who = self.known[record.annotator] = _check_annotator(record.annotator, file=file, line=line)
                self.annotators.add(who)
                created = getattr(record, "created_at", None)
                if created is not None and created.tzinfo is not None:
                    created = created.astimezone(UTC).replace(tzinfo=None)
                flagged = getattr(record, "flagged", None)
                comment = getattr(record, "comment", None)
                rows.append((line, record.query_id, record.chunk_id, who, record.grade, record.note,
                             created, flagged, getattr(record, "flag_note", None), comment))
                self.marked = self.marked or flagged is not None or comment is not None
            with self.session.stage() as connection:
                self.session.write_rows(connection, self.sql, rows, self.stage_table.name, self.names)
            self.result.read += len(rows)

    def check(self) -> None:
        """Ids the project lacks: refused (or, with ``create_missing``, made at the publish).
        Then what changes something, found outside the write lock: the label events (a line
        identical to the annotator's current label adds nothing) and the flag and comment
        events, kept in temporary tables for :meth:`publish` to copy."""
        if self.result.read == 0:
            return
        with self.session.read() as connection:
            self.refs = _References(connection, self.create_missing, self.result)
            self.refs.check_staged(self.stage_table, self.pending)
            self.refs.raise_if_missing(self.file)
        with self.session.stage() as connection:
            self._changes(connection)

    def _changes(self, connection: Connection) -> None:
        stage = self.stage_table
        newest = (select(func.max(_labels.c.id)).where(
            _labels.c.annotator == stage.c.annotator, _labels.c.query_id == stage.c.query_id,
            _labels.c.chunk_id == stage.c.chunk_id).scalar_subquery())
        current = _labels.alias("current")
        changed = or_(
            current.c.id.is_(None), current.c.grade.is_(None), current.c.grade != stage.c.grade,
            current.c.skipped.is_(True),
            and_(stage.c.note.is_not(None), or_(current.c.note.is_(None), current.c.note != stage.c.note)),
        )
        changed = and_(stage.c.grade.is_not(None), changed)
        when = func.coalesce(stage.c.created_at, literal(utcnow(), DateTime))
        self.new_labels = _temp_table(
            connection, Column("line", Integer), Column("query_id", String()), Column("chunk_id", String()),
            Column("annotator", String()), Column("grade", Integer), Column("note", Text),
            Column("created_at", DateTime))
        connection.execute(insert(self.new_labels).from_select(
            ["line", "query_id", "chunk_id", "annotator", "grade", "note", "created_at"],
            select(stage.c.line, stage.c.query_id, stage.c.chunk_id, stage.c.annotator, stage.c.grade,
                   stage.c.note, when)
            .select_from(stage.outerjoin(current, current.c.id == newest)).where(changed)))
        changes = _mark_changes(stage) if self.marked else ()
        self.new_marks = None
        if changes:
            self.new_marks = _temp_table(
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
        self.result.unchanged = self.result.read - self.result.added

    def publish(self, connection: Connection) -> None:
        """The events :meth:`check` found, copied in one transaction (with the placeholders of
        ``create_missing`` and the annotators the lines name)."""
        if self.result.read == 0:
            self.result.notes.append("The file holds no labels.")
            return
        if self.refs is not None:
            self.refs.create_staged(connection)
        _ensure_annotators(connection, self.annotators)
        if not self.result.added:
            return
        new = self.new_labels
        connection.execute(insert(_labels).from_select(
            ["query_id", "chunk_id", "annotator", "grade", "note", "created_at", "source",
             "skipped", "flagged"],
            select(new.c.query_id, new.c.chunk_id, new.c.annotator, new.c.grade, new.c.note,
                   new.c.created_at, literal("import", String), false(), false()).order_by(new.c.line)))
        if self.new_marks is not None:
            marks = self.new_marks
            connection.execute(insert(_marks).from_select(
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
        current = _marks.alias(f"current_{kind}")
        newest = (select(func.max(_marks.c.id)).where(
            _marks.c.annotator == stage.c.annotator, _marks.c.query_id == stage.c.query_id,
            _marks.c.chunk_id == stage.c.chunk_id, _marks.c.kind == kind).scalar_subquery())
        is_set = current.c.action == "set"
        wanted = [("set", and_(given, or_(current.c.id.is_(None), ~is_set,
                                          current.c.text.is_distinct_from(text))))]
        if kind == "flag":
            wanted.append(("clear", and_(stage.c.flagged.is_(False), is_set)))
        changes.append(_MarkChange(kind, current, newest, tuple(wanted)))
    return tuple(changes)


# -- facets, nuggets, entities, answers ----------------------------------------------------


def _refs_of(refs: _References, records: list[tuple[int, Any]], chunk_fields: Callable[[Any], Iterable[str]]) -> None:
    queries: dict[str, int] = {}
    chunks: dict[str, int] = {}
    for line, record in records:
        queries.setdefault(record.query_id, line)
        for chunk_id in chunk_fields(record):
            chunks.setdefault(chunk_id, line)
    refs.check(queries, chunks)


def _judgment_lines(connection: Connection, records: Iterable[tuple[int, Any]], file: str,
                    annotator: str, refs: _References, result: ImportResult,
                    ) -> tuple[list[tuple[int, Any]], dict[int, str]]:
    """Facet and nugget lines: checked references, and each line's annotator (its own, else
    ``annotator``), who exist afterwards when the line judges a chunk."""
    items = list(records)
    result.read = len(items)
    _refs_of(refs, items, lambda r: [r.chunk_id] if r.chunk_id else [])
    refs.raise_if_missing(file)
    who_of = {line: _check_annotator(r.annotator, file=file, line=line) if r.annotator else annotator
              for line, r in items}
    _ensure_annotators(connection, {who_of[line] for line, r in items if r.chunk_id})
    return items, who_of


def _import_facets(connection: Connection, records: Iterable[tuple[int, Any]], file: str,
                   annotator: str, refs: _References, result: ImportResult) -> None:
    facets_t, links_t = Facet.__table__, FacetLink.__table__
    items, who_of = _judgment_lines(connection, records, file, annotator, refs, result)
    query_ids = sorted({r.query_id for _, r in items})
    facet_ids: dict[tuple[str, str], int] = {}
    for part in _batches(query_ids):
        for row in connection.execute(select(facets_t.c.id, facets_t.c.query_id, facets_t.c.name)
                                      .where(facets_t.c.query_id.in_(part), facets_t.c.removed.is_(False))
                                      .order_by(facets_t.c.id)):
            facet_ids.setdefault((row.query_id, row.name), row.id)
    for line, record in items:
        key = (record.query_id, record.facet)
        created = False
        if key not in facet_ids:
            facet_ids[key] = _new_id(connection.execute(insert(facets_t).values(
                query_id=record.query_id, name=record.facet, removed=False, created_at=utcnow())))
            created = True
        if record.chunk_id is None:
            if created:
                result.added += 1
            else:
                result.unchanged += 1
            continue
        who = who_of[line]
        current = connection.scalar(
            select(links_t.c.covered).where(links_t.c.facet_id == facet_ids[key],
                                            links_t.c.chunk_id == record.chunk_id,
                                            links_t.c.annotator == who)
            .order_by(links_t.c.id.desc()).limit(1))
        if current is not None and bool(current) == record.covered:
            result.unchanged += 1
            continue
        connection.execute(insert(links_t).values(facet_id=facet_ids[key], chunk_id=record.chunk_id,
                                                  annotator=who, covered=record.covered,
                                                  created_at=utcnow()))
        result.added += 1


def _import_nuggets(connection: Connection, records: Iterable[tuple[int, Any]], file: str,
                    annotator: str, refs: _References, result: ImportResult) -> None:
    nuggets_t, support_t = Nugget.__table__, NuggetSupport.__table__
    items, who_of = _judgment_lines(connection, records, file, annotator, refs, result)
    known: dict[tuple[str, str], Any] = {}
    for part in _batches(sorted({r.query_id for _, r in items})):
        for found in connection.execute(select(nuggets_t).where(nuggets_t.c.query_id.in_(part),
                                                                nuggets_t.c.removed.is_(False))
                                        .order_by(nuggets_t.c.id)):
            known.setdefault((found.query_id, found.text), found)
    attributes = ("importance", "kind", "weight")
    updated: set[int] = set()
    for line, record in items:
        key = (record.query_id, record.nugget)
        given = {a: getattr(record, a) for a in attributes if a in record.model_fields_set}
        row = known.get(key)
        changed = False
        if row is None:
            values = {a: getattr(record, a) for a in attributes}
            nugget_id = _new_id(connection.execute(insert(nuggets_t).values(
                query_id=record.query_id, text=record.nugget, removed=False, created_at=utcnow(),
                **values)))
            known[key] = row = _Row(id=nugget_id, **values)
            changed = True
        else:
            different = {a: v for a, v in given.items() if getattr(row, a) != v}
            if different:
                connection.execute(update(nuggets_t).where(nuggets_t.c.id == row.id).values(**different))
                known[key] = row = _Row(id=row.id, **{a: different.get(a, getattr(row, a)) for a in attributes})
                if row.id not in updated:
                    updated.add(row.id)
                    result.updated += 1
        if record.chunk_id is not None:
            who = who_of[line]
            current = connection.scalar(
                select(support_t.c.support).where(support_t.c.nugget_id == row.id,
                                                  support_t.c.chunk_id == record.chunk_id,
                                                  support_t.c.annotator == who)
                .order_by(support_t.c.id.desc()).limit(1))
            if current != record.support:
                connection.execute(insert(support_t).values(
                    nugget_id=row.id, chunk_id=record.chunk_id, annotator=who,
                    support=record.support, created_at=utcnow()))
                changed = True
        if changed:
            result.added += 1
        else:
            result.unchanged += 1


class _Row:
    id: int

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)


def _new_id(result: CursorResult[Any]) -> int:
    """The id of the one row an INSERT added."""
    key = result.inserted_primary_key
    if key is None:  # pragma: no cover - a one-row INSERT always reports its key
        raise RuntimeError("the database reported no id for an inserted row")
    return key[0]


def _import_entities(connection: Connection, records: Iterable[tuple[int, Any]], file: str,
                     refs: _References, result: ImportResult) -> None:
    entities_t = Entity.__table__
    items = list(records)
    result.read = len(items)
    _refs_of(refs, items, lambda r: [])
    refs.raise_if_missing(file)
    have: set[tuple[str, str]] = set()
    for part in _batches(sorted({r.query_id for _, r in items})):
        have.update((q, t) for q, t in connection.execute(
            select(entities_t.c.query_id, entities_t.c.text).where(entities_t.c.query_id.in_(part))))
    new = []
    for _, record in items:
        key = (record.query_id, record.entity)
        if key in have:
            result.unchanged += 1
            continue
        have.add(key)
        new.append({"query_id": record.query_id, "text": record.entity, "created_at": utcnow()})
    if new:
        connection.execute(insert(entities_t), new)
    result.added = len(new)


def _answer_parts(record: Any) -> tuple[str, list[str], list[tuple[str, list[str]]]]:
    """An answer line as (text, the answer's cited chunks, its sentences with their citations).

    Plain ``text`` is split into sentences (:func:`ragjudge.formats.sentences.split_sentences`),
    which then cite nothing of their own; ``sentences`` give the text (joined by spaces) and the
    answer's citations (every sentence's, in order). A chunk cited twice is one citation."""
    if record.sentences is None:
        sentences: list[tuple[str, list[str]]] = [(text, []) for text in split_sentences(record.text)]
        return record.text, list(dict.fromkeys(record.cited)), sentences
    sentences = [(s.text, list(dict.fromkeys(s.citations))) for s in record.sentences]
    cited = list(dict.fromkeys(c for _, cites in sentences for c in cites))
    return " ".join(text for text, _ in sentences), cited, sentences


def _answer_chunks(record: Any) -> list[str]:
    if record.sentences is None:
        return list(record.cited)
    return [c for s in record.sentences for c in s.citations]


def _check_runs(connection: Connection, items: list[tuple[int, Any]], file: str) -> None:
    """Refuse runs the project lacks (with their count and the first few), as unknown ids are."""
    first_line: dict[str, int] = {}
    for line, record in items:
        if _too_long_key(record.run):
            raise InputError(f"a run name has at most {MAX_ID} bytes (in UTF-8).", file=file, line=line,
                             field="run")
        first_line.setdefault(record.run, line)
    runs_t = Run.__table__
    known: set[str] = set()
    for part in _batches(sorted(first_line)):
        known.update(connection.scalars(select(runs_t.c.name).where(runs_t.c.name.in_(part))))
    lacking = sorted((line, name) for name, line in first_line.items() if name not in known)
    if lacking:
        listed = ", ".join(f"'{name}' (line {line})" for line, name in lacking[:FIRST_FEW])
        count = len(lacking)
        raise InputError(
            f"{count:,} run{'s are' if count > 1 else ' is'} not in the project (first: {listed}). "
            "Import the runs first (ragjudge import run FILE). Nothing was imported.",
            file=file, line=lacking[0][0], field="run")


def _stored_answer(connection: Connection, answer_id: int) -> tuple[list[str], list[tuple[str, list[str]]]]:
    citations_t, sentences_t = Citation.__table__, AnswerSentence.__table__
    cites_t = AnswerCitation.__table__
    cited = list(connection.scalars(select(citations_t.c.chunk_id).where(
        citations_t.c.answer_id == answer_id).order_by(citations_t.c.position)))
    sentences: list[tuple[str, list[str]]] = [(text, []) for text in connection.scalars(select(sentences_t.c.text).where(
        sentences_t.c.answer_id == answer_id).order_by(sentences_t.c.position))]
    for sentence, chunk_id in connection.execute(
            select(cites_t.c.sentence, cites_t.c.chunk_id).where(cites_t.c.answer_id == answer_id)
            .order_by(cites_t.c.sentence, cites_t.c.position)):
        if sentence < len(sentences):
            sentences[sentence][1].append(chunk_id)
    return cited, sentences


def _import_answers(connection: Connection, records: Iterable[tuple[int, Any]], file: str,
                    refs: _References, replace: bool, result: ImportResult) -> None:
    answers_t, citations_t = Answer.__table__, Citation.__table__
    sentences_t, cites_t = AnswerSentence.__table__, AnswerCitation.__table__
    items = list(records)
    result.read = len(items)
    _refs_of(refs, items, _answer_chunks)
    refs.raise_if_missing(file)
    _check_runs(connection, items, file)
    conflicts: list[tuple[int, Any]] = []
    judged_before = 0
    for line, record in items:
        text, cited, sentences = _answer_parts(record)
        row = connection.execute(select(answers_t.c.id, answers_t.c.text).where(
            answers_t.c.query_id == record.query_id, answers_t.c.run == record.run)).first()
        if row is not None:
            if row.text == text and _stored_answer(connection, row.id) == (cited, sentences):
                result.unchanged += 1
                continue
            if not replace:
                conflicts.append((line, record))
                continue
            connection.execute(update(answers_t).where(answers_t.c.id == row.id).values(text=text))
            for table in (citations_t, cites_t, sentences_t):
                connection.execute(delete(table).where(table.c.answer_id == row.id))
            answer_id = row.id
            result.updated += 1
            judgments = AnswerJudgment.__table__
            judged_before += bool(connection.scalar(select(func.count()).select_from(judgments)
                                                    .where(judgments.c.answer_id == row.id)))
        else:
            answer_id = _new_id(connection.execute(insert(answers_t).values(
                query_id=record.query_id, run=record.run, text=text)))
            result.added += 1
        if cited:
            connection.execute(insert(citations_t), [
                {"answer_id": answer_id, "chunk_id": c, "position": i} for i, c in enumerate(cited)])
        if sentences:
            connection.execute(insert(sentences_t), [
                {"answer_id": answer_id, "position": i, "text": s} for i, (s, _) in enumerate(sentences)])
        cites = [{"answer_id": answer_id, "sentence": i, "chunk_id": c, "position": j}
                 for i, (_, chunk_ids) in enumerate(sentences) for j, c in enumerate(chunk_ids)]
        if cites:
            connection.execute(insert(cites_t), cites)
    if conflicts:
        line, record = conflicts[0]
        raise InputError(
            f"{len(conflicts):,} answers differ from the project's answer of the same run and query "
            f"(first: run '{record.run}', query '{record.query_id}'). Pass --replace to update "
            "them. Nothing was imported.", file=file, line=line,
            field="text" if record.sentences is None else "sentences")
    if judged_before:
        result.notes.append(
            f"{judged_before:,} of the replaced answers had judgments; they are kept, and a "
            "citation judgment counts where its sentence still cites its chunk.")


def _import_answer_labels(connection: Connection, records: Iterable[tuple[int, Any]], file: str,
                          annotator: str, refs: _References, result: ImportResult) -> None:
    """Answer judgments (nugget support, citation support) as events of each line's annotator
    (else ``annotator``), source ``import``; a line equal to the annotator's current judgment of
    the same thing adds nothing. The answer, the nugget (by its text, among the query's nuggets)
    and the citation must exist: answers and nuggets are imported first."""
    answers_t, nuggets_t, cites_t = Answer.__table__, Nugget.__table__, AnswerCitation.__table__
    sentences_t, judgments_t = AnswerSentence.__table__, AnswerJudgment.__table__
    items = list(records)
    result.read = len(items)
    _refs_of(refs, items, lambda r: [r.chunk_id] if r.chunk_id else [])
    refs.raise_if_missing(file)
    _check_runs(connection, items, file)
    query_ids = sorted({r.query_id for _, r in items})
    answer_of: dict[tuple[str, str], int] = {}
    nugget_of: dict[tuple[str, str], int] = {}
    for part in _batches(query_ids):
        answer_of.update({(q, run): i for i, q, run in connection.execute(
            select(answers_t.c.id, answers_t.c.query_id, answers_t.c.run)
            .where(answers_t.c.query_id.in_(part)))})
        for i, q, text in connection.execute(
                select(nuggets_t.c.id, nuggets_t.c.query_id, nuggets_t.c.text)
                .where(nuggets_t.c.query_id.in_(part), nuggets_t.c.removed.is_(False),
                       nuggets_t.c.kind == "nugget").order_by(nuggets_t.c.id)):
            nugget_of.setdefault((q, text), i)
    answer_ids = sorted(set(answer_of.values()))
    sentence_count: dict[int, int] = {}
    cited: set[tuple[int, int, str]] = set()
    current: dict[tuple, str | None] = {}
    for part in _batches(answer_ids):
        sentence_count.update(connection.execute(
            select(sentences_t.c.answer_id, func.count()).where(sentences_t.c.answer_id.in_(part))
            .group_by(sentences_t.c.answer_id)).all())
        cited.update(connection.execute(select(cites_t.c.answer_id, cites_t.c.sentence, cites_t.c.chunk_id)
                                        .where(cites_t.c.answer_id.in_(part))).all())
        for row in connection.execute(
                select(judgments_t.c.answer_id, judgments_t.c.annotator, judgments_t.c.nugget_id,
                       judgments_t.c.sentence, judgments_t.c.chunk_id, judgments_t.c.support)
                .where(judgments_t.c.answer_id.in_(part)).order_by(judgments_t.c.id)):
            current[(row.answer_id, row.annotator, row.nugget_id, row.sentence, row.chunk_id)] = row.support
    events = []
    annotators: set[str] = set()
    now = utcnow()
    for line, r in items:
        answer_id = answer_of.get((r.query_id, r.run))
        if answer_id is None:
            raise InputError(f"run '{r.run}' has no answer to query '{r.query_id}' in the project. "
                             "Import the answers first (ragjudge import answers FILE). Nothing "
                             "was imported.", file=file, line=line, field="run")
        nugget_id = None
        if r.nugget is not None:
            nugget_id = nugget_of.get((r.query_id, r.nugget))
            if nugget_id is None:
                raise InputError(f"query '{r.query_id}' has no nugget {r.nugget!r}. Import the "
                                 "nuggets first (ragjudge import nuggets FILE). Nothing was "
                                 "imported.", file=file, line=line, field="nugget")
        else:
            count = sentence_count.get(answer_id, 0)
            if r.sentence >= count:
                raise InputError(f"the answer has {count} sentence{'s' if count != 1 else ''}, "
                                 f"numbered from 0; there is no sentence {r.sentence}. Nothing was "
                                 "imported.", file=file, line=line, field="sentence")
            if (answer_id, r.sentence, r.chunk_id) not in cited:
                raise InputError(f"sentence {r.sentence} of the answer does not cite chunk "
                                 f"'{r.chunk_id}'; only a cited chunk's support is judged. Nothing "
                                 "was imported.", file=file, line=line, field="chunk_id")
        who = _check_annotator(r.annotator, file=file, line=line) if r.annotator else annotator
        key = (answer_id, who, nugget_id, r.sentence, r.chunk_id)
        if current.get(key) == r.support:
            result.unchanged += 1
            continue
        current[key] = r.support
        annotators.add(who)
        events.append({"answer_id": answer_id, "annotator": who, "nugget_id": nugget_id,
                       "sentence": r.sentence, "chunk_id": r.chunk_id, "support": r.support,
                       "created_at": now, "source": "import"})
    _ensure_annotators(connection, annotators)
    for batch in _batches(events):
        connection.execute(insert(judgments_t), batch)
    result.added = len(events)
    if result.read == 0:
        result.notes.append("The file holds no answer judgments.")


__all__ = [
    "BATCH", "DEFAULT_ANNOTATOR", "IMPORT_KINDS", "ImportResult", "Progress", "import_beir",
    "import_file", "import_guidelines", "import_ir_datasets", "run_name_for",
]
