"""Scoring a project's sample: the project's sampled measures equal the metrics library's on
the same data, and ``eval --prels`` on the sample written as a strata file; the live screen
gets the same sample; a sampled measure without a sample says how to give one."""

from __future__ import annotations

import json
import math

import pytest
from projectkit import rights
from samplingkit import (
    DEPTH,
    MEASURES,
    drawn_pairs,
    grade_of,
    judge,
    pool_by_hand,
    sample_rows,
    strata_prels,
    trec_eval_qrels,
    trec_run,
)

from ragjudge.cli import main
from ragjudge.metrics import evaluate
from ragjudge.metrics.sampled import draw_sample
from ragjudge.services.labels import assignment, sampling
from ragjudge.services.project.database import Project
from ragjudge.services.runs import stored
from ragjudge.services.scoring import evaluation

pytestmark = pytest.mark.slow

RUNS = ("bm25", "dense")


def _draw_and_judge(db: str, strategy: str, *, every: int = 1, size: int = 9) -> dict:
    """Draw a sample, judge every ``every``-th drawn pair; returns the judgments."""
    with Project.open(db) as project:
        assignment.assign(project, ["ann"], depth=DEPTH, seed=11, sample=size,
                          strategy=strategy, access=rights(project, "lea"))
        drawn = drawn_pairs(sampling.current_sample(project))[::every]
        judge(project, drawn)
    return {pair: grade_of(pair[1]) for pair in drawn}


def _cli_json(capsys, *args: str) -> dict:
    code = main(list(args))
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def _per_query(data: dict, run: str) -> dict[str, dict[str, float]]:
    return {q: {m: math.nan if v is None else v for m, v in row.items()}
            for q, row in data["runs"][run]["per_query"].items()}


def _same(got: dict, expected: dict, measures) -> None:
    assert sorted(got) == sorted(expected)
    for q in expected:
        for m in measures:
            a, b = got[q][m], expected[q][m]
            assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12), (q, m, a, b)


@pytest.mark.parametrize("strategy", ["uniform", "stratified"])
def test_the_project_scores_as_the_library_on_the_same_sample(sampled_db, capsys, strategy):
    judged = _draw_and_judge(sampled_db, strategy)
    data = _cli_json(capsys, "--db", sampled_db, "eval", "-m", ",".join(MEASURES),
                     "--per-query", "--format", "json")
    with Project.open(sampled_db) as project:
        q, c, ranks = pool_by_hand(project)
        runs = {n: stored.project_run(project, n) for n in RUNS}
        gold, _ = evaluation.project_qrels(project)
        threshold = project.scale.threshold
    sample = draw_sample(q, c, ranks, size=9, strategy=strategy, seed=11)
    hand_qrels = trec_eval_qrels(sample_rows(sample), judged)
    for name, run in runs.items():
        library = evaluate(gold, run, [m for m in MEASURES if m != "infAP"], threshold=threshold,
                           extras={"sample": sample}).per_query()
        infap = evaluate(hand_qrels, run, ["infAP"], threshold=threshold).per_query()
        for query, row in library.items():
            row["infAP"] = infap[query]["infAP"]
        _same(_per_query(data, name), library, MEASURES)
    # the estimates are not the complete judgments' AP: some chunks of the pool are unjudged
    assert any(v["statAP"] not in (0.0, 1.0) for v in _per_query(data, "bm25").values())


@pytest.mark.parametrize("strategy", ["uniform", "stratified"])
def test_the_project_scores_as_eval_prels_on_its_sample_as_a_file(sampled_db, tmp_path, capsys,
                                                                   strategy):
    judged = _draw_and_judge(sampled_db, strategy)
    project_data = _cli_json(capsys, "--db", sampled_db, "eval", "-m", ",".join(MEASURES),
                             "--per-query", "--format", "json")
    files = _write_files(sampled_db, tmp_path, judged)
    file_data = _cli_json(capsys, "eval", "--prels", files["prels"], "--prels-form", "strata",
                          "--run", files["bm25"], "--run", files["dense"], "-m",
                          ",".join(MEASURES), "--per-query", "--format", "json")
    for name in RUNS:
        _same(_per_query(project_data, name), _per_query(file_data, name), MEASURES)


def _write_files(db: str, tmp_path, judged: dict) -> dict[str, str]:
    with Project.open(db) as project:
        rows = sample_rows(sampling.current_sample(project).pool)
        runs = {n: trec_run(project, n) for n in RUNS}
    out = {"prels": str(tmp_path / "sample.strata")}
    (tmp_path / "sample.strata").write_text(strata_prels(rows, judged))
    for name, text in runs.items():
        (tmp_path / f"{name}.trec").write_text(text)
        out[name] = str(tmp_path / f"{name}.trec")
    return out


