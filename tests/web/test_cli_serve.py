"""``ragjudge serve``'s command line: the web server with the project, its options and their
refusals; stopping on SIGINT and SIGTERM within two seconds with every acknowledged label kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import webkit
from webkit import key

from ragjudge.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_server(monkeypatch):
    """``ragjudge serve`` up to the point where it would listen; the arguments it would use."""
    import ragjudge.web.server as module

    calls = []
    monkeypatch.setattr(module, "serve", lambda db, **kw: calls.append((db, kw)))
    return calls


@pytest.mark.slow
def test_serve_starts_on_loopback_with_the_project(site, no_server, capsys):
    assert main(["--db", site.db, "serve", "--port", "8123"]) == 0
    [(db, options)] = no_server
    assert db == site.db and options["host"] == "127.0.0.1" and options["port"] == 8123
    assert options["max_sessions"] == 1000 and options["max_terminals"] == 4
    assert "warning" not in capsys.readouterr().err


@pytest.mark.slow
def test_serve_on_every_network_warns_to_put_tls_in_front(site, no_server, capsys):
    assert main(["--db", site.db, "serve", "--host", "0.0.0.0"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "warning: listening on 0.0.0.0" in err and "TLS" in err


def test_serve_tells_when_nobody_can_log_in(tmp_path, no_server, capsys):
    from projectkit import make_small_project

    make_small_project(str(tmp_path / "p.db")).close()
    assert main(["--db", str(tmp_path / "p.db"), "serve"]) == 0
    assert "nobody can log in yet" in " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize(("args", "message"), [
    (["--port", "0"], "--port 0"),
    (["--host", ""], "--host ''"),
    (["--host", "127.0.0.1 \x1b[2J"], "--host"),
    (["--port", "70000"], "--port 70000"),
    (["--max-sessions", "0"], "--max-sessions 0"),
    (["--max-terminals", "-1"], "--max-terminals -1"),
    (["--public-url", "labels.example.org"], "--public-url"),
    (["--public-url", "https://u:pw@labels.example.org"], "no user name or password"),
])
def test_serve_refuses_bad_options_in_one_paragraph(site, no_server, capsys, args, message):
    assert main(["--db", site.db, "serve", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "pw@" not in err
    assert no_server == []


@pytest.mark.slow
def test_serve_without_the_extra_says_how_to_install_it(site, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    assert main(["--db", site.db, "serve"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'ragjudge[serve]'" in err and "Traceback" not in err


def test_serve_on_a_missing_project_is_one_paragraph(tmp_path, no_server, capsys):
    assert main(["--db", str(tmp_path / "none.db"), "serve"]) == 2
    err = capsys.readouterr().err
    assert "none.db" in err and "Traceback" not in err and no_server == []


@pytest.mark.slow
def test_a_port_in_use_is_one_paragraph(site, capsys):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["--db", site.db, "serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1 port {port}" in " ".join(err.split()) and "Traceback" not in err


def label_ids(db: str, annotator: str) -> set[int]:
    from sqlalchemy import select

    from ragjudge.services.project.database import Project
    from ragjudge.store.schema import Label

    with Project.open(db) as project, project.read() as session:
        return set(session.scalars(select(Label.id).where(Label.annotator == annotator)))


def start_command(db: str, port: int) -> subprocess.Popen:
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    process = subprocess.Popen([sys.executable, "-m", "ragjudge", "--db", db, "serve", "--port", str(port)],
                               env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "ragjudge serve did not start"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_takes_under_two_seconds_and_keeps_every_acknowledged_label(site, sig):
    port = webkit.free_port()
    process = start_command(site.db, port)
    acknowledged: list[int] = []
    stop = threading.Event()

    def label_on() -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5,
                          headers={"Authorization": f"Bearer {site.tokens['ana']}"}) as client:
            try:
                pair = client.get("/api/v1/pairs/next").json()["pairs"][0]
                while pair is not None and not stop.is_set():
                    response = client.post("/api/v1/labels", headers={"Idempotency-Key": key()}, json={
                        "query_id": pair["query"]["id"], "chunk_id": pair["chunk"]["id"], "grade": 1,
                        "seen": pair["seen"]})
                    if response.status_code != 201:
                        return
                    acknowledged.append(response.json()["event_id"])
                    pair = response.json()["next"]
            except httpx.TransportError:
                return  # the server went away between two labels

    writer = threading.Thread(target=label_on)
    writer.start()
    while len(acknowledged) < 5:
        time.sleep(0.01)
    started = time.monotonic()
    process.send_signal(sig)
    code = process.wait(timeout=10)
    took = time.monotonic() - started
    stop.set()
    writer.join(10)
    out, err = process.communicate()
    assert took < 2.0, took
    assert code == 0 and "Traceback" not in err
    assert len(acknowledged) >= 5 and set(acknowledged) <= label_ids(site.db, "ana")  # none lost
    assert "ragjudge serve:" in out and "127.0.0.1" in out
