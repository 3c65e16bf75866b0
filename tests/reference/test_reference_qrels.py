"""Official qrels imported as a reference annotator: the gold on their pairs whatever others
label, and with ``--complete`` a closed world (an unlisted pair of the reference's queries is
judged not relevant) for Judged@k, pool coverage and agreement."""

from __future__ import annotations

import json

import numpy as np
import pytest
import pytrec_eval
from projectkit import make_small_project, rights, screen_app
from sklearn.metrics import cohen_kappa_score
from clikit import run_cli as _run

from ragjudge.services.labels.events import record_label

pytestmark = pytest.mark.slow

MEASURES = ["P@5", "R@10", "AP", "nDCG@10", "RR"]
TREC = {"P@5": "P_5", "R@10": "recall_10", "AP": "map", "nDCG@10": "ndcg_cut_10", "RR": "recip_rank"}


from clikit import no_project  # noqa: E402, F401 - autouse: no project named by the environment


def _bm25(i: int) -> list[str]:
    """make_small_project's run bm25 for query q{i} (20 chunks): chunk (3i + rank) % 20 + 1."""
    return [f"c{(i * 3 + rank) % 20 + 1:02d}" for rank in range(1, 11)]


def _official() -> dict[str, dict[str, int]]:
    """Relevant-only qrels of q1..q4 (as Vaswani or many BEIR sets): two chunks of the run's
    top 10 and one chunk the run never retrieves."""
    out = {}
    for i in range(1, 5):
        top = _bm25(i)
        outside = next(f"c{j:02d}" for j in range(1, 21) if f"c{j:02d}" not in top)
        out[f"q{i}"] = {top[i - 1]: 2, top[i + 3]: 1, outside: 3}
    return out


@pytest.fixture
def files(tmp_path):
    qrels = tmp_path / "official.qrels"
    qrels.write_text("".join(f"{q} 0 {c} {g}\n" for q, chunks in _official().items()
                             for c, g in chunks.items()), encoding="utf-8")
    run = tmp_path / "bm25.trec"
    run.write_text("".join(f"q{i} Q0 {c} {r} {1.0 / r} bm25\n" for i in range(1, 6)
                           for r, c in enumerate(_bm25(i), start=1)), encoding="utf-8")
    return qrels, run


@pytest.fixture
def db(tmp_path):
    path = str(tmp_path / "p.db")
    make_small_project(path, queries=5, chunks=20).close()
    return path


def _disagree(db: str) -> None:
    """ana and ben both call every official relevant chunk of q1..q3 not relevant, and judge a
    few other pool pairs of those queries not relevant."""
    from ragjudge.services.project.database import Project

    with Project.open(db) as project:
        for i in range(1, 4):
            q = f"q{i}"
            for chunk in _official()[q]:
                record_label(project, annotator="ana", query_id=q, chunk_id=chunk, grade=0)
                record_label(project, annotator="ben", query_id=q, chunk_id=chunk, grade=0)
            for chunk in _bm25(i)[6:9]:
                if chunk not in _official()[q]:
                    record_label(project, annotator="ana", query_id=q, chunk_id=chunk, grade=0)
                    record_label(project, annotator="ben", query_id=q, chunk_id=chunk, grade=1)


def _means(capsys, *args: str) -> dict[str, float]:
    code, out, err = _run(capsys, *args, "--format", "json", *(a for m in MEASURES for a in ("-m", m)))
    assert code == 0, err
    return json.loads(out)["runs"]["bm25"]["aggregate"]


def test_official_numbers_survive_other_annotators_labels(capsys, db, files):
    qrels, run = files
    assert _run(capsys, "--db", db, "import", "qrels", qrels, "--annotator", "nist", "--reference")[0] == 0
    _disagree(db)
    official = _means(capsys, "eval", "--qrels", qrels, "--run", run)
    project = _means(capsys, "--db", db, "eval", "--run", "bm25")
    assert project == official
    evaluator = pytrec_eval.RelevanceEvaluator(_official(), set(TREC.values()))
    scores = evaluator.evaluate({f"q{i}": {c: 1.0 / r for r, c in enumerate(_bm25(i), start=1)}
                                 for i in range(1, 6)})
    for m, key in TREC.items():
        assert project[m] == pytest.approx(np.mean([scores[q][key] for q in sorted(scores)]), abs=1e-12)
    # every rule keeps the official grades on the official pairs (ana 0 and ben 1 elsewhere:
    # these rules make the other pairs 0, so the numbers are the official ones)
    for rule in ("median", "majority", "min"):
        assert _means(capsys, "--db", db, "eval", "--run", "bm25", "--rule", rule) == official


