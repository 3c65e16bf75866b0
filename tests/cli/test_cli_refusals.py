"""Mistakes on the command line get one clear paragraph and exit 2."""

from __future__ import annotations

import json

import pytest

from ragjudge.cli import main

QRELS = "q1 0 c1 2\nq1 0 c2 0\nq2 0 c3 1\n"
RUN = "q1 Q0 c1 1 3.0 r\nq1 Q0 c2 2 2.0 r\nq2 Q0 c3 1 1.0 r\n"


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "q.qrels").write_text(QRELS)
    (tmp_path / "r.trec").write_text(RUN)
    return tmp_path


def test_db_without_a_value(capsys):
    assert main(["status", "--db"]) == 2
    assert "--db needs a value" in capsys.readouterr().err
    assert main(["--db=", "status"]) == 2
    assert "--db is empty" in capsys.readouterr().err


def test_the_app_needs_a_terminal(project_db, capsys):
    # pytest's captured stdin/stdout are not a terminal
    assert main(["--db", project_db]) == 2
    assert "needs a terminal" in capsys.readouterr().err


def test_threshold_above_the_project_scale(project_db, capsys):
    assert main(["--db", project_db, "eval", "--threshold", "9"]) == 2
    assert "above the project's top grade (0-3)" in capsys.readouterr().err
    assert main(["--db", project_db, "eval", "-m", "P(rel=4)@5"]) == 2
    assert "rel=4" in capsys.readouterr().err


def test_reversed_operator_in_a_requirement(files, capsys):
    code = main(["gate", "--qrels", str(files / "q.qrels"), "--run", str(files / "r.trec"),
                 "--require", "RR=>0.5"])
    assert code == 2
    assert "'=>' is no operator" in capsys.readouterr().err


def test_standard_input_is_refused_by_eval(files, capsys):
    assert main(["eval", "--qrels", "-", "--run", str(files / "r.trec")]) == 2
    assert "standard input" in capsys.readouterr().err
    assert main(["eval", "--qrels", str(files / "q.qrels"), "--run", "-"]) == 2
    assert "standard input" in capsys.readouterr().err


def test_undefined_queries_are_counted_in_json(project_db, capsys):
    from ragjudge.services.project.database import Project
    from ragjudge.store.schema import Annotator, Facet, FacetLink, Label, RunEntry

    with Project.open(project_db) as project:
        def seed(session):
            session.add(Annotator(name="ann"))
            for q in ("q1", "q2", "q3", "q4", "q5"):  # every query judged
                first = session.query(RunEntry).filter_by(run="bm25", query_id=q, rank=1).one()
                session.add(Label(query_id=q, chunk_id=first.chunk_id, annotator="ann", grade=2))
            top = session.query(RunEntry).filter_by(run="bm25", query_id="q1", rank=1).one()
            facet = Facet(query_id="q1", name="only facet")
            session.add(facet)
            session.flush()
            session.add(FacetLink(facet_id=facet.id, chunk_id=top.chunk_id, annotator="ann"))
        project.write(seed)
    assert main(["--db", project_db, "eval", "-m", "Coverage@5", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["queries"] == 5
    # q2..q5 have no facets: left out of the mean, and counted
    assert data["runs"]["bm25"]["undefined"] == {"Coverage@5": 4}
    assert data["runs"]["bm25"]["aggregate"]["Coverage@5"] == 1.0


def test_inputs_that_are_not_text_files_are_named_for_what_they_are(files, project_db, capsys):
    # a device: eval used to say the qrels "hold no judgments"
    assert main(["eval", "--qrels", "/dev/zero", "--run", str(files / "r.trec")]) == 2
    assert "/dev/zero: is a device (character special file)" in capsys.readouterr().err
    # UTF-16 (as Windows tools save text): named, with the command that converts it
    utf16 = files / "utf16.qrels"
    utf16.write_bytes(QRELS.encode("utf-16"))
    assert main(["eval", "--qrels", str(utf16), "--run", str(files / "r.trec")]) == 2
    err = capsys.readouterr().err
    assert "UTF-16" in err and f"iconv -f UTF-16 -t UTF-8 {utf16} > {files / 'utf16.utf8.qrels'}" in err
    assert main(["--db", project_db, "import", "qrels", str(utf16)]) == 2
    assert "iconv -f UTF-16 -t UTF-8" in capsys.readouterr().err
    # a folder that is no BEIR dataset: import says it is a folder, not that a file is missing
    folder = files / "plain"
    folder.mkdir()
    assert main(["--db", project_db, "import", "queries", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"{folder}: is a folder, not a file, and holds no BEIR dataset" in err
