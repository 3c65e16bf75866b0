"""What the web layer reads and writes in the database itself, beside the services: the only
module of :mod:`ragjudge.web` that imports the store or SQLAlchemy.

- the project, opened once, with its write-ahead log checkpointed on a thread of its own on
  SQLite (:func:`open_project`, :class:`Checkpoints`);
- who a token or a session is, each one indexed read (:func:`member_by_token`,
  :func:`still_valid`);
- **labels committed in turns** (:class:`LabelWriter`): labels arriving while a commit is under
  way share the next transaction (one wait for the disk instead of one each), each checked
  against what its page saw (``seen``) on its own and acknowledged only once committed; and the
  undo that checks the event it undoes (``expect``) in the same transaction
  (:func:`undo_newest`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select
from sqlalchemy.orm import Session

from ragjudge.services.access.identity import Identity, TokenRevoked, token_digest
from ragjudge.services.access.identity import still_valid as token_still_valid
from ragjudge.services.events.labels import RECHECK, not_recheck
from ragjudge.services.events.state import LabelState
from ragjudge.services.project.database import Project
from ragjudge.store.annotators import ensure_annotators
from ragjudge.store.schema import Annotator, Label, utcnow
from ragjudge.web.backend import SOURCE, LabelConflict, Who, state_json, writing

CHECKPOINT_SECONDS = 1.0
"""How often the server moves the write-ahead log into the database file (SQLite)."""


# -- the project -----------------------------------------------------------------------------


def open_project(db: str) -> Project:
    """The project, opened once for the server's lifetime. On SQLite its write-ahead log is
    checkpointed by a thread of its own (:class:`Checkpoints`), not by whichever commit happens
    to fill it: that commit would wait for the database file to be written and synced, a pause
    of a tenth of a second or more in the middle of someone's label."""
    project = Project.open(db)
    if project.engine.dialect.name == "sqlite" and not project.readonly:
        Checkpoints(project).start()
    return project


class Checkpoints:
    """Moves the write-ahead log into the database file every :data:`CHECKPOINT_SECONDS` on a
    thread of its own (SQLite's passive checkpoint: it never waits for a reader or a writer),
    and turns off the checkpoints a commit would otherwise run itself, on this process's
    connections only (the app and the commands keep SQLite's own)."""

    def __init__(self, project: Project) -> None:
        from sqlalchemy import event

        self.project = project
        self.stopped = threading.Event()
        event.listen(project.engine, "connect", self._no_autocheckpoint)
        project.engine.dispose()  # connections made before the listener: made again

    @staticmethod
    def _no_autocheckpoint(dbapi_connection: Any, _record: object) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA wal_autocheckpoint = 0")
        cursor.close()

    def start(self) -> None:
        threading.Thread(target=self._run, name="ragjudge-checkpoint", daemon=True).start()

    def _run(self) -> None:
        from sqlalchemy import text

        while not self.stopped.wait(CHECKPOINT_SECONDS):
            try:
                with self.project.connect() as connection:
                    connection.execute(text("PRAGMA wal_checkpoint(PASSIVE)"))
            except Exception:  # noqa: BLE001 - a checkpoint missed is made at the next turn
                continue


# -- who is asking ---------------------------------------------------------------------------

_BY_DIGEST = (select(Annotator.name, Annotator.role, Annotator.status, Annotator.token_hash)
              .where(Annotator.token_hash == bindparam("digest")))


def member_by_token(project: Project, token: str) -> tuple[Who, str] | None:
    """The active member a personal token belongs to and the token's digest (what a session
    keeps instead of the token), or None: :func:`ragjudge.services.roster.by_token`'s rule, as
    one indexed read (a script sends its token with every request)."""
    import secrets

    if not token or not token.strip():
        return None
    digest = token_digest(token)
    with project.connect() as connection:
        row = connection.execute(_BY_DIGEST, {"digest": digest}).first()
    if row is None or (row[2] or "active") != "active" or not secrets.compare_digest(row[3] or "", digest):
        return None
    return Who(row[0], row[1] or "annotator", True, digest), digest


