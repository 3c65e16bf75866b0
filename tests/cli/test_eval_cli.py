"""ragjudge eval / compare / gate / explain through the real entry point, on small TREC files."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from clikit import run_cli as _run

from ragjudge.cli import common

# Seed 000's sample: c1..c10 retrieved in order, grades c1:2 c3:1 c5:2 c8:1, others 0.
SEED_QRELS = "".join(
    f"s0 0 c{i} {g}\n" for i, g in zip(range(1, 11), [2, 0, 1, 0, 2, 0, 0, 1, 0, 0])
)
SEED_RUN = "".join(f"s0 Q0 c{i} {i} {11 - i} seed\n" for i in range(1, 11))


@pytest.fixture(autouse=True)
def _no_project(monkeypatch):
    """Each command starts without a remembered --db (the option is global to the process)."""
    monkeypatch.setitem(common.CLI_STATE, "db", None)
    monkeypatch.delenv("RAGJUDGE_DB", raising=False)


def _write(path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def _random_trec(rng: np.random.Generator, n_queries: int = 12):
    """Random qrels and run text with the cases trec_eval is particular about: score ties,
    unjudged chunks, all-zero queries, short runs, queries missing on either side."""
    qrels_lines, run_lines = [], []
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n_queries):
        qid = f"q{q}"
        chunks = [f"d{j}" for j in range(rng.integers(5, 25))]
        if q != 0:  # q0: in the run only (ignored)
            judged = rng.choice(chunks, size=rng.integers(1, len(chunks)), replace=False)
            all_zero = q == 1
            for cid in judged:
                grade = 0 if all_zero else int(rng.integers(0, 4))
                qrels.setdefault(qid, {})[str(cid)] = grade
                qrels_lines.append(f"{qid} 0 {cid} {grade}")
        if q != 2:  # q2: in the qrels only (counts 0)
            retrieved = rng.choice(chunks, size=rng.integers(1, len(chunks)), replace=False)
            for rank, cid in enumerate(retrieved, start=1):
                score = float(rng.integers(0, 6)) / 2  # many exact ties
                run.setdefault(qid, {})[str(cid)] = score
                run_lines.append(f"{qid} Q0 {cid} {rank} {score} t")
    return qrels, run, "\n".join(qrels_lines) + "\n", "\n".join(run_lines) + "\n"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_eval_ndcg_per_query_json_equals_pytrec_eval(tmp_path, capsys, seed):
    qrels, run, qrels_text, run_text = _random_trec(np.random.default_rng(seed))
    q = _write(tmp_path / "qrels.trec", qrels_text)
    r = _write(tmp_path / "bm25.trec", run_text)
    code, out, err = _run(capsys, "eval", "--qrels", q, "--run", r, "-m", "nDCG@10",
                          "--per-query", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    per_query = data["runs"]["bm25"]["per_query"]
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    assert set(per_query) == set(qrels)  # every judged query, the run-only q0 ignored
    for qid, values in per_query.items():
        expected = reference[qid]["ndcg_cut_10"] if qid in reference else 0.0
        assert values["nDCG@10"] == pytest.approx(expected, abs=1e-9), qid
    mean = np.mean([v["nDCG@10"] for v in per_query.values()])
    assert data["runs"]["bm25"]["aggregate"]["nDCG@10"] == pytest.approx(mean, abs=1e-12)


def test_eval_scorecard_equals_pytrec_eval(tmp_path, capsys):
    qrels, run, qrels_text, run_text = _random_trec(np.random.default_rng(7), n_queries=20)
    q = _write(tmp_path / "qrels.trec", qrels_text)
    r = _write(tmp_path / "dense.trec", run_text)
    code, out, err = _run(capsys, "eval", "--qrels", q, "--run", r, "--per-query",
                          "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    pairs = {"P@1": "P_1", "P@5": "P_5", "P@10": "P_10", "R@5": "recall_5", "R@20": "recall_20",
             "Success@5": "success_5", "RR": "recip_rank", "AP": "map", "nDCG@5": "ndcg_cut_5",
             "Rprec": "Rprec"}
    reference = pytrec_eval.RelevanceEvaluator(
        qrels, {"P.1,5,10", "recall.5,20", "success.5", "recip_rank", "map", "ndcg_cut.5",
                "Rprec"}).evaluate(run)
    for qid, values in data["runs"]["dense"]["per_query"].items():
        for ours, theirs in pairs.items():
            expected = reference[qid][theirs] if qid in reference else 0.0
            assert values[ours] == pytest.approx(expected, abs=1e-9), (qid, ours)


def test_eval_json_shape_is_the_contract(tmp_path, capsys):
    q = _write(tmp_path / "qrels.trec", SEED_QRELS)
    r1 = _write(tmp_path / "first.run.trec", SEED_RUN)
    r2 = _write(tmp_path / "second.trec", SEED_RUN.replace("s0 Q0 c1 1 10", "s0 Q0 c1 1 0"))
    code, out, _ = _run(capsys, "eval", "--qrels", q, "--run", r1, "--run", r2,
                        "-m", "P@5", "-m", "AP,nDCG@5", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert {"measures", "queries", "runs"} <= set(data)
    assert data["measures"] == ["P@5", "AP", "nDCG@5"]
    assert data["queries"] == 1
    assert list(data["runs"]) == ["first.run", "second"]
    for entry in data["runs"].values():
        assert set(entry) == {"aggregate"}  # per_query only with --per-query
        assert list(entry["aggregate"]) == ["P@5", "AP", "nDCG@5"]
    # the ten-chunk example: AP 0.6917, nDCG@5 0.7808
    first = data["runs"]["first.run"]["aggregate"]
    assert first["P@5"] == pytest.approx(0.6)
    assert first["AP"] == pytest.approx((1 + 2 / 3 + 3 / 5 + 4 / 8) / 4)
    assert first["nDCG@5"] == pytest.approx(0.7808, abs=5e-5)
    assert "mean over every query" in data["averaging"]

    code, out, _ = _run(capsys, "eval", "--qrels", q, "--run", r1, "--name", "baseline",
                        "-m", "RR", "--per-query", "--format", "json")
    data = json.loads(out)
    assert list(data["runs"]) == ["baseline"]
    assert data["runs"]["baseline"] == {"aggregate": {"RR": 1.0}, "per_query": {"s0": {"RR": 1.0}}}


def test_eval_table_marks_the_best_and_names_the_averaging(tmp_path, capsys):
    q = _write(tmp_path / "qrels.trec", SEED_QRELS)
    good = _write(tmp_path / "good.trec", SEED_RUN)
    # relevant chunks at ranks 6-9 (a bad ranking)
    bad_order = ["c2", "c4", "c6", "c7", "c9", "c1", "c3", "c5", "c8", "c10"]
    bad = _write(tmp_path / "bad.trec", "".join(
        f"s0 Q0 {c} {i} {10 - i} b\n" for i, c in enumerate(bad_order, start=1)))
    code, out, _ = _run(capsys, "eval", "--qrels", q, "--run", good, "--run", bad, "-m", "AP")
    assert code == 0
    lines = out.splitlines()
    good_line = next(line for line in lines if "good" in line)
    bad_line = next(line for line in lines if " bad " in line)
    assert "*0.6917" in good_line and "*" not in bad_line
    assert "0.3180" in bad_line  # (1/6 + 2/7 + 3/8 + 4/9) / 4
    assert "averaging" in out and "relevant from grade 1" in out


def test_eval_csv(tmp_path, capsys):
    q = _write(tmp_path / "qrels.trec", SEED_QRELS)
    r = _write(tmp_path / "run.trec", SEED_RUN)
    code, out, _ = _run(capsys, "eval", "--qrels", q, "--run", r, "-m", "P@3,R@3",
                        "--per-query", "--format", "csv")
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["run", "query", "P@3", "R@3"]
    assert rows[1][:2] == ["run", "all"] and float(rows[1][2]) == pytest.approx(2 / 3)
    assert rows[2][:2] == ["run", "s0"] and float(rows[2][3]) == pytest.approx(0.5)


def test_eval_by_stratum_with_a_queries_file(tmp_path, capsys):
    qrels = "f1 0 a 1\nf2 0 b 1\nm1 0 c 1\nm1 0 d 1\n"
    run = "f1 Q0 a 1 3 r\nf2 Q0 x 1 3 r\nf2 Q0 b 2 2 r\nm1 Q0 c 1 3 r\n"
    queries = "".join(json.dumps(x) + "\n" for x in [
        {"id": "f1", "text": "a", "category": "factoid"},
        {"id": "f2", "text": "b", "category": "factoid"},
        {"id": "m1", "text": "c", "category": "multi_hop", "meta": {"lang": "de"}},
    ])
    q = _write(tmp_path / "qrels.trec", qrels)
    r = _write(tmp_path / "run.trec", run)
    qf = _write(tmp_path / "queries.jsonl", queries)
    code, out, err = _run(capsys, "eval", "--qrels", q, "--run", r, "--queries", qf,
                          "--by", "category", "-m", "RR,R@5", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["by"] == "category"
    assert data["runs"]["run"]["aggregate"]["RR"] == pytest.approx((1 + 0.5 + 1) / 3)
    strata = data["strata"]
    assert set(strata) == {"factoid", "multi_hop"}
    assert strata["factoid"]["queries"] == 2
    assert strata["factoid"]["runs"]["run"]["aggregate"]["RR"] == pytest.approx(0.75)
    assert strata["multi_hop"]["runs"]["run"]["aggregate"]["R@5"] == pytest.approx(0.5)
    # any meta key; queries without it form their own stratum
    code, out, _ = _run(capsys, "eval", "--qrels", q, "--run", r, "--queries", qf,
                        "--by", "lang", "-m", "RR")
    assert code == 0
    assert "lang = de (1 queries)" in out and "lang = (none) (2 queries)" in out
    assert "all queries (3)" in out
    code, _, err = _run(capsys, "eval", "--qrels", q, "--run", r, "--by", "category")
    assert code == 2 and "--queries" in err


def test_eval_curves(tmp_path, capsys):
    q = _write(tmp_path / "qrels.trec", SEED_QRELS)
    r = _write(tmp_path / "run.trec", SEED_RUN)
    code, out, _ = _run(capsys, "eval", "--qrels", q, "--run", r, "--curve", "nDCG",
                        "--k", "1-10", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["k"] == list(range(1, 11))
    values = data["runs"]["run"]["value"]
    # nDCG@1 1.0, @3 0.6646, @5 0.7808, @10 0.8561
    assert values[0] == pytest.approx(1.0)
    assert values[2] == pytest.approx(0.6646, abs=5e-5)
    assert values[4] == pytest.approx(0.7808, abs=5e-5)
    assert values[9] == pytest.approx(0.8561, abs=5e-5)
    code, out, _ = _run(capsys, "eval", "--qrels", q, "--run", r, "--curve", "P",
                        "--k", "1,3,5,8,10", "--format", "csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["k", "run"]
    # P@K at 1, 3, 5, 8, 10: 1.000 0.667 0.600 0.500 0.400
    assert [round(float(v), 3) for _, v in rows[1:]] == [1.0, 0.667, 0.6, 0.5, 0.4]
    code, out, _ = _run(capsys, "eval", "--qrels", q, "--run", r, "--curve", "PR",
                        "--format", "json")
    data = json.loads(out)
    assert data["recall"][0] == 0.0 and data["recall"][-1] == 1.0
    # precision at the hits: 1/1, 2/3, 3/5, 4/8 at recall .25, .5, .75, 1; interpolated
    expected = [1, 1, 1, 2 / 3, 2 / 3, 2 / 3, 0.6, 0.6, 0.5, 0.5, 0.5]
    assert data["runs"]["run"]["precision"] == pytest.approx(expected)
    # AUC_PR, trapezoidal over the 11 points
    area = sum((expected[i] + expected[i + 1]) / 2 * 0.1 for i in range(10))
    assert data["runs"]["run"]["area"] == pytest.approx(area)
    code, _, err = _run(capsys, "eval", "--qrels", q, "--run", r, "--curve", "nDCG", "--k", "x")
    assert code == 2 and "--k" in err


@pytest.mark.slow
def test_gate_exit_codes(tmp_path, capsys):
    q = _write(tmp_path / "qrels.trec", SEED_QRELS)
    r = _write(tmp_path / "run.trec", SEED_RUN)
    code, out, err = _run(capsys, "gate", "--qrels", q, "--run", r,
                          "--require", "Success@5>=0.9", "--require", "R@5>=0.75")
    assert code == 0, err
    assert out.count("pass") == 2
    code, out, err = _run(capsys, "gate", "--qrels", q, "--run", r,
                          "--require", "Success@5>=0.9", "--require", "R@5>=85%")
    assert code == 1
    assert "FAIL" in out and "R@5" in err and "0.7500" in err
    code, out, _ = _run(capsys, "gate", "--qrels", q, "--run", r, "--require",
                        "P(rel=2)@5 >= 0.4", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["passed"] is True
    assert data["checks"][0]["actual"] == pytest.approx(0.4)
    for bad in ("Success@5 at least 0.9", "R@5>=", "Nope@5>=0.5", ">=0.5"):
        code, out, err = _run(capsys, "gate", "--qrels", q, "--run", r, "--require", bad)
        assert code == 2, bad
        assert "Traceback" not in err and "--require" in err
    code, _, err = _run(capsys, "gate", "--qrels", str(tmp_path / "missing.trec"), "--run", r,
                        "--require", "RR>=0.5")
    assert code == 2 and "missing.trec" in err


def _runs_with_difference(tmp_path, shift: bool):
    """Two runs over 40 queries, each with 5 relevant chunks among 30. Run A finds the
    relevant chunks late; run B early (shift) or at the same ranks with some swapped."""
    rng = np.random.default_rng(11)
    qrels_lines, a_lines, b_lines = [], [], []
    for q in range(40):
        chunks = [f"q{q}d{j}" for j in range(30)]
        relevant = chunks[:5]
        qrels_lines += [f"q{q} 0 {c} {1 if c in relevant else 0}" for c in chunks[:15]]
        order_a = list(rng.permutation(chunks))
        if shift:
            order_b = relevant + [c for c in order_a if c not in relevant]
        else:
            order_b = list(order_a)
            if q % 2:  # swap two neighbours on half of the queries: tiny, symmetric changes
                i = int(rng.integers(0, 29))
                order_b[i], order_b[i + 1] = order_b[i + 1], order_b[i]
        a_lines += [f"q{q} Q0 {c} {i} {30 - i} a" for i, c in enumerate(order_a, 1)]
        b_lines += [f"q{q} Q0 {c} {i} {30 - i} b" for i, c in enumerate(order_b, 1)]
    q = _write(tmp_path / "qrels.trec", "\n".join(qrels_lines) + "\n")
    a = _write(tmp_path / "A.trec", "\n".join(a_lines) + "\n")
    b = _write(tmp_path / "B.trec", "\n".join(b_lines) + "\n")
    return q, a, b


def test_compare_large_difference_is_b_better(tmp_path, capsys):
    q, a, b = _runs_with_difference(tmp_path, shift=True)
    code, out, err = _run(capsys, "compare", a, b, "--qrels", q, "-m", "R@5,RR,AP",
                          "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["baseline"] == "A" and data["queries"] == 40
    rows = {row["measure"]: row for row in data["comparisons"]}
    for m in ("R@5", "RR", "AP"):
        assert rows[m]["verdict"] == "B better" and rows[m]["winner"] == "B"
        assert rows[m]["difference"] > 0 and rows[m]["ci_low"] > 0
        assert rows[m]["p_randomization"] < 0.001 and rows[m]["p_t_test"] < 0.001
    assert rows["R@5"]["mean_b"] == pytest.approx(1.0)
    # the table says it in words, and the reverse order says "A better"
    code, out, _ = _run(capsys, "compare", b, a, "--qrels", q, "-m", "R@5")
    assert "A better" in out and "(B)" in out


def test_compare_nearly_identical_runs_is_within_noise(tmp_path, capsys):
    q, a, b = _runs_with_difference(tmp_path, shift=False)
    code, out, err = _run(capsys, "compare", a, b, "--qrels", q, "-m", "R@5,AP,nDCG@10")
    assert code == 0, err
    assert out.count("within noise") == 3 and "better" not in out


def test_compare_three_runs_holm(tmp_path, capsys):
    q, a, b = _runs_with_difference(tmp_path, shift=True)
    c = _write(tmp_path / "C.trec", Path(a).read_text())
    code, out, _ = _run(capsys, "compare", a, b, c, "--qrels", q, "-m", "AP", "--format", "json")
    data = json.loads(out)
    assert data["holm"] is True
    rows = data["comparisons"]
    assert [r["run_b"] for r in rows] == ["B", "C"]
    assert rows[1]["verdict"] == "within noise" and rows[1]["difference"] == 0
    assert rows[0]["p_randomization_adjusted"] >= rows[0]["p_randomization"]
    code, _, err = _run(capsys, "compare", a, "--qrels", q)
    assert code == 2 and "two runs" in err


def test_explain_shows_seed_000_ap_steps(tmp_path, capsys):
    q = _write(tmp_path / "qrels.trec", SEED_QRELS)
    r = _write(tmp_path / "run.trec", SEED_RUN)
    code, out, err = _run(capsys, "explain", "--qrels", q, "--run", r, "--query", "s0",
                          "-m", "AP")
    assert code == 0, err
    # the hits at ranks 1, 3, 5, 8 with P@k 1/1, 2/3, 3/5, 4/8; AP = 0.6917
    for text in ("c1", "c3", "c5", "c8", "1.000", "0.667", "0.600", "0.500", "0.6917"):
        assert text in out, text
    code, out, err = _run(capsys, "explain", "--qrels", q, "--run", r, "--query", "s0",
                          "-m", "AP", "-m", "nDCG@5", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    ap, ndcg = data["explanations"]
    assert ap["value"] == pytest.approx(0.6917, abs=5e-5)
    assert [s["rank"] for s in ap["steps"] if s["relevant"]] == [1, 3, 5, 8]
    assert ndcg["value"] == pytest.approx(0.7808, abs=5e-5)  # DCG@5 3.2737 / IDCG@5 4.1925
    code, _, err = _run(capsys, "explain", "--qrels", q, "--run", r, "--query", "nope", "-m", "AP")
    assert code == 2 and "nope" in err


def test_eval_jsonl_runs_and_qrels(tmp_path, capsys):
    q = _write(tmp_path / "qrels.jsonl", "".join(
        json.dumps({"query_id": "s0", "chunk_id": f"c{i}", "grade": g}) + "\n"
        for i, g in zip(range(1, 11), [2, 0, 1, 0, 2, 0, 0, 1, 0, 0])))
    ranked = _write(tmp_path / "ranked.jsonl", json.dumps(
        {"query_id": "s0", "chunks": [f"c{i}" for i in range(1, 11)]}) + "\n")
    # scored lines in shuffled order: ordered by score, as a TREC run
    scored = _write(tmp_path / "scored.jsonl", "".join(
        json.dumps({"query_id": "s0", "chunk_id": f"c{i}", "score": 11 - i}) + "\n"
        for i in (4, 2, 9, 1, 10, 3, 5, 8, 7, 6)))
    trec = _write(tmp_path / "trec.trec", SEED_RUN)
    code, out, err = _run(capsys, "eval", "--qrels", q, "--run", ranked, "--run", scored,
                          "--run", trec, "-m", "AP,nDCG@5,RR", "--format", "json")
    assert code == 0, err
    runs = json.loads(out)["runs"]
    assert runs["ranked"] == runs["scored"] == runs["trec"]
    assert runs["ranked"]["aggregate"]["AP"] == pytest.approx(0.6917, abs=5e-5)


def test_eval_input_errors_exit_2_without_traceback(tmp_path, capsys):
    q = _write(tmp_path / "qrels.trec", SEED_QRELS)
    bad_run = _write(tmp_path / "bad.trec", "s0 Q0 c1 1 high t\n")
    code, _, err = _run(capsys, "eval", "--qrels", q, "--run", bad_run)
    assert code == 2 and "bad.trec" in err and "line 1" in err and "Traceback" not in err
    dup = _write(tmp_path / "dup.trec", "s0 Q0 c1 1 2 t\ns0 Q0 c1 2 1 t\n")
    code, _, err = _run(capsys, "eval", "--qrels", q, "--run", dup)
    assert code == 2 and "twice" in err
    code, _, err = _run(capsys, "eval", "--qrels", q, "--run", str(tmp_path / "none.trec"))
    assert code == 2 and "none.trec" in err
    code, _, err = _run(capsys, "eval", "--qrels", q, "--run", q, "--run", q)
    assert code == 2 and "--name" in err
    code, _, err = _run(capsys, "eval", "--qrels", q, "--run", q, "--format", "xml")
    assert code == 2 and "--format" in err
    code, _, err = _run(capsys, "eval", "--qrels", q, "--run", q, "--rule", "median")
    assert code == 2 and "--rule" in err


@pytest.mark.parametrize("command", ["eval", "compare", "gate", "explain"])
def test_help_has_examples(capsys, command):
    code, out, _ = _run(capsys, command, "--help")
    assert code == 0
    assert "Examples" in out and f"ragjudge {command}" in out


def test_averaging_over_answered_queries(tmp_path, capsys):
    q = _write(tmp_path / "qrels.trec", "q1 0 a 1\nq2 0 b 1\n")
    both = _write(tmp_path / "both.trec", "q1 Q0 a 1 2 t\nq2 Q0 x 1 2 t\nq2 Q0 b 2 1 t\n")
    one = _write(tmp_path / "one.trec", "q1 Q0 a 1 2 t\n")
    code, out, _ = _run(capsys, "eval", "--qrels", q, "--run", both, "--run", one, "-m", "RR",
                        "--format", "json")
    runs = json.loads(out)["runs"]
    assert runs["one"]["aggregate"]["RR"] == 0.5  # q2 unanswered counts 0 (trec_eval -c)
    code, out, _ = _run(capsys, "eval", "--qrels", q, "--run", both, "--run", one, "-m", "RR",
                        "--averaging", "run", "--format", "json")
    data = json.loads(out)
    assert "without -c" in data["averaging"]
    assert data["runs"]["one"] == {"aggregate": {"RR": 1.0}, "queries": 1}
    assert data["runs"]["both"] == {"aggregate": {"RR": 0.75}, "queries": 2}
    code, out, err = _run(capsys, "compare", both, one, "--qrels", q, "-m", "RR",
                          "--averaging", "run", "--format", "json")
    assert code == 0, err
    row = json.loads(out)["comparisons"][0]
    assert row["queries"] == 1 and row["difference"] == 0.0  # paired on q1 only


@pytest.mark.slow
def test_gate_exit_code_through_python_m_ragjudge(tmp_path):
    import subprocess
    import sys

    q = _write(tmp_path / "qrels.trec", SEED_QRELS)
    r = _write(tmp_path / "run.trec", SEED_RUN)
    env_free = {k: v for k, v in __import__("os").environ.items() if k != "RAGJUDGE_DB"}
    done = subprocess.run([sys.executable, "-m", "ragjudge", "gate", "--qrels", q, "--run", r,
                           "--require", "RR>=0.6", "--require", "P@10>=0.5"],
                          capture_output=True, text=True, env=env_free, cwd=tmp_path)
    assert done.returncode == 1
    assert "pass" in done.stdout and "FAIL" in done.stdout
    assert "P@10 = 0.4000" in done.stderr and "Traceback" not in done.stderr


def test_eval_ci_and_compare_csv(tmp_path, capsys):
    q, a, b = _runs_with_difference(tmp_path, shift=True)
    code, out, err = _run(capsys, "eval", "--qrels", q, "--run", a, "-m", "RR,P@5", "--ci",
                          "--format", "json")
    assert code == 0, err
    entry = json.loads(out)["runs"]["A"]
    for m in ("RR", "P@5"):
        low, high = entry["ci95"][m]
        assert low < entry["aggregate"][m] < high  # 40 varied queries: a real interval
        assert high - low < 0.5
    code, out, err = _run(capsys, "compare", a, b, "--qrels", q, "-m", "RR", "--format", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 1
    assert rows[0]["run_a"] == "A" and rows[0]["verdict"] == "B better" and rows[0]["winner"] == "B"
    assert float(rows[0]["ci_low"]) > 0


def test_eval_pr_curve_table_labels_every_row(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    q = _write(tmp_path / "qrels.trec", SEED_QRELS)
    r = _write(tmp_path / "run.trec", SEED_RUN)
    code, out, _ = _run(capsys, "eval", "--qrels", q, "--run", r, "--curve", "PR")
    assert code == 0
    body = [line for line in out.splitlines() if line.startswith("│") and any(c.isdigit() for c in line)]
    firsts = [line.split("│")[1].strip() for line in body]
    assert firsts[:11] == [f"recall {j / 10:.1f}" for j in range(11)]
    assert firsts[11].startswith("area under the curve")
    assert len(firsts) == 12
    flat = " ".join(out.split())
    assert "AUC_PR" in flat and "interpolated" in flat
