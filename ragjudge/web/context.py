"""What every request of ``ragjudge serve`` shares: the :class:`Settings`, the :class:`Context`
(the open project, the sessions, the rate limits, the kept answers, the judging queues, reached
through ``request.app.state.ctx``), the templates, and :class:`Refusal`.

Every refusal is a :class:`Refusal`: a status, a short reason code and one paragraph. The API
answers it as JSON (``{"error": reason, "message": ...}``), a page as a page that says what
happened and what to do (:func:`refusal_response`).
"""

from __future__ import annotations

import asyncio

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from starlette.responses import Response

from ragjudge.safetext import visible
from ragjudge.web import backend
from ragjudge.web.backend import database, queues
from ragjudge.web.auth import Limit, Limits, Sessions
from ragjudge.web.idempotency import Replays

HERE = Path(__file__).resolve().parent
TEMPLATES = Jinja2Templates(directory=str(HERE / "templates"))
TEMPLATES.env.filters["shown"] = lambda value: visible(value, multiline=True)
"""``{{ text | shown }}``: text from data with control characters and bidi overrides shown
visibly (Jinja2 escapes it for HTML after)."""
DEFAULT_MAX_SESSIONS = 1000
"""Logged-in sessions at once (each is a few hundred bytes of memory, not a process)."""
DEFAULT_MAX_TERMINALS = 4
WORKER_THREADS = 12
"""Requests handled at once (on threads); more wait for a turn. With the queue-counting and
checkpoint threads this stays within the 15 connections of the engine's pool."""
"""Lead terminals at once (each is an app process of about 100 MB)."""


@dataclass
class Settings:
    db: str
    host: str = "127.0.0.1"
    port: int = 8000
    public_url: str | None = None
    max_sessions: int = DEFAULT_MAX_SESSIONS
    max_terminals: int = DEFAULT_MAX_TERMINALS
    queue_order: str = "depth"
    """How each annotator's queue is ordered: depth, query or settle (as ``annotate``'s)."""
    limits: dict[str, Limit] = field(default_factory=dict)
    """Rate limits other than :data:`ragjudge.web.auth.LIMITS` (tests, benchmarks)."""
    log: TextIO | None = None
    """Where the access log goes (standard error by default)."""

    @property
    def base(self) -> str:
        """The path the public URL puts the server under (``""`` at the root)."""
        return urlsplit(self.public_url).path.rstrip("/") if self.public_url else ""


BATCHES_AT_ONCE = 1
"""Requests for several next pairs that are made at the same time; the others wait their turn
without a worker thread. Making 20 pairs is a few dozen milliseconds of Python: 200 annotators
asking at once (as they do when they arrive together) would share the interpreter and the worker
threads with every label being written, and a label, what a person waits for, would wait for all
of them (p99 2 s in ``bench_web.py``'s batch mode; 0.22 s with two at a time, 43 ms with one)."""