def test_unjudged_drawn_pairs_and_judgments_outside_the_sample(sampled_db, tmp_path, capsys):
    """A drawn pair nobody judged counts as not sampled, and a pair judged outside the sample
    (not drawn) is no part of the estimates: the project scores as the strata file that lists
    the judged drawn pairs only. statAP keeps the design's inclusion probabilities (the file's
    are its strata's judged shares), as the library does with the stored sample."""
    with Project.open(sampled_db) as project:
        assignment.assign(project, ["ann"], depth=DEPTH, seed=11, sample=9,
                          strategy="stratified", access=rights(project, "lea"))
        current = sampling.current_sample(project)
        drawn = drawn_pairs(current)
        kept = [pair for i, pair in enumerate(drawn) if i % 3]  # a third left unjudged
        outside = [(q, c) for q, c, _, _, d in sample_rows(current.pool) if not d][::7]
        judge(project, kept + outside)
        gold, _ = evaluation.project_qrels(project)
        runs = {n: stored.project_run(project, n) for n in RUNS}
    judged = {pair: grade_of(pair[1]) for pair in kept}
    assert len(outside) >= 10
    project_data = _cli_json(capsys, "--db", sampled_db, "eval", "-m", ",".join(MEASURES),
                             "--per-query", "--format", "json")
    files = _write_files(sampled_db, tmp_path, judged)
    file_data = _cli_json(capsys, "eval", "--prels", files["prels"], "--prels-form", "strata",
                          "--run", files["bm25"], "--run", files["dense"], "-m",
                          ",".join(MEASURES), "--per-query", "--format", "json")
    from_strata = [m for m in MEASURES if not m.startswith("statAP")]
    for name, run in runs.items():
        ours = _per_query(project_data, name)
        _same(ours, _per_query(file_data, name), from_strata)
        library = evaluate(gold, run, ["statAP", "statAP_var"], extras={"sample": current.pool})
        _same(ours, library.per_query(), ["statAP", "statAP_var"])
        # infAP on the gold alone would take the pairs judged outside the sample as sampled
        on_gold = evaluate(gold, run, ["infAP"]).per_query()
        assert any(ours[q]["infAP"] != pytest.approx(on_gold[q]["infAP"]) for q in ours)


