"""The report's parts on their own: natural order of ids, the SVG plots, Markdown's code spans,
the digests (worked out by hand from their stated form), the all-pairs comparison service and
the hook of the section on how settled each comparison is."""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
import struct

import numpy as np
import pytest
from pagekit import parse
from reportkit import small_project

from ragjudge.cli import main
from ragjudge.errors import UsageError

# -- natural order -------------------------------------------------------------------------------


def test_natural_order_counts_numbers():
    from ragjudge.report.natural import natural_sorted

    assert natural_sorted(["q10", "q2", "q100", "q1"]) == ["q1", "q2", "q10", "q100"]
    assert natural_sorted(["10", "9", "100", "1"]) == ["1", "9", "10", "100"]
    # letters before digits compare as text, case first folded; then exactly (a total order)
    assert natural_sorted(["b2", "B1", "a10", "a9"]) == ["a9", "a10", "B1", "b2"]
    assert natural_sorted(["q01", "q1", "q001"]) == ["q1", "q01", "q001"]  # equal numbers: shorter first
    assert natural_sorted(["doc2-7", "doc2-10", "doc10-1"]) == ["doc2-7", "doc2-10", "doc10-1"]
    huge = "9" * 5000  # beyond int()'s 4,300 digits: still ordered
    assert natural_sorted([huge, "8"]) == ["8", huge]


# -- plots -------------------------------------------------------------------------------------------


def test_a_plot_escapes_names_breaks_lines_at_nan_and_has_axes():
    from ragjudge.report import svg

    drawn = svg.line_plot("p", title="P@K <b>", desc='a "desc" & more', x=svg.cutoff_axis("K", [1, 2, 3]),
                          y=svg.value_axis("P@K", [0.5]), xs=[1, 2, 3],
                          series={"<script>x</script>": [0.5, float("nan"), 0.25], "ok": [0.1, 0.2, 0.3]})
    assert "<script>" not in drawn and "&lt;script&gt;x&lt;/script&gt;" in drawn
    assert "<title id=\"p-title\">P@K &lt;b&gt;</title>" in drawn
    assert 'aria-labelledby="p-title p-desc"' in drawn and "&quot;desc&quot; &amp; more" in drawn
    page = parse(drawn)
    hostile, ok = page.find("g", **{"class": "series"})
    # the NaN breaks the first line: two lone points, no polyline; the second has one line of 3
    assert hostile.find("polyline") == [] and len([e for e in hostile.iter() if e.get("data-y")]) == 2
    [line] = ok.find("polyline")
    assert len(line.get("points").split()) == 3
    ticks = [t.text for t in page.find("g", **{"class": "axes"})[0].find("text")]
    assert ticks[:6] == ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"] and {"1", "2", "3"} <= set(ticks)
    assert [t.text for t in page.find("g", **{"class": "legend"})[0].find("text")] == ["<script>x</script>", "ok"]


def test_a_value_axis_grows_past_one_for_measures_that_do():
    from ragjudge.report.svg import nice_step, value_axis

    axis = value_axis("DCG@K", [0.4, 2.7])
    assert (axis.low, axis.high) == (0.0, 3.0) and axis.ticks == (0.0, 1.0, 2.0, 3.0)
    assert value_axis("P@K", [0.3, 0.9]).ticks == (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    # 1, 2 or 5 times a power of ten, about five ticks: 0.2 over 1, 1 over 3, 10 over 40
    assert nice_step(1.0) == 0.2 and nice_step(3.0) == 1.0 and nice_step(40.0) == 10


# -- markdown --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("bm25", "`bm25`"),
    ("a|b", "`a\\|b`"),
    ("x`y", "``x`y``"),
    ("`edge", "`` `edge ``"),
    ("@team *bold* [l](u)", "`@team *bold* [l](u)`"),
    ("line\nbreak", "`line␊break`"),
    ("", ""),
])
def test_markdown_code_spans(text, expected):
    from ragjudge.report.markdown import code

    assert code(text) == expected


# -- digests -------------------------------------------------------------------------------------


