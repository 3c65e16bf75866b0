"""The web server of ``ragjudge serve`` for tests, importable as ``webkit``.

- :func:`build_project`: a small project (``projectkit.make_small_project``: q1..q5, c01..c20,
  run ``bm25``) with a lead ``dora`` and annotators ``ana`` and ``ben``, each with a token; ben
  has graded q1 / c05 (what ana must not see); with ``answers``, the generated answers and
  nuggets of ``answerkit`` too;
- :func:`start`: the server (uvicorn) on a free loopback port in a thread of this process, with
  its access log kept; :meth:`Running.stop` stops it;
- :func:`bearer` and :func:`logged_in`: httpx clients as a script (token) or as a browser
  (session cookie) would be.
"""

from __future__ import annotations

from projectkit import rights

import io
import socket
import sys
import threading
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "answers"))  # answerkit


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def build_project(db: str, *, answers: bool = False, folder: Path | None = None) -> SimpleNamespace:
    from projectkit import make_small_project

    from ragjudge.services.access import roster
    from ragjudge.services.labels.events import record_label

    make_small_project(db).close()
    if answers:
        import answerkit

        assert folder is not None
        answerkit.build(db, folder, judgments=False)
    from ragjudge.services.project.database import Project

    with Project.open(db) as project:
        tokens = {}
        for name, role in (("dora", "lead"), ("ana", "annotator"), ("ben", "annotator")):
            _, tokens[name] = roster.add(project, name, role=role, token=True, access=rights(project, "dora"))
        record_label(project, annotator="ben", query_id="q1", chunk_id="c05", grade=3)
    return SimpleNamespace(db=db, tokens=tokens)


class Running:
    """A running server: ``url`` (no trailing slash), ``log`` (its access log), ``ctx``."""

    def __init__(self, settings) -> None:
        from ragjudge.web.server import make_server

        self.settings = settings
        self.server = make_server(settings)
        self.ctx = self.server.config.app.fastapi.state.ctx
        self.url = f"http://127.0.0.1:{settings.port}"
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise AssertionError("the web server did not start")
            time.sleep(0.01)

    @property
    def log_lines(self) -> list[str]:
        return self.settings.log.getvalue().splitlines()

    def log_after(self, count: int) -> list[str]:
        """The access log once it has ``count`` lines (a line is written as its answer ends)."""
        deadline = time.monotonic() + 10
        while len(self.log_lines) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.log_lines

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)


def start(db: str, **options) -> Running:
    from ragjudge.web.app import Settings

    options.setdefault("log", io.StringIO())
    return Running(Settings(db=db, host="127.0.0.1", port=free_port(), **options))


def key() -> str:
    return str(uuid.uuid4())


def bearer(running: Running, token: str) -> httpx.Client:
    return httpx.Client(base_url=running.url, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def logged_in(running: Running, token: str) -> httpx.Client:
    """A client holding a session cookie, as a browser would after the login form."""
    client = httpx.Client(base_url=running.url, timeout=30, headers={"Origin": running.url})
    response = client.post("/login", data={"token": token})
    assert response.status_code == 303, response.text
    client.close()  # a fresh client with the cookie, not yet opened (usable in a with block)
    return httpx.Client(base_url=running.url, timeout=30, headers={"Origin": running.url},
                        cookies=client.cookies)


def label(client: httpx.Client, query_id: str, chunk_id: str, grade: int | None, *,
          seen: int | None = None, skip: bool = False, idempotency: str | None = None,
          **extra) -> httpx.Response:
    body = {"query_id": query_id, "chunk_id": chunk_id, "grade": grade, "seen": seen, "skip": skip, **extra}
    return client.post("/api/v1/labels", json=body, headers={"Idempotency-Key": idempotency or key()})


def events(db: str, annotator: str | None = None) -> list[tuple]:
    """(annotator, query, chunk, grade, skipped, source, undoes) of every label event, in order."""
    from sqlalchemy import select

    from ragjudge.services.project.database import Project
    from ragjudge.store.schema import Label

    with Project.open(db) as project, project.read() as session:
        rows = session.scalars(select(Label).order_by(Label.id)).all()
        out = [(r.annotator, r.query_id, r.chunk_id, r.grade, bool(r.skipped), r.source, r.undoes)
               for r in rows]
    return [row for row in out if annotator is None or row[0] == annotator]