def still_valid(project: Project, name: str, digest: str) -> tuple[Who | None, str]:
    """Whether a session made from the token with ``digest`` for ``name`` still opens the
    project (one primary-key lookup): ``(who, "")``, or ``(None, why)`` with ``why`` one of
    ``revoked`` (a new token was issued), ``retired``, ``unknown`` (renamed or removed)."""
    import secrets

    with project.connect() as connection:
        row = connection.execute(select(Annotator.status, Annotator.token_hash, Annotator.role)
                                 .where(Annotator.name == name)).first()
    if row is None:
        return None, "unknown"
    status, token_hash, role = row
    if (status or "active") != "active":
        return None, "retired"
    if not secrets.compare_digest(token_hash or "", digest):
        return None, "revoked"
    return Who(name, role or "annotator", True, digest), ""


# -- label events ----------------------------------------------------------------------------

_LABELS = Label.__table__
_NEWEST_EVENT = (
    select(_LABELS.c.id, _LABELS.c.grade, _LABELS.c.skipped, _LABELS.c.note, _LABELS.c.created_at,
           _LABELS.c.undoes, _LABELS.c.source)
    .where(_LABELS.c.annotator == bindparam("annotator"), _LABELS.c.query_id == bindparam("query"),
           _LABELS.c.chunk_id == bindparam("chunk"), not_recheck())
    .order_by(_LABELS.c.id.desc()).limit(1))
"""An annotator's newest (non-recheck) label event of a pair: built once, so that each use is
a lookup in SQLAlchemy's statement cache, not a new statement."""
_INSERT_LABEL = insert(_LABELS)


def _row_state(row: Any) -> LabelState | None:
    if row is None:
        return None
    return LabelState(int(row[0]), row[1], bool(row[2]), row[3], row[4], row[5], row[6])


def newest_label(connection: Connection, annotator: str, query_id: str, chunk_id: str) -> LabelState | None:
    """The annotator's newest (non-recheck) label event of the pair, on ``connection`` (one
    indexed read), or None."""
    return _row_state(connection.execute(_NEWEST_EVENT, {
        "annotator": annotator, "query": query_id, "chunk": chunk_id}).first())


def _label_row_json(row: Label | None) -> dict[str, Any] | None:
    if row is None:
        return None
    state = LabelState(int(row.id), row.grade, bool(row.skipped), row.note, row.created_at,
                       row.undoes, row.source)
    return state_json(state)


# -- labels committed in turns ---------------------------------------------------------------


@dataclass
class Wanted:
    """One label a request asks for, and what became of it."""

    name: str
    query_id: str
    chunk_id: str
    grade: int | None
    skip: bool
    seen: int | None
    duration_ms: int | None
    digest: str = ""
    state: LabelState | None = None
    conflict: Exception | None = None


