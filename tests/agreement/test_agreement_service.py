"""services.agreement on a small SQLite project: current labels into ratings, breakdowns,
disputed pairs, adjudication into gold qrels, label-quality signals."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pytest
from projectkit import rights

from ragjudge.errors import UsageError
from ragjudge.services.agreement import quality as svc_quality
from ragjudge.services.agreement import ratings as svc_ratings
from ragjudge.services.agreement import verdict as svc_verdict
from ragjudge.services.agreement import views as svc_views
from ragjudge.services.gold import pairs as svc_pairs
from ragjudge.services.gold import adjudication as svc_adjudication
from ragjudge.services.labels.events import record_label, skip_pair
from ragjudge.services.gold.qrels import gold_qrels
from ragjudge.store.schema import Annotator, Label

T0 = datetime(2026, 1, 1, 9, 0, 0)


def add_labels(project, rows) -> None:
    """Bulk insert (annotator, query, chunk, grade[, duration_ms[, source]]) label events."""

    def work(session) -> None:
        names = {r[0] for r in rows}
        existing = {a.name for a in session.query(Annotator).all()}
        session.add_all(Annotator(name=n) for n in sorted(names - existing))
        session.flush()
        for i, r in enumerate(rows):
            annotator, query_id, chunk_id, grade = r[:4]
            duration = r[4] if len(r) > 4 else None
            source = r[5] if len(r) > 5 else "tui"
            session.add(Label(annotator=annotator, query_id=query_id, chunk_id=chunk_id,
                              grade=grade, duration_ms=duration, source=source,
                              created_at=T0 + timedelta(seconds=i)))

    project.write(work)


# Krippendorff (2011) section C reliability data, rescaled 1..5 → 0..4 would leave the 0-3
# scale; use its first 9 units with grades 1..4 minus 1 (all within 0..3).
DATA = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2],
}


def _fill(project) -> None:
    rows = []
    for name, grades in DATA.items():
        for u, g in enumerate(grades):
            if g is not None:
                query = f"q{u % 3 + 1}"
                rows.append((name, query, f"c{u + 1:02d}", g - 1))
    add_labels(project, rows)


def test_load_ratings_uses_the_newest_non_recheck_event(project):
    add_labels(project, [
        ("ann", "q1", "c01", 0), ("ann", "q1", "c01", 2),  # changed mind: 2 counts
        ("bob", "q1", "c01", 2), ("bob", "q1", "c01", 0, None, "recheck"),  # recheck ignored
        ("ann", "q1", "c02", 1), ("ann", "q1", "c02", None),  # undone: no grade now
        ("bob", "q1", "c02", 3),
    ])
    r = svc_ratings.load_ratings(project)
    assert r.annotators == ("ann", "bob")
    assert r.units == (("q1", "c01"), ("q1", "c02"))
    np.testing.assert_array_equal(r.matrix, [[2, 2], [np.nan, 3]])
    assert r.scale == (0, 3)


def test_project_agreement_matches_the_library_on_the_same_matrix(project):
    _fill(project)
    view = svc_views.project_agreement(project, access=rights(project))
    matrix = np.array([[np.nan if g is None else g - 1 for g in DATA[n]] for n in "ABCD"]).T
    from ragjudge.metrics.agreement import krippendorff_alpha

    # units are sorted by (query, chunk), a permutation that does not change alpha
    expected = krippendorff_alpha(matrix, "ordinal", scale=(0, 3)).value
    assert view.report.krippendorff_alpha["ordinal"].value == pytest.approx(expected)
    d = view.to_dict()
    assert d["annotators"] == ["A", "B", "C", "D"]
    assert d["units"] == 9
    assert [q["query_id"] for q in d["by_query"]] == ["q1", "q2", "q3"]
    assert sum(q["units"] for q in d["by_query"]) == 9
    by_ann = {a["annotator"]: a for a in d["by_annotator"]}
    assert by_ann["C"]["labels"] == 8
    assert by_ann["A"]["grade_distribution"] == {"0": 3, "1": 3, "2": 2, "3": 1}
    # A vs B, C, D over shared units: B 8/9 agree, C 5/8, D 8/9 → 21/26
    assert by_ann["A"]["percent_agreement_with_others"] == pytest.approx(21 / 26)
    # disputed pairs carry the query and chunk, largest spread first: unit 6 (A..D = 1,2,3,4)
    first = d["disputed"][0]
    assert (first["query_id"], first["chunk_id"], first["spread"]) == ("q3", "c06", 3)


def test_disputed_pairs_then_adjudication_reaches_gold_qrels(project):
    _fill(project)
    pairs = svc_views.disputed_pairs(project, access=rights(project))
    assert pairs[0]["chunk_id"] == "c06" and pairs[0]["adjudicated"] is None
    svc_adjudication.adjudicate(project, query_id="q3", chunk_id="c06", grade=1, reason="guideline 3b", access=rights(project, "lead"))
    assert svc_views.disputed_pairs(project, access=rights(project))[0]["adjudicated"] == 1
    gold = {(q, c): g for q, c, g in gold_qrels(project, "max")}
    assert gold[("q3", "c06")] == 1  # adjudication beats the max rule (3)
    detail = svc_pairs.pair_detail(project, "q3", "c06", access=rights(project))
    assert [lab.grade for lab in detail.labels] == [0, 1, 2, 3]
    assert detail.adjudicated == 1 and detail.adjudications[0]["reason"] == "guideline 3b"


def test_adjudicate_rejects_bad_input(project):
    with pytest.raises(UsageError, match="off the project's scale"):
        svc_adjudication.adjudicate(project, query_id="q1", chunk_id="c01", grade=7, reason="x", access=rights(project, "lead"))
    with pytest.raises(UsageError, match="reason"):
        svc_adjudication.adjudicate(project, query_id="q1", chunk_id="c01", grade=1, reason=" ", access=rights(project, "lead"))
    with pytest.raises(UsageError, match="no query"):
        svc_adjudication.adjudicate(project, query_id="nope", chunk_id="c01", grade=1, reason="r", access=rights(project, "lead"))


def test_pair_detail_sums_time_spent_and_keeps_notes(project):
    record_label(project, annotator="ann", query_id="q1", chunk_id="c01", grade=1,
                 duration_ms=4000, note="half relevant")
    record_label(project, annotator="ann", query_id="q1", chunk_id="c01", grade=2, duration_ms=1500)
    skip_pair(project, annotator="bob", query_id="q1", chunk_id="c01", duration_ms=900)
    detail = svc_pairs.pair_detail(project, "q1", "c01", access=rights(project))
    by = {lab.annotator: lab for lab in detail.labels}
    assert by["ann"].grade == 2 and by["ann"].duration_ms == 5500
    assert by["bob"].grade is None and by["bob"].skipped


def test_fast_labels_by_chunk_length(project):
    # chunk texts are "chunk N" (7-8 characters): the floor of 700 ms decides
    add_labels(project, [("ann", "q1", "c01", 1, 300), ("ann", "q1", "c02", 1, 5000),
                         ("ann", "q1", "c03", 1, None)])
    fast = svc_quality.fast_labels(project)
    assert [(f["chunk_id"], f["duration_ms"]) for f in fast] == [("c01", 300)]
    # a long chunk needs more time: 1500 chars at 75 chars/s = 20 s
    def lengthen(session) -> None:
        from ragjudge.store.schema import Chunk

        session.get(Chunk, "c02").text = "x" * 1500

    project.write(lengthen)
    assert {f["chunk_id"] for f in svc_quality.fast_labels(project)} == {"c01", "c02"}


def test_grade_drift_and_self_agreement(project):
    steady = [("ann", "q1", f"c{j:02d}", j % 2) for j in range(1, 21)]
    drifting = [("bob", "q2", f"c{j:02d}", 0 if j <= 10 else 3) for j in range(1, 21)]
    rechecks = [("ann", "q1", "c01", 1, None, "recheck"), ("ann", "q1", "c02", 1, None, "recheck")]
    add_labels(project, steady + drifting + rechecks)
    drift = {d["annotator"]: d for d in svc_quality.grade_drift(project)}
    assert not drift["ann"]["drifting"]
    assert drift["bob"]["drifting"] and drift["bob"]["mean_second"] - drift["bob"]["mean_first"] == 3
    # ann's c01 is 1 (recheck 1: same), c02 is 0 (recheck 1: differs, within 1)
    assert svc_quality.self_agreement(project) == [
        {"annotator": "ann", "rechecks": 2, "self_agreement": 0.5, "within_1": 1.0}
    ]


def test_empty_project_gives_undefined_statistics(project):
    d = svc_views.project_agreement(project, access=rights(project)).to_dict()
    assert d["units"] == 0 and d["krippendorff_alpha"]["nominal"] is None
    assert d["by_query"] == [] and d["by_annotator"] == []


def _two_runs_and_opposed_annotators(project) -> None:
    from ragjudge.store.schema import Run, RunEntry

    # bm25 ranks q1's chunks c05..c14 (conftest); dense ranks them in reverse
    def add_dense(session) -> None:
        session.add(Run(name="dense"))
        session.flush()
        for rank, j in enumerate(range(14, 4, -1), start=1):
            session.add(RunEntry(run="dense", query_id="q1", chunk_id=f"c{j:02d}", rank=rank,
                                 score=1.0 / rank))

    project.write(add_dense)
    rows = []
    for j in range(5, 15):
        top = j <= 9  # bm25's top 5
        rows += [("ann", "q1", f"c{j:02d}", int(top)), ("cy", "q1", f"c{j:02d}", int(top)),
                 ("bob", "q1", f"c{j:02d}", int(not top))]
    add_labels(project, rows)


def test_verdict_kendall_tau_and_largest_change(project):
    _two_runs_and_opposed_annotators(project)
    v = svc_verdict.verdict_stability(project, measures=["P@5", "AP"])
    assert v["runs"] == ["bm25", "dense"] and v["qrels"] == ["gold", "ann", "bob", "cy"]
    p5 = v["measures"][0]
    assert p5["measure"] == "P@5"
    # gold (lower median of ann, bob, cy) = ann's grades: bm25's top 5 relevant → P@5 1 vs 0
    assert p5["scores"]["gold"] == {"bm25": 1.0, "dense": 0.0}
    assert p5["scores"]["bob"] == {"bm25": 0.0, "dense": 1.0}
    assert p5["tau"] == {"ann": 1.0, "bob": -1.0, "cy": 1.0}
    assert p5["min_tau"] == -1.0 and p5["mean_tau"] == pytest.approx(1 / 3)
    assert p5["largest_change"] == {"run": "bm25", "qrels": "bob", "gold": 1.0, "value": 0.0,
                                    "delta": -1.0}
    assert p5["winner"]["gold"] == "bm25" and p5["winner"]["bob"] == "dense"
    assert p5["winner_changes"]


def test_verdict_with_one_run_says_why_tau_is_undefined(project):
    add_labels(project, [("ann", "q1", "c05", 1), ("bob", "q1", "c05", 0)])
    v = svc_verdict.verdict_stability(project, measures=["P@5"])
    m = v["measures"][0]
    assert m["min_tau"] is None and m["tau_reason"] == "fewer than two runs"
    assert m["tau_undefined"]["ann"] == "fewer than two items to rank"
