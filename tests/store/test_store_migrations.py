"""Schema migrations: a database created at the first Alembic revision upgrades to the newest,
and the migrated schema equals the one created from the models (Alembic's autogenerate
comparison finds no difference), on SQLite and on PostgreSQL."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text

from ragjudge.errors import ProjectError
from ragjudge.services.project.database import Project
from ragjudge.store import migrate
from ragjudge.store.engine import make_engine
from ragjudge.store.schema import Base


def schema_differences(engine) -> list:
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True,
                                                                "compare_server_default": False})
        return compare_metadata(context, Base.metadata)


def schema_of(engine) -> dict:
    """Tables, columns (name, type, nullable), primary keys, foreign keys, indexes, uniques."""
    out = {}
    with engine.connect() as connection:
        inspector = inspect(connection)
        for table in sorted(inspector.get_table_names()):
            out[table] = {
                "columns": [(c["name"], str(c["type"]), c["nullable"]) for c in inspector.get_columns(table)],
                "pk": inspector.get_pk_constraint(table)["constrained_columns"],
                "fks": sorted((tuple(f["constrained_columns"]), f["referred_table"], tuple(f["referred_columns"]))
                              for f in inspector.get_foreign_keys(table)),
                "indexes": sorted((i["name"], tuple(i["column_names"]), bool(i["unique"]))
                                  for i in inspector.get_indexes(table)),
                "uniques": sorted((tuple(u["column_names"])) for u in inspector.get_unique_constraints(table)),
            }
    return out


def test_revisions_are_a_single_chain_ending_at_head():
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(migrate.MIGRATIONS))
    script = ScriptDirectory.from_config(config)
    chain = [rev.revision for rev in reversed(list(script.walk_revisions()))]
    assert tuple(chain) == migrate.REVISIONS
    assert script.get_heads() == [migrate.HEAD]


def test_first_revision_upgrades_to_newest_and_matches_the_models(any_db):
    engine = make_engine(any_db)
    try:
        migrate.upgrade(engine, migrate.REVISIONS[0])
        with engine.connect() as connection:
            assert migrate.current_revision(connection) == migrate.REVISIONS[0]
        # the first revision lacks something the models have (else this test proves nothing)
        assert schema_differences(engine)
        migrate.upgrade(engine)
        with engine.connect() as connection:
            assert migrate.current_revision(connection) == migrate.HEAD
        assert schema_differences(engine) == []
    finally:
        engine.dispose()


def test_migrated_schema_equals_a_new_project(any_db, tmp_path, request):
    """Project.init builds the newest schema straight from the models; a migrated database has
    the same tables, columns, keys and indexes."""
    engine = make_engine(any_db)
    try:
        migrate.upgrade(engine, migrate.REVISIONS[0])
        migrate.upgrade(engine)
        migrated = schema_of(engine)
    finally:
        engine.dispose()
    if "://" in any_db:
        fresh_db = request.getfixturevalue("pg_url_second")
    else:
        fresh_db = str(tmp_path / "fresh.db")
    Project.init(fresh_db).close()
    fresh_engine = make_engine(fresh_db)
    try:
        assert schema_differences(fresh_engine) == []
        fresh = schema_of(fresh_engine)
    finally:
        fresh_engine.dispose()
    assert migrated.keys() == fresh.keys()
    if "://" not in any_db:
        migrated = sqlite_without_lengths(migrated)
    for table in fresh:
        assert migrated[table] == fresh[table], table


def sqlite_without_lengths(schema: dict) -> dict:
    """SQLite ignores a declared VARCHAR length (a VARCHAR(255) column holds any text), and
    revision 0003 leaves the VARCHAR(255) of older SQLite projects in place (dropping it would
    copy every table); the models declare no length. Only that difference is forgiven."""
    out = {}
    for table, parts in schema.items():
        columns = [(name, "VARCHAR" if type_ == "VARCHAR(255)" else type_, nullable)
                   for name, type_, nullable in parts["columns"]]
        out[table] = {**parts, "columns": columns}
    return out


@pytest.fixture
def pg_url_second(request) -> str:
    """A second fresh PostgreSQL database in the same test (pg_url gives one per test)."""
    import os
    import uuid

    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    base = os.environ["RAGJUDGE_TEST_PG"]
    name = f"rj_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    yield make_url(base).set(database=name).render_as_string(hide_password=False)
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def test_project_open_migrates_an_older_project_keeping_its_rows(any_db):
    engine = make_engine(any_db)
    migrate.upgrade(engine, migrate.REVISIONS[0])
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO queries (id, text) VALUES ('q1', 'kept')"))
    engine.dispose()
    with Project.open(any_db) as project:
        with project.connect() as connection:
            assert migrate.current_revision(connection) == migrate.HEAD
            assert connection.execute(text("SELECT text FROM queries")).scalars().all() == ["kept"]


def test_project_open_refuses_a_newer_schema(any_db):
    Project.init(any_db).close()
    engine = make_engine(any_db)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0999'"))
    engine.dispose()
    with pytest.raises(ProjectError, match="newer ragjudge"):
        Project.open(any_db)


def test_project_open_refuses_a_database_with_foreign_tables(any_db):
    engine = make_engine(any_db)
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)"))
    engine.dispose()
    with pytest.raises(ProjectError, match="not a ragjudge project"):
        Project.open(any_db)
    with pytest.raises(ProjectError, match="not a ragjudge project"):
        Project.init(any_db, exist_ok=True)


def test_project_open_of_an_empty_database_says_how_to_create_one(any_db):
    if "://" not in any_db:
        open(any_db, "wb").close()
    with pytest.raises(ProjectError, match="ragjudge init"):
        Project.open(any_db)
