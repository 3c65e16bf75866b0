"""The terminal relay (textual-serve) without a browser: the page and its assets, the headers,
who may open a session. (``ragjudge serve``'s command line: tests/web/test_cli_serve.py.)"""

from __future__ import annotations

import asyncio
import re
import sys

import pytest

pytest.importorskip("textual_serve", reason="the 'serve' extra (textual-serve) is not installed")

from aiohttp.test_utils import TestClient, TestServer

from ragjudge.serve.server import (
    JudgingServer,
    SessionProcess,
    session_command,
    websocket_url,
)
from ragjudge.hosts import is_loopback
from ragjudge.tui.served import SERVED_ENV


def fetch(server: JudgingServer, *requests: tuple[str, dict]) -> list[tuple[int, dict, str]]:
    """GET each (path, headers) from the server's web application; status, headers, text."""

    async def run() -> list[tuple[int, dict, str]]:
        client = TestClient(TestServer(await server._make_app()))
        await client.start_server()
        try:
            out = []
            for path, headers in requests:
                response = await client.get(path, headers=headers)
                body = await response.read()
                out.append((response.status, dict(response.headers), body.decode("utf-8", "replace")))
            return out
        finally:
            await client.close()

    return asyncio.run(run())


def local_server(**kwargs) -> JudgingServer:
    return JudgingServer("/nowhere/p.db", title="ragjudge — <b>p</b>\x1b[31m", **kwargs)


def test_the_page_loads_only_this_server_s_files_and_they_are_there():
    server = local_server()
    [(status, headers, page)] = fetch(server, ("/", {}))
    assert status == 200
    code = re.sub(r"<!--.*?-->|^\s*//[^\n]*$", "", page, flags=re.S | re.M)  # comments aside
    assert "googleapis" not in page and "://" not in code and '"//' not in code
    refs = re.findall(r'(?:href|src)="([^"]*)"', page) + re.findall(r'url\("([^"]*)"\)', page)
    assert refs and all(r.startswith("static/") or r.startswith("data:") for r in refs), refs
    assert "<b>p</b>" not in page and "&lt;b&gt;p&lt;/b&gt;" in page  # data is escaped
    assert "\x1b" not in page
    assets = [r for r in refs if r.startswith("static/")]
    results = fetch(server, *(("/" + r, {}) for r in assets))
    assert [s for s, _, _ in results] == [200] * len(assets)
    policy = headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert headers["X-Frame-Options"] == "DENY"


def test_behind_a_proxy_the_page_uses_the_public_url():
    server = local_server(public_url="https://labels.example.org/rj")
    [(status, _, page)] = fetch(server, ("/", {"Host": "labels.example.org"}))
    assert status == 200
    assert 'data-session-websocket-url="wss://labels.example.org/rj/ws"' in page
    assert 'href="https://labels.example.org/rj/static/css/xterm.css"' in page
    assert websocket_url("http://h:8080/") == "ws://h:8080/ws"


def test_on_loopback_other_host_names_get_nothing():
    server = local_server()
    results = fetch(server, ("/", {"Host": "rebound.example.com"}), ("/", {"Host": "localhost:8000"}),
                    ("/static/", {}), ("/download/x", {}))
    assert [s for s, _, _ in results] == [421, 200, 403, 404]


def test_a_session_opens_only_from_this_server_s_page():
    server = local_server()

    async def run() -> tuple[int, int]:
        client = TestClient(TestServer(await server._make_app()))
        await client.start_server()
        try:
            other = await client.get("/ws", headers={"Origin": "https://evil.example"})
            full = JudgingServer("/nowhere/p.db", title="t", max_sessions=1)
            full.sessions.add(object())  # type: ignore[arg-type]
            client2 = TestClient(TestServer(await full._make_app()))
            await client2.start_server()
            busy = await client2.get("/ws")
            await client2.close()
            return other.status, busy.status
        finally:
            await client.close()

    assert asyncio.run(run()) == (403, 503)


def test_the_session_process_gets_the_project_in_its_environment_not_its_command(monkeypatch):
    monkeypatch.setenv("TEXTUAL", "debug,devtools")
    secret = "postgresql+psycopg://ann:s3cret@db.example/labels"
    process = SessionProcess(session_command(), write_bytes=None, write_str=None, close=None,
                             download_manager=None, db=secret)
    environment = process._build_environment(100, 30)
    assert environment["RAGJUDGE_DB"] == secret and environment[SERVED_ENV] == "1"
    assert "TEXTUAL" not in environment
    assert "s3cret" not in session_command() and sys.executable in session_command()
    assert session_command().startswith("exec ") and session_command().endswith("-m ragjudge.serve.session")


def test_loopback_addresses():
    assert all(map(is_loopback, ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.168.1.4", "example.org"]))
