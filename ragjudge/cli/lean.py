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


class Aborted(Exception):
    """End of input during the command: told as typer tells it ("aborted", exit code 1)."""


def lean_call(args: list[str]) -> Callable[[], int] | None:
    """The command to run for ``args`` without typer, or None when typer is to read them."""
    if os.environ.get("RAGJUDGE_LEAN", "1") == "0" or args[:1] != ["eval"]:
        return None
    if os.environ.get("RAGJUDGE_DB"):
        return None
    options = parse_eval(args[1:])
    if options is None or (options.get("qrels") is None and options.get("prels") is None):
        return None
    return lambda: _invoke(options)


def parse_eval(words: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of ``evaluate_and_print`` for the words after ``eval``, as typer
    would pass them, or None when the words are not of the plain kind this module reads (or hold
    a value the typer command refuses: typer says why)."""
    options: dict[str, Any] = {}
    i = 0
    while i < len(words):
        word = words[i]
        explicit = word.startswith("--") and "=" in word
        option, value = word.split("=", 1) if explicit else (word, None)
        spec = EVAL_WORDS.get(option)
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


def _invoke(options: dict[str, Any]) -> int:
    """Run ``eval`` as the typer command runs it: the project forgotten (no ``--db``), then the
    command; Ctrl-C is exit code 130, the end of input "aborted", a closed pipe exit code 1."""
    from ragjudge.cli.base import set_db
    from ragjudge.cli.scoring import evaluate_and_print

    try:
        set_db(None)
        evaluate_and_print(**options)
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
