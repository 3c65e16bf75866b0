"""Fixtures of the sampling tests: ``sampled_db``, the path of a samplingkit project."""

from __future__ import annotations

import pytest
from samplingkit import make_project

from ragjudge.cli import common


@pytest.fixture
def sampled_db(tmp_path) -> str:
    return make_project(str(tmp_path / "sampled.db"))


@pytest.fixture(autouse=True)
def _no_project(monkeypatch):
    monkeypatch.setitem(common.CLI_STATE, "db", None)
    monkeypatch.delenv("RAGJUDGE_DB", raising=False)
    monkeypatch.delenv("RAGJUDGE_LEAN", raising=False)
    # the commands run as the project's lead, who sees every query's values (in a blind
    # project an annotator sees a query's own values only once they judged its whole gold)
    monkeypatch.setenv("RAGJUDGE_USER", "lea")
