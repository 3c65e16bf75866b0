"""ragjudge agree / assign / disputes / adjudicate / quality through the real entry point."""

from __future__ import annotations

import json

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from clikit import run_cli as _run


nan = np.nan

# Krippendorff (2011) section C: 4 observers × 12 units, values 1..5 (published α nominal 0.743,
# ordinal 0.815, interval 0.849).
KRIPP = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}


def _labels_jsonl(path) -> str:
    lines = []
    for name, grades in KRIPP.items():
        for u, g in enumerate(grades):
            if g is not None:
                lines.append(json.dumps({"query_id": f"q{u % 2}", "chunk_id": f"c{u:02d}",
                                         "annotator": name, "grade": g}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_agree_on_a_labels_file_matches_the_reference_packages(tmp_path, capsys):
    path = _labels_jsonl(tmp_path / "labels.jsonl")
    code, out, err = _run(capsys, "agree", "--labels", path, "--scale", "1-5", "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["annotators"] == ["A", "B", "C", "D"] and d["units"] == 12
    published = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849}
    data = np.array([[nan if g is None else g for g in KRIPP[n]] for n in "ABCD"])
    for level, value in published.items():
        assert round(d["krippendorff_alpha"][level], 3) == value
        ref = krippendorff.alpha(reliability_data=data, level_of_measurement=level,
                                 value_domain=[1, 2, 3, 4, 5])
        assert d["krippendorff_alpha"][level] == pytest.approx(ref)
    # Fleiss' kappa: units have 1 to 4 ratings → null with the reason
    assert d["fleiss_kappa"] is None and "between 1 and 4" in d["undefined"]["fleiss_kappa"]
    for pair in d["pairwise"]:
        a, b = data["ABCD".index(pair["a"])], data["ABCD".index(pair["b"])]
        both = ~(np.isnan(a) | np.isnan(b))
        assert pair["n"] == both.sum()
        for key, weights in (("cohen_kappa", None), ("cohen_kappa_linear", "linear"),
                             ("cohen_kappa_quadratic", "quadratic")):
            ref = cohen_kappa_score(a[both], b[both], labels=[1, 2, 3, 4, 5], weights=weights)
            assert pair[key] == pytest.approx(ref)
        assert len(pair["confusion"]) == 5
    assert "by_query" not in d
    assert d["disputed"][0]["spread"] == 3 and d["disputed"][0]["chunk_id"] == "c05"


def test_agree_labels_csv_infers_the_scale_and_says_so(tmp_path, capsys):
    path = tmp_path / "labels.csv"
    path.write_text("query_id,chunk_id,annotator,grade\nq1,c1,ann,0\nq1,c1,bob,1\n"
                    "q1,c2,ann,1\nq1,c2,bob,1\n", encoding="utf-8")
    code, out, err = _run(capsys, "agree", "--labels", str(path), "--format", "json",
                          "--by", "annotator")
    assert code == 0, err
    d = json.loads(out)
    assert d["scale"] == [0, 1] and "taken from the grades seen" in d["notes"][0]
    assert [a["annotator"] for a in d["by_annotator"]] == ["ann", "bob"]
    assert d["percent_agreement"] == 0.5


def test_agree_rejects_bad_input_without_traceback(tmp_path, capsys):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"query_id": "q1", "chunk_id": "c1", "grade": 1}\n', encoding="utf-8")
    code, out, err = _run(capsys, "agree", "--labels", str(path))
    assert code == 2 and "annotator" in err and "Traceback" not in err
    path.write_text('{"query_id": "q1", "chunk_id": "c1", "grade": 7, "annotator": "a"}\n',
                    encoding="utf-8")
    code, out, err = _run(capsys, "agree", "--labels", str(path), "--scale", "0-3")
    assert code == 2 and "off the scale 0-3" in err and "grade" in err
    code, out, err = _run(capsys, "agree", "--labels", str(path), "--format", "xml")
    assert code == 2 and "--format xml" in err


def _label(project_db, annotator, query, chunk, grade) -> None:
    from ragjudge.services.labels.events import record_label
    from ragjudge.services.project.database import Project

    with Project.open(project_db) as project:
        record_label(project, annotator=annotator, query_id=query, chunk_id=chunk, grade=grade)


@pytest.mark.slow
def test_project_flow_assign_agree_adjudicate_export(project_db, tmp_path, capsys):
    code, out, err = _run(capsys, "assign", "--db", project_db, "--annotators", "ann,bob,cy",
                          "--overlap", "0.5", "--depth", "2", "--format", "json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["new_overlap_pairs"] == round(0.5 * plan["new_pairs"])
    assert set(plan["annotators"]) == {"ann", "bob", "cy"}

    for annotator, grade in (("ann", 0), ("bob", 3), ("cy", 1)):
        _label(project_db, annotator, "q1", "c05", grade)
    for annotator in ("ann", "bob"):
        _label(project_db, annotator, "q1", "c06", 2)

    code, out, err = _run(capsys, "agree", "--db", project_db, "--by", "query", "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["units"] == 2 and d["by_query"][0]["query_id"] == "q1"
    code, out, err = _run(capsys, "agree", "--db", project_db)
    assert code == 0 and "Krippendorff" in out and "disputed pairs" in out

    code, out, err = _run(capsys, "disputes", "--db", project_db, "--format", "json")
    rows = json.loads(out)
    assert [(r["query_id"], r["chunk_id"], r["spread"]) for r in rows] == [("q1", "c05", 3)]

    code, out, err = _run(capsys, "adjudicate", "--db", project_db, "--query", "q1", "--chunk",
                          "c05", "--grade", "2", "--reason", "covers the refund part",
                          "--by", "lead", "--format", "json")
    assert code == 0, err
    detail = json.loads(out)
    assert detail["adjudicated"] == 2
    assert {lab["annotator"]: lab["grade"] for lab in detail["labels"]} == {"ann": 0, "bob": 3, "cy": 1}

    qrels = tmp_path / "gold.qrels"
    code, out, err = _run(capsys, "export", "qrels", "--db", project_db, "-o", str(qrels))
    assert code == 0, err
    lines = {tuple(line.split()[::2]): line.split()[3] for line in qrels.read_text().splitlines()}
    assert lines[("q1", "c05")] == "2"  # the adjudication, not the median (1)

    code, out, err = _run(capsys, "adjudicate", "--db", project_db, "--query", "q1", "--chunk",
                          "c05", "--grade", "9", "--reason", "x")
    assert code == 2 and "off the project's scale" in err


def test_quality_and_assign_errors(project_db, capsys):
    code, out, err = _run(capsys, "quality", "--db", project_db, "--format", "json")
    assert code == 0, err
    assert set(json.loads(out)) == {"fast_labels", "fast_label_counts", "grade_drift",
                                      "self_agreement", "drift_rule"}
    code, out, err = _run(capsys, "assign", "--db", project_db, "--annotators", "ann",
                          "--runs", "nope")
    assert code == 2 and "no run named nope" in err


@pytest.mark.slow
def test_agree_verdict_json_and_table(project_db, capsys):
    # bob grades q1's first chunks of bm25 relevant, ann the rest: their rankings of the one
    # run against itself cannot differ, so tau is undefined with a reason, and the table says so
    for j in range(5, 10):
        _label(project_db, "ann", "q1", f"c{j:02d}", 0)
        _label(project_db, "bob", "q1", f"c{j:02d}", 1)
    code, out, err = _run(capsys, "agree", "--db", project_db, "--verdict", "--measures", "P@5",
                          "--format", "json")
    assert code == 0, err
    verdict = json.loads(out)["verdict"]
    m = verdict["measures"][0]
    assert m["scores"]["ann"]["bm25"] == 0.0 and m["scores"]["bob"]["bm25"] == 1.0
    assert m["tau_reason"] == "fewer than two runs"
    assert m["largest_change"]["delta"] in (-1.0, 1.0)
    code, out, err = _run(capsys, "agree", "--db", project_db, "--verdict", "--measures", "P@5")
    assert code == 0 and "Does disagreement change the verdict?" in out
    code, out, err = _run(capsys, "agree", "--labels", "x.jsonl", "--verdict")
    assert code == 2 and "--verdict needs a project" in err
