"""Fixtures of the evaluation-screen tests: the demo project, built once per session and copied
for each test (labels written by one test never reach another)."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture(scope="session")
def demo_file(tmp_path_factory):
    from ragjudge.services.transfer.demo import build_demo

    path = tmp_path_factory.mktemp("demo") / "demo.db"
    build_demo(str(path))
    return path


@pytest.fixture
def demo_db(demo_file, tmp_path) -> str:
    """The ``--db`` of a fresh copy of the demo project."""
    target = tmp_path / "demo.db"
    shutil.copyfile(demo_file, target)
    return str(target)


@pytest.fixture
def demo(demo_db):
    from ragjudge.services.project.database import Project

    project = Project.open(demo_db)
    yield project
    project.close()
