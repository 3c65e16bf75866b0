"""The one package of the web layer that calls ragjudge's services.

Every page and every ``/api/v1`` route asks here, with the identity the request logged in as
(:class:`Who`); nothing else in :mod:`ragjudge.web` imports a service, the store or SQLAlchemy.
When the services move (into packages, behind an access object), this package is what changes.
Its modules, each by capability:

- this module: who is asking (:class:`Who`), the refusals (:class:`LabelConflict`,
  :class:`NotFound`), one writer at a time (:func:`writing`), and the project's scale,
  guidelines and roster;
- :mod:`~ragjudge.web.backend.database`: the project opened once, its write-ahead log's
  checkpoints, the token lookups, and the batched label writer and the undo, the only module
  here that reads and writes the store itself;
- :mod:`~ragjudge.web.backend.queues`: each annotator's judging queue and answer queue;
- :mod:`~ragjudge.web.backend.pairs`: the pairs of a queue as the pages show them;
- :mod:`~ragjudge.web.backend.labels`: labels, their undo, history and news;
- :mod:`~ragjudge.web.backend.facets`: flags, comments, facets and nuggets of a pair;
- :mod:`~ragjudge.web.backend.answers`: the answer queue's judgments;
- :mod:`~ragjudge.web.backend.leads`: the evaluation JSON and the gold qrels.

What it adds to the services, and why here:

- **one judging queue per annotator**, shared by their tabs and guarded by a lock
  (:class:`~ragjudge.web.backend.queues.Queues`): a
  :class:`~ragjudge.services.labels.queue.JudgingQueue` holds a cache of the annotator's label
  states, so the pair shown next is re-read from the database before it is shown (a label given
  meanwhile in the app or another process moves the queue on);
- **labels that never overwrite unseen**: :func:`~ragjudge.web.backend.labels.post_label` writes
  a label only if the annotator's newest event for the pair is the one the page saw (``seen``),
  read and written in one transaction; otherwise :class:`LabelConflict`. The same for undo
  (``expect``). The label service will take ``seen`` itself; until then the check lives here;
- **labels committed in turns** (:class:`~ragjudge.web.backend.database.LabelWriter`): labels
  arriving while a commit is under way share the next transaction (one wait for the disk
  instead of one each), each checked on its own and acknowledged only once committed;
- **one writer at a time in this process** on SQLite (:data:`WRITES`): the project's writer
  queue keeps its lock file in the :class:`Project`, which is shared by every request thread;
- the evaluation JSON of ``ragjudge eval --format json``
  (:func:`~ragjudge.web.backend.leads.evaluation_json`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ragjudge.services.access import roster
from ragjudge.services.access.identity import Identity, token_guard
from ragjudge.services.access.visibility import Access, access_for
from ragjudge.services.events import annotators as seen_marks
from ragjudge.services.events.state import LabelState
from ragjudge.services.labels.scale import current_scale
from ragjudge.services.project.database import Project

SOURCE = "web"
"""``labels.source`` of the events the web pages and the API write."""


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


def state_json(state: LabelState | None) -> dict[str, Any] | None:
    """A label state as the pages and the API show it (None: no label)."""
    if state is None:
        return None
    return {"event_id": state.id, "grade": state.grade, "skipped": state.skipped,
            "undone": state.undone, "note": state.note,
            "at": None if state.created_at is None else state.created_at.isoformat()}


# -- the project -----------------------------------------------------------------------------


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


def members_json(project: Project) -> list[dict[str, Any]]:
    return [m.to_json() for m in roster.members(project)]
