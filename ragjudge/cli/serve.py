"""``ragjudge serve``: the app in annotators' browsers, one session per tab, login by token."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

import typer

from ragjudge.cli.app import app
from ragjudge.cli.common import MAX_LIMIT, err_console, open_project, project_db, safe
from ragjudge.cli.options import int_option
from ragjudge.errors import UsageError

EPILOG = (
    "Each browser tab runs the app on the server, against this project (the project and its "
    "credentials never leave the server). People log in with a personal token; what they may "
    "do is their role's: annotators judge and see their own labels and the scores, leads "
    "also review, adjudicate and see everyone's labels.\n\n"
    "Examples:\n\n"
    "  ragjudge annotators add dora --role lead --token    # prints dora's token once\n\n"
    "  ragjudge annotators add ana --token\n\n"
    "  ragjudge --db support.db serve                       # http://127.0.0.1:8000\n\n"
    "  ragjudge serve --port 8080\n\n"
    "  ragjudge serve --host 0.0.0.0 --public-url https://labels.example.org   # behind TLS\n\n"
    "The server listens on this machine only (127.0.0.1) unless --host says otherwise. Tokens "
    "travel in the page's connection: on any other network, put a reverse proxy with TLS "
    "(Caddy, nginx) in front and give its address as --public-url (see README.md). Needs the "
    "'serve' extra: pip install 'ragjudge\\[serve]'."
)

MISSING_EXTRA = (
    "'ragjudge serve' needs the textual-serve package, which is not installed. Install "
    "ragjudge with its 'serve' extra: pip install 'ragjudge[serve]' (or pip install "
    "textual-serve), then run 'ragjudge serve' again. Nothing was changed."
)


def check_host(host: str) -> str:
    """``--host``: an address or host name to listen on (the system says whether it is one)."""
    if not host or len(host) > 253 or any(not c.isprintable() or c.isspace() for c in host):
        raise UsageError(f"--host {host!r}: give an address to listen on, such as 127.0.0.1 "
                         "(this machine only) or 0.0.0.0 (every network).")
    return host


def check_public_url(url: str) -> str:
    """``--public-url``: an http(s) address with a host and no query, as people type it."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise UsageError(f"--public-url {url!r}: give the address people open, such as "
                         "https://labels.example.org or https://example.org/ragjudge.")
    if parts.username or parts.password:
        raise UsageError("--public-url carries no user name or password; give the address only.")
    return url.strip().rstrip("/")


@app.command(epilog=EPILOG)
def serve(
    host: Annotated[str, typer.Option(help="The address to listen on: 127.0.0.1 (this machine only) or 0.0.0.0 (every network).")] = "127.0.0.1",
    port: Annotated[int, int_option("--port", low=1, high=65535, what="the port", help="The TCP port.")] = 8000,
    public_url: Annotated[str | None, typer.Option("--public-url", help="The address people open when a reverse proxy is in front (https://...).", show_default=False)] = None,
    max_sessions: Annotated[int, int_option("--max-sessions", low=1, high=MAX_LIMIT, what="the number of sessions", help="Browser tabs served at once (each is an app process on the server).")] = 64,
) -> None:
    """Serve the app to annotators' browsers; each logs in with a personal token."""
    try:
        import textual_serve  # noqa: F401 - only whether it is there
    except ModuleNotFoundError:
        raise UsageError(MISSING_EXTRA) from None
    host = check_host(host)
    if public_url is not None:
        public_url = check_public_url(public_url)
    from ragjudge.serve.server import is_loopback, serve as run_server
    from ragjudge.services.access import roster

    db = project_db()
    with open_project() as project:  # a missing or foreign project is told now, not per tab
        title = f"ragjudge — {project.name}"
        members = roster.members(project, counts=False)
    if not is_loopback(host):
        err_console.print(
            f"[bold yellow]warning:[/] listening on {safe(host)}: tokens and labels cross the network "
            "in clear text. Put a reverse proxy with TLS in front (see README.md, 'ragjudge "
            "serve') and give its https:// address as --public-url.", highlight=False)
    if not any(m.has_token and m.active for m in members):
        err_console.print(
            "[bold yellow]note:[/] nobody can log in yet: no active annotator has a token. "
            "Issue one with 'ragjudge annotators add NAME --token' (or 'annotators token NAME').",
            highlight=False)
    try:
        run_server(db, title=title, host=host, port=port, public_url=public_url, max_sessions=max_sessions)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host} port {port}: {exc.strerror or exc}. Choose "
                         "another --port, or stop what uses it.") from None
