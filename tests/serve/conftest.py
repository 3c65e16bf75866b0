"""A small project with a lead and two annotators who have login tokens.

``served``: the project path and each member's token (``tokens['dora']`` is the lead's).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from projectkit import make_small_project, rights


def build_served_project(db: str) -> SimpleNamespace:
    from ragjudge.services.access import roster
    from ragjudge.services.labels.events import record_label

    with make_small_project(db) as project:
        tokens = {}
        for name, role in (("dora", "lead"), ("ana", "annotator"), ("ben", "annotator")):
            _, tokens[name] = roster.add(project, name, role=role, token=True, access=rights(project))
        # ben has graded a pair: what an annotator must not see of another
        record_label(project, annotator="ben", query_id="q1", chunk_id="c05", grade=3)
    return SimpleNamespace(db=db, tokens=tokens)


@pytest.fixture
def served(tmp_path) -> SimpleNamespace:
    return build_served_project(str(tmp_path / "served.db"))
