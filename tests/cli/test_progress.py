"""Progress of long commands: a bar with the rate and the time left on a terminal, nothing on a
pipe, nothing with --quiet; imports, exports and evaluations all report to it."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from projectkit import make_small_project, rights

ROOT = Path(__file__).resolve().parents[2]
RUN = "".join(f"q{q} Q0 c{c:02d} {c} {1.0 / c} dense\n" for q in range(1, 6) for c in range(1, 21))


@pytest.fixture
def db(tmp_path) -> str:
    path = str(tmp_path / "p.db")
    make_small_project(path).close()
    return path


def test_a_bar_with_rate_and_time_left_on_a_terminal(monkeypatch):
    from rich.console import Console

    from ragjudge.cli import common, progress

    out = io.StringIO()
    monkeypatch.setattr(progress, "_shown", lambda stream: True)
    monkeypatch.setattr(common, "err_console", Console(file=out, force_terminal=True, width=160))
    with progress.progress_bar() as report:
        assert report is not None
        report(0, 1000, "run big: writing entries", "entries")
        report(500, 1000, "run big: writing entries", "entries")
        report(2 << 20, 4 << 20, "run big: reading")
        report(1000, 1000, "run big: writing entries", "entries")
    drawn = out.getvalue()
    assert "run big: writing entries" in drawn and "1,000/1,000 entries" in drawn
    assert "entries/s" in drawn  # the rate
    assert "2.0 MB/4.0 MB" in drawn
    assert "-:--:--" in drawn or "0:00:0" in drawn  # the time left


def test_quiet_or_not_a_terminal_means_no_bar(monkeypatch):
    from ragjudge.cli import progress

    monkeypatch.setattr(progress, "_shown", lambda stream: True)
    with progress.progress_bar(quiet=True) as report:
        assert report is None
    monkeypatch.setattr(progress, "_shown", lambda stream: False)
    with progress.progress_bar() as report:
        assert report is None


@pytest.mark.slow
@pytest.mark.parametrize("quiet", [False, True])
def test_an_import_on_a_pipe_prints_its_summary_only(tmp_path, db, quiet):
    path = tmp_path / "dense.trec"
    path.write_text(RUN)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "ragjudge", "--db", db, "import", "run", str(path)] + (["--quiet"] if quiet else [])
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    expected = f"{path}: run 'dense': 100 read, 100 added."
    assert "".join(done.stderr.split()) == "".join(expected.split())  # wrapped at 80, maybe mid-path


def test_exports_and_evaluations_report_their_progress(tmp_path, db):
    from ragjudge.services.scoring.evaluation import evaluate_all, project_qrels
    from ragjudge.services.runs.stored import project_run
    from ragjudge.services.transfer.exporting import export
    from ragjudge.services.transfer.importing import import_file
    from ragjudge.services.labels.events import record_label
    from ragjudge.services.project.database import Project

    path = tmp_path / "dense.trec"
    path.write_text(RUN)
    calls: list[tuple] = []

    def report(done, total, what, unit="bytes"):
        calls.append((done, total, what, unit))

    with Project.open(db) as project:
        import_file(project, "run", path)
        record_label(project, annotator="ann", query_id="q1", chunk_id="c01", grade=2)
        assert export(project, "run", str(tmp_path / "out.trec"), name="dense", progress=report, access=rights(project)) == 100
        assert calls[-1] == (100, 100, "export run dense", "lines")
        calls.clear()
        export(project, "labels", str(tmp_path / "labels.jsonl"), progress=report, access=rights(project))
        assert calls[-1] == (1, 1, "export labels", "lines")
        calls.clear()
        qrels, rule = project_qrels(project)
        runs = {name: project_run(project, name) for name in ("bm25", "dense")}
        evaluate_all(qrels, runs, ["P@5"], project=project, rule=rule, progress=report)
        assert calls == [(0, 2, "evaluating", "runs"), (1, 2, "evaluating", "runs"),
                         (2, 2, "evaluating", "runs")]
