"""``ragjudge serve``: annotators judge in a web page; one server process serves them all."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

import typer

from ragjudge.cli.app import app
from ragjudge.cli.common import MAX_LIMIT, err_console, open_project, project_db, safe
from ragjudge.cli.options import int_option
from ragjudge.errors import UsageError
from ragjudge.safetext import quote

EPILOG = (
    "Annotators open the address in a browser and log in with a personal token (issued by "
    "'ragjudge annotators add NAME --token' or 'annotators token NAME'); the page is theirs "
    "to judge pairs and generated answers, by keys, click or touch, and to see their own labels. "
    "Leads also reach /lead: the terminal app in the browser (review, adjudication, agreement) "
    "and the JSON of the evaluation, the qrels and the roster. Scripts use the same JSON API "
    "under /api/v1 with 'Authorization: Bearer TOKEN' (described at /openapi.json).\n\n"
    "Examples:\n\n"
    "  ragjudge --db support.db serve                       # http://127.0.0.1:8000\n\n"
    "  ragjudge serve --port 8080\n\n"
    "  ragjudge serve --public-url https://labels.example.org   # behind a reverse proxy with TLS\n\n"
    "The server listens on this machine only (127.0.0.1) unless --host says otherwise. Tokens "
    "travel in the page's requests: on any other network, put a reverse proxy with TLS (Caddy, "
    "nginx) in front and give its address as --public-url (see README.md). Ctrl+C or SIGTERM "
    "stops it within a second or two; every label it acknowledged is saved. Needs the 'serve' "
    "extra: pip install 'ragjudge\\[serve]'."
)

MISSING_EXTRA = (
    "'ragjudge serve' needs the packages of its 'serve' extra (fastapi, uvicorn, jinja2), "
    "which are not installed. Install ragjudge with it: pip install 'ragjudge[serve]', then "
    "run 'ragjudge serve' again. Nothing was changed."
)


def check_host(host: str) -> str:
    """``--host``: an address or host name to listen on (the system says whether it is one)."""
    if not host or len(host) > 253 or any(not c.isprintable() or c.isspace() for c in host):
        raise UsageError(f"--host {quote(host)}: give an address to listen on, such as 127.0.0.1 "
                         "(this machine only) or 0.0.0.0 (every network).")
    return host


def check_public_url(url: str) -> str:
    """``--public-url``: an http(s) address with a host and no query, as people type it."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise UsageError(f"--public-url {quote(url)}: give the address people open, such as "
                         "https://labels.example.org or https://example.org/ragjudge.")
    if parts.username or parts.password:
        raise UsageError("--public-url carries no user name or password; give the address only.")
    return url.strip().rstrip("/")


def _extra_installed() -> bool:
    try:
        import fastapi  # noqa: F401 - only whether they are there
        import jinja2  # noqa: F401
        import uvicorn  # noqa: F401
    except ModuleNotFoundError:
        return False
    return True


@app.command(epilog=EPILOG)
def serve(
    host: Annotated[str, typer.Option(help="The address to listen on: 127.0.0.1 (this machine only) or 0.0.0.0 (every network).")] = "127.0.0.1",
    port: Annotated[int, int_option("--port", low=1, high=65535, what="the port", help="The TCP port.")] = 8000,
    public_url: Annotated[str | None, typer.Option("--public-url", help="The address people open when a reverse proxy is in front (https://...).", show_default=False)] = None,
    max_sessions: Annotated[int, int_option("--max-sessions", low=1, high=MAX_LIMIT, what="the number of sessions", help="Logged-in sessions at once (each a few hundred bytes on the server).")] = 1000,
    max_terminals: Annotated[int, int_option("--max-terminals", low=0, high=1000, what="the number of lead terminals", help="Lead terminals at once (each an app process of about 100 MB).")] = 4,
    queue_order: Annotated[str, typer.Option("--queue-order", help="How each annotator's pairs are ordered: depth (rounds of growing depth), query (a query's whole pool at a time) or settle (the pairs that most move the comparisons of the runs not settled yet first, weighed again as labels arrive).")] = "depth",
) -> None:
    """Serve the judging pages to annotators' browsers; each logs in with a personal token."""
    if not _extra_installed():
        raise UsageError(MISSING_EXTRA)
    host = check_host(host)
    if public_url is not None:
        public_url = check_public_url(public_url)
    from ragjudge.services.labels.queue import ORDERS

    if queue_order not in ORDERS:
        raise UsageError(f"--queue-order {quote(queue_order)}: use depth, query or settle.")
    from ragjudge.services.access import roster
    from ragjudge.hosts import is_loopback
    from ragjudge.web.server import serve as run_server

    db = project_db()
    with open_project() as project:  # a missing or foreign project is told now
        members = roster.members(project, counts=False)
        if queue_order == "settle":
            from ragjudge.services.scoring.settled import check_settle_order

            check_settle_order(project)
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
        run_server(db, host=host, port=port, public_url=public_url, max_sessions=max_sessions,
                   max_terminals=max_terminals, queue_order=queue_order)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host} port {port}: {exc.strerror or exc}. Choose "
                         "another --port, or stop what uses it.") from None
