"""Numbers that must be right: ERR's scale, strict number syntax in every reader, measure
names that cannot pass silently, bounds on every number that enters, RAG measures on queries
without grades, paired tests that say why a statistic is undefined.

Reference values are worked by hand in the comments, or come from ir_measures.
"""

from __future__ import annotations

import json
import math
import shutil
import tracemalloc

import numpy as np
import pytest
from clikit import run_cli as _run

from ragjudge.errors import InputError, UsageError
from ragjudge.metrics import Qrels, Run, evaluate, parse_measure
from ragjudge.numeric import MAX_CUTOFF, MAX_GRADE, MAX_RANK


from clikit import no_project  # noqa: F401 - autouse: no project named by the environment


def _write(path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def _one_paragraph(err: str) -> None:
    assert "Traceback" not in err
    assert err.strip().count("\n\n") == 0


# -- ERR: a probability on the project's scale -----------------------------------------------


@pytest.mark.parametrize("name", ["ERR(max_grade=0)@1", "ERR(max_grade=-1)@5",
                                  "ERR_linear(max_grade=0)@3", "ERR(max_grade=1001)@3"])
def test_err_max_grade_out_of_range_is_refused(name):
    with pytest.raises(UsageError, match="max_grade"):
        parse_measure(name)


def test_err_refuses_a_grade_above_its_max_grade():
    # Chapelle's R = (2^g - 1) / 2^g_max is a probability; with g = 3 and g_max = 2 it is 7/4
    qrels = Qrels.from_dict({"q1": {"a": 3, "b": 1}, "q2": {"c": 1}})
    run = Run.from_ranked({"q1": ["a", "b"], "q2": ["c"]})
    for name in ("ERR(max_grade=2)@1", "ERR_linear(max_grade=2)@1"):
        with pytest.raises(InputError) as info:
            evaluate(qrels, run, [name])
        message = str(info.value)
        assert "grade 3" in message and "'q1'" in message and "max_grade=2" in message
    # at the top of the scale the value is a probability: R = 7/8
    assert evaluate(qrels, run, ["ERR(max_grade=3)@1"]).per_query()["q1"]["ERR(max_grade=3)@1"] \
        == pytest.approx(7 / 8, abs=1e-15)


def _ir_err(qrels: dict, run: dict, k: int):
    ir_measures = pytest.importorskip("ir_measures")
    if shutil.which("perl") is None:
        pytest.skip("ir_measures' ERR runs gdeval, a perl script")
    q = [ir_measures.Qrel(qid, d, g) for qid, docs in qrels.items() for d, g in docs.items()]
    r = [ir_measures.ScoredDoc(qid, d, s) for qid, docs in run.items() for d, s in docs.items()]
    return {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.ERR @ k], q, r)}


def test_err_with_a_max_grade_does_what_ir_measures_does():
    """ir_measures' ERR (gdeval) fixes the top grade at 4 and refuses a qrels grade above it;
    ``ERR(max_grade=4)`` gives its values and refuses the same qrels."""
    run = {"1": {"a": 2.0, "b": 1.0}}  # gdeval reads numeric query ids only
    within = {"1": {"a": 4, "b": 1}}
    # R = 15/16, 1/16: ERR@2 = 15/16 + (1/16)(1/16)/2 = 0.939453125 (gdeval prints 0.93945)
    ours = evaluate(Qrels.from_dict(within), Run.from_dict(run), ["ERR(max_grade=4)@2"])
    assert ours["ERR(max_grade=4)@2"] == pytest.approx(0.939453125, abs=1e-15)
    assert _ir_err(within, run, 2)["1"] == pytest.approx(0.939453125, abs=6e-6)
    above = {"1": {"a": 5, "b": 1}}
    import subprocess

    with pytest.raises(subprocess.CalledProcessError):
        _ir_err(above, run, 2)
    with pytest.raises(InputError, match="grade 5"):
        evaluate(Qrels.from_dict(above), Run.from_dict(run), ["ERR(max_grade=4)@2"])


