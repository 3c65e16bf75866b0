"""Fixtures of the report's tests: the demo project, built once per session by ``ragjudge demo
--no-tui --db X`` and copied for each test that changes it; ``eval --format json`` of it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from projectkit import ragjudge


@pytest.fixture(scope="session")
def demo_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    built = ragjudge("demo", "--no-tui", "--db", str(path))
    assert built.returncode == 0, built.stderr
    return path


@pytest.fixture
def demo_db(demo_file, tmp_path) -> str:
    """A fresh copy of the demo project (for tests that change it)."""
    target = tmp_path / "demo.db"
    shutil.copyfile(demo_file, target)
    return str(target)


@pytest.fixture(scope="session")
def demo_eval(demo_file) -> dict:
    """``ragjudge eval --format json --ci --per-query --by category`` of the demo project."""
    out = ragjudge("eval", "--db", str(demo_file), "--format", "json", "--ci", "--per-query",
                   "--by", "category", "-q")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="session")
def demo_html(demo_file, tmp_path_factory) -> Path:
    """The demo project's HTML report, made once (read-only tests share it)."""
    out = tmp_path_factory.mktemp("report") / "report.html"
    made = ragjudge("report", "--db", str(demo_file), "-o", str(out), "-q")
    assert made.returncode == 0, made.stderr
    return out