def _tiny(db: str, *, rows: list[tuple[str, str, int, float | None]], name: str = "tiny") -> None:
    from projectkit import make_small_project

    from ragjudge.store.schema import Run, RunEntry

    project = make_small_project(db, queries=10, chunks=5)
    try:
        def fill(session) -> None:
            session.add(Run(name=name))
            session.flush()
            session.add_all(RunEntry(run=name, query_id=q, chunk_id=c, rank=r, score=s) for q, c, r, s in rows)
        project.write(fill)
    finally:
        project.close()


def test_a_run_digest_is_its_stated_form_worked_by_hand(tmp_path):
    from ragjudge.services.project.database import Project
    from ragjudge.services.scoring.provenance import run_digests

    db = str(tmp_path / "tiny.db")
    _tiny(db, rows=[("q10", "c03", 1, 0.5), ("q1", "c01", 2, None), ("q1", "c02", 1, 2.0)])
    # query ids in byte order: q1, q10; each query's chunks in rank order; no score: the NaN
    expected = hashlib.sha256(
        b"query_ids |u1 5\n" + b"q1q10"
        + b"query_ids_lengths <u2 2\n" + struct.pack("<2H", 2, 3)
        + b"offsets <i8 3\n" + struct.pack("<3q", 0, 2, 3)
        + b"chunk_ids |u1 9\n" + b"c02c01c03"
        + b"chunk_ids_lengths <u2 3\n" + struct.pack("<3H", 3, 3, 3)
        + b"scores <f8 3\n" + struct.pack("<d", 2.0) + bytes.fromhex("000000000000f87f")
        + struct.pack("<d", 0.5)).hexdigest()
    with Project.open(db) as project:
        assert run_digests(project, ["tiny"]) == {"tiny": expected}


@pytest.mark.slow
def test_a_run_imported_from_a_file_has_the_digest_of_the_same_entries(tmp_path, capsys):
    from ragjudge.services.project.database import Project
    from ragjudge.services.scoring.provenance import run_digests

    db = str(tmp_path / "tiny.db")
    _tiny(db, rows=[("q1", "c02", 1, 2.0), ("q1", "c01", 2, 1.0), ("q10", "c03", 1, 0.5)], name="rows")
    trec = tmp_path / "imported.trec"
    trec.write_text("q10 Q0 c03 1 0.5 x\nq1 Q0 c01 2 1.0 x\nq1 Q0 c02 1 2.0 x\n", encoding="utf-8")
    assert main(["import", "run", str(trec), "--db", db]) == 0
    capsys.readouterr()
    with Project.open(db) as project:
        digests = run_digests(project, ["rows", "imported"])
    assert digests["rows"] == digests["imported"]  # stored as rows or as arrays: one digest


def test_the_label_snapshot_digest_is_its_stated_form(tmp_path):
    from ragjudge.services.labels.events import record_label
    from ragjudge.services.project.database import Project
    from ragjudge.services.scoring.provenance import LABEL_TABLES, label_snapshot

    db = str(tmp_path / "tiny.db")
    _tiny(db, rows=[("q1", "c01", 1, 1.0)])
    with Project.open(db) as project:
        empty = label_snapshot(project)
        record_label(project, annotator="ana", query_id="q1", chunk_id="c01", grade=2, note='say "hi" ✓')
        one = label_snapshot(project)
        assert label_snapshot(project) == one  # nothing changed: the same digest
    with sqlite3.connect(db) as raw:  # read without ragjudge: the columns and the row as stored
        text = ""
        for model in LABEL_TABLES:
            name = model.__tablename__
            columns = [row[1] for row in raw.execute(f"PRAGMA table_info({name})")]
            text += f"# {name} {','.join(columns)}\n"
            for row in raw.execute(f"SELECT * FROM {name} ORDER BY id"):
                values = [v.replace(" ", "T") if c == "created_at" else v for c, v in zip(columns, row)]
                values = [bool(v) if c in ("skipped", "flagged") else v for c, v in zip(columns, values)]
                text += json.dumps(values, ensure_ascii=True, separators=(",", ":")) + "\n"
    assert one.sha256 == hashlib.sha256(text.encode("ascii")).hexdigest() != empty.sha256
    assert '"say \\"hi\\" \\u2713"' in text  # the note, ASCII-escaped as the form says
    assert one.newest == {"labels": 1, "adjudications": None, "nugget_support": None,
                          "facet_links": None, "answer_judgments": None}
    assert one.events["labels"] == 1 and empty.events["labels"] == 0


