"""The sample tables: revision 0008 adds them to a project of revision 0007 (and takes them
away again), the migrated schema equals the models, and a sample drawn on PostgreSQL is the
one drawn on SQLite from the same pool and seed."""

from __future__ import annotations

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
import pytest
from projectkit import rights
from samplingkit import DEPTH, make_project, sample_rows
from sqlalchemy import inspect

from ragjudge.services.labels import assignment, sampling
from ragjudge.services.project.database import Project
from ragjudge.store import migrate
from ragjudge.store.engine import make_engine
from ragjudge.store.schema import Base

pytestmark = pytest.mark.slow

TABLES = {"pool_samples", "pool_sample_pairs"}


def _alembic(engine, action, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(migrate.MIGRATIONS))
    with engine.connect() as connection, connection.begin():
        config.attributes["connection"] = connection
        action(config, revision)


def _differences(engine) -> list:
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return compare_metadata(context, Base.metadata)


def test_revision_0008_adds_and_drops_the_sample_tables(any_db):
    engine = make_engine(any_db)
    try:
        migrate.upgrade(engine, "0007")
        assert not TABLES & set(inspect(engine).get_table_names())
        migrate.upgrade(engine)
        assert set(inspect(engine).get_table_names()) >= TABLES
        assert _differences(engine) == []
        pairs = inspect(engine)
        assert pairs.get_pk_constraint("pool_sample_pairs")["constrained_columns"] == [
            "sample_id", "query_id", "chunk_id"]
        assert {(f["constrained_columns"][0], f["referred_table"])
                for f in pairs.get_foreign_keys("pool_sample_pairs")} == {
            ("sample_id", "pool_samples"), ("query_id", "queries"), ("chunk_id", "chunks")}
        _alembic(engine, command.downgrade, "0007")
        assert not TABLES & set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_a_sample_drawn_on_either_backend_is_the_same(any_db, tmp_path):
    """The largest seed (a BIGINT on PostgreSQL) is kept, and the pool's order does not depend
    on the database's collation."""
    db = make_project(any_db)
    reference = make_project(str(tmp_path / "reference.db"))
    found = []
    for where in (db, reference):
        with Project.open(where) as project:
            assignment.assign(project, ["ann"], depth=DEPTH, seed=2**32 - 1, sample=7,
                              strategy="stratified", access=rights(project, "lea"))
            current = sampling.current_sample(project)
            assert current.seed == 2**32 - 1
            found.append(sample_rows(current.pool))
    assert found[0] == found[1]