def test_err_stays_a_probability_on_random_qrels():
    rng = np.random.default_rng(3)
    for _ in range(30):
        grades = {f"d{i}": int(rng.integers(-1, 5)) for i in range(8)}
        qrels = Qrels.from_dict({"q": grades})
        run = Run.from_ranked({"q": list(rng.permutation(list(grades)))})
        result = evaluate(qrels, run, ["ERR@8", "ERR(max_grade=4)@8", "ERR_linear@8"])
        assert np.all((result.values >= 0) & (result.values <= 1))


def _project_with_labels(db: str, labels: list[tuple[str, str, int]], scale: str = "0-3"):
    from projectkit import make_small_project

    from ragjudge.services.labels import events as judging

    project = make_small_project(db, scale=scale)
    for query, chunk, grade in labels:
        judging.record_label(project, annotator="ann", query_id=query, chunk_id=chunk, grade=grade)
    return project


def _err_of_q1(capsys, db: str, measure: str = "ERR@2") -> float:
    code, out, err = _run(capsys, "eval", "--db", db, "--run", "bm25", "-m", measure,
                          "--per-query", "--format", "json")
    assert code == 0, err
    return json.loads(out)["runs"]["bm25"]["per_query"]["q1"][measure]


@pytest.mark.slow
def test_project_err_uses_the_top_of_the_projects_scale(tmp_path, capsys):
    # q1 ranks c05, c06 first; gold grades 2 and 1 on a 0-3 scale: R = 3/8, 1/8
    # ERR@2 = 3/8 + (5/8)(1/8)/2 = 0.4140625 (with g_max = 2 from the labels it was 0.78125)
    db = str(tmp_path / "p.db")
    project = _project_with_labels(db, [("q1", "c05", 2), ("q1", "c06", 1)])
    assert _err_of_q1(capsys, db) == pytest.approx(0.4140625, abs=1e-15)
    # another query's first grade 3 does not move q1's value: the scale did not change
    from ragjudge.services.labels import events as judging

    judging.record_label(project, annotator="ann", query_id="q2", chunk_id="c08", grade=3)
    project.close()
    assert _err_of_q1(capsys, db) == pytest.approx(0.4140625, abs=1e-15)


def test_project_err_in_explain_and_the_library_service_agree(tmp_path, capsys):
    db = str(tmp_path / "p.db")
    _project_with_labels(db, [("q1", "c05", 2), ("q1", "c06", 1)]).close()
    code, out, err = _run(capsys, "explain", "--db", db, "--run", "bm25", "--query", "q1",
                          "-m", "ERR@2", "--format", "json")
    assert code == 0, err
    explanation, = json.loads(out)["explanations"]
    assert explanation["value"] == pytest.approx(0.4140625, abs=1e-15)


QRELS_TOP2 = "q1 0 a 2\nq1 0 b 1\nq2 0 c 1\n"
QRELS_TOP3 = QRELS_TOP2 + "q2 0 d 3\n"
RUN_AB = "q1 Q0 a 1 2 t\nq1 Q0 b 2 1 t\nq2 Q0 c 1 1 t\n"


def test_file_err_takes_the_top_grade_of_the_whole_file():
    """From a qrels file the scale is what the file shows: its highest grade, the same for every
    query (documented in the README); ``max_grade=`` fixes it."""
    run = Run.from_trec(RUN_AB)
    top2, top3 = Qrels.from_trec(QRELS_TOP2), Qrels.from_trec(QRELS_TOP3)
    assert evaluate(top2, run, ["ERR@2"]).per_query()["q1"]["ERR@2"] == pytest.approx(0.78125)
    assert evaluate(top3, run, ["ERR@2"]).per_query()["q1"]["ERR@2"] == pytest.approx(0.4140625)
    for qrels in (top2, top3):
        fixed = evaluate(qrels, run, ["ERR(max_grade=3)@2"]).per_query()["q1"]
        assert fixed["ERR(max_grade=3)@2"] == pytest.approx(0.4140625, abs=1e-15)
        # one query evaluated alone gets the value it has among all of them
        alone = evaluate(qrels, run, ["ERR@2"], queries=["q1"]).per_query()["q1"]["ERR@2"]
        assert alone == evaluate(qrels, run, ["ERR@2"]).per_query()["q1"]["ERR@2"]


