"""What every command shares: the project named by ``--db``, consoles and output helpers."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from rich.console import Console

from ragjudge.safetext import markup, mask_secrets

# no emoji codes: a run named ":a:" is shown as typed (markup is escaped by safe())
console = Console(highlight=False, soft_wrap=False, emoji=False)
err_console = Console(stderr=True, highlight=False, emoji=False)

_state: dict[str, str | None] = {"db": None}


def set_db(db: str | None) -> None:
    """Remember the ``--db`` given anywhere on the command line (None forgets it)."""
    _state["db"] = db or None


def project_db() -> str:
    """The project database: ``--db``, else ``RAGJUDGE_DB``, else ``./ragjudge.db``."""
    from ragjudge.store.engine import env_db  # lazily: file-only commands never load SQLAlchemy

    return _state["db"] or env_db()


def db_given() -> bool:
    """True when the user named a project with --db or RAGJUDGE_DB."""
    import os

    return bool(_state["db"] or os.environ.get("RAGJUDGE_DB"))


def open_project(*, create: bool = False):  # noqa: ANN201 - Project
    from ragjudge.services.project import Project

    return Project.open(project_db(), create=create)


def _json_default(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def clean_floats(value: Any) -> Any:
    """NaN and infinities become null, so that the JSON is valid for every reader."""
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {k: clean_floats(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_floats(v) for v in value]
    return value


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(clean_floats(data), indent=2, default=_json_default, allow_nan=False))
    sys.stdout.write("\n")


def safe(text: object) -> str:
    """User text for a Rich markup string, shown literally: control characters visible, markup
    escaped, a URL's password masked (see :mod:`ragjudge.safetext`)."""
    return markup(mask_secrets(text), multiline=True)
