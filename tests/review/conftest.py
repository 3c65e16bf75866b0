"""``project``: a small project where two annotators flagged and commented on pairs."""

from __future__ import annotations

import pytest
from projectkit import make_small_project
from reviewkit import seed_marks


@pytest.fixture
def project(tmp_path):
    with make_small_project(str(tmp_path / "p.db")) as project:
        seed_marks(project)
        yield project
