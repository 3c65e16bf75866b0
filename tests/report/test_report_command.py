"""``ragjudge report`` as a command: its help, one-paragraph refusals of bad options, writing
the file whole or not at all and never over a project, the progress it reports, what a blind
project's annotator is left out of, and the Markdown's escaping."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from projectkit import ragjudge, rights
from pagekit import parse
from reportkit import HOSTILE_QUERY, HOSTILE_RUN, small_project

from ragjudge.cli import main


@pytest.fixture
def small_db(tmp_path) -> str:
    db = str(tmp_path / "small.db")
    small_project(db)
    return db


def refused(capsys, argv: list[str]) -> str:
    """Run ``argv`` in this process; it must exit 2 with one paragraph on stderr, naming the
    mistake, and write nothing on stdout."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (code, err)
    assert out == ""
    assert err.startswith("ragjudge: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_help_has_examples(capsys):
    assert main(["report", "--help"]) == 0
    out = capsys.readouterr().out
    assert "Examples:" in out and "ragjudge report -o report.html" in out
    assert "--format md" in out and "--by" in out and "--strata" in out


@pytest.mark.parametrize(("options", "says"), [
    (["--format", "pdf"], "--format pdf: use html"),
    (["--test", "anova"], "--test anova: use fisher, t, wilcoxon or tukey"),
    (["--correction", "sidak"], "--correction sidak: use none, bonferroni, holm or bh"),
    (["--test", "tukey", "--correction", "holm"], "Tukey's HSD p-values already hold for all pairs"),
    (["--alpha", "1.5"], "--alpha 1.5: a significance level is between 0 and 1"),
    (["--permutations", "0"], "--permutations 0: the number of sign patterns is a whole number"),
    (["--per-query", "all"], "--per-query all: use measure, run, both or none"),
    (["--averaging", "mean"], "--averaging mean: use judged or run"),
    (["-m", "nDCG@x"], "nDCG@x"),
    (["-m", "P(rel=9)@5"], "rel=9 is above the project's top grade"),
    (["--threshold", "7"], "--threshold 7 is above the project's top grade"),
    (["--run", "nope"], "--run nope: the project has no run of that name. Its runs: bm25, dense"),
    (["--strata", "colour"], "no query in the project's queries has a 'colour' key"),
    (["--curve", "Rprec"], "--curve Rprec: measure 'Rprec@1': Rprec takes no cutoff (@k); curves are"),
    (["--k", "0-5"], "--k 0-5"),
    (["--disputes", "-1"], "--disputes -1"),
    (["--rule", "annotator:zed"], "the project has no annotator named 'zed'"),
])
def test_bad_options_are_one_paragraph(capsys, small_db, tmp_path, options, says):
    target = tmp_path / "out.html"
    err = refused(capsys, ["report", "--db", small_db, "-o", str(target), "-q", *options])
    assert says in err, err
    assert not target.exists()


@pytest.mark.slow
def test_html_is_not_written_onto_a_terminal(capsys, small_db, monkeypatch):
    from ragjudge import files

    monkeypatch.setattr(files, "is_terminal", lambda dest: True)
    err = refused(capsys, ["report", "--db", small_db])
    assert "-o report.html" in err and "--format md" in err


@pytest.mark.slow
def test_never_over_a_project(capsys, small_db, tmp_path):
    other = str(tmp_path / "other.db")
    small_project(other, queries=3)
    before = Path(other).read_bytes()
    err = refused(capsys, ["report", "--db", small_db, "-o", other, "-q"])
    assert "is a ragjudge project" in err and "Nothing was written" in err
    assert Path(other).read_bytes() == before
    err = refused(capsys, ["report", "--db", small_db, "-o", small_db + "-wal", "-q"])
    assert "belongs to the ragjudge project" in err


@pytest.mark.slow
def test_the_file_is_written_whole_or_not_at_all(capsys, small_db, tmp_path, monkeypatch):
    target = tmp_path / "report.html"
    target.write_text("the report of yesterday\n", encoding="utf-8")
    # a refusal after the file was named leaves it as it was
    refused(capsys, ["report", "--db", small_db, "-o", str(target), "-q", "--test", "anova"])
    assert target.read_text(encoding="utf-8") == "the report of yesterday\n"
    # a failure at the last step (the rename) leaves the old file and no temporary one
    real = os.replace

    def broken(source, dest):
        if Path(dest) == target:
            raise OSError(28, "No space left on device")
        return real(source, dest)

    monkeypatch.setattr(os, "replace", broken)
    err = refused(capsys, ["report", "--db", small_db, "-o", str(target), "-q", "-m", "P@3"])
    assert "report.html" in err
    assert target.read_text(encoding="utf-8") == "the report of yesterday\n"
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []
    monkeypatch.setattr(os, "replace", real)
    assert main(["report", "--db", small_db, "-o", str(target), "-q", "-m", "P@3"]) == 0
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert "Wrote the HTML report" in capsys.readouterr().err


@pytest.mark.slow
def test_the_format_follows_the_file_name(small_db, tmp_path):
    target = tmp_path / "summary.md"
    assert main(["report", "--db", small_db, "-o", str(target), "-q", "-m", "P@3"]) == 0
    text = target.read_text(encoding="utf-8")
    assert text.startswith("# `test project` — evaluation report")
    assert "<html" not in text


@pytest.mark.slow
def test_the_report_tells_its_progress(small_db):
    from ragjudge.report.build import ReportOptions, build_report
    from ragjudge.services.access.visibility import access_for
    from ragjudge.services.project.database import Project

    heard: list[tuple] = []
    with Project.open(small_db) as project:
        build_report(project, ReportOptions(measures=("P@3",)), access=access_for(project, "ana"),
                     progress=lambda done, total, what, unit="bytes": heard.append((done, total, what, unit)))
    steps = list(dict.fromkeys(what for _, _, what, _ in heard))
    assert steps == ["reading runs", "evaluating", "intervals", "ranges over annotators", "curves",
                     "comparing every pair of runs", "how settled each comparison is", "agreement",
                     "digests", "hashing the label events"]
    assert (2, 2, "reading runs", "runs") in heard and (2, 2, "evaluating", "runs") in heard
    events = [h for h in heard if h[2] == "hashing the label events"]
    assert events[-1][:2] == (72, 72)  # 12 queries x 3 pairs x 2 annotators


@pytest.mark.slow
def test_the_command_draws_its_progress_with_the_bar_of_every_long_command(small_db, monkeypatch, capsys):
    """The report's steps reach the bar of cli/progress.py (drawn on standard error when that is
    a terminal; here it records what it would draw)."""
    from contextlib import contextmanager

    import ragjudge.cli.report as command

    drawn: list[tuple[str, bool]] = []

    @contextmanager
    def recording(quiet: bool = False):
        yield lambda done, total, what, unit="bytes", detail=None: drawn.append((what, quiet))

    monkeypatch.setattr(command, "progress_bar", recording)
    assert main(["report", "--db", small_db, "--format", "md", "-m", "P@3"]) == 0
    assert ("evaluating", False) in drawn and ("hashing the label events", False) in drawn
    assert capsys.readouterr().out.startswith("# ")
    drawn.clear()
    assert main(["report", "--db", small_db, "--format", "md", "-m", "P@3", "--quiet"]) == 0
    assert drawn and all(quiet for _, quiet in drawn)


# -- who sees what -------------------------------------------------------------------------------


@pytest.fixture
def led_demo(demo_db) -> str:
    """The demo project with a lead, lee; ana, ben and chen are annotators (blind by default)."""
    from ragjudge.services.access import roster
    from ragjudge.services.project.database import Project

    with Project.open(demo_db) as project:
        roster.add(project, "lee", role="lead", access=rights(project, "lee"))
    return demo_db


@pytest.mark.slow
def test_an_annotator_in_a_blind_project_gets_aggregates_only(led_demo, tmp_path):
    target = tmp_path / "ana.html"
    made = ragjudge("report", "--db", led_demo, "-o", str(target), "-q", "--by", "ana")
    assert made.returncode == 0, made.stderr
    page = parse(target.read_text(encoding="utf-8"))
    assert page.find("table", **{"class": "sortable per-query"}) == []
    assert [e for e in page.iter() if e.get("id") == "per-query"] == []
    # the disputed pairs ana judged herself, each with her grade among the grades; the others left out
    rows = page.by_id("disputes").find("tbody")[0].find("tr")
    assert rows and all("ana=" in row.find("td")[4].text for row in rows)
    left = page.by_id("left-out").text
    assert "per-query tables" in left and "ana is not a lead" in left
    assert "Disputed pairs ana has not judged" in left and "only a lead, or who judged the pair" in left
    # the aggregates are there: means, κ, confusion matrices
    assert len(page.by_id("scorecard-table").find("td")) == 3 * 18
    assert page.find("table", **{"class": "matrix confusion"})
    md = ragjudge("report", "--db", led_demo, "--format", "md", "-q", "--by", "ana", "--per-query", "both")
    assert md.returncode == 0, md.stderr
    assert "Left out of this report" in md.stdout and "Disputed pairs ana has not judged" in md.stdout
    assert "## Per query" not in md.stdout


@pytest.mark.slow
def test_the_lead_gets_everything(led_demo, tmp_path):
    target = tmp_path / "lee.html"
    made = ragjudge("report", "--db", led_demo, "-o", str(target), "-q", "--by", "lee")
    assert made.returncode == 0, made.stderr
    page = parse(target.read_text(encoding="utf-8"))
    assert len(page.find("table", data_kind="measure")) == 18  # the ranking and answer measures
    assert len(page.by_id("disputes").find("tbody")[0].find("tr")) == 50
    assert [e for e in page.iter() if e.get("id") == "left-out"] == []
    assert "for lee (lead, blind project)" in page.find("header")[0].text


def test_an_annotator_may_not_take_anothers_grades_as_the_gold(capsys, led_demo):
    err = refused(capsys, ["report", "--db", led_demo, "--by", "ana", "--rule", "annotator:ben",
                           "--format", "md", "-q"])
    assert "Only a lead may make a report with ben's grades as the gold" in err


# -- text from data --------------------------------------------------------------------------------


@pytest.mark.slow
def test_markdown_keeps_hostile_names_as_text(tmp_path):
    db = str(tmp_path / "hostile.db")
    small_project(db, second_run=HOSTILE_RUN + "|x", query_text=HOSTILE_QUERY)
    out = ragjudge("report", "--db", db, "--format", "md", "-q", "--by", "ana", "-m", "P@3",
                   "--per-query", "measure")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    # outside code spans nothing of the names is left: no tag, no raw pipe splitting a cell
    outside = re.sub(r"(`+)(.+?)\1", "", text)
    assert "<script" not in outside and "<img" not in outside and "alert" not in outside
    assert f"`{HOSTILE_RUN}\\|x`" in text
    assert f"`{HOSTILE_QUERY}`" in text
    rows = [line for line in text.splitlines()
            if line.startswith("| measure | `") or line.startswith("| `P@3` | 0.")]
    assert len(rows) == 6  # the scorecard and two strata: header and row each
    for line in rows:
        assert len(re.findall(r"(?<!\\)\|", line)) == 4  # measure, bm25, the hostile run


def test_the_command_line_hides_a_database_password(monkeypatch):
    from ragjudge.cli import report as command

    monkeypatch.setattr("ragjudge.cli._INVOKED", ["report", "--db", "postgresql+psycopg://u:s3cr3t@host/db",
                                                  "-o", "r.html"])
    shown = command.command_line()
    assert "s3cr3t" not in shown and "u:***@host" in shown
    monkeypatch.setattr("ragjudge.cli._INVOKED", ["report", "--db=postgresql://u:pw@h/db"])
    assert "pw@" not in command.command_line()


@pytest.mark.slow
def test_a_stratum_of_one_query_is_left_out_for_an_annotator(tmp_path):
    """A stratum of a single query shows that query's values: for the lead, and for an annotator
    only once they have judged every pair of its gold (ben has judged c01 for q5, ana has not)."""
    from ragjudge.services.access import roster
    from ragjudge.services.labels.events import record_label
    from ragjudge.services.project.database import Project
    from ragjudge.store.schema import Query

    db = str(tmp_path / "small.db")
    small_project(db)
    with Project.open(db) as project:
        roster.add(project, "lee", role="lead", access=rights(project, "lee"))
        project.write(lambda s: setattr(s.get(Query, "q5"), "category", "rare"))
        record_label(project, annotator="ben", query_id="q5", chunk_id="c01", grade=2)
    made = {who: ragjudge("report", "--db", db, "--format", "md", "-q", "--by", who, "-m", "P@3")
            for who in ("ana", "lee")}
    assert all(m.returncode == 0 for m in made.values()), [m.stderr for m in made.values()]
    assert "**`category` = `rare`** (1 query)" in made["lee"].stdout
    assert "`rare`" not in made["ana"].stdout
    assert "1 stratum of a single query (rare)" in made["ana"].stdout
    assert "**`category` = `factoid`** (5 queries)" in made["ana"].stdout
    # the per-query tables list the queries ana judged whole, not q5
    md = ragjudge("report", "--db", db, "--format", "md", "-q", "--by", "ana", "-m", "P@3",
                  "--per-query", "measure")
    assert md.returncode == 0, md.stderr
    section = md.stdout.split("## Per query", 1)[1].split("\n## ", 1)[0].replace("`", "")
    assert "| q4 |" in section and "| q5 |" not in section
    assert "1 of the 12 queries in the per-query tables (q5)" in md.stdout
