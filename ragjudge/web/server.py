"""Running the web application: :func:`serve` (``ragjudge serve``) on uvicorn.

One process serves every annotator: requests run on a pool of threads, a label is committed
before its answer leaves, and the pages hold no process on the server. On SIGINT or SIGTERM the
server stops taking connections, lets the requests under way finish (a label takes
milliseconds) for at most :data:`GRACE_SECONDS`, ends the lead terminals' processes, and exits:
every label the server acknowledged is committed.
"""

from __future__ import annotations

import signal
import socket
import sys
from typing import Any, TextIO

from ragjudge.safetext import visible
from ragjudge.web.app import create_app
from ragjudge.web.context import DEFAULT_MAX_SESSIONS, DEFAULT_MAX_TERMINALS, Settings

GRACE_SECONDS = 1
"""How long requests under way may take to finish once a stop is asked for."""
KEEP_ALIVE_SECONDS = 5
"""How long an idle connection stays open."""
SWITCH_SECONDS = 0.0005
"""How long a thread may keep the interpreter while another waits for it (Python's default is
5 ms). SQLite lets go of the interpreter for each statement and a request makes a dozen: with
the default, a thread back from the database could wait 5 ms each time behind the others."""


def public_address(settings: Settings) -> str:
    if settings.public_url:
        return settings.public_url
    host = settings.host
    shown = f"[{host}]" if ":" in host else host
    return f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else shown}:{settings.port}"


def quiet_connections_close() -> Any:
    """uvicorn's HTTP/1.1 protocol (httptools' parser when it is installed, else h11), closing
    a connection that sends nothing for :data:`KEEP_ALIVE_SECONDS` from its start, as it does
    between two requests: a connection opened and left silent would otherwise be held for as
    long as the other end likes."""
    base: Any
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        base = HttpToolsProtocol
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol

        base = H11Protocol

    class Protocol(base):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if getattr(self, "timeout_keep_alive_task", "missing") is None:
                self.timeout_keep_alive_task = self.loop.call_later(
                    self.timeout_keep_alive, self.timeout_keep_alive_handler)

    return Protocol


def config(app: Any, settings: Settings) -> Any:
    import uvicorn

    return uvicorn.Config(
        app, host=settings.host, port=settings.port, log_config=None, log_level="warning",
        access_log=False, server_header=False, proxy_headers=True, http=quiet_connections_close(),
        forwarded_allow_ips="127.0.0.1,::1", timeout_graceful_shutdown=GRACE_SECONDS,
        timeout_keep_alive=KEEP_ALIVE_SECONDS, ws_max_size=1 << 20, lifespan="on")


def make_server(settings: Settings, *, banner: TextIO | None = None) -> Any:
    """A uvicorn server of the application (not yet running)."""
    import uvicorn

    app = create_app(settings)
    ctx = app.fastapi.state.ctx

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            """SIGINT or SIGTERM stops the server (a second SIGINT stops it at once); it is the
            way to stop it, so the process then ends normally (uvicorn would raise the signal
            again after its shutdown: a traceback for Ctrl+C, exit code -15 for SIGTERM)."""
            if self.should_exit and sig == signal.SIGINT:
                self.force_exit = True
            else:
                self.should_exit = True

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if banner is not None and self.started:
                print(f"ragjudge serve: {visible(ctx.title)} on {public_address(settings)}",
                      file=banner, flush=True)
                print("Annotators open that address and log in with their personal token "
                      "('ragjudge annotators token NAME'). Ctrl+C stops.", file=banner, flush=True)

    return Server(config(app, settings))


def listening_socket(host: str, port: int) -> socket.socket:
    """The server's socket, bound here so that an address in use is an :class:`OSError` for
    the command to word (uvicorn would log it and exit)."""
    infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def serve(db: str, *, host: str = "127.0.0.1", port: int = 8000, public_url: str | None = None,
          max_sessions: int = DEFAULT_MAX_SESSIONS, max_terminals: int = DEFAULT_MAX_TERMINALS,
          queue_order: str = "depth") -> None:
    """Serve the project until SIGINT or SIGTERM (an :class:`OSError` when the address cannot
    be listened on)."""
    settings = Settings(db=db, host=host, port=port, public_url=public_url,
                        max_sessions=max_sessions, max_terminals=max_terminals, queue_order=queue_order)
    sock = listening_socket(host, port)
    sys.setswitchinterval(SWITCH_SECONDS)
    server = make_server(settings, banner=sys.stdout)
    with sock:
        server.run(sockets=[sock])