# -- the comparison service -------------------------------------------------------------------------


def _evaluation(db: str, averaging: str = "judged"):
    from ragjudge.services.project.database import Project
    from ragjudge.services.runs.stored import project_run, project_run_names
    from ragjudge.services.scoring.evaluation import evaluate_all, project_qrels

    with Project.open(db) as project:
        qrels, rule = project_qrels(project)
        runs = {n: project_run(project, n) for n in project_run_names(project)}
        return evaluate_all(qrels, runs, ["P@3", "AP", "RR"], threshold=1, queries=averaging,
                            project=project, rule=rule)


@pytest.mark.slow
def test_compare_all_is_the_metrics_librarys_on_the_paired_queries(tmp_path):
    from ragjudge.metrics.allpairs import compare_all_pairs
    from ragjudge.services.scoring.comparisons import compare_all

    db = str(tmp_path / "small.db")
    small_project(db)
    evaluation = _evaluation(db)
    found = compare_all(evaluation, test="t", correction="bonferroni", seed=3)
    per_query = {n: evaluation.results[n].values.T for n in evaluation.run_names}
    assert found == compare_all_pairs(per_query, evaluation.measures, test="t",
                                      correction="bonferroni", seed=3)
    assert found.correction == "bonferroni" and found.queries == 12
    default = compare_all(evaluation)
    assert (default.test, default.correction) == ("fisher", "holm")
    assert compare_all(evaluation, test="tukey").correction == "none"


@pytest.mark.slow
def test_compare_all_pairs_runs_on_the_queries_they_share(tmp_path):
    """With averaging over the queries a run answers, a run that misses a query is paired with
    the others on the queries it answers."""
    from ragjudge.services.project.database import Project
    from ragjudge.services.scoring.comparisons import compare_all, paired_values
    from ragjudge.store.schema import RunEntry

    db = str(tmp_path / "small.db")
    small_project(db)
    with Project.open(db) as project:
        project.write(lambda s: s.query(RunEntry).filter(RunEntry.run == "dense",
                                                         RunEntry.query_id == "q7").delete())
    evaluation = _evaluation(db, "run")
    order, values = paired_values(evaluation)
    assert "q7" not in order and len(order) == 11
    assert all(v.shape == (3, 11) for v in values.values())
    assert compare_all(evaluation).queries == 11


def test_a_run_without_a_measure_anywhere_leaves_the_others_comparable(demo_file):
    """title_only has no generated answers: the answer measures compare bm25 and hybrid (one
    pair, its own family), the ranking measures all three runs."""
    from ragjudge.services.project.database import Project
    from ragjudge.services.runs.stored import project_run, project_run_names
    from ragjudge.services.scoring.comparisons import compare_all
    from ragjudge.services.scoring.evaluation import evaluate_all, project_qrels

    with Project.open(str(demo_file)) as project:
        qrels, rule = project_qrels(project)
        runs = {n: project_run(project, n) for n in project_run_names(project)}
        evaluation = evaluate_all(qrels, runs, ["AP", "CitationRecall"], project=project, rule=rule)
    found = compare_all(evaluation)
    assert [(p.run_a, p.run_b) for p in found.for_measure("AP")] == [
        ("bm25", "hybrid"), ("bm25", "title_only"), ("hybrid", "title_only")]
    [pair] = found.for_measure("CitationRecall")
    assert (pair.run_a, pair.run_b) == ("bm25", "hybrid") and pair.queries > 30
    assert pair.p_adjusted == pair.p_value  # a family of one pair: Holm changes nothing
    assert found.runs == ("bm25", "hybrid", "title_only")
    assert math.isnan(found.matrix("CitationRecall")[0, 2])


@pytest.mark.parametrize(("options", "says"), [
    ({"test": "z"}, "--test z"),
    ({"correction": "sidak"}, "--correction sidak"),
    ({"test": "tukey", "correction": "bh"}, "Tukey's HSD p-values already hold"),
    ({"alpha": 0.0}, "--alpha 0"),
    ({"resamples": 0}, "--resamples 0"),
    ({"seed": -1}, "--seed -1"),
])
def test_compare_all_refuses_bad_options(tmp_path, options, says):
    from ragjudge.services.scoring.comparisons import compare_all

    db = str(tmp_path / "small.db")
    small_project(db)
    with pytest.raises(UsageError, match=re.escape(says)):
        compare_all(_evaluation(db), **options)


