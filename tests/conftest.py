"""Fixtures shared by every test folder.

- ``project_db``: the path (str) of a small SQLite project in ``tmp_path`` (scale 0-3, 5 queries
  q1..q5, 20 chunks c01..c20, one run ``bm25`` of depth 10 per query); ``project`` opens it.
- ``pg_url``: a fresh, empty PostgreSQL database on the server named by ``RAGJUDGE_TEST_PG``
  (skipped with a reason when the variable is unset; ``.ci/run`` sets it), dropped afterwards.
- ``any_db``: parametrized over ``sqlite`` and ``postgres`` (the latter marked ``postgres``): the
  ``--db`` string of an empty database; pass it to ``make_small_project``.
"""

from __future__ import annotations

import os
import sys
import uuid

import pytest

PG_ENV = "RAGJUDGE_TEST_PG"


from chromium import browser  # noqa: E402, F401 - the browser tests' fixture: one Chromium per module
from projectkit import make_small_project  # noqa: E402 - re-exported for fixtures


def pytest_configure(config) -> None:
    """ragjudge's modules compiled once, before any test starts a ``ragjudge`` process: an
    installed package is compiled by pip, an editable one is not, and where the environment sets
    PYTHONDONTWRITEBYTECODE every such process would compile them again (about 13% of the
    processor time of the tests that start them). Only the controller does it, before the
    workers start. Bytecode lands in ``__pycache__`` folders, which git ignores."""
    # Test modules too: pytest keeps each one's rewritten assertions beside it only where bytecode
    # may be written, and otherwise rewrites all 200 again in every worker (10 s of processor each).
    sys.dont_write_bytecode = False
    if hasattr(config, "workerinput"):
        return
    import compileall

    import ragjudge

    compileall.compile_dir(os.path.dirname(ragjudge.__file__), quiet=2)


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: one and a half workers per processor (3 on 2), not one. Many tests spend
    much of their time waiting, on a ``ragjudge`` process, a server, a browser or the app's
    timers, so with one worker per processor they stood idle about a fifth of the time; on 2
    processors the suite took 7 min 41 s with 3 workers against 8 min 49 s with 2."""
    count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(2, round(count * 1.5))


@pytest.fixture
def project_db(tmp_path) -> str:
    db = str(tmp_path / "project.db")
    make_small_project(db).close()
    return db


@pytest.fixture
def project(project_db):
    from ragjudge.services.project.database import Project

    with Project.open(project_db) as opened:
        yield opened


@pytest.fixture
def pg_url() -> str:
    """A fresh empty database on the test PostgreSQL server; dropped after the test."""
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(f"{PG_ENV} is not set: no PostgreSQL server to test against "
                    "(.ci/run starts one with .ci/postgres.sh)")
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"rj_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(base).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_db(request, tmp_path) -> str:
    """The ``--db`` of an empty database: a SQLite file path, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "any.db")
    return request.getfixturevalue("pg_url")
