"""`ragjudge demo --no-tui` builds the demo project that `status` then describes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "demo"


def lines(name: str) -> int:
    with open(FIXTURES / name, encoding="utf-8") as handle:
        return sum(1 for line in handle if line.strip())


def ragjudge(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragjudge", *args], capture_output=True, text=True, timeout=300)


def test_demo_then_status_shows_the_demo_counts(tmp_path):
    db = str(tmp_path / "demo.db")
    built = ragjudge("demo", "--no-tui", "--db", db)
    assert built.returncode == 0, built.stderr
    out = ragjudge("status", "--db", db, "--format", "json")
    assert out.returncode == 0, out.stderr
    status = json.loads(out.stdout)
    assert status["queries"] == lines("queries.jsonl") >= 40
    assert status["chunks"] == lines("chunks.jsonl") >= 400
    assert status["runs"] == len(list((FIXTURES / "runs").glob("*.trec"))) == 3
    assert status["annotators"] == 3
    assert status["labels"] == lines("labels.jsonl")
    assert 0 < status["pool"]["judged"] < status["pool"]["pairs"]
    # A second demo call keeps the project (and its labels) as it is.
    again = ragjudge("demo", "--no-tui", "--db", db)
    assert again.returncode == 0 and "already" in again.stderr
    assert json.loads(ragjudge("status", "--db", db, "--format", "json").stdout) == status


def test_demo_refuses_to_overwrite_another_project(tmp_path):
    db = str(tmp_path / "mine.db")
    assert ragjudge("init", "--db", db).returncode == 0
    before = Path(db).read_bytes()
    out = ragjudge("demo", "--no-tui", "--db", db)
    assert out.returncode == 2 and "not the demo project" in out.stderr
    assert Path(db).read_bytes() == before
