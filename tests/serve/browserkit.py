"""Drive ``ragjudge serve`` from a real browser: headless Chromium through Playwright.

- :func:`start_server` runs the terminal relay (textual-serve, one app process per tab) on a
  free loopback port in a subprocess;
- :class:`Tab` is one browser context (its own cookies and session) on the page: every request
  to a host other than 127.0.0.1 is aborted and remembered (``outside``); the terminal's output
  is read from the session's websocket frames (the page draws on a canvas), so a test waits for
  words on screen;
- :func:`wait_for` polls a condition (the database, the screen) up to a generous deadline.

The browser is the system's Chromium (``/usr/bin/chromium``); none is ever downloaded.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from chromium import CHROMIUM  # noqa: F401 - the one path, for the scripts that import it here
ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\x1b\][^\x07]*\x07")
DEADLINE = 30.0
"""Seconds a condition may take before a test gives up (a slow shared machine, not a target)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition: Callable[[], object], what: str, deadline: float = DEADLINE) -> object:
    end = time.monotonic() + deadline
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def ancestors(pid: int) -> list[int]:
    """The parent, grandparent, ... of process ``pid`` (as far as /proc tells)."""
    chain = []
    while pid > 1 and len(chain) < 8:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            break
        pid = int(re.search(r"^PPid:\s*(\d+)", status, re.M).group(1))
        chain.append(pid)
    return chain


class Served:
    """A running ``ragjudge serve``: its URL and process."""

    def __init__(self, db: str, port: int, process: subprocess.Popen) -> None:
        self.db = db
        self.port = port
        self.url = f"http://127.0.0.1:{port}/"
        self.process = process

    def sessions(self) -> list[int]:
        """Pids of the app processes of this server's open tabs."""
        found = []
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if b"ragjudge.serve.session" in cmdline and not cmdline.startswith(b"/bin/sh") \
                    and self.process.pid in ancestors(int(proc.name)):
                found.append(int(proc.name))
        return found

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


RELAY = ("from ragjudge.serve.server import serve; "
         "serve({db!r}, title='ragjudge', host='127.0.0.1', port={port}, public_url=None)")
"""The terminal relay served alone (``ragjudge serve`` serves the web pages, and the relay only
for a lead's terminal)."""


def start_server(db: str) -> Served:
    port = free_port()
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    environment.pop("RAGJUDGE_SERVED", None)
    process = subprocess.Popen([sys.executable, "-c", RELAY.format(db=db, port=port)],
                               env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    served = Served(db, port, process)

    def listening() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"ragjudge serve exited with {process.returncode}")
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) == 0

    wait_for(listening, "ragjudge serve to listen")
    return served


class Tab:
    """One person's browser tab on the served page."""

    def __init__(self, browser, url: str, *, init_script: str | None = None) -> None:
        # an init script (a benchmark's recorder) needs the page's script policy set aside
        self.context = browser.new_context(viewport={"width": 1280, "height": 800},
                                           bypass_csp=init_script is not None)
        if init_script is not None:
            self.context.add_init_script(init_script)
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.outside: list[str] = []
        self.frames: list[str] = []
        self.sockets: list[str] = []
        self.context.route("**/*", self._route)
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("websocket", self._socket)
        self.page.goto(url)
        self.page.wait_for_selector("body.-first-byte", timeout=DEADLINE * 1000)
        self.page.focus(".xterm-helper-textarea")

    def _route(self, route) -> None:
        if urlsplit(route.request.url).hostname != "127.0.0.1":
            self.outside.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    def _socket(self, websocket) -> None:
        self.sockets.append(websocket.url)
        websocket.on("framereceived", self._frame)

    def _frame(self, payload) -> None:
        data = payload if isinstance(payload, bytes) else payload.encode("utf-8", "replace")
        self.frames.append(ANSI.sub("", data.decode("utf-8", "replace")))

    def screen_since(self, start: int = 0) -> str:
        """The text the terminal received since frame ``start`` (escape sequences removed)."""
        return "".join(self.frames[start:])

    def wait_for_text(self, text: str, start: int = 0) -> None:
        def seen() -> bool:
            self.page.wait_for_timeout(20)  # lets Playwright deliver the frames' events
            return text in self.screen_since(start)

        wait_for(seen, f"{text!r} on screen")

    def type(self, text: str) -> None:
        self.page.keyboard.type(text)

    def press(self, key: str) -> int:
        """Press ``key``; returns the frame count before it (to wait for what it brings)."""
        mark = len(self.frames)
        self.page.keyboard.press(key)
        return mark

    def log_in(self, token: str, expect: str = "start judging") -> None:
        self.wait_for_text("personal token")
        mark = len(self.frames)
        self.type(token)
        self.page.keyboard.press("Enter")
        self.wait_for_text(expect, mark)

    def close(self) -> None:
        self.context.close()

    def loopback_only(self) -> bool:
        urls = self.requests + self.sockets
        return bool(urls) and all(urlsplit(u).hostname == "127.0.0.1" for u in urls) and not self.outside
