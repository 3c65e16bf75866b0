"""A project that judges answers and grades no chunk (the TREC 2024 RAG setting, built by
:mod:`answersonly`): ``eval``, ``gate``, ``compare`` and the live engine score its answers, every
query left out of a mean is counted with its true reason, and the default scorecard is the
answer measures."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from answersonly import build_answers_only, jsonl
from clikit import run_cli
from ragjudge.cli import main
from ragjudge.metrics.answers import AnswerSupport, UNJUDGED, undefined_reasons
from ragjudge.metrics.registry import parse_measure

pytestmark = pytest.mark.slow

NAN = float("nan")
MEASURES = ["AnswerNuggets(all)", "AnswerNuggets(strict,vital)", "CitationPrecision",
            "CitationRecall"]

# Worked by hand from answersonly.JUDGMENTS (full 1, partial 0.5, none 0; strict: full only):
# gpt   q1: nuggets a full, b partial, c none -> all (1 + .5 + 0) / 3 = .5; strict vital a, b -> 1/2;
#           citations (s0,c1) full, (s0,c2) none, (s1,c3) partial -> precision 1.5/3 = .5,
#           recall (max(1, 0) + .5) / 2 sentences = .75
#       q2: d full -> 1, 1; its one citation is not judged -> precision, recall undefined
#       q3: no nugget; (s0,c5) full -> precision 1, recall 1
#       q4: nothing of gpt's answer judged -> all undefined
# llama q1: a partial, b and c not judged (count 0) -> (.5 + 0 + 0) / 3 = 1/6; strict vital 0 / 2;
#           its citation is not judged -> undefined
#       q2, q3: no answer
#       q4: e full, f none -> all (1 + 0) / 2 = .5; strict vital e -> 1; (s0,c6) partial -> .5, .5
EXPECTED = {
    "gpt": {"q1": [0.5, 0.5, 0.5, 0.75], "q2": [1.0, 1.0, NAN, NAN], "q3": [NAN, NAN, 1.0, 1.0],
            "q4": [NAN, NAN, NAN, NAN]},
    "llama": {"q1": [1 / 6, 0.0, NAN, NAN], "q2": [NAN] * 4, "q3": [NAN] * 4,
              "q4": [0.5, 1.0, 0.5, 0.5]},
}
MEANS = {"gpt": [0.75, 0.75, 0.75, 0.875], "llama": [(1 / 6 + 0.5) / 2, 0.5, 0.5, 0.5]}
REASONS = {
    "gpt": {"AnswerNuggets(all)": {"q3": "no nugget to count", "q4": "the answer is not judged yet"},
            "AnswerNuggets(strict,vital)": {"q3": "no vital nugget to count",
                                            "q4": "the answer is not judged yet"},
            "CitationPrecision": {"q2": "the answer's citations are not judged yet",
                                  "q4": "the answer's citations are not judged yet"},
            "CitationRecall": {"q2": "the answer's citations are not judged yet",
                               "q4": "the answer's citations are not judged yet"}},
    "llama": {m: {"q2": "the run has no answer", "q3": "the run has no answer"} for m in MEASURES},
}
for m in ("CitationPrecision", "CitationRecall"):
    REASONS["llama"][m] = {"q1": "the answer's citations are not judged yet",
                           **REASONS["llama"][m]}


def same(got, expected) -> bool:
    return all((math.isnan(e) and (g is None or math.isnan(g))) or
               (g is not None and math.isclose(g, e, abs_tol=1e-12)) for g, e in zip(got, expected))


@pytest.fixture
def only_db(tmp_path) -> str:
    db = str(tmp_path / "answers-only.db")
    build_answers_only(db, tmp_path)
    return db


def measure_args() -> list[str]:
    return [a for m in MEASURES for a in ("-m", m)]


# -- eval ----------------------------------------------------------------------------------------


def test_eval_scores_the_answers_of_a_project_without_a_grade_or_a_ranking(only_db, capsys):
    code, out, err = run_cli(capsys, "--db", only_db, "eval", *measure_args(), "--per-query",
                             "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    # q1..q4 have a judged answer; q5's answer nobody judged: it is not evaluated
    assert data["queries"] == 4
    assert sorted(data["runs"]) == ["gpt", "llama"]
    for run, per_query in EXPECTED.items():
        got = data["runs"][run]["per_query"]
        assert sorted(got) == ["q1", "q2", "q3", "q4"]
        for query, values in per_query.items():
            assert same([got[query][m] for m in MEASURES], values), (run, query)
        assert same([data["runs"][run]["aggregate"][m] for m in MEASURES], MEANS[run]), run
        assert data["runs"][run]["left_out"] == REASONS[run]
        assert data["runs"][run]["undefined"] == {m: len(REASONS[run][m]) for m in MEASURES}


def test_each_query_left_out_is_printed_with_its_reason(only_db, capsys):
    code, out, err = run_cli(capsys, "--db", only_db, "eval", "-m", "AnswerNuggets(all)")
    assert code == 0, err
    flat = " ".join(out.split())
    assert "4 queries" in flat
    assert ("AnswerNuggets(all): left out of the mean for 2 of 4 queries, where it is undefined "
            "(gpt: q3: no nugget to count; q4: the answer is not judged yet · "
            "llama: q2, q3: the run has no answer)") in flat
    assert "nothing to count, or not judged yet" not in flat  # the old catch-all


def test_the_default_scorecard_of_an_answers_only_project_is_the_answer_measures(only_db, capsys):
    from ragjudge.services.scoring.answers import ANSWER_MEASURES

    code, out, err = run_cli(capsys, "--db", only_db, "eval", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["measures"] == list(ANSWER_MEASURES)
    assert same([data["runs"]["gpt"]["aggregate"][m] for m in ("AnswerNuggets(all)", "CitationRecall")],
                [0.75, 0.875])


def test_without_judged_answers_eval_says_what_to_judge(tmp_path, capsys):
    db = str(tmp_path / "bare.db")
    build_answers_only(db, tmp_path, judgments=False)
    code, out, err = run_cli(capsys, "--db", db, "eval", "-m", "AnswerNuggets(all)")
    assert code == 2
    assert "no judged answers yet" in err and "annotate --answers" in err
    # and the default scorecard stays the ranking one until an answer is judged
    from ragjudge.services.project.database import Project
    from ragjudge.services.scoring.answers import default_measures
    from ragjudge.services.scoring.files import DEFAULT_MEASURES

    with Project.open(db) as project:
        assert default_measures(project) == list(DEFAULT_MEASURES)


def test_gate_checks_an_answers_only_run(only_db, capsys):
    code, out, err = run_cli(capsys, "--db", only_db, "gate", "--run", "gpt",
                             "--require", "AnswerNuggets(all)>=0.75", "--require", "CitationRecall>=0.8",
                             "--format", "json")
    assert code == 0, err
    checks = json.loads(out)["checks"]
    assert [c["passed"] for c in checks] == [True, True]
    code, out, _ = run_cli(capsys, "--db", only_db, "gate", "--run", "llama",
                           "--require", "AnswerNuggets(all)>=0.5")
    assert code == 1 and "AnswerNuggets(all)" in out


def test_compare_pairs_the_answer_measures_where_both_runs_have_a_value(only_db, capsys):
    code, out, err = run_cli(capsys, "--db", only_db, "compare", "gpt", "llama",
                             "-m", "AnswerNuggets(all)", "--format", "json")
    assert code == 0, err
    (row,) = json.loads(out)["comparisons"]
    # q1 is the only query where both answers have a nugget score: 1/6 - 1/2
    assert row["queries"] == 1
    assert row["difference"] == pytest.approx(1 / 6 - 0.5)


# -- a ranking beside the answers: Attribution, and the measures of a ranking ---------------------


def test_attribution_and_answer_measures_with_a_ranking_but_no_grade(only_db, tmp_path, capsys):
    run = tmp_path / "gpt.trec"
    # gpt ranks q1: c1, c4, c3 and q2: c4, c1 (nothing for q3..q5)
    run.write_text("q1 Q0 c1 1 3 gpt\nq1 Q0 c4 2 2 gpt\nq1 Q0 c3 3 1 gpt\n"
                   "q2 Q0 c4 1 2 gpt\nq2 Q0 c1 2 1 gpt\n", encoding="utf-8")
    assert main(["--db", only_db, "import", "run", str(run)]) == 0
    code, out, err = run_cli(capsys, "--db", only_db, "eval", "-m", "Attribution@2",
                             "-m", "AnswerNuggets(all)", "-m", "P@2", "--per-query", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    # Attribution is computed where some run answered (q1..q5), the answer measures where an
    # answer is judged (q1..q4): five queries in all
    assert data["queries"] == 5
    gpt = data["runs"]["gpt"]
    # q1: top 2 = c1, c4; the answer cites c1, c2, c3 -> 1 of 2; q2: c4 cited of c4, c1 -> 1/2
    assert gpt["per_query"]["q1"]["Attribution@2"] == pytest.approx(0.5)
    assert gpt["per_query"]["q2"]["Attribution@2"] == pytest.approx(0.5)
    assert gpt["left_out"]["Attribution@2"] == {q: "the run ranks no chunk for the query"
                                                 for q in ("q3", "q4", "q5")}
    assert gpt["aggregate"]["AnswerNuggets(all)"] == pytest.approx(0.75)
    # no chunk has a grade: P@2 is left out everywhere, not 0
    assert gpt["aggregate"]["P@2"] is None and gpt["undefined"]["P@2"] == 5
    llama = data["runs"]["llama"]  # answers only: no ranking
    assert llama["left_out"]["P@2"] == {q: "the run ranks no chunk (it has generated answers only)"
                                        for q in ("q1", "q2", "q3", "q4", "q5")}
    assert llama["left_out"]["Attribution@2"]["q2"] == "the run has no answer"
    assert llama["left_out"]["Attribution@2"]["q1"] == "the run ranks no chunk for the query"


def test_an_answers_only_run_beside_graded_rankings_has_no_ranking_measure(answers_db, tmp_path, capsys):
    """In a project with grades and ranked runs, a run of answers only is not scored 0 on the
    measures of a ranking: they are undefined for it, and say why."""
    path = tmp_path / "gen.jsonl"
    path.write_text(jsonl([{"query_id": "q1", "run": "gen", "sentences": [
        {"text": "Parcels ship in five days.", "citations": ["c05"]}]}]), encoding="utf-8")
    assert main(["--db", answers_db, "import", "answers", str(path)]) == 0
    code, out, err = run_cli(capsys, "--db", answers_db, "eval", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert "gen" in data["runs"] and "AnswerNuggets(all)" in data["measures"]
    gen = data["runs"]["gen"]
    assert gen["aggregate"]["P@5"] is None
    assert set(gen["left_out"]["P@5"].values()) == {"the run ranks no chunk (it has generated answers only)"}
    assert gen["left_out"]["AnswerNuggets(all)"]["q1"] == "the answer is not judged yet"
    # the ranked runs keep their numbers
    assert data["runs"]["bm25"]["aggregate"]["P@5"] is not None


# -- the live engine ----------------------------------------------------------------------------


def test_the_live_engine_scores_the_answers_only_project_as_eval_does(only_db):
    from ragjudge.services.labels import answers as answer_judging
    from ragjudge.services.project.database import Project
    from ragjudge.services.scoring import evaluation as ev
    from ragjudge.services.scoring import live
    from ragjudge.services.scoring.answers import ANSWER_MEASURES, scored_run, scored_run_names

    def reference(project) -> ev.Evaluation:
        qrels, rule = ev.project_qrels(project)
        runs = {n: scored_run(project, n) for n in scored_run_names(project)}
        return ev.evaluate_all(qrels, runs, MEASURES, project=project, rule=rule)

    def assert_same(engine, project) -> None:
        expected = reference(project)
        snap = engine.snapshot()
        assert snap.n_queries == expected.n_queries()
        assert snap.run_names == expected.run_names
        for run in expected.run_names:
            for m, value in expected.aggregate(run).items():
                got = snap.means[run][m]
                assert got == value or (math.isnan(got) and math.isnan(value)), (run, m, got, value)

    with Project.open(only_db) as project:
        engine = live.LiveEvaluation(project)
        assert engine.measures == list(ANSWER_MEASURES)  # the default scorecard, without a `+`
        engine.set_measures(MEASURES)
        assert engine.snapshot().n_queries == 4
        assert_same(engine, project)
        # q5's answer gets its first judgment: q5 joins the evaluated queries
        answer = next(a for a in _answers(project) if a[1] == "q5")
        view = answer_judging.answer_view(project, answer[0], "ana")
        citation = next(i for i in view.items if not i.is_nugget)
        answer_judging.record_answer_judgment(project, annotator="ana", answer_id=answer[0],
                                              sentence=citation.sentence, chunk_id=citation.chunk_id,
                                              support="full")
        assert engine.poll()
        assert engine.snapshot().n_queries == 5
        assert_same(engine, project)
        # undone again: q5 leaves
        answer_judging.undo_last_answer_judgment(project, "ana")
        assert engine.poll()
        assert engine.snapshot().n_queries == 4
        assert_same(engine, project)


def _answers(project) -> list[tuple[int, str, str]]:
    from sqlalchemy import select

    from ragjudge.store.schema import Answer

    with project.connect() as connection:
        return [tuple(r) for r in connection.execute(
            select(Answer.id, Answer.query_id, Answer.run).order_by(Answer.id))]


# -- the reasons, on hand-made answers --------------------------------------------------------------


def test_undefined_reasons_follow_the_kernels_case_by_case():
    # rows: no answer; answered, no nugget; nuggets but none judged; judged; one vital unjudged
    support = AnswerSupport(
        answered=np.array([False, True, True, True, True]),
        unplaced=np.array([False, False, True, False, False]),
        valid=np.array([[True, False], [False, False], [True, True], [True, True], [True, False]]),
        vital=np.array([[True, False], [False, False], [False, False], [True, False], [True, False]]),
        nugget_levels=np.array([[2, UNJUDGED], [UNJUDGED] * 2, [UNJUDGED] * 2, [2, 0], [UNJUDGED, UNJUDGED]]),
        n_sentences=np.array([1, 0, 2, 2, 1]),
        rows=np.array([3, 3, 4]), sentences=np.array([0, 1, 0]), levels=np.array([2, UNJUDGED, UNJUDGED]))
    why = {m: undefined_reasons(parse_measure(m), support) for m in
           ("AnswerNuggets(all)", "AnswerNuggets(vital)", "CitationPrecision", "CitationRecall")}
    assert why["AnswerNuggets(all)"] == ["the run has no answer", "no nugget to count",
                                         "the answer is not judged yet", None,
                                         "the answer is not judged yet"]
    assert why["AnswerNuggets(vital)"] == ["the run has no answer", "no vital nugget to count",
                                           "no vital nugget to count", None,
                                           "the answer is not judged yet"]
    assert why["CitationPrecision"] == ["the run has no answer", "the answer cites no chunk",
                                        "the answer's citations are not tied to its sentences", None,
                                        "the answer's citations are not judged yet"]
    # row 1 has no sentence; row 2 cites without saying which sentence; row 4 not judged
    assert why["CitationRecall"] == ["the run has no answer", "the answer has no sentence",
                                     "the answer's citations are not tied to its sentences", None,
                                     "the answer's citations are not judged yet"]


def test_averaging_over_the_ranked_queries_says_why_runs_of_answers_have_none(only_db, capsys):
    code, _, err = run_cli(capsys, "--db", only_db, "eval", "-m", "AnswerNuggets(all)",
                           "--averaging", "run")
    assert code == 2
    flat = " ".join(err.split())
    assert "rank no chunk (they have generated answers only): use --averaging judged" in flat
    assert "no judged answers yet" not in flat
