"""Storage: SQLAlchemy models, engine setup (SQLite by default, PostgreSQL for teams), migrations."""

from ragjudge.store.engine import database_url, env_db, is_url, make_engine, sqlite_path, with_retry
from ragjudge.store.schema import Base, utcnow

__all__ = ["Base", "database_url", "env_db", "is_url", "make_engine", "sqlite_path", "utcnow", "with_retry"]
