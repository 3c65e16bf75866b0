"""End to end: the real app (``ragjudge annotate``) runs in a terminal (tmux), a person's
keypresses are sent to it, and what the screen acknowledged is read back from the terminal. The
app is killed with SIGKILL mid-session, three times. Every label the screen had acknowledged (it
showed the next pair and counted the label in "your queue (n/N)") is in the database."""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from projectkit import make_small_project

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None,
                       reason="tmux is not installed: the end-to-end kill test drives the app in tmux"),
]

CHUNK = re.compile(r"─ chunk (\S+)")
QUERY = re.compile(r"^│ (\S+)")
HANDLED = re.compile(r"your queue \((\d+)/(\d+)\)")


class Terminal:
    """One tmux server (private socket) running one command in a 120x40 terminal."""

    def __init__(self, name: str) -> None:
        self.socket = f"rj-{os.getpid()}-{name}"

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True,
                              timeout=20).stdout

    def start(self, command: str) -> int:
        self.tmux("new-session", "-d", "-s", "app", "-x", "120", "-y", "40", command)
        return int(self.tmux("list-panes", "-t", "app", "-F", "#{pane_pid}").strip())

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "app")

    def press(self, key: str) -> None:
        self.tmux("send-keys", "-t", "app", key)

    def close(self) -> None:
        self.tmux("kill-server")


def read_state(screen: str) -> tuple[str, str, int] | None:
    """(query id, chunk id, labels counted, or -1 where the progress line has no room for the
    count) as the screen shows them, or None."""
    lines = screen.splitlines()
    chunk = next((m.group(1) for m in map(CHUNK.search, lines) if m), None)
    handled = next((int(m.group(1)) for m in map(HANDLED.search, lines) if m), None)
    query = None
    for i, line in enumerate(lines):
        if "─ query" in line and i + 1 < len(lines):
            m = QUERY.match(lines[i + 1])
            query = m.group(1) if m else None
            break
    if chunk is None or query is None:
        return None
    return query, chunk, -1 if handled is None else handled


def wait_for(term: Terminal, predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = read_state(term.screen())
        if state is not None and predicate(state):
            return state
        time.sleep(0.02)
    size = term.tmux("display", "-p", "-t", "app", "#{window_width}x#{window_height}")
    raise AssertionError(f"the screen did not get there in {timeout} s ({size.strip()}):\n{term.screen()}")


def session(db: str, rng: random.Random, name: str) -> tuple[list[tuple[str, str, int]], int]:
    """One annotating session killed at a random moment; returns the acknowledged labels."""
    term = Terminal(name)
    acked: list[tuple[str, str, int]] = []
    try:
        pid = term.start(f"exec {sys.executable} -m ragjudge --db {db} annotate --annotator alice")
        state = wait_for(term, lambda s: True, timeout=60)
        kill_after = rng.randint(2, 8)
        for i in range(kill_after + 1):
            query, chunk, handled = state
            grade = rng.randint(0, 3)
            term.press(str(grade))
            if i == kill_after:  # kill with the keypress in flight
                time.sleep(rng.uniform(0, 0.03))
                break
            # the label is acknowledged when the next pair is shown (every key is committed
            # before it); the queue's count is in the progress line only where it fits
            state = wait_for(term, lambda s, q=query, c=chunk: (s[0], s[1]) != (q, c))
            acked.append((query, chunk, grade))
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.02)
        return acked, pid
    finally:
        term.close()


def test_killing_the_app_mid_session_loses_no_acknowledged_label(tmp_path):
    db = str(tmp_path / "e2e.db")
    make_small_project(db).close()
    rng = random.Random(8)
    acked: list[tuple[str, str, int]] = []
    sessions = 3
    for k in range(sessions):
        got, _ = session(db, rng, f"s{k}")
        acked.extend(got)
    assert len(acked) >= sessions * 2

    raw = sqlite3.connect(db)
    assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    rows = raw.execute("SELECT query_id, chunk_id, grade FROM labels WHERE annotator = 'alice' "
                       "ORDER BY id").fetchall()
    raw.close()
    in_db = [tuple(r) for r in rows]
    # every acknowledged label is there, in the order given ...
    assert [r for r in in_db if r in acked] == acked
    # ... and at most the keypress in flight at each kill got in without being acknowledged
    assert len(in_db) - len(acked) <= sessions
    assert len(set((q, c) for q, c, _ in in_db)) == len(in_db), "a pair was labelled twice"
