"""Small projects for tests, importable from any test folder as ``projectkit``.

(A module of its own: ``from conftest import ...`` is ambiguous when several test folders have
a conftest.py, and then depends on the order pytest happened to load them.)
"""

from __future__ import annotations

import subprocess
import sys


def ragjudge(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m ragjudge ARGS`` in a subprocess, its output captured as text."""
    return subprocess.run([sys.executable, "-m", "ragjudge", *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


def make_small_project(db: str, *, queries: int = 5, chunks: int = 20, depth: int = 10,
                       scale: str = "0-3"):
    """Create a project at ``db`` with queries q1.., chunks c01.. and a run ``bm25``."""
    from ragjudge.models import Scale
    from ragjudge.services.project.database import Project
    from ragjudge.store.schema import Chunk, Query, Run, RunEntry

    project = Project.init(db, scale=Scale.parse(scale), name="test project")

    def fill(session) -> None:
        session.add_all(Query(id=f"q{i}", text=f"query {i}", category="factoid" if i % 2 else "policy")
                        for i in range(1, queries + 1))
        session.add_all(Chunk(id=f"c{j:02d}", text=f"chunk {j}", doc_id=f"d{j % 7}")
                        for j in range(1, chunks + 1))
        session.add(Run(name="bm25"))
        session.flush()
        for i in range(1, queries + 1):
            for rank in range(1, min(depth, chunks) + 1):
                j = (i * 3 + rank) % chunks + 1
                session.add(RunEntry(run="bm25", query_id=f"q{i}", chunk_id=f"c{j:02d}", rank=rank,
                                     score=1.0 / rank))

    project.write(fill)
    return project



def make_two_annotator_project(db: str) -> str:
    """The small project, with labels of ana (2, 0, 1) and ben (1, 0, 3) on q1's c05, c06, c07:
    two annotators who agree on one pair of three. Closed; its path is returned."""
    from ragjudge.services.labels.events import record_label

    project = make_small_project(db)
    for annotator, grades in (("ana", [2, 0, 1]), ("ben", [1, 0, 3])):
        for chunk, grade in zip(("c05", "c06", "c07"), grades):
            record_label(project, annotator=annotator, query_id="q1", chunk_id=chunk, grade=grade)
    project.close()
    return db

def rights(project, name: str | None = "dora"):
    """The :class:`~ragjudge.services.access.rights.Access` of ``name`` in ``project`` (by
    default ``dora``, the lead of most test projects; in a project without a lead anyone named
    may set one up)."""
    from ragjudge.services.access.visibility import access_for

    return access_for(project, name)


def screen_app(project, make_screen, *, annotator: str | None = "lead", size_title: str = "Host"):
    """The ragjudge app opened on one screen (``make_screen()``) as ``annotator`` (by default
    ``lead``, who leads a project without a lead), drawn as a plain Textual app (no app
    stylesheet, the title ``Host``) so that snapshots show the screen alone."""
    from ragjudge.tui.app import RagjudgeApp

    class Host(RagjudgeApp):
        CSS_PATH = None
        TITLE = size_title

        def on_mount(self) -> None:
            self.push_screen(make_screen())

    return Host(project, annotator=annotator, start=None)
