"""A run's head: an import keeps rows for the first ranks only (the arrays hold the whole run),
placeholders only for those rows' chunks, and a deeper pool widens the head first. On SQLite,
and on PostgreSQL when RAGJUDGE_TEST_PG names a server."""

from __future__ import annotations

import io

import pytest
from projectkit import rights
from sqlalchemy import func, select

from ragjudge.services.overview import project_status
from ragjudge.errors import ProjectError
from ragjudge.services.runs import head as runhead
from ragjudge.metrics.evaluate import evaluate
from ragjudge.services.scoring.evaluation import project_qrels
from ragjudge.services.runs.stored import project_run
from ragjudge.services.transfer.exporting import export
from ragjudge.services.transfer.importing import import_file
from ragjudge.services.labels.queue import JudgingQueue
from ragjudge.services.gold.pool import pool_size_and_judged
from ragjudge.services.project.database import Project
from ragjudge.store.schema import Chunk, Query, Run, RunEntry

QUERIES, DEPTH, HEAD = 3, 7, 3


def run_text() -> str:
    # query q{i} ranks d{i}-{r}; ranks come from the scores, the file is in no useful order
    lines = [f"q{i} Q0 d{i}-{r} 0 {DEPTH - r}.5 bm25\n" for r in range(DEPTH, 0, -1)
             for i in range(1, QUERIES + 1)]
    return "".join(lines)


@pytest.fixture
def project(any_db):
    project = Project.init(any_db, name="head")
    project.set_settings({runhead.SETTING: HEAD})
    yield project
    project.close()


def count(project, model, *where) -> int:
    with project.connect() as connection:
        return connection.scalar(select(func.count()).select_from(model).where(*where))


def ranks(project) -> list[tuple[str, int]]:
    with project.connect() as connection:
        return sorted(connection.execute(select(RunEntry.query_id, RunEntry.rank)).all())


def imported(project):
    return import_file(project, "run", io.StringIO(run_text()), name="bm25", fmt="trec",
                       create_missing=True)


def test_an_import_writes_rows_and_placeholders_for_the_head_only(project):
    result = imported(project)
    assert result.added == QUERIES * DEPTH
    assert ranks(project) == [(f"q{i}", r) for i in range(1, QUERIES + 1) for r in range(1, HEAD + 1)]
    assert count(project, Chunk) == QUERIES * HEAD
    assert count(project, Query) == QUERIES
    assert result.created_chunks == QUERIES * HEAD
    assert any(f"Chunks ranked below {HEAD} that the project lacks" in n for n in result.notes)
    with project.connect() as connection:
        meta = connection.scalar(select(Run.meta))
    assert meta["rows_depth"] == HEAD
    summary = project_status(project)["run_summary"]
    assert summary == [{"name": "bm25", "entries": QUERIES * DEPTH, "queries": QUERIES, "depth": DEPTH}]


def test_export_and_evaluation_see_the_whole_run(project):
    imported(project)
    out = io.StringIO()
    export(project, "run", out, name="bm25", access=rights(project))
    exported = out.getvalue().splitlines()
    assert len(exported) == QUERIES * DEPTH
    assert [line.split()[2] for line in exported[:DEPTH]] == [f"d1-{r}" for r in range(1, DEPTH + 1)]
    # grade every chunk at rank 5 of every query: only the arrays know that rank
    deep = "".join(f"q{i} 0 d{i}-5 2\n" for i in range(1, QUERIES + 1))
    import_file(project, "qrels", io.StringIO(deep), fmt="trec", annotator="gold", create_missing=True)
    qrels, _ = project_qrels(project)
    assert evaluate(qrels, project_run(project, "bm25"), ["RR"]).aggregate()["RR"] == pytest.approx(1 / 5)


def test_a_deeper_pool_widens_the_head_first(project):
    imported(project)
    JudgingQueue(project, "ana", depth=5)
    assert ranks(project) == [(f"q{i}", r) for i in range(1, QUERIES + 1) for r in range(1, 6)]
    assert count(project, Chunk) == QUERIES * 5
    with project.connect() as connection:
        assert connection.scalar(select(Run.meta))["rows_depth"] == 5
    # the pool counts every pair of the deepest ranks, once
    assert pool_size_and_judged(project, depth=DEPTH)["pairs"] == QUERIES * DEPTH
    assert count(project, RunEntry) == QUERIES * DEPTH
    assert runhead.ensure_rows(project, DEPTH + 10) == 0  # nothing deeper to write


def test_a_widening_reports_its_progress_to_the_command_that_asked(project):
    # what `annotate`, `assign` and `llm-judge` draw as a bar before a deep pool
    imported(project)
    reports = []
    JudgingQueue(project, "ana", depth=6, progress=lambda *args: reports.append(args))
    assert reports, "a widening said nothing"
    done, total, description, unit = reports[-1]
    assert (done, total, unit) == (QUERIES * 3, QUERIES * 3, "rows")
    assert description == "run bm25: rows to rank 6"
    reports.clear()
    JudgingQueue(project, "ana", depth=6, progress=lambda *args: reports.append(args))
    assert reports == []  # deep enough already: nothing written, nothing said


def test_the_default_head_covers_the_default_pool_twice(tmp_path):
    from ragjudge.services.gold.pool import DEFAULT_DEPTH

    with Project.init(str(tmp_path / "d.db"), name="d") as project:
        assert runhead.head_depth(project) == runhead.HEAD_DEPTH == 2 * DEFAULT_DEPTH
        imported(project)  # 7 ranks: all of them rows
        assert count(project, RunEntry) == QUERIES * DEPTH


def test_a_killed_widening_is_finished_by_the_next(project, monkeypatch):
    imported(project)
    real = runhead._execute_many
    calls = {"n": 0}

    def dies_on_the_rows(session, sql, rows):
        if "run_entries" in sql:
            calls["n"] += 1
            if calls["n"] == 1:
                real(session, sql, rows[:2])  # part of a batch, then the process is gone
                raise KeyboardInterrupt
        real(session, sql, rows)

    monkeypatch.setattr(runhead, "_execute_many", dies_on_the_rows)
    with pytest.raises(KeyboardInterrupt):
        runhead.ensure_rows(project, 5)
    with project.connect() as connection:
        assert connection.scalar(select(Run.meta))["rows_depth"] == HEAD
    monkeypatch.setattr(runhead, "_execute_many", real)
    runhead.ensure_rows(project, 5)
    assert ranks(project) == [(f"q{i}", r) for i in range(1, QUERIES + 1) for r in range(1, 6)]


def test_importing_the_same_run_again_changes_nothing(project):
    imported(project)
    again = imported(project)
    assert again.unchanged == QUERIES * DEPTH
    assert count(project, RunEntry) == QUERIES * HEAD


def test_a_read_only_project_refuses_to_widen_in_one_paragraph(tmp_path, monkeypatch):
    db = tmp_path / "ro.db"
    with Project.init(str(db), name="ro") as project:
        project.set_settings({runhead.SETTING: HEAD})
        imported(project)
    # as for a user who may only read the file (root may write anywhere, so it is told)
    monkeypatch.setattr("ragjudge.services.project.database.sqlite_writable", lambda path: False)
    with Project.open(str(db)) as project:
        assert project.readonly
        JudgingQueue(project, "ana", depth=HEAD)  # deep enough: nothing to write
        with pytest.raises(ProjectError, match="keeps its runs' rows to a shallower depth"):
            JudgingQueue(project, "ana", depth=5)
        assert project_status(project)["run_summary"][0]["entries"] == QUERIES * DEPTH  # reads still work
