"""The lead's terminal: the Textual app in the browser, for a lead who is logged in.

``/lead/terminal`` is a page with textual-serve's terminal (xterm.js, from the textual-serve
package, served here) and ``/lead/terminal/ws`` its websocket, which relays the terminal of one
app process on the server (:class:`ragjudge.serve.server.SessionProcess`). The websocket opens
only for a lead's session cookie, from this server's own page; the app process is started only
then, as that lead (``RAGJUDGE_SERVED_AS``, see :mod:`ragjudge.serve.session`): no login screen,
nothing typed. Every few seconds the session is checked again, and a token issued anew, a
retired name or a lost lead role closes the terminal and ends its process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from ragjudge.web.backend import database
from ragjudge.web.context import Context, Refusal
from ragjudge.web.auth import COOKIE
from ragjudge.web.identity import Identity, lead
from ragjudge.web.render import page

CHECK_SECONDS = 5.0
"""How often an open terminal's session is checked again."""
STOP_SECONDS = 1.0
"""How long an app process gets to quit before it is killed."""


def available() -> bool:
    try:
        import textual_serve  # noqa: F401 - only whether it is there
    except ModuleNotFoundError:
        return False
    return True


def mount(app: FastAPI) -> None:
    app.add_api_route("/lead/terminal", terminal_page, methods=["GET"], include_in_schema=False)
    if not available():
        return
    import textual_serve

    statics = Path(textual_serve.__file__).resolve().parent / "static"
    app.mount("/lead/terminal/static", StaticFiles(directory=str(statics)), name="terminal-static")
    app.add_api_websocket_route("/lead/terminal/ws", terminal_socket)


def terminal_page(request: Request, ident: Annotated[Identity, Depends(lead)]) -> Response:

    if not available():
        raise Refusal(503, "no-terminal")
    return page(request, "terminal.html", ident)


def _session_lead(ctx: Context, session_id: str | None) -> str | None:
    """The lead a session cookie belongs to, when it still holds and is a lead's."""
    session = ctx.sessions.get(session_id or "")
    if session is None:
        return None
    who, _ = database.still_valid(ctx.project, session.name, session.digest)
    return who.name if who is not None and who.is_lead else None


def _digest(ctx: Context, session_id: str | None) -> str:
    session = ctx.sessions.get(session_id or "")
    return "" if session is None else session.digest


def _process(ctx: Context, websocket: WebSocket, name: str, digest: str) -> Any:
    from textual_serve.download_manager import DownloadManager

    from ragjudge.serve.server import SessionProcess, session_command
    from ragjudge.serve.session import SERVED_AS, SERVED_DIGEST

    class LeadProcess(SessionProcess):
        def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
            environment = super()._build_environment(width=width, height=height)
            environment[SERVED_AS] = name
            environment[SERVED_DIGEST] = digest  # the token's digest, never the token
            return environment

    async def close() -> None:
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):
            await websocket.close()

    return LeadProcess(session_command(), write_bytes=websocket.send_bytes,
                       write_str=websocket.send_text, close=close,
                       download_manager=DownloadManager(), db=ctx.settings.db)


def _size(websocket: WebSocket) -> tuple[int, int]:
    try:
        width = int(websocket.query_params.get("width", "80"))
        height = int(websocket.query_params.get("height", "24"))
    except ValueError:
        width, height = 80, 24
    return min(max(width, 20), 1000), min(max(height, 5), 500)


async def terminal_socket(websocket: WebSocket) -> None:
    ctx: Context = websocket.app.state.ctx
    session_id = websocket.cookies.get(COOKIE)
    name = await run_in_threadpool(_session_lead, ctx, session_id)
    if name is None:
        await websocket.close(code=1008)  # before the handshake: the browser sees 403
        return
    if len(ctx.terminals) >= ctx.settings.max_terminals:
        await websocket.close(code=1013)
        return
    websocket.scope.setdefault("state", {})["annotator"] = name
    await websocket.accept()
    process = _process(ctx, websocket, name, _digest(ctx, session_id))
    ctx.terminals.add(process)
    watch = asyncio.create_task(_watch(ctx, websocket, session_id, name))
    try:
        await process.start(*_size(websocket))
        await _relay(websocket, process)
    except (WebSocketDisconnect, RuntimeError):
        pass
    finally:
        watch.cancel()
        ctx.terminals.discard(process)
        await _stop(process)


async def _relay(websocket: WebSocket, process: Any) -> None:
    """The browser's messages to the app process (textual-serve's envelope: stdin, resize,
    ping, focus, blur)."""
    while True:
        text = await websocket.receive_text()
        try:
            envelope = json.loads(text)
        except ValueError:
            continue
        if not isinstance(envelope, list) or not envelope:
            continue
        kind = envelope[0]
        data = envelope[1] if len(envelope) > 1 else None
        if kind == "stdin" and isinstance(data, str):
            await process.send_bytes(data.encode("utf-8"))
        elif kind == "resize" and isinstance(data, dict):
            try:
                width, height = int(data["width"]), int(data["height"])
            except (KeyError, TypeError, ValueError):
                continue
            await process.set_terminal_size(min(max(width, 20), 1000), min(max(height, 5), 500))
        elif kind == "ping" and isinstance(data, str):
            await websocket.send_text(json.dumps(["pong", data[:40]]))
        elif kind == "blur":
            await process.blur()
        elif kind == "focus":
            await process.focus()


async def _watch(ctx: Context, websocket: WebSocket, session_id: str | None, name: str) -> None:
    """Close the terminal once its session no longer holds (or is no longer a lead's)."""
    while True:
        await asyncio.sleep(CHECK_SECONDS)
        if await run_in_threadpool(_session_lead, ctx, session_id) != name:
            with contextlib.suppress(RuntimeError, WebSocketDisconnect):
                await websocket.close(code=4401)
            return


async def _stop(process: Any) -> None:
    """Ask the app process to quit; kill it when it takes longer than :data:`STOP_SECONDS`."""
    with contextlib.suppress(TimeoutError, RuntimeError, ConnectionError, AssertionError):
        await asyncio.wait_for(process.stop(), STOP_SECONDS)
    pid = process.pid
    if pid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


async def stop_all(ctx: Context) -> None:
    """Every terminal's process, at shutdown (at once, not one after another)."""
    await asyncio.gather(*(_stop(p) for p in list(ctx.terminals)), return_exceptions=True)
    ctx.terminals.clear()
