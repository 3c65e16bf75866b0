"""The report shows how settled each comparison is: its section and a status beside each pair of
the comparisons table, equal to ``ragjudge settled --format json`` on the same runs, measures and
rule; ``--no-settled`` leaves both out."""

from __future__ import annotations

import json

import pytest
from pagekit import parse
from reportkit import small_project
from clikit import run_cli as _run


MEASURES = ("P@3", "AP", "Rprec")
"""Rprec cannot be settled (its cutoff is the number of relevant chunks, which any open pair
moves): its pairs say so."""


def _measures() -> list[str]:
    return [arg for m in MEASURES for arg in ("-m", m)]


def _settled_json(capsys, db: str) -> dict[tuple[str, frozenset], dict]:
    code, out, err = _run(capsys, "settled", "--db", db, *_measures(), "--format", "json")
    assert code in (0, 1), err  # 1: some comparison is still open
    return {(c["measure"], frozenset((c["a"], c["b"]))): c for c in json.loads(out)["comparisons"]}


@pytest.fixture
def db(tmp_path) -> str:
    """Twelve queries, two runs of depth 10, only each query's top 3 of bm25 judged: a pool
    partly judged, whose comparisons are still open."""
    path = str(tmp_path / "small.db")
    small_project(path)
    return path


def test_each_pair_of_the_comparisons_table_says_how_settled_it_is(db, tmp_path, capsys):
    reference = _settled_json(capsys, db)
    assert len(reference) == 2  # P@3 and AP, one pair each
    out = tmp_path / "r.html"
    code, _, err = _run(capsys, "report", "--db", db, *_measures(), "-o", out, "-q")
    assert code == 0, err
    page = parse(out.read_text(encoding="utf-8"))
    rows = [tr for tr in page.by_id("comparison-table").find("tr") if tr.get("data-measure")]
    assert len(rows) == len(MEASURES)  # one pair of runs per measure
    for tr in rows:
        measure, pair = tr.get("data-measure"), frozenset((tr.get("data-a"), tr.get("data-b")))
        [cell] = [td for td in tr.find("td") if td.get("data-settled") is not None]
        if measure == "Rprec":
            assert cell.text.strip() == "–" and "no bounds" in cell.get("title")
        else:
            assert cell.text.strip() == reference[measure, pair]["status"]
            assert cell.get("title").startswith(reference[measure, pair]["status"] + ":")
    # the section: every comparison settled can be, with its figures
    table = page.by_id("settled-table")
    shown = [[td.text.strip() for td in tr.find("td")] for tr in table.find("tbody")[0].find("tr")]
    assert {(row[0], frozenset(row[1:3])) for row in shown} == set(reference)
    for row in shown:
        found = reference[row[0], frozenset(row[1:3])]
        assert row[7] == found["status"] and int(row[8]) == found["judge_more"]
    notes = page.by_id("notes").text
    assert "Not settled (no bounds worked out): Rprec" in " ".join(notes.split())


def test_the_markdown_summary_has_the_status_column_and_no_settled_leaves_it_out(db, capsys):
    reference = _settled_json(capsys, db)
    code, md, err = _run(capsys, "report", "--db", db, *_measures(), "--format", "md", "-q")
    assert code == 0, err
    assert "## How settled each comparison is" in md
    header = next(line for line in md.splitlines() if line.startswith("| measure | A | B | queries"))
    assert header.rstrip().endswith("| verdict | settled |")
    status = reference["AP", frozenset(("bm25", "dense"))]["status"]
    [ap] = [line for line in md.splitlines() if line.startswith("| `AP` | `bm25` | `dense` | 12 |")]
    assert ap.rstrip().endswith(f"| {status} |")
    code, md, err = _run(capsys, "report", "--db", db, *_measures(), "--format", "md", "-q",
                         "--no-settled")
    assert code == 0, err
    assert "How settled" not in md and "| settled |" not in md


def test_a_pool_judged_whole_is_settled_everywhere(tmp_path, capsys):
    """Every pair of both runs' top 10 judged: no open pair is left, so every comparison is
    certain (or tied: no judgment could separate the runs)."""
    from sqlalchemy import select

    from ragjudge.services.labels.events import record_label
    from ragjudge.services.project.database import Project
    from ragjudge.store.schema import RunEntry

    db = str(tmp_path / "whole.db")
    small_project(db, queries=4)
    with Project.open(db) as project:
        with project.read() as session:
            pool = set(session.execute(select(RunEntry.query_id, RunEntry.chunk_id)
                                       .where(RunEntry.rank <= 10)).all())
        for q, c in sorted(pool):
            record_label(project, annotator="ana", query_id=q, chunk_id=c, grade=int(c[1:]) % 4)
    reference = _settled_json(capsys, db)
    assert reference and {c["status"] for c in reference.values()} <= {"certain", "tied"}
    code, md, err = _run(capsys, "report", "--db", db, *_measures(), "--format", "md", "-q")
    assert code == 0, err
    statuses = [line.rstrip().rsplit("|", 2)[-2].strip() for line in md.splitlines()
                if line.startswith(("| `P@3` | `bm25` | `dense` | 4 |", "| `AP` | `bm25` | `dense` | 4 |"))]
    assert len(statuses) == 2 and set(statuses) <= {"certain", "tied"}
