"""QA regression: ``import run --name ''`` is refused (it was imported as a run named 'run')."""

from __future__ import annotations

import pytest
from projectkit import make_small_project

from ragjudge.cli import main
from ragjudge.services.runs.stored import project_run_names
from ragjudge.services.project.database import Project


from clikit import no_project  # noqa: F401 - autouse: no project named by the environment


@pytest.mark.parametrize("name", ["", "  "])
def test_import_run_with_empty_name_is_refused(capsys, tmp_path, name):
    db = str(tmp_path / "p.db")
    make_small_project(db).close()
    run = tmp_path / "dense.trec"
    run.write_text("q1 Q0 c01 1 2.0 x\nq1 Q0 c02 2 1.0 x\n", encoding="utf-8")
    code = main(["--db", db, "import", "run", str(run), "--name", name])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("ragjudge: --name is empty") and err.count("\n") == 1
    with Project.open(db) as project:
        assert project_run_names(project) == ["bm25"]


def test_import_run_with_a_name_still_works(capsys, tmp_path):
    db = str(tmp_path / "p.db")
    make_small_project(db).close()
    run = tmp_path / "dense.trec"
    run.write_text("q1 Q0 c01 1 2.0 x\n", encoding="utf-8")
    assert main(["--db", db, "import", "run", str(run), "--name", "dense"]) == 0
    with Project.open(db) as project:
        assert project_run_names(project) == ["bm25", "dense"]
