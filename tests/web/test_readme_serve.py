"""The README's `ragjudge serve` section runs as written: its setup commands in a project that
gets a lead, then its curl commands against the server they set up."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import webkit

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## In the browser: `ragjudge serve`"):]
    section = section[:section.index("\n## ", 5)]
    return re.findall(r"```bash\n(.*?)```", section, flags=re.S)


def documents(text: str) -> list[dict]:
    decoder, out, at = json.JSONDecoder(), [], 0
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        found, at = decoder.raw_decode(text, at)
        out.append(found)
    return out


def run_bash(script: str, cwd: Path) -> subprocess.CompletedProcess:
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    environment.pop("RAGJUDGE_DB", None)
    shim = f"ragjudge() {{ {sys.executable} -m ragjudge \"$@\"; }}\nset -e\n"
    return subprocess.run(["bash", "-c", shim + script], cwd=cwd, env=environment, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_setup_and_the_curl_examples_run_as_written(tmp_path):
    from projectkit import make_small_project

    make_small_project(str(tmp_path / "ragjudge.db")).close()
    setup, _, api = blocks()[0], blocks()[1], next(b for b in blocks() if "TOKEN=rj_" in b)
    commands = [line for line in setup.splitlines() if line.startswith("ragjudge annotators")]
    assert len(commands) == 3 and "--by dora" in commands[1]
    done = run_bash("\n".join(commands), tmp_path)
    assert done.returncode == 0, done.stderr
    tokens = dict(zip(("dora", "ana", "ben"), re.findall(r"(rj_[A-Za-z0-9_-]+)", done.stdout)))
    assert len(tokens) == 3

    port = webkit.free_port()
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    environment.pop("RAGJUDGE_DB", None)
    server = subprocess.Popen([sys.executable, "-m", "ragjudge", "serve", "--port", str(port)], cwd=tmp_path,
                              env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.05)
        script = (api.replace("TOKEN=rj_...", f"TOKEN={tokens['ana']}")
                  .replace("LEAD=rj_...", f"LEAD={tokens['dora']}")
                  .replace("127.0.0.1:8000", f"127.0.0.1:{port}"))
        ran = run_bash(script, tmp_path)
        assert ran.returncode == 0, ran.stderr
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(10)
    label, history, evaluation = documents(ran.stdout)  # curl prints them one after another
    assert label["label"]["grade"] == 2 and label["next"] is not None
    assert history["history"][0]["label"]["grade"] == 2
    assert evaluation["measures"] == ["nDCG@10", "R@5"] and "bm25" in evaluation["runs"]
    assert (tmp_path / "qrels.trec").read_text().startswith("q1 0 ")
    assert webkit.events(str(tmp_path / "ragjudge.db"), "ana")[-1][3] == 2
