"""The one module of the web layer that calls ragjudge's services.

Every page and every ``/api/v1`` route asks here, with the identity the request logged in as
(:class:`Who`); nothing else in :mod:`ragjudge.web` imports a service, the store or SQLAlchemy.
When the services move (into packages, behind an access object), this file is what changes.

What it adds to the services, and why here:

- **one judging queue per annotator**, shared by their tabs and guarded by a lock
  (:class:`Queues`): a :class:`~ragjudge.services.labels.queue.JudgingQueue` holds a cache of the
  annotator's label states, so the pair shown next is re-read from the database before it is
  shown (a label given meanwhile in the app or another process moves the queue on);
- **labels that never overwrite unseen**: :func:`post_label` writes a label only if the
  annotator's newest event for the pair is the one the page saw (``seen``), read and written in
  one transaction; otherwise :class:`LabelConflict`. The same for undo (``expect``). The label
  service will take ``seen`` itself; until then the check lives here;
- **labels committed in turns** (:class:`LabelWriter`): labels arriving while a commit is under
  way share the next transaction (one wait for the disk instead of one each), each checked on
  its own and acknowledged only once committed;
- **one writer at a time in this process** on SQLite (:data:`WRITES`): the project's writer
  queue keeps its lock file in the :class:`Project`, which is shared by every request thread;
- the evaluation JSON of ``ragjudge eval --format json`` (:func:`evaluation_json`).
"""

from __future__ import annotations

import io
import threading
import time
import weakref
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import bindparam, insert, select
from sqlalchemy.orm import Session

from ragjudge.errors import RagjudgeError, UsageError
from ragjudge.services.access import roster
from ragjudge.services.access.identity import Identity, TokenRevoked, token_digest, token_guard
from ragjudge.services.access.identity import still_valid as token_still_valid
from ragjudge.services.access.visibility import Access, access_for
from ragjudge.services.events import annotators as seen_marks
from ragjudge.services.events.labels import RECHECK, not_recheck
from ragjudge.services.events.marks import NO_MARKS, marks_of_query
from ragjudge.services.events.state import LabelState, current_label, label_history
from ragjudge.services.labels import answers, review, texts
from ragjudge.services.labels import facets as marks
from ragjudge.services.labels import events as label_events
from ragjudge.services.labels.queue import JudgingQueue, PairView
from ragjudge.services.labels.scale import current_scale
from ragjudge.services.project.database import Project
from ragjudge.services.scoring.settled import judging_queue
from ragjudge.store.annotators import ensure_annotators
from ragjudge.store.schema import Annotator, Label, utcnow
from ragjudge.terms import segments

T = TypeVar("T")

SOURCE = "web"
"""``labels.source`` of the events the web pages and the API write."""
DEPTH = 10
"""The judging pool's depth (the app's default): each run's top 10 per query."""
QUEUE_SECONDS = 600.0
"""A judging queue is built again after this long (new runs, assignments, a send-back)."""
IDLE_SECONDS = 1800.0
"""An annotator's queues are let go after this long without a request."""
NEXT_LIMIT = 20
"""The most pairs one request for next pairs returns."""
CHECKPOINT_SECONDS = 1.0
"""How often the server moves the write-ahead log into the database file (SQLite)."""
SHAPE_SECONDS = 10.0
"""How long whether a query has facets or nuggets is taken as known (one added here is seen at
once; one added in the app or by an import, within this long)."""


class LabelConflict(Exception):
    """The annotator's newest event for the pair is not the one the page saw: another tab, the
    app or a script recorded something meanwhile. ``current`` is that event (None: none)."""

    def __init__(self, current: dict[str, Any] | None, message: str) -> None:
        super().__init__(message)
        self.current = current


class NotFound(Exception):
    """What a request names is not there for this annotator (a pair outside their queue, an
    answer that does not exist)."""


@dataclass(frozen=True)
class Who:
    """A logged-in person as the roster says now."""

    name: str
    role: str
    active: bool
    digest: str = ""
    """The SHA-256 of the token the session logged in with (never the token itself)."""

    @property
    def is_lead(self) -> bool:
        return self.role == "lead" and self.active

    @property
    def identity(self) -> Identity:
        return Identity(self.name, "token", self.digest or None)

    def access(self, project: Project) -> Access:
        """What this person may see and change, by the one rule of the services."""
        return access_for(project, self.identity)

    def guarded(self, project: Project) -> Project:
        """``project`` with this session's token checked inside every write transaction: a
        token revoked or an annotator retired records nothing more."""
        return project.guarded(token_guard(self.identity)) if self.digest else project


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


