"""The ``ragjudge`` command. Each module registers its commands on :data:`ragjudge.cli.app.app`.

Exit codes: 0 success, 1 a check failed (``gate``, ``verify``), 2 a usage or input error with
the message on stderr, 130 interrupted.
"""

from __future__ import annotations

import importlib
import sys

from ragjudge.cli.app import app

COMMAND_MODULES = (
    "ragjudge.cli.project",
    "ragjudge.cli.transfer",
    "ragjudge.cli.evaluate",
    "ragjudge.cli.agreement",
    "ragjudge.cli.judging",
    "ragjudge.cli.maintenance",
    "ragjudge.cli.annotators",
    "ragjudge.cli.review",
    "ragjudge.cli.serve",
    "ragjudge.cli.llm",
)


def _register() -> None:
    for name in COMMAND_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # a module that exists but fails to import is a bug: show it
                raise


def hoist_db(argv: list[str]) -> list[str]:
    """Move ``--db X`` / ``--db=X`` to the front so that it works before or after the command."""
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
        out.append(arg)
        i += 1
    return front + out


def usage_message(exc: Exception) -> str:
    """Click's complaint about the command line (an unknown option, a value that is not a
    number, a missing argument) as one line naming the command, shown safely."""
    from ragjudge.safetext import for_terminal

    context = getattr(exc, "ctx", None)
    command = context.command_path if context is not None else "ragjudge"
    message = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
    return for_terminal(f"{message.rstrip('.')}. See '{command} -h'.")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ragjudge`` script and ``python -m ragjudge``."""
    from typer import Abort, BadParameter

    from ragjudge.errors import CheckFailed, RagjudgeError
    from ragjudge.safetext import for_terminal

    # click's base of usage errors (vendored by recent Typer, the click package before)
    click_error = next(c for c in BadParameter.__mro__ if c.__name__ == "ClickException")
    _register()
    try:
        args = hoist_db(list(sys.argv[1:] if argv is None else argv))
        # not standalone: click's usage errors come here, to be told in one line like ours
        code = app(args=args, prog_name="ragjudge", standalone_mode=False)
        return code if isinstance(code, int) else 0  # --help (0), typer.Exit(n)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    except click_error as exc:
        print(f"ragjudge: {usage_message(exc)}", file=sys.stderr)
        return 2
    except Abort:
        print("ragjudge: aborted.", file=sys.stderr)
        return 1
    except CheckFailed as exc:
        if str(exc):
            print(for_terminal(exc), file=sys.stderr)
        return 1
    except RagjudgeError as exc:
        # the one place a user's mistake is told: quoted data is shown, never obeyed by the terminal
        print(f"ragjudge: {for_terminal(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ragjudge: interrupted.", file=sys.stderr)
        return 130
    return 0