def test_qrels_with_a_scale_refuse_a_grade_above_it():
    with pytest.raises(InputError, match="above the top of the scale"):
        Qrels.from_dict({"q1": {"a": 4}}, top_grade=3)
    assert Qrels.from_dict({"q1": {"a": 1}}, top_grade=3).max_grade == 3


# -- one number syntax in every reader --------------------------------------------------------

# Python's int() and float() read these; a data file means something else by them (trec_eval
# reads "1_0" as 1), so every reader refuses them
BAD_INTEGERS = ["1_0", "\uff11", "\u0661", "+1_0"]
BAD_NUMBERS = ["1_0.5", "\uff11.5", "0x1p3"]


@pytest.fixture(params=[False, True], ids=["numpy", "pyarrow"])
def bulk_path(request, monkeypatch):
    """The TREC reader of ragjudge.metrics, trying numpy or pyarrow first."""
    from ragjudge.metrics.trec import reader

    if request.param:
        pytest.importorskip("pyarrow")
    monkeypatch.setattr(reader, "ARROW_MIN_BYTES", 0 if request.param else 1 << 62)
    return request.param


@pytest.mark.parametrize("token", ["1_0", "+1_0", "-1_0"])
def test_bulk_qrels_parser_refuses_python_only_integers(bulk_path, token):
    with pytest.raises(InputError) as info:
        Qrels.from_trec(f"q1 0 a 1\nq1 0 b {token}\n")
    assert info.value.line == 2 and info.value.field == "grade"


@pytest.mark.parametrize("token", ["1_0.5", "1_0", "1e1_0"])
def test_bulk_run_parser_refuses_python_only_numbers(bulk_path, token):
    with pytest.raises(InputError) as info:
        Run.from_trec(f"q1 Q0 a 1 2.5 t\nq1 Q0 b 2 {token} t\n")
    assert info.value.line == 2 and info.value.field == "score"


def test_bulk_parser_locates_a_grade_out_of_range(bulk_path):
    for token in ("99999999999999999999", str(MAX_GRADE + 1), str(-MAX_GRADE - 1)):
        with pytest.raises(InputError) as info:
            Qrels.from_trec(f"q1 0 a 1\nq1 0 b 2\nq1 0 c {token}\n")
        assert info.value.line == 3 and info.value.field == "grade"
        assert f"{MAX_GRADE:,}" in str(info.value)
    assert Qrels.from_trec(f"q1 0 a {MAX_GRADE}\nq1 0 b {-MAX_GRADE}\n").max_grade == MAX_GRADE


def _read_all(kind: str, text: str, fmt: str):
    from ragjudge.formats import read_records

    return list(read_records(kind, text, fmt))


@pytest.mark.parametrize("token", BAD_INTEGERS)
def test_trec_and_csv_readers_refuse_python_only_grades(token):
    for text, fmt in ((f"q1 0 a {token}\n", "trec"),
                      (f"query_id,chunk_id,grade\nq1,a,{token}\n", "csv")):
        with pytest.raises(InputError) as info:
            _read_all("qrels", text, fmt)
        assert info.value.field == "grade", (fmt, token)


@pytest.mark.parametrize("token", BAD_INTEGERS)
def test_trec_and_csv_readers_refuse_python_only_ranks(token):
    for text, fmt in ((f"q1 Q0 a {token} 1.5 t\n", "trec"),
                      (f"query_id,chunk_id,rank\nq1,a,{token}\n", "csv")):
        with pytest.raises(InputError) as info:
            _read_all("run", text, fmt)
        assert info.value.field == "rank", (fmt, token)


@pytest.mark.parametrize("token", BAD_NUMBERS)
def test_trec_and_csv_readers_refuse_python_only_scores(token):
    for text, fmt in ((f"q1 Q0 a 1 {token} t\n", "trec"),
                      (f"query_id,chunk_id,score\nq1,a,{token}\n", "csv")):
        with pytest.raises(InputError) as info:
            _read_all("run", text, fmt)
        assert info.value.field == "score", (fmt, token)


