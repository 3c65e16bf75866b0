"""The demo project: Parcelwise, a fictional parcel carrier's support knowledge base.

Built from the files in ``fixtures/demo/`` (regenerated honestly by ``fixtures/make_demo.py``):
queries, chunks, three retriever runs, labels by three annotators, facets, nuggets, claims,
entities, two runs' generated answers with citations sentence by sentence, two annotators'
judgments of those answers, and judging guidelines.
"""

from __future__ import annotations

import os
from pathlib import Path

from ragjudge.errors import ProjectError
from ragjudge.models import Scale
from ragjudge.store.engine import sqlite_path

ORDER = ("queries", "chunks", "runs", "labels", "facets", "nuggets", "entities", "answers", "answer-labels",
         "guidelines")


def demo_folder() -> Path:
    """Where the demo files are: ``fixtures/demo`` of the source tree ragjudge runs from."""
    folder = Path(__file__).resolve().parents[2] / "fixtures" / "demo"
    if not (folder / "queries.jsonl").exists():
        raise ProjectError(
            f"the demo files are not at {folder}. 'ragjudge demo' runs from a source checkout "
            "(pip install -e .); a plain install has no fixtures/ folder."
        )
    return folder


def build_demo(db: str, *, fresh: bool = False, progress=None) -> bool:  # noqa: ANN001
    """Build the demo project at ``db``; False when a demo project is already there.

    A SQLite project is built in a temporary file next to ``db`` and renamed into place, so an
    interrupted build never leaves half a project behind.
    """
    from ragjudge.services.project import Project

    folder = demo_folder()
    path = sqlite_path(db)
    if path is not None and path.exists() and path.stat().st_size > 0 and not fresh:
        with Project.open(db) as project:
            if project.get_setting("demo"):
                return False
        raise ProjectError(
            f"{db} exists and is not the demo project; name another file with --db. Nothing was changed."
        )
    target = db
    if path is not None:
        if not path.parent.exists():
            raise ProjectError(f"--db {db}: the folder {path.parent} does not exist.")
        temp = path.with_name(f".{path.name}.building-{os.getpid()}")
        for leftover in (temp, Path(f"{temp}-wal"), Path(f"{temp}-shm")):
            leftover.unlink(missing_ok=True)
        target = str(temp)
    try:
        _fill(target, folder, exist_ok=path is None and fresh)
    except BaseException:
        if path is not None:
            for leftover in (Path(target), Path(f"{target}-wal"), Path(f"{target}-shm"),
                             Path(f"{target}.writelock")):
                leftover.unlink(missing_ok=True)
        raise
    if path is not None:
        for stale in (Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{target}.writelock")):
            stale.unlink(missing_ok=True)
        os.replace(target, path)
    return True


def _fill(db: str, folder: Path, *, exist_ok: bool) -> None:
    from ragjudge.services.importing import import_file
    from ragjudge.services.project import Project

    project = Project.init(
        db,
        scale=Scale.parse("0-3"),
        name="Parcelwise support (demo)",
        description="Which support-article chunks answer Parcelwise customers' questions?",
        exist_ok=exist_ok,
    )
    with project:
        for kind in ORDER:
            if kind == "runs":
                for run in sorted((folder / "runs").glob("*.trec")):
                    import_file(project, "run", str(run), name=run.stem)
            elif kind == "guidelines":
                import_file(project, "guidelines", str(folder / "guidelines.md"))
            else:
                import_file(project, kind, str(folder / f"{kind}.jsonl"))
        project.set_settings({"demo": True})
        # Close the WAL into the main file so that the renamed file is the whole project.
        if project.engine.dialect.name == "sqlite":
            with project.engine.connect() as connection:
                connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
