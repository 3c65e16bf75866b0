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


def why_unusable(exc: OSError, path: object) -> str:
    """Why the system refused to open or look at ``path``, as the sentence a message ends with:
    permission (the folders above count too), a name over the system's limit (the limit
    stated), a loop of links, else the system's own words."""
    import errno
    import os

    if exc.errno in (errno.EACCES, errno.EPERM):
        return ("cannot be read: permission denied (check the permissions of the file and of "
                "every folder above it).")
    if exc.errno == errno.ENAMETOOLONG:
        from pathlib import Path

        longest = max((len(os.fsencode(part)) for part in Path(str(path)).parts), default=0)
        try:
            limit = os.pathconf("/", "PC_NAME_MAX")
        except (OSError, ValueError):
            limit = 255
        return (f"the name is too long for this system: a file or folder name has at most "
                f"{limit} bytes here, and this one has {longest}.")
    if exc.errno == errno.ELOOP:
        return "cannot be read: its symbolic links form a loop."
    return f"cannot be read: {exc.strerror or exc}."


class CheckFailed(Exception):
    """A gate or verification found a failure: exit code 1, not an input error."""

    exit_code = 1