@pytest.mark.parametrize("token", ["infinity", "-Infinity", "NaN", "1e400"])
def test_non_finite_scores_and_weights_are_refused_as_such(token):
    with pytest.raises(InputError, match="finite"):
        _read_all("run", f"query_id,chunk_id,score\nq1,a,{token}\n", "csv")
    with pytest.raises(InputError, match="finite"):
        _read_all("run", f"q1 Q0 a 1 {token} t\n", "trec")
    with pytest.raises(InputError, match="finite"):
        _read_all("nuggets", f"query_id,nugget,weight\nq1,n,{token}\n", "csv")


def test_csv_numbers_may_be_padded_with_ascii_blanks_only():
    # blanks around a cell are how people align CSV by hand; other white space is not a blank
    judgment, = _read_all("qrels", "query_id,chunk_id,grade\nq1,a, 2 \n", "csv")
    assert judgment.grade == 2
    for cell in ("\u20032", "2\u00a0", "\u3000 2"):
        with pytest.raises(InputError):
            _read_all("qrels", f"query_id,chunk_id,grade\nq1,a,{cell}\n", "csv")


def test_beir_qrels_refuse_python_only_grades(tmp_path):
    from ragjudge.formats.beir import read_beir_qrels

    path = _write(tmp_path / "test.tsv", "query-id\tcorpus-id\tscore\nq1\ta\t1_0\n")
    with pytest.raises(InputError) as info:
        list(read_beir_qrels(tmp_path, path=path))
    assert info.value.line == 2 and info.value.field == "score"


@pytest.mark.parametrize("name", ["P(rel=1_0)@5", "P(rel=\uff11)@5", "F(beta=1_0.5)@5",
                                  "F(beta=\uff12)@5", "ERR(max_grade=0x3)@5"])
def test_measure_parameters_use_the_same_syntax(name):
    with pytest.raises(UsageError):
        parse_measure(name)
    assert parse_measure("P(rel=+2)@5").rel == 2


# -- measure names that cannot pass silently -------------------------------------------------


@pytest.mark.parametrize("name", ["F(beta=-1)@5", "F(beta=inf)@5", "F(beta=nan)@5",
                                  "F(beta=0)@5", "F(beta=1e400)@5"])
def test_f_beta_must_be_a_positive_finite_number(name):
    with pytest.raises(UsageError, match="beta"):
        parse_measure(name)
    assert parse_measure("F(beta=0.5)@5").param["beta"] == 0.5


@pytest.mark.parametrize("name", ["P(rel=1,rel=3)@5", "NuggetRecall(strict,strict)@5",
                                  "F(beta=2, beta=2)@5"])
def test_a_parameter_given_twice_is_refused(name):
    with pytest.raises(UsageError, match="twice"):
        parse_measure(name)


@pytest.mark.parametrize("name", [f"P(rel={MAX_GRADE + 1})@5", "P(rel=99999999999999999999)@5"])
def test_a_relevance_threshold_out_of_range_is_refused(name):
    with pytest.raises(UsageError, match=f"{MAX_GRADE:,}"):
        parse_measure(name)


@pytest.mark.parametrize("name", [f"P@{MAX_CUTOFF + 1}", "P@10000000000", "P_10000000000",
                                  "nDCG@99999999999999999999999"])
def test_a_cutoff_out_of_range_is_refused_with_the_limit(name):
    with pytest.raises(UsageError, match=f"{MAX_CUTOFF:,}"):
        parse_measure(name)
    assert parse_measure(f"P@{MAX_CUTOFF}").cutoff == MAX_CUTOFF


# -- every number bounded where it enters, before anything is allocated ----------------------


