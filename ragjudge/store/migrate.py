"""Schema versions: create a new project at the newest revision, migrate an older one (after a
backup copy), refuse a newer one."""

from __future__ import annotations

from datetime import datetime, UTC
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine

if TYPE_CHECKING:
    from alembic.config import Config

from ragjudge.errors import ProjectError
from ragjudge.store.revisions import HEAD, REVISIONS

MIGRATIONS = Path(__file__).with_name("migrations")


def _alembic_config(connection: Connection) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Run the Alembic migrations up to ``revision`` (used for new and older projects)."""
    from alembic import command

    with engine.connect().execution_options(ragjudge_write=True) as connection:
        with connection.begin():
            command.upgrade(_alembic_config(connection), revision)


def current_revision(connection: Connection) -> str | None:
    """The project's schema revision, or None when the database has no ragjudge tables."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    row = connection.execute(text("SELECT version_num FROM alembic_version")).first()
    return row[0] if row else None


def backup_before_migration(path: Path, revision: str) -> Path:
    """Copy an older project next to itself before migrating it; return the copy's path."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    target = path.with_name(f"{path.name}.before-{HEAD}-from-{revision}-{stamp}.bak")
    import sqlite3

    from ragjudge import files

    with files.replacing(target) as partial:  # whole or not at all, as every file ragjudge writes
        source = sqlite3.connect(path)
        try:
            dest = sqlite3.connect(partial)
            try:
                with dest:
                    source.backup(dest)
            finally:
                dest.close()
        finally:
            source.close()
    return target


def check_revision(revision: str, where: str) -> None:
    if revision not in REVISIONS:
        raise ProjectError(
            f"{where} was written by a newer ragjudge (schema revision {revision}; this ragjudge "
            f"knows up to {HEAD}). Upgrade ragjudge (pip install -U ragjudge) to open it. "
            "Nothing was changed."
        )


