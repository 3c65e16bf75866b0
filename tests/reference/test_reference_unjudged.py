"""A qrels line with a negative grade means what trec_eval reads in it, in a project as in
``eval --qrels``: the pair is in the pool and not judged. ``import qrels`` leaves such lines out
and says how many; for a complete reference (``--reference --complete``) it records them as the
reference's skips, so that its closed world leaves those pairs unjudged instead of making them
not relevant: in the gold, ``export qrels``, Judged@k and bpref, the pool's coverage, agreement
with the reference, and the live evaluation."""

from __future__ import annotations

import json
import math

import pytest
import pytrec_eval
from projectkit import make_small_project
from clikit import run_cli as _run

from ragjudge.services.labels.events import record_label

MEASURES = ["P@5", "AP", "bpref", "Judged@10"]


from clikit import no_project  # noqa: E402, F401 - autouse: no project named by the environment


def _bm25(i: int) -> list[str]:
    """make_small_project's run bm25 for query q{i}: chunk (3i + rank) % 20 + 1, ranks 1-10."""
    return [f"c{(i * 3 + rank) % 20 + 1:02d}" for rank in range(1, 11)]


def _official() -> dict[str, dict[str, int]]:
    """Relevant-only qrels of q1 and q2, three of their pool's pairs listed as unjudged (-1,
    -2), and for q1 one relevant chunk the run never retrieves."""
    one, two = _bm25(1), _bm25(2)
    outside = next(f"c{j:02d}" for j in range(1, 21) if f"c{j:02d}" not in one)
    return {"q1": {one[0]: 2, one[1]: -1, one[2]: -2, one[4]: 1, outside: 3},
            "q2": {two[0]: 1, two[3]: -1}}


UNJUDGED = {("q1", _bm25(1)[1]), ("q1", _bm25(1)[2]), ("q2", _bm25(2)[3])}


def _closed_world() -> dict[str, dict[str, int]]:
    """The reference as trec_eval would need it written out: every chunk the run retrieves on
    its queries judged (0 unless listed), the unjudged lines kept as they are."""
    out = {q: dict(chunks) for q, chunks in _official().items()}
    for i, q in ((1, "q1"), (2, "q2")):
        for chunk in _bm25(i):
            out[q].setdefault(chunk, 0)
    return out


@pytest.fixture
def db(tmp_path):
    path = str(tmp_path / "p.db")
    make_small_project(path, queries=5, chunks=20).close()
    return path


@pytest.fixture
def qrels(tmp_path):
    path = tmp_path / "official.qrels"
    path.write_text("".join(f"{q} 0 {c} {g}\n" for q, chunks in _official().items()
                            for c, g in chunks.items()), encoding="utf-8")
    return path


def _import(capsys, db, qrels, *flags: str) -> str:
    code, _, err = _run(capsys, "--db", db, "import", "qrels", qrels, "--annotator", "nist", *flags)
    assert code == 0, err
    return " ".join(err.split())  # the summary as words (the terminal may wrap it)


def _per_query(capsys, *args: str) -> dict[str, dict[str, float]]:
    code, out, err = _run(capsys, *args, "--format", "json", "--per-query",
                          *(a for m in MEASURES for a in ("-m", m)))
    assert code == 0, err
    return json.loads(out)["runs"]["bm25"]["per_query"]


def _gold(db: str) -> dict[tuple[str, str], int]:
    from ragjudge.services.gold.qrels import gold_qrels
    from ragjudge.services.project.database import Project

    with Project.open(db) as project:
        return {(q, c): g for q, c, g in gold_qrels(project)}


def test_without_complete_the_negative_lines_are_left_out_and_counted(capsys, db, qrels):
    err = _import(capsys, db, qrels, "--reference")
    assert "7 read, 4 added" in err
    assert "3 lines with a negative grade were read as unjudged and not imported" in err
    gold = _gold(db)
    assert not UNJUDGED & set(gold) and len(gold) == 4


