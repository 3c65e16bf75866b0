"""The lead's terminal (/lead/terminal): the Textual app relayed to the browser, opened only for
a lead's session, started as that lead with no login screen, and closed once the session no
longer holds."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from projectkit import rights
from webkit import logged_in

from ragjudge.services.access import roster
from ragjudge.services.project.database import Project

pytest.importorskip("textual_serve", reason="the lead terminal needs textual-serve (the 'serve' extra)")
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

pytestmark = pytest.mark.slow

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\x1b\][^\x07]*\x07")


def socket_url(web) -> str:
    return web.url.replace("http:", "ws:") + "/lead/terminal/ws?width=120&height=40"


def cookie(client) -> str:
    return f"ragjudge_session={client.cookies['ragjudge_session']}"


def screen(websocket, wanted: str, deadline: float = 60.0) -> str:
    """The terminal's text received until ``wanted`` shows (escape sequences removed)."""
    seen = ""
    end = time.monotonic() + deadline
    while wanted not in seen:
        assert time.monotonic() < end, f"{wanted!r} never showed; got {seen[-400:]!r}"
        try:
            frame = websocket.recv(timeout=max(0.1, end - time.monotonic()))
        except TimeoutError:
            continue
        if isinstance(frame, bytes):
            seen += ANSI.sub("", frame.decode("utf-8", "replace"))
    return seen


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode("utf-8", "replace").split("=", 1) for item in raw if b"=" in item)


def test_a_lead_s_terminal_starts_as_the_lead_and_ends_with_the_session(web, site):
    with logged_in(web, site.tokens["dora"]) as lead:
        assert web.ctx.terminals == set()
        with connect(socket_url(web), additional_headers={"Cookie": cookie(lead), "Origin": web.url}) as ws:
            ws.send(json.dumps(["resize", {"width": 120, "height": 40}]))
            text = screen(ws, "dora")
            assert "personal token" not in text  # no login screen: the session said who
            [process] = web.ctx.terminals
            env = environ(process.pid)
            assert env["RAGJUDGE_SERVED_AS"] == "dora" and env["RAGJUDGE_SERVED"] == "1"
            assert site.tokens["dora"] not in "\0".join(f"{k}={v}" for k, v in env.items())
            pid = process.pid
            with Project.open(site.db) as project:
                roster.issue_token(project, "dora", access=rights(project, "dora"))  # the token the session was made from is revoked
            closed = None
            end = time.monotonic() + 30
            while closed is None and time.monotonic() < end:
                try:
                    ws.recv(timeout=1)
                except TimeoutError:
                    continue
                except ConnectionClosed as exc:
                    closed = exc
            assert closed is not None and closed.rcvd is not None and closed.rcvd.code == 4401
    end = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < end:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    assert web.ctx.terminals == set()


@pytest.mark.parametrize("who", ["ana", None])
def test_the_terminal_opens_for_no_one_else_and_starts_nothing(web, site, who):
    headers = {"Origin": web.url}
    if who is not None:
        with logged_in(web, site.tokens[who]) as client:
            headers["Cookie"] = cookie(client)
    with pytest.raises(InvalidStatus) as refused:
        connect(socket_url(web), additional_headers=headers).close()
    assert refused.value.response.status_code == 403
    assert web.ctx.terminals == set()


def test_the_terminal_opens_from_this_server_s_page_only(web, site):
    with logged_in(web, site.tokens["dora"]) as lead:
        with pytest.raises(InvalidStatus) as refused:
            connect(socket_url(web), additional_headers={"Cookie": cookie(lead),
                                                         "Origin": "https://evil.example"}).close()
    assert refused.value.response.status_code == 403 and web.ctx.terminals == set()


def test_the_terminal_page_is_a_lead_s_and_loads_only_this_server_s_files(web, site):
    with logged_in(web, site.tokens["dora"]) as lead:
        page = lead.get("/lead/terminal")
        assert page.status_code == 200
        refs = [r for r in re.findall(r'(?:href|src)="([^"]*)"', page.text) if not r.startswith("#")]
        assert refs and all(r.startswith("/") or r.startswith("data:") for r in refs), refs
        for ref in refs:
            if ref.startswith("/"):
                assert lead.get(ref).status_code == 200, ref
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "'unsafe-inline'" in policy.split("style-src")[1].split(";")[0]
        assert "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
