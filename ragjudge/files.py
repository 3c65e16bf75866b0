"""Writing a file: the one way ragjudge writes any file (exports, backups, the demo project, the
copy made before a migration).

- A regular file is written under a temporary name in its own folder (``.NAME.partial-PID``),
  flushed and fsync'd, then renamed over the target in one step and the folder fsync'd: a
  reader sees the old file or the whole new one, never half of one. On any error the temporary
  file (and the ``-wal``/``-shm``/``-journal`` files SQLite may have made beside it) is removed.
- What is not a regular file (``/dev/stdout``, a FIFO, a character device such as
  ``/dev/full``) is written in place, as a shell redirection would.
- A project is never written over: not a SQLite file holding ragjudge's tables (recognised
  read-only, without locking or creating anything), not one of its side files (``-wal``,
  ``-shm``, ``-journal``, ``.writelock``), not a temporary file of another write in progress.
- Every failure is one paragraph naming the file and the cause (the disk is full, the name is
  too long, permission denied, ...): :class:`OutputError`, exit code 2 on the command line.
- A write that was killed leaves its ``.NAME.partial-PID`` files behind; the next write into the
  same folder removes those whose process is gone (:func:`sweep_leftovers`).

Like :mod:`ragjudge.errors` and :mod:`ragjudge.safetext`, this module imports only the standard
library, so every layer may use it.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import io
import os
import re
import sqlite3
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ragjudge.errors import RagjudgeError

__all__ = [
    "SIDE_SUFFIXES", "OutputError", "check_target", "is_terminal", "partial_path", "project_kind",
    "replacing", "sweep_leftovers", "writing",
]

SIDE_SUFFIXES = ("-wal", "-shm", "-journal", ".writelock", ".importlock")
"""Files SQLite (and ragjudge's writer queue and import lock) keep beside a project: they are
part of it."""

SQLITE_MAGIC = b"SQLite format 3\x00"
PROJECT_TABLES = frozenset({"alembic_version", "settings", "labels"})
"""Tables every ragjudge project has, whatever its schema revision."""

_PARTIAL = re.compile(r"^\.(?P<name>.+)\.partial-(?P<pid>\d+)(?P<side>-wal|-shm|-journal|\.writelock|\.importlock)?$")
_NAME_ROOM = 200
"""Bytes of the target's name kept in a temporary name, so that ``.NAME.partial-PID-journal``
fits where the target's own name fits."""


class OutputError(RagjudgeError):
    """A file could not be written, or may not be written over; the message names it."""


# -- what may be written over --------------------------------------------------------------


def project_kind(path: str | os.PathLike) -> str | None:
    """``"demo"`` for a project ``ragjudge demo`` built, ``"project"`` for any other ragjudge
    project, None for anything else (no file, another kind of file, another SQLite database).

    Read-only: the file is read as immutable (no locks, no ``-wal``/``-shm`` created). When a
    write-ahead log lies beside it, the tables may still be in the log, so the database is read
    once more through SQLite's read-only mode; a file that cannot be read either way counts as a
    project, since ragjudge would rather refuse than guess.
    """
    path = Path(path)
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return None
        with open(path, "rb") as handle:
            if handle.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                return None
    except OSError:
        return None
    kind = _read_kind(path, immutable=True)
    if kind is None and Path(f"{path}-wal").exists():
        kind = _read_kind(path, immutable=False)
    return None if kind == "other" else kind


def _read_kind(path: Path, *, immutable: bool) -> str | None:
    uri = Path(os.path.abspath(path)).as_uri() + ("?mode=ro&immutable=1" if immutable else "?mode=ro")
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=1.0)
    except sqlite3.Error:
        return "project"
    try:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables >= PROJECT_TABLES:
            return None if immutable else "other"
        row = connection.execute("SELECT value FROM settings WHERE key = 'demo'").fetchone()
        return "demo" if row is not None and str(row[0]).strip().lower() in ("true", "1") else "project"
    except sqlite3.Error:
        return "project"
    finally:
        connection.close()


def check_target(target: str | os.PathLike, *, replace_demo: bool = False) -> None:
    """Refuse (:class:`OutputError`) to write over a project, a project's side file or a
    temporary file of a write in progress. ``replace_demo`` lets a project built by
    ``ragjudge demo`` be replaced (``demo --fresh``)."""
    path = Path(target)
    names = {path}
    if os.path.islink(path):
        names.add(_real_target(path))
    for name in names:
        if _PARTIAL.match(name.name):
            raise OutputError(
                f"{target} is a temporary file of a ragjudge backup or export still being written "
                "(or of one that was stopped); ragjudge does not write over it. Choose another file. "
                "Nothing was written.")
        for suffix in SIDE_SUFFIXES:
            if name.name.endswith(suffix) and len(name.name) > len(suffix):
                base = name.with_name(name.name[: -len(suffix)])
                if project_kind(base) is not None:
                    raise OutputError(
                        f"{target} belongs to the ragjudge project {base} (SQLite keeps part of the "
                        "project in it); writing over it would damage the project. Choose another "
                        "file. Nothing was written.")
    kind = project_kind(path)
    if kind == "project" or (kind == "demo" and not replace_demo):
        raise OutputError(
            f"{target} is a ragjudge project; ragjudge never writes over a project (its labels "
            "would be lost). Choose another file, or delete that project yourself if you no longer "
            "need it. Nothing was written.")


