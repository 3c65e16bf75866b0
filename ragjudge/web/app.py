"""The web application of ``ragjudge serve``: one process serves every annotator.

:func:`create_app` builds it from :class:`~ragjudge.web.context.Settings`: the pages
(:mod:`ragjudge.web.pages`), the JSON API under ``/api/v1`` (:mod:`ragjudge.web.api`), the
lead's terminal (:mod:`ragjudge.web.terminal`), the static files, and the middleware of
:mod:`ragjudge.web.guard`; what requests share is in :mod:`ragjudge.web.context`.
"""

from __future__ import annotations

import gc
from typing import Any

from anyio import to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from ragjudge.errors import RagjudgeError
from ragjudge.web import api, pages, terminal
from ragjudge.web.context import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_TERMINALS,
    HERE,
    WORKER_THREADS,
    Context,
    Refusal,
    Settings,
    refusal_response,
    validation_message,
)
from ragjudge.web.guard import BodyTooLarge, Guard


def create_app(settings: Settings) -> Any:
    """The ASGI application (the :class:`Guard` around FastAPI); the project is opened now."""
    from contextlib import asynccontextmanager

    ctx = Context(settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI):  # noqa: ANN202
        # everything loaded so far lives as long as the server: kept out of the collector's
        # full passes, which otherwise walk it all (pauses of 0.1-0.2 s measured under load)
        gc.collect()
        gc.freeze()
        # A request's work is short and mostly in the database: a few threads keep the cores
        # busy, and many would only queue for the interpreter's lock after every statement
        # (and each open its own database connection).
        to_thread.current_default_thread_limiter().total_tokens = WORKER_THREADS
        try:
            yield
        finally:
            await terminal.stop_all(ctx)
            ctx.close()

    app = FastAPI(title="ragjudge", version="1", docs_url=None, redoc_url=None,
                  openapi_url="/openapi.json", lifespan=lifespan,
                  description="The JSON API of ragjudge serve. A script authenticates with its "
                              "personal token as 'Authorization: Bearer TOKEN'; every write "
                              "carries an 'Idempotency-Key' header (a UUID per action).")
    app.state.ctx = ctx

    def refused(request: Request, refusal: Refusal) -> Response:
        return refusal_response(request.url.path, refusal, base=settings.base, title=ctx.title)

    @app.exception_handler(Refusal)
    async def on_refusal(request: Request, exc: Refusal) -> Response:
        return refused(request, exc)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> Response:
        return refused(request, Refusal(422, "invalid", validation_message(exc)))

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> Response:
        reason = {404: "not-found", 405: "invalid", 413: "too-large"}.get(exc.status_code, "invalid")
        return refused(request, Refusal(exc.status_code, reason))

    @app.exception_handler(BodyTooLarge)
    async def on_large(request: Request, exc: BodyTooLarge) -> Response:
        return refused(request, Refusal(413, "too-large"))

    @app.exception_handler(RagjudgeError)
    async def on_error(request: Request, exc: RagjudgeError) -> Response:
        return refused(request, Refusal(422, "invalid", str(exc)))

    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    terminal.mount(app)
    app.include_router(api.router)
    app.include_router(pages.router)

    async def refuse(scope: Any, receive: Any, send: Any, status: int, reason: str) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        response = refusal_response(scope.get("path", ""), Refusal(status, reason),
                                    base=settings.base, title=ctx.title)
        await response(scope, receive, send)

    guarded = Guard(app, bind_host=settings.host, public_url=settings.public_url,
                    log=settings.log, refuse=refuse)
    guarded.fastapi = app  # type: ignore[attr-defined]  # for tests and the server
    return guarded


__all__ = ["DEFAULT_MAX_SESSIONS", "DEFAULT_MAX_TERMINALS", "Context", "Refusal", "Settings", "create_app"]
