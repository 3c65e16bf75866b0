"""``project``: the small judging project of tui_project.py (overrides the root fixture here)."""

from __future__ import annotations

import pytest
from tui_project import build_project


@pytest.fixture
def project(tmp_path):
    p = build_project(tmp_path / "t.db")
    yield p
    p.close()
