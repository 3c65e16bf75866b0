"""The roster: annotators with roles, status and tokens (ragjudge.services.access.roster and the
``ragjudge annotators`` command)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from projectkit import make_small_project, rights

from ragjudge.cli import main
from ragjudge.errors import UsageError
from ragjudge.services.access import roster
from ragjudge.services.labels.events import record_label, skip_pair


@pytest.fixture
def project(tmp_path):
    with make_small_project(str(tmp_path / "p.db")) as project:
        for who, grade in (("ana", 2), ("ben", 1)):
            record_label(project, annotator=who, query_id="q1", chunk_id="c05", grade=grade)
        yield project


def test_a_project_without_a_lead_lets_anyone_known_lead(project):
    assert rights(project, "ana").lead and rights(project, "stranger").lead
    rights(project, "ben").require_lead("adjudicate")  # no lead yet: allowed
    nobody = rights(project, None)
    assert not nobody.lead, "an unknown identity is never a lead, even without leads"
    with pytest.raises(UsageError, match="Only a lead may adjudicate.*not known"):
        nobody.require_lead("adjudicate")


def test_once_there_is_a_lead_only_leads_lead(project):
    roster.add(project, "dora", role="lead", access=rights(project))
    assert rights(project, "dora").lead
    assert not rights(project, "ana").lead
    assert not rights(project, "stranger").lead
    with pytest.raises(UsageError, match="Only a lead may adjudicate.*'ana' is not one.*dora"):
        rights(project, "ana").require_lead("adjudicate")
    roster.retire(project, "dora", access=rights(project))
    assert rights(project, "ana").lead, "a retired lead leads no more: nobody leads again"


def test_members_count_current_grades(project):
    record_label(project, annotator="ana", query_id="q2", chunk_id="c07", grade=0)
    skip_pair(project, annotator="ana", query_id="q2", chunk_id="c07")
    found = {m.name: m for m in roster.members(project)}
    assert found["ana"].labels == 1 and found["ana"].queries == 1
    assert found["ben"].labels == 1
    assert found["ana"].role == "annotator" and found["ana"].kind == "human"


def test_rename_moves_every_record_of_the_name(project, tmp_path):
    roster.rename(project, "ana", "Ana Lima", access=rights(project))
    db = sqlite3.connect(tmp_path / "p.db")
    assert db.execute("SELECT count(*) FROM labels WHERE annotator = 'ana'").fetchone() == (0,)
    assert db.execute("SELECT count(*) FROM labels WHERE annotator = 'Ana Lima'").fetchone() == (1,)
    assert db.execute("SELECT count(*) FROM annotators WHERE name = 'ana'").fetchone() == (0,)
    with pytest.raises(UsageError, match="already an annotator 'ben'"):
        roster.rename(project, "Ana Lima", "ben", access=rights(project))
    with pytest.raises(UsageError, match="no annotator 'nobody'"):
        roster.rename(project, "nobody", "x", access=rights(project))


def test_a_token_is_stored_only_as_its_hash_and_a_new_one_revokes_the_old(project, tmp_path):
    from ragjudge.services.access.identity import from_token

    _, first = roster.add(project, "ana", token=True, access=rights(project))
    assert first is not None and from_token(project, first).name == "ana"
    stored = sqlite3.connect(tmp_path / "p.db").execute(
        "SELECT token_hash FROM annotators WHERE name = 'ana'").fetchone()[0]
    assert stored == hashlib.sha256(first.encode()).hexdigest()
    assert first not in (tmp_path / "p.db").read_bytes().decode("latin-1")
    second = roster.issue_token(project, "ana", access=rights(project))
    assert from_token(project, first) is None
    assert from_token(project, second).name == "ana" and from_token(project, second).how == "token"
    assert from_token(project, "") is None and from_token(project, "rj_wrong") is None
    roster.retire(project, "ana", access=rights(project))
    assert from_token(project, second) is None, "a retired annotator's token stops working"


def test_nearest_name_finds_case_and_spelling_slips(project):
    assert roster.nearest_name(project, "Ana") == "ana"
    assert roster.nearest_name(project, "ANA ") == "ana"
    assert roster.nearest_name(project, "benn") == "ben"
    assert roster.nearest_name(project, "ana") is None
    assert roster.nearest_name(project, "zoltan") is None


def test_a_closed_roster_refuses_new_names_and_retired_ones(project):
    roster.check_can_label(project, "newcomer")  # open roster: allowed
    roster.set_roster(project, "closed", access=rights(project))
    with pytest.raises(UsageError, match="roster is closed.*'ana'"):
        roster.check_can_label(project, "Ana")
    roster.check_can_label(project, "ana")
    roster.retire(project, "ben", access=rights(project))
    with pytest.raises(UsageError, match="retired"):
        roster.check_can_label(project, "ben")


@pytest.mark.slow
def test_the_command_adds_lists_and_prints_a_token_once(project, tmp_path, capsys):
    db = str(tmp_path / "p.db")
    assert main(["--db", db, "annotators", "add", "dora", "--role", "lead", "--token", "--format", "json"]) == 0
    added = json.loads(capsys.readouterr().out)
    assert added["name"] == "dora" and added["role"] == "lead" and added["token"].startswith("rj_")
    assert main(["--db", db, "annotators", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)["annotators"]
    assert [m["name"] for m in listed] == ["dora", "ana", "ben"]
    assert listed[0]["has_token"] is True and "token" not in listed[0]
    assert added["token"] not in json.dumps(listed)
    assert {m["name"]: m["labels"] for m in listed} == {"dora": 0, "ana": 1, "ben": 1}


@pytest.mark.parametrize("argv, message", [
    (["annotators", "fire", "ana"], "one of list, add"),
    (["annotators", "add"], "takes 1 name"),
    (["annotators", "role", "ana", "boss"], "annotator, lead"),
    (["annotators", "retire", "ana", "--token"], "--token goes with 'add'"),
])
def test_mistakes_are_one_paragraph_and_change_nothing(project, tmp_path, capsys, argv, message):
    db = str(tmp_path / "p.db")
    before = Path(db).read_bytes()
    assert main(["--db", db, *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert Path(db).read_bytes() == before
