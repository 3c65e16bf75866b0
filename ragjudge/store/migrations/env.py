"""Alembic environment: ragjudge runs migrations itself on an open connection (see
``ragjudge.store.migrate``); the ``alembic`` command line is not needed by users."""

from alembic import context

from ragjudge.store.schema import Base

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only for developers generating revisions by hand
    from sqlalchemy import create_engine

    url = context.config.get_main_option("sqlalchemy.url")
    if url is None:
        raise SystemExit("alembic: set sqlalchemy.url in the configuration to generate a revision")
    connection = create_engine(url).connect()

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