def test_curve_k_is_bounded_before_any_list_is_built():
    from ragjudge.cli.evaluate import parse_k

    assert parse_k("1-20") == list(range(1, 21))
    assert parse_k(f"1,{MAX_CUTOFF}")[-1] == MAX_CUTOFF  # any K up to MAX_CUTOFF in a list
    tracemalloc.start()
    try:
        for text in ("5000000", "1-5000000", "1,5000000", "99999999999999999999999"):
            with pytest.raises(UsageError, match=f"{MAX_CUTOFF:,}"):
                parse_k(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # no list of millions of cutoffs on the way to the refusal


def test_eval_curve_with_a_huge_k_is_one_paragraph(tmp_path, capsys):
    q = _write(tmp_path / "q.qrels", QRELS_TOP2)
    r = _write(tmp_path / "r.trec", RUN_AB)
    code, out, err = _run(capsys, "eval", "--qrels", q, "--run", r, "--curve", "nDCG",
                          "--k", "1000000000")
    assert code == 2 and out == ""
    assert f"{MAX_CUTOFF:,}" in err
    _one_paragraph(err)


def test_jsonl_qrels_grade_out_of_range_is_located(tmp_path, capsys):
    r = _write(tmp_path / "r.trec", RUN_AB)
    for grade in (10**30, MAX_GRADE + 1):
        q = _write(tmp_path / "q.jsonl",
                   '{"query_id": "q1", "chunk_id": "a", "grade": 1}\n'
                   f'{{"query_id": "q1", "chunk_id": "b", "grade": {grade}}}\n')
        code, out, err = _run(capsys, "eval", "--qrels", q, "--run", r, "-m", "nDCG@2")
        assert code == 2 and out == ""
        assert "q.jsonl, line 2, field 'grade'" in err and f"{MAX_GRADE:,}" in err
        _one_paragraph(err)


def test_trec_qrels_grade_out_of_range_in_eval_is_located(tmp_path, capsys):
    r = _write(tmp_path / "r.trec", RUN_AB)
    q = _write(tmp_path / "q.qrels", "q1 0 a 1\nq1 0 b 99999999999999999999\n")
    code, _, err = _run(capsys, "eval", "--qrels", q, "--run", r, "-m", "nDCG@2")
    assert code == 2 and "line 2, field 'grade'" in err and f"{MAX_GRADE:,}" in err
    _one_paragraph(err)


HUGE_RANK = 2**63


@pytest.mark.parametrize("name,text", [
    ("run.jsonl", f'{{"query_id": "q1", "chunk_id": "a", "rank": {HUGE_RANK}}}\n'),
    ("run.jsonl", f'{{"query_id": "q1", "chunk_id": "a", "rank": {MAX_RANK + 1}}}\n'),
])
def test_eval_run_file_with_a_rank_out_of_range(tmp_path, capsys, name, text):
    q = _write(tmp_path / "q.qrels", QRELS_TOP2)
    r = _write(tmp_path / name, text)
    code, out, err = _run(capsys, "eval", "--qrels", q, "--run", r, "-m", "P@1")
    assert code == 2 and out == ""
    assert "field 'rank'" in err and f"{MAX_RANK:,}" in err
    _one_paragraph(err)


@pytest.mark.parametrize("name,text", [
    ("big.trec", f"q1 Q0 c05 {HUGE_RANK} 1.5 t\n"),
    ("big.jsonl", f'{{"query_id": "q1", "chunk_id": "c05", "rank": {HUGE_RANK}}}\n'),
    ("big.csv", f"query_id,chunk_id,rank\nq1,c05,{HUGE_RANK}\n"),
])
def test_import_run_with_a_rank_out_of_range_changes_nothing(tmp_path, capsys, name, text):
    from projectkit import make_small_project

    from ragjudge.services.runs import stored as svc
    from ragjudge.services.project.database import Project

    db = str(tmp_path / "p.db")
    make_small_project(db).close()
    path = _write(tmp_path / name, text)
    code, _, err = _run(capsys, "--db", db, "import", "run", path)
    assert code == 2
    assert "line" in err and "'rank'" in err and f"{MAX_RANK:,}" in err
    _one_paragraph(err)
    with Project.open(db) as project:
        assert svc.project_run_names(project) == ["bm25"]


def test_a_threshold_out_of_range_is_refused(tmp_path, capsys):
    q = _write(tmp_path / "q.qrels", QRELS_TOP2)
    r = _write(tmp_path / "r.trec", RUN_AB)
    code, _, err = _run(capsys, "eval", "--qrels", q, "--run", r, "-m", "P@1",
                          "--threshold", str(10**30))
    assert code == 2 and f"{MAX_GRADE:,}" in err
    _one_paragraph(err)
    with pytest.raises(UsageError, match=f"{MAX_GRADE:,}"):
        evaluate(Qrels.from_trec(QRELS_TOP2), Run.from_trec(RUN_AB), ["P@1"], threshold=10**30)


@pytest.mark.parametrize("option", ["--permutations", "--resamples"])
def test_compare_resampling_is_bounded(tmp_path, capsys, option):
    q = _write(tmp_path / "q.qrels", QRELS_TOP2)
    a = _write(tmp_path / "a.trec", RUN_AB)
    b = _write(tmp_path / "b.trec", RUN_AB.replace(" t\n", " u\n"))
    code, out, err = _run(capsys, "compare", a, b, "--qrels", q, "-m", "P@1", option,
                          str(10**12))
    assert code == 2 and out == "" and "1,000,000" in err
    _one_paragraph(err)


def test_a_scale_is_bounded_and_written_in_ascii():
    from ragjudge.models import Scale

    with pytest.raises(ValueError, match=f"{MAX_GRADE:,}"):
        Scale.parse("99999999999999999998-99999999999999999999")
    with pytest.raises(ValueError):
        Scale.parse("\uff10-\uff13")
    assert Scale.parse("1-5").max == 5


# -- RAG measures on queries that have nuggets but no relevance grade ------------------------


def _add_nuggets(project, query: str, support: list[tuple[str, str]]) -> None:
    """One vital nugget of ``query`` per (chunk, level) pair, supported by that chunk."""
    from ragjudge.store.schema import Annotator, Nugget, NuggetSupport

    def fill(session) -> None:
        if session.get(Annotator, "ann") is None:
            session.add(Annotator(name="ann"))
        for i, (chunk, level) in enumerate(support):
            nugget = Nugget(query_id=query, text=f"{query} fact {i}", importance="vital")
            session.add(nugget)
            session.flush()
            session.add(NuggetSupport(nugget_id=nugget.id, chunk_id=chunk, annotator="ann",
                                      support=level))

    project.write(fill)


@pytest.mark.slow
def test_a_project_with_nuggets_and_no_grades_scores_its_rag_measures(tmp_path, capsys):
    from projectkit import make_small_project

    db = str(tmp_path / "p.db")
    project = make_small_project(db)
    # q1 ranks c05, c06, c07 ...: one nugget found at rank 1, one at rank 3, one nowhere
    _add_nuggets(project, "q1", [("c05", "full"), ("c07", "full"), ("c20", "full")])
    project.close()
    code, out, err = _run(capsys, "eval", "--db", db, "--run", "bm25", "-m", "NuggetRecall@1",
                          "-m", "NuggetRecall@3", "--per-query", "--format", "json")
    assert code == 0, err
    bm25 = json.loads(out)["runs"]["bm25"]
    assert bm25["per_query"]["q1"] == {"NuggetRecall@1": pytest.approx(1 / 3),
                                      "NuggetRecall@3": pytest.approx(2 / 3)}
    assert bm25["aggregate"]["NuggetRecall@3"] == pytest.approx(2 / 3)
    # the default scorecard still needs grades: there is nothing else to score
    code, out, err = _run(capsys, "eval", "--db", db, "--run", "bm25")
    assert code == 2 and "no judged queries" in err


@pytest.mark.slow
def test_a_query_with_nuggets_and_no_grade_is_scored_not_silently_left_out(tmp_path, capsys):
    db = str(tmp_path / "p.db")
    project = _project_with_labels(db, [("q2", "c08", 2)])
    _add_nuggets(project, "q1", [("c05", "full"), ("c20", "full")])
    _add_nuggets(project, "q2", [("c20", "full")])
    project.close()
    code, out, err = _run(capsys, "eval", "--db", db, "--run", "bm25", "-m", "NuggetRecall@5",
                          "-m", "P@1", "--per-query", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    bm25 = data["runs"]["bm25"]
    assert bm25["per_query"]["q1"]["NuggetRecall@5"] == pytest.approx(0.5)
    assert bm25["per_query"]["q2"]["NuggetRecall@5"] == 0.0
    assert bm25["aggregate"]["NuggetRecall@5"] == pytest.approx(0.25)
    # P@1 has no grade to count on q1: undefined there, left out and counted
    assert bm25["per_query"]["q1"]["P@1"] is None
    assert bm25["aggregate"]["P@1"] == 1.0
    assert bm25["undefined"] == {"P@1": 1}
    # the table says why
    code, out, err = _run(capsys, "eval", "--db", db, "--run", "bm25", "-m", "NuggetRecall@5",
                          "-m", "P@1")
    assert code == 0, err
    assert "P@1: left out of the mean for 1 of 2 queries" in " ".join(out.split())
    assert "relevance grade" in out


# -- Judged@k: what ragjudge documents, not what ir_measures does ----------------------------


def test_judged_follows_ragjudges_ties_and_negative_grades():
    from ragjudge.metrics.measures import judged

    assert "Same as ir_measures" not in judged.__doc__
    # a tie: trec_eval's order puts c, b, a (chunk id descending); a's grade -1 is unjudged
    qrels = Qrels.from_dict({"q": {"a": -1, "b": 0}})
    run = Run.from_dict({"q": {"a": 1.0, "b": 1.0, "c": 1.0}})
    values = evaluate(qrels, run, ["Judged@1", "Judged@2", "Judged@3"]).per_query()["q"]
    assert values == {"Judged@1": 0.0, "Judged@2": 0.5, "Judged@3": pytest.approx(1 / 3)}
    ir_measures = pytest.importorskip("ir_measures")
    ref = {str(m.measure): m.value for m in ir_measures.iter_calc(
        [ir_measures.Judged @ 1, ir_measures.Judged @ 3],
        [ir_measures.Qrel("q", "a", -1), ir_measures.Qrel("q", "b", 0)],
        [ir_measures.ScoredDoc("q", d, 1.0) for d in "abc"])}
    # ir_measures breaks the tie by id ascending and counts a negative grade as judged
    assert ref == {"Judged@1": 1.0, "Judged@3": pytest.approx(2 / 3)}


# -- paired tests: an undefined statistic comes with its reason ------------------------------


def test_a_constant_difference_gives_an_infinite_t_with_its_reason(tmp_path, capsys):
    # every query: a relevant chunk at rank 1 in B and rank 2 in A: P@1 differs by 1 everywhere
    q = _write(tmp_path / "q.qrels", "".join(f"q{i} 0 a 1\n" for i in range(1, 6)))
    a = _write(tmp_path / "a.trec", "".join(f"q{i} Q0 a 2 1 t\nq{i} Q0 b 1 2 t\n"
                                            for i in range(1, 6)))
    b = _write(tmp_path / "b.trec", "".join(f"q{i} Q0 a 1 2 t\nq{i} Q0 b 2 1 t\n"
                                            for i in range(1, 6)))
    code, out, err = _run(capsys, "compare", a, b, "--qrels", q, "-m", "P@1", "-m", "P@2",
                          "--format", "json")
    assert code == 0, err
    p1, p2 = json.loads(out)["comparisons"]
    assert p1["difference"] == 1.0 and p1["t"] is None
    assert "t" in p1["undefined"] and "same" in p1["undefined"]["t"]
    assert p1["p_t_test"] == 0.0
    assert p2["t"] == 0.0 and "undefined" not in p2 or not p2["undefined"]  # identical: t = 0


def test_one_paired_query_says_why_the_t_test_is_undefined():
    from ragjudge.metrics.significance import compare_runs

    row, = compare_runs({"a": np.array([[0.2]]), "b": np.array([[0.5]])}, ["P@1"])
    record = row.as_dict()
    assert math.isnan(row.t) and math.isnan(row.p_t_test)
    assert set(record["undefined"]) == {"t", "p_t_test", "p_t_test_adjusted"}
    assert "two" in record["undefined"]["t"]


def test_compare_means_are_the_means_eval_gives_under_the_same_averaging(tmp_path, capsys):
    q = _write(tmp_path / "q.qrels", "".join(f"q{i} 0 a {i % 3}\nq{i} 0 b 1\n"
                                             for i in range(1, 9)))
    # A misses q1 and q2, B misses q7; the runs differ elsewhere
    a = _write(tmp_path / "a.trec", "".join(f"q{i} Q0 a 1 2 t\nq{i} Q0 b 2 1 t\n"
                                            for i in range(3, 9)))
    b = _write(tmp_path / "b.trec", "".join(f"q{i} Q0 c 1 3 u\nq{i} Q0 b 2 2 u\n"
                                            for i in range(1, 9) if i != 7))
    measures = ["-m", "P@1", "-m", "nDCG@2"]
    code, out, err = _run(capsys, "eval", "--qrels", q, "--run", a, "--run", b, *measures,
                          "--averaging", "run", "--format", "json")
    assert code == 0, err
    runs = json.loads(out)["runs"]
    code, out, err = _run(capsys, "compare", a, b, "--qrels", q, *measures, "--averaging", "run",
                          "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    for row in data["comparisons"]:
        assert row["mean_a"] == runs["a"]["aggregate"][row["measure"]]
        assert row["mean_b"] == runs["b"]["aggregate"][row["measure"]]
        assert row["queries"] == 5  # q3..q6, q8: answered by both, where the pairs are


def test_a_gate_requirement_is_written_in_ascii_digits():
    from ragjudge.cli.evaluate import parse_requirement

    assert parse_requirement("P@5>=0.9") == ("P@5", ">=", 0.9)
    for text in ("P@5>=\uff10.\uff19", "P@5>=0_9", "P@5>=nan"):
        with pytest.raises(UsageError):
            parse_requirement(text)


@pytest.mark.slow
def test_the_highest_rank_fits_the_database(any_db, tmp_path, capsys):
    """MAX_RANK is the rank column's limit on PostgreSQL too (a 32-bit integer)."""
    from projectkit import make_small_project

    from ragjudge.services.runs import stored as svc
    from ragjudge.services.project.database import Project

    make_small_project(any_db).close()
    ok = _write(tmp_path / "deep.jsonl",
                f'{{"query_id": "q1", "chunk_id": "c05", "rank": {MAX_RANK}}}\n'
                f'{{"query_id": "q1", "chunk_id": "c06", "rank": 1}}\n')
    code, _, err = _run(capsys, "--db", any_db, "import", "run", ok)
    assert code == 0, err
    with Project.open(any_db) as project:
        assert svc.project_run(project, "deep").to_ranked() == {"q1": ["c06", "c05"]}
    too_deep = _write(tmp_path / "deeper.jsonl",
                      f'{{"query_id": "q1", "chunk_id": "c05", "rank": {MAX_RANK + 1}}}\n')
    code, _, err = _run(capsys, "--db", any_db, "import", "run", too_deep)
    assert code == 2 and f"{MAX_RANK:,}" in err
    with Project.open(any_db) as project:
        assert svc.project_run_names(project) == ["bm25", "deep"]


def test_a_curve_too_big_for_memory_is_refused_before_it_is_built(monkeypatch):
    from ragjudge.metrics import curves

    monkeypatch.setattr(curves, "MAX_CURVE_VALUES", 30)
    qrels, run = Qrels.from_trec(QRELS_TOP2), Run.from_trec(RUN_AB)
    assert len(curves.metric_at_k(qrels, run, "P", range(1, 16)).x) == 15  # 2 queries x 15
    with pytest.raises(UsageError, match="2 queries"):
        curves.metric_at_k(qrels, run, "P", range(1, 17))
