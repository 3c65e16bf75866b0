"""Storage: SQLAlchemy models, engine setup (SQLite by default, PostgreSQL for teams), migrations.

Callers import from the modules (``ragjudge.store.engine``, ``ragjudge.store.schema``, ...):
this package's ``__init__`` imports nothing, so that the plain-SQL readers
(:mod:`ragjudge.store.sqltext`, :mod:`ragjudge.store.sqlitefile`) load without SQLAlchemy.
"""
