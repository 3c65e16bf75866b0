"""The project commands through the real entry point: --db anywhere, exit codes, messages."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ragjudge.cli import hoist_db, main


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragjudge", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_hoist_db_moves_db_before_the_command():
    assert hoist_db(["status", "--db", "x.db"]) == ["--db", "x.db", "status"]
    assert hoist_db(["status", "--db=x.db", "--format", "json"]) == ["--db", "x.db", "status", "--format", "json"]
    assert hoist_db(["--db", "a.db", "status"]) == ["--db", "a.db", "status"]


@pytest.mark.slow
def test_init_then_status_json_before_and_after_command(tmp_path, capsys):
    db = str(tmp_path / "p.db")
    assert main(["init", "--db", db, "--scale", "1-5"]) == 0
    capsys.readouterr()
    assert main(["--db", db, "status", "--format", "json"]) == 0
    before = json.loads(capsys.readouterr().out)
    assert main(["status", "--format", "json", "--db", db]) == 0
    after = json.loads(capsys.readouterr().out)
    assert before == after
    for key in ("queries", "chunks", "runs", "annotators", "labels"):
        assert isinstance(before[key], int) and before[key] == 0
    assert before["scale"] == "1-5"


@pytest.mark.slow
def test_ragjudge_db_environment_variable(tmp_path):
    import os

    db = tmp_path / "env.db"
    env = {**os.environ, "RAGJUDGE_DB": str(db)}
    assert run("init", "--scale", "binary", env=env).returncode == 0
    out = run("status", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["scale"] == "binary"


@pytest.mark.parametrize("scale", ["0-3", "binary", "1-5"])
def test_init_scales(tmp_path, capsys, scale):
    db = str(tmp_path / "s.db")
    assert main(["init", "--db", db, "--scale", scale]) == 0
    from ragjudge.services.project.database import Project

    with Project.open(db) as project:
        assert project.scale.describe() == ("binary" if scale == "binary" else scale)
        if scale == "0-3":
            assert [lvl.name for lvl in project.scale.levels] == [
                "Irrelevant", "Related", "Highly relevant", "Perfectly relevant"]


def test_bad_scale_is_a_usage_error(tmp_path, capsys):
    db = tmp_path / "bad.db"
    assert main(["init", "--db", str(db), "--scale", "3-1"]) == 2
    err = capsys.readouterr().err
    assert "--scale 3-1" in err and "Traceback" not in err
    assert not db.exists()


def test_init_refuses_an_existing_project(tmp_path, capsys):
    db = str(tmp_path / "p.db")
    assert main(["init", "--db", db]) == 0
    assert main(["init", "--db", db, "--scale", "binary"]) == 2
    assert "already exists" in capsys.readouterr().err


@pytest.mark.slow
def test_status_of_a_missing_project_says_how_to_create_one(tmp_path):
    out = run("status", "--db", str(tmp_path / "none.db"))
    assert out.returncode == 2
    assert "ragjudge init" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "none.db").exists()


@pytest.mark.slow
def test_unknown_command_exits_2():
    out = run("frobnicate")
    assert out.returncode == 2
