"""The reference alone and a complete reference's closed world, kept through every path: the
project, ``eval --rule reference``, ``eval --qrels FILE [--complete]``, ``export qrels`` and
trec_eval (pytrec_eval) on the exported file give the same numbers, per query.

The closed world of a complete reference is every chunk any of the runs evaluated together
retrieves on its queries; for a project, all its runs. The findings this answers: the export of
a complete reference wrote only its listed pairs (trec_eval gave bpref 0.7106 against the
project's 0.2319, Judged@10 0.2253 against 1.0), and ``eval --qrels FILE`` had no way to say
that a file is complete.
"""

from __future__ import annotations

import json

import goldkit
import pytest
import pytrec_eval
from clikit import run_cli as _run


# ragjudge name -> trec_eval name
TREC = {"P@5": "P_5", "P@10": "P_10", "R@5": "recall_5", "R@10": "recall_10", "AP": "map",
        "AP@5": "map_cut_5", "nDCG": "ndcg", "nDCG@10": "ndcg_cut_10", "RR": "recip_rank",
        "Rprec": "Rprec", "bpref": "bpref", "Success@5": "success_5", "num_rel": "num_rel",
        "num_rel_ret": "num_rel_ret", "iprec@0.5": "iprec_at_recall_0.50"}
# and measures trec_eval does not have, compared between ragjudge's own paths
OURS_ONLY = ["ERR@10", "Judged@10", "Judged@5", "RBP(p=0.8)", "RBP_residual(p=0.8)"]
MEASURES = [*TREC, *OURS_ONLY]


from clikit import no_project  # noqa: E402, F401 - autouse: no project named by the environment


def _per_query(capsys, *args: str) -> dict[str, dict[str, dict[str, float]]]:
    """run -> query -> measure -> value, from ``--format json --per-query``."""
    code, out, err = _run(capsys, *args, "--per-query", "--format", "json",
                          *(a for m in MEASURES for a in ("-m", m)))
    assert code == 0, err
    return {name: entry["per_query"] for name, entry in json.loads(out)["runs"].items()}


def _files(folder) -> list[str]:
    return [a for name in goldkit.RUNS for a in ("--run", folder / f"{name}.trec")]


def _trec_eval(qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, dict[str, float]]]:
    """pytrec_eval on every run: run -> query -> ragjudge measure name -> value (bpref asked on
    its own evaluator, as tests/metrics does: pytrec_eval 0.5 can hang when map and bpref are
    asked together on some queries)."""
    names = {"P", "recall", "map_cut", "ndcg_cut", "success", "map", "ndcg", "recip_rank", "Rprec",
             "num_rel", "num_rel_ret", "iprec_at_recall"}
    main_eval = pytrec_eval.RelevanceEvaluator(qrels, names)
    bpref_eval = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"})
    out = {}
    for name in goldkit.RUNS:
        run = goldkit.run_dict(name)
        scores = main_eval.evaluate(run)
        for q, row in bpref_eval.evaluate(run).items():
            scores[q].update(row)
        out[name] = {q: {ours: row[theirs] for ours, theirs in TREC.items()} for q, row in scores.items()}
    return out


def _same(ours: dict, theirs: dict, measures) -> None:
    assert set(ours) == set(theirs)
    for name in ours:
        assert set(ours[name]) == set(theirs[name]), name
        for q in ours[name]:
            for m in measures:
                assert ours[name][q][m] == pytest.approx(theirs[name][q][m], abs=1e-12), (name, q, m)


@pytest.fixture
def open_world(tmp_path):
    """The reference not complete; ana's labels on listed and unlisted pairs."""
    db = str(tmp_path / "p.db")
    goldkit.make_project(db, tmp_path)
    return db, tmp_path


@pytest.fixture
def closed_world(tmp_path):
    """The same qrels imported --reference --complete, and ana's labels."""
    db = str(tmp_path / "p.db")
    goldkit.make_project(db, tmp_path, complete=True)
    return db, tmp_path