# -- the hook of ragjudge settled ----------------------------------------------------------------------


def _report(db: str, *, work_out: bool = False, **kwargs):
    """The report of ``db`` as ana sees it; ``work_out``: with how settled each comparison is
    worked out (else only what ``settled=`` gives)."""
    from ragjudge.report.build import ReportOptions, build_report
    from ragjudge.services.access.visibility import access_for
    from ragjudge.services.project.database import Project

    with Project.open(db) as project:
        return build_report(project, ReportOptions(measures=("P@3", "AP"), settled=work_out),
                            access=access_for(project, "ana"), **kwargs)


@pytest.mark.slow
def test_the_settled_section_is_rendered_only_when_given(tmp_path):
    from ragjudge.report.html import render_html
    from ragjudge.report.markdown import render_markdown

    db = str(tmp_path / "small.db")
    small_project(db)
    plain = _report(db)
    assert plain.settled is None
    html = render_html(plain)
    assert 'id="settled"' not in html and "How settled" not in html
    assert "How settled" not in render_markdown(plain)

    class Comparison:  # what ragjudge settled returns: attributes and to_dict()
        def to_dict(self) -> dict:
            return {"measure": "AP", "a": "bm25", "b": "dense", "difference": 0.125, "low": 0.05,
                    "high": 0.2, "p_order": 1.0, "status": "certain", "judge_more": 0,
                    "exact": True, "n_queries": 12}

    as_dict = dict(Comparison().to_dict(), measure="P@3", status="open", low=-0.1, exact=False,
                   p_order=0.62, judge_more=7)
    # a probable claim whose p_order rounds to 1 is not printed as the certain one's 1.000
    probable = dict(Comparison().to_dict(), measure="P@5", status="probable", low=-0.01,
                    p_order=0.9996, judge_more=3)
    settled = _report(db, settled=[Comparison(), as_dict, probable])
    from ragjudge.report.build import add_settled

    assert add_settled(_report(db), [Comparison(), as_dict, probable]).settled == settled.settled
    page = parse(render_html(settled))
    rows = page.by_id("settled-table").find("tbody")[0].find("tr")
    assert [[td.text.strip() for td in tr.find("td")][:8] for tr in rows] == [
        ["AP", "bm25", "dense", "+0.1250", "+0.0500", "+0.2000", "1.000", "certain"],
        ["P@3", "bm25", "dense", "+0.1250", "-0.1000 ≤", "+0.2000", "0.620", "open"],
        ["P@5", "bm25", "dense", "+0.1250", "-0.0100", "+0.2000", ">0.999", "probable"]]
    assert float(rows[1].find("td")[3].get("data-value")) == 0.125
    assert float(rows[2].find("td")[6].get("data-value")) == 0.9996  # the number, for sorting
    md = render_markdown(settled)
    assert "## How settled each comparison is" in md
    assert "| `P@3` | `bm25` | `dense` | +0.1250 | -0.1000 (≤) | +0.2000 | 0.620 | open | 7 |" in md
    assert "| `P@5` | `bm25` | `dense` | +0.1250 | -0.0100 | +0.2000 | >0.999 | probable | 3 |" in md


@pytest.mark.slow
def test_labels_that_arrive_meanwhile_are_told(tmp_path, monkeypatch):
    from ragjudge.services.labels.events import record_label
    from ragjudge.services.project.database import Project
    from ragjudge.services.scoring import provenance

    db = str(tmp_path / "small.db")
    small_project(db)
    real = provenance.run_digests

    def with_a_label_meanwhile(project, names):
        with Project.open(db) as other:
            record_label(other, annotator="ben", query_id="q1", chunk_id="c01", grade=3)
        return real(project, names)

    monkeypatch.setattr(provenance, "run_digests", with_a_label_meanwhile)
    report = _report(db)
    assert any("Labels arrived while this report was made (labels ids 73 to 73)" in n for n in report.notes)
    assert report.labels.newest["labels"] == 72  # the digest is of the snapshot taken first
    assert not math.isnan(report.aggregates["bm25"]["AP"]) and np.isfinite(report.aggregates["dense"]["AP"])
