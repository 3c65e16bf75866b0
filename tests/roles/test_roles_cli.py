"""Roles on the command line: once a project has a lead, only leads adjudicate, assign, manage
the roster and print other annotators' labels; everyone else gets one paragraph, exit 2 and
an unchanged project."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from projectkit import make_small_project

from ragjudge.cli import main
from ragjudge.services.access import roster
from ragjudge.services.access import visibility
from ragjudge.services.labels.events import record_label


@pytest.fixture
def db(tmp_path):
    """q1/c05 disputed by ana (2) and ben (0); ben also graded q1/c06, which ana has not; dora
    is the lead."""
    path = str(tmp_path / "p.db")
    with make_small_project(path) as project:
        record_label(project, annotator="ana", query_id="q1", chunk_id="c05", grade=2)
        record_label(project, annotator="ben", query_id="q1", chunk_id="c05", grade=0)
        record_label(project, annotator="ben", query_id="q1", chunk_id="c06", grade=3)
        roster.add(project, "dora", role="lead")
    return path


def _count(db: str, table: str) -> int:
    return sqlite3.connect(db).execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def _refused(capsys, argv: list[str], db: str, *, says: str = "Only a lead") -> str:
    before = Path(db).read_bytes()
    assert main(["--db", db, *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert Path(db).read_bytes() == before, "a refused command changed the project"
    return err


ADJUDICATE = ["adjudicate", "--query", "q1", "--chunk", "c05", "--grade", "1", "--reason", "fits"]


def test_a_non_lead_cannot_adjudicate(db, capsys):
    err = _refused(capsys, [*ADJUDICATE, "--by", "ben"], db)
    assert "'ben' is not one" in err and "dora" in err
    assert _count(db, "adjudications") == 0


def test_adjudicate_without_by_is_the_login_name(db, capsys, monkeypatch):
    monkeypatch.setattr("getpass.getuser", lambda: "ana")
    _refused(capsys, ADJUDICATE, db)
    monkeypatch.setattr("getpass.getuser", lambda: "dora")
    assert main(["--db", db, *ADJUDICATE]) == 0
    assert "adjudicated 1 by dora" in capsys.readouterr().out


def test_a_lead_adjudicates(db, capsys):
    assert main(["--db", db, *ADJUDICATE, "--by", "dora"]) == 0
    assert _count(db, "adjudications") == 1


def test_without_a_lead_anyone_adjudicates(tmp_path, capsys):
    path = str(tmp_path / "nolead.db")
    with make_small_project(path) as project:
        record_label(project, annotator="ana", query_id="q1", chunk_id="c05", grade=2)
    assert main(["--db", path, *ADJUDICATE, "--by", "ben"]) == 0
    assert _count(path, "adjudications") == 1


def test_only_a_lead_assigns(db, capsys, monkeypatch):
    argv = ["assign", "--annotators", "ana,ben", "--depth", "2"]
    _refused(capsys, [*argv, "--by", "ana"], db)
    monkeypatch.setattr("getpass.getuser", lambda: "ben")
    _refused(capsys, argv, db)
    assert _count(db, "assignments") == 0
    assert main(["--db", db, *argv, "--by", "dora"]) == 0
    assert _count(db, "assignments") > 0


@pytest.mark.parametrize("argv", [
    ["annotators", "add", "eve"],
    ["annotators", "add", "ben", "--role", "lead"],
    ["annotators", "rename", "ana", "Ana"],
    ["annotators", "retire", "dora"],
    ["annotators", "role", "ana", "lead"],
    ["annotators", "token", "ana"],
    ["annotators", "roster", "closed"],
    ["annotators", "blind", "off"],
])
def test_only_a_lead_manages_the_roster(db, capsys, argv):
    _refused(capsys, [*argv, "--by", "ana"], db)


def test_a_lead_manages_the_roster(db, capsys):
    assert main(["--db", db, "annotators", "role", "ana", "lead", "--by", "dora"]) == 0
    assert main(["--db", db, "annotators", "blind", "off", "--by", "dora"]) == 0
    with _open(db) as project:
        assert roster.member(project, "ana").is_lead
        assert not visibility.is_blind(project)


def _open(db: str):
    from ragjudge.services.project.database import Project

    return Project.open(db)


def test_the_first_lead_may_be_added_by_anyone(tmp_path, capsys, monkeypatch):
    path = str(tmp_path / "fresh.db")
    make_small_project(path).close()
    monkeypatch.setattr("getpass.getuser", lambda: "someone")
    assert main(["--db", path, "annotators", "add", "dora", "--role", "lead"]) == 0
    capsys.readouterr()
    _refused(capsys, ["annotators", "add", "eve", "--role", "lead"], path)
    assert main(["--db", path, "annotators", "add", "eve", "--by", "dora"]) == 0


@pytest.mark.parametrize("argv", [
    ["disputes"],
    ["adjudicate", "--query", "q1", "--chunk", "c05", "--show"],
    ["export", "labels"],
    ["export", "answer-labels"],
    ["export", "qrels", "--rule", "annotator:ben"],
])
def test_only_a_lead_prints_other_annotators_labels(db, capsys, argv):
    err = _refused(capsys, [*argv, "--by", "ana"], db)
    assert "ben" not in err.replace("'ben'", "")  # no grade of ben's is printed
    assert main(["--db", db, *argv, "--by", "dora"]) == 0
    if argv[0] != "export" or argv[1] == "labels":
        assert "ben" in capsys.readouterr().out


def test_an_annotator_exports_their_own_annotator_qrels(db, capsys):
    assert main(["--db", db, "export", "qrels", "--rule", "annotator:ana", "--by", "ana"]) == 0
    assert "c05" in capsys.readouterr().out


def test_with_blind_off_annotators_see_the_disputes_but_still_do_not_adjudicate(db, capsys):
    assert main(["--db", db, "annotators", "blind", "off", "--by", "dora"]) == 0
    assert "Not blind" in capsys.readouterr().out
    assert main(["--db", db, "disputes", "--by", "ana", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and rows[0]["grades"] == {"ana": 2, "ben": 0}
    _refused(capsys, [*ADJUDICATE, "--by", "ana"], db)
