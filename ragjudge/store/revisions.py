"""The schema revisions this ragjudge knows (no SQLAlchemy or Alembic here: the lean reading of
a project checks its revision with :mod:`sqlite3` alone)."""

REVISIONS = ("0001", "0002", "0003", "0004", "0005", "0006", "0007", "0008", "0009")
"""Every schema revision this ragjudge knows, oldest first; the last is the newest."""
HEAD = REVISIONS[-1]