# -- writing -------------------------------------------------------------------------------


@contextmanager
def writing(target: str | os.PathLike, *, compress: bool | None = None) -> Iterator[IO[str]]:
    """A UTF-8 text stream (``\\n`` line ends) onto ``target``; ``-`` is standard output.

    ``compress`` (default: the name ends in ``.gz``) writes gzip. A regular file appears whole
    when the block ends without an error, and not at all (the old file left as it was) when it
    ends with one."""
    if str(target) == "-":
        with _stdout() as stream:
            yield stream
        return
    path = Path(target)
    if compress is None:
        compress = path.name.endswith(".gz")
    if _in_place(path):
        check_target(path)
        with _direct(path, compress=compress) as stream:
            yield stream
        return
    with replacing(path) as partial:
        output = _Output(_Raw(partial, "wb"), compress=compress)
        try:
            yield output.text
            output.finish(fsync=True)
        except BaseException:
            output.abandon()
            raise


@contextmanager
def replacing(target: str | os.PathLike, *, replace_demo: bool = False) -> Iterator[Path]:
    """A temporary path beside ``target`` for a writer that writes by name (SQLite's backup, a
    project being built); when the block ends without an error the file is fsync'd and renamed
    over ``target``, else it is removed with its side files. OS errors become
    :class:`OutputError`; other errors pass through unchanged."""
    path = _real_target(Path(target))
    if _in_place(path):
        raise OutputError(f"{target} is not a regular file (a device, a FIFO or a descriptor); "
                          "give the name of a file. Nothing was written.")
    _check_folder(path, Path(target))
    check_target(path, replace_demo=replace_demo)
    sweep_leftovers(path.parent)
    partial = partial_path(path)
    _remove(partial)
    mode = _mode_of(path)
    try:
        # made here, empty, so that a folder without permission is told as such whatever the
        # writer (SQLite would only say "unable to open database file")
        os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except OSError as exc:
        raise _error(Path(target), exc, existed=mode is not None) from None
    try:
        yield partial
        if mode is not None:
            os.chmod(partial, mode)
        _fsync_file(partial)
        os.replace(partial, path)
    except OSError as exc:
        _remove(partial)
        raise _error(Path(target), exc, existed=mode is not None) from None
    except BaseException:
        _remove(partial)
        raise
    for suffix in SIDE_SUFFIXES:  # what a SQLite writer left beside the temporary name
        Path(f"{partial}{suffix}").unlink(missing_ok=True)
    _fsync_dir(path.parent)


def partial_path(target: Path) -> Path:
    """The temporary name a write of ``target`` by this process uses."""
    name = os.fsencode(target.name)[:_NAME_ROOM].decode("utf-8", "ignore") or "file"
    return target.with_name(f".{name}.partial-{os.getpid()}")


