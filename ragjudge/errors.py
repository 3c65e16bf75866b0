"""Errors a user can cause, and how they are told.

This module imports only :mod:`ragjudge.safetext` (the standard library), so every layer (the
numpy-only ``ragjudge.metrics`` included) may raise these. The command line turns any
:class:`RagjudgeError` into one paragraph on stderr and exit code 2; the TUI shows the same text
in a notification. Neither shows a traceback.
"""

from __future__ import annotations

from ragjudge.safetext import mask_secrets


class RagjudgeError(Exception):
    """A mistake in what the user gave ragjudge: a file, an option, a database.

    The message never holds a password: a database URL quoted in it has its password masked
    here, whichever layer wrote the message and wherever it is shown.
    """

    exit_code = 2

    def __init__(self, *args: object) -> None:
        super().__init__(*(mask_secrets(arg) if isinstance(arg, str) else arg for arg in args))


class InputError(RagjudgeError, ValueError):
    """Bad content in an input file, located by file, line and field.

    ``str(error)`` is the one-paragraph message a user sees, e.g.
    ``run.trec, line 12, field 'score': 'abc' is not a number. Nothing was imported.``
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.field = field
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        where = []
        if self.file is not None:
            where.append(str(self.file))
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        text = (", ".join(where) + ": " if where else "") + self.message
        if self.hint:
            text += " " + self.hint
        return text


class ProjectError(RagjudgeError):
    """The project database cannot be used as asked (missing, locked, newer schema, ...)."""


class UsageError(RagjudgeError):
    """Options that do not fit together, an unknown measure name, an unknown run, ..."""


class CheckFailed(Exception):
    """A gate or verification found a failure: exit code 1, not an input error."""

    exit_code = 1
