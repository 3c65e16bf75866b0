"""``ragjudge compare``: which queries are paired (and the output says so), and which figures
are adjusted for several comparisons (and the output says which)."""

from __future__ import annotations

import json
import math

import pytest
from clikit import run_cli as _run


def _write(path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.fixture
def missing(tmp_path):
    """Eight judged queries; run a ranks nothing for q1 and q2, run b nothing for q7."""
    q = _write(tmp_path / "q.qrels", "".join(f"q{i} 0 x {i % 3}\nq{i} 0 y 1\n" for i in range(1, 9)))
    a = _write(tmp_path / "a.trec", "".join(f"q{i} Q0 x 1 2 t\nq{i} Q0 y 2 1 t\n" for i in range(3, 9)))
    b = _write(tmp_path / "b.trec", "".join(f"q{i} Q0 z 1 3 u\nq{i} Q0 y 2 2 u\n"
                                            for i in range(1, 9) if i != 7))
    return q, a, b


def test_judged_averaging_pairs_every_judged_query_a_missing_one_counting_0(missing, capsys):
    q, a, b = missing
    code, out, err = _run(capsys, "compare", a, b, "--qrels", q, "-m", "P@1", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    (pair,) = data["pairings"]
    assert pair["queries"] == 8 and pair["missing_count_0"] is True
    assert pair["only_a"] == ["q7"] and pair["only_b"] == ["q1", "q2"]
    (row,) = data["comparisons"]
    assert row["queries"] == 8
    # P@1: a finds x (relevant where i % 3 > 0) first on q3..q8 except q7's... worked out:
    # a: q3 0, q4 1, q5 1, q6 0, q7 1, q8 1 (and 0 on q1, q2): mean 4/8
    # b: z is unjudged at rank 1 everywhere: 0 on every query
    assert row["mean_a"] == pytest.approx(4 / 8) and row["mean_b"] == 0.0
    # the paired difference is the difference of the means shown: the same 8 queries
    assert row["difference"] == pytest.approx(row["mean_b"] - row["mean_a"])
    code, out, _ = _run(capsys, "compare", a, b, "--qrels", q, "-m", "P@1")
    flat = " ".join(out.split())
    assert ("paired on 8 judged queries, a query a run ranks nothing for counting 0 for it, as in "
            "its mean (trec_eval -c): a ranks nothing for 2 and b ranks nothing for 1") in flat


def test_run_averaging_pairs_the_queries_both_runs_answer_and_names_the_others(missing, capsys):
    q, a, b = missing
    code, out, err = _run(capsys, "compare", a, b, "--qrels", q, "-m", "P@1", "--averaging", "run",
                          "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    (pair,) = data["pairings"]
    assert pair["queries"] == 5 and pair["missing_count_0"] is False
    assert pair["only_a"] == ["q7"] and pair["only_b"] == ["q1", "q2"]
    assert data["comparisons"][0]["queries"] == 5
    code, out, _ = _run(capsys, "compare", a, b, "--qrels", q, "-m", "P@1", "--averaging", "run")
    flat = " ".join(out.split())
    assert ("paired on 5 queries both runs answer; 1 query only a answers and 2 queries only b "
            "answers were left out") in flat


def test_help_says_which_queries_are_paired_and_why(capsys):
    code, out, _ = _run(capsys, "compare", "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "counting 0 for it (trec_eval -c)" in flat
    assert "the queries both runs answer are paired" in flat
    assert "the queries both runs have" not in flat  # what it used to say, and never did
    assert "95% CI (unadjusted)" in flat and "p rand (Holm)" in flat


def _within_noise_but_interval_above_0(tmp_path):
    """Twenty queries; on P@1, B beats A on 15 and loses on 5 (differences +1 and -1): the
    randomization test's p is about 0.043 and the bootstrap interval [0.1, 0.8] excludes 0.
    C equals A (p = 1), so Holm doubles B's p (the smaller of two) to about 0.085."""
    q = _write(tmp_path / "q.qrels", "".join(f"q{i} 0 r 1\nq{i} 0 n 0\n" for i in range(1, 21)))
    lines_a, lines_b = [], []
    for i in range(1, 21):
        a_first, b_first = ("n", "r") if i <= 15 else ("r", "n")
        a_second, b_second = ("r" if a_first == "n" else "n"), ("r" if b_first == "n" else "n")
        lines_a += [f"q{i} Q0 {a_first} 1 2 A", f"q{i} Q0 {a_second} 2 1 A"]
        lines_b += [f"q{i} Q0 {b_first} 1 2 B", f"q{i} Q0 {b_second} 2 1 B"]
    a = _write(tmp_path / "A.trec", "\n".join(lines_a) + "\n")
    b = _write(tmp_path / "B.trec", "\n".join(lines_b) + "\n")
    c = _write(tmp_path / "C.trec", "\n".join(lines_a) + "\n")
    return q, a, b, c


def test_holm_adjusts_the_p_values_and_the_verdict_not_the_interval_and_says_so(tmp_path, capsys):
    q, a, b, c = _within_noise_but_interval_above_0(tmp_path)
    code, out, err = _run(capsys, "compare", a, b, c, "--qrels", q, "-m", "P@1", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["p_adjustment"] == "holm" and data["interval"]["adjusted"] is False
    row_b, row_c = data["comparisons"]
    assert row_b["difference"] == pytest.approx(0.5)  # (15 - 5) / 20
    assert row_b["ci_low"] > 0  # the unadjusted interval excludes 0 ...
    assert row_b["p_randomization"] < 0.05 < row_b["p_randomization_adjusted"]
    assert row_b["verdict"] == "within noise"  # ... and the Holm-adjusted verdict does not call it
    assert row_b["p_randomization_adjusted"] == pytest.approx(2 * row_b["p_randomization"])
    assert row_c["difference"] == 0 and row_c["verdict"] == "within noise"
    code, out, _ = _run(capsys, "compare", a, b, c, "--qrels", q, "-m", "P@1")
    flat = " ".join(out.split())
    assert "95% CI (unadjusted)" in flat and "p rand (Holm)" in flat and "p rand " in flat
    assert "the 95% interval is not adjusted, so it may exclude 0 beside 'within noise'" in flat
    assert "B: paired on 20 judged queries" in flat and "C: paired on 20 judged queries" in flat
    # two runs: nothing to adjust, and the headers do not claim otherwise
    code, out, _ = _run(capsys, "compare", a, b, "--qrels", q, "-m", "P@1", "--format", "json")
    two = json.loads(out)
    assert two["p_adjustment"] == "none"
    assert two["comparisons"][0]["verdict"] == "B better"  # p about 0.043, unadjusted
    code, out, _ = _run(capsys, "compare", a, b, "--qrels", q, "-m", "P@1")
    assert "(Holm)" not in out and "unadjusted" not in out


def test_each_pair_of_runs_is_paired_on_its_own_queries(tmp_path, capsys):
    """With three runs and --averaging run, A and B are paired on the queries both of them
    answer, not only on those every run answers; Holm still adjusts over the comparisons."""
    from ragjudge.metrics.significance import compare_runs, holm

    q = _write(tmp_path / "q.qrels", "".join(f"q{i} 0 r 1\n" for i in range(1, 7)))
    a = _write(tmp_path / "A.trec", "".join(f"q{i} Q0 r 1 1 A\n" for i in range(1, 7)))
    b = _write(tmp_path / "B.trec", "".join(f"q{i} Q0 {'r' if i % 2 else 'x'} 1 1 B\n"
                                            for i in range(1, 7)))
    c = _write(tmp_path / "C.trec", "".join(f"q{i} Q0 x 1 1 C\n" for i in (1, 2)))
    code, out, err = _run(capsys, "compare", a, b, c, "--qrels", q, "-m", "P@1", "--averaging", "run",
                          "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert [p["queries"] for p in data["pairings"]] == [6, 2]
    row_b, row_c = data["comparisons"]
    assert row_b["queries"] == 6 and row_c["queries"] == 2
    # the same figures as comparing each pair alone, then Holm over the two p-values
    alone_b, = compare_runs({"A": [[1.0] * 6], "B": [[1.0, 0, 1, 0, 1, 0]]}, ["P@1"], resamples=10_000)
    alone_c, = compare_runs({"A": [[1.0, 1.0]], "C": [[0.0, 0.0]]}, ["P@1"], resamples=10_000)
    assert row_b["p_randomization"] == alone_b.p_randomization
    assert row_b["ci_low"] == alone_b.ci_low and row_c["difference"] == alone_c.difference
    adjusted = holm([alone_b.p_randomization, alone_c.p_randomization])
    assert [row_b["p_randomization_adjusted"], row_c["p_randomization_adjusted"]] == pytest.approx(
        adjusted.tolist())
    assert not any(math.isnan(x) for x in adjusted)
