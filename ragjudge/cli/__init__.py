"""The ``ragjudge`` command. Each module registers its commands on :data:`ragjudge.cli.app.app`.

A run imports only what its command needs: :data:`COMMANDS` names the module of every command,
and only that module is registered (all of them for the top-level help, for no command, which
opens the app, and for an unknown one, so that click can suggest the nearest). ``eval`` on
files with the common options does not even load typer: :mod:`ragjudge.cli.lean` reads its
command line and calls the same code as the typer command.

Exit codes: 0 success, 1 a check failed (``gate``, ``verify``, ``settled``), 2 a usage or input error with
the message on stderr, 130 interrupted.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Collection
from typing import Any

COMMANDS: dict[str, str] = {
    "init": "ragjudge.cli.project",
    "status": "ragjudge.cli.project",
    "demo": "ragjudge.cli.project",
    "scale": "ragjudge.cli.project",
    "import": "ragjudge.cli.transfer",
    "export": "ragjudge.cli.transfer",
    "eval": "ragjudge.cli.evaluate",
    "compare": "ragjudge.cli.evaluate",
    "gate": "ragjudge.cli.evaluate",
    "explain": "ragjudge.cli.evaluate",
    "report": "ragjudge.cli.report",
    "settled": "ragjudge.cli.settled",
    "queue": "ragjudge.cli.settled",
    "agree": "ragjudge.cli.agreement",
    "assign": "ragjudge.cli.agreement",
    "disputes": "ragjudge.cli.agreement",
    "adjudicate": "ragjudge.cli.agreement",
    "quality": "ragjudge.cli.agreement",
    "annotate": "ragjudge.cli.judging",
    "backup": "ragjudge.cli.maintenance",
    "verify": "ragjudge.cli.maintenance",
    "annotators": "ragjudge.cli.annotators",
    "review": "ragjudge.cli.review",
    "serve": "ragjudge.cli.serve",
    "llm-judge": "ragjudge.cli.llm",
}
"""Every command's name -> the module that registers it (in the order of the help's list)."""

COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))

_INVOKED: list[str] = []


def invoked() -> tuple[str, ...]:
    """The arguments of the running ``ragjudge`` command, as given (a report names them)."""
    return tuple(_INVOKED)


def _register(modules: tuple[str, ...] = COMMAND_MODULES) -> None:
    """Register the commands of ``modules`` (default: all) on the app. However many were
    registered before and in whichever order, the app lists its commands in the order of
    :data:`COMMAND_MODULES`."""
    from ragjudge.cli.app import app

    for name in modules:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # a module that exists but fails to import is a bug: show it
                raise
    order = {name: i for i, name in enumerate(COMMAND_MODULES)}
    app.registered_commands.sort(key=lambda info: order.get(info.callback.__module__, len(order)))
    _one_line_summaries(app)


def _one_line_summaries(typer_app: Any) -> None:
    """Give every command a one-line summary for its group's list: the first paragraph of its
    help, its line breaks joined. (In rich markup Typer keeps a docstring's line breaks there, so
    a summary wrapped in the source came out as a ragged line in ``ragjudge --help``.)"""
    import inspect

    for info in typer_app.registered_commands:
        text = info.help or (info.callback.__doc__ if info.callback else None)
        if info.short_help is None and text:
            info.short_help = " ".join(inspect.cleandoc(text).split("\n\n")[0].split())


def command_of(args: list[str]) -> str | None:
    """The command a command line names: its first word after a ``--db X`` or ``--db=X`` in
    front (None when it names none, e.g. ``--help``)."""
    i = 0
    while i < len(args):
        if args[i] == "--db":
            i += 2
        elif args[i].startswith("--db="):
            i += 1
        else:
            return None if args[i].startswith("-") else args[i]
    return None


def modules_for(args: list[str]) -> tuple[str, ...]:
    """The command modules a command line needs: its command's, or all of them when it names no
    known command."""
    module = COMMANDS.get(command_of(args) or "")
    return COMMAND_MODULES if module is None else (module,)


def hoist_db(argv: list[str], value_options: Collection[str] = ()) -> list[str]:
    """Move ``--db X`` / ``--db=X`` to the front so that it works before or after the command.

    ``value_options`` are the words of the command's options that take a value (from its typer
    parameters: :func:`value_options`): the word after one of them is that option's value, as
    click reads it, and never ``--db`` (``--reason --db`` gives the reason "--db")."""
    out: list[str] = []
    front: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out.extend(argv[i:])
            break
        if arg == "--db":
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                from ragjudge.errors import UsageError

                raise UsageError("--db needs a value: a project file such as labels.db, or a database URL.")
            front = ["--db", argv[i + 1]]
            i += 2
            continue
        if arg.startswith("--db="):
            front = ["--db", arg.split("=", 1)[1]]
            i += 1
            continue
        taken = 2 if _value_follows(arg, value_options) and i + 1 < len(argv) else 1
        out.extend(argv[i:i + taken])
        i += taken
    return front + out


def _value_follows(word: str, value_options: Collection[str]) -> bool:
    """Whether the word after ``word`` is its option's value: ``--name`` (not ``--name=x``), or
    short options run together whose last one takes a value (``-qm`` before ``P@5``)."""
    if word in value_options:
        return True
    if word.startswith("--") or not word.startswith("-") or len(word) < 3:
        return False
    for at, letter in enumerate(word[1:], start=1):
        if "-" + letter in value_options:
            return at == len(word) - 1  # a value after the letter is its value: nothing follows
    return False


def value_options(command: Any) -> frozenset[str]:
    """The words of a click command's options that take a value (``--run``, ``-r``, ...)."""
    words: set[str] = set()
    for param in getattr(command, "params", ()):
        if getattr(param, "param_type_name", "") == "option" and not getattr(param, "is_flag", False):
            words.update(param.opts)
    return frozenset(words)


