"""Fixtures of the web tests: a project with a lead and two annotators (``site``), and the web
server on loopback over it (``web``), stopped after the test."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the 'serve' extra (fastapi, uvicorn) is not installed")
pytest.importorskip("uvicorn", reason="the 'serve' extra (fastapi, uvicorn) is not installed")

import webkit


@pytest.fixture
def site(tmp_path):
    return webkit.build_project(str(tmp_path / "web.db"))


@pytest.fixture
def web(site):
    running = webkit.start(site.db)
    yield running
    running.stop()
