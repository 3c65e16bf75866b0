"""Concurrent annotators: 8 processes each record 500 labels into one project at the same time,
through the judging service. Exactly 4,000 events afterwards, none lost or duplicated, and no
process ever sees "database is locked" (the store retries with backoff)."""

from __future__ import annotations

import os

import pytest
from reliability_helpers import acknowledged, check_event_log, fork_child, label_forever, reap
from sqlalchemy import func, select

from conftest import make_small_project

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
    from ragjudge.services.project import Project
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
