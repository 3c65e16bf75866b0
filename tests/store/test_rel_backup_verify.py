"""``ragjudge backup`` and ``ragjudge verify`` through the real command line (``python -m
ragjudge`` for the backups taken while annotators write, the entry point in-process elsewhere)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from reliability_helpers import acknowledged, check_event_log, fork_child, label_forever, reap
from reliability_helpers import cli_in_process as run

from projectkit import make_small_project


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragjudge", *args], capture_output=True, text=True,
                          timeout=120)


def label_some(db: str, n: int = 12, annotator: str = "ann") -> None:
    from ragjudge.services.labels.events import record_label
    from ragjudge.services.project.database import Project

    with Project.open(db) as project:
        for seq in range(n):
            record_label(project, annotator=annotator, query_id="q1", chunk_id=f"c{seq % 20 + 1:02d}",
                         grade=seq % 4, note=f"seq={seq}")


# -- backup ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_backup_while_four_annotators_write(tmp_path):
    db = str(tmp_path / "live.db")
    make_small_project(db).close()
    names = [f"w{k}" for k in range(4)]
    go_read, go_write = os.pipe()
    children = [fork_child(label_forever(db, name, limit=250, offset=k), go_fd=go_read, close_fds=(go_write,))
                for k, name in enumerate(names)]
    os.close(go_read)
    os.close(go_write)
    copies = []
    for i in range(3):
        target = tmp_path / f"copy{i}.db"
        result = cli("--db", db, "backup", "-o", str(target))
        assert result.returncode == 0, result.stderr
        copies.append(target)
    reap(children, timeout=120)
    acked = {name: acknowledged(child) for name, child in zip(names, children, strict=True)}
    assert all(len(lines) == 250 for lines in acked.values())

    from ragjudge.services.project.database import Project

    counts_seen = []
    for target in copies:
        raw = sqlite3.connect(target)
        assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("delete",)  # one self-contained file
        raw.close()
        assert not Path(str(target) + "-wal").exists()
        result = run("--db", str(target), "verify", "--format", "json")
        assert result.returncode == 0, result.stdout + result.stderr
        counts_seen.append(json.loads(result.stdout)["events"]["labels"])
        # a consistent snapshot: each annotator's log in the copy is a gap-free prefix
        with Project.open(str(target)) as copy, copy.connect() as connection:
            check_event_log(connection, names, {}, offsets={n: k for k, n in enumerate(names)})
    print("labels in the copies", counts_seen)
    assert counts_seen == sorted(counts_seen) and counts_seen[-1] <= 1000
    with Project.open(db) as project, project.connect() as connection:
        check_event_log(connection, names, acked, offsets={n: k for k, n in enumerate(names)})


@pytest.mark.slow
def test_backup_default_name_and_refusals(tmp_path):
    db = tmp_path / "proj.db"
    make_small_project(str(db)).close()
    label_some(str(db))
    result = cli("--db", str(db), "backup")
    assert result.returncode == 0, result.stderr
    made = list(tmp_path.glob("proj-backup-*.db"))
    assert len(made) == 1 and made[0].name in result.stdout
    assert "12 labels" in result.stdout
    stamp = made[0].stem.removeprefix("proj-backup-")
    assert abs(datetime.strptime(stamp, "%Y%m%dT%H%M%SZ") - datetime.utcnow()) < timedelta(minutes=5)
    copy = sqlite3.connect(made[0])
    assert copy.execute("SELECT count(*) FROM labels").fetchone() == (12,)
    copy.close()

    target = tmp_path / "b.db"
    target.write_bytes(b"keep me")
    refused = run("--db", str(db), "backup", "-o", str(target))
    assert refused.returncode == 2 and "already exists" in refused.stderr
    assert target.read_bytes() == b"keep me"
    assert run("--db", str(db), "backup", "-o", str(target), "--force").returncode == 0
    assert target.read_bytes().startswith(b"SQLite format 3\x00")

    before = db.read_bytes()
    itself = run("--db", str(db), "backup", "-o", str(db), "--force")
    assert itself.returncode == 2 and "is a ragjudge project" in itself.stderr
    missing = run("--db", str(db), "backup", "-o", str(tmp_path / "nope" / "b.db"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert db.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if ".partial" in p.name]


@pytest.mark.postgres
def test_backup_of_a_postgresql_project_says_how_to_use_pg_dump(pg_url, tmp_path):
    make_small_project(pg_url).close()
    result = run("--db", pg_url, "backup", "-o", str(tmp_path / "x.db"))
    assert result.returncode == 2
    assert "pg_dump --format=custom" in result.stderr and "pg_restore" in result.stderr
    assert not (tmp_path / "x.db").exists()


# -- verify ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_verify_a_sound_project(tmp_path):
    db = str(tmp_path / "ok.db")
    make_small_project(db).close()
    label_some(db, 7)
    result = cli("--db", db, "verify", "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True and report["schema_revision"]
    assert report["events"] == {"labels": 7, "facet_links": 0, "nugget_support": 0, "adjudications": 0,
                                "pair_marks": 0, "answer_judgments": 0}
    newest = datetime.fromisoformat(report["newest_event"])
    assert abs(newest - datetime.utcnow()) < timedelta(minutes=5)
    assert {c["status"] for c in report["checks"]} == {"ok"}
    table = run("--db", db, "verify")
    assert table.returncode == 0 and "labels" in table.stdout and "integrity" in table.stdout


def _tamper(db: str, *statements: str) -> None:
    raw = sqlite3.connect(db)
    raw.execute("PRAGMA foreign_keys = OFF")
    for statement in statements:
        raw.execute(statement)
    raw.commit()
    raw.close()


@pytest.mark.parametrize("statements, failing, detail", [
    (["DELETE FROM labels WHERE id = 4"], "labels: no missing events", "id 4"),
    (["DELETE FROM labels WHERE id IN (1, 2)"], "labels: no missing events", "2 event ids missing"),
    (["DELETE FROM run_entries WHERE query_id = 'q1'", "DELETE FROM queries WHERE id = 'q1'"],
     "labels → queries", "12 events point at a missing query"),
    (["UPDATE labels SET chunk_id = 'c99' WHERE id = 3"], "labels → chunks", "event ids 3"),
    (["UPDATE labels SET undoes = 77 WHERE id = 5"], "undo events → undone events", "ids 5"),
])
def test_verify_finds_what_is_wrong(tmp_path, statements, failing, detail):
    db = str(tmp_path / "bad.db")
    make_small_project(db).close()
    label_some(db, 12)
    _tamper(db, *statements)
    result = run("--db", db, "verify", "--format", "json")
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(result.stdout)
    failed = {c["name"]: c["detail"] for c in report["checks"] if c["status"] == "fail"}
    assert list(failed) == [failing], failed
    assert detail in failed[failing]
    assert "check(s) failed" in result.stderr and failing in result.stderr


@pytest.mark.slow
def test_verify_warns_about_events_from_the_future(tmp_path):
    db = str(tmp_path / "clock.db")
    make_small_project(db).close()
    label_some(db, 2)
    _tamper(db, "UPDATE labels SET created_at = '2999-01-01 00:00:00' WHERE id = 2")
    result = run("--db", db, "verify", "--format", "json")
    assert result.returncode == 0
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["newest event"]["status"] == "warn" and "2999" in checks["newest event"]["detail"]


@pytest.mark.postgres
def test_verify_on_postgresql(pg_url):
    make_small_project(pg_url).close()
    label_some(pg_url, 5)
    result = run("--db", pg_url, "verify", "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["backend"] == "postgresql" and report["events"]["labels"] == 5


def test_help_has_examples():
    for command in ("backup", "verify"):
        result = run(command, "--help")
        assert result.returncode == 0
        assert "Examples" in result.stdout and "ragjudge --db" in result.stdout


def test_a_failed_backup_leaves_no_file_under_the_target_name(tmp_path, monkeypatch):
    """The copy is written under a temporary name and renamed only once complete and checked."""
    import ragjudge.services.maintenance as maintenance
    from ragjudge.errors import ProjectError
    from ragjudge.services.project.database import Project

    db = str(tmp_path / "p.db")
    make_small_project(db).close()
    real_copy = maintenance._copy

    def copy_then_fail(source, partial):
        real_copy(source, partial)
        assert partial.exists() and partial.name.startswith(".")
        raise sqlite3.DatabaseError("disk full (simulated)")

    monkeypatch.setattr(maintenance, "_copy", copy_then_fail)
    with Project.open(db) as project, pytest.raises(ProjectError, match="disk full"):
        maintenance.backup(project, tmp_path / "b.db")
    # p.db.writelock is the writers' queue of the project (store.engine.WriterQueue)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".writelock")) == ["p.db"]