@pytest.mark.slow
def test_rule_reference_is_the_official_file_whatever_others_label(capsys, open_world):
    db, folder = open_world
    project = _per_query(capsys, "--db", db, "eval", "--rule", "reference")
    official = _per_query(capsys, "eval", "--qrels", folder / "official.qrels", *_files(folder))
    _same(project, official, MEASURES)
    _same(project, _trec_eval(goldkit.official()), TREC)
    # the team's labels do move the project's own gold (else this test would prove nothing)
    assert _per_query(capsys, "--db", db, "eval") != project


@pytest.mark.slow
def test_rule_reference_of_a_complete_reference_is_the_file_read_complete(capsys, closed_world):
    db, folder = closed_world
    project = _per_query(capsys, "--db", db, "eval", "--rule", "reference")
    official = _per_query(capsys, "eval", "--qrels", folder / "official.qrels", "--complete",
                          *_files(folder))
    _same(project, official, MEASURES)
    # and the project's own gold: a complete reference leaves ana nothing to decide on its queries
    _same(_per_query(capsys, "--db", db, "eval"), official, MEASURES)


def _closed_world_by_hand() -> dict[str, dict[str, int]]:
    """The official qrels and, on q1..q4, a 0 for every chunk any of the three runs retrieves
    that they do not list: bm25's and dense's top 10 (hybrid's are among them), 20 chunks, of
    which 4 are listed, so 16 implied per query."""
    qrels = goldkit.official()
    for q, judged in qrels.items():
        i = int(q[1:])
        for chunk in goldkit.bm25(i) + goldkit.dense(i):
            judged.setdefault(chunk, 0)
    return qrels


