"""Who a request is from, checked on every request (:func:`identify`), and logging in and out.

A request is from a logged-in session (its cookie) or from a script (its token as ``Authorization:
Bearer``). Either way the roster is asked again, so a token issued anew or an annotator retired
refuses the very next request, and a changed role applies at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from ragjudge.web import backend
from ragjudge.web.backend import database
from ragjudge.web.context import Context, Refusal
from ragjudge.web.auth import COOKIE, Full, WebSession

TOKEN_MAX = 256
"""Longer than any token ragjudge issues (``rj_`` and 32 characters)."""


@dataclass(frozen=True)
class Identity:
    who: backend.Who
    session: WebSession | None
    scope: str
    """Whose kept answers a repeated request is looked up in (a session, or a script's token)."""

    @property
    def name(self) -> str:
        return self.who.name


def context(request: Request) -> Context:
    return request.app.state.ctx


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _rate_limited(wait: float, what: str) -> Refusal:
    return Refusal(429, "rate-limited", f"Too many {what} in a short time: try again in "
                   f"{max(1, round(wait))} s. Nothing was changed.", retry_after=wait)


def _by_token(ctx: Context, request: Request, header: str) -> Identity:
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > TOKEN_MAX:
        raise Refusal(401, "bad-auth")
    address = client_address(request)
    wait = ctx.limits.blocked("login_address", address)
    if wait:
        raise _rate_limited(wait, "login attempts from your address")
    found = database.member_by_token(ctx.project, token)
    if found is None:
        ctx.limits.take("login_address", address)
        raise Refusal(401, "bad-token")
    who, digest = found
    return Identity(who, None, f"token:{digest}")


def _by_cookie(ctx: Context, request: Request) -> Identity:
    session_id = request.cookies.get(COOKIE)
    if not session_id:
        raise Refusal(401, "logged-out")
    session = ctx.sessions.get(session_id)
    if session is None:
        raise Refusal(401, ctx.sessions.why_ended(session_id) or "expired")
    who, why = database.still_valid(ctx.project, session.name, session.digest)
    if who is None:
        ctx.sessions.drop(session.id, why)
        ctx.replays.forget(f"session:{session.id}")
        raise Refusal(401, why)
    return Identity(who, session, f"session:{session.id}")


def present(request: Request) -> None:
    """A :class:`Refusal` (401) for a request whose session cookie is missing or unknown here
    (no read of the project)."""
    ctx = context(request)
    session_id = request.cookies.get(COOKIE)
    if not session_id:
        raise Refusal(401, "logged-out")
    if ctx.sessions.get(session_id) is None:
        raise Refusal(401, ctx.sessions.why_ended(session_id) or "expired")


def identify_now(request: Request) -> Identity:
    """The request's identity, or a :class:`Refusal` (401, 429)."""
    ctx = context(request)
    header = request.headers.get("authorization")
    ident = _by_token(ctx, request, header) if header else _by_cookie(ctx, request)
    request.state.annotator = ident.name
    wait = ctx.limits.take("request_name", ident.name)
    if wait:
        raise _rate_limited(wait, "requests under your name")
    return ident


def identify(request: Request) -> Identity:
    """A FastAPI dependency: the request's identity (run on a worker thread: it reads the
    roster)."""
    return identify_now(request)


def lead_now(request: Request) -> Identity:
    """The identity of a lead, or a :class:`Refusal` (403 for an annotator)."""
    ident = identify_now(request)
    if not ident.who.is_lead:
        raise Refusal(403, "lead-only")
    return ident


def lead(request: Request) -> Identity:
    """A FastAPI dependency for lead-only pages."""
    return lead_now(request)


def optional_identity(request: Request) -> Identity | None:
    """The identity when the request has one that still holds, else None (the login page)."""
    if not request.cookies.get(COOKIE):
        return None
    try:
        return identify_now(request)
    except Refusal:
        return None


async def log_in(request: Request, token: str) -> WebSession:
    """Exchange a personal token for a new session, or a :class:`Refusal` (401, 429, 503)."""
    ctx = context(request)
    address = client_address(request)
    wait = ctx.limits.take("login_address", address)
    if wait:
        raise _rate_limited(wait, "login attempts from your address")
    token = token.strip()
    if not token or len(token) > TOKEN_MAX:
        raise Refusal(401, "bad-token")
    found = await run_in_threadpool(database.member_by_token, ctx.project, token)
    if found is None:
        raise Refusal(401, "bad-token")
    who, digest = found
    wait = ctx.limits.take("session_name", who.name)
    if wait:
        raise _rate_limited(wait, f"logins as {who.name}")
    try:
        session = ctx.sessions.create(who.name, digest)
    except Full:
        raise Refusal(503, "full") from None
    request.state.annotator = who.name
    return session


def log_out(request: Request) -> None:
    ctx = context(request)
    session_id = request.cookies.get(COOKIE)
    if session_id:
        ctx.sessions.drop(session_id)
        ctx.replays.forget(f"session:{session_id}")
