"""QA regression: after 'ragjudge demo --no-tui' a plain 'ragjudge status' points at the demo file."""

from __future__ import annotations

import pytest

from ragjudge.cli import common, main


@pytest.fixture(autouse=True)
def _no_project(monkeypatch, tmp_path):
    monkeypatch.setitem(common.CLI_STATE, "db", None)
    monkeypatch.delenv("RAGJUDGE_DB", raising=False)
    monkeypatch.chdir(tmp_path)


def test_status_without_db_next_to_the_demo_names_it(capsys, tmp_path):
    # was: "There is no project at ragjudge.db ... or build the demo project with 'ragjudge demo'"
    # right after the user had built it (at ragjudge-demo.db, the demo's default)
    (tmp_path / "ragjudge-demo.db").write_bytes(b"")
    assert main(["status"]) == 2
    err = capsys.readouterr().err
    assert "add --db ragjudge-demo.db" in err and err.count("\n") == 1
    assert not (tmp_path / "ragjudge.db").exists()


def test_status_without_any_project_suggests_the_demo(capsys):
    assert main(["status"]) == 2
    assert "'ragjudge demo'" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_no_tui_says_how_to_reach_the_project(capsys, tmp_path):
    assert main(["demo", "--no-tui"]) == 0
    err = capsys.readouterr().err
    assert "ragjudge --db ragjudge-demo.db status" in err
    assert (tmp_path / "ragjudge-demo.db").exists()
