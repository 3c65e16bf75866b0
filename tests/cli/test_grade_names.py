"""Grade names for any scale: given at ``init`` or changed with ``ragjudge scale names`` (a
lead's setting), kept in the project's ``scale`` setting, and shown wherever a grade is: the
judging screen and its help, the web page, the labels export and the LLM judge's prompt."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from projectkit import make_small_project, rights
from clikit import run_cli as _run

from ragjudge.errors import UsageError
from ragjudge.models import MAX_GRADE_NAME, Scale
from ragjudge.services.access import roster
from ragjudge.services.labels.events import record_label
from ragjudge.services.labels.scale import current_scale, set_grade_names
from ragjudge.services.llm.prompt import scale_text
from ragjudge.services.project.database import Project

FIVE = "Not relevant,Marginal,Partly,Mostly,Perfect"
NAMES = FIVE.split(",")


# -- the scale ---------------------------------------------------------------------------------


def test_names_replace_the_names_and_keep_descriptions_and_threshold():
    scale = Scale.parse("0-3", threshold=2).with_names(["none", "some", "much", "all"])
    assert [level.name for level in scale.levels] == ["none", "some", "much", "all"]
    assert scale.level(0).description == "Has nothing to do with the query."  # the 0-3 default's
    assert scale.threshold == 2
    assert scale.names() == "0 none, 1 some, 2 much, 3 all"
    assert Scale.split_names(" a , b,c ") == ["a", "b", "c"]


@pytest.mark.parametrize(("names", "said"), [
    (["a", "b"], "2 names for the 5 grades of the scale 0-4 (0, 1, 2, 3, 4)"),
    (["a", "b", "c", "d", "e", "f"], "6 names for the 5 grades"),
    (["a", "", "c", "d", "e"], "the name of grade 1 is empty"),
    (["a", "b", "  ", "d", "e"], "the name of grade 2 is only spaces"),
    (["a", "b", "c", "d", "A"], "grades 0 and 4 have the same name; each grade needs its own"),
    (["a", "b\x1b[31m", "c", "d", "e"], "the name of grade 1 'b␛[31m' holds the control character"),
    (["a", "b", "c", "d", "x" * (MAX_GRADE_NAME + 1)], f"{MAX_GRADE_NAME} at most"),
])
def test_wrong_names_are_refused_saying_what_is_wrong(names, said):
    with pytest.raises(ValueError, match=None) as caught:
        Scale.parse("0-4").with_names(names)
    assert said in str(caught.value)


def test_a_scale_without_names_keeps_its_placeholders_and_known_scales_their_names():
    assert [level.name for level in Scale.parse("0-4").levels] == [f"Grade {g}" for g in range(5)]
    assert Scale.parse("0-4").unnamed(2) and not Scale.parse("0-3").unnamed(2)
    assert [level.name for level in Scale.parse("0-3").levels] == [
        "Irrelevant", "Related", "Highly relevant", "Perfectly relevant"]


# -- init and 'ragjudge scale' -----------------------------------------------------------------


def test_init_names_the_grades_of_a_0_4_scale(tmp_path, capsys):
    db = str(tmp_path / "five.db")
    code, out, err = _run(capsys, "init", "--db", db, "--scale", "0-4", "--grade-names", FIVE)
    assert code == 0, err
    assert "Grades: 0 Not relevant, 1 Marginal, 2 Partly, 3 Mostly, 4 Perfect." in " ".join(out.split())
    with Project.open(db) as project:
        assert [level.name for level in project.scale.levels] == NAMES
        assert project.scale.threshold == 1
    code, out, err = _run(capsys, "scale", "--db", db, "--format", "json")
    assert code == 0, err
    assert [level["name"] for level in json.loads(out)["levels"]] == NAMES


def test_init_without_names_keeps_the_default_names(tmp_path, capsys):
    db = str(tmp_path / "four.db")
    assert _run(capsys, "init", "--db", db)[0] == 0
    with Project.open(db) as project:
        assert project.scale == Scale.parse("0-3")


@pytest.mark.parametrize("names", ["a,b", "a,b,c,d,e,f", "a,b,,d,e", "a,b,c,d,a"])
def test_init_refuses_names_that_do_not_fit_and_creates_nothing(tmp_path, capsys, names):
    db = tmp_path / "bad.db"
    code, out, err = _run(capsys, "init", "--db", str(db), "--scale", "0-4", "--grade-names", names)
    assert code == 2 and out == ""
    assert err.startswith("ragjudge: --grade-names: ") and err.rstrip().endswith("Nothing was created.")
    assert err.count("\n") == 1 and "Traceback" not in err  # one paragraph
    assert not db.exists()


def test_scale_names_renames_and_shows_the_names(tmp_path, capsys):
    db = str(tmp_path / "p.db")
    make_small_project(db, scale="0-4").close()
    code, out, err = _run(capsys, "scale", "names", FIVE, "--db", db)
    assert code == 0, err
    assert "labels keep their grades" in out
    for grade, name in enumerate(NAMES):
        assert f"{grade} │ {name}" in out
    with Project.open(db) as project:
        assert [level.name for level in project.scale.levels] == NAMES


def test_scale_names_is_a_leads_setting_and_a_refusal_changes_nothing(tmp_path, capsys, monkeypatch):
    db = str(tmp_path / "p.db")
    with make_small_project(db, scale="0-4") as project:
        roster.add(project, "dora", role="lead", access=rights(project))
        roster.add(project, "ann", access=rights(project))
        with pytest.raises(UsageError, match="Only a lead"):
            set_grade_names(project, NAMES, access=rights(project, "ann"))
        assert project.scale == Scale.parse("0-4")
    before = Path(db).read_bytes()
    monkeypatch.setenv("RAGJUDGE_USER", "ann")
    code, _, err = _run(capsys, "scale", "names", FIVE, "--db", db)
    assert code == 2 and "Only a lead" in err
    assert Path(db).read_bytes() == before
    code, _, err = _run(capsys, "scale", "names", "a,b", "--db", db, "--by", "dora")
    assert code == 2 and "--grade-names: 2 names for the 5 grades" in err and "Nothing was changed." in err
    assert Path(db).read_bytes() == before
    code, _, err = _run(capsys, "scale", "names", FIVE, "--db", db, "--by", "dora")
    assert code == 0, err


def test_a_long_lived_project_object_reads_names_renamed_elsewhere(tmp_path):
    db = str(tmp_path / "p.db")
    with make_small_project(db, scale="0-4") as kept, Project.open(db) as other:
        assert kept.scale.level(4).name == "Grade 4"  # read (and cached) before the rename
        set_grade_names(other, NAMES, access=rights(other))
        assert current_scale(kept).level(4).name == "Perfect"


# -- where the names are shown -----------------------------------------------------------------


def test_the_llm_prompt_names_each_grade():
    named = Scale.parse("0-4").with_names(NAMES)
    assert scale_text(named).splitlines() == [
        "0 = Not relevant", "1 = Marginal", "2 = Partly", "3 = Mostly", "4 = Perfect"]
    # unnamed grades are placed on the scale rather than left as "0 = Grade 0"
    assert scale_text(Scale.parse("0-4")).splitlines() == [
        "0 = Grade 0: the lowest grade, not relevant", "1 = Grade 1: the lowest grade that counts as relevant",
        "2 = Grade 2", "3 = Grade 3", "4 = Grade 4: the highest grade, the most relevant"]
    # a named scale keeps its own descriptions
    assert scale_text(Scale.parse("0-3")).splitlines()[0] == "0 = Irrelevant: Has nothing to do with the query."


def test_the_labels_export_names_each_grade_and_imports_back(tmp_path, capsys):
    db = str(tmp_path / "p.db")
    with make_small_project(db, scale="0-4") as project:
        set_grade_names(project, NAMES, access=rights(project))
        record_label(project, annotator="ann", query_id="q1", chunk_id="c05", grade=4)
        record_label(project, annotator="ann", query_id="q1", chunk_id="c06", grade=0)
    out_file = tmp_path / "labels.csv"
    code, _, err = _run(capsys, "export", "labels", "--db", db, "--format", "csv", "-o", out_file)
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out_file.read_text(encoding="utf-8"))))
    assert [(r["chunk_id"], r["grade"], r["grade_name"]) for r in rows] == [
        ("c05", "4", "Perfect"), ("c06", "0", "Not relevant")]
    # the export imports into another project, whose own names stand
    other = str(tmp_path / "other.db")
    make_small_project(other, scale="0-4").close()
    code, _, err = _run(capsys, "import", "labels", out_file, "--db", other)
    assert code == 0, err
    code, out, _ = _run(capsys, "export", "labels", "--db", other)
    assert [json.loads(line)["grade_name"] for line in out.splitlines()] == ["Grade 4", "Grade 0"]
