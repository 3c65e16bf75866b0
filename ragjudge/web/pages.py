"""The pages: log in and out, judge pairs, judge answers, your labels, the guidelines, the
lead's index, and ``/healthz``.

A page is HTML rendered here with Jinja2 (every value from data escaped by the template); the
judging pages then fill themselves from ``/api/v1`` with ``static/ragjudge.js``, which puts
data into the document as text, never as HTML. Logging in exchanges the personal token for a
session cookie (HttpOnly, SameSite=Strict, Secure over TLS); nothing about the project is read
before that but the token's roster entry.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from ragjudge.web import backend
from ragjudge.web.backend import labels
from ragjudge.web.context import Refusal, cookie_path, secure_cookie
from ragjudge.web.render import page
from ragjudge.web.auth import COOKIE, SESSION_MAX_SECONDS
from ragjudge.web.identity import Identity, context, identify, lead, log_in, log_out, optional_identity

router = APIRouter(include_in_schema=False)

Who = Annotated[Identity, Depends(identify)]
Lead = Annotated[Identity, Depends(lead)]

JUDGE_KEYS = [
    ("0-9", "Give that grade and move on (the scale's digits)."),
    ("s", "Skip the pair; it comes back when the rest is done."),
    ("u", "Undo your last label (a new event); the pair comes back."),
    ("f", "Flag the pair for review, with an optional note; f on a flagged pair unflags it."),
    ("c", "Comment on the pair (an empty comment removes it)."),
    ("j", "Next pair in the queue order, without labelling."),
    ("k", "Previous pair in the queue order, without labelling."),
    ("g", "Go to the facets and nuggets of the query."),
    ("l", "Your labels, newest first, to relabel one."),
    ("h", "The project's judging guidelines."),
    ("?", "This list of keys."),
]
ANSWER_KEYS = [
    ("2 or f", "Full support for the nugget or citation being judged; move on."),
    ("1 or p", "Partial support; move on."),
    ("0 or x", "No support; move on."),
    ("j", "The next nugget or citation, without judging."),
    ("k", "The previous nugget or citation, without judging."),
    ("]", "The next answer."),
    ("[", "The previous answer."),
    ("u", "Undo your last judgment of an answer (a new event)."),
    ("?", "This list of keys."),
]


def _to(request: Request, path: str) -> RedirectResponse:
    return RedirectResponse(context(request).settings.base + path, status_code=303)


@router.get("/")
def home(request: Request) -> Response:
    return _to(request, "/judge" if optional_identity(request) else "/login")


@router.get("/healthz")
def healthz() -> JSONResponse:
    return JSONResponse({"status": "ok"})


# -- logging in and out ----------------------------------------------------------------------


@router.get("/login")
def login_page(request: Request, bye: Annotated[int, Query(ge=0, le=1)] = 0) -> Response:
    if optional_identity(request) is not None:
        return _to(request, "/judge")
    return page(request, "login.html", None, message="You are logged out." if bye else None)


@router.post("/login")
async def login(request: Request) -> Response:
    ctx = context(request)
    form = parse_qs((await request.body()).decode("utf-8", "replace"), max_num_fields=4)
    token = (form.get("token") or [""])[0]
    try:
        session = await log_in(request, token)
    except Refusal as refusal:
        refused = page(request, "login.html", None, status=refusal.status,
                       message=refusal.message, refused=True)
        if refusal.retry_after is not None:
            refused.headers["Retry-After"] = str(max(1, round(refusal.retry_after)))
        return refused
    old = request.cookies.get(COOKIE)
    if old:
        ctx.sessions.drop(old)
    response = _to(request, "/judge")
    response.set_cookie(COOKIE, session.id, max_age=SESSION_MAX_SECONDS, path=cookie_path(ctx.settings),
                        secure=secure_cookie(request, ctx.settings), httponly=True, samesite="strict")
    return response


@router.post("/logout")
def logout(request: Request) -> Response:
    ctx = context(request)
    log_out(request)
    response = _to(request, "/login?bye=1")
    response.delete_cookie(COOKIE, path=cookie_path(ctx.settings),
                           secure=secure_cookie(request, ctx.settings), httponly=True, samesite="strict")
    return response


# -- judging ---------------------------------------------------------------------------------


@router.get("/judge")
def judge_page(request: Request, ident: Who) -> Response:
    ctx = context(request)
    return page(request, "judge.html", ident, scale=backend.scale_json(ctx.project), keys=JUDGE_KEYS,
                guidelines_unseen=(backend.guidelines(ctx.project) is not None
                                   and not backend.seen_guidelines(ctx.project, ident.who)))


@router.get("/answers")
def answers_page(request: Request, ident: Who) -> Response:
    return page(request, "answers.html", ident, keys=ANSWER_KEYS)


@router.get("/history")
def history_page(request: Request, ident: Who,
                 offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0) -> Response:
    ctx = context(request)
    per_page = 50
    rows = labels.history(ctx.project, ident.who, limit=per_page + 1, offset=offset)
    scale = backend.scale_json(ctx.project)
    names = {level["grade"]: level["name"] for level in scale["levels"]}
    return page(request, "history.html", ident, rows=rows[:per_page], names=names, offset=offset,
                per_page=per_page, more=len(rows) > per_page)


@router.get("/guidelines")
async def guidelines_page(request: Request, ident: Who) -> Response:
    ctx = context(request)
    text = await run_in_threadpool(backend.guidelines, ctx.project)
    if text is not None:
        await run_in_threadpool(backend.mark_guidelines_seen, ctx.project, ident.who)
    return page(request, "guidelines.html", ident, text=text)


# -- leads -----------------------------------------------------------------------------------


@router.get("/lead")
def lead_page(request: Request, ident: Lead) -> Response:
    from ragjudge.web.terminal import available

    return page(request, "lead.html", ident, terminal=available())

