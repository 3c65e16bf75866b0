"""``ragjudge eval`` on files without typer: the command line read here, the work done by the
same function as the typer command's (:func:`ragjudge.cli.scoring.evaluate_and_print`).

Building the typer application costs more than reading and scoring a run of 100,000 lines, so
the most common evaluation, qrels and runs from files, takes this path. It is taken only when
the command line is one whose meaning is beyond doubt: ``eval`` first, ``--qrels`` or
``--prels`` given, no project (neither ``--db`` nor ``RAGJUDGE_DB``), and every other word one
of the options below in
its plain spelling (``--opt VALUE``, ``--opt=VALUE``, ``-m VALUE``, a flag alone) with a value
that does not start with ``-``, a single-valued option at most once and ``--threshold`` a value
its type reads. The options and their kinds are those of :data:`ragjudge.cli.base.EVAL_OPTIONS`,
the table the typer command declares its options from. Anything else (``--help``, ``--tui``, ``--db``, an unknown option, a value the typer
command would refuse, an argument, ``--``, short options run together) goes to typer, which
says what is wrong with it. Both paths print the same bytes and return the same exit code
(``tests/cli/test_cli_lean.py`` runs both over many command lines); what typer does around a
command (Ctrl-C, end of input, a closed pipe) is done here alike.

``RAGJUDGE_LEAN=0`` in the environment sends every command line to typer.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from typing import Any

from ragjudge.cli.base import EVAL_OPTIONS, OptionSpec
from ragjudge.errors import UsageError

#: option word -> its spec: the options of ``eval`` but --tui, as the typer command declares them
EVAL_WORDS: dict[str, OptionSpec] = {flag: spec for spec in EVAL_OPTIONS for flag in spec.flags}
#: the project, named after the command (``--db`` is the app's option: typer moves it to the front)
DB_WORDS: dict[str, OptionSpec] = {"--db": OptionSpec("db", ("--db",), "one")}
EVAL_WORDS_DB: dict[str, OptionSpec] = {**EVAL_WORDS, **DB_WORDS}
#: the options of ``status``
STATUS_WORDS: dict[str, OptionSpec] = {"--format": OptionSpec("format", ("--format",), "one"), **DB_WORDS}
#: the options of ``import run FILE`` taken here (not --by: it decides nothing for a run)
IMPORT_RUN_WORDS: dict[str, OptionSpec] = {
    "--name": OptionSpec("name", ("--name",), "one"),
    "--format": OptionSpec("format", ("--format",), "one"),
    **{flag: OptionSpec(param, (flag,), "flag") for flag, param in (
        ("--create-missing", "create_missing"), ("--replace", "replace"), ("--quiet", "quiet"),
        ("-q", "quiet"))},
    **DB_WORDS,
}


class InFull(Exception):
    """The lean reading of the project left the command to the full path: typer runs it."""


class Aborted(Exception):
    """End of input during the command: told as typer tells it ("aborted", exit code 1)."""


def lean_call(args: list[str]) -> Callable[[], int] | None:
    """The command to run for ``args`` without typer, or None when typer is to read them."""
    if os.environ.get("RAGJUDGE_LEAN", "1") == "0":
        return None
    db, words = _front_db(args)
    if words is not None and words[:2] == ["import", "run"]:
        return _import_run(db, words[2:])
    if words is None or words[:1] not in (["eval"], ["status"]):
        return None
    if words[0] == "status":
        status = parse_options(words[1:], STATUS_WORDS)
        if status is None or status.get("format", "table") not in ("table", "json"):
            return None
        return _on_project(db, status.pop("db", None), lambda project: _status(status, project))
    options = parse_options(words[1:], EVAL_WORDS_DB)
    if options is None:
        return None
    if options.get("qrels") is None and options.get("prels") is None:  # the project's gold
        return _on_project(db, options.pop("db", None), lambda project: _invoke(options, project))
    if db is not None or "db" in options or os.environ.get("RAGJUDGE_DB"):
        return None
    return lambda: _invoke(options)


def _import_run(front: str | None, words: list[str]) -> Callable[[], int] | None:
    """``import run FILE`` of a TREC run file into a SQLite project, opened with the standard
    library (:class:`~ragjudge.services.project.litewrite.LiteWriteProject`), when no progress
    bar is to be drawn (``--quiet``, or standard error is not a terminal); None otherwise."""
    from ragjudge.formats.source import extension_format, path_kind

    if not words or words[0].startswith("-"):
        return None
    file, options = words[0], parse_options(words[1:], IMPORT_RUN_WORDS)
    if options is None or options.get("format", "auto") not in ("auto", "trec"):
        return None
    if not options.get("quiet") and _is_terminal(sys.stderr):
        return None
    try:
        if path_kind(file) != "file" or (options.get("format", "auto") == "auto"
                                         and extension_format(file) != "trec"):
            return None  # a folder, a missing file, another format: typer's command says or reads it
    except UsageError:
        return None
    except Exception:  # noqa: BLE001 - a path the system will not look at: the full command says why
        return None
    after = options.pop("db", None)

    def run(project: Any) -> int:
        return _guarded(lambda: _imported(project, file, options), _in_full())

    return _on_project(front, after, run, writes=True)


def _imported(project: Any, file: str, options: dict[str, Any]) -> None:
    """The import of :func:`_import_run`, told as the typer command tells it."""
    from ragjudge.cli.common import err_console, safe
    from ragjudge.services.project.litewrite import gc_paused
    from ragjudge.services.transfer.runimport import import_run_named

    with gc_paused():
        result = import_run_named(project, file, "trec", options.get("name"),
                                  bool(options.get("create_missing")), bool(options.get("replace")), None)
    err_console.print(safe(result.summary()))


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _front_db(args: list[str]) -> tuple[str | None, list[str] | None]:
    """``--db X`` or ``--db=X`` before the command, and the words from the command on (None:
    not of the plain kind: typer reads them)."""
    if args[:1] == ["--db"]:
        return (args[1], args[2:]) if len(args) > 1 and not args[1].startswith("-") else (None, None)
    if args[:1] and args[0].startswith("--db="):
        return args[0].split("=", 1)[1], args[1:]
    return None, args


def _on_project(front: str | None, after: str | None,
                then: Callable[[Any], int], *, writes: bool = False) -> Callable[[], int] | None:
    """Run ``then`` on the project named by ``--db`` (given once, before or after the command)
    or ``RAGJUDGE_DB``, opened with the standard library
    (:class:`ragjudge.services.project.lite.LiteProject`; ``writes``:
    :class:`ragjudge.services.project.litewrite.LiteWriteProject`); None when it cannot be
    (typer then opens it in full, or says what is wrong)."""
    if front is not None and after is not None:
        return None
    db = front if front is not None else after
    if db is not None and not db.strip():
        return None
    from ragjudge.store.sqlitefile import env_db

    project: Any
    if writes:
        from ragjudge.services.project.litewrite import LiteWriteProject

        project = LiteWriteProject.open(db or env_db())
    else:
        from ragjudge.services.project.lite import LiteProject

        project = LiteProject.open(db or env_db())
    if project is None:
        return None

    def call() -> int:
        from ragjudge.cli.base import set_db

        set_db(db)
        return then(project)

    return call


def parse_eval(words: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of ``evaluate_and_print`` for the words after ``eval``, as typer
    would pass them, or None when the words are not of the plain kind this module reads (or hold
    a value the typer command refuses: typer says why)."""
    return parse_options(words, EVAL_WORDS)