class LabelWriter:
    """Labels committed in turns: the requests that arrive while one commit is under way are
    written together by the next one, in one transaction.

    A SQLite commit waits for the disk (``synchronous=FULL``), a few milliseconds; annotators
    labelling at the same moment would each wait for every commit before theirs. Here the first
    request to find no commit under way commits what is waiting (itself, when alone) and the
    others wait for it; then the next one does the same. Each label is still checked on its own
    (its ``seen``, in the order it came) and acknowledged only once its transaction is
    committed; a label refused for a conflict writes nothing and keeps no other from being
    written. Should the transaction fail, every label in it fails (nothing was written) and each
    request is answered with the error, for its page to send again.
    """

    def __init__(self, project: Project) -> None:
        self.project = project
        self._turn = threading.Condition()
        self._waiting: list[Wanted] = []
        self._busy = False
        self._done: dict[int, BaseException | None] = {}

    def write(self, wanted: Wanted) -> LabelState:
        with self._turn:
            self._waiting.append(wanted)
            while id(wanted) not in self._done and self._busy:
                self._turn.wait()
            if id(wanted) in self._done:
                return self._outcome(wanted)
            self._busy = True
            batch, self._waiting = self._waiting, []
        error: BaseException | None = None
        try:
            with writing(self.project):
                self.project.write(lambda session: self._work(session, batch))
        except BaseException as exc:  # noqa: BLE001 - handed to every request of the batch
            error = exc
        with self._turn:
            for each in batch:
                self._done[id(each)] = error
            self._busy = False
            self._turn.notify_all()
            return self._outcome(wanted)

    def _outcome(self, wanted: Wanted) -> LabelState:
        error = self._done.pop(id(wanted))
        if error is not None:
            raise error
        if wanted.conflict is not None:
            raise wanted.conflict
        assert wanted.state is not None
        return wanted.state

    @staticmethod
    def _work(session: Session, batch: list[Wanted]) -> None:
        connection = session.connection()
        # a label that comes with a token's digest is checked against the annotator's row
        # below (no row, no label); only one without a digest may meet a new name
        ensure_annotators(connection, sorted({w.name for w in batch if not w.digest}))
        for w in batch:
            w.state, w.conflict = None, None  # a retried transaction starts over
            if w.digest and not token_still_valid(session, Identity(w.name, "token", w.digest)):
                w.conflict = TokenRevoked(
                    f"The login token of {w.name} no longer opens this project (a new one was "
                    "issued, or the annotator was retired): nothing was recorded. Log in again "
                    "with the new token.")
                continue
            newest = newest_label(connection, w.name, w.query_id, w.chunk_id)
            if (None if newest is None else newest.id) != w.seen:
                w.conflict = LabelConflict(
                    state_json(newest), "Your label of this pair changed since this page "
                    "showed it (another tab, the app or a script recorded one). Nothing was "
                    "written; choose which label to keep.")
                continue
            at = utcnow()
            done = connection.execute(_INSERT_LABEL, {
                "query_id": w.query_id, "chunk_id": w.chunk_id, "annotator": w.name,
                "grade": w.grade, "skipped": w.skip, "flagged": False, "note": None,
                "created_at": at, "duration_ms": w.duration_ms, "source": SOURCE})
            event_id = done.inserted_primary_key[0]  # type: ignore[index]  # one row was inserted
            w.state = LabelState(int(event_id), w.grade, w.skip, None, at, None, SOURCE)


# -- undo ------------------------------------------------------------------------------------


def undo_newest(project: Project, who: Who, expect: int | None) -> dict[str, Any] | None:
    """:func:`ragjudge.services.labels.events.undo_last`, refused (:class:`LabelConflict`) when the
    event it would undo is not ``expect``, in the same transaction as the undo."""
    name = who.name

    def work(session: Session) -> dict[str, Any] | None:
        if not token_still_valid(session, who.identity):
            raise TokenRevoked(f"The login token of {name} no longer opens this project: nothing "
                               "was undone. Log in again with the new token.")
        undone = select(Label.undoes).where(Label.annotator == name, Label.undoes.is_not(None))
        target = session.scalars(
            select(Label).where(Label.annotator == name, Label.undoes.is_(None),
                                Label.id.not_in(undone))
            .order_by(Label.id.desc()).limit(1)).first()
        if target is None:
            return None
        if expect is not None and int(target.id) != expect:
            current = _label_row_json(target)
            assert current is not None
            current.update(query_id=target.query_id, chunk_id=target.chunk_id)
            raise LabelConflict(current, "Your newest label is not the one this page recorded "
                                "(another tab, the app or a script labelled since). Nothing was "
                                "undone; undo that one instead, or leave it.")
        prev = None
        if target.source != RECHECK:
            prev = session.scalars(
                select(Label).where(Label.annotator == name, Label.query_id == target.query_id,
                                    Label.chunk_id == target.chunk_id, not_recheck(),
                                    Label.id < target.id)
                .order_by(Label.id.desc()).limit(1)).first()
        event = Label(query_id=target.query_id, chunk_id=target.chunk_id, annotator=name,
                      grade=prev.grade if prev else None, skipped=bool(prev.skipped) if prev else False,
                      flagged=False, note=prev.note if prev else None, created_at=utcnow(),
                      undoes=target.id, source=target.source)
        session.add(event)
        session.flush()
        return {"event_id": int(event.id), "undone_id": int(target.id),
                "query_id": target.query_id, "chunk_id": target.chunk_id}

    with writing(project):
        return project.write(work)