def test_without_reference_the_same_labels_move_the_numbers(capsys, db, files):
    """The finding: official qrels as one more opinion lose to two annotators."""
    qrels, run = files
    assert _run(capsys, "--db", db, "import", "qrels", qrels, "--annotator", "nist")[0] == 0
    _disagree(db)
    assert _means(capsys, "--db", db, "eval", "--run", "bm25") != _means(
        capsys, "eval", "--qrels", qrels, "--run", run)


def test_adjudication_still_comes_first(capsys, db, files):
    from ragjudge.services.gold.adjudication import adjudicate
    from ragjudge.services.project.database import Project
    from ragjudge.services.gold.qrels import gold_qrels

    qrels, _ = files
    _run(capsys, "--db", db, "import", "qrels", qrels, "--annotator", "nist", "--reference")
    _disagree(db)
    chunk = _bm25(1)[0]
    with Project.open(db) as project:
        adjudicate(project, query_id="q1", chunk_id=chunk, grade=0, reason="off topic", access=rights(project, "lead"))
        gold = {(q, c): g for q, c, g in gold_qrels(project)}
    assert gold[("q1", chunk)] == 0
    assert gold[("q1", _bm25(1)[4])] == 1  # the reference's grade, not the annotators' 0
    assert gold[("q1", _bm25(1)[7])] == 0  # no reference grade: the rule (lower median of 0, 1)


def test_the_import_marks_the_reference_in_the_roster(capsys, db, files):
    from ragjudge.services.access import roster
    from ragjudge.services.project.database import Project

    qrels, _ = files
    code, _, err = _run(capsys, "--db", db, "import", "qrels", qrels, "--annotator", "nist",
                        "--reference", "--complete")
    assert code == 0 and "Reference annotator: nist (complete" in err
    with Project.open(db) as project:
        found = roster.member(project, "nist")
    assert found is not None and found.reference and found.complete


def test_complete_needs_reference_and_changes_nothing(capsys, db, files):
    qrels, _ = files
    code, _, err = _run(capsys, "--db", db, "import", "qrels", qrels, "--complete")
    assert code == 2 and "--complete" in err and "Nothing was imported" in err
    code, _, err = _run(capsys, "--db", db, "import", "chunks", qrels, "--reference")
    assert code == 2 and "--reference" in err
    code, out, _ = _run(capsys, "--db", db, "status", "--format", "json")
    assert json.loads(out)["labels"] == 0


def _status_pool(capsys, db: str) -> dict:
    code, out, err = _run(capsys, "--db", db, "status", "--format", "json")
    assert code == 0, err
    return json.loads(out)["pool"]


def test_relevant_only_qrels_never_make_the_pool_more_than_judged(capsys, db, files):
    qrels, _ = files
    _run(capsys, "--db", db, "import", "qrels", qrels, "--annotator", "nist", "--reference")
    pool = _status_pool(capsys, db)
    # 12 official pairs, 8 of them in the pool (50 pairs: 5 queries x top 10)
    assert pool["pairs"] == 50 and pool["judged"] == 8
    assert pool["by_annotator"]["nist"] == 8 <= pool["pairs"]


def test_complete_closes_the_world_of_the_reference_queries(capsys, db, files):
    qrels, run = files
    _run(capsys, "--db", db, "import", "qrels", qrels, "--annotator", "nist", "--reference", "--complete")
    pool = _status_pool(capsys, db)
    assert pool["judged"] == 40 and pool["by_annotator"]["nist"] == 40  # q1..q4's whole pool
    assert pool["judged"] <= pool["pairs"]
    code, out, err = _run(capsys, "--db", db, "eval", "--run", "bm25", "-m", "Judged@10",
                          "--per-query", "--format", "json")
    assert code == 0, err
    per_query = json.loads(out)["runs"]["bm25"]["per_query"]
    assert {q: v["Judged@10"] for q, v in per_query.items()} == {f"q{i}": 1.0 for i in range(1, 5)}
    # the relevance measures are those of the official qrels, as trec_eval reads them
    assert _means(capsys, "--db", db, "eval", "--run", "bm25") == _means(
        capsys, "eval", "--qrels", qrels, "--run", run)