def test_a_complete_reference_leaves_its_unjudged_pairs_out_of_its_closed_world(capsys, db, qrels, tmp_path):
    err = _import(capsys, db, qrels, "--reference", "--complete")
    assert "3 lines with a negative grade were read as unjudged and recorded as skipped" in err
    gold = _gold(db)
    assert not UNJUDGED & set(gold)  # neither judged nor made "not relevant"
    closed = {(q, c) for q, chunks in _closed_world().items() for c, g in chunks.items() if g >= 0}
    assert set(gold) == closed  # 10 + 10 pool pairs, less the 3 unjudged, plus q1's outside chunk
    assert gold[("q1", _bm25(1)[3])] == 0  # unlisted: not relevant
    # Judged@10 by hand: q1 ranks 2 unjudged chunks in its top 10 (8/10), q2 one (9/10); the
    # other measures as trec_eval reads the closed world written out with its -1 and -2 lines
    project = _per_query(capsys, "--db", db, "eval", "--run", "bm25")
    assert project["q1"]["Judged@10"] == pytest.approx(0.8)
    assert project["q2"]["Judged@10"] == pytest.approx(0.9)
    run = {f"q{i}": {c: 1.0 / r for r, c in enumerate(_bm25(i), start=1)} for i in (1, 2)}
    scores = pytrec_eval.RelevanceEvaluator(_closed_world(), {"P_5", "map", "bpref"}).evaluate(run)
    for q in ("q1", "q2"):
        assert project[q]["P@5"] == pytest.approx(scores[q]["P_5"], abs=1e-12)
        assert project[q]["AP"] == pytest.approx(scores[q]["map"], abs=1e-12)
        assert project[q]["bpref"] == pytest.approx(scores[q]["bpref"], abs=1e-12)
    # export qrels writes the closed world without the unjudged pairs: the same numbers again
    exported = tmp_path / "exported.qrels"
    code, _, err = _run(capsys, "--db", db, "export", "qrels", "-o", exported)
    assert code == 0, err
    written = {tuple(line.split()[::2][:2]) for line in exported.read_text().splitlines()}
    assert not UNJUDGED & written
    run_file = tmp_path / "bm25.trec"
    run_file.write_text("".join(f"q{i} Q0 {c} {r} {1.0 / r} bm25\n" for i in range(1, 6)
                                for r, c in enumerate(_bm25(i), start=1)), encoding="utf-8")
    assert _per_query(capsys, "eval", "--qrels", exported, "--run", run_file) == project


def test_the_pool_counts_the_unjudged_pairs_as_unjudged(capsys, db, qrels):
    _import(capsys, db, qrels, "--reference", "--complete")
    code, out, err = _run(capsys, "--db", db, "status", "--format", "json")
    assert code == 0, err
    pool = json.loads(out)["pool"]
    assert pool["pairs"] == 50  # 5 queries x top 10
    assert pool["judged"] == 17 and pool["by_annotator"]["nist"] == 17  # 20 less 3 unjudged


def test_an_unjudged_pair_is_decided_by_the_other_annotators(capsys, db, qrels):
    from ragjudge.services.project.database import Project

    _import(capsys, db, qrels, "--reference", "--complete")
    skipped, unlisted = _bm25(1)[1], _bm25(1)[5]
    with Project.open(db) as project:
        record_label(project, annotator="ana", query_id="q1", chunk_id=skipped, grade=3)
        record_label(project, annotator="ana", query_id="q1", chunk_id=unlisted, grade=3)
    gold = _gold(db)
    assert gold[("q1", skipped)] == 3  # the reference did not judge it: the rule decides
    assert gold[("q1", unlisted)] == 0  # the reference's implied "not relevant" decides
    # agreement with the reference: ana is compared on the unlisted pair (implied 0), not on
    # the pair the reference did not judge
    code, out, err = _run(capsys, "--db", db, "agree", "--format", "json")
    assert code == 0, err
    (row,) = json.loads(out)["reference"]["annotators"]
    assert row["name"] == "ana" and row["n"] == 1 and row["accuracy"] == 0.0


def test_the_live_evaluation_closes_the_same_world(capsys, db, qrels):
    from ragjudge.services.project.database import Project
    from ragjudge.services.runs import stored
    from ragjudge.services.scoring import evaluation, live

    _import(capsys, db, qrels, "--reference", "--complete")
    with Project.open(db) as project:
        record_label(project, annotator="ana", query_id="q1", chunk_id=_bm25(1)[1], grade=2)
        engine = live.LiveEvaluation(project, measures=MEASURES)
        engine.load()
        expected = evaluation.evaluate_all(
            *evaluation.project_qrels(project, None)[:1],
            {n: stored.project_run(project, n) for n in stored.project_run_names(project)},
            MEASURES, threshold=project.scale.threshold, project=project, rule=engine.rule)
        snap = engine.snapshot()
        for m, value in expected.aggregate("bm25").items():
            got = snap.means["bm25"][m]
            assert got == value or (math.isnan(got) and math.isnan(value)), (m, got, value)
        # a label on the pair the reference left unjudged moves the live numbers as eval's
        record_label(project, annotator="ana", query_id="q2", chunk_id=_bm25(2)[3], grade=3)
        engine.poll()
        expected = evaluation.evaluate_all(
            *evaluation.project_qrels(project, None)[:1],
            {n: stored.project_run(project, n) for n in stored.project_run_names(project)},
            MEASURES, threshold=project.scale.threshold, project=project, rule=engine.rule)
        snap = engine.snapshot()
        for m, value in expected.aggregate("bm25").items():
            got = snap.means["bm25"][m]
            assert got == value or (math.isnan(got) and math.isnan(value)), (m, got, value)
