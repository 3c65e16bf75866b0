"""Opening, creating and describing a project (one database).

Every layer above talks to the database through a :class:`Project`: ``project.read()`` for a
read-only ORM session, ``project.write(fn)`` for one short committed transaction (retried while
another annotator holds the write lock), ``project.connect()`` for bulk Core selects.
"""

from __future__ import annotations

import copy
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple, TypeVar
from sqlalchemy import inspect
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session, sessionmaker
from ragjudge.errors import ProjectError, why_unusable
from ragjudge.models import Scale, ScaleLevel
from ragjudge.safetext import mask_url
from ragjudge.store import engine as engine_settings
from ragjudge.store import migrate
from ragjudge.store.engine import (
    env_db, is_url, make_engine, sqlite_path, sqlite_uri, sqlite_writable, with_retry,
)
from ragjudge.store.schema import Base, Setting
from ragjudge.services.project.dberrors import describe_db_error, read_only_message
from ragjudge.services.project.lite import DEFAULT_RULE


T = TypeVar("T")




class Project:
    """An open ragjudge project."""

    def __init__(self, db: str, engine: Engine, *, readonly: bool = False) -> None:
        self.db = db
        self.engine = engine
        self.readonly = readonly
        """True when this user may read the project but not write it (opened read-only)."""
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._scale: Scale | None = None
        path = sqlite_path(db) if engine.dialect.name == "sqlite" else None
        self._writers = engine_settings.WriterQueue(path) if path is not None else None
        self.guard: Callable[[Session], None] | None = None
        """Run first in every write transaction (:meth:`guarded`); it may refuse the write."""
        self._owner = True

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def open(cls, db: str | None = None, *, create: bool = False) -> Project:
        """Open the project at ``db`` (a path or URL; default ``RAGJUDGE_DB`` or ./ragjudge.db).

        An older schema is migrated after a backup copy is written next to the file; a newer
        schema, a file that is not a ragjudge project, or a missing file (unless ``create``) is a
        :class:`ProjectError` and nothing is written.
        """
        db = db or env_db()
        path = sqlite_path(db)
        readonly = False
        if path is None and _in_memory(db):
            raise ProjectError(f"--db {db} is a database in memory, which is gone when the command "
                               "ends; give a file path such as labels.db.")
        found = _Found()
        if path is not None:
            check_sqlite_file(path, db, create=create)
            # Look before touching: the engine switches a file to WAL on connect, which must
            # never happen to a file that turns out not to be a ragjudge project.
            found = _inspect_sqlite_file(path, db, create=create)
            # A project this user may only read opens read-only: every reading command works,
            # and a write is refused with a message about permissions.
            readonly = path.exists() and not sqlite_writable(path)
            if readonly and create:
                raise ProjectError(read_only_message(db))
        engine = make_engine(db, readonly=readonly)
        project = cls(db, engine, readonly=readonly)
        try:
            if found.revision == migrate.HEAD:  # seen above: nothing to create or migrate
                project._connect_once()
            else:
                project._prepare(create=create, path=path)
        except DBAPIError as exc:  # the server refused the connection, the file is damaged, ...
            engine.dispose()
            raise ProjectError(describe_db_error(db, exc)) from None
        except BaseException:
            engine.dispose()
            raise
        if path is not None and not readonly and found.imports_left:
            from ragjudge.services.project.staging import clean_on_open

            clean_on_open(project)  # what a killed import left, when one did
        return project

    def _connect_once(self) -> None:
        """Connect once (the pool keeps the connection for the command's first read), so that
        a database the driver cannot open is said as a :class:`ProjectError` here."""
        with self.engine.connect():
            pass

    def _prepare(self, *, create: bool, path: Path | None) -> None:
        with self.engine.connect() as connection:
            revision = migrate.current_revision(connection)
            has_tables = bool(inspect(connection).get_table_names())
        if revision is None:
            if has_tables:
                raise ProjectError(
                    f"{self.shown_db} is a database but not a ragjudge project (it has tables of its "
                    "own and no ragjudge schema). Name another file with --db. Nothing was changed."
                )
            if not create:
                raise ProjectError(
                    f"{self.shown_db} holds no ragjudge project yet. Create one with "
                    f"'ragjudge init --db {self.shown_db}' or try 'ragjudge demo'."
                )
            self._create_schema()
            return
        migrate.check_revision(revision, self.shown_db)
        if revision != migrate.HEAD:
            if self.readonly:
                raise ProjectError(
                    f"{self.db} has an older schema (revision {revision}), which this ragjudge "
                    f"upgrades to {migrate.HEAD} when it opens the project; that needs write "
                    "permission, and this user may only read it. Open it once as a user who may "
                    "write it. Nothing was changed."
                )
            if path is not None:
                migrate.backup_before_migration(path, revision)
            migrate.upgrade(self.engine)

    def _create_schema(self) -> None:
        # The newest schema straight from the models, stamped as the newest revision; a test
        # proves that migrating from the first revision gives the same schema.
        def create(session: Session) -> None:
            connection = session.connection()
            Base.metadata.create_all(connection)
            from sqlalchemy import text

            connection.execute(text("CREATE TABLE IF NOT EXISTS alembic_version "
                                    "(version_num VARCHAR(32) NOT NULL PRIMARY KEY)"))
            connection.execute(text("DELETE FROM alembic_version"))
            connection.execute(text("INSERT INTO alembic_version VALUES (:v)"), {"v": migrate.HEAD})

        self.write(create)

    @classmethod
    def init(
        cls,
        db: str | None = None,
        *,
        scale: Scale | None = None,
        name: str | None = None,
        description: str | None = None,
        guidelines: str | None = None,
        exist_ok: bool = False,
    ) -> Project:
        """Create a new project with its relevance scale. Refuses an existing project unless
        ``exist_ok``."""
        from ragjudge.formats.records import check_typed

        for value, what in ((name, "--name"), (description, "--description"),
                            (guidelines, "The guidelines")):
            check_typed(value, what)
        db = db or env_db()
        path = sqlite_path(db)
        if path is not None:
            check_sqlite_file(path, db, create=True)  # a folder, a device: said as such
        if not exist_ok and path is not None and path.exists() and path.stat().st_size > 0:
            raise ProjectError(
                f"{db} already exists. Open it with 'ragjudge --db {db} status', or choose another "
                "file with --db. Nothing was changed."
            )
        project = cls.open(db, create=True)
        if not exist_ok and project.get_setting("scale") is not None:
            project.close()
            raise ProjectError(f"{mask_url(db)} is already a ragjudge project. Nothing was changed.")
        scale = scale or Scale.parse("0-3")
        values: dict[str, Any] = {
            "scale": scale.model_dump(mode="json"),
            "name": name or (path.stem if path else "ragjudge project"),
            "rule": DEFAULT_RULE,
        }
        if description:
            values["description"] = description
        if guidelines is not None:
            values["guidelines"] = guidelines
        project.set_settings(values)
        return project

    def close(self) -> None:
        if self._owner:
            self.engine.dispose()

    def guarded(self, guard: Callable[[Session], None]) -> Project:
        """This project for one session: the same database and connections, every write
        transaction running ``guard`` first (a login token's check), which may refuse it by
        raising. Closing the guarded project leaves the database open for its owner."""
        twin = copy.copy(self)
        twin.guard = guard
        twin._owner = False
        return twin

    @property
    def shown_db(self) -> str:
        """The database as screens, reports and messages name it: a URL's password masked."""
        return mask_url(self.db)

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sessions ------------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A session for reading (never commits)."""
        with self._sessions() as session:
            yield session

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        """A Core connection for bulk selects straight into arrays."""
        with self.engine.connect() as connection:
            yield connection

    def write(self, work: Callable[[Session], T]) -> T:
        """Run ``work(session)`` as one committed transaction; retried while the database is busy.

        ``work`` must be safe to run again (it is, when it only adds rows from its arguments).
        When this returns, the transaction is on disk.
        """
        if self.readonly:
            raise ProjectError(read_only_message(self.db))

        def attempt() -> T:
            connection = self.engine.connect().execution_options(ragjudge_write=True)
            try:
                with Session(bind=connection, expire_on_commit=False) as session:
                    with session.begin():
                        if self.guard is not None:
                            self.guard(session)
                        result = work(session)
                    return result
            finally:
                connection.close()

        writers = self._writers
        if writers is not None:
            def queued() -> T:
                with writers:
                    return attempt()
            return self._retry(queued)
        return self._retry(attempt)

    def _retry(self, attempt: Callable[[], T]) -> T:

        try:
            return with_retry(attempt)
        except OperationalError as exc:
            raise ProjectError(describe_db_error(self.db, exc)) from None

    # -- settings ------------------------------------------------------------------------

    def get_setting(self, key: str, default: Any = None) -> Any:
        with self.read() as session:
            row = session.get(Setting, key)
            return default if row is None else row.value

    def set_settings(self, values: dict[str, Any]) -> None:
        def store(session: Session) -> None:
            for key, value in values.items():
                session.merge(Setting(key=key, value=value))

        self.write(store)
        self._scale = None

    @property
    def scale(self) -> Scale:
        """The project's relevance scale (0-3 TREC DL levels when none was set)."""
        if self._scale is None:
            raw = self.get_setting("scale")
            if raw is None:
                self._scale = Scale.parse("0-3")
            else:
                levels = tuple(ScaleLevel(**level) for level in raw["levels"])
                self._scale = Scale(levels=levels, threshold=raw.get("threshold", 1))
        return self._scale

    @property
    def rule(self) -> str:
        return self.get_setting("rule", DEFAULT_RULE)

    @property
    def name(self) -> str:
        return self.get_setting("name", "ragjudge project")


