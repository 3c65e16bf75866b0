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

from pathlib import Path
from typing import Any
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session
from ragjudge.errors import InputError, UsageError
from ragjudge.formats import detect_format, read_text, source_name
from ragjudge.formats.beir import (
    beir_file, beir_qrels_files, no_beir_kind, read_beir_qrels,
)
from ragjudge.formats.records import check_text, check_typed
from ragjudge.formats.source import Source, path_kind
from ragjudge.services.project.staging import ImportSession, gc_paused
from ragjudge.store.schema import (
    Setting,
)
from ragjudge.services.transfer.answerimport import import_answer_labels, import_answers
from ragjudge.services.transfer.common import DEFAULT_ANNOTATOR, ImportResult, Progress, check_annotator, numbered
from ragjudge.services.transfer.definitions import DefinitionImport, ReferenceCheck, import_entities, import_facets, import_nuggets
from ragjudge.services.access.rights import Access
from ragjudge.services.transfer.labelimport import LabelImport
from ragjudge.services.transfer.runimport import import_run_named, run_name_for  # noqa: F401 - run_name_for: re-exported


IMPORT_KINDS = ("queries", "chunks", "run", "qrels", "labels", "facets", "nuggets", "entities",
                "answers", "guidelines", "answer-labels")


@gc_paused()
def import_file(project, kind: str, source: Source, *, fmt: str = "auto", name: str | None = None,  # noqa: ANN001
                annotator: str = DEFAULT_ANNOTATOR, create_missing: bool = False,
                replace: bool = False, progress: Progress | None = None,
                reference: bool = False, complete: bool = False,
                access: Access | None = None) -> ImportResult:
    """Import ``source`` as ``kind`` (one of :data:`IMPORT_KINDS`): all of it or nothing, without
    holding the project's write lock longer than a short transaction (see
    :mod:`ragjudge.services.project.staging`). With ``reference`` (qrels and labels), the file's
    annotators become reference annotators (``complete``: their unlisted pairs are not
    relevant) in the transaction that writes the labels. The guidelines and a reference change
    the project's settings and roster: only who may lead (``access``; None has the least
    rights) imports them."""
    if kind not in IMPORT_KINDS:
        raise UsageError(f"cannot import '{kind}'; one of: {', '.join(IMPORT_KINDS)}, beir.")
    annotator = check_annotator(annotator)
    file = source_name(source)
    if kind == "guidelines":
        return import_guidelines(project, source, access=access)
    _check_reference(access, reference)
    if fmt == "auto":
        fmt = detect_format(source, kind)
    if fmt == "beir" and kind in ("run", "facets", "nuggets", "entities", "answers", "answer-labels"):
        raise no_beir_kind(file, kind)
    if kind == "run":
        return import_run_named(project, source, fmt, name, create_missing, replace, progress)
    check_typed(name, "--name")
    scale = project.scale
    if kind in ("queries", "chunks", "qrels", "labels"):
        result = ImportResult(kind=kind, file=file)
        with ImportSession(project) as session:
            part: DefinitionImport | LabelImport
            if kind in ("queries", "chunks"):
                definitions = DefinitionImport(session, kind, file, replace, result)
                with numbered(kind, source, fmt, file, progress) as records:
                    definitions.stage(records)
                part = definitions
            else:
                labels = LabelImport(session, file, annotator, scale, create_missing, result,
                                     keep_unjudged=reference and complete)
                labels.stage_file(kind, source, fmt, progress)
                labels.check()
                part = labels
            with session.write(durable=True) as connection:
                part.publish(connection)
                if reference and isinstance(part, LabelImport):
                    _mark_reference(connection, part, complete)
        return result

    def work(session: Session) -> ImportResult:
        connection = session.connection()
        result = ImportResult(kind=kind, file=file)
        refs = ReferenceCheck(connection, create_missing, result)
        with numbered(kind, source, fmt, file, progress) as records:
            if kind == "facets":
                import_facets(connection, records, file, annotator, refs, result)
            elif kind == "nuggets":
                import_nuggets(connection, records, file, annotator, refs, result)
            elif kind == "entities":
                import_entities(connection, records, file, refs, result)
            elif kind == "answers":
                import_answers(connection, records, file, refs, replace, result)
            elif kind == "answer-labels":
                import_answer_labels(connection, records, file, annotator, refs, result)
        return result

    return project.write(work)


def _lead_only(access: Access | None, doing: str) -> None:
    """Refuse ``doing`` unless ``access`` may lead (None: nobody known, the least rights)."""
    if access is None:
        raise UsageError(f"Only a lead may {doing}, and who is asking is not known. Nothing was "
                         "imported.")
    access.require_lead(doing)


