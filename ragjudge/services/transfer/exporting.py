"""Exporting a project's qrels, labels, runs, facets and nuggets in ragjudge's file formats.

- ``qrels``: the gold qrels (:func:`ragjudge.services.gold.gold.gold`: adjudication first,
  else the reference, else the aggregation rule, the project's own by default), one line per
  pair; a complete reference's closed world (every chunk any of the project's runs retrieves on
  its queries) is written as 0 lines, so that trec_eval on the file gives the project's numbers,
  bpref and Judged@k included (``listed_only``: without them);
- ``labels``: every annotator's current label per pair (its newest event, when it has a grade),
  with the annotator, the time, the grade's note, and the annotator's flag (``flagged``,
  ``flag_note``) and ``comment``, and the grade's name on the project's scale (``grade_name``,
  last, for people: an import reads the grade); a pair the annotator flagged or commented on without grading
  it is a line without a grade;
- ``run NAME``: the run's entries in rank order;
- ``facets`` / ``nuggets``: every definition, then every annotator's current coverage or support,
  in the lines ``ragjudge import facets|nuggets`` reads back;
- ``answer-labels``: every annotator's current judgment of each generated answer (nugget support
  and citation support), in the lines ``ragjudge import answer-labels`` reads back.

Rows stream from SQL to the file; nothing is held whole except the gold qrels.

Who may export what (``access``, :class:`~ragjudge.services.access.rights.Access`): who sees
every grade exports everything; in a blind project anyone else exports their own rows of the
per-annotator kinds (labels, facets, nuggets, answer labels), the qrels only as
``annotator:THEMSELVES`` (the pairs they judged), and no run (its ranks of pairs not judged yet).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator, Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any
from sqlalchemy import func, select
from ragjudge.errors import UsageError
from ragjudge.formats import write_records
from ragjudge.formats.source import Destination
from ragjudge.services.access.rights import Access
from ragjudge.models import Judgment, RunEntry
from ragjudge.store.schema import Facet, FacetLink, Label, Nugget, NuggetSupport, PairMark, Run
from ragjudge.store.schema import RunEntry as RunEntryRow
from ragjudge.store.schema import published


if TYPE_CHECKING:
    from ragjudge.services.gold.gold import Composition
    from ragjudge.services.project.database import Project


EXPORT_KINDS = ("qrels", "labels", "run", "facets", "nuggets", "answer-labels")


DEFAULT_FORMAT = {"qrels": "trec", "labels": "jsonl", "run": "trec", "facets": "jsonl", "nuggets": "jsonl",
                  "answer-labels": "jsonl"}


def export(project: Project, kind: str, dest: Destination, *, access: Access,
           name: str | None = None, rule: str | None = None, fmt: str | None = None,
           progress: Callable[..., None] | None = None, listed_only: bool = False,
           notes: list[str] | None = None, raw: bool = False) -> int:
    """Write ``kind`` of the project to ``dest`` (a path, ``-`` or a text file) as ``access``
    may read it; returns the number of lines written (not counting a CSV header).
    ``progress(done, total, description, unit)`` hears of the lines written now and then.
    ``listed_only`` and ``notes``: see :func:`export_qrels`. In CSV a text cell that would
    start a spreadsheet formula gets a ``'`` before it unless ``raw``
    (:func:`ragjudge.formats.csvfile.spreadsheet_safe`)."""
    if listed_only and kind != "qrels":
        raise UsageError("--listed-only applies to 'export qrels' only.")
    return _export(project, kind, dest, access=access, name=name, rule=rule, fmt=fmt,
                   progress=progress, listed_only=listed_only, notes=notes, raw=raw)


def _counted(records: Iterable[Any], total: int | None, description: str,
             progress: Callable[..., None] | None) -> Iterator[Any]:
    """``records``, reported every 50,000 to ``progress``."""
    if progress is None:
        yield from records
        return
    done = 0
    progress(0, total, description, "lines")
    for record in records:
        yield record
        done += 1
        if done % 50_000 == 0:
            progress(done, total, description, "lines")
    progress(done, total if total is not None else done, description, "lines")


def _export(project: Project, kind: str, dest: Destination, *, access: Access, name: str | None,
            rule: str | None, fmt: str | None, progress: Callable[..., None] | None,
            listed_only: bool = False, notes: list[str] | None = None, raw: bool = False) -> int:
    if kind not in EXPORT_KINDS:
        raise UsageError(f"cannot export '{kind}'; one of: {', '.join(EXPORT_KINDS)}.")
    fmt = fmt or DEFAULT_FORMAT[kind]
    if fmt not in ("trec", "jsonl", "csv"):
        raise UsageError(f"--format {fmt}: exports are written as trec, jsonl or csv.")
    if rule is not None and kind != "qrels":
        raise UsageError("--rule applies to 'export qrels' only.")
    if name is not None and kind != "run":
        raise UsageError(f"'export {kind}' takes no NAME (only 'export run NAME' does).")
    if kind == "qrels":
        return export_qrels(project, dest, access=access, rule=rule, fmt=fmt, progress=progress,
                            listed_only=listed_only, notes=notes, raw=raw)
    if kind == "labels":
        return export_labels(project, dest, access=access, fmt=fmt, progress=progress, raw=raw)
    if kind == "run":
        if not name:
            raise UsageError(f"Name the run: ragjudge export run NAME. Runs: {_run_list(project)}.")
        return export_run(project, name, dest, access=access, fmt=fmt, progress=progress, raw=raw)
    if kind == "facets":
        return export_facets(project, dest, access=access, fmt=fmt, raw=raw)
    if kind == "answer-labels":
        return export_answer_labels(project, dest, access=access, fmt=fmt, raw=raw)
    return export_nuggets(project, dest, access=access, fmt=fmt, raw=raw)


def _check_may_export_qrels(access: Access, rule: str | None) -> None:
    """The gold (or another annotator's grades) for who sees every grade; anyone else's own
    grades only (``annotator:THEIR NAME``)."""
    if access.sees_all or (access.name is not None and rule == f"annotator:{access.name}"):
        return
    what = ("another annotator's grades" if rule is not None and rule.startswith("annotator:")
            else "the gold qrels")
    own = (f"--rule annotator:{access.name}" if access.name is not None
           else "--by YOUR NAME --rule annotator:YOUR NAME")
    access.require_sees_all(f"export {what} (anyone exports their own grades with {own})")


def export_qrels(project: Project, dest: Destination, *, access: Access, rule: str | None = None,
                 fmt: str = "trec", progress: Callable[..., None] | None = None,
                 listed_only: bool = False, notes: list[str] | None = None, raw: bool = False) -> int:
    """The gold qrels under ``rule`` (default: the project's rule), with a complete reference's
    implied 0 lines unless ``listed_only``. ``notes`` (a list) receives the lines that say what
    was written: the gold's composition, and how many implied lines were written or left out.

    As ``access`` may read them: whole for who sees every grade; else only
    ``annotator:THEMSELVES``, on the pairs they judged (an adjudication or an implied line of
    another pair is the gold of a pair they have not judged)."""
    from ragjudge.services.gold.gold import gold

    _check_may_export_qrels(access, rule)
    found = gold(project, rule)
    qrels = found.triples(listed_only=listed_only)
    visible = access.pair_filter()
    if visible is not None:  # the pairs the annotator judged: no implied line to speak of
        qrels = [line for line in qrels if visible(line[0], line[1])]
    if notes is not None:
        notes.extend(qrels_notes(found.composition, listed_only)[:1 if visible else None])
    lines = _counted(qrels, len(qrels), "export qrels", progress)
    if fmt == "trec":
        return write_records("qrels", lines, dest, "trec")
    return write_records("qrels", (Judgment(query_id=q, chunk_id=c, grade=g) for q, c, g in lines),
                         dest, fmt, raw=raw)


def qrels_notes(composition: Composition, listed_only: bool) -> list[str]:
    """What an export of a gold with ``composition`` wrote, for the person who asked."""
    lines = [composition.describe()]
    implied = composition.implied_pairs
    if implied and listed_only:
        lines.append(f"{implied:,} implied lines of the complete reference left out (--listed-only): "
                     "trec_eval on this file counts those chunks as unjudged, so bpref and "
                     "Judged@k differ from the project's.")
    elif implied:
        lines.append(f"{implied:,} of the lines are the complete reference's implied 0 lines: every "
                     "chunk any of the project's runs retrieves on its queries that it does not "
                     "list (--listed-only leaves them out).")
    return lines


def label_lines(project: Project, annotator: str | None = None) -> Iterator[dict[str, Any]]:
    """Every annotator's (or one ``annotator``'s) current label per pair with a grade, and
    every pair an annotator flagged or commented on, as label-line dicts sorted by query, chunk
    and annotator.

    ``created_at`` is the grade's time, or on a line without a grade the newest flag or comment's.
    """
    from sqlalchemy import true, union

    from ragjudge.services.events.marks import set_marks
    from ragjudge.services.events.labels import newest_label_ids

    labels, marks = Label.__table__, PairMark.__table__
    newest = newest_label_ids()
    graded = (select(labels.c.annotator, labels.c.query_id, labels.c.chunk_id, labels.c.grade,
                     labels.c.note, labels.c.created_at)
              .join(newest, labels.c.id == newest.c.id).where(labels.c.grade.is_not(None))
              .subquery())
    flags = set_marks("flag").subquery()
    comments = set_marks("comment").subquery()
    last_mark = (select(marks.c.annotator, marks.c.query_id, marks.c.chunk_id,
                        func.max(marks.c.created_at).label("created_at"))
                 .where(marks.c.kind != "review")  # a lead's answer to someone else's mark
                 .group_by(marks.c.annotator, marks.c.query_id, marks.c.chunk_id).subquery())
    keys = union(*(select(t.c.annotator, t.c.query_id, t.c.chunk_id).where(
        t.c.annotator == annotator if annotator is not None else true())
        for t in (graded, flags, comments))).subquery()

    def on(table: Any) -> Any:
        return ((table.c.annotator == keys.c.annotator) & (table.c.query_id == keys.c.query_id)
                & (table.c.chunk_id == keys.c.chunk_id))

    stmt = (select(keys.c.query_id, keys.c.chunk_id, keys.c.annotator, graded.c.grade, graded.c.note,
                   func.coalesce(graded.c.created_at, last_mark.c.created_at).label("created_at"),
                   (flags.c.annotator.is_not(None)).label("flagged"), flags.c.text.label("flag_note"),
                   comments.c.text.label("comment"))
            .select_from(keys.outerjoin(graded, on(graded)).outerjoin(flags, on(flags))
                         .outerjoin(comments, on(comments)).outerjoin(last_mark, on(last_mark)))
            .order_by(keys.c.query_id, keys.c.chunk_id, keys.c.annotator))
    names = {level.grade: level.name for level in project.scale.levels}
    with project.connect() as connection:
        for row in connection.execution_options(yield_per=BATCH_ROWS).execute(stmt):
            created = row.created_at
            if isinstance(created, str):  # SQLite returns max() of a DateTime column as text
                created = datetime.fromisoformat(created)
            yield {"query_id": row.query_id, "chunk_id": row.chunk_id, "grade": row.grade,
                   "annotator": row.annotator, "note": row.note,
                   "created_at": created.isoformat() if created else None,
                   "flagged": bool(row.flagged), "flag_note": row.flag_note, "comment": row.comment,
                   "grade_name": names.get(row.grade)}


BATCH_ROWS = 10_000


def export_labels(project: Project, dest: Destination, *, access: Access, fmt: str = "jsonl",
                  progress: Callable[..., None] | None = None, raw: bool = False) -> int:
    """Every annotator's current labels with annotator, time (``created_at``, UTC), note, flag
    and comment; in a blind project, an annotator's own only (:meth:`Access.readable_annotator`)."""
    if fmt == "trec":
        raise UsageError("labels carry an annotator, a time, notes, flags and comments, which TREC qrels cannot "
                         "hold; use --format jsonl or csv (or 'export qrels' for TREC).")
    whose = access.readable_annotator(None, "labels")
    return write_records("labels", _counted(label_lines(project, whose), None, "export labels",
                                            progress), dest, fmt, raw=raw)


def run_entries(project: Project, name: str) -> Generator[RunEntry, None, None]:
    """The entries of run ``name`` in rank order per query (queries sorted by id as bytes),
    from the run's stored arrays (:mod:`ragjudge.store.run_arrays`), else from its rows."""
    from ragjudge.store.run_arrays import read_arrays

    entries = RunEntryRow.__table__
    runs = Run.__table__
    with project.connect() as connection:
        generation = connection.scalar(select(runs.c.generation).where(runs.c.name == name))
        if generation is None:
            raise UsageError(f"There is no run named '{name}'. Runs: {_run_list(project)}.")
        arrays = read_arrays(connection, name, generation)
        if arrays is None:
            stmt = (select(entries.c.query_id, entries.c.chunk_id, entries.c.score, entries.c.rank)
                    .where(entries.c.run == name, published()).order_by(entries.c.query_id, entries.c.rank))
            for row in connection.execution_options(yield_per=BATCH_ROWS).execute(stmt):
                yield RunEntry(query_id=row.query_id, chunk_id=row.chunk_id, score=row.score, rank=row.rank)
            return
    yield from _array_entries(arrays)


def _array_entries(arrays: dict[str, Any]) -> Iterator[RunEntry]:
    """A run's entries from its stored arrays, built without validation (they were checked when
    the run was imported)."""
    from ragjudge.services.project.columns import decode, unpack_ids

    queries = decode(unpack_ids(arrays["query_ids"], arrays["query_ids_lengths"]))
    offsets = arrays["offsets"].tolist()
    data, lengths = arrays["chunk_ids"], arrays["chunk_ids_lengths"]
    starts = [0, *itertools.accumulate(lengths.tolist())]
    raw = data.tobytes()
    scores = arrays["scores"].tolist()
    make = RunEntry.model_construct
    for q, query_id in enumerate(queries):
        for row in range(offsets[q], offsets[q + 1]):
            score = scores[row]
            yield make(query_id=query_id, chunk_id=raw[starts[row]:starts[row + 1]].decode("utf-8"),
                       score=None if score != score else score, rank=row - offsets[q] + 1)


def run_size(project: Project, name: str) -> int | None:
    """How many entries run ``name`` has, when its arrays say so at once."""
    from ragjudge.store.run_arrays import read_arrays

    runs = Run.__table__
    with project.connect() as connection:
        generation = connection.scalar(select(runs.c.generation).where(runs.c.name == name))
        arrays = None if generation is None else read_arrays(connection, name, generation)
    return None if arrays is None else len(arrays["scores"])


def export_run(project: Project, name: str, dest: Destination, *, access: Access,
               fmt: str = "trec", progress: Callable[..., None] | None = None, raw: bool = False) -> int:
    """Run ``name`` with its ranks and scores (TREC tag: the run's name): for who sees every
    pair's rank (in a blind project, a run's ranks would show an annotator which runs found a
    pair they have still to judge)."""
    access.require_sees_all("export a run (its ranks of every pair)")
    entries = run_entries(project, name)
    if progress is not None:
        entries = _counted(entries, run_size(project, name), f"export run {name}", progress)  # type: ignore[assignment]
    first = next(entries, None)  # raises the unknown-run error before the file is opened
    if first is None:
        return write_records("run", [], dest, fmt, tag=name, raw=raw)

    def chained() -> Iterator[RunEntry]:
        yield first
        yield from entries

    try:
        return write_records("run", chained(), dest, fmt, tag=name, raw=raw)
    finally:
        entries.close()  # a refused or failed write ends the read (and its connection) now


def facet_lines(project: Project) -> list[dict[str, Any]]:
    """Facet definitions, then each annotator's current coverage (its newest link event)."""
    facets, links = Facet.__table__, FacetLink.__table__
    newest = select(func.max(links.c.id).label("id")).group_by(
        links.c.facet_id, links.c.chunk_id, links.c.annotator).subquery()
    with project.connect() as connection:
        defined = connection.execute(select(facets.c.query_id, facets.c.name).where(
            facets.c.removed.is_(False)).order_by(facets.c.query_id, facets.c.id)).all()
        linked = connection.execute(
            select(facets.c.query_id, facets.c.name, links.c.chunk_id, links.c.annotator, links.c.covered)
            .join(newest, links.c.id == newest.c.id).join(facets, facets.c.id == links.c.facet_id)
            .where(facets.c.removed.is_(False))
            .order_by(facets.c.query_id, facets.c.id, links.c.chunk_id, links.c.annotator)).all()
    lines = [{"query_id": q, "facet": n} for q, n in defined]
    lines += [{"query_id": q, "facet": n, "chunk_id": c, "annotator": a, "covered": bool(v)}
              for q, n, c, a, v in linked]
    return lines


def _own_lines(lines: list[dict[str, Any]], access: Access, what: str) -> list[dict[str, Any]]:
    """The definitions (lines without an annotator) and the lines of whose ``access`` may read."""
    whose = access.readable_annotator(None, what)
    if whose is None:
        return lines
    return [line for line in lines if line.get("annotator") in (None, whose)]


def export_facets(project: Project, dest: Destination, *, access: Access, fmt: str = "jsonl",
                  raw: bool = False) -> int:
    if fmt == "trec":
        raise UsageError("facets have no TREC format; use --format jsonl or csv.")
    return write_records("facets", _own_lines(facet_lines(project), access, "facet links"), dest, fmt,
                         raw=raw)


def nugget_lines(project: Project) -> list[dict[str, Any]]:
    """Nugget definitions, then each annotator's current support (its newest event)."""
    nuggets, support = Nugget.__table__, NuggetSupport.__table__
    newest = select(func.max(support.c.id).label("id")).group_by(
        support.c.nugget_id, support.c.chunk_id, support.c.annotator).subquery()
    with project.connect() as connection:
        defined = connection.execute(
            select(nuggets.c.query_id, nuggets.c.text, nuggets.c.importance, nuggets.c.kind, nuggets.c.weight)
            .where(nuggets.c.removed.is_(False)).order_by(nuggets.c.query_id, nuggets.c.id)).all()
        supported = connection.execute(
            select(nuggets.c.query_id, nuggets.c.text, support.c.chunk_id, support.c.annotator, support.c.support)
            .join(newest, support.c.id == newest.c.id).join(nuggets, nuggets.c.id == support.c.nugget_id)
            .where(nuggets.c.removed.is_(False))
            .order_by(nuggets.c.query_id, nuggets.c.id, support.c.chunk_id, support.c.annotator)).all()
    lines = [{"query_id": q, "nugget": t, "importance": i, "kind": k, "weight": w}
             for q, t, i, k, w in defined]
    lines += [{"query_id": q, "nugget": t, "chunk_id": c, "annotator": a, "support": s}
              for q, t, c, a, s in supported]
    return lines


def export_nuggets(project: Project, dest: Destination, *, access: Access, fmt: str = "jsonl",
                   raw: bool = False) -> int:
    if fmt == "trec":
        raise UsageError("nuggets have no TREC format; use --format jsonl or csv.")
    return write_records("nuggets", _own_lines(nugget_lines(project), access, "nugget support"),
                         dest, fmt, raw=raw)


def answer_label_lines(project: Project) -> list[dict[str, Any]]:
    """Every annotator's current judgment of each answer (its newest event, when it has a
    support): the nugget lines, then the citation lines, sorted by query, run and annotator."""
    from ragjudge.services.events.answers import current_judgments

    with project.connect() as connection:
        judgments = current_judgments(connection)
    nuggets = [{"query_id": j.query_id, "run": j.run, "nugget": j.nugget, "support": j.support,
                "annotator": j.annotator} for j in judgments if j.nugget is not None]
    citations = [{"query_id": j.query_id, "run": j.run, "sentence": j.sentence,
                  "chunk_id": j.chunk_id, "support": j.support, "annotator": j.annotator}
                 for j in judgments if j.nugget is None]
    return nuggets + citations


def export_answer_labels(project: Project, dest: Destination, *, access: Access,
                         fmt: str = "jsonl", raw: bool = False) -> int:
    """The answer judgments, in the lines ``ragjudge import answer-labels`` reads back (in a
    blind project an annotator's own)."""
    if fmt == "trec":
        raise UsageError("answer labels have no TREC format; use --format jsonl or csv.")
    return write_records("answer-labels", _own_lines(answer_label_lines(project), access,
                                                     "answer labels"), dest, fmt, raw=raw)


def _run_list(project: Project) -> str:
    with project.connect() as connection:
        names = list(connection.scalars(select(Run.__table__.c.name).order_by(Run.__table__.c.name)))
    return ", ".join(names) if names else "none yet (ragjudge import run FILE)"