def parse_options(words: list[str], known: dict[str, OptionSpec]) -> dict[str, Any] | None:
    """The keyword arguments for the words after a command, its options ``known`` (see
    :func:`parse_eval`)."""
    options: dict[str, Any] = {}
    i = 0
    while i < len(words):
        word = words[i]
        explicit = word.startswith("--") and "=" in word
        option, value = word.split("=", 1) if explicit else (word, None)
        spec = known.get(option)
        if spec is None:
            return None
        param, kind = spec.param, spec.kind
        if kind == "flag":
            if explicit or param in options:
                return None
            options[param] = True
            i += 1
            continue
        if value is None:
            if i + 1 >= len(words):
                return None
            value = words[i + 1]
            i += 2
        else:
            i += 1
        if value.startswith("-"):
            return None
        if kind == "many":
            options.setdefault(param, []).append(value)
        elif param in options:
            return None
        elif spec.integer is not None:
            try:
                options[param] = spec.integer(value)
            except UsageError:
                return None
        else:
            options[param] = value
    return options


def _status(options: dict[str, Any], project: Any) -> int:
    """``status`` on the project opened lean (:func:`ragjudge.cli.overview.show_status`)."""
    from ragjudge.cli.overview import show_status

    return _guarded(lambda: show_status(options.get("format", "table"), project), _in_full())


def _invoke(options: dict[str, Any], project: Any = None) -> int:
    """Run ``eval`` as the typer command runs it: on files, the project forgotten (no
    ``--db``); else on ``project``, opened lean."""
    from ragjudge.cli.scoring import evaluate_and_print

    if project is None:
        from ragjudge.cli.base import set_db

        set_db(None)
        return _guarded(lambda: evaluate_and_print(**options))
    return _guarded(lambda: evaluate_and_print(**options, opened=project), _in_full())


def _in_full() -> tuple[type[Exception], ...]:
    """What hands a command on a lean project to the full path: what the lean reading does not
    do (:class:`~ragjudge.store.sqltext.NotLite`), and any error of the database driver (a busy
    or damaged file: the full path words it as it always does)."""
    import sqlite3

    from ragjudge.store.sqltext import NotLite

    return NotLite, sqlite3.Error


def _guarded(command: Callable[[], None], in_full: tuple[type[Exception], ...] = ()) -> int:
    """Run a command as typer runs it: Ctrl-C is exit code 130, the end of input "aborted", a
    closed pipe exit code 1. What the lean reading of a project leaves to the full opening
    (``in_full``: :func:`_in_full`) runs the command again through typer, before anything was
    printed."""
    try:
        try:
            command()
        except Exception as exc:
            if in_full and isinstance(exc, in_full):
                raise InFull() from None
            raise
    except EOFError:
        sys.stderr.write("\n")
        sys.stderr.flush()
        raise Aborted() from None
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        sys.stdout = _Pacified(sys.stdout)
        sys.stderr = _Pacified(sys.stderr)
        return 1
    return 0


class _Pacified:
    """A stream whose flush ignores a closed pipe (the reader of our output went away), so that
    the interpreter's last flush at exit does not complain."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
