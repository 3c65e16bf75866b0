"""Errors a user can cause, and how they are told.

This module imports only :mod:`ragjudge.safetext` (the standard library), so every layer (the
numpy-only ``ragjudge.metrics`` included) may raise these. The command line turns any
:class:`RagjudgeError` into one paragraph on stderr and exit code 2; the TUI shows the same text
in a notification. Neither shows a traceback.
"""

from __future__ import annotations

import re

from ragjudge.safetext import mask_secrets, quote, visible


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


_BOMS = (  # the longest first: UTF-32's little-endian mark starts like UTF-16's
    (b"\xff\xfe\x00\x00", "UTF-32 (little-endian, with a byte order mark)", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32 (big-endian, with a byte order mark)", "UTF-32"),
    (b"\xff\xfe", "UTF-16 (little-endian, with a byte order mark)", "UTF-16"),
    (b"\xfe\xff", "UTF-16 (big-endian, with a byte order mark)", "UTF-16"),
)


def encoding_problem(head: bytes, name: object) -> str | None:
    """Why a file whose first bytes are ``head`` is not UTF-8 text, as the sentence a message
    ends with, or None: UTF-16 or UTF-32 (named by their byte order mark, or without one by the
    NUL bytes between the characters of ASCII text), with the ``iconv`` command that converts
    it; or binary data (a quarter or more of the bytes NUL: a database, an archive,
    ``/dev/zero``). A stray NUL in text is left to the readers, which name its field."""
    for mark, what, source in _BOMS:
        if head.startswith(mark):
            return _convert_hint(what, source, name)
    sample = head[:4096]
    nuls = sample.count(0)
    if not sample or nuls * 4 < len(sample):
        return None
    for what, source, offsets, period in (
            ("UTF-32 (little-endian, no byte order mark)", "UTF-32LE", (1, 2, 3), 4),
            ("UTF-32 (big-endian, no byte order mark)", "UTF-32BE", (0, 1, 2), 4),
            ("UTF-16 (little-endian, no byte order mark)", "UTF-16LE", (1,), 2),
            ("UTF-16 (big-endian, no byte order mark)", "UTF-16BE", (0,), 2)):
        cut = sample[: len(sample) - len(sample) % period]
        zero = [cut[at::period].count(0) for at in range(period)]
        per_position = len(cut) // period
        # (nearly) every byte of these positions NUL, (nearly) none of the others: ASCII and
        # Latin letters in UTF-16 or UTF-32; the rest of Unicode leaves a few of them non-NUL
        if per_position and all(zero[at] * 10 >= per_position * 9 for at in offsets) and \
                sum(zero[at] for at in range(period) if at not in offsets) * 10 < per_position:
            return _convert_hint(what, source, name)
    return (f"is not a text file: {nuls:,} of its first {len(sample):,} bytes are NUL (binary "
            "data: a database, an archive, a device such as /dev/zero?). Give a UTF-8 text file.")


def _convert_hint(what: str, source: str, name: object) -> str:
    """The sentence naming the encoding, with a shell command that writes a UTF-8 copy beside
    the file: ``x.jsonl`` to ``x.utf8.jsonl`` (its extension kept, so its format is still told
    by it), a gzipped ``x.trec.gz`` decompressed first (iconv would read the compressed bytes)."""
    import shlex

    shown = str(name) if name not in (None, "<stdin>", "<text>", "<input>") else "FILE"
    gzipped = shown.lower().endswith(".gz")
    stem = shown[:-3] if gzipped else shown
    head, dot, extension = stem.rpartition(".")
    if not dot or not head or "/" in extension:
        head, extension = stem, ""
    target = f"{head}.utf8" + (f".{extension}" if extension else "")
    convert = f"iconv -f {source} -t UTF-8"
    command = (f"gzip -dc {shlex.quote(shown)} | {convert} > {shlex.quote(target)}" if gzipped
               else f"{convert} {shlex.quote(shown)} > {shlex.quote(target)}")
    return f"the text is {what}, not UTF-8, which is what ragjudge reads. Convert it first: {command}"


def device_problem(mode: int) -> str | None:
    """Why a path with ``st_mode`` ``mode`` cannot be read as an input file, or None: a
    character or block device (``/dev/zero`` never ends, ``/dev/null`` holds nothing, a terminal
    waits for typing)."""
    import stat

    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        kind = "character" if stat.S_ISCHR(mode) else "block"
        return f"is a device ({kind} special file), not a file of data: give a file."
    return None


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_TAB = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def has_control(text: str) -> bool:
    """Whether ``text`` holds a control character (C0 but the tab, DEL, C1): a quick test for
    the readers' lines, whose ids a reader then checks (:func:`text_problem`)."""
    return not text.isprintable() and _CONTROL_BUT_TAB.search(text) is not None


def text_problem(value: str, *, name: bool = False, ident: bool = False) -> str | None:
    """What is wrong with one text value, as the end of a sentence about it, or None: a NUL
    character anywhere, (``name``: an id or a name) nothing but spaces, (``ident``: an id) a
    control character."""
    at = value.find("\x00")
    if at >= 0:
        return (f"holds a NUL character (\\0) at character {at + 1:,}; ragjudge stores no NUL "
                "characters (PostgreSQL cannot hold them). Remove it (a file full of them is "
                "often UTF-16: convert it to UTF-8).")
    if name and not value.strip():
        return "is empty." if not value else "is only spaces; an id or a name needs a visible character."
    if ident and (control := _CONTROL.search(value)) is not None:
        ch = control.group(0)
        return (f"{quote(value, 200)} holds the control character {visible(ch)} (U+{ord(ch):04X}) at "
                f"character {control.start() + 1:,}; an id cannot hold control characters (a "
                "terminal would obey them, and no one can type them).")
    return None


class CheckFailed(Exception):
    """A gate or verification found a failure: exit code 1, not an input error."""

    exit_code = 1


def check_typed(value: str | None, what: str, *, name: bool = False) -> None:
    """:func:`text_problem` for text typed in the app or given as an option (a note, a reason, a
    facet, a run name): a :class:`UsageError` that starts with ``what``, so that the same text is
    refused there as in a file."""
    problem = None if value is None else text_problem(value, name=name)
    if problem is not None:
        raise UsageError(f"{what} {problem}")
