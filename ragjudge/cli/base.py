"""What every command shares without typer or rich: the project named by ``--db``, the limits
and the type of integer options (:class:`Integer`), the options of ``eval`` (read by typer and
by the lean path alike), JSON output and user text made safe for markup.

:mod:`ragjudge.cli.common` re-exports all of it beside the consoles; the commands that print
without Rich (``eval`` on files, see :mod:`ragjudge.cli.lean`) import it from here.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass
from typing import Any

from ragjudge.errors import UsageError
from ragjudge.numeric import MAX_GRADE, parse_integer
from ragjudge.safetext import markup, mask_secrets, quote

CLI_STATE: dict[str, str | None] = {"db": None, "reads_only": None, "runs_as_user": None}


def set_db(db: str | None) -> None:
    """Remember the ``--db`` given anywhere on the command line (None forgets it)."""
    CLI_STATE["db"] = db or None


def reads_only(*, runs_as_user: bool = False) -> None:
    """Say that the command running (or the branch of it: ``review`` listing, ``adjudicate
    --show``) changes nothing. A refusal then does not end with "Nothing was changed." (the
    project layer says it of every project it cannot open): it is said only where something
    could have changed (:func:`told`). ``runs_as_user``: the command has no ``--by`` that says
    who runs it (eval's and agree's is a breakdown; compare, gate and settled have none), so a
    refusal's advice names ``$RAGJUDGE_USER`` instead."""
    CLI_STATE["reads_only"] = "yes"
    CLI_STATE["runs_as_user"] = "yes" if runs_as_user else None


NOTHING_CHANGED = re.compile(r"\s*Nothing was changed\.")
BY_A_LEAD = "(on the command line: --by a lead's name)"
"""The access layer's advice to ask a lead (:meth:`ragjudge.services.access.rights.Access.require_sees_all`)."""
AS_A_LEAD = ("(on the command line: set $RAGJUDGE_USER to a lead's name; this command has no --by "
             "saying who runs it)")


def told(message: str) -> str:
    """A refusal as the command line tells it: without "Nothing was changed." when the command
    changes nothing (:func:`reads_only`), and naming $RAGJUDGE_USER where the command's --by is
    not who runs it."""
    if CLI_STATE.get("runs_as_user"):
        message = message.replace(BY_A_LEAD, AS_A_LEAD)
    return NOTHING_CHANGED.sub("", message) if CLI_STATE.get("reads_only") else message


def project_db() -> str:
    """The project database: ``--db``, else ``RAGJUDGE_DB``, else ``./ragjudge.db``."""
    from ragjudge.store.sqlitefile import env_db

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


class Integer:
    """The type of every integer option of every command: ``Integer("--depth", 1, MAX_DEPTH,
    "the pool depth")("20")`` is 20.

    The text is read as the numbers of files and measure names are
    (:func:`ragjudge.numeric.parse_integer`: ASCII digits with an optional sign), not as
    Python's ``int()`` reads it (``1_0`` would be 10, ``" 3 "`` 3, ``"１"`` 1), and it is
    checked against the bounds before the command runs (:func:`check_int`). A mistake is a
    :class:`UsageError` naming the option. Typer's commands take it as the ``parser`` of the
    option (:func:`ragjudge.cli.options.int_option`); the lean ``eval``
    (:mod:`ragjudge.cli.lean`) calls it on the same text."""

    def __init__(self, option: str, low: int, high: int, what: str) -> None:
        self.option, self.low, self.high, self.what = option, low, high, what

    def __call__(self, text: str | int | None) -> int | None:
        if text is None or (isinstance(text, int) and not isinstance(text, bool)):
            return text if text is None else check_int(self.option, text, self.low, self.high, self.what)
        value = parse_integer(str(text))
        if value is None:
            raise UsageError(f"{self.option} {quote(text, 40)}: {self.what} is a whole number from "
                             f"{self.low:,} to {self.high:,}, written in the digits 0-9.")
        return check_int(self.option, value, self.low, self.high, self.what)

    def __repr__(self) -> str:
        return f"Integer({self.option!r}, {self.low}, {self.high})"


def grade_threshold(option: str = "--threshold") -> Integer:
    """A lowest relevant grade: 0 to :data:`~ragjudge.numeric.MAX_GRADE`."""
    return Integer(option, 0, MAX_GRADE, "the lowest grade that counts as relevant")


@dataclass(frozen=True)
class OptionSpec:
    """One option of a command as every reader of the command line knows it: the keyword of
    the function that runs the command, the words that give it, and its kind (``one`` value,
    ``many`` values, a ``flag``, or an ``integer`` read by :attr:`integer`)."""

    param: str
    flags: tuple[str, ...]
    kind: str
    integer: Integer | None = None


EVAL_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("run", ("--run", "-r"), "many"),
    OptionSpec("qrels", ("--qrels",), "one"),
    OptionSpec("rule", ("--rule",), "one"),
    OptionSpec("name", ("--name",), "many"),
    OptionSpec("measure", ("--measure", "-m"), "many"),
    OptionSpec("per_query", ("--per-query",), "flag"),
    OptionSpec("by", ("--by",), "one"),
    OptionSpec("queries", ("--queries",), "one"),
    OptionSpec("format", ("--format",), "one"),
    OptionSpec("curve", ("--curve",), "one"),
    OptionSpec("k", ("--k",), "one"),
    OptionSpec("threshold", ("--threshold",), "integer", grade_threshold()),
    OptionSpec("averaging", ("--averaging",), "one"),
    OptionSpec("ci", ("--ci",), "flag"),
    OptionSpec("complete", ("--complete",), "flag"),
    OptionSpec("prels", ("--prels",), "one"),
    OptionSpec("prels_form", ("--prels-form",), "one"),
    OptionSpec("quiet", ("--quiet", "-q"), "flag"),
    OptionSpec("raw", ("--raw",), "flag"),
)
"""The options of ``eval`` that :func:`ragjudge.cli.scoring.evaluate_and_print` takes (all but
``--tui``): the typer command declares each from here (:func:`ragjudge.cli.options.spec_option`)
and the lean path (:mod:`ragjudge.cli.lean`) reads the command line with it, so the two cannot
come to read a word differently."""


def check_raw(raw: bool, format: str | None) -> None:
    """``--raw`` says how the cells of a CSV are written: it goes with ``--format csv`` only."""
    if raw and format != "csv":
        raise UsageError(f"--raw writes the cells of a CSV exactly; it goes with --format csv, "
                         f"not {format or 'the default format'}.")


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


def safe(text: object, *, prose: bool = False) -> str:
    """User text for a Rich markup string, shown literally: control characters visible, markup
    escaped, a URL's password masked (see :mod:`ragjudge.safetext`). Line breaks are kept; each
    line is one-line text (ids, names, messages: every invisible character marked, a joiner
    too) unless ``prose`` (a query's or chunk's text, a note), which keeps the joiners and
    selectors writing needs."""
    if prose:
        return markup(mask_secrets(text), multiline=True)
    lines = str(mask_secrets(text)).replace("\r\n", "\n").split("\n")
    return "\n".join(markup(line) for line in lines)
