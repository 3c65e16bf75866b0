"""Kill tests: a process labels pairs through the judging service (the same ``record_label`` the
app calls on a keypress) and is killed with SIGKILL at random moments, 50 times. Afterwards every
label it had acknowledged is in the database, each annotator's event log is exactly its sequence
0..n-1 (no gaps, no duplicates, ids increasing), and SQLite's integrity check says ok."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import time

from collections.abc import Callable

import pytest
from reliability_helpers import acknowledged, check_event_log, fork_child, label_forever, reap

from projectkit import make_small_project

pytestmark = pytest.mark.slow

KILLS = 50


def _kill_rounds(db: str, *, rounds: int, seed: int,
                 between: Callable[[], None] | None = None) -> tuple[dict, int]:
    """``rounds`` rounds of two annotators labelling at once, each killed at its own random
    moment: in every fifth round within 30 ms of starting (while opening the project), otherwise
    0-200 ms after it is ready to label (mid-write; measured from readiness, so that a slow,
    busy machine still kills mid-labelling rather than always during start-up). ``between`` runs
    after each round's children are reaped, before the next round starts."""
    rng = random.Random(seed)
    acked: dict[str, list[tuple[int, int]]] = {"ann-a": [], "ann-b": []}
    kills = 0
    for round_ in range(rounds):
        children = {name: fork_child(label_forever(db, name, offset=i))
                    for i, name in enumerate(acked)}
        early = round_ % 5 == 4
        if not early:
            deadline = time.monotonic() + 60
            while not all(c.ready for c in children.values()) and time.monotonic() < deadline:
                for c in children.values():
                    c.drain()
                time.sleep(0.002)
        started = time.monotonic()
        for _name, child in sorted(children.items(), key=lambda _: rng.random()):
            delay = rng.uniform(0.0, 0.03 if early else 0.2) - (time.monotonic() - started)
            if delay > 0:
                time.sleep(delay)
            os.kill(child.pid, signal.SIGKILL)
            kills += 1
        reap(list(children.values()), timeout=10)
        for name, child in children.items():
            assert os.WIFSIGNALED(child.status) and os.WTERMSIG(child.status) == signal.SIGKILL, (
                f"child {name} ended on its own ({child.status}): {child.lines()[-1:]}")
            acked[name].extend(acknowledged(child))
        if between is not None:
            between()
    return acked, kills


def _check_sqlite(db: str, acked: dict) -> None:
    from ragjudge.services.maintenance import verify
    from ragjudge.services.project.database import Project

    raw = sqlite3.connect(db)
    assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert raw.execute("PRAGMA foreign_key_check").fetchall() == []
    raw.close()
    with Project.open(db) as project:
        with project.connect() as connection:
            counts = check_event_log(connection, list(acked), acked, offsets={"ann-a": 0, "ann-b": 1})
        report = verify(project)
    assert report.ok, [c for c in report.checks if c.failed]
    return counts


def test_sigkill_50_times_loses_no_acknowledged_label(tmp_path):
    db = str(tmp_path / "kill.db")
    make_small_project(db).close()
    acked, kills = _kill_rounds(db, rounds=KILLS // 2, seed=20261122)
    assert kills == KILLS
    counts = _check_sqlite(db, acked)
    # the test means something only if the children got to label before dying
    print("acknowledged", {k: len(v) for k, v in acked.items()}, "in the database", counts)
    assert sum(len(v) for v in acked.values()) >= 50, counts
    assert all(counts[name] >= len(acked[name]) for name in acked)


def _backends_gone(url: str, timeout: float = 30.0) -> None:
    """Wait until the server has ended the killed children's sessions. A child killed while its
    COMMIT is in flight leaves a server process that may still finish that commit: the next
    round's child, counting the labels stored to go on with its sequence, could count before the
    commit shows and then write the same sequence number again (the label was never
    acknowledged, so nothing is lost; the test's own bookkeeping would be off)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        deadline = time.monotonic() + timeout
        with engine.connect() as connection:
            while True:
                others = connection.execute(text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid() AND backend_type = 'client backend'")).scalar_one()
                if not others or time.monotonic() > deadline:
                    return
                time.sleep(0.01)
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_sigkill_on_postgresql_loses_no_acknowledged_label(pg_url):
    from ragjudge.services.project.database import Project

    make_small_project(pg_url).close()
    acked, kills = _kill_rounds(pg_url, rounds=KILLS // 2, seed=7, between=lambda: _backends_gone(pg_url))
    assert kills == KILLS
    with Project.open(pg_url) as project:
        with project.connect() as connection:
            counts = check_event_log(connection, list(acked), acked, offsets={"ann-a": 0, "ann-b": 1})
    assert sum(len(v) for v in acked.values()) >= 50, counts


def test_a_label_survives_a_kill_right_after_its_acknowledgement(tmp_path):
    """The sharpest moment: the child acknowledges one label and is killed before anything
    else can flush. The label must be there (synchronous commit, not a buffered one)."""
    db = str(tmp_path / "one.db")
    make_small_project(db).close()
    acked = {"ann-a": []}
    for _ in range(3):
        child = fork_child(label_forever(db, "ann-a", limit=10_000))
        deadline = time.monotonic() + 60
        while (not any(line != "READY" for line in child.lines())
               and time.monotonic() < deadline):
            child.drain()
            time.sleep(0.0005)
        os.kill(child.pid, signal.SIGKILL)
        reap([child], timeout=10)
        got = acknowledged(child)
        assert got, "the child acknowledged no label before the kill"
        acked["ann-a"].extend(got)
    raw = sqlite3.connect(db)
    assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    raw.close()
    from ragjudge.services.project.database import Project

    with Project.open(db) as project, project.connect() as connection:
        check_event_log(connection, ["ann-a"], acked)
