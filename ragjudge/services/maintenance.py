"""Keeping a project safe: ``backup`` (a consistent copy while annotators keep working) and
``verify`` (is every event still there and does every label point at something real).

Backup uses SQLite's online backup API in one step: it reads one consistent snapshot of the
database (in WAL mode a reader never blocks writers, so annotators keep labelling), writes it to
a temporary file next to the target, checks the copy with ``PRAGMA integrity_check``, makes it a
self-contained single file (rollback journal instead of WAL), flushes it to disk and only then
renames it to the target name (:func:`ragjudge.files.replacing`, as every file ragjudge writes).
A crash during a backup leaves at most a ``.partial`` file, never a half-written backup under the
real name, and the next backup into that folder removes it. PostgreSQL projects are backed up
with ``pg_dump``; :func:`pg_dump_advice` says how.
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection, make_url

from ragjudge import files
from ragjudge.errors import ProjectError, UsageError
from ragjudge.store import migrate
from ragjudge.store.engine import sqlite_path, sqlite_uri
from ragjudge.store.schema import (
    Adjudication,
    Annotator,
    Answer,
    AnswerJudgment,
    Chunk,
    Facet,
    FacetLink,
    Label,
    Nugget,
    NuggetSupport,
    PairMark,
    Query,
    RunEntry,
)

if TYPE_CHECKING:
    from ragjudge.services.project.database import Project

EVENT_TABLES: dict[str, type[Label] | type[FacetLink] | type[NuggetSupport] | type[Adjudication]
                   | type[PairMark] | type[AnswerJudgment]] = {
    "labels": Label,
    "facet_links": FacetLink,
    "nugget_support": NuggetSupport,
    "adjudications": Adjudication,
    "pair_marks": PairMark,
    "answer_judgments": AnswerJudgment,
}
"""The append-only tables: rows are added, never changed or deleted."""

EXAMPLES = 5
"""How many offending ids a failed check names."""

FUTURE_SLACK = timedelta(minutes=5)

SINGULAR = {"queries": "query", "chunks": "chunk", "annotators": "annotator", "facets": "facet",
            "nuggets": "nugget", "answers": "answer"}


# -- backup ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BackupResult:
    path: Path
    bytes: int
    seconds: float
    events: dict[str, int]
    """Rows per event table in the copy."""


def default_backup_path(db_file: Path, now: datetime | None = None) -> Path:
    """``<name>-backup-<UTC time>.db`` next to the project file."""
    now = now or datetime.now(UTC)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    suffix = db_file.suffix or ".db"
    return db_file.with_name(f"{db_file.stem}-backup-{stamp}{suffix}")


def pg_dump_advice(db: str) -> str:
    """How to back up (and restore) a PostgreSQL project with PostgreSQL's own tools."""
    url = make_url(db)
    plain = url.set(drivername="postgresql", password=None).render_as_string(hide_password=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    dump = f"{url.database or 'ragjudge'}-{stamp}.dump"
    return (
        f"{db.split('@')[-1]} is a PostgreSQL project; back it up with PostgreSQL's own tool, "
        f"which takes a consistent snapshot while annotators keep working: "
        f"pg_dump --format=custom --file {dump} '{plain}' (the password comes from PGPASSWORD or "
        f"~/.pgpass). Restore into an empty database with: pg_restore --dbname '<new database "
        f"URL>' {dump}. No backup was written by ragjudge."
    )


def backup(project: Project, target: str | os.PathLike | None = None, *, overwrite: bool = False) -> BackupResult:
    """Write a consistent copy of a SQLite project to ``target`` (default: a time-stamped file
    next to the project). Safe while annotators write. Raises :class:`UsageError` for a
    PostgreSQL project (see :func:`pg_dump_advice`), :class:`ragjudge.files.OutputError` when
    the target may not or cannot be written (a project is never written over) and
    :class:`ProjectError` when the copy fails."""
    source_path = sqlite_path(project.db)
    if source_path is None:
        raise UsageError(pg_dump_advice(project.db))
    dest = Path(target).expanduser() if target is not None else default_backup_path(source_path)
    _check_target(dest, overwrite=overwrite)
    started = time.perf_counter()
    try:
        with files.replacing(dest) as partial:
            _copy(source_path, partial)
    except sqlite3.Error as exc:
        raise ProjectError(f"Backup of {project.db} to {dest} failed: {exc}. "
                           "The project itself was not changed.") from None
    seconds = time.perf_counter() - started
    with sqlite3.connect(f"file:{dest}?mode=ro", uri=True) as check:
        events = {name: check.execute(f"SELECT count(*) FROM {name}").fetchone()[0] for name in EVENT_TABLES}
    check.close()
    return BackupResult(dest, dest.stat().st_size, seconds, events)


def _check_target(dest: Path, *, overwrite: bool) -> None:
    """A project (this one or another) is never written over, --force or not; any other
    existing file only with --force. The folder, the name and the rest are checked by
    :func:`ragjudge.files.replacing` as for every file ragjudge writes."""
    files.check_target(dest)
    if os.path.lexists(dest) and not os.path.isdir(dest) and not overwrite:
        raise UsageError(f"{dest} already exists; choose another file with -o, or add --force.")


def _copy(source: Path, partial: Path) -> None:
    # read-only: a backup only reads, and so works for a user who may not write the project
    src = sqlite3.connect(sqlite_uri(source, readonly=True), uri=True, timeout=30)
    try:
        dst = sqlite3.connect(partial)
        try:
            # pages=-1: one step, so the copy is one consistent snapshot; in WAL mode this read
            # does not block the annotators' writes.
            src.backup(dst, pages=-1)
            result = dst.execute("PRAGMA integrity_check").fetchall()
            if result != [("ok",)]:
                raise sqlite3.DatabaseError("the copy failed its integrity check: "
                                            + "; ".join(str(r[0]) for r in result[:3]))
            dst.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
            dst.commit()
        finally:
            dst.close()
    finally:
        src.close()


# -- verify ----------------------------------------------------------------------------------


@dataclass
class Check:
    name: str
    status: str
    """``ok``, ``fail`` or ``warn`` (worth a look, not a failure)."""
    detail: str

    @property
    def failed(self) -> bool:
        return self.status == "fail"


@dataclass
class TableSummary:
    events: int
    newest: datetime | None
    first_id: int | None
    last_id: int | None


@dataclass
class VerifyReport:
    db: str
    backend: str
    revision: str | None
    tables: dict[str, TableSummary] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(check.failed for check in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [check for check in self.checks if check.failed]

    @property
    def newest_event(self) -> datetime | None:
        times = [t.newest for t in self.tables.values() if t.newest is not None]
        return max(times) if times else None

    def to_json(self) -> dict[str, Any]:
        newest = self.newest_event
        return {
            "db": self.db,
            "backend": self.backend,
            "schema_revision": self.revision,
            "ok": self.ok,
            "events": {name: t.events for name, t in self.tables.items()},
            "newest_event": newest.isoformat() if newest else None,
            "tables": {
                name: {"events": t.events, "newest": t.newest.isoformat() if t.newest else None,
                       "first_id": t.first_id, "last_id": t.last_id}
                for name, t in self.tables.items()
            },
            "checks": [{"name": c.name, "status": c.status, "detail": c.detail} for c in self.checks],
        }


def verify(project: Project, *, now: datetime | None = None) -> VerifyReport:
    """Check the project: storage integrity, schema revision, every event table (count, newest
    event, ids without gaps), and references from events to queries, chunks, annotators, facets
    and nuggets that no longer exist. Read-only."""
    backend = project.engine.dialect.name
    with project.connect() as connection:
        revision = migrate.current_revision(connection)
        report = VerifyReport(project.shown_db, backend, revision)
        report.checks.append(_integrity(connection, backend))
        report.checks.append(
            Check("schema revision", "ok" if revision == migrate.HEAD else "fail",
                  f"{revision} (newest known: {migrate.HEAD})")
        )
        for name, model in EVENT_TABLES.items():
            row = connection.execute(
                select(func.count(), func.max(model.created_at), func.min(model.id), func.max(model.id))
            ).one()
            report.tables[name] = TableSummary(int(row[0]), _as_datetime(row[1]), row[2], row[3])
        for name, model in EVENT_TABLES.items():
            report.checks.append(_gaps(connection, name, model, report.tables[name], backend))
        report.checks.extend(_references(connection))
        report.checks.append(_undo_references(connection))
        report.checks.append(_clock(report, now or datetime.now(UTC).replace(tzinfo=None)))
    return report


def _as_datetime(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    try:  # SQLite returns max() of a DateTime column as text
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None


def _integrity(connection: Connection, backend: str) -> Check:
    if backend != "sqlite":
        return Check("integrity", "ok", f"{backend}: the server checks its own storage "
                     "(pg_amcheck checks it in depth)")
    rows = [str(r[0]) for r in connection.exec_driver_sql("PRAGMA integrity_check").fetchall()]
    if rows == ["ok"]:
        return Check("integrity", "ok", "PRAGMA integrity_check: ok")
    return Check("integrity", "fail", f"PRAGMA integrity_check: {'; '.join(rows[:EXAMPLES])}"
                 + (f" (and {len(rows) - EXAMPLES} more)" if len(rows) > EXAMPLES else ""))


def _gaps(connection: Connection, name: str, model: Any, summary: TableSummary, backend: str) -> Check:
    """Event ids run 1..n without holes on SQLite (ids are max+1 and rows are never deleted, so
    a hole is a lost event). PostgreSQL sequences skip numbers on rolled-back inserts, so holes
    there are reported, not failed."""
    check = f"{name}: no missing events"
    if summary.events == 0 or summary.first_id is None or summary.last_id is None:
        return Check(check, "ok", "no events yet")  # (a table with events has their ids)
    expected = summary.last_id - (1 if backend == "sqlite" else summary.first_id) + 1
    missing = expected - summary.events
    if missing == 0:
        return Check(check, "ok", f"ids {1 if backend == 'sqlite' else summary.first_id}..{summary.last_id}, "
                     f"{summary.events} events")
    table = model.__table__
    before = table.alias("before")
    # ids after a hole: the id just below them does not exist
    after_hole = (select(table.c.id)
                  .where(table.c.id > summary.first_id,
                         ~select(before.c.id).where(before.c.id == table.c.id - 1).exists())
                  .order_by(table.c.id).limit(EXAMPLES))
    holes = [int(i) - 1 for i in connection.execute(after_hole).scalars()]
    if backend == "sqlite" and summary.first_id > 1:
        holes = [summary.first_id - 1, *holes][:EXAMPLES]
    where = ", ".join(f"id {i}" for i in holes)
    if backend != "sqlite":
        return Check(check, "ok", f"{missing} unused ids (normal on {backend}: sequences skip "
                     f"numbers of rolled-back writes), e.g. {where}")
    return Check(check, "fail", f"{missing} event ids missing (events deleted?), e.g. {where}")


def _missing(connection: Connection, child: Any, column: Any, parent_key: Any) -> tuple[int, list]:
    orphan = ~select(parent_key).where(parent_key == column).exists()
    count = connection.scalar(select(func.count()).select_from(child).where(orphan))
    examples = list(connection.execute(select(child.id if hasattr(child, "id") else column)
                                       .where(orphan).limit(EXAMPLES)).scalars()) if count else []
    return int(count or 0), examples


def _references(connection: Connection) -> list[Check]:
    pairs = [
        ("labels → queries", Label, Label.query_id, Query.id),
        ("labels → chunks", Label, Label.chunk_id, Chunk.id),
        ("labels → annotators", Label, Label.annotator, Annotator.name),
        ("facet links → facets", FacetLink, FacetLink.facet_id, Facet.id),
        ("facet links → chunks", FacetLink, FacetLink.chunk_id, Chunk.id),
        ("nugget support → nuggets", NuggetSupport, NuggetSupport.nugget_id, Nugget.id),
        ("nugget support → chunks", NuggetSupport, NuggetSupport.chunk_id, Chunk.id),
        ("adjudications → queries", Adjudication, Adjudication.query_id, Query.id),
        ("adjudications → chunks", Adjudication, Adjudication.chunk_id, Chunk.id),
        ("flags and comments → queries", PairMark, PairMark.query_id, Query.id),
        ("flags and comments → chunks", PairMark, PairMark.chunk_id, Chunk.id),
        ("flags and comments → annotators", PairMark, PairMark.annotator, Annotator.name),
        ("answer judgments → answers", AnswerJudgment, AnswerJudgment.answer_id, Answer.id),
        ("answer judgments → annotators", AnswerJudgment, AnswerJudgment.annotator, Annotator.name),
    ]
    checks = []
    for name, child, column, parent in pairs:
        count, examples = _missing(connection, child, column, parent)
        if count:
            checks.append(Check(name, "fail", f"{count} events point at a missing "
                                f"{SINGULAR[parent.class_.__tablename__]}, e.g. event ids "
                                + ", ".join(str(e) for e in examples)))
        else:
            checks.append(Check(name, "ok", "every reference exists"))
    orphan = (~select(Query.id).where(Query.id == RunEntry.query_id).exists()
              | ~select(Chunk.id).where(Chunk.id == RunEntry.chunk_id).exists())
    count = connection.scalar(select(func.count()).select_from(RunEntry).where(orphan)) or 0
    checks.append(Check("run entries → queries, chunks", "fail" if count else "ok",
                        f"{count} run entries point at a missing query or chunk" if count
                        else "every reference exists"))
    return checks


def _undo_references(connection: Connection) -> Check:
    undone = Label.__table__.alias("undone")
    bad = (
        select(Label.id)
        .where(Label.undoes.is_not(None))
        .where(~select(undone.c.id).where(
            undone.c.id == Label.undoes, undone.c.id < Label.id, undone.c.annotator == Label.annotator,
            undone.c.query_id == Label.query_id, undone.c.chunk_id == Label.chunk_id).exists())
    )
    ids = list(connection.execute(bad.order_by(Label.id).limit(EXAMPLES)).scalars())
    if not ids:
        return Check("undo events → undone events", "ok", "every undo names an earlier event of its pair")
    count = connection.scalar(select(func.count()).select_from(bad.subquery()))
    return Check("undo events → undone events", "fail",
                 f"{count} undo events name a missing or unrelated event, e.g. ids "
                 + ", ".join(map(str, ids)))


def _clock(report: VerifyReport, now: datetime) -> Check:
    newest = report.newest_event
    if newest is None:
        return Check("newest event", "ok", "no events yet")
    if newest > now + FUTURE_SLACK:
        return Check("newest event", "warn", f"{newest.isoformat(sep=' ', timespec='seconds')} UTC is "
                     "in the future: is a writer's clock wrong?")
    return Check("newest event", "ok", f"{newest.isoformat(sep=' ', timespec='seconds')} UTC")


__all__ = [
    "EVENT_TABLES",
    "BackupResult",
    "Check",
    "TableSummary",
    "VerifyReport",
    "backup",
    "default_backup_path",
    "pg_dump_advice",
    "verify",
]