def test_eval_complete_closes_the_file_over_the_runs_given(capsys, closed_world):
    _, folder = closed_world
    closed = _closed_world_by_hand()
    assert sum(len(v) for v in closed.values()) - 20 == 64
    code, out, err = _run(capsys, "eval", "--qrels", folder / "official.qrels", "--complete",
                          *_files(folder), "-m", "bpref", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["closed_world"] == {"queries": 4, "implied_pairs": 64}
    ours = _per_query(capsys, "eval", "--qrels", folder / "official.qrels", "--complete", *_files(folder))
    _same(ours, _trec_eval(closed), TREC)
    code, out, _ = _run(capsys, "eval", "--qrels", folder / "official.qrels", "--complete", *_files(folder),
                        "-m", "bpref")
    assert "complete: 64 unlisted chunks the runs retrieve on its 4 queries judged not relevant" in " ".join(out.split())


@pytest.mark.slow
def test_export_writes_the_closed_world_and_trec_eval_reproduces_the_project(capsys, closed_world):
    db, folder = closed_world
    exported = folder / "gold.qrels"
    code, _, err = _run(capsys, "--db", db, "export", "qrels", "-o", exported)
    assert code == 0, err
    assert "Wrote 84 qrels lines" in err and "64 of the lines are the complete reference's implied 0 lines" in " ".join(err.split())
    lines = [line.split() for line in exported.read_text(encoding="utf-8").splitlines()]
    as_read = {}
    for q, _, c, g in lines:
        as_read.setdefault(q, {})[c] = int(g)
    assert as_read == _closed_world_by_hand()
    project = _per_query(capsys, "--db", db, "eval")
    _same(project, _trec_eval(as_read), TREC)
    # Judged@10 by hand: the share of each run's top 10 that the exported file judges
    for name in goldkit.RUNS:
        for q in project[name]:
            ranking = goldkit.RANKINGS[name](int(q[1:]))[:10]
            assert project[name][q]["Judged@10"] == sum(c in as_read[q] for c in ranking) / 10 == 1.0
    # and ragjudge on the exported file gives every measure of the project
    _same(project, _per_query(capsys, "eval", "--qrels", exported, *_files(folder)), MEASURES)


@pytest.mark.slow
def test_listed_only_leaves_the_implied_lines_out_and_says_what_that_costs(capsys, closed_world):
    db, folder = closed_world
    exported = folder / "listed.qrels"
    code, _, err = _run(capsys, "--db", db, "export", "qrels", "--listed-only", "-o", exported)
    assert code == 0, err
    assert "Wrote 20 qrels lines" in err and "64 implied lines" in err
    listed = _per_query(capsys, "eval", "--qrels", exported, *_files(folder))
    project = _per_query(capsys, "--db", db, "eval")
    # bm25 q1: relevant at ranks 1 and 3 of R = 4 (dense's rank 5 and the unretrieved chunk
    # too). The listed file judges no non-relevant chunk bm25 ranks (dense's rank-1 chunk, the one
    # listed 0, is not in it), so both terms are 1: bpref = 2 / 4. The closed world puts bm25's
    # rank 2 (judged 0) above rank 3, with N = 16 implied + 1 listed 0 = 17 judged non-relevant:
    # (1 + (1 - min(1, 4) / min(4, 17))) / 4 = 1.75 / 4
    assert listed["bm25"]["q1"]["bpref"] == pytest.approx(2 / 4)
    assert project["bm25"]["q1"]["bpref"] == pytest.approx(1.75 / 4)
    assert listed["bm25"]["q1"]["Judged@10"] == pytest.approx(0.2)  # ranks 1 and 3
    assert project["bm25"]["q1"]["Judged@10"] == 1.0


@pytest.mark.slow
def test_listed_only_is_for_qrels(capsys, closed_world):
    db, _ = closed_world
    code, _, err = _run(capsys, "--db", db, "export", "labels", "--listed-only")
    assert code == 2 and "--listed-only applies to 'export qrels' only" in err


@pytest.mark.slow
def test_one_run_or_all_runs_give_the_same_bpref_and_judged(capsys, closed_world):
    db, _ = closed_world
    every = _per_query(capsys, "--db", db, "eval")
    for name in goldkit.RUNS:
        alone = _per_query(capsys, "--db", db, "eval", "--run", name)
        assert alone[name] == every[name]


@pytest.mark.slow
def test_complete_goes_with_a_qrels_file(capsys, closed_world):
    db, _ = closed_world
    code, _, err = _run(capsys, "--db", db, "eval", "--complete")
    assert code == 2 and "--complete closes the world of a --qrels file" in err


def _closure_by_hand(judged: set[tuple[str, str]], queries: set[str], runs) -> list[tuple[str, str]]:
    return sorted({(q, c) for run in runs for q, chunks in run.to_ranked().items() if q in queries
                   for c in chunks if (q, c) not in judged})


@pytest.mark.parametrize("seed", range(12))
def test_closure_is_every_unjudged_chunk_the_runs_retrieve_on_the_closed_queries(seed):
    import numpy as np

    from ragjudge.metrics import Run
    from ragjudge.metrics._keys import as_ids, decode
    from ragjudge.services.gold.gold import closure

    rng = np.random.default_rng(seed)
    queries = [f"q{i}" for i in range(int(rng.integers(1, 12)))]
    chunks = [f"doc-{j}" * int(rng.integers(1, 4)) for j in range(40)]  # ids of several widths
    runs = []
    for r in range(int(rng.integers(0, 4))):
        ranked = {q: list(rng.choice(chunks, size=int(rng.integers(0, 15)), replace=False))
                  for q in queries if rng.random() < 0.8}
        runs.append(Run.from_ranked({q: [str(c) for c in cs] for q, cs in ranked.items() if cs},
                                    name=f"r{r}"))
    judged = sorted({(str(rng.choice(queries)), str(rng.choice(chunks))) for _ in range(int(rng.integers(0, 30)))})
    closed = {q for q in queries if rng.random() < 0.6}
    expected = _closure_by_hand(set(judged), closed, runs)
    q = np.array([p[0] for p in judged], dtype=object)
    c = np.array([p[1] for p in judged], dtype=object)
    eq, ec = closure(q, c, closed, runs)
    assert eq.dtype == object and list(zip(eq.tolist(), ec.tolist())) == expected
    bq, bc = closure(as_ids(q.tolist()), as_ids(c.tolist()), closed, runs)
    assert list(zip(decode(bq), decode(bc))) == expected
