"""What every command shares without typer or rich: the project named by ``--db``, the limits
of numeric options, JSON output and user text made safe for markup.

:mod:`ragjudge.cli.common` re-exports all of it beside the consoles; the commands that print
without Rich (``eval`` on files, see :mod:`ragjudge.cli.lean`) import it from here.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from ragjudge.errors import UsageError
from ragjudge.safetext import markup, mask_secrets

CLI_STATE: dict[str, str | None] = {"db": None}


def set_db(db: str | None) -> None:
    """Remember the ``--db`` given anywhere on the command line (None forgets it)."""
    CLI_STATE["db"] = db or None


def project_db() -> str:
    """The project database: ``--db``, else ``RAGJUDGE_DB``, else ``./ragjudge.db``."""
    from ragjudge.store.engine import env_db  # lazily: file-only commands never load SQLAlchemy

    return CLI_STATE["db"] or env_db()


def db_given() -> bool:
    """True when the user named a project with --db or RAGJUDGE_DB."""
    import os

    return bool(CLI_STATE["db"] or os.environ.get("RAGJUDGE_DB"))


def open_project(*, create: bool = False):  # noqa: ANN201 - Project
    from ragjudge.services.project.database import Project

    return Project.open(project_db(), create=create)


def access_of(project, by: str | None):  # noqa: ANN001, ANN201 - Project -> Access
    """The rights of who runs this command: ``--by NAME``, else ``$RAGJUDGE_USER``, else the
    login name (:func:`ragjudge.services.access.identity.resolve`); unknown: the least rights."""
    from ragjudge.services.access.identity import resolve
    from ragjudge.services.access.visibility import access_for

    return access_for(project, resolve(by))


MAX_DEPTH = 100_000
"""The deepest pool: the top K chunks of each run, K at most this."""
MAX_SEED = 2**32 - 1
"""Seeds are 32-bit, as numpy's and most tools' are: a seed printed anywhere can be given back."""
MAX_DRAWS = 1_000_000
"""The most resamples or sign flips of a significance test (memory grows with them)."""
MAX_LIMIT = 1_000_000_000
"""The most rows a listing is asked for (a database integer must hold it)."""


def check_int(option: str, value: int, low: int, high: int, what: str) -> int:
    """``value`` of the integer ``option`` when ``low <= value <= high``; a :class:`UsageError`
    stating the range otherwise. Checked as the command starts, before the value sizes a list, a
    pool or a database query (a 31-digit --depth would otherwise reach SQLite's 64-bit integers)."""
    if low <= value <= high:
        return value
    digits = str(value)
    shown = digits if len(digits) <= 24 else f"{digits[:12]}... ({len(digits):,} digits)"
    raise UsageError(f"{option} {shown}: {what} is a whole number from {low:,} to {high:,}.")


def json_default(value: Any) -> Any:
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
    sys.stdout.write(json.dumps(clean_floats(data), indent=2, default=json_default, allow_nan=False))
    sys.stdout.write("\n")


def safe(text: object) -> str:
    """User text for a Rich markup string, shown literally: control characters visible, markup
    escaped, a URL's password masked (see :mod:`ragjudge.safetext`)."""
    return markup(mask_secrets(text), multiline=True)
