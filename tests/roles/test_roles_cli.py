"""Roles on the command line: once a project has a lead, only leads adjudicate, assign, manage
the roster and print other annotators' labels; everyone else gets one paragraph, exit 2 and
an unchanged project."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from projectkit import make_small_project, rights

from ragjudge.cli import main
from ragjudge.services.access import roster
from ragjudge.services.access import visibility
from ragjudge.services.labels.events import record_label

pytestmark = pytest.mark.slow


@pytest.fixture
def db(tmp_path):
    """q1/c05 disputed by ana (2) and ben (0); q1/c06 disputed by ben (3) and cy (1), which ana
    has not judged; dora is the lead."""
    path = str(tmp_path / "p.db")
    with make_small_project(path) as project:
        record_label(project, annotator="ana", query_id="q1", chunk_id="c05", grade=2)
        record_label(project, annotator="ben", query_id="q1", chunk_id="c05", grade=0)
        record_label(project, annotator="ben", query_id="q1", chunk_id="c06", grade=3)
        record_label(project, annotator="cy", query_id="q1", chunk_id="c06", grade=1)
        roster.add(project, "dora", role="lead", access=rights(project))
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


def _json(capsys, db: str, *argv: str):
    assert main(["--db", db, *argv]) == 0
    out = capsys.readouterr().out
    return [json.loads(line) for line in out.splitlines()] if argv[0] == "export" else json.loads(out)


def test_disputes_show_an_annotator_the_pairs_they_judged_and_a_lead_all(db, capsys):
    ana = _json(capsys, db, "disputes", "--format", "json", "--by", "ana")
    assert [(r["chunk_id"], r["grades"]) for r in ana] == [("c05", {"ana": 2, "ben": 0})]
    dora = _json(capsys, db, "disputes", "--format", "json", "--by", "dora")
    assert {r["chunk_id"] for r in dora} == {"c05", "c06"}


def test_a_pair_s_labels_show_an_annotator_only_what_they_may_see(db, capsys):
    show = ["adjudicate", "--query", "q1", "--chunk", "c06", "--show", "--format", "json"]
    ana = _json(capsys, db, *show, "--by", "ana")
    assert ana["labels"] == [] and ana["adjudications"] == []
    dora = _json(capsys, db, *show, "--by", "dora")
    assert {lab["annotator"]: lab["grade"] for lab in dora["labels"]} == {"ben": 3, "cy": 1}
    judged = _json(capsys, db, "adjudicate", "--query", "q1", "--chunk", "c05", "--show",
                   "--format", "json", "--by", "ana")
    assert {lab["annotator"]: lab["grade"] for lab in judged["labels"]} == {"ana": 2, "ben": 0}


def test_an_annotator_exports_their_own_labels_and_a_lead_everyone_s(db, capsys):
    assert {r["annotator"] for r in _json(capsys, db, "export", "labels", "--by", "ana")} == {"ana"}
    everyone = _json(capsys, db, "export", "labels", "--by", "dora")
    assert {r["annotator"] for r in everyone} == {"ana", "ben", "cy"}


@pytest.mark.parametrize("argv", [
    ["export", "qrels", "--rule", "annotator:ben"],
    ["export", "qrels"],
    ["export", "run", "bm25"],
    ["export", "labels", "--llm-audit"],
])
def test_only_a_lead_exports_the_gold_a_run_or_another_s_grades(db, capsys, argv):
    err = _refused(capsys, [*argv, "--by", "ana"], db)
    assert "ben" not in err.replace("annotator:ben", "")  # no grade of ben's is printed
    assert main(["--db", db, *argv, "--by", "dora"]) == 0


def test_an_annotator_exports_their_own_annotator_qrels(db, capsys):
    assert main(["--db", db, "export", "qrels", "--rule", "annotator:ana", "--by", "ana"]) == 0
    assert "c05" in capsys.readouterr().out


def test_with_blind_off_annotators_see_the_disputes_but_still_do_not_adjudicate(db, capsys):
    assert main(["--db", db, "annotators", "blind", "off", "--by", "dora"]) == 0
    assert "Not blind" in capsys.readouterr().out
    assert main(["--db", db, "disputes", "--by", "ana", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["chunk_id"]: r["grades"] for r in rows} == {"c05": {"ana": 2, "ben": 0},
                                                            "c06": {"ben": 3, "cy": 1}}
    _refused(capsys, [*ADJUDICATE, "--by", "ana"], db)