def _stat(path: Path, db: str) -> os.stat_result | None:
    """``os.stat(path)``, None when nothing is there; a :class:`ProjectError` when the system
    will not look (a folder on the way this user may not enter, a name too long)."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ProjectError(f"--db {db}: {why_unusable(exc, path)} Nothing was changed.") from None


def _in_memory(db: str) -> bool:
    from sqlalchemy.engine import make_url

    url = make_url(db)
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


def check_sqlite_file(path: Path, db: str, *, create: bool) -> None:
    """A :class:`ProjectError` unless ``path`` can be a SQLite project (``create``: can become
    one): its folder exists, and it is a readable regular file or (``create``) nothing yet in a
    folder this user may write. A folder, a device such as /dev/null, a name too long, a file
    that is not SQLite: each is said as such before anything is opened or written."""
    parent = _stat(path.parent, db)
    if parent is None or not stat.S_ISDIR(parent.st_mode):
        raise ProjectError(
            f"--db {db}: the folder {path.parent} does not exist. Create it first or choose "
            "another path. Nothing was written."
        )
    found = _stat(path, db)
    if found is None and create and not os.access(path.parent, os.W_OK):
        raise ProjectError(f"--db {db}: this user may not write in the folder {path.parent}, so "
                           "no project can be created there. Nothing was written.")
    if found is None:
        if not create:
            demo = path.with_name("ragjudge-demo.db")
            if path.name == "ragjudge.db" and demo.exists():  # 'ragjudge demo' builds it by default
                hint = f"The demo project is at {demo.name} in that folder: add --db {demo.name}."
            else:
                hint = "Build the demo project with 'ragjudge demo'."
            raise ProjectError(
                f"There is no project at {db}. Create one with 'ragjudge init --db {db}'. {hint}"
            )
        return
    if stat.S_ISDIR(found.st_mode):
        raise ProjectError(f"--db {db} is a folder, not a project file.")
    if not stat.S_ISREG(found.st_mode):
        raise ProjectError(f"--db {db} is not a regular file (a device, a pipe or a socket); a "
                           "project is a file such as labels.db. Nothing was changed.")
    if found.st_size == 0:
        return
    try:
        with open(path, "rb") as handle:
            header = handle.read(16)
    except OSError as exc:
        raise ProjectError(f"--db {db}: {why_unusable(exc, path)} Nothing was changed.") from None
    if header != b"SQLite format 3\x00":
        raise ProjectError(
            f"{db} is not a ragjudge project: it is not a SQLite database (corrupt, or another "
            "kind of file). Nothing was changed."
        )


class _Found(NamedTuple):
    """What a look at a SQLite file found: its schema revision (None: no ragjudge schema, or
    not a SQLite file) and whether a run import left its line in ``run_imports`` (one under
    way, or one killed, whose rows the opening removes)."""

    revision: str | None = None
    imports_left: bool = True


def _inspect_sqlite_file(path: Path, db: str, *, create: bool) -> _Found:
    """Check an existing SQLite file read-only: a ragjudge schema this version can open."""
    if not path.exists() or path.stat().st_size == 0:
        if path.exists() and not create:
            raise ProjectError(
                f"{db} is an empty file, not a ragjudge project. Create one with "
                f"'ragjudge init --db {db}'. Nothing was changed."
            )
        return _Found()
    try:
        # Without a write-ahead log beside it the file is the whole database: read it as
        # immutable so that not even -wal/-shm files appear next to a file that is not ours.
        wal = Path(f"{path}-wal").exists()
        uri = sqlite_uri(path, readonly=True, immutable=not wal)
        connection = sqlite3.connect(uri, uri=True, timeout=engine_settings.BUSY_TIMEOUT_MS / 1000)
        try:
            tables = {row[0] for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            revision = None
            if "alembic_version" in tables:
                row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
                revision = row[0] if row else None
            imports_left = "run_imports" in tables and connection.execute(
                "SELECT EXISTS (SELECT 1 FROM run_imports)").fetchone()[0] == 1
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise ProjectError(describe_db_error(db, exc)) from None
    if revision is None and tables - {"alembic_version"}:
        raise ProjectError(
            f"{db} is a database but not a ragjudge project (it has tables of its own and no "
            "ragjudge schema). Name another file with --db. Nothing was changed."
        )
    if revision is not None:
        migrate.check_revision(revision, db)
    return _Found(revision, imports_left)


def open_project(db: str | None = None, *, create: bool = False) -> Project:
    return Project.open(db, create=create)


def is_server(db: str) -> bool:
    return is_url(db) and not db.startswith("sqlite")
