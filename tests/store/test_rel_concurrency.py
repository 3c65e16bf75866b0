"""Concurrent annotators: 8 processes each record 500 labels into one project at the same time,
through the judging service. Exactly 4,000 events afterwards, none lost or duplicated, and no
process ever sees "database is locked" (the store retries with backoff)."""

from __future__ import annotations

import os

import pytest
from reliability_helpers import acknowledged, check_event_log, fork_child, label_forever, reap
from sqlalchemy import func, select

from projectkit import make_small_project

pytestmark = pytest.mark.slow

WRITERS = 8
LABELS_EACH = 500


def _run_writers(db: str, *, writers: int = WRITERS, each: int = LABELS_EACH,
                 annotators: list[str] | None = None) -> dict[str, list]:
    annotators = annotators or [f"annotator-{k}" for k in range(writers)]
    go_read, go_write = os.pipe()
    children = [fork_child(label_forever(db, name, limit=each, offset=k), go_fd=go_read,
                           close_fds=(go_write,))
                for k, name in enumerate(annotators)]
    os.close(go_read)
    os.close(go_write)  # every child starts writing now
    reap(children, timeout=240)
    acked: dict[str, list] = {}
    for name, child in zip(annotators, children, strict=True):
        lines = acknowledged(child)  # an ERR line (e.g. "database is locked") fails here
        assert os.WIFEXITED(child.status) and os.WEXITSTATUS(child.status) == 0, (
            f"{name} did not finish: status {child.status}, last output {child.lines()[-1:]}")
        acked[name] = lines
    return acked


def _check(db: str, acked: dict[str, list]) -> None:
    from ragjudge.services.maintenance import verify
    from ragjudge.services.project.database import Project
    from ragjudge.store.schema import Label

    with Project.open(db) as project:
        with project.connect() as connection:
            total = connection.scalar(select(func.count()).select_from(Label))
            distinct_ids = connection.scalar(select(func.count(func.distinct(Label.id))))
            offsets = {name: k for k, name in enumerate(acked)}
            counts = check_event_log(connection, list(acked), acked, offsets=offsets)
        report = verify(project)
    assert total == distinct_ids == WRITERS * LABELS_EACH
    assert counts == {name: LABELS_EACH for name in acked}
    assert all(len(lines) == LABELS_EACH for lines in acked.values())
    assert report.ok, [c for c in report.checks if c.failed]


def test_eight_processes_write_4000_labels_to_sqlite(tmp_path):
    db = str(tmp_path / "team.db")
    make_small_project(db).close()
    acked = _run_writers(db)
    _check(db, acked)
    import sqlite3

    raw = sqlite3.connect(db)
    assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    raw.close()


@pytest.mark.postgres
def test_eight_processes_write_4000_labels_to_postgresql(pg_url):
    make_small_project(pg_url).close()
    acked = _run_writers(pg_url)
    _check(pg_url, acked)


def _same_annotator_worker(db: str, annotator: str, each: int, tag: int):
    def work(write_fd: int, go_fd: int | None) -> None:
        from reliability_helpers import pair_for, wait_for_go

        from ragjudge.services.labels.events import record_label
        from ragjudge.services.project.database import Project

        project = Project.open(db)
        wait_for_go(go_fd)
        for seq in range(each):
            query_id, chunk_id = pair_for(seq, tag)
            event_id = record_label(project, annotator=annotator, query_id=query_id,
                                    chunk_id=chunk_id, grade=1, note=f"{tag}:{seq}")
            os.write(write_fd, f"{event_id} {seq}\n".encode())
        project.close()

    return work


@pytest.fixture
def newcomer_db(any_db) -> str:
    return any_db


def test_one_new_annotator_in_four_processes_at_once(newcomer_db):
    """The same person opens the app twice (or on two machines) before their annotator row
    exists: creating the annotator must not race into an error on either backend."""
    from ragjudge.services.project.database import Project
    from ragjudge.store.schema import Annotator, Label

    any_db = newcomer_db
    make_small_project(any_db).close()
    go_read, go_write = os.pipe()
    children = [fork_child(_same_annotator_worker(any_db, "newcomer", 50, tag), go_fd=go_read,
                           close_fds=(go_write,)) for tag in range(4)]
    os.close(go_read)
    os.close(go_write)
    reap(children, timeout=120)
    acked = [acknowledged(child) for child in children]
    assert all(len(lines) == 50 for lines in acked)
    with Project.open(any_db) as project, project.connect() as connection:
        notes = list(connection.execute(select(Label.note).where(Label.annotator == "newcomer")).scalars())
        assert sorted(notes) == sorted(f"{tag}:{seq}" for tag in range(4) for seq in range(50))
        assert connection.scalar(select(func.count()).select_from(Annotator)) == 1