def usage_message(exc: Exception) -> str:
    """Click's complaint about the command line (an unknown option, a value that is not a
    number, a missing argument) as one line naming the command, shown safely."""
    from ragjudge.safetext import for_terminal

    context = getattr(exc, "ctx", None)
    command = context.command_path if context is not None else "ragjudge"
    message = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
    return for_terminal(f"{message.rstrip('.')}. See '{command} -h'.")


BLAS_SPIN = "20"
"""How long numpy's OpenBLAS worker threads wait for work before they sleep: 2**20 processor
cycles (about half a millisecond) instead of OpenBLAS's 2**28 (about a tenth of a second).
OpenBLAS starts a worker per core when numpy is imported, and each spins that long at once: a
command that imports numpy paid some 40 ms of processor time for threads it never uses
(``OPENBLAS_THREAD_TIMEOUT``, read when numpy loads; a value the environment gives is kept)."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ragjudge`` script and ``python -m ragjudge``."""
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", BLAS_SPIN)  # before numpy is imported
    from ragjudge.cli.lean import Aborted, InFull, lean_call

    from ragjudge.cli.base import CLI_STATE

    CLI_STATE["reads_only"] = CLI_STATE["runs_as_user"] = None
    args = list(sys.argv[1:] if argv is None else argv)
    _INVOKED[:] = args
    call = lean_call(args)
    if call is not None:
        try:
            return _outcome(call, usage_errors=(), aborts=(Aborted,))
        except InFull:  # nothing was printed: the command runs again, in full
            CLI_STATE["reads_only"] = CLI_STATE["runs_as_user"] = CLI_STATE["db"] = None
    return _typer_main(args)


def _typer_main(args: list[str]) -> int:
    from typer import Abort, BadParameter

    from ragjudge.cli.app import app

    # click's base of usage errors (vendored by recent Typer, the click package before)
    click_error = next(c for c in BadParameter.__mro__ if c.__name__ == "ClickException")

    def call() -> Any:
        import typer.main

        _register(modules_for(args))
        group = typer.main.get_command(app)
        # the command's options take their values before --db is looked for (as click reads them)
        command = group.commands.get(command_of(args) or "")  # type: ignore[attr-defined]
        hoisted = hoist_db(args, value_options(command))
        # not standalone: click's usage errors come here, to be told in one line like ours
        return group(args=hoisted, prog_name="ragjudge", standalone_mode=False)

    return _outcome(call, usage_errors=(click_error,), aborts=(Abort,))


def _outcome(call: Callable[[], Any], *, usage_errors: tuple[type[BaseException], ...],
             aborts: tuple[type[BaseException], ...]) -> int:
    """Run a command; its exit code, with any mistake told on stderr in one paragraph."""
    from ragjudge.cli.base import told
    from ragjudge.errors import CheckFailed, RagjudgeError
    from ragjudge.safetext import for_terminal

    try:
        code = call()
        return code if isinstance(code, int) else 0  # --help (0), typer.Exit(n)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    except usage_errors as exc:
        print(f"ragjudge: {usage_message(exc)}", file=sys.stderr)  # type: ignore[arg-type]
        return 2
    except aborts:
        print("ragjudge: aborted.", file=sys.stderr)
        return 1
    except CheckFailed as exc:
        if str(exc):
            print(for_terminal(exc), file=sys.stderr)
        return 1
    except RagjudgeError as exc:
        # the one place a user's mistake is told: quoted data is shown, never obeyed by the terminal
        print(f"ragjudge: {for_terminal(told(str(exc)))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ragjudge: interrupted.", file=sys.stderr)
        return 130
