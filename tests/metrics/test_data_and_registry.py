"""Qrels/Run construction, TREC parsing, the registry and evaluate()'s bookkeeping."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from ragjudge.errors import InputError, UsageError
from ragjudge.metrics import (
    Qrels,
    Run,
    build_context,
    evaluate,
    evaluate_runs,
    known_measures,
    parse_measure,
    read_run_arrays,
)
from ragjudge.metrics.registry import REGISTRY, ALIASES, measure

QRELS_TEXT = "q1 0 a 2\nq1 0 b 0\nq1 0 c 1\nq2 0 a 1\n"
RUN_TEXT = "q1 Q0 b 1 3.0 t\nq1 Q0 a 2 2.0 t\nq1 Q0 c 3 1.0 t\nq2 Q0 x 1 5 t\n"


# --------------------------------------------------------------------------- TREC parsing
def test_trec_sources_inline_file_gzip_and_file_object(tmp_path):
    (tmp_path / "run.trec").write_text(RUN_TEXT)
    (tmp_path / "run.trec.gz").write_bytes(gzip.compress(RUN_TEXT.encode()))
    a = Run.from_trec(RUN_TEXT)
    b = Run.from_trec(tmp_path / "run.trec")
    c = Run.from_trec(str(tmp_path / "run.trec.gz"))
    with open(tmp_path / "run.trec", "rb") as handle:
        d = Run.from_trec(handle)
    for run in (b, c, d):
        assert run.to_ranked() == a.to_ranked()
    assert b.name == "run" and c.name == "run"
    assert a.to_ranked() == {"q1": ["b", "a", "c"], "q2": ["x"]}


def test_trec_tolerates_tabs_crlf_blank_lines_and_no_final_newline():
    text = "q1\tQ0\tb\t1\t3.0\tt\r\n\nq1  Q0 a 2 2.5 t\r\n   \nq2 Q0 x 1 5 t"
    arrays = read_run_arrays(text)
    assert arrays.query_ids.tolist() == [b"q1", b"q1", b"q2"]
    assert arrays.chunk_ids.tolist() == [b"b", b"a", b"x"]
    assert arrays.scores.tolist() == [3.0, 2.5, 5.0]
    assert [arrays.line(i) for i in range(3)] == [1, 3, 5]


@pytest.mark.parametrize("text, line, field, fragment", [
    ("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 abc t\n", 2, "score", "'abc' is not a number"),
    ("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 t\n", 2, None, "a run line has 6 fields"),
    ("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 nan t\n", 2, "score", "scores must be finite numbers"),
])
def test_bad_run_lines_are_located(text, line, field, fragment):
    with pytest.raises(InputError) as info:
        Run.from_trec(text)
    assert info.value.line == line
    assert info.value.field == field
    assert fragment in str(info.value)


def test_bad_grade_and_missing_file(tmp_path):
    with pytest.raises(InputError, match="line 2, field 'grade': '1.5' is not an integer"):
        Qrels.from_trec("q 0 a 1\nq 0 b 1.5\n")
    with pytest.raises(InputError, match="the file does not exist"):
        Run.from_trec(tmp_path / "missing.trec")


def test_duplicate_chunk_in_run_names_query_chunk_and_line(tmp_path):
    path = tmp_path / "dup.trec"
    path.write_text("q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq2 Q0 a 1 1 t\nq1 Q0 a 3 1 t\n")
    with pytest.raises(InputError) as info:
        Run.from_trec(path)
    error = info.value
    assert error.line == 4 and error.file == str(path)
    assert "'q1'" in str(error) and "'a'" in str(error) and "first at line 1" in str(error)
    with pytest.raises(InputError, match="'q' lists chunk 'x' twice"):
        Run(["q", "q"], ["x", "x"], [1.0, 2.0])


def test_duplicate_judgment_in_qrels():
    with pytest.raises(InputError, match="line 3.*'q1' judges chunk 'a' twice"):
        Qrels.from_trec("q1 0 a 1\nq1 0 b 0\nq1 0 a 2\n")


def test_long_ids_and_non_ascii_round_trip():
    long_id = "doc-" + "x" * 40
    qrels = Qrels.from_dict({"q é": {long_id: 1, "短": 2}})
    run = Run.from_ranked({"q é": ["短", long_id, "other"]})
    assert run.to_ranked() == {"q é": ["短", long_id, "other"]}
    assert evaluate(qrels, run, ["P@2"])["P@2"] == 1.0


# --------------------------------------------------------------------------- order
def test_ranked_lists_keep_their_order_and_scores_sort_trec_style():
    ranked = Run.from_ranked({"q": ["z", "a", "m"]})
    assert ranked.to_ranked() == {"q": ["z", "a", "m"]}
    scored = Run(["q"] * 4 + ["p"], ["a", "b", "c", "d", "e"], [1.0, 2.0, 2.0, 0.5, 1.0])
    assert scored.to_ranked() == {"p": ["e"], "q": ["c", "b", "a", "d"]}


def test_scores_compare_as_float64():
    # 1 + 2^-30 and 1 differ in float64 but not in float32 (where trec_eval would tie them
    # and put "b" first by id); ragjudge ranks "a" first
    run = Run(["q", "q"], ["a", "b"], [1.0 + 2.0 ** -30, 1.0])
    assert run.to_ranked() == {"q": ["a", "b"]}


# --------------------------------------------------------------------------- registry
@pytest.mark.parametrize("text, canonical", [
    ("P@5", "P@5"), ("P(rel=2)@5", "P(rel=2)@5"), ("MRR", "RR"), ("MAP", "AP"),
    ("NDCG@10", "nDCG@10"), ("hit_rate@3", "Success@3"), ("ndcg_cut_10", "nDCG@10"),
    ("P_5", "P@5"), ("map", "AP"), ("recip_rank", "RR"), ("iprec_at_recall_0.50", "iprec@0.5"),
    ("F(beta=2)@10", "F(beta=2)@10"), ("F1@3", "F1@3"), ("ERR(max_grade=4)@20", "ERR(max_grade=4)@20"),
    ("R-Precision", "Rprec"), ("MR@5", "R@5"),
])
def test_parse_names_and_aliases(text, canonical):
    m = parse_measure(text)
    assert m.name == canonical
    assert str(m) == text


@pytest.mark.parametrize("text, fragment", [
    ("Foo@5", "unknown measure 'Foo'"),
    ("P", "needs a cutoff"),
    ("bpref@5", "takes no cutoff"),
    ("P(beta=2)@5", "unknown parameter 'beta'"),
    ("P@0", "from 1 to 100,000"),
    ("iprec@1.5", "between 0 and 1"),
])
def test_parse_errors_are_usage_errors(text, fragment):
    with pytest.raises(UsageError, match=fragment):
        parse_measure(text)


def test_unknown_measure_lists_known_names():
    with pytest.raises(UsageError) as info:
        parse_measure("Precision_at_five")
    for name in ("P@k", "nDCG[@k]", "ContextPrecision[@k]", "bpref"):
        assert name in str(info.value)


def test_every_measure_documents_formula():
    names = {d.name for d in known_measures()}
    assert {"P", "R", "F1", "F", "Accuracy", "Success", "AP", "Rprec", "RR", "DCG", "nDCG",
            "nDCG_exp", "ERR", "ERR_linear", "bpref", "Judged", "iprec", "AUC_PR",
            "ContextPrecision", "ContextPrecisionAP"} <= names
    for d in known_measures():
        assert len(d.doc) > 40, d.name


@pytest.fixture
def temporary_measure():
    added = []

    def add(name, **kwargs):
        def deco(kernel):
            measure(name, **kwargs)(kernel)
            added.append(name)
            return kernel
        return deco

    yield add
    for name in added:
        d = REGISTRY.pop(name)
        for key in (d.name, *d.aliases):
            ALIASES.pop(key.lower(), None)


def test_nan_means_undefined_and_is_left_out_of_the_mean(temporary_measure):
    @temporary_measure("OddOnly", cutoff="optional")
    def odd_only(ctx, m):
        """Test measure: 1 on queries with an odd index, undefined on the others."""
        out = np.full(ctx.n_queries, np.nan)
        out[1::2] = 1.0
        return out

    qrels = Qrels.from_dict({f"q{i}": {"a": 1} for i in range(5)})
    run = Run.from_ranked({f"q{i}": ["a"] for i in range(5)})
    result = evaluate(qrels, run, ["OddOnly", "P@1"])
    assert result.aggregate() == {"OddOnly": 1.0, "P@1": 1.0}
    assert result.undefined() == {"OddOnly": 3, "P@1": 0}


def test_missing_extras_name_the_measure_and_callable_extras_see_the_context(temporary_measure):
    @temporary_measure("RowNumber", needs=("numbers",))
    def row_number(ctx, m):
        """Test measure: the value the caller computed for each row of the context."""
        return np.asarray(ctx.extras["numbers"], dtype=float)

    qrels = Qrels.from_dict({"b": {"x": 1}, "a": {"x": 1}})
    run = Run.from_ranked({"a": ["x"], "b": ["y", "x"]})
    with pytest.raises(UsageError, match="RowNumber needs numbers"):
        evaluate(qrels, run, ["RowNumber"])
    by_query = {"a": 10.0, "b": 20.0}
    result = evaluate(qrels, run, ["RowNumber"],
                      extras={"numbers": lambda ctx: [by_query[q] for q in ctx.query_ids]})
    assert result.per_query() == {"a": {"RowNumber": 10.0}, "b": {"RowNumber": 20.0}}


def test_context_positions_for_extras():
    qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"b": 1}})
    run = Run.from_ranked({"q1": ["x", "a"], "q2": ["b"]})
    ctx = build_context(qrels, run)
    row, col = ctx.positions(["q1", "q1", "q2", "q3", "q2"], ["a", "zz", "b", "a", "a"])
    assert row.tolist() == [0, 0, 1, -1, 1]
    assert col.tolist() == [1, -1, 0, -1, -1]
    assert ctx.chunk_ids.tolist() == [[b"x", b"a"], [b"b", b""]]


# --------------------------------------------------------------------------- averaging
def test_query_sets_and_averaging_are_explicit():
    qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"a": 1}, "q3": {"a": 1}})
    run = Run.from_ranked({"q1": ["a"], "q2": ["b"], "q9": ["a"]})  # q3 missing, q9 unjudged
    judged = evaluate(qrels, run, ["P@1"])
    assert judged.query_ids == ["q1", "q2", "q3"]
    assert judged["P@1"] == pytest.approx(1 / 3)
    assert "trec_eval -c" in judged.averaging
    assert judged.answered.tolist() == [True, True, False]
    answered = evaluate(qrels, run, ["P@1"], queries="run")
    assert answered.query_ids == ["q1", "q2"] and answered["P@1"] == 0.5
    listed = evaluate(qrels, run, ["P@1"], queries=["q3", "q1", "nope"])
    assert listed.query_ids == ["q1", "q3"] and listed["P@1"] == 0.5


def test_threshold_and_rel_parameter():
    qrels = Qrels.from_dict({"q": {"a": 1, "b": 2, "c": 3}})
    run = Run.from_ranked({"q": ["a", "b", "c"]})
    assert evaluate(qrels, run, ["P@1"], threshold=2)["P@1"] == 0.0
    assert evaluate(qrels, run, ["P(rel=2)@2", "P@2"])["P(rel=2)@2"] == 0.5
    assert evaluate(qrels, run, ["P(rel=2)@2", "P@2"])["P@2"] == 1.0
    # nDCG ignores the threshold (trec_eval): every positive grade is gain
    assert evaluate(qrels, run, ["nDCG@3"], threshold=3)["nDCG@3"] == \
        evaluate(qrels, run, ["nDCG@3"], threshold=1)["nDCG@3"]


def test_evaluate_runs_shares_the_qrels():
    qrels = Qrels.from_dict({"q": {"a": 1, "b": 1}})
    runs = [Run.from_ranked({"q": ["a", "x"]}, name="first"),
            Run.from_ranked({"q": ["x", "b"]}, name="second")]
    results = evaluate_runs(qrels, runs, ["RR", "P@2"])
    assert {name: r.aggregate() for name, r in results.items()} == {
        "first": {"RR": 1.0, "P@2": 0.5}, "second": {"RR": 0.5, "P@2": 0.5}}
    assert "index" in qrels.__dict__  # the pair index was built once, on the qrels
    with pytest.raises(UsageError, match="two runs are named"):
        evaluate_runs(qrels, [runs[0], runs[0]], ["RR"])


def test_depth_is_limited_to_the_cutoffs_needed():
    qrels = Qrels.from_dict({"q": {"a": 1}})
    run = Run.from_ranked({"q": ["x", "y", "z", "a"]})
    assert build_context(qrels, run, depth=2).depth == 2
    assert evaluate(qrels, run, ["P@2", "R@3"])["R@3"] == 0.0
    assert evaluate(qrels, run, ["P@2", "AP"])["AP"] == 0.25


def test_bpref_without_judged_nonrelevant_chunks():
    # no judged non-relevant chunk: every retrieved relevant chunk counts 1, bpref = found / R
    qrels = Qrels.from_dict({"q": {"a": 1, "b": 1}, "all": {"a": 1}})
    run = Run.from_ranked({"q": ["x", "a"], "all": ["y", "a"]})
    values = evaluate(qrels, run, ["bpref"]).per_query()
    assert values == {"all": {"bpref": 1.0}, "q": {"bpref": 0.5}}


def test_f_measures_and_set_precision_without_cutoff():
    qrels = Qrels.from_dict({"q": {"a": 1, "b": 1, "c": 1, "d": 1}})
    run = Run.from_ranked({"q": ["a", "x", "b", "y"]})
    # P = 2/4, R = 2/4 -> F1 = 0.5; F2 = 5 PR / (4P + R) = 0.5
    result = evaluate(qrels, run, ["F1", "F(beta=2)@4", "F1@1"])
    assert result["F1"] == pytest.approx(0.5)
    assert result["F(beta=2)@4"] == pytest.approx(0.5)
    # top 1: P = 1, R = 1/4 -> 2 * 0.25 / 1.25 = 0.4
    assert result["F1@1"] == pytest.approx(0.4)


def test_many_blocks_on_threads_keep_order_and_line_numbers(monkeypatch):
    from ragjudge.metrics import trec
    from ragjudge.metrics.trec import tokens

    monkeypatch.setattr(tokens, "BLOCK_BYTES", 64)  # a block of two or three lines
    monkeypatch.setattr(tokens, "THREADS", 2)
    lines = [f"q{i // 7} Q0 doc{i} {i} {100 - i}.5 tag" for i in range(60)]
    arrays = trec.read_run_arrays("\n".join(lines) + "\n")
    assert arrays.chunk_ids.tolist() == [f"doc{i}".encode() for i in range(60)]
    assert arrays.scores.tolist() == [100 - i + 0.5 for i in range(60)]
    lines[41] = "q5 Q0 doc41 41 x tag"
    with pytest.raises(InputError) as info:
        trec.read_run_arrays("\n".join(lines) + "\n")
    assert info.value.line == 42 and info.value.field == "score"
    lines[41] = "q5 Q0 doc41 41"
    lines.insert(10, "")
    with pytest.raises(InputError) as info:
        trec.read_run_arrays("\n".join(lines) + "\n")
    assert info.value.line == 43
