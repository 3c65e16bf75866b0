"""The answer measures — AnswerNuggets (TREC 2024 RAG nugget scores), CitationPrecision and
CitationRecall (support evaluation) — on hand-worked examples: the kernels on arrays, then the
project of :mod:`answerkit` through ``eval``, ``explain``, ``compare`` and ``gate``.

The project's judgments, worked by hand (levels 2 full, 1 partial, 0 none; the default gold rule
takes the lower median of the annotators who judged):

q1 / bm25 — nuggets: "five days" (vital) ana full, ben full -> full; "free returns" (vital) ana
partial, ben none -> none; "tracking" (okay) ana full -> full.
    AnswerNuggets(all) = (1 + 0 + 1) / 3;  (vital) = (1 + 0) / 2;  strict: the same here.
  citations: (s0, c05) full, full -> full; (s0, c06) none, partial -> none; (s1, c07) partial.
    CitationPrecision = (1 + 0 + 0.5) / 3 = 0.5;  strict = 1 / 3.
    CitationRecall: s0 best 1, s1 0.5, s2 cites nothing 0 -> 1.5 / 3 = 0.5;  strict = 1 / 3.
q1 / dense — "five days" ana none, ben partial -> none; the others not judged (count 0):
    AnswerNuggets(all) = 0 / 3 = 0.  (s0, c05) ana full; (s1, c08) not judged:
    CitationPrecision = (1 + 0) / 2;  CitationRecall = (1 + 0) / 2.
q2 / bm25 — plain text citing c08 but no sentence: every answer measure undefined (q2 has no
nuggets; its citations are not tied to sentences). q3: no answer: undefined.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from clikit import run_cli

from ragjudge.cli import main
from ragjudge.metrics.answers import (
    UNJUDGED,
    AnswerLabels,
    AnswerSupport,
    answer_nuggets,
    citation_precision,
    citation_recall,
)
from ragjudge.metrics.registry import parse_measure

NAN = float("nan")


def support(*, answered=(True,), valid=((True,),), vital=None, levels=((UNJUDGED,),),
            n_sentences=(0,), rows=(), sentences=(), cite_levels=(), unplaced=None) -> AnswerSupport:
    valid = np.array(valid, dtype=bool).reshape(len(answered), -1)
    return AnswerSupport(
        answered=np.array(answered), unplaced=np.zeros(len(answered), bool) if unplaced is None
        else np.array(unplaced), valid=valid,
        vital=valid if vital is None else np.array(vital, dtype=bool).reshape(valid.shape),
        nugget_levels=np.array(levels).reshape(valid.shape), n_sentences=np.array(n_sentences),
        rows=np.array(rows, dtype=np.int64), sentences=np.array(sentences, dtype=np.int64),
        levels=np.array(cite_levels, dtype=np.int64))


def same(values, expected) -> bool:
    return np.allclose(np.asarray(values, dtype=float), np.asarray(expected, dtype=float),
                       equal_nan=True, atol=1e-12)


# -- kernels ---------------------------------------------------------------------------------------


def test_trec_nugget_scores_of_one_answer():
    # four nuggets: vital full, vital partial, okay partial, okay none
    s = support(valid=[[True] * 4], vital=[[True, True, False, False]], levels=[[2, 1, 1, 0]])
    assert same(answer_nuggets(s, strict=False, vital_only=False), [(1 + 0.5 + 0.5 + 0) / 4])
    assert same(answer_nuggets(s, strict=True, vital_only=False), [1 / 4])
    assert same(answer_nuggets(s, strict=False, vital_only=True), [(1 + 0.5) / 2])
    assert same(answer_nuggets(s, strict=True, vital_only=True), [1 / 2])


def test_nugget_scores_are_undefined_without_answer_nuggets_or_any_judgment():
    s = support(answered=[True, False, True, True, True],
                valid=[[True, True], [True, True], [False, False], [True, True], [True, True]],
                vital=[[True, False], [True, False], [False, False], [True, False], [False, False]],
                levels=[[2, UNJUDGED], [2, 2], [UNJUDGED, UNJUDGED], [UNJUDGED, UNJUDGED], [2, 2]],
                n_sentences=[0] * 5)
    # row 0: one nugget judged, the other counts 0; 1: no answer; 2: no nuggets; 3: nothing
    # judged yet; 4 (vital only): no vital nugget to count
    assert same(answer_nuggets(s, strict=False, vital_only=False), [0.5, NAN, NAN, NAN, 1.0])
    assert same(answer_nuggets(s, strict=False, vital_only=True), [1.0, NAN, NAN, NAN, NAN])


def test_citation_precision_and_recall_of_one_answer():
    # sentences: s0 cites a (full) and b (none); s1 cites c (partial); s2 cites nothing;
    # s3 cites d (not judged)
    s = support(n_sentences=[4], rows=[0, 0, 0, 0], sentences=[0, 0, 1, 3], cite_levels=[2, 0, 1, UNJUDGED])
    assert same(citation_precision(s, strict=False), [(1 + 0 + 0.5 + 0) / 4])
    assert same(citation_precision(s, strict=True), [1 / 4])
    assert same(citation_recall(s, strict=False), [(1 + 0.5 + 0 + 0) / 4])
    assert same(citation_recall(s, strict=True), [1 / 4])


def test_citation_measures_undefined_cases():
    s = support(answered=[True, True, True, False, True], valid=[[False]] * 5, levels=[[UNJUDGED]] * 5,
                n_sentences=[2, 2, 0, 1, 2], rows=[1, 1, 3], sentences=[0, 1, 0],
                cite_levels=[UNJUDGED, UNJUDGED, 2], unplaced=[False, False, False, False, True])
    # row 0 cites nothing: precision undefined, recall 0 (no sentence is supported); row 1: its
    # citations are not judged yet; row 2: no sentence; row 3: no answer; row 4: citations not
    # tied to sentences (plain text with 'cited')
    assert same(citation_precision(s, strict=False), [NAN, NAN, NAN, NAN, NAN])
    assert same(citation_recall(s, strict=False), [0.0, NAN, NAN, NAN, NAN])


def test_answer_labels_align_with_the_evaluated_queries_in_their_order():
    labels = AnswerLabels(
        answered=["qB", "qA", "qZ"],
        nugget_query_ids=["qA", "qA", "qB"], nugget_names=["n1", "n2", "m1"],
        nugget_vital=[True, False, True], nugget_levels=[2, UNJUDGED, 1],
        sentence_query_ids=["qA", "qA", "qB"], sentence_texts=["a0", "a1", "b0"],
        citation_query_ids=["qA", "qB"], citation_sentences=[1, 0], citation_chunk_ids=["c1", "c2"],
        citation_levels=[2, 0])
    s = labels.align(["qB", "qC", "qA"])
    assert s.answered.tolist() == [True, False, True]
    assert s.valid.tolist() == [[True, False], [False, False], [True, True]]
    assert s.nugget_levels[2].tolist() == [2, UNJUDGED] and s.nugget_levels[0, 0] == 1
    assert s.nugget_names == [["m1"], [], ["n1", "n2"]]
    assert s.n_sentences.tolist() == [1, 0, 2]
    assert s.rows.tolist() == [2, 0] and s.sentences.tolist() == [1, 0]
    assert same(answer_nuggets(s, strict=False, vital_only=False), [0.5, NAN, 0.5])
    assert same(citation_recall(s, strict=False), [0.0, NAN, 0.5])


def test_a_citation_outside_its_answer_is_refused():
    with pytest.raises(ValueError, match="outside"):
        support(n_sentences=[1], rows=[0], sentences=[1], cite_levels=[2])


# -- the registry ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "params"), [
    ("AnswerNuggets(strict,vital)", {"strict": True, "vital": True}),
    ("AnswerNuggets(vital)", {"strict": False, "vital": True}),
    ("AnswerNuggets(strict,all)", {"strict": True, "all": True}),
    ("AnswerNuggets(all)", {"all": True, "strict": False}),
    ("CitationPrecision", {"strict": False}),
    ("CitationRecall(strict)", {"strict": True}),
])
def test_measures_are_registered_with_their_parameters(name, params):
    m = parse_measure(name)
    assert m.needs == ("answers",)
    for key, value in params.items():
        assert bool(m.get(key)) is value
    assert str(m) == name


@pytest.mark.parametrize(("name", "words"), [
    ("AnswerNuggets", ("Pradeep et al. 2024", "sum_n score_n / |nuggets|", "strict,vital")),
    ("CitationPrecision", ("Thakur et al. 2025", "full 1, partial 0.5")),
    ("CitationRecall", ("Thakur et al. 2025", "a sentence citing")),
])
def test_docstrings_give_formula_and_source(name, words):
    doc = " ".join(parse_measure(name).definition.doc.split())
    for w in words:
        assert w in doc


def test_answer_measures_take_no_cutoff():
    from ragjudge.errors import UsageError

    with pytest.raises(UsageError, match="takes no cutoff"):
        parse_measure("CitationRecall@5")


# -- on a project ----------------------------------------------------------------------------

ALL = ["AnswerNuggets(all)", "AnswerNuggets(strict,all)", "AnswerNuggets(vital)",
       "AnswerNuggets(strict,vital)", "CitationPrecision", "CitationPrecision(strict)",
       "CitationRecall", "CitationRecall(strict)"]

EXPECTED = {
    "bm25": {"q1": [2 / 3, 2 / 3, 1 / 2, 1 / 2, 1 / 2, 1 / 3, 1 / 2, 1 / 3],
             "q2": [NAN] * 8, "q3": [NAN] * 8},
    "dense": {"q1": [0.0, 0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5],
              "q2": [NAN] * 8, "q3": [NAN] * 8},
}


def evaluate(capsys, db: str, *extra: str) -> dict:
    args = ["--db", db, "eval", "--per-query", "--format", "json", *extra]
    for m in ALL:
        args += ["-m", m]
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.slow
def test_eval_gives_the_hand_worked_values_per_query_and_their_means(answers_db, capsys):
    data = evaluate(capsys, answers_db)
    for run, per_query in EXPECTED.items():
        got = data["runs"][run]["per_query"]
        for query, values in per_query.items():
            assert same([NAN if got[query][m] is None else got[query][m] for m in ALL], values), (run, query)
        # the mean is over the queries where the value is defined: q1 only
        aggregate = data["runs"][run]["aggregate"]
        assert same([aggregate[m] for m in ALL], per_query["q1"])


@pytest.mark.slow
def test_another_gold_rule_combines_the_annotators_differently(answers_db, capsys):
    ana = evaluate(capsys, answers_db, "--rule", "annotator:ana")["runs"]["bm25"]["per_query"]["q1"]
    # ana alone: five days full, free returns partial, tracking full
    assert same([ana[m] for m in ALL[:4]], [2.5 / 3, 2 / 3, 1.5 / 2, 1 / 2])
    # (s0, c05) full, (s0, c06) none, (s1, c07) partial
    assert same([ana[m] for m in ALL[4:]], [1.5 / 3, 1 / 3, 1.5 / 3, 1 / 3])
    most = evaluate(capsys, answers_db, "--rule", "max")["runs"]["bm25"]["per_query"]["q1"]
    # max: free returns partial; (s0, c06) partial
    assert same([most[m] for m in ("AnswerNuggets(all)", "CitationPrecision", "CitationRecall")],
                [2.5 / 3, 2 / 3, 1.5 / 3])


def test_a_new_judgment_changes_the_numbers_eval_prints(answers_db, capsys):
    from ragjudge.services.labels import answers
    from ragjudge.services.project.database import Project

    with Project.open(answers_db) as project:
        view = next(answers.answer_view(project, a, "ben") for a in _answer_ids(project)
                    if answers.answer_view(project, a, None).run == "dense")
        tracking = next(i for i in view.items if i.nugget == "tracking")
        for who in ("ana", "ben"):
            answers.record_answer_judgment(project, annotator=who, answer_id=view.answer_id,
                                           nugget_id=tracking.nugget_id, support="full")
    q1 = evaluate(capsys, answers_db)["runs"]["dense"]["per_query"]["q1"]
    assert same([q1["AnswerNuggets(all)"], q1["AnswerNuggets(vital)"]], [1 / 3, 0.0])


def _answer_ids(project) -> list[int]:
    from sqlalchemy import select

    from ragjudge.store.schema import Answer

    with project.connect() as connection:
        return list(connection.scalars(select(Answer.id).order_by(Answer.id)))


def test_the_footer_says_why_answer_measures_leave_queries_out(answers_db, capsys):
    code, out, err = run_cli(capsys, "--db", answers_db, "eval", "-m", "CitationRecall")
    assert code == 0, err
    flat = " ".join(out.split())
    # each query left out, with its reason: bm25's answer to q2 is plain text citing c08
    assert ("CitationRecall: left out of the mean for 2 of 3 queries, where it is undefined "
            "(bm25: q2: the answer's citations are not tied to its sentences; q3: the run has no "
            "answer · dense: q2, q3: the run has no answer)") in flat


def test_explain_shows_the_nugget_table(answers_db, capsys):
    code, out, err = run_cli(capsys, "--db", answers_db, "explain", "--run", "bm25", "--query", "q1",
                             "-m", "AnswerNuggets(vital)", "--format", "json")
    assert code == 0, err
    (data,) = json.loads(out)["explanations"]
    assert data["value"] == pytest.approx(0.5)
    assert data["columns"] == ["nugget", "vital", "support", "score"]
    assert data["rows"] == [["five days", True, "full", 1.0], ["free returns", True, "none", 0.0],
                            ["tracking", False, "full", "not counted"]]
    assert any("1 / 2 = 0.5000" in step for step in data["steps"])


@pytest.mark.slow
def test_explain_shows_the_sentence_table(answers_db, capsys):
    code, out, err = run_cli(capsys, "--db", answers_db, "explain", "--run", "bm25", "--query", "q1",
                             "-m", "CitationRecall", "--format", "json")
    assert code == 0, err
    (data,) = json.loads(out)["explanations"]
    assert data["rows"] == [
        [0, "Parcels ship in five days.", "c05, c06", "full", 1.0],
        [1, "Returns are free.", "c07", "partial", 0.5],
        [2, "Thanks for asking.", None, "no citation", 0.0]]
    assert any("1.5 / 3 = 0.5000" in step for step in data["steps"])
    code, out, _ = run_cli(capsys, "--db", answers_db, "explain", "--run", "bm25", "--query", "q1",
                           "-m", "CitationPrecision(strict)")
    assert code == 0
    assert "sentence  chunk  support  score" in out and "1 / 3 = 0.3333" in out


def test_explain_says_why_a_value_is_undefined(answers_db, capsys):
    code, out, _ = run_cli(capsys, "--db", answers_db, "explain", "--run", "bm25", "--query", "q2",
                           "-m", "CitationRecall")
    assert code == 0 and "undefined" in out and "not sentence by sentence" in " ".join(out.split())
    code, out, _ = run_cli(capsys, "--db", answers_db, "explain", "--run", "dense", "--query", "q3",
                           "-m", "AnswerNuggets(all)")
    assert code == 0 and "no generated answer" in out


@pytest.mark.slow
def test_gate_on_an_answer_measure(answers_db, capsys):
    code, _, err = run_cli(capsys, "--db", answers_db, "gate", "--run", "bm25",
                           "--require", "CitationPrecision>=0.5", "--require", "AnswerNuggets(all)>=0.6")
    assert code == 0, err
    code, out, _ = run_cli(capsys, "--db", answers_db, "gate", "--run", "dense",
                           "--require", "AnswerNuggets(strict,vital)>=0.1")
    assert code == 1 and "AnswerNuggets(strict,vital)" in out


def test_compare_two_runs_on_answer_measures(answers_db, capsys):
    code, out, err = run_cli(capsys, "--db", answers_db, "compare", "bm25", "dense",
                             "-m", "AnswerNuggets(all)", "-m", "CitationRecall", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    text = json.dumps(data)
    assert "AnswerNuggets(all)" in text and "CitationRecall" in text


# -- Attribution (the share of the top k the answer cites) from an answer given sentence by sentence ----------------------


@pytest.mark.slow
def test_attribution_example_still_holds_for_an_answer_with_sentences(tmp_path, capsys):
    from projectkit import make_small_project

    db = str(tmp_path / "seed.db")
    make_small_project(db, queries=1, chunks=10).close()
    run = tmp_path / "seed.trec"
    run.write_text("".join(f"q1 Q0 c{r:02d} {r} {1.0 / r} seed\n" for r in range(1, 11)))
    answer = tmp_path / "answer.jsonl"
    answer.write_text(json.dumps({"query_id": "q1", "run": "seed", "sentences": [
        {"text": "One.", "citations": ["c01", "c03"]}, {"text": "Two.", "citations": ["c05", "c01"]}]}) + "\n")
    labels = tmp_path / "labels.qrels"
    labels.write_text("q1 0 c01 2\n")
    for kind, path in (("run", run), ("answers", answer), ("labels", labels)):
        assert main(["--db", db, "import", kind, str(path)]) == 0
    code, out, err = run_cli(capsys, "--db", db, "eval", "--run", "seed", "-m", "Attribution@10",
                             "--format", "json")
    assert code == 0, err
    # retrieved c1 … c10, cited {c1, c3, c5}: 3 / 10 = 0.300
    assert json.loads(out)["runs"]["seed"]["aggregate"]["Attribution@10"] == pytest.approx(0.3)
    assert not math.isnan(0.3)


# -- properties ----------------------------------------------------------------------------------


@st.composite
def answers_of_one_query(draw):
    n_nuggets = draw(st.integers(0, 5))
    n_sentences = draw(st.integers(0, 5))
    levels = draw(st.lists(st.sampled_from([UNJUDGED, 0, 1, 2]), min_size=n_nuggets, max_size=n_nuggets))
    vital = draw(st.lists(st.booleans(), min_size=n_nuggets, max_size=n_nuggets))
    cites = draw(st.lists(st.tuples(st.integers(0, max(n_sentences - 1, 0)),
                                    st.sampled_from([UNJUDGED, 0, 1, 2])),
                          max_size=8 if n_sentences else 0))
    return AnswerSupport(
        answered=np.array([True]), unplaced=np.array([False]),
        valid=np.ones((1, n_nuggets), bool), vital=np.array([vital], dtype=bool).reshape(1, n_nuggets),
        nugget_levels=np.array([levels], dtype=np.int64).reshape(1, n_nuggets),
        n_sentences=np.array([n_sentences]), rows=np.zeros(len(cites), np.int64),
        sentences=np.array([s for s, _ in cites], dtype=np.int64),
        levels=np.array([lv for _, lv in cites], dtype=np.int64))


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(answers_of_one_query())
def test_scores_are_bounded_and_strict_never_exceeds_lenient(s):
    for kernel in (lambda strict: answer_nuggets(s, strict=strict, vital_only=False),
                   lambda strict: answer_nuggets(s, strict=strict, vital_only=True),
                   lambda strict: citation_precision(s, strict=strict),
                   lambda strict: citation_recall(s, strict=strict)):
        strict, lenient = kernel(True)[0], kernel(False)[0]
        assert math.isnan(strict) == math.isnan(lenient)
        if not math.isnan(lenient):
            assert 0.0 <= strict <= lenient <= 1.0
    # every citation fully supporting its sentence: recall is the share of sentences citing
    full = AnswerSupport(s.answered, s.unplaced, s.valid, s.vital, s.nugget_levels, s.n_sentences,
                         s.rows, s.sentences, np.full(len(s.levels), 2))
    if s.n_sentences[0]:
        citing = len(set(s.sentences.tolist()))
        assert citation_recall(full, strict=True)[0] == pytest.approx(citing / s.n_sentences[0])
        if len(s.levels):
            assert citation_precision(full, strict=True)[0] == 1.0
