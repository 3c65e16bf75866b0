"""What the database refused, in one paragraph a user can act on."""

from __future__ import annotations

import sqlite3
from ragjudge.safetext import mask_url


def read_only_message(db: str) -> str:
    return (f"{db} is read-only for this user, so nothing can be recorded. Check the file's "
            "and its folder's permissions. Nothing was changed.")


def describe_db_error(db: str, exc: BaseException) -> str:
    db = mask_url(db)
    orig = getattr(exc, "orig", exc)
    text = " ".join(str(orig).split())  # drivers' messages span lines; ours are one paragraph
    lowered = text.lower()
    if "readonly" in lowered or "read-only" in lowered or "attempt to write" in lowered:
        return read_only_message(db)
    if "locked" in lowered or "busy" in lowered:
        return (f"{db} stayed locked by another process for too long. Is an import or a backup "
                "running? Try again in a moment. Nothing was changed.")
    if "malformed" in lowered or "not a database" in lowered or "corrupt" in lowered:
        return (f"{db} is damaged ({text}). Restore it from a backup ('ragjudge backup' makes "
                "them). Nothing was changed.")
    if isinstance(orig, sqlite3.Error):
        return f"{db}: the database answered '{text}'. Nothing was changed."
    return f"{db}: could not use the database: {text}"
