"""Fixtures of the answer tests: ``answers_db`` is the project of :mod:`answerkit` (answers of
two runs with two annotators' judgments); ``bare_answers_db`` the same without judgments. Each is
built once per session and copied for every test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from answerkit import build
from projectkit import make_small_project


def _template(folder: Path, judgments: bool) -> Path:
    db = folder / "template.db"
    make_small_project(str(db)).close()
    build(str(db), folder, judgments=judgments)
    from ragjudge.services.project.database import Project

    with Project.open(str(db)) as project:  # fold the write-ahead log into the file
        with project.engine.connect() as connection:
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    return db


@pytest.fixture(scope="session")
def _answers_template(tmp_path_factory) -> Path:
    return _template(tmp_path_factory.mktemp("answers-template"), True)


@pytest.fixture(scope="session")
def _bare_template(tmp_path_factory) -> Path:
    return _template(tmp_path_factory.mktemp("bare-template"), False)


@pytest.fixture
def answers_db(tmp_path, _answers_template) -> str:
    db = tmp_path / "answers.db"
    shutil.copyfile(_answers_template, db)
    return str(db)


@pytest.fixture
def bare_answers_db(tmp_path, _bare_template) -> str:
    db = tmp_path / "bare.db"
    shutil.copyfile(_bare_template, db)
    return str(db)


@pytest.fixture(autouse=True)
def _no_default_project(monkeypatch):
    """``--db`` given to one command must not become another test's default project."""
    from ragjudge.cli import common

    monkeypatch.setitem(common.CLI_STATE, "db", None)
    monkeypatch.delenv("RAGJUDGE_DB", raising=False)


@pytest.fixture(scope="session")
def _demo_file(tmp_path_factory) -> Path:
    from ragjudge.services.transfer.demo import build_demo

    path = tmp_path_factory.mktemp("answers-demo") / "demo.db"
    build_demo(str(path))
    return path


@pytest.fixture
def demo_copy(_demo_file, tmp_path):
    """A function making fresh copies of the demo project (its ``--db`` path)."""
    made = iter(range(100))

    def copy() -> str:
        target = tmp_path / f"demo-{next(made)}.db"
        shutil.copyfile(_demo_file, target)
        return str(target)

    return copy
