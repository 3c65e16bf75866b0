"""Revision 0009: a nugget's weight may be unset. The 1.0 every nugget was stored with before
(set or not) is read as unset, so a weighted nugget score weighs an okay nugget 0.5 as TREC
2024 RAG does; a weight someone gave (not 1.0) stays; the migrated schema equals the models;
downgrading stores 1.0 again."""

from __future__ import annotations

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import text

from ragjudge.store import migrate
from ragjudge.store.engine import make_engine
from ragjudge.store.schema import Base


def _weights(engine) -> dict[str, float | None]:
    with engine.connect() as connection:
        return dict(connection.execute(text("SELECT text, weight FROM nuggets")).all())


def test_revision_0009_leaves_the_default_weight_unset(any_db):
    engine = make_engine(any_db)
    try:
        migrate.upgrade(engine, "0008")
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO queries (id, text) VALUES ('q1', 'a query')"))
            for name, importance, weight in (("vital one", "vital", 1.0), ("okay one", "okay", 1.0),
                                             ("weighed", "okay", 0.7)):
                connection.execute(text(
                    "INSERT INTO nuggets (query_id, text, importance, kind, weight, removed, created_at) "
                    "VALUES ('q1', :t, :i, 'nugget', :w, :r, CURRENT_TIMESTAMP)"),
                    {"t": name, "i": importance, "w": weight, "r": False})
        migrate.upgrade(engine)
        assert _weights(engine) == {"vital one": None, "okay one": None, "weighed": 0.7}
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
        config = Config()
        config.set_main_option("script_location", str(migrate.MIGRATIONS))
        with engine.connect() as connection, connection.begin():
            config.attributes["connection"] = connection
            command.downgrade(config, "0008")
        assert _weights(engine) == {"vital one": 1.0, "okay one": 1.0, "weighed": 0.7}
    finally:
        engine.dispose()