def test_eval_reads_the_newest_sample(sampled_db, capsys):
    _draw_and_judge(sampled_db, "uniform")
    with Project.open(sampled_db) as project:
        first = sampling.current_sample(project)
        assignment.assign(project, ["ann"], depth=20, seed=2, sample=4, access=rights(project, "lea"))
        newest = sampling.current_sample(project)
        gold, _ = evaluation.project_qrels(project)
        run = stored.project_run(project, "bm25")
    data = _cli_json(capsys, "--db", sampled_db, "eval", "--run", "bm25", "-m", "statAP,xinfAP",
                     "--per-query", "--format", "json")
    expected = evaluate(gold, run, ["statAP", "xinfAP"], extras={"sample": newest.pool})
    _same(_per_query(data, "bm25"), expected.per_query(), ["statAP", "xinfAP"])
    # the output names the sample read, and how much of it is judged: the 4 pairs per query
    # of sample 2 were judged only where sample 1 had drawn them too
    judged = sum(1 for pair in drawn_pairs(newest) if pair in set(drawn_pairs(first)))
    assert data["sample"] == {"id": 2, "strategy": "uniform", "size": 4, "depth": 20, "seed": 2,
                              "pooled": len(newest.pool), "drawn": 24, "judged": judged}
    assert 0 < judged < 24
    code = main(["--db", sampled_db, "eval", "--run", "bm25", "-m", "statAP"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0
    assert (f"estimates from sample 2: 4 pairs per query drawn at random (uniform) from the "
            f"pool at depth 20, seed 2: {judged} of its 24 drawn pairs judged") in out


def test_the_live_screen_gets_the_same_sample(sampled_db):
    from ragjudge.services.scoring import live

    measures = ["statAP", "xinfAP", "infNDCG", "infP@10", "AP"]
    judged = _draw_and_judge(sampled_db, "stratified", every=2)
    with Project.open(sampled_db) as project:
        engine = live.LiveEvaluation(project, measures=measures, ranges=False)
        engine.load()
        _live_equals_eval(engine, project, measures)
        rest = [p for p in drawn_pairs(sampling.current_sample(project)) if p not in judged]
        for pair in rest[:4]:
            judge(project, [pair], annotator="bob")
            assert engine.poll()
            _live_equals_eval(engine, project, measures)


def _live_equals_eval(engine, project, measures) -> None:
    qrels, rule = evaluation.project_qrels(project)
    runs = {n: stored.project_run(project, n) for n in RUNS}
    expected = evaluation.evaluate_all(qrels, runs, measures, threshold=engine.threshold,
                                       project=project, rule=rule)
    means = engine.snapshot().means
    for name in RUNS:
        for m, value in expected.aggregate(name).items():
            assert means[name][m] == pytest.approx(value, abs=1e-12), (name, m)


def test_a_sampled_measure_without_a_sample_says_how_to_give_one(sampled_db, tmp_path, capsys):
    code = main(["--db", sampled_db, "eval", "-m", "statAP,xinfAP"])
    err = capsys.readouterr().err
    assert code == 2
    assert ("statAP, xinfAP are estimated from a judged sample of the pool, and this project "
            "has drawn none: draw one with 'ragjudge assign --annotators NAMES --sample N "
            "--strategy uniform|stratified'") in err
    assert "--prels FILE --prels-form strata|probability" in err
    (tmp_path / "q.qrels").write_text("q1 0 c01 1\n")
    with Project.open(sampled_db) as project:
        (tmp_path / "bm25.trec").write_text(trec_run(project, "bm25"))
    code = main(["eval", "--qrels", str(tmp_path / "q.qrels"), "--run",
                 str(tmp_path / "bm25.trec"), "-m", "infNDCG"])
    err = capsys.readouterr().err
    assert code == 2
    assert ("infNDCG is estimated from a judged sample of the pool: give a sampled judgment "
            "file with --prels FILE --prels-form strata|probability instead of --qrels, or draw "
            "a sample in a project with 'ragjudge assign --sample N'") in err
    assert "only a project has" not in err
    # a project's sample goes with its own gold, not with a --qrels file
    _draw_and_judge(sampled_db, "uniform")
    code = main(["--db", sampled_db, "eval", "--qrels", str(tmp_path / "q.qrels"), "-m",
                 "statAP"])
    assert code == 2 and "instead of --qrels" in capsys.readouterr().err


def test_explain_gives_the_values_eval_gives(sampled_db, capsys):
    _draw_and_judge(sampled_db, "stratified", every=2)
    data = _cli_json(capsys, "--db", sampled_db, "eval", "--run", "dense", "-m",
                     "infAP,statAP,infP@10", "--per-query", "--format", "json")
    with Project.open(sampled_db) as project:
        qrels, rule = evaluation.project_qrels(project)
        run = stored.project_run(project, "dense")
        for query, row in _per_query(data, "dense").items():
            for m, value in row.items():
                got = evaluation.explain_query(project, "dense", qrels, run, query, m,
                                               threshold=project.scale.threshold, rule=rule,
                                               access=rights(project, "lea"))
                assert got.value == pytest.approx(value, abs=1e-12) or \
                    (math.isnan(got.value) and math.isnan(value)), (query, m)


def test_infap_alone_on_the_parallel_path_reads_the_sample(sampled_db, capsys, monkeypatch):
    # infAP needs no extras, so large runs are evaluated ahead on two threads: the sample's
    # qrels must replace the gold's there too
    _draw_and_judge(sampled_db, "uniform", every=2)
    args = ["--db", sampled_db, "eval", "-m", "infAP", "--per-query", "--format", "json"]
    expected = _cli_json(capsys, *args)
    monkeypatch.setattr(evaluation, "PARALLEL_ENTRIES", 0)
    got = _cli_json(capsys, *args)
    for name in RUNS:
        _same(_per_query(got, name), _per_query(expected, name), ["infAP"])
    with Project.open(sampled_db) as project:
        gold, _ = evaluation.project_qrels(project)
        on_gold = evaluate(gold, stored.project_run(project, "bm25"), ["infAP"]).per_query()
    assert any(on_gold[q]["infAP"] != pytest.approx(v["infAP"])
               for q, v in _per_query(got, "bm25").items())


def test_a_sample_of_the_whole_pool_gives_the_plain_measures(sampled_db, capsys):
    # 80 pairs per query draws each query's whole pool (fewer than 80 pairs): every inclusion
    # probability is 1, so statAP is AP and infNDCG nDCG exactly (Horvitz-Thompson with p = 1);
    # infAP and xinfAP differ from AP only by their smoothing epsilons
    _draw_and_judge(sampled_db, "stratified", size=80)
    data = _cli_json(capsys, "--db", sampled_db, "eval", "-m", "statAP,AP,infNDCG,nDCG,infAP,xinfAP",
                     "--per-query", "--format", "json")
    for name in RUNS:
        for q, row in _per_query(data, name).items():
            assert row["statAP"] == pytest.approx(row["AP"], abs=1e-12), q
            assert row["infNDCG"] == pytest.approx(row["nDCG"], abs=1e-12), q
            assert row["infAP"] == pytest.approx(row["AP"], abs=1e-3), q
            assert row["xinfAP"] == pytest.approx(row["AP"], abs=1e-3), q
    assert data["sample"]["drawn"] == data["sample"]["pooled"] == data["sample"]["judged"]
