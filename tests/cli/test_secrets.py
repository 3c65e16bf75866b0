"""A PostgreSQL URL's password never reaches an output: tables, JSON, messages, errors, screens.

The test server trusts every connection of ``postgres``, so any password is accepted and a
URL carrying one connects; a closed port gives the driver's connection error.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy.engine import make_url

from ragjudge.cli import main
from ragjudge.errors import ProjectError
from ragjudge.services.project.database import Project

PASSWORD = "s3cret-pw"


from clikit import no_project  # noqa: E402, F401 - autouse: no project named by the environment


def with_password(url: str, password: str = PASSWORD) -> str:
    return make_url(url).set(password=password).render_as_string(hide_password=False)


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert PASSWORD not in out and PASSWORD not in err
    return code, out, err


@pytest.fixture
def secret_db(pg_url) -> str:
    """A PostgreSQL project whose --db carries a password (the server ignores it)."""
    from projectkit import make_small_project

    from ragjudge.services.labels.events import record_label

    db = with_password(pg_url)
    with make_small_project(db) as project:
        record_label(project, annotator="ann", query_id="q1", chunk_id="c05", grade=2)
    return db


# -- without a server: the driver's connection errors -------------------------------------------

@pytest.mark.parametrize("password", [PASSWORD, f"pa ss{PASSWORD}", f"pa/ss{PASSWORD}", f"{PASSWORD}@x"])
def test_connection_error_masks_the_password(capsys, password):
    url = with_password("postgresql+psycopg://postgres@127.0.0.1:1/ragjudge_test", password)
    url = url.replace("%20", " ").replace("%2F", "/").replace("%40", "@")  # as people type them
    code, out, err = run_cli(capsys, "--db", url, "status")
    assert code == 2 and out == ""
    assert err.startswith("ragjudge: postgresql+psycopg://postgres:***@") and err.count("\n") == 1
    assert "could not use the database" in err and "127.0.0.1" in err


@pytest.mark.parametrize("url", [
    f"postgresql+psycopg://postgres:{PASSWORD}@127.0.0.1:notaport/x",
    f"postgresql+nodriver://postgres:{PASSWORD}@127.0.0.1/x",
    f"postgresql+psycopg://postgres:{PASSWORD}@127.0.0.1:1/x?sslmode=bogus",
    f"postgresql+psycopg://postgres@127.0.0.1:1/x?password={PASSWORD}",
])
def test_bad_urls_mask_the_password(capsys, url):
    code, out, err = run_cli(capsys, "--db", url, "status")
    assert code == 2 and out == "" and err.startswith("ragjudge: ") and err.count("\n") == 1


def test_project_error_message_is_masked_where_it_is_made():
    with pytest.raises(ProjectError) as caught:
        Project.open(f"postgresql+psycopg://postgres:{PASSWORD}@127.0.0.1:1/x")
    assert PASSWORD not in str(caught.value) and "postgres:***@127.0.0.1:1/x" in str(caught.value)


def test_demo_messages_mask_the_password(capsys, monkeypatch):
    from ragjudge.services.transfer import demo

    monkeypatch.setattr(demo, "build_demo", lambda db, **_: True)
    url = f"postgresql+psycopg://postgres:{PASSWORD}@127.0.0.1:1/demo"
    code, _, err = run_cli(capsys, "demo", "--no-tui", "--db", url)
    assert code == 0
    assert "Built the demo project at" in err and "postgres:***@127.0.0.1:1/demo" in err


# -- with the server ------------------------------------------------------------------------

@pytest.mark.postgres
def test_init_message_masks_the_password(capsys, pg_url):
    db = with_password(pg_url)
    code, out, err = run_cli(capsys, "--db", db, "init", "--name", "team")
    assert code == 0 and "Created project team at postgresql+psycopg://postgres:***@" in " ".join(out.split())
    code, out, err = run_cli(capsys, "--db", db, "init")
    assert code == 2 and "postgres:***@" in err and "already a ragjudge project" in err


@pytest.mark.postgres
def test_status_table_and_json_mask_the_password(capsys, secret_db):
    code, out, _ = run_cli(capsys, "--db", secret_db, "status")
    assert code == 0 and "postgres:***@" in out
    code, out, _ = run_cli(capsys, "--db", secret_db, "status", "--format", "json")
    assert code == 0 and json.loads(out)["db"].startswith("postgresql+psycopg://postgres:***@")


@pytest.mark.postgres
def test_eval_and_verify_json_mask_the_password(capsys, secret_db):
    code, out, _ = run_cli(capsys, "--db", secret_db, "verify", "--format", "json")
    assert code in (0, 1) and json.loads(out)["db"].startswith("postgresql+psycopg://postgres:***@")
    code, out, err = run_cli(capsys, "--db", secret_db, "eval", "--format", "json")
    assert code == 0, err
    assert "postgres:***@" in json.loads(out)["qrels"]


@pytest.mark.postgres
def test_a_missing_database_on_the_server(capsys, pg_url):
    db = with_password(pg_url).rsplit("/", 1)[0] + "/rj_no_such_database"
    code, _, err = run_cli(capsys, "--db", db, "status")
    assert code == 2 and "postgres:***@" in err and "rj_no_such_database" in err
    assert err.count("\n") == 1


@pytest.mark.postgres
def test_home_screen_masks_the_password(secret_db):
    import asyncio

    from drawn import drawn_text

    from ragjudge.tui import make_app

    async def scenario() -> str:
        with Project.open(secret_db) as project:
            app = make_app(project)
            async with app.run_test(size=(160, 40)) as pilot:
                for _ in range(20):
                    await pilot.pause()
                    if "pool (top" in drawn_text(app):
                        break
                return drawn_text(app)

    text = asyncio.run(scenario())
    assert "postgres:***@" in text and PASSWORD not in text
