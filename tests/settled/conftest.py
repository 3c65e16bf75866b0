"""Fixtures of the settled and queue tests: the hand-made projects of ``settledkit``, each built
once a session with the ``ragjudge`` command and copied for every test that uses it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from settledkit import make_one_pair_project, make_p1_project, make_p3_project

from ragjudge.cli import common

MAKERS = {"p3": make_p3_project, "p1": make_p1_project, "one": make_one_pair_project}


@pytest.fixture(autouse=True)
def _no_project(monkeypatch):
    monkeypatch.setitem(common.CLI_STATE, "db", None)
    monkeypatch.delenv("RAGJUDGE_DB", raising=False)
    monkeypatch.delenv("RAGJUDGE_LEAN", raising=False)
    monkeypatch.setenv("RAGJUDGE_USER", "ref")


@pytest.fixture(scope="session")
def templates(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("settled-templates")
    return {name: Path(make(str(folder / f"{name}.db"))) for name, make in MAKERS.items()}


def copied(template: Path, folder: Path) -> str:
    """The template's database file (and its write-ahead log, if any) copied into ``folder``."""
    for path in template.parent.glob(template.name + "*"):
        if not path.name.endswith(".writelock"):
            shutil.copyfile(path, folder / path.name)
    return str(folder / template.name)


@pytest.fixture
def p3_db(templates, tmp_path) -> str:
    return copied(templates["p3"], tmp_path)


@pytest.fixture
def p1_db(templates, tmp_path) -> str:
    return copied(templates["p1"], tmp_path)


@pytest.fixture
def one_db(templates, tmp_path) -> str:
    return copied(templates["one"], tmp_path)
