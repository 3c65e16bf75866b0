"""``ragjudge review``: the list as a table and as JSON, its filters, and a lead's answers."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from projectkit import rights

from ragjudge.cli import main
from ragjudge.services.access import roster
from ragjudge.services.labels.events import flag_pair


def run(tmp_path, capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["--db", str(tmp_path / "p.db"), *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def wide(monkeypatch) -> None:
    """A console 200 columns wide, whatever the terminal (or its absence) says."""
    from rich.console import Console

    import ragjudge.cli.review as command

    monkeypatch.setattr(command, "console", Console(width=200, highlight=False, soft_wrap=False,
                                                    emoji=False))


def reviews(tmp_path) -> list[tuple]:
    return sqlite3.connect(tmp_path / "p.db").execute(
        "SELECT annotator, action, text, resolves FROM pair_marks WHERE kind = 'review' "
        "ORDER BY id").fetchall()


@pytest.mark.slow
def test_the_table_lists_every_open_flag_and_comment(project, tmp_path, capsys, monkeypatch):
    wide(monkeypatch)
    code, out, _ = run(tmp_path, capsys, "review")
    assert code == 0
    assert "open flags and comments (3)" in out
    lines = [line for line in out.splitlines() if line.startswith("│ q")]
    assert [line.split("│")[1:4] for line in lines] == [
        [" q1    ", " c05   ", " ana       "], [" q2    ", " c08   ", " ana       "],
        [" q3    ", " c11   ", " ben       "]]
    assert "⚑ is this about refunds?" in out and "see the FAQ" in out
    assert [line.split("│")[-2].strip() for line in lines] == ["open", "open", "open"]


def test_the_json_carries_every_field(project, tmp_path, capsys):
    code, out, _ = run(tmp_path, capsys, "review", "--format", "json")
    assert code == 0
    items = json.loads(out)["items"]
    assert [set(i) >= {"query_id", "chunk_id", "annotator", "flagged", "note", "comment",
                       "created_at", "resolved"} for i in items] == [True] * 3
    assert items[0] | {"created_at": None} == {
        "query_id": "q1", "chunk_id": "c05", "annotator": "ana", "flagged": True,
        "note": "is this about refunds?", "comment": None, "created_at": None, "resolved": None,
        "reviews": []}
    assert items[0]["created_at"].startswith("20")


@pytest.mark.slow
def test_filters(project, tmp_path, capsys):
    _, out, _ = run(tmp_path, capsys, "review", "--annotator", "ben", "--format", "json")
    assert [(i["query_id"], i["annotator"]) for i in json.loads(out)["items"]] == [("q3", "ben")]
    _, out, _ = run(tmp_path, capsys, "review", "--query", "q2", "--format", "json")
    assert [(i["query_id"], i["annotator"]) for i in json.loads(out)["items"]] == [("q2", "ana")]
    code, out, err = run(tmp_path, capsys, "review", "--annotator", "nobody")
    assert code == 2 and out == "" and "no annotator 'nobody'" in err


@pytest.mark.slow
def test_resolve_and_send_back_from_the_command_line(project, tmp_path, capsys, monkeypatch):
    code, out, _ = run(tmp_path, capsys, "review", "resolve", "--query", "q1", "--chunk", "c05",
                       "--annotator", "ana", "--note", "refunds count", "--by", "dora")
    assert code == 0 and "Resolved ana's flag on q1 / c05" in out
    code, out, _ = run(tmp_path, capsys, "review", "send-back", "--query", "q3", "--chunk", "c11",
                       "--by", "dora", "--format", "json")
    assert code == 0 and json.loads(out)["resolved"]["action"] == "send-back"
    marks = sqlite3.connect(tmp_path / "p.db").execute(
        "SELECT id, annotator, query_id FROM pair_marks WHERE kind = 'flag'").fetchall()
    flag_of = {(who, q): id_ for id_, who, q in marks}
    assert reviews(tmp_path) == [("dora", "resolve", "refunds count", flag_of[("ana", "q1")]),
                                 ("dora", "send-back", None, flag_of[("ben", "q3")])]
    _, out, _ = run(tmp_path, capsys, "review", "--format", "json")
    assert [i["query_id"] for i in json.loads(out)["items"]] == ["q2"]
    _, out, _ = run(tmp_path, capsys, "review", "--all", "--format", "json")
    resolved = {i["query_id"]: i["resolved"] for i in json.loads(out)["items"]}
    assert resolved["q1"] | {"at": None} == {"by": "dora", "action": "resolve",
                                             "note": "refunds count", "at": None}
    assert resolved["q2"] is None and resolved["q3"]["action"] == "send-back"
    wide(monkeypatch)
    _, out, _ = run(tmp_path, capsys, "review", "--all")
    assert "resolve by dora: refunds count" in out and "send-back by dora" in out


@pytest.mark.slow
def test_a_non_lead_is_refused_with_exit_2_and_nothing_written(project, tmp_path, capsys):
    roster.add(project, "dora", role="lead", access=rights(project))
    before = Path(tmp_path / "p.db").read_bytes()
    code, out, err = run(tmp_path, capsys, "review", "resolve", "--query", "q1", "--chunk", "c05",
                         "--annotator", "ana", "--by", "ben")
    assert code == 2 and out == ""
    assert "Only a lead may resolve flags" in err and "dora" in err and "Traceback" not in err
    code, _, err = run(tmp_path, capsys, "review", "send-back", "--query", "q1", "--chunk", "c05",
                       "--annotator", "ana", "--by", "ben")
    assert code == 2 and "Only a lead may resolve flags" in err
    assert reviews(tmp_path) == []
    assert hashlib.sha256(Path(tmp_path / "p.db").read_bytes()).digest() == \
        hashlib.sha256(before).digest()
    assert run(tmp_path, capsys, "review", "resolve", "--query", "q1", "--chunk", "c05",
               "--annotator", "ana", "--by", "dora")[0] == 0
    assert [r[:2] for r in reviews(tmp_path)] == [("dora", "resolve")]


@pytest.mark.parametrize("argv, message", [
    (["review", "delete"], "one of list, resolve, send-back"),
    (["review", "resolve", "--query", "q1"], "needs --chunk"),
    (["review", "resolve", "--query", "q1", "--chunk", "c05", "--all"], "--all goes with the list"),
    (["review", "--note", "x"], "--note go with"),
    (["review", "--format", "csv"], "--format is table or json"),
    (["review", "resolve", "--query", "q2", "--chunk", "c05", "--by", "dora"], "nobody has a flag"),
    (["review", "send-back", "--query", "q1", "--chunk", "c05", "--annotator", "ben", "--by", "d"],
     "'ben' has a flag"),
])
def test_mistakes_are_one_paragraph_and_change_nothing(project, tmp_path, capsys, argv, message):
    flag_pair(project, annotator="ana", query_id="q2", chunk_id="c08", note=None)
    code, out, err = run(tmp_path, capsys, *argv)
    assert code == 2 and out == ""
    assert message in " ".join(err.split()) and "Traceback" not in err
    assert reviews(tmp_path) == []


@pytest.mark.slow
def test_text_from_data_reaches_the_terminal_as_text(project, tmp_path, capsys, monkeypatch):
    wide(monkeypatch)
    flag_pair(project, annotator="ana", query_id="q4", chunk_id="c13", note="[bold]x\x1b[31m")
    _, out, _ = run(tmp_path, capsys, "review", "--query", "q4")
    assert "\x1b" not in out and "⚑ [bold]x␛[31m" in out
