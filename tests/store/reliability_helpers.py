"""Child processes that label through the judging service, and checks of the event log.

Children are forked from the test process (cheap: ragjudge and SQLAlchemy are already imported,
so a child starts labelling within milliseconds), open their own :class:`Project` (their own
engine and connections) and report every event id that ``record_label`` returned, one line per
label, through a pipe, *after* the call returned: a line in the pipe is a label the application
had acknowledged to its user.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import func, select

QUERIES = [f"q{i}" for i in range(1, 6)]
CHUNKS = [f"c{j:02d}" for j in range(1, 21)]
PAIRS = [(q, c) for q in QUERIES for c in CHUNKS]


def pair_for(seq: int, offset: int = 0) -> tuple[str, str]:
    return PAIRS[(seq * 7 + offset) % len(PAIRS)]


def grade_for(seq: int) -> int:
    return (seq * 5 + 1) % 4


@dataclass
class Child:
    pid: int
    fd: int
    buffer: bytes = b""
    status: int | None = None

    def drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            if not chunk:
                return
            self.buffer += chunk

    def lines(self) -> list[str]:
        return self.buffer.decode().splitlines()

    @property
    def ready(self) -> bool:
        """The child opened the project and is about to label (or already failed)."""
        return b"READY\n" in self.buffer or b"ERR " in self.buffer


def fork_child(work: Callable[[int], None], *, go_fd: int | None = None,
               close_fds: tuple[int, ...] = ()) -> Child:
    """Fork a child running ``work(write_fd, go_fd)``; its lines come back through :class:`Child`.

    With ``go_fd`` the child first blocks until the parent closes the other end of that pipe (a
    start barrier). Exceptions in the child are written to the pipe as ``ERR ...`` lines.
    """
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            os.close(read_fd)
            for fd in close_fds:
                os.close(fd)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            work(write_fd, go_fd)
        except BaseException:  # noqa: BLE001 - report everything to the parent
            text = traceback.format_exc().replace("\n", " | ")
            with contextlib.suppress(OSError):
                os.write(write_fd, f"ERR {text}\n".encode())
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    os.set_blocking(read_fd, False)
    return Child(pid, read_fd)


def wait_for_go(go_fd: int | None) -> None:
    if go_fd is not None:
        os.read(go_fd, 1)  # returns b"" once the parent closed the write end


def label_forever(db: str, annotator: str, *, limit: int | None = None, offset: int = 0):
    """The body of a labelling child: open the project, continue this annotator's sequence
    where the database says it stopped, label pairs through ``record_label`` and acknowledge
    each returned event id as ``<id> <seq>``."""

    def work(write_fd: int, go_fd: int | None) -> None:
        from ragjudge.services.labels.events import record_label
        from ragjudge.services.project.database import Project
        from ragjudge.store.schema import Label

        project = Project.open(db)
        with project.read() as session:
            start = session.scalar(select(func.count()).select_from(Label).where(Label.annotator == annotator))
        os.write(write_fd, b"READY\n")
        wait_for_go(go_fd)
        seq = start
        while limit is None or seq < start + limit:
            query_id, chunk_id = pair_for(seq, offset)
            event_id = record_label(project, annotator=annotator, query_id=query_id, chunk_id=chunk_id,
                                    grade=grade_for(seq), note=f"seq={seq}", duration_ms=seq % 997)
            os.write(write_fd, f"{event_id} {seq}\n".encode())
            seq += 1
        project.close()

    return work


def reap(children: list[Child], timeout: float) -> None:
    """Wait for every child (draining its pipe); SIGKILL any still running after ``timeout``."""
    deadline = time.monotonic() + timeout
    pending = {child.pid: child for child in children}
    while pending:
        for pid, child in list(pending.items()):
            child.drain()
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                child.status = status
                child.drain()
                os.close(child.fd)
                del pending[pid]
        if pending and time.monotonic() > deadline:
            for pid in pending:
                os.kill(pid, signal.SIGKILL)
            deadline = float("inf")
        time.sleep(0.005)


def acknowledged(child: Child) -> list[tuple[int, int]]:
    """The (event id, seq) pairs a child acknowledged; an ``ERR`` line fails the test."""
    out = []
    for line in child.lines():
        assert not line.startswith("ERR"), f"a labelling process failed: {line}"
        if line == "READY":
            continue
        event_id, seq = line.split()
        out.append((int(event_id), int(seq)))
    return out


def check_event_log(connection, annotators: list[str], acked: dict[str, list[tuple[int, int]]],
                    *, offsets: dict[str, int] | None = None) -> dict[str, int]:
    """The event log of each annotator is exactly seq 0..n-1 in id order, every acknowledged
    event is in it with its pair and grade, and ids are unique. Returns events per annotator."""
    from ragjudge.store.schema import Label

    counts = {}
    ids_seen: set[int] = set()
    for annotator in annotators:
        offset = (offsets or {}).get(annotator, 0)
        rows = connection.execute(
            select(Label.id, Label.note, Label.query_id, Label.chunk_id, Label.grade)
            .where(Label.annotator == annotator).order_by(Label.id)
        ).all()
        seqs = [int(note.removeprefix("seq=")) for _, note, *_ in rows]
        if seqs != list(range(len(rows))):
            # name the cause: the (id, seq) rows around the first difference, and whether an
            # acknowledged label is missing (lost) or the log only holds more (unacknowledged)
            first = next((i for i, s in enumerate(seqs) if s != i), len(seqs))
            around = [(rows[i][0], seqs[i]) for i in range(max(first - 3, 0), min(first + 8, len(rows)))]
            stored = {row[0] for row in rows}
            lost = [(e, q) for e, q in acked.get(annotator, []) if e not in stored]
            raise AssertionError(
                f"{annotator}: the event log has gaps, duplicates or reordering from position "
                f"{first} of {len(rows)}: (id, seq) {around}; acknowledged and missing: {lost[:10]}")
        by_id = {}
        for event_id, note, query_id, chunk_id, grade in rows:
            seq = int(note.removeprefix("seq="))
            assert (query_id, chunk_id) == pair_for(seq, offset) and grade == grade_for(seq), (
                f"{annotator}: event {event_id} (seq {seq}) holds the wrong pair or grade")
            assert event_id not in ids_seen
            ids_seen.add(event_id)
            by_id[event_id] = seq
        for event_id, seq in acked.get(annotator, []):
            assert by_id.get(event_id) == seq, (
                f"{annotator}: acknowledged label {event_id} (seq {seq}) is not in the database")
        counts[annotator] = len(rows)
    return counts


def cli_in_process(*args: str, code: str | None = None) -> subprocess.CompletedProcess:
    """The CLI's entry point (or the label-write code) in this process, output captured."""
    from contextlib import redirect_stderr, redirect_stdout

    from ragjudge.cli import common, main

    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv
    sys.argv = ["ragjudge", *args]
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                if code:
                    exec(compile(code, "<label write>", "exec"), {"__name__": "__main__"})
                    code_ = 0
                else:
                    code_ = main(list(args))
            except SystemExit as exc:
                code_ = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        sys.argv = saved
        common.CLI_STATE["db"] = None  # --db is remembered per process; forget it
    return subprocess.CompletedProcess(args, code_, out.getvalue(), err.getvalue())
