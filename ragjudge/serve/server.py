"""The terminal relay, on textual-serve: the Textual app in a browser tab.

textual-serve relays a terminal between xterm.js in the page and one app process per browser
tab. ``ragjudge serve`` (:mod:`ragjudge.web`) uses one part of this module: the lead's terminal
(``/lead/terminal``, :mod:`ragjudge.web.terminal`) starts its app process as a
:class:`SessionProcess` with :func:`session_command`. :class:`JudgingServer` serves the relay
alone, with its login screen, as ``ragjudge serve`` did before the web pages: it is kept as the
baseline the benchmarks measure the web pages beside (``tests/bench/bench_serve.py``,
``bench_web.py``), and tested in ``tests/serve``. ragjudge changes four things about
textual-serve:

- its own page (``templates/app_index.html``): the terminal script, stylesheet and font come
  from the files textual-serve ships, served here; the page asks nothing of any other host;
- the app processes get the project through the environment (``RAGJUDGE_DB``) and know they are
  served (``RAGJUDGE_SERVED=1``, see :mod:`ragjudge.tui.served`); their command line names
  neither the project nor anyone's credentials;
- no file downloads, no static index; headers that keep the page out of frames and other
  origins' scripts;
- a browser session's websocket must come from the page of this server (its Origin), so that no
  other web site a person visits can open sessions on it; while bound to loopback without a
  public URL, only loopback host names are answered (no DNS rebinding).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp_jinja2
import jinja2
from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server

from ragjudge.hosts import is_loopback
from ragjudge.safetext import visible
from ragjudge.tui.served import SERVED_ENV

log = logging.getLogger("ragjudge.serve")

TEMPLATES = Path(__file__).resolve().parent / "templates"
DEFAULT_MAX_SESSIONS = 64
"""Browser tabs served at once (each is an app process of some 60-100 MB)."""
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]", "::1")

CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self' 'unsafe-inline'",
    "style-src 'self' 'unsafe-inline'",
    "font-src 'self'",
    "img-src 'self' data: blob:",
    "connect-src 'self' ws: wss:",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'none'",
])
"""The browser itself refuses anything from another host (inline scripts and styles: the page's
own and xterm.js's)."""

# Environment variables of the server's shell that an app process must not inherit: Textual's
# development switches (a log file, a devtools connection) and a second project.
DROPPED_ENV = ("TEXTUAL", "TEXTUAL_LOG", "TEXTUAL_DEVTOOLS_HOST", "TEXTUAL_DEVTOOLS_PORT",
               "TEXTUAL_SCREENSHOT", "TEXTUAL_SCREENSHOT_LOCATION", "TEXTUAL_SCREENSHOT_FILENAME")


def session_command() -> str:
    """The shell command of one tab's app process: this Python, this ragjudge, no arguments.
    The shell replaces itself with it (exec), so that the app process is the server's child and
    notices when the server is gone (see :class:`ragjudge.tui.served.ServedApp`)."""
    return f"exec {shlex.quote(sys.executable)} -m ragjudge.serve.session"


def websocket_url(public_url: str) -> str:
    """The session socket under ``public_url`` (wss: under https:)."""
    base = public_url.rstrip("/")
    scheme, rest = base.split(":", 1)
    return ("wss:" if scheme.lower() == "https" else "ws:") + rest + "/ws"


class SessionProcess(AppService):
    """One tab's app process, with the project and the served flag in its environment."""

    def __init__(self, *args: Any, db: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.db = db

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        environment = super()._build_environment(width=width, height=height)
        for name in DROPPED_ENV:
            environment.pop(name, None)
        environment["RAGJUDGE_DB"] = self.db
        environment[SERVED_ENV] = "1"
        return environment

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid


class JudgingServer(Server):
    """The project served to browsers: the page, its static files and one session per tab."""

    def __init__(self, db: str, *, title: str, host: str = "127.0.0.1", port: int = 8000,
                 public_url: str | None = None, max_sessions: int = DEFAULT_MAX_SESSIONS) -> None:
        super().__init__(session_command(), host=host, port=port, title=title,
                         public_url=public_url, templates_path=TEMPLATES)
        self.db = db
        self.given_public_url = public_url.rstrip("/") if public_url else None
        if public_url is None:
            shown = f"[{host}]" if ":" in host else host
            self.public_url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else shown}:{port}"
        self.max_sessions = max_sessions
        self.sessions: set[SessionProcess] = set()

    def initialize_logging(self) -> None:
        """Warnings and errors only, as plain lines: no request log, and no tracebacks with
        local variables (they could hold the project's URL and its password)."""
        logging.basicConfig(level="WARNING", format="ragjudge serve: %(message)s")

    # -- the web application ----------------------------------------------------------------

    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True)
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get("/ws", self.handle_websocket, name="websocket"),
            web.static("/static", self.statics_path, show_index=False, name="static"),
        ])
        app.on_startup.append(self.on_startup)
        app.on_shutdown.append(self.on_shutdown)
        return app

    def _host_allowed(self, host: str) -> bool:
        """While bound to loopback without a public URL, answer loopback host names only: a
        web site whose name resolves to 127.0.0.1 (DNS rebinding) gets nothing."""
        if not is_loopback(self.host) or self.given_public_url is not None:
            return True
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return name.lower() in LOOPBACK_NAMES

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if not self._host_allowed(request.host):
            raise web.HTTPMisdirectedRequest(text="This ragjudge server answers its own address only.")
        response = await handler(request)
        response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        if request.path == "/":
            response.headers["Cache-Control"] = "no-store"
        return response

    async def on_startup(self, app: web.Application) -> None:
        print(f"ragjudge serve: {visible(self.title)} on {self.public_url}", flush=True)
        print("Annotators open that address and log in with their token "
              "('ragjudge annotators add NAME --token'). Ctrl+C stops.", flush=True)

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        try:
            font_size = min(max(int(request.query.get("fontsize", "16")), 8), 40)
        except ValueError:
            font_size = 16
        if self.given_public_url is not None:
            static_url = f"{self.given_public_url}/static/"
            socket_url = websocket_url(self.given_public_url)
        else:  # relative to the page: right behind a reverse proxy too
            static_url, socket_url = "static/", ""
        return {"title": visible(self.title), "static_url": static_url,
                "websocket_url": socket_url, "font_size": font_size}

    # -- sessions ---------------------------------------------------------------------------

    def _origin_allowed(self, request: web.Request) -> bool:
        """A browser names the page that opens a websocket (Origin): only this server's."""
        origin = request.headers.get("Origin")
        if origin is None:  # not a browser: it has no one's cookies or page to abuse
            return True
        netloc = urlsplit(origin).netloc.lower()
        allowed = {request.host.lower()}
        if self.given_public_url is not None:
            allowed.add(urlsplit(self.given_public_url).netloc.lower())
        return netloc in allowed

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        if not self._origin_allowed(request):
            raise web.HTTPForbidden(text="Sessions open from this server's own page only.")
        if len(self.sessions) >= self.max_sessions:
            raise web.HTTPServiceUnavailable(text="Too many sessions are open; try again later.")
        websocket = web.WebSocketResponse(heartbeat=15)
        try:
            width = int(request.query.get("width", "80"))
            height = int(request.query.get("height", "24"))
        except ValueError:
            width, height = 80, 24
        width, height = min(max(width, 20), 1000), min(max(height, 5), 500)
        session: SessionProcess | None = None
        try:
            await websocket.prepare(request)
            session = SessionProcess(self.command, write_bytes=websocket.send_bytes,
                                     write_str=websocket.send_str, close=websocket.close,
                                     download_manager=self.download_manager, db=self.db)
            self.sessions.add(session)
            await session.start(width, height)
            await self._process_messages(websocket, session)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:  # noqa: BLE001 - one session's failure must not stop the server
            log.warning("a session ended with an error: %s", error)
        finally:
            if session is not None:
                self.sessions.discard(session)
                await session.stop()
        return websocket


def serve(db: str, *, title: str, host: str, port: int, public_url: str | None,
          max_sessions: int = DEFAULT_MAX_SESSIONS) -> None:
    """Serve until interrupted (Ctrl+C or SIGTERM): every open session is told to quit."""
    server = JudgingServer(db, title=title, host=host, port=port, public_url=public_url,
                           max_sessions=max_sessions)
    os.environ.pop(SERVED_ENV, None)  # this process is the server, not a session
    server.serve()