def project_title(project: Project) -> str:
    return project.name


def scale_json(project: Project) -> dict[str, Any]:
    scale = current_scale(project)  # the names as stored now: a lead may rename the grades
    return {"describe": scale.describe(), "binary": scale.is_binary, "threshold": scale.threshold,
            "levels": [{"grade": level.grade, "name": level.name, "description": level.description}
                       for level in scale.levels]}


def guidelines(project: Project) -> str | None:
    text = project.get_setting("guidelines")
    return str(text) if text else None


def seen_guidelines(project: Project, who: Who) -> bool:
    return seen_marks.annotator_seen_guidelines(project, who.name)


def mark_guidelines_seen(project: Project, who: Who) -> None:
    with writing(project):
        seen_marks.mark_guidelines_seen(who.guarded(project), who.name)


def anyone_can_log_in(project: Project) -> bool:
    return any(m.has_token and m.active for m in roster.members(project, counts=False))


# -- writes: one at a time in this process on SQLite -----------------------------------------

WRITES = threading.Lock()


@contextmanager
def writing(project: Project) -> Iterator[None]:
    """Hold :data:`WRITES` around a write on SQLite (PostgreSQL writers need no turn-taking)."""
    if project.engine.dialect.name != "sqlite":
        yield
        return
    with WRITES:
        yield


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


def members_json(project: Project) -> list[dict[str, Any]]:
    return [m.to_json() for m in roster.members(project)]


# -- judging queues --------------------------------------------------------------------------


@dataclass
class _Slot:
    lock: threading.RLock = field(default_factory=threading.RLock)
    queue: JudgingQueue | None = None
    built: float = 0.0
    answers: answers.AnswerQueue | None = None
    answers_built: float = 0.0
    used: float = field(default_factory=time.monotonic)


class Queues:
    """Each annotator's judging queue and answer queue, built on first use and again after
    :data:`QUEUE_SECONDS`; a request holds the annotator's lock while it uses them."""

    def __init__(self, project: Project, order: str = "depth") -> None:
        self.project = project
        self.order = order
        """depth, query or settle: :func:`ragjudge.services.scoring.settled.judging_queue`'s order"""
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.Lock()
        self._counting: set[str] = set()
        self._swept = time.monotonic()
        self._counter = ThreadPoolExecutor(1, thread_name_prefix="ragjudge-count")
        self.labels = LabelWriter(project)

    def slot(self, name: str) -> _Slot:
        now = time.monotonic()
        with self._lock:
            found = self._slots.get(name)
            if found is None:
                found = self._slots[name] = _Slot()
            found.used = now
            if now - self._swept > IDLE_SECONDS / 10:
                self._sweep(now)
            return found

    def _sweep(self, now: float) -> None:
        """Let go of the queues of annotators idle for :data:`IDLE_SECONDS` (built again when
        they come back): memory follows the people at work, not everyone who ever logged in."""
        self._swept = now
        for slot in self._slots.values():
            if now - slot.used > IDLE_SECONDS and slot.lock.acquire(blocking=False):
                try:
                    slot.queue = slot.answers = None
                finally:
                    slot.lock.release()

    def judging(self, slot: _Slot, name: str) -> JudgingQueue:
        """The annotator's queue (call with ``slot.lock`` held)."""
        if slot.queue is None or time.monotonic() - slot.built > QUEUE_SECONDS:
            from ragjudge.services.runs.head import ensure_rows

            with writing(self.project):  # a pool deeper than the runs' heads widens them (a
                ensure_rows(self.project, DEPTH)  # read when they are deep enough, as usual)
            slot.queue = judging_queue(self.project, name, order=self.order,  # (then nothing
                                       depth=DEPTH)  # to write; the settle order is weighed on its own thread)
            slot.built = time.monotonic()
            self._count_later(slot.queue)
        return slot.queue

    def answer_queue(self, slot: _Slot, name: str) -> answers.AnswerQueue:
        if slot.answers is None or time.monotonic() - slot.answers_built > QUEUE_SECONDS:
            slot.answers = answers.AnswerQueue(self.project, name)
            slot.answers_built = time.monotonic()
        return slot.answers

    def _count_later(self, queue: JudgingQueue) -> None:
        """The queue's totals are a scan of the pool: counted on one thread of their own, one
        queue after another (many annotators arriving at once do not start many scans at
        once), shown when done (``counting`` until then), as the app does."""
        with self._lock:
            if queue.annotator in self._counting:
                return
            self._counting.add(queue.annotator)
        self._counter.submit(self._count, queue)

    def _count(self, queue: JudgingQueue) -> None:
        try:
            queue.count_totals()
        except RagjudgeError:
            pass  # the progress line stays "counting"; judging is unaffected
        finally:
            with self._lock:
                self._counting.discard(queue.annotator)

    def forget(self, name: str) -> None:
        with self._lock:
            self._slots.pop(name, None)