def _check_reference(access: Access | None, reference: bool) -> None:
    if reference:
        _lead_only(access, "mark an annotator as the reference (a change of the roster)")


def import_guidelines(project, source: Source, *, access: Access | None) -> ImportResult:  # noqa: ANN001
    """Store a Markdown file as the project's judging guidelines (setting ``guidelines``): a
    lead's setting."""
    _lead_only(access, "change the judging guidelines")
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
                reference: bool = False, complete: bool = False,
                access: Access | None = None) -> list[ImportResult]:
    """Import a BEIR folder's corpus (as chunks), queries and qrels (as labels of
    ``annotator``): staged, then published in one transaction. ``reference`` as for
    :func:`import_file`."""
    _check_reference(access, reference)
    annotator = check_annotator(annotator)
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
        parts: list[DefinitionImport | LabelImport] = []
        staged: dict[str, Any] = {}
        for kind, path in (("chunks", corpus), ("queries", queries)):
            result = ImportResult(kind=kind, file=str(path))
            definitions = DefinitionImport(session, kind, str(path), replace, result)
            with numbered(kind, folder, "beir", str(path), progress, beir=True) as records:
                definitions.stage(records)
            staged[kind] = definitions.new
            parts.append(definitions)
            results.append(result)
        for path in qrels_files:
            result = ImportResult(kind="qrels", file=str(path))
            labels = LabelImport(session, str(path), annotator, scale, create_missing, result,
                                 pending=staged, keep_unjudged=reference and complete)
            records = ((line, judgment) for _, line, judgment in read_beir_qrels(folder, path=path, numbered=True))
            labels.stage_records(records)
            labels.check()
            parts.append(labels)
            results.append(result)
        with session.write(durable=True) as connection:
            for part in parts:
                part.publish(connection)
                if reference and isinstance(part, LabelImport):
                    _mark_reference(connection, part, complete)
    return results


@gc_paused()
def import_ir_datasets(project, name: str, *, split: str | None = None,  # noqa: ANN001
                       annotator: str | None = None, create_missing: bool = False,
                       replace: bool = False, progress: Progress | None = None,
                       reference: bool = False, complete: bool = False,
                       access: Access | None = None) -> list[ImportResult]:
    """Import an ir_datasets dataset's documents (as chunks), queries and qrels (as labels of
    ``annotator``, by default the dataset's name) in one transaction, as :func:`import_beir`
    does a BEIR folder. ``progress`` counts records, not bytes. ``reference`` as for
    :func:`import_file`."""
    _check_reference(access, reference)
    from ragjudge.formats.irds import dataset_count, dataset_parts, load_dataset, read_dataset

    dataset, full = load_dataset(name, split)
    annotator = check_annotator(full if annotator is None else annotator)
    parts = dataset_parts(dataset)
    if not parts:
        raise UsageError(f"the ir_datasets dataset '{full}' has no documents, queries or qrels.")
    scale = project.scale
    results: list[ImportResult] = []
    with ImportSession(project) as session:
        staged_parts: list[DefinitionImport | LabelImport] = []
        staged: dict[str, Any] = {}
        for kind in parts:
            file = f"ir_datasets:{full} {'docs' if kind == 'chunks' else kind}"
            result = ImportResult(kind=kind, file=file)
            total = dataset_count(dataset, kind)
            report = None if progress is None else (
                lambda done, total=total, file=file: progress(done, total, file, "records"))
            records = read_dataset(dataset, full, kind, numbered=True, progress=report)
            if kind == "qrels":
                labels = LabelImport(session, file, annotator, scale, create_missing, result,
                                     pending=staged, keep_unjudged=reference and complete)
                labels.stage_records(records)
                labels.check()
                staged_parts.append(labels)
            else:
                definitions = DefinitionImport(session, kind, file, replace, result)
                definitions.stage(records)
                staged[kind] = definitions.new
                staged_parts.append(definitions)
            results.append(result)
        with session.write(durable=True) as connection:
            for part in staged_parts:
                part.publish(connection)
                if reference and isinstance(part, LabelImport):
                    _mark_reference(connection, part, complete)
    return results


def _mark_reference(connection: Connection, labels: LabelImport, complete: bool) -> None:
    """Make the annotators of an imported qrels file reference annotators (``--reference``)."""
    from ragjudge.services.access.roster import mark_reference

    names = sorted(labels.annotators or {labels.annotator})
    mark_reference(connection, names, complete=complete)
    closed = " (complete: an unlisted pair of their queries is not relevant)" if complete else ""
    labels.result.notes.append(f"Reference annotator{'s' if len(names) > 1 else ''}: "
                        f"{', '.join(names)}{closed}.")