def test_complete_makes_kappa_against_the_reference_meaningful(capsys, db, files):
    from ragjudge.services.project.database import Project

    qrels, _ = files
    _run(capsys, "--db", db, "import", "qrels", qrels, "--annotator", "nist", "--reference", "--complete")
    official = _official()
    mine = {}
    with Project.open(db) as project:
        for i in (1, 2):
            for rank, chunk in enumerate(_bm25(i)):
                grade = (rank * 7 + i) % 4
                record_label(project, annotator="ana", query_id=f"q{i}", chunk_id=chunk, grade=grade)
                mine[(f"q{i}", chunk)] = grade
    code, out, err = _run(capsys, "--db", db, "agree", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["reference"]["name"] == "nist"
    (row,) = data["reference"]["annotators"]
    pairs = sorted(mine)
    truth = [official[q].get(c, 0) for q, c in pairs]
    given = [mine[p] for p in pairs]
    assert row["name"] == "ana" and row["n"] == len(pairs) == 20
    assert row["kappa"] == pytest.approx(cohen_kappa_score(truth, given), abs=1e-12)
    assert row["accuracy"] == pytest.approx(np.mean(np.array(truth) == np.array(given)))
    assert np.array(row["confusion"]).sum() == 20
    assert np.array(row["confusion"])[0].sum() == truth.count(0)  # reference rows


def test_one_grade_only_is_a_warning_not_kappa_zero(capsys, db, files):
    """Relevant-only qrels without --complete: on the shared pairs the reference has one grade;
    κ is not 0 but undefined with the reason, and the table warns."""
    from ragjudge.services.project.database import Project

    qrels, _ = files
    flat = qrels.parent / "flat.qrels"
    flat.write_text("".join(f"{q} 0 {c} 1\n" for q, chunks in _official().items() for c in chunks),
                    encoding="utf-8")
    _run(capsys, "--db", db, "import", "qrels", flat, "--annotator", "nist", "--reference")
    with Project.open(db) as project:
        for q, chunks in _official().items():
            for k, chunk in enumerate(chunks):
                record_label(project, annotator="ana", query_id=q, chunk_id=chunk, grade=k % 2)
    code, out, err = _run(capsys, "--db", db, "agree", "--format", "json")
    data = json.loads(out)
    (row,) = data["reference"]["annotators"]
    assert row["kappa"] is None and "one grade only (1)" in row["undefined"]["kappa"]
    assert any("nist gave one grade only" in w for w in data["warnings"])
    code, out, err = _run(capsys, "--db", db, "agree")
    assert code == 0
    assert "against the reference nist" in out and "degenerate" in out
    assert "0.000" not in out.split("against the reference")[1].split("\n")[3]
    assert "Warning" in err and "one grade only" in err


def test_the_agreement_screen_shows_the_reference_and_the_degenerate_warning(capsys, db, files):
    from ragjudge.services.project.database import Project

    qrels, _ = files
    _run(capsys, "--db", db, "import", "qrels", qrels, "--annotator", "nist", "--reference")
    project = Project.open(db)
    for q, chunks in _official().items():
        for k, chunk in enumerate(chunks):
            record_label(project, annotator="ana", query_id=q, chunk_id=chunk, grade=k % 2)

    overview, pairs = _agreement_text(project)
    project.close()
    # official grades 1..3 on these pairs, ana 0/1: not degenerate; the reference's row shows κ
    assert "against the reference nist" in overview
    ana = next(line for line in overview.splitlines() if line.strip().startswith("ana"))
    assert "12" in ana and "degenerate" not in ana
    assert "degenerate" not in pairs


def test_the_agreement_screen_warns_on_one_grade_only(capsys, db, files):
    from ragjudge.services.project.database import Project

    qrels, _ = files
    flat = qrels.parent / "flat.qrels"
    flat.write_text("".join(f"{q} 0 {c} 1\n" for q, chunks in _official().items() for c in chunks),
                    encoding="utf-8")
    _run(capsys, "--db", db, "import", "qrels", flat, "--annotator", "nist", "--reference")
    project = Project.open(db)
    for q, chunks in _official().items():
        for k, chunk in enumerate(chunks):
            record_label(project, annotator="ana", query_id=q, chunk_id=chunk, grade=k % 2)

    overview, pairs = _agreement_text(project)
    project.close()
    ana = next(line for line in overview.splitlines() if line.strip().startswith("ana"))
    assert "degenerate" in ana and "0.000" not in ana
    assert "κ is degenerate for ana and nist: nist gave one grade only (1) on the 12 shared units" in overview
    row = next(line for line in pairs.splitlines() if line.strip().startswith("ana"))
    assert row.count("degenerate") == 3  # κ, linear and quadratic κ: no 0.000


def _agreement_text(project) -> tuple[str, str]:
    """The agreement screen's overview and pairs tabs, as text, once computed."""
    import asyncio
    import io

    from rich.console import Console
    from textual.widgets import Static

    from ragjudge.tui.screens.agreement import AgreementScreen

    def Host():
        return screen_app(project, lambda: AgreementScreen(project))

    def text(screen, selector: str) -> str:
        console = Console(width=240, record=True, file=io.StringIO())
        console.print(screen.query_one(selector, Static).content)
        return console.export_text()

    async def look() -> tuple[str, str]:
        app = Host()
        async with app.run_test(size=(200, 50)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            return text(app.screen, "#overview-body"), text(app.screen, "#pairs-body")

    return asyncio.run(look())