class Context:
    """What every request shares."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.project = database.open_project(settings.db)
        self.queues = queues.Queues(self.project, order=settings.queue_order)
        self.title = visible(backend.project_title(self.project))
        self.sessions = Sessions(settings.max_sessions)
        self.limits = Limits(settings.limits)
        self.replays = Replays()
        self.terminals: set[Any] = set()
        self.batches = asyncio.Semaphore(BATCHES_AT_ONCE)
        """Taken, without holding a worker thread, by a request for several next pairs."""

    def close(self) -> None:
        self.project.close()


# -- refusals --------------------------------------------------------------------------------

PAGES: dict[str, tuple[str, str]] = {
    "logged-out": ("Logged out", "You are not logged in. Log in with your personal token."),
    "expired": ("Session ended", "Your session has ended: it expired, you logged out, or the "
                "server was restarted. Log in again with your personal token; any label this page "
                "had not sent yet is sent once you are back."),
    "revoked": ("Token replaced", "A lead issued you a new token, so the one this session was "
                "made from no longer opens the project. Log in with your new token (ask your lead "
                "for it). Every label you gave before is kept."),
    "retired": ("Name retired", "Your name was retired from this project: your labels are kept, "
                "and the name cannot label any more. Ask your lead if this is a mistake."),
    "unknown": ("Name not in the roster", "Your name is no longer in this project's roster (it may "
                "have been renamed). Log in again with your token, or ask your lead."),
    "bad-token": ("Token not accepted", "That token opens nothing here. Check that you copied it "
                  "whole (it starts with rj_); your lead can issue a new one."),
    "bad-auth": ("Authorization not understood", "Send your token as 'Authorization: Bearer "
                 "TOKEN', or log in on the login page."),
    "lead-only": ("For leads", "This is for leads of the project, and you are logged in as an "
                  "annotator. Judging and your own labels are on the judging page."),
    "rate-limited": ("Too many attempts", "Too many attempts in a short time. Wait a little and "
                     "try again."),
    "full": ("Server full", "The server has as many sessions open as it takes. Try again later, "
             "or ask your lead to raise --max-sessions."),
    "terminals-full": ("Terminals busy", "Every lead terminal this server runs at once is in use. "
                       "Close one (or try again later)."),
    "origin": ("Wrong origin", "This request came from a page that is not this server's own (another "
               "web site, or a copy of the page). Open the server's address directly."),
    "host": ("Wrong address", "This ragjudge server answers its own address only "
             "(http://127.0.0.1 or http://localhost)."),
    "not-found": ("Not found", "There is nothing at this address."),
    "too-large": ("Request too large", "The request is larger than this server takes."),
    "invalid": ("Not understood", "The request is not one this server understands."),
    "conflict": ("Conflict", "Something changed meanwhile."),
    "no-terminal": ("Terminal not installed", "The lead terminal needs the textual-serve package: "
                    "pip install 'ragjudge[serve]'."),
    "error": ("Server error", "The server could not answer; nothing was changed. Try again."),
}


class Refusal(Exception):
    """A request refused: ``status`` (401, 403, 404, 409, 422, 429, ...), a ``reason`` code of
    :data:`PAGES`, and one paragraph (default: the reason's)."""

    def __init__(self, status: int, reason: str, message: str | None = None, *,
                 extra: dict[str, Any] | None = None, retry_after: float | None = None) -> None:
        super().__init__(message or PAGES.get(reason, ("", ""))[1])
        self.status = status
        self.reason = reason
        self.message = message or PAGES.get(reason, ("", reason))[1]
        self.extra = extra or {}
        self.retry_after = retry_after


def wants_json(path: str) -> bool:
    return path.startswith("/api/") or path == "/healthz" or path == "/openapi.json"


def refusal_response(request_path: str, refusal: Refusal, *, base: str = "",
                     title: str = "ragjudge") -> Response:
    headers = {}
    if refusal.retry_after is not None:
        headers["Retry-After"] = str(max(1, round(refusal.retry_after)))
    if wants_json(request_path):
        body = {"error": refusal.reason, "message": refusal.message, **refusal.extra}
        return JSONResponse(body, status_code=refusal.status, headers=headers)
    if refusal.reason == "logged-out":  # a page asked for without a session: the login page
        return RedirectResponse(base + "/login", status_code=303)
    heading = PAGES.get(refusal.reason, ("Refused", ""))[0]
    html = TEMPLATES.get_template("refusal.html").render(
        heading=heading, message=refusal.message, reason=refusal.reason, base=base,
        project_title=title, status=refusal.status, who=None)
    return HTMLResponse(html, status_code=refusal.status, headers=headers)


def validation_message(error: RequestValidationError) -> str:
    """One paragraph naming the field of the first problem."""
    problems = error.errors()
    if not problems:
        return "The request is not one this server understands. Nothing was changed."
    first = problems[0]
    loc = [str(part) for part in first.get("loc", ())]
    where = {"body": "the request body", "query": "the address (query string)",
             "header": "a header", "path": "the address", "cookie": "a cookie"}.get(loc[0] if loc else "", "the request")
    name = ".".join(loc[1:]) or "(the whole value)"
    got = first.get("input")
    shown = "" if got is None or isinstance(got, (dict, list)) else f" (got {str(got)[:60]!r})"
    more = f" ({len(problems) - 1} more problem{'s' if len(problems) > 2 else ''} after it)" if len(problems) > 1 else ""
    return (f"In {where}, the field '{name}': {first.get('msg', 'is not valid')}{shown}{more}. "
            "Nothing was changed.")


def secure_cookie(request: Request, settings: Settings) -> bool:
    """The session cookie is Secure when the page came over TLS (directly, or through a proxy
    that says so) or the public URL is https."""
    return request.url.scheme == "https" or bool(settings.public_url and settings.public_url.startswith("https:"))


def cookie_path(settings: Settings) -> str:
    return settings.base or "/"
