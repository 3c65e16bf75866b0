"""The demo project: Parcelwise, a fictional parcel carrier's support knowledge base.

Built from the files in ``fixtures/demo/`` (regenerated honestly by ``fixtures/make_demo.py``):
queries, chunks, three retriever runs, labels by three annotators, facets, nuggets, claims,
entities, two runs' generated answers with citations sentence by sentence, two annotators'
judgments of those answers, and judging guidelines.
"""

from __future__ import annotations

import os
from pathlib import Path
from ragjudge import files
from ragjudge.errors import ProjectError
from ragjudge.models import Scale
from ragjudge.services.access.visibility import access_for
from ragjudge.store.engine import sqlite_path


ORDER = ("queries", "chunks", "runs", "labels", "facets", "nuggets", "entities", "answers", "answer-labels",
         "guidelines")


def demo_folder() -> Path:
    """Where the demo files are: ``fixtures/demo`` of the source tree ragjudge runs from."""
    folder = Path(__file__).resolve().parents[3] / "fixtures" / "demo"
    if not (folder / "queries.jsonl").exists():
        raise ProjectError(
            f"the demo files are not at {folder}. 'ragjudge demo' runs from a source checkout "
            "(pip install -e .); a plain install has no fixtures/ folder."
        )
    return folder


def build_demo(db: str, *, fresh: bool = False, progress=None) -> bool:  # noqa: ANN001
    """Build the demo project at ``db``; False when a demo project is already there (and not
    ``fresh``).

    Only a project ``ragjudge demo`` built (marked ``demo`` in its settings) is ever rebuilt;
    anything else at ``db`` is refused, ``fresh`` or not, and left as it was. A SQLite project is
    built under a temporary name next to ``db`` and renamed into place
    (:func:`ragjudge.files.replacing`), so an interrupted build never leaves half a project
    behind.
    """
    from ragjudge.services.project.database import check_sqlite_file

    folder = demo_folder()
    path = sqlite_path(db)
    if path is not None:  # before the build: its rename would replace a device such as /dev/null
        check_sqlite_file(path, db, create=True)
    existing = _existing_file(db, path) if path is not None else _existing_server(db)
    if existing == "demo" and not fresh:
        return False
    if path is None:
        _fill(db, folder, exist_ok=True)
        return True
    with files.replacing(path, replace_demo=True) as temp:
        _fill(str(temp), folder, exist_ok=False)
        # the old demo's write-ahead log must not be read as part of the new file
        for stale in (Path(f"{path}-wal"), Path(f"{path}-shm")):
            stale.unlink(missing_ok=True)
    return True


def _refusal(db: str) -> ProjectError:
    return ProjectError(
        f"{db} is not the demo project (ragjudge demo marks the projects it builds), and the demo "
        "is never built over anything else, with --fresh or without. Name another file with "
        "--db, e.g. 'ragjudge demo --db ragjudge-demo.db'. Nothing was changed."
    )


def _existing_file(db: str, path: Path) -> str | None:
    """``"demo"`` for a demo project at ``path``, None for no file (or an empty one); anything
    else is refused. Read-only: a project that is refused stays byte for byte as it was."""
    kind = files.project_kind(path)
    if kind == "demo":
        return kind
    if kind is None and (not os.path.lexists(path) or (path.is_file() and path.stat().st_size == 0)):
        return None
    raise _refusal(db)


def _existing_server(db: str) -> str | None:
    """``"demo"`` for a demo project in the server database, None for a database without
    ragjudge data; a database holding any other ragjudge data is refused."""
    from sqlalchemy import func, select

    from ragjudge.services.project.database import Project
    from ragjudge.store.schema import Annotator, Chunk, Label, Query, Run, Setting

    with Project.open(db, create=True) as project:
        if project.get_setting("demo") is True:
            return "demo"
        with project.read() as session:
            held = any(session.scalar(select(func.count()).select_from(model))
                       for model in (Setting, Query, Chunk, Run, Label, Annotator))
    if held:
        raise _refusal(db)
    return None


def _fill(db: str, folder: Path, *, exist_ok: bool) -> None:
    from ragjudge.services.transfer.importing import import_file
    from ragjudge.services.project.database import Project

    project = Project.init(
        db,
        scale=Scale.parse("0-3"),
        name="Parcelwise support (demo)",
        description="Which support-article chunks answer Parcelwise customers' questions?",
        exist_ok=exist_ok,
    )
    with project:
        # marked first, so that an interrupted build on a server can be finished with --fresh
        project.set_settings({"demo": True})
        for kind in ORDER:
            if kind == "runs":
                for run in sorted((folder / "runs").glob("*.trec")):
                    import_file(project, "run", str(run), name=run.stem)
            elif kind == "guidelines":  # a new project has no lead: its builder sets it up
                import_file(project, "guidelines", str(folder / "guidelines.md"),
                            access=access_for(project, "demo"))
            else:
                import_file(project, kind, str(folder / f"{kind}.jsonl"))
        # Close the WAL into the main file so that the renamed file is the whole project.
        if project.engine.dialect.name == "sqlite":
            with project.engine.connect() as connection:
                connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
