"""The README's command sequences about roles run as written, in the order written, each
command as the shell would run it: no ``--by`` is added, and ``$RAGJUDGE_USER`` is not set (the
login name is nobody's on the roster)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from projectkit import make_small_project

from ragjudge.cli import main
from ragjudge.services.labels.events import record_label

pytestmark = pytest.mark.slow

README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")


def block_after(heading: str) -> list[str]:
    """The ``ragjudge`` lines of the first ```bash block after ``heading``, comments cut."""
    start = README.index(heading)
    body = README[README.index("```bash\n", start) + 8:]
    body = body[:body.index("```")]
    lines = [line.split("#", 1)[0].strip() for line in body.splitlines()]
    return [line for line in lines if line.startswith("ragjudge ")]


@pytest.fixture
def project_db(tmp_path, monkeypatch) -> str:
    db = str(tmp_path / "p.db")
    with make_small_project(db) as project:
        for who, grade in (("ana", 2), ("ben", 0)):
            record_label(project, annotator=who, query_id="q1", chunk_id="c05", grade=grade)
    monkeypatch.setenv("RAGJUDGE_DB", db)
    monkeypatch.delenv("RAGJUDGE_USER", raising=False)
    monkeypatch.setattr("getpass.getuser", lambda: "someone-at-a-terminal")
    monkeypatch.chdir(tmp_path)
    return db


def run_all(lines: list[str], capsys) -> None:
    assert lines
    for line in lines:
        code = main(shlex.split(line)[1:])
        said = capsys.readouterr()
        assert code == 0, f"{line!r} exits {code}: {said.err}"


def test_the_annotators_sequence_runs_as_written(project_db, capsys):
    run_all(block_after("### `annotators`: roles"), capsys)


def test_the_serve_setup_runs_as_written(project_db, capsys):
    lines = [line for line in block_after("## In the browser") if " serve" not in line]
    assert len(lines) == 3
    run_all(lines, capsys)


def test_the_exports_by_a_lead_and_an_annotator_run_as_written(project_db, capsys, tmp_path):
    block = block_after("### `import` and `export`")
    lines = [line for line in block if "--by" in line]
    assert len(lines) == 2
    run_all(["ragjudge annotators add dora --role lead", "ragjudge annotators add ana --by dora"],
            capsys)
    run_all(lines, capsys)
    assert '"ana"' in (tmp_path / "ana.jsonl").read_text()
    assert '"ben"' not in (tmp_path / "ana.jsonl").read_text()
    assert '"ben"' in (tmp_path / "labels.jsonl").read_text()


def test_the_readme_says_who_is_asking_and_the_blind_rule():
    section = README[README.index("**Who is asking**"):]
    section = section[:section.index("###")]
    for needed in ("$RAGJUDGE_USER", "login name", "least rights", "not shown: you have not "
                   "judged this pair", "courtesy"):
        assert needed in re.sub(r"\s+", " ", section), needed
