"""Answers with sentences and citations, and judgments of answers ("answer-labels"), in and out of
a project through the real command: what is stored, round trips, and bad input that exits 2
naming the file, line and field and changes nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from answerkit import JUDGMENTS, jsonl
from clikit import run_cli
from ragjudge.formats.sentences import split_sentences


def rows(db: str, sql: str) -> list[tuple]:
    connection = sqlite3.connect(db)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


def snapshot(db: str) -> dict:
    connection = sqlite3.connect(db)
    try:
        tables = [r[0] for r in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: sorted(map(repr, connection.execute(f'SELECT * FROM "{t}"'))) for t in tables}
    finally:
        connection.close()


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


# -- splitting plain text ------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "sentences"), [
    ("Report damage within 48 hours. Hidden damage: 7 days.",
     ["Report damage within 48 hours.", "Hidden damage: 7 days."]),
    ("It costs €7.50 per parcel, e.g. abroad. Yes!", ["It costs €7.50 per parcel, e.g. abroad.", "Yes!"]),
    ("Visible damage: 48 hours. [1] Hidden: 7 days. [2][3]",
     ["Visible damage: 48 hours. [1]", "Hidden: 7 days. [2][3]"]),
    ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
    ("First line\nsecond line.", ["First line", "second line."]),
    ("東京です。次です！", ["東京です。", "次です！"]),
    ("   ", []),
    ("What now? 2 options remain", ["What now?", "2 options remain"]),
])
def test_plain_text_is_split_into_sentences(text, sentences):
    assert split_sentences(text) == sentences


# -- answers -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_sentences_their_citations_and_the_answers_citations_are_stored(bare_answers_db):
    db = bare_answers_db
    answers = {run: (aid, text) for aid, run, text in rows(
        db, "SELECT id, run, text FROM answers WHERE query_id = 'q1'")}
    bm25, text = answers["bm25"]
    assert text == "Parcels ship in five days. Returns are free. Thanks for asking."
    assert rows(db, f"SELECT position, text FROM answer_sentences WHERE answer_id = {bm25} "
                    "ORDER BY position") == [(0, "Parcels ship in five days."),
                                             (1, "Returns are free."), (2, "Thanks for asking.")]
    assert rows(db, f"SELECT sentence, chunk_id, position FROM answer_citations WHERE answer_id = {bm25} "
                    "ORDER BY sentence, position") == [(0, "c05", 0), (0, "c06", 1), (1, "c07", 0)]
    # the answer's own citations (what Attribution reads): every sentence's, in order
    assert rows(db, f"SELECT chunk_id, position FROM citations WHERE answer_id = {bm25} "
                    "ORDER BY position") == [("c05", 0), ("c06", 1), ("c07", 2)]
    (plain,), = rows(db, "SELECT id FROM answers WHERE query_id = 'q2'")
    assert rows(db, f"SELECT text FROM answer_sentences WHERE answer_id = {plain} ORDER BY position") \
        == [("It ships.",), ("It is free.",)]
    assert rows(db, f"SELECT count(*) FROM answer_citations WHERE answer_id = {plain}") == [(0,)]
    assert rows(db, f"SELECT chunk_id FROM citations WHERE answer_id = {plain}") == [("c08",)]


def test_importing_the_same_answers_twice_changes_nothing(bare_answers_db, tmp_path, capsys):
    from answerkit import ANSWERS

    before = snapshot(bare_answers_db)
    path = write(tmp_path / "again.jsonl", jsonl(ANSWERS))
    code, _, err = run_cli(capsys, "--db", bare_answers_db, "import", "answers", path)
    assert code == 0 and "0 added" in err and "3 already in the project" in err
    assert snapshot(bare_answers_db) == before


@pytest.mark.slow
def test_a_changed_answer_needs_replace_and_then_replaces_its_sentences(answers_db, tmp_path, capsys):
    changed = {"query_id": "q1", "run": "bm25", "sentences": [
        {"text": "Parcels ship in five days.", "citations": ["c05"]}]}
    path = write(tmp_path / "changed.jsonl", jsonl([changed]))
    before = snapshot(answers_db)
    code, _, err = run_cli(capsys, "--db", answers_db, "import", "answers", path)
    assert code == 2 and path in err and "line 1" in err and "sentences" in err and "--replace" in err
    assert snapshot(answers_db) == before
    code, _, err = run_cli(capsys, "--db", answers_db, "import", "answers", path, "--replace")
    assert code == 0 and "1 updated" in err and "had judgments" in " ".join(err.split())
    (bm25,), = rows(answers_db, "SELECT id FROM answers WHERE query_id = 'q1' AND run = 'bm25'")
    assert rows(answers_db, f"SELECT text FROM answer_sentences WHERE answer_id = {bm25}") == [
        ("Parcels ship in five days.",)]
    assert rows(answers_db, f"SELECT sentence, chunk_id FROM answer_citations WHERE answer_id = {bm25}") \
        == [(0, "c05")]
    # judgments are events: none is deleted by a replaced answer
    assert rows(answers_db, "SELECT count(*) FROM answer_judgments") == [(len(JUDGMENTS),)]


def test_answers_read_from_csv_with_a_json_list_of_sentences(project_db, tmp_path, capsys):
    sentences = json.dumps([{"text": "Yes.", "citations": ["c05"]}, {"text": "Really."}])
    path = tmp_path / "answers.csv"
    with path.open("w", encoding="utf-8", newline="") as fh:
        import csv

        writer = csv.writer(fh)
        writer.writerow(["query_id", "run", "sentences"])
        writer.writerow(["q1", "bm25", sentences])
    code, _, err = run_cli(capsys, "--db", project_db, "import", "answers", str(path))
    assert code == 0, err
    assert rows(project_db, "SELECT s.position, s.text FROM answer_sentences s ORDER BY position") == [
        (0, "Yes."), (1, "Really.")]
    assert rows(project_db, "SELECT sentence, chunk_id FROM answer_citations") == [(0, "c05")]


BAD_ANSWERS = [
    ("run-name-too-long", {"query_id": "q1", "run": "r" * 900, "sentences": [{"text": "A."}]},
     "run", "at most"),
    ("unknown-chunk", {"query_id": "q1", "run": "bm25", "sentences": [{"text": "A.", "citations": ["zz"]}]},
     "chunk_id", "'zz'"),
    ("both-forms", {"query_id": "q1", "run": "bm25", "text": "A.", "sentences": [{"text": "A."}]},
     None, "either as 'text'"),
    ("neither", {"query_id": "q1", "run": "bm25"}, None, "needs 'text'"),
    ("empty-sentence", {"query_id": "q1", "run": "bm25", "sentences": [{"text": ""}]},
     "sentences[0].text", "empty"),
    ("citation-not-a-string", {"query_id": "q1", "run": "bm25", "sentences": [{"text": "A.", "citations": [5]}]},
     "sentences[0].citations[0]", "not a string"),
    ("sentence-typo", {"query_id": "q1", "run": "bm25", "sentences": [{"text": "A.", "cites": ["c05"]}]},
     "sentences[0].cites", "unknown field"),
]


@pytest.mark.parametrize(("name", "line", "field", "words"), BAD_ANSWERS, ids=[b[0] for b in BAD_ANSWERS])
def test_bad_answers_exit_2_naming_file_line_and_field_and_change_nothing(
        project_db, tmp_path, capsys, name, line, field, words):
    path = write(tmp_path / f"{name}.jsonl", jsonl([{"query_id": "q2", "run": "bm25", "text": "Fine."}, line]))
    before = snapshot(project_db)
    code, _, err = run_cli(capsys, "--db", project_db, "import", "answers", path)
    assert code == 2, err
    assert path in err and "line 2" in err and words in err
    if field is not None:
        assert f"field '{field}'" in err
    assert "Traceback" not in err and err.count("\n") == 1
    assert snapshot(project_db) == before


@pytest.mark.slow
def test_answers_of_a_run_without_ranking_are_kept_and_said_so(project_db, tmp_path, capsys):
    """A project may judge generators' answers without holding their rankings (the TREC 2024
    RAG setting): the answers come in, and the import names the runs that have no ranking, so
    that a misspelt run name shows."""
    path = write(tmp_path / "gen.jsonl", jsonl([
        {"query_id": "q1", "run": "gen", "sentences": [{"text": "A.", "citations": ["c05"]}]},
        {"query_id": "q2", "run": "bm25", "text": "Fine."}]))
    code, _, err = run_cli(capsys, "--db", project_db, "import", "answers", path)
    assert code == 0, err
    flat = " ".join(err.split())
    assert "2 added" in flat and "1 run has no ranking in the project ('gen')" in flat
    assert rows(project_db, "SELECT run FROM answers ORDER BY run") == [("bm25",), ("gen",)]


# -- answer labels -------------------------------------------------------------------------------


def test_answer_labels_become_events_of_their_annotators(answers_db):
    events = rows(answers_db, "SELECT annotator, nugget_id IS NOT NULL, sentence, chunk_id, support, "
                              "source, undoes FROM answer_judgments ORDER BY id")
    assert len(events) == len(JUDGMENTS)
    assert {e[0] for e in events} == {"ana", "ben"}
    assert all(e[5] == "import" and e[6] is None for e in events)
    assert events[5] == ("ana", 0, 0, "c05", "full", "import", None)
    assert {r[0] for r in rows(answers_db, "SELECT name FROM annotators")} >= {"ana", "ben"}


@pytest.mark.slow
def test_importing_answer_labels_twice_adds_nothing_and_a_change_adds_one_event(answers_db, tmp_path, capsys):
    path = write(tmp_path / "again.jsonl", jsonl(JUDGMENTS))
    code, _, err = run_cli(capsys, "--db", answers_db, "import", "answer-labels", path)
    assert code == 0 and "0 added" in err
    changed = dict(JUDGMENTS[0], support="partial")
    path = write(tmp_path / "changed.jsonl", jsonl([changed, JUDGMENTS[1]]))
    code, _, err = run_cli(capsys, "--db", answers_db, "import", "answer-labels", path)
    assert code == 0 and "1 added" in err
    assert rows(answers_db, "SELECT count(*) FROM answer_judgments") == [(len(JUDGMENTS) + 1,)]


@pytest.mark.slow
def test_lines_without_annotator_take_the_annotator_option(bare_answers_db, tmp_path, capsys):
    line = {"query_id": "q1", "run": "bm25", "nugget": "tracking", "support": "none"}
    path = write(tmp_path / "one.jsonl", jsonl([line]))
    code, _, err = run_cli(capsys, "--db", bare_answers_db, "import", "answer-labels", path,
                           "--annotator", "cy")
    assert code == 0, err
    assert rows(bare_answers_db, "SELECT annotator, support FROM answer_judgments") == [("cy", "none")]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_answer_labels_round_trip_through_export_and_import(answers_db, bare_answers_db, tmp_path, capsys, fmt):
    out = tmp_path / f"exported.{fmt}"
    code, _, err = run_cli(capsys, "--db", answers_db, "export", "answer-labels", "--format", fmt, "-o", str(out))
    assert code == 0 and f"Wrote {len(JUDGMENTS)} answer-labels lines" in err
    code, _, err = run_cli(capsys, "--db", bare_answers_db, "import", "answer-labels", str(out))
    assert code == 0 and f"{len(JUDGMENTS)} added" in err, err
    first = run_cli(capsys, "--db", answers_db, "export", "answer-labels")[1]
    second = run_cli(capsys, "--db", bare_answers_db, "export", "answer-labels")[1]
    assert first == second
    exported = [json.loads(line) for line in first.splitlines()]
    key = lambda d: json.dumps(d, sort_keys=True)  # noqa: E731
    assert sorted(map(key, exported)) == sorted(map(key, JUDGMENTS))


def test_export_leaves_out_undone_judgments_and_removed_nuggets(answers_db, capsys):
    from ragjudge.services.labels import answers
    from ragjudge.services.labels import facets as judging
    from ragjudge.services.project.database import Project

    with Project.open(answers_db) as project:
        (dense,), = rows(answers_db, "SELECT id FROM answers WHERE query_id = 'q1' AND run = 'dense'")
        answers.record_answer_judgment(project, annotator="cy", answer_id=dense, sentence=1,
                                       chunk_id="c08", support="none")
        assert answers.undo_last_answer_judgment(project, "cy") is not None
        (tracking,), = rows(answers_db, "SELECT id FROM nuggets WHERE text = 'tracking'")
        judging.remove_nugget(project, tracking)
    lines = [json.loads(x) for x in run_cli(capsys, "--db", answers_db, "export", "answer-labels")[1].splitlines()]
    assert not any(line["annotator"] == "cy" for line in lines)
    assert not any(line.get("nugget") == "tracking" for line in lines)
    assert len(lines) == len(JUDGMENTS) - 1


BAD_LABELS = [
    ("unknown-nugget", {"nugget": "colour"}, "nugget", "no nugget 'colour'"),
    ("no-such-sentence", {"sentence": 3, "chunk_id": "c05"}, "sentence", "has 3 sentences"),
    ("not-cited", {"sentence": 1, "chunk_id": "c05"}, "chunk_id", "does not cite chunk 'c05'"),
    ("unknown-chunk", {"sentence": 1, "chunk_id": "zz"}, "chunk_id", "'zz'"),
    ("nugget-and-citation", {"nugget": "tracking", "sentence": 0, "chunk_id": "c05"}, None, "not both"),
    ("sentence-without-chunk", {"sentence": 0}, None, "both 'sentence'"),
    ("no-target", {}, None, "say what the support is of"),
    ("support-word", {"nugget": "tracking", "support": "maybe"}, "support", "maybe"),
    ("sentence-as-text", {"sentence": "0", "chunk_id": "c05"}, "sentence", "not an integer"),
    ("negative-sentence", {"sentence": -1, "chunk_id": "c05"}, "sentence", "greater than or equal to 0"),
    ("unknown-run", {"run": "nope", "nugget": "tracking"}, "run", "run 'nope' has no answer"),
    ("no-answer", {"query_id": "q3", "nugget": "tracking"}, "run", "no answer to query 'q3'"),
    ("typo", {"nugget": "tracking", "suport": "full"}, "suport", "unknown field"),
]


@pytest.mark.parametrize(("name", "change", "field", "words"), BAD_LABELS, ids=[b[0] for b in BAD_LABELS])
def test_bad_answer_labels_exit_2_naming_file_line_and_field_and_change_nothing(
        bare_answers_db, tmp_path, capsys, name, change, field, words):
    base = {"query_id": "q1", "run": "bm25", "support": "full", "annotator": "ana"}
    good = dict(base, nugget="five days")
    bad = {**base, **change}
    path = write(tmp_path / f"{name}.jsonl", jsonl([good, bad]))
    before = snapshot(bare_answers_db)
    code, _, err = run_cli(capsys, "--db", bare_answers_db, "import", "answer-labels", path)
    assert code == 2, err
    assert path in err and "line 2" in err and words in err, err
    if field is not None:
        assert f"field '{field}'" in err
    assert "Traceback" not in err and err.count("\n") == 1
    assert snapshot(bare_answers_db) == before


def test_a_line_contradicting_an_earlier_one_is_refused(bare_answers_db, tmp_path, capsys):
    one = {"query_id": "q1", "run": "bm25", "nugget": "tracking", "support": "full", "annotator": "ana"}
    path = write(tmp_path / "contradiction.jsonl", jsonl([one, dict(one, support="none")]))
    code, _, err = run_cli(capsys, "--db", bare_answers_db, "import", "answer-labels", path)
    assert code == 2 and "line 2" in err and "contradicts line 1" in err


# -- the schema --------------------------------------------------------------------------------


def test_migrating_an_older_project_splits_its_answers_into_sentences(tmp_path):
    from sqlalchemy import text

    from ragjudge.services.project.database import Project
    from ragjudge.store import migrate
    from ragjudge.store.engine import make_engine

    db = str(tmp_path / "old.db")
    engine = make_engine(db)
    migrate.upgrade(engine, "0002")
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO queries (id, text) VALUES ('q1', 'why?')"))
        connection.execute(text("INSERT INTO answers (id, query_id, run, text) VALUES "
                                "(7, 'q1', 'bm25', 'Because. It is so! [1]')"))
    engine.dispose()
    with Project.open(db) as project:
        with project.connect() as connection:
            assert migrate.current_revision(connection) == migrate.HEAD
    assert rows(db, "SELECT answer_id, position, text FROM answer_sentences ORDER BY position") == [
        (7, 0, "Because."), (7, 1, "It is so! [1]")]


HOSTILE_NUGGET = 'ship\r"fast", [bold]now[/] \x1b]52;c;aGk=\x07 \u202eevil\n' + "x" * 10_000


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_answer_labels_round_trip_hostile_nugget_text(answers_db, bare_answers_db, tmp_path, capsys, fmt):
    # a nugget named by hostile text (CR, quotes, markup, an escape sequence, bidi, 10,000
    # characters) is exported and read back to the same judgment, byte for byte
    from ragjudge.services.labels import answers
    from ragjudge.services.labels import facets as judging
    from ragjudge.services.project.database import Project

    with Project.open(answers_db) as project:
        nugget = judging.add_nugget(project, "q1", HOSTILE_NUGGET)
        (dense,), = rows(answers_db, "SELECT id FROM answers WHERE query_id = 'q1' AND run = 'dense'")
        answers.record_answer_judgment(project, annotator="cy", answer_id=dense, nugget_id=nugget,
                                       support="partial")
    with Project.open(bare_answers_db) as project:
        judging.add_nugget(project, "q1", HOSTILE_NUGGET)
    out = tmp_path / f"exported.{fmt}"
    code, _, err = run_cli(capsys, "--db", answers_db, "export", "answer-labels", "--format", fmt, "-o", str(out))
    assert code == 0, err
    code, _, err = run_cli(capsys, "--db", bare_answers_db, "import", "answer-labels", str(out))
    assert code == 0, err
    stored = rows(bare_answers_db, "SELECT n.text, j.support FROM answer_judgments j "
                                   "JOIN nuggets n ON n.id = j.nugget_id WHERE j.annotator = 'cy'")
    assert stored == [(HOSTILE_NUGGET.strip(), "partial")] or stored == [(HOSTILE_NUGGET, "partial")]