# -- pairs -----------------------------------------------------------------------------------

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



class _TextCache:
    """Query and chunk texts, kept a minute (they change only by an import), and whether a
    query has facets or nuggets at all, kept :data:`SHAPE_SECONDS`."""

    def __init__(self, size: int = 2048, seconds: float = 60.0) -> None:
        self.size, self.seconds = size, seconds
        self._items: OrderedDict[tuple[str, str], tuple[float, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def forget(self, kind: str, key: str) -> None:
        with self._lock:
            self._items.pop((kind, key), None)

    def get(self, kind: str, key: str, load: Callable[[], Any], seconds: float | None = None) -> Any:
        now = time.monotonic()
        with self._lock:
            found = self._items.get((kind, key))
            if found is not None and now - found[0] < (self.seconds if seconds is None else seconds):
                return found[1]
        value = load()
        with self._lock:
            self._items[(kind, key)] = (now, value)
            self._items.move_to_end((kind, key))
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value


_TEXTS: weakref.WeakKeyDictionary[Project, _TextCache] = weakref.WeakKeyDictionary()
_TEXTS_LOCK = threading.Lock()


def _texts(project: Project) -> _TextCache:
    """The text cache of one open project."""
    with _TEXTS_LOCK:
        found = _TEXTS.get(project)
        if found is None:
            found = _TEXTS[project] = _TextCache()
        return found


def _state_json(state: LabelState | None) -> dict[str, Any] | None:
    if state is None:
        return None
    return {"event_id": state.id, "grade": state.grade, "skipped": state.skipped,
            "undone": state.undone, "note": state.note,
            "at": None if state.created_at is None else state.created_at.isoformat()}


def _query_json(project: Project, query_id: str) -> dict[str, Any]:
    q = _texts(project).get("query", query_id, lambda: texts.query_text(project, query_id))
    return {"id": q.id, "text": q.text, "description": q.description, "category": q.category,
            "narrative": q.narrative}


def _chunk_json(project: Project, chunk_id: str, query_text: str) -> dict[str, Any]:
    c = _texts(project).get("chunk", chunk_id, lambda: texts.chunk_text(project, chunk_id))
    return {"id": c.id, "doc_id": c.doc_id, "title": c.title, "section": c.section, "text": c.text,
            "segments": segments(c.text, query_text)}


def _fresh(project: Project, queue: JudgingQueue, view: PairView) -> PairView:
    """The pair with its label state and marks as the database has them now (one connection,
    two indexed reads)."""
    name = queue.annotator
    with project.connect() as connection:
        state = _row_state(connection.execute(_NEWEST_EVENT, {
            "annotator": name, "query": view.query_id, "chunk": view.chunk_id}).first())
        marks = marks_of_query(connection, name, view.query_id, view.chunk_id).get(
            view.chunk_id, NO_MARKS)
    if state != view.state:
        queue.note_event(view.query_id, view.chunk_id, state)
    if marks != view.marks:
        queue.note_marks(view.query_id, view.chunk_id, marks)
    return PairView(view.position, view.query_id, view.chunk_id, view.pair_index, view.query_pairs,
                    queue.pool(view.query_id).handled, view.sources, state, view.recheck, marks,
                    view.query_slot)


def _annotated(project: Project, query_id: str) -> bool:
    """Whether the query has facets or nuggets (the judging page's panel has something to
    show), known for :data:`SHAPE_SECONDS`."""
    return _texts(project).get("annotated", query_id, lambda: any(
        marks.marks_for(project, query_id)), seconds=SHAPE_SECONDS)


def _pair_json(project: Project, queue: JudgingQueue, view: PairView) -> dict[str, Any]:
    name = queue.annotator
    query = _query_json(project, view.query_id)
    # a lead answers a flag or comment: none to look for on a pair without one
    answer = (review.answer_for(project, name, view.query_id, view.chunk_id)
              if view.marks.any else None)
    facets, nuggets = (marks.marks_for(project, view.query_id, annotator=name, chunk_id=view.chunk_id)
                       if _annotated(project, view.query_id) else ([], []))
    totals = queue.totals
    return {
        "query": query,
        "chunk": _chunk_json(project, view.chunk_id, query["text"]),
        "label": _state_json(view.state),
        "seen": None if view.state is None else view.state.id,
        "marks": {"flagged": view.marks.flagged, "flag_note": view.marks.flag_note,
                  "comment": view.marks.comment},
        "review": None if answer is None else answer.to_json(),
        "facets": [{"id": f.id, "name": f.name, "covered": f.covered} for f in facets],
        "nuggets": [{"id": n.id, "text": n.text, "importance": n.importance, "support": n.support,
                     "kind": n.kind} for n in nuggets],
        "progress": {"pair": view.query_slot + 1, "pairs": view.query_pairs,
                     "judged": view.query_handled, "query": view.position.query + 1,
                     "queries": len(queue.query_ids),
                     "queue_pairs": None if totals is None else totals["pairs"],
                     "queue_handled": None if totals is None else totals["handled"]},
    }


def _open_from(project: Project, queue: JudgingQueue, view: PairView | None) -> PairView | None:
    """``view`` or the first pair after it still open once its state is read afresh: pairs
    labelled elsewhere since the queue read them are passed over."""
    for _ in range(200):  # each turn settles one stale pair; a bound against a changing pool
        if view is None:
            return None
        fresh = _fresh(project, queue, view)
        if fresh.state is None or not fresh.state.handled or queue.include_skipped and fresh.state.grade is None:
            return fresh
        view = queue.after(view.position)
    return view


def _locate(queue: JudgingQueue, query_id: str, chunk_id: str) -> PairView:
    view = queue.goto_pair(query_id, chunk_id)
    if view is None:
        raise NotFound(f"The pair {query_id!r} / {chunk_id!r} is not in your queue.")
    return view


def next_pairs(project: Project, queues: Queues, who: Who, n: int = 1, *,
               after: tuple[str, str] | None = None) -> dict[str, Any]:
    """The next ``n`` pairs still to judge: from where judging resumes, or after the pair
    ``after`` (query id, chunk id) in queue order. Nothing moves; an empty list means done."""
    n = max(1, min(n, NEXT_LIMIT))
    slot = queues.slot(who.name)
    with slot.lock:
        queue = queues.judging(slot, who.name)
        view = queue.first() if after is None else queue.after(_locate(queue, *after).position)
        out: list[dict[str, Any]] = []
        while view is not None and len(out) < n:
            view = _open_from(project, queue, view)
            if view is None:
                break
            out.append(_pair_json(project, queue, view))
            view = queue.after(view.position)
        return {"pairs": out, "empty": not queue.query_ids}


def pair_at(project: Project, queues: Queues, who: Who, query_id: str, chunk_id: str,
            step: int = 0) -> dict[str, Any] | None:
    """The pair itself (``step`` 0), or its neighbour in queue order (-1, +1, judged or not):
    what ``k`` and ``j`` show. None past either end."""
    slot = queues.slot(who.name)
    with slot.lock:
        queue = queues.judging(slot, who.name)
        view: PairView | None = _locate(queue, query_id, chunk_id)
        if step:
            assert view is not None
            view = queue.step(view.position, step)
        if view is None:
            return None
        return _pair_json(project, queue, _fresh(project, queue, view))


# -- labels ----------------------------------------------------------------------------------


def _label_row_json(row: Label | None) -> dict[str, Any] | None:
    if row is None:
        return None
    state = LabelState(int(row.id), row.grade, bool(row.skipped), row.note, row.created_at,
                       row.undoes, row.source)
    return _state_json(state)


def _check_grade(project: Project, grade: int | None, skip: bool) -> None:
    if skip and grade is not None:
        raise UsageError("A label is a grade or a skip, not both: give 'grade' or 'skip'.")
    if not skip and grade is None:
        raise UsageError("The label needs a 'grade' on the project's scale (or 'skip': true).")
    scale = project.scale
    if grade is not None and not scale.contains(grade):
        raise UsageError(f"Grade {grade} is not on the project's scale {scale.describe()} "
                         f"({scale.min}..{scale.max}).")


@dataclass
class _Wanted:
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
        self._waiting: list[_Wanted] = []
        self._busy = False
        self._done: dict[int, BaseException | None] = {}

    def write(self, wanted: _Wanted) -> LabelState:
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

    def _outcome(self, wanted: _Wanted) -> LabelState:
        error = self._done.pop(id(wanted))
        if error is not None:
            raise error
        if wanted.conflict is not None:
            raise wanted.conflict
        assert wanted.state is not None
        return wanted.state

    @staticmethod
    def _work(session: Session, batch: list[_Wanted]) -> None:
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
            newest = _row_state(connection.execute(_NEWEST_EVENT, {
                "annotator": w.name, "query": w.query_id, "chunk": w.chunk_id}).first())
            if (None if newest is None else newest.id) != w.seen:
                w.conflict = LabelConflict(
                    _state_json(newest), "Your label of this pair changed since this page "
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


def post_label(project: Project, queues: Queues, who: Who, query_id: str, chunk_id: str, *,
               grade: int | None, skip: bool = False, seen: int | None = None,
               duration_ms: int | None = None, advance: bool = True) -> dict[str, Any]:
    """Record a grade (or a skip) of a pair in the annotator's queue, committed before this
    returns; with ``advance`` the next pair still to judge comes with the answer."""
    _check_grade(project, grade, skip)
    slot = queues.slot(who.name)
    with slot.lock:
        queue = queues.judging(slot, who.name)
        view = _locate(queue, query_id, chunk_id)
        duration = None if duration_ms is None else max(0, min(int(duration_ms), 86_400_000))
        state = queues.labels.write(_Wanted(who.name, query_id, chunk_id, grade, skip, seen, duration, who.digest))
        queue.note_event(query_id, chunk_id, state)
        out: dict[str, Any] = {"event_id": state.id, "label": _state_json(state), "next": None}
        if advance:
            nxt = _open_from(project, queue, queue.after(view.position))
            out["next"] = None if nxt is None else _pair_json(project, queue, nxt)
        return out


def _undo(project: Project, who: Who, expect: int | None) -> dict[str, Any] | None:
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


def undo_label(project: Project, queues: Queues, who: Who, expect: int | None = None) -> dict[str, Any] | None:
    """Undo the annotator's newest label (the one numbered ``expect``, when given): a new
    event; the pair comes back with its state from before. None when nothing is left."""
    slot = queues.slot(who.name)
    with slot.lock:
        queue = queues.judging(slot, who.name)
        result = _undo(project, who, expect)
        if result is None:
            return None
        state = current_label(project, who.name, result["query_id"], result["chunk_id"])
        queue.note_event(result["query_id"], result["chunk_id"], state)
        view = queue.goto_pair(result["query_id"], result["chunk_id"])
        result["label"] = _state_json(state)
        result["pair"] = None if view is None else _pair_json(project, queue, _fresh(project, queue, view))
        return result


def history(project: Project, who: Who, *, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
    """The annotator's own labelled pairs, newest first, each as it stands now."""
    return [{"query_id": h.query_id, "chunk_id": h.chunk_id, "query_text": h.query_text,
             "label": _state_json(h.state)}
            for h in label_history(project, who.name, limit=limit, offset=offset)]


def news(project: Project, who: Who) -> list[dict[str, Any]]:
    """The annotator's flags and comments a lead answered since they last labelled."""
    return [i.to_json() for i in review.news_for(project, who.name)]


# -- marks, facets, nuggets ------------------------------------------------------------------


def _in_queue(queues: Queues, who: Who, query_id: str, chunk_id: str) -> None:
    slot = queues.slot(who.name)
    with slot.lock:
        _locate(queues.judging(slot, who.name), query_id, chunk_id)


def set_mark(project: Project, queues: Queues, who: Who, query_id: str, chunk_id: str, *,
             kind: str, text: str | None, clear: bool) -> dict[str, Any]:
    """Flag (with a note) or unflag the pair, or set or clear the comment on it."""
    _in_queue(queues, who, query_id, chunk_id)
    where = dict(annotator=who.name, query_id=query_id, chunk_id=chunk_id, source=SOURCE)
    with writing(project):
        if kind == "flag":
            marks = (label_events.unflag_pair(who.guarded(project), **where) if clear
                     else label_events.flag_pair(who.guarded(project), note=text, **where))
        else:
            marks = label_events.comment_pair(who.guarded(project), note=None if clear else text, **where)
    slot = queues.slot(who.name)
    with slot.lock:
        if slot.queue is not None:
            slot.queue.note_marks(query_id, chunk_id, marks)
    return {"flagged": marks.flagged, "flag_note": marks.flag_note, "comment": marks.comment}


def _facets_json(project: Project, who: Who, query_id: str, chunk_id: str) -> dict[str, Any]:
    facets, nuggets = marks.marks_for(project, query_id, annotator=who.name, chunk_id=chunk_id)
    return {"facets": [{"id": f.id, "name": f.name, "covered": f.covered} for f in facets],
            "nuggets": [{"id": n.id, "text": n.text, "importance": n.importance,
                         "support": n.support, "kind": n.kind} for n in nuggets]}


def add_facet(project: Project, queues: Queues, who: Who, query_id: str, chunk_id: str,
              name: str) -> dict[str, Any]:
    _in_queue(queues, who, query_id, chunk_id)
    with writing(project):
        marks.add_facet(who.guarded(project), query_id, name)
    _texts(project).forget("annotated", query_id)
    return _facets_json(project, who, query_id, chunk_id)


def link_facet(project: Project, queues: Queues, who: Who, query_id: str, chunk_id: str,
               facet_id: int, covered: bool) -> dict[str, Any]:
    _in_queue(queues, who, query_id, chunk_id)
    if facet_id not in {f.id for f in marks.facets_for(project, query_id)}:
        raise NotFound(f"Query {query_id!r} has no facet {facet_id}.")
    with writing(project):
        marks.set_facet_link(who.guarded(project), annotator=who.name, facet_id=facet_id, chunk_id=chunk_id,
                               covered=covered)
    return _facets_json(project, who, query_id, chunk_id)


def add_nugget(project: Project, queues: Queues, who: Who, query_id: str, chunk_id: str,
               text: str, importance: str) -> dict[str, Any]:
    _in_queue(queues, who, query_id, chunk_id)
    with writing(project):
        marks.add_nugget(who.guarded(project), query_id, text, importance)
    _texts(project).forget("annotated", query_id)
    return _facets_json(project, who, query_id, chunk_id)


def support_nugget(project: Project, queues: Queues, who: Who, query_id: str, chunk_id: str,
                   nugget_id: int, support: str) -> dict[str, Any]:
    _in_queue(queues, who, query_id, chunk_id)
    if nugget_id not in {n.id for n in marks.nuggets_for(project, query_id)}:
        raise NotFound(f"Query {query_id!r} has no nugget {nugget_id}.")
    with writing(project):
        marks.set_nugget_support(who.guarded(project), annotator=who.name, nugget_id=nugget_id,
                                   chunk_id=chunk_id, support=support)
    return _facets_json(project, who, query_id, chunk_id)


# -- answers ---------------------------------------------------------------------------------


def _answer_json(project: Project, queue: answers.AnswerQueue, position: int) -> dict[str, Any]:
    view = queue.view(position)
    query = _query_json(project, view.query_id)
    cited = sorted({c for s in view.sentences for c in s.citations})
    done, total = queue.progress()
    return {
        "answer_id": view.answer_id, "position": position, "count": len(queue),
        "query": query,
        "sentences": [{"text": s.text, "citations": list(s.citations)} for s in view.sentences],
        "items": [{"nugget_id": i.nugget_id, "nugget": i.nugget, "vital": i.vital,
                   "sentence": i.sentence, "chunk_id": i.chunk_id, "support": i.support}
                  for i in view.items],
        "chunks": {c: _chunk_json(project, c, query["text"]) for c in cited},
        "progress": {"answers_done": done, "answers": total, "open_items": view.open},
    }


def answer_at(project: Project, queues: Queues, who: Who, *, position: int | None = None,
              answer_id: int | None = None) -> dict[str, Any] | None:
    """An answer of the annotator's answer queue, by position or id; without either, the first
    with something left to judge (None: every answer is judged, or there are none)."""
    slot = queues.slot(who.name)
    with slot.lock:
        queue = queues.answer_queue(slot, who.name)
        if answer_id is not None:
            position = queue.position_of(answer_id)
            if position is None:
                raise NotFound(f"There is no answer {answer_id} to judge.")
        elif position is None:
            position = queue.first_open()
            if position is None:
                return None
        if not 0 <= position < len(queue):
            raise NotFound(f"There is no answer at position {position} (there are {len(queue)}).")
        return _answer_json(project, queue, position)


def judge_answer(project: Project, queues: Queues, who: Who, answer_id: int, *, support: str,
                 nugget_id: int | None, sentence: int | None, chunk_id: str | None,
                 duration_ms: int | None = None) -> dict[str, Any]:
    """One judgment of an answer (a nugget's support, or a cited chunk's support of a
    sentence), committed before this returns; the answer as it stands after it."""
    slot = queues.slot(who.name)
    with slot.lock:
        queue = queues.answer_queue(slot, who.name)
        position = queue.position_of(answer_id)
        if position is None:
            raise NotFound(f"There is no answer {answer_id} to judge.")
        with writing(project):
            event = answers.record_answer_judgment(
                who.guarded(project), annotator=who.name, answer_id=answer_id, support=support,
                nugget_id=nugget_id, sentence=sentence, chunk_id=chunk_id,
                duration_ms=duration_ms, source=SOURCE)
        return {"event_id": event, "answer": _answer_json(project, queue, position)}


def undo_answer_judgment(project: Project, queues: Queues, who: Who) -> dict[str, Any] | None:
    slot = queues.slot(who.name)
    with slot.lock:
        queue = queues.answer_queue(slot, who.name)
        with writing(project):
            result = answers.undo_last_answer_judgment(who.guarded(project), who.name)
        if result is None:
            return None
        position = queue.position_of(result.answer_id)
        return {"event_id": result.event_id, "undone_id": result.undone_id,
                "nugget_id": result.nugget_id, "sentence": result.sentence,
                "chunk_id": result.chunk_id, "support": result.support,
                "answer": None if position is None else _answer_json(project, queue, position)}


# -- for leads -------------------------------------------------------------------------------


def _json_floats(value: Any) -> Any:
    """NaN and infinities as null and numpy numbers as Python's, as ``eval --format json``."""
    import math

    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {k: _json_floats(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_floats(v) for v in value]
    if hasattr(value, "item"):
        return _json_floats(value.item())
    return value


def evaluation_json(project: Project, who: Who, *, rule: str | None = None, measures: list[str] | None = None,
                    per_query: bool = False, averaging: str = "judged", by: str | None = None) -> dict[str, Any]:
    """What ``ragjudge --db PROJECT eval --format json`` prints for the same options: every
    run of the project against its gold qrels."""
    from ragjudge.services.runs import stored
    from ragjudge.services.scoring import evaluation as svc
    from ragjudge.services.scoring.files import parse_measure_list
    from ragjudge.services.scoring.jsonview import evaluation_json as evaluation_json_of

    if averaging not in ("judged", "run"):
        raise UsageError(f"averaging {averaging!r}: use judged or run.")
    names = parse_measure_list(measures)
    access = who.access(project)
    access.require_readable_rule(rule)
    found = svc.project_gold(project, rule)
    qrels, rule_used = found.qrels(), found.composition.rule
    threshold = project.scale.threshold
    run_names = stored.project_run_names(project)
    if not run_names:
        raise UsageError("the project has no runs yet: import one with 'ragjudge import run FILE'.")
    runs = {name: stored.project_run(project, name) for name in run_names}
    strata = svc.project_strata(project, by) if by is not None else None
    evaluation = svc.evaluate_all(qrels, runs, names, threshold=threshold, queries=averaging,
                                  project=project, rule=rule_used,
                                  qrels_source=f"project {project.shown_db}", strata=strata, by=by,
                                  composition=found.composition)
    data = evaluation_json_of(evaluation, per_query, False)
    return _json_floats(data)


def qrels_text(project: Project, who: Who, *, rule: str | None = None, fmt: str = "trec") -> str:
    """The gold qrels as ``ragjudge export qrels`` writes them (trec, jsonl or csv)."""
    from ragjudge.services.transfer.exporting import export_qrels

    if fmt not in ("trec", "jsonl", "csv"):
        raise UsageError(f"format {fmt!r}: qrels are exported as trec, jsonl or csv.")
    out = io.StringIO()
    export_qrels(project, out, rule=rule, fmt=fmt, access=who.access(project))
    return out.getvalue()