def sweep_leftovers(folder: Path) -> list[Path]:
    """Remove the temporary files of killed ragjudge writes in ``folder`` (``.NAME.partial-PID``
    and its ``-wal``, ``-shm``, ``-journal``, ``.writelock``, ``.importlock``) whose process no
    longer runs;
    return what was removed. Nothing else is touched."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _PARTIAL.match(entry.name)
        if match is None or _running(int(match["pid"])):
            continue
        try:
            if entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            pass
    return removed


def is_terminal(dest: object) -> bool:
    """True when writing to ``dest`` (``-``, an open stream or a path) shows on a terminal."""
    if isinstance(dest, (str, os.PathLike)):
        if str(dest) == "-":
            return _isatty(sys.stdout)
        try:
            if not stat.S_ISCHR(os.stat(dest).st_mode):
                return False
            fd = os.open(dest, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError:
            return False
        try:
            return os.isatty(fd)
        finally:
            os.close(fd)
    return _isatty(dest)


# -- the parts -------------------------------------------------------------------------------


class _Raw(io.FileIO):
    """The file being written. Once abandoned it takes no more bytes, so that closing the layers
    above it after a failure (a full disk) neither fails again nor writes."""

    abandoned = False

    def write(self, data) -> int:  # noqa: ANN001 - bytes-like
        if self.abandoned:
            return len(data)
        return super().write(data)


class _Output:
    """Text over (gzip over) a buffer over :class:`_Raw`."""

    def __init__(self, raw: _Raw, *, compress: bool) -> None:
        self.raw = raw
        self.buffer = io.BufferedWriter(raw, buffer_size=1 << 16)
        self.gzip = gzip.GzipFile(filename="", mode="wb", fileobj=self.buffer) if compress else None
        self.text = io.TextIOWrapper(self.gzip or self.buffer, encoding="utf-8", newline="\n")

    def finish(self, *, fsync: bool) -> None:
        """Everything written down (and to the disk with ``fsync``), then closed."""
        self.text.flush()
        if self.gzip is not None:
            self.gzip.close()
        self.buffer.flush()
        if fsync:
            os.fsync(self.raw.fileno())
        self.text.close()
        self.buffer.close()
        self.raw.close()

    def abandon(self) -> None:
        self.raw.abandoned = True
        for layer in (self.text, self.gzip, self.buffer, self.raw):
            try:
                if layer is not None:
                    layer.close()
            except (OSError, ValueError):
                pass


@contextmanager
def _direct(path: Path, *, compress: bool) -> Iterator[IO[str]]:
    """Write in place (a FIFO, a device, ``/dev/stdout``), appending as a redirection does."""
    try:
        raw = _Raw(path, "ab")
    except OSError as exc:
        raise _error(path, exc, existed=True) from None
    output = _Output(raw, compress=compress)
    try:
        yield output.text
        output.finish(fsync=False)
    except BrokenPipeError:
        output.abandon()
        raise
    except OSError as exc:
        output.abandon()
        raise _error(path, exc, in_place=True) from None
    except BaseException:
        output.abandon()
        raise


@contextmanager
def _stdout() -> Iterator[IO[str]]:
    try:
        yield sys.stdout
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        # What could not be written is dropped, so that the interpreter's last flush at exit
        # does not fail a second time with a traceback-like warning.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
        raise _error(Path("standard output"), exc, in_place=True) from None


def _in_place(path: Path) -> bool:
    """True for a target that is not a regular file, and for the names of open descriptors
    (``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``) even when they lead to a file."""
    if str(path).startswith(("/dev/", "/proc/")):
        return True
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _real_target(path: Path) -> Path:
    """A symlink is followed, so that the file it points to is replaced, not the link."""
    try:
        return path.resolve() if os.path.islink(path) else path
    except (OSError, RuntimeError):
        return path


def _check_folder(path: Path, given: Path) -> None:
    folder = path.parent
    name_max = 255
    with contextlib.suppress(OSError, ValueError):
        name_max = os.pathconf(folder, "PC_NAME_MAX")
    if len(os.fsencode(path.name)) > name_max:
        raise _error(given, OSError(errno.ENAMETOOLONG, "File name too long"))
    try:
        folder_stat = folder.stat()
    except OSError as exc:
        raise _error(given, exc) from None
    if not stat.S_ISDIR(folder_stat.st_mode):
        raise _error(given, OSError(errno.ENOTDIR, "Not a directory"))
    try:
        if path.is_dir():
            raise _error(given, OSError(errno.EISDIR, "Is a directory"))
    except OSError as exc:
        raise _error(given, exc) from None


def _mode_of(path: Path) -> int | None:
    """The permission bits of the file being replaced (kept on the new one), or None."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable; a file system that cannot fsync a folder is left be."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove(partial: Path) -> None:
    for name in (partial, *(Path(f"{partial}{suffix}") for suffix in SIDE_SUFFIXES)):
        with contextlib.suppress(OSError):
            name.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    """Whether the process that named a temporary file may still be writing it (when in doubt,
    yes: another user's process, or this one)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError, ValueError):
        return True
    return True


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):
        return False


_CAUSES = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.ENAMETOOLONG: "the file name is too long for the file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "the file system is read-only",
    errno.EISDIR: "it is a folder; give a file name",
    errno.ENOTDIR: "a part of the path is not a folder",
    errno.EFBIG: "the file is too large for the file system",
    errno.EIO: "the disk (or network file system) failed to write",
    errno.ELOOP: "the path has too many symbolic links",
}


def _error(path: Path, exc: OSError, *, existed: bool = False, in_place: bool = False) -> OutputError:
    """One paragraph: the file, the cause, and that nothing half-written was left."""
    if exc.errno == errno.ENOENT:
        cause = f"the folder {path.parent} does not exist"
    else:
        known = _CAUSES.get(exc.errno) if exc.errno is not None else None
        cause = known or exc.strerror or str(exc)
    if in_place:
        tail = "The output may be incomplete."
    elif existed:
        tail = f"{path} was left as it was."
    else:
        tail = "Nothing was written."
    return OutputError(f"{path}: cannot be written: {cause}. {tail}")
