"""Messages of the command line: text from a file never reaches the terminal as control or markup.

An import that fails quotes the file: an unknown column, an unknown key, unknown ids, a file
name, the project's run names. Each of these may hold escape sequences (an OSC 52 sequence
writes the reader's clipboard, OSC 0 the window title) or Rich markup. The message must show
them visibly (``␛]52``), stay one paragraph naming the file, and change nothing.
"""

from __future__ import annotations

import json

import pytest
from projectkit import make_small_project
from sqlalchemy import func, select

from ragjudge.cli import main
from ragjudge.safetext import is_clean
from ragjudge.services.project.database import Project
from ragjudge.store.schema import Chunk, Label, Query, Run, RunEntry

CLIPBOARD = "\x1b]52;c;aGFja2Vk\x07"
TITLE = "\x1b]0;owned\x07"
MARKUP = "[/][bold]x[link=http://e.x]y:a:\\"
HOSTILE = f"{CLIPBOARD}{TITLE}\x1bc\x9b31m\u202e{MARKUP}"


from clikit import no_project  # noqa: E402, F401 - autouse: no project named by the environment


@pytest.fixture
def db(tmp_path) -> str:
    path = str(tmp_path / "p.db")
    make_small_project(path).close()
    return path


def counts(db: str) -> tuple[int, ...]:
    with Project.open(db) as project, project.read() as session:
        return tuple(session.scalar(select(func.count()).select_from(model))
                     for model in (Query, Chunk, Run, RunEntry, Label))


def assert_safe_message(err: str, markup: str = MARKUP) -> None:
    """One paragraph on stderr, no control character, the hostile text shown visibly."""
    assert err.startswith("ragjudge: ") and err.endswith("\n") and err.count("\n") == 1, err
    assert is_clean(err, multiline=True), ascii(err)
    assert not any(0x80 <= ord(ch) <= 0x9F for ch in err) and "\u202e" not in err
    assert "␛]52;c;aGFja2Vk␇" in err and "␛]0;owned␇" in err and "␛c" in err
    assert "⟨U+009B⟩" in err and "⟨U+202E⟩" in err and markup in err


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_unknown_csv_column(capsys, db, tmp_path):
    before = counts(db)
    path = tmp_path / "queries.csv"
    path.write_text(f"id,text,{HOSTILE}\nq9,new query,x\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "--db", db, "import", "queries", str(path))
    assert code == 2 and out == ""
    assert_safe_message(err)
    assert "queries.csv, line 1, field '" in err
    assert counts(db) == before


def test_unknown_json_key(capsys, db, tmp_path):
    before = counts(db)
    path = tmp_path / "queries.jsonl"
    path.write_text(json.dumps({"id": "q9", "text": "new", HOSTILE: 1}) + "\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "--db", db, "import", "queries", str(path))
    assert code == 2 and out == ""
    assert_safe_message(err)
    assert "queries.jsonl, line 1, field '" in err
    assert counts(db) == before


@pytest.mark.slow
def test_unknown_ids(capsys, db, tmp_path):
    before = counts(db)
    path = tmp_path / "dense.trec"
    # an id holding control characters is refused for them, the id shown visibly
    path.write_text(f"q1 Q0 c{HOSTILE} 1 2.0 x\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "--db", db, "import", "run", str(path), "--name", "dense")
    assert code == 2 and out == ""
    assert_safe_message(err)
    assert "dense.trec, line 1, field 'chunk_id'" in err and "control character" in err
    # one without them (a bidi override and markup) is an unknown id, shown visibly too
    path.write_text(f"q1 Q0 c\u202e{MARKUP} 1 2.0 x\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "--db", db, "import", "run", str(path), "--name", "dense")
    assert code == 2 and out == "" and is_clean(err, multiline=True) and err.count("\n") == 1
    assert "⟨U+202E⟩" in err and MARKUP in err and "not in the project" in err
    assert counts(db) == before


def test_beir_file_names(capsys, db, tmp_path):
    before = counts(db)
    folder = tmp_path / f"beir{HOSTILE.replace('/', '_')}"
    folder.mkdir()
    code, out, err = run_cli(capsys, "--db", db, "import", "beir", str(folder))
    assert code == 2 and out == ""
    assert_safe_message(err, markup=MARKUP.replace("/", "_"))
    assert "corpus.jsonl" in err
    assert counts(db) == before


def add_hostile_run(db: str) -> str:
    name = f"run{HOSTILE}"
    with Project.open(db) as project:
        def add(session) -> None:
            session.add(Run(name=name))
            session.flush()
            session.add(RunEntry(run=name, query_id="q1", chunk_id="c01", rank=1, score=1.0))

        project.write(add)
    return name


@pytest.mark.slow
@pytest.mark.parametrize("argv", [
    ["eval", "--run", "nosuch"],
    ["export", "run", "nosuch"],
])
def test_run_names_in_its_runs(capsys, db, argv):
    add_hostile_run(db)
    before = counts(db)
    code, out, err = run_cli(capsys, "--db", db, *argv)
    assert code == 2 and out == ""
    assert_safe_message(err)
    assert "uns: bm25, run␛]52" in err
    assert counts(db) == before


def test_a_usage_error_quoting_the_command_line(capsys, db):
    code, out, err = run_cli(capsys, "--db", db, "eval", "--format", HOSTILE)
    assert code == 2 and out == ""
    assert_safe_message(err)


def test_status_table_shows_hostile_names_literally(capsys, db):
    name = add_hostile_run(db)
    with Project.open(db) as project:
        project.set_settings({"name": f"project{HOSTILE}", "rule": f"annotator:{HOSTILE}"})
    code, out, err = run_cli(capsys, "--db", db, "status")
    assert code == 0 and err == ""
    assert is_clean(out, multiline=True), ascii(out)
    assert "project␛]52;c;aGFja2Vk␇" in out and "[/][bold]x[link=http://e.x" in out
    flat = "".join(out.split())  # the table wraps long cells
    assert name not in out and "run␛]52" in out and "goldruleannotator:␛]52" in flat


def test_status_json_is_escaped_json(capsys, db):
    name = add_hostile_run(db)
    code, out, err = run_cli(capsys, "--db", db, "status", "--format", "json")
    assert code == 0 and err == "" and is_clean(out, multiline=True)
    assert [r["name"] for r in json.loads(out)["run_summary"]] == ["bm25", name]
