"""The live evaluation takes judgments of answers in: after every judgment, undo or label, its
numbers equal those ``ragjudge eval`` computes from scratch (exactly: the same sums)."""

from __future__ import annotations

import math
import random

import pytest

from ragjudge.services.events import answers as answer_events
from ragjudge.services.labels import answers as answer_judging
from ragjudge.services.runs import stored as ev_stored
from ragjudge.services.scoring import evaluation as ev_evaluation
from ragjudge.services.labels import events as judging
from ragjudge.services.scoring import live
from ragjudge.services.project.database import Project

pytestmark = pytest.mark.slow

MEASURES = ["AnswerNuggets(strict,vital)", "AnswerNuggets(all)", "CitationPrecision",
            "CitationRecall", "P@5"]


def reference(project, rule, measures, threshold):
    qrels, rule = ev_evaluation.project_qrels(project, rule)
    runs = {n: ev_stored.project_run(project, n) for n in ev_stored.project_run_names(project)}
    return ev_evaluation.evaluate_all(qrels, runs, measures, threshold=threshold, project=project, rule=rule)


def in_place_of_gold(project, annotator, measures, threshold):
    """An annotator's view for the ranges: on the queries they graded, the gold qrels with
    their grades in place of the gold's (their own judgments of answers for the answer
    measures)."""
    import numpy as np

    from ragjudge.metrics.data import Qrels
    from ragjudge.services.gold.qrels import gold_qrels

    rule = f"annotator:{annotator}"
    mine = {(q, c): g for q, c, g in gold_qrels(project, rule)}
    queries = {q for q, _ in mine}
    judged = {(q, c): g for q, c, g in gold_qrels(project) if q in queries} | mine
    runs = {n: ev_stored.project_run(project, n) for n in ev_stored.project_run_names(project)}
    q, c = zip(*judged) if judged else ((), ())
    qrels = Qrels(list(q), list(c), np.array(list(judged.values()), dtype=np.int64),
                  top_grade=project.scale.max)
    return ev_evaluation.evaluate_all(qrels, runs, measures, threshold=threshold, project=project, rule=rule)


def assert_same(engine, project) -> None:
    expected = reference(project, engine.rule, engine.measures, engine.threshold)
    snap = engine.snapshot()
    for run in expected.run_names:
        for m, value in expected.aggregate(run).items():
            got = snap.means[run][m]
            assert got == value or (math.isnan(got) and math.isnan(value)), (run, m, got, value)
    for annotator in ("ana", "ben"):
        rule = f"annotator:{annotator}"
        if rule not in engine.views:
            continue
        mine = in_place_of_gold(project, annotator, engine.measures, engine.threshold)
        means = engine.means(rule)
        for run in mine.run_names:
            for j, (m, value) in enumerate(mine.aggregate(run).items()):
                got = float(means[run][j])
                assert got == value or (math.isnan(got) and math.isnan(value)), (rule, run, m)


@pytest.fixture
def project(answers_db):
    with Project.open(answers_db) as opened:
        yield opened


def _items(project) -> list[tuple[int, object]]:
    out = []
    for answer_id in range(1, 4):
        view = answer_judging.answer_view(project, answer_id, None)
        out += [(answer_id, item) for item in view.items]
    return out


def test_answer_judgments_undo_and_labels_keep_the_live_numbers_exact(project):
    engine = live.LiveEvaluation(project, measures=MEASURES)
    engine.load()
    assert engine.watches_answers
    assert_same(engine, project)
    items = _items(project)
    rnd = random.Random(3)
    for step in range(24):
        who = rnd.choice(["ana", "ben", "cy"])
        if step % 7 == 6:
            answer_judging.undo_last_answer_judgment(project, who)
        elif step % 11 == 10:
            judging.record_label(project, annotator=who, query_id="q1", chunk_id="c07", grade=rnd.randint(0, 3))
        else:
            answer_id, item = rnd.choice(items)
            answer_judging.record_answer_judgment(project, annotator=who, answer_id=answer_id,
                                           nugget_id=item.nugget_id, sentence=item.sentence,
                                           chunk_id=item.chunk_id, support=rnd.choice(answer_events.SUPPORTS))
        assert engine.poll()
        assert "q1" in engine.touched or step % 7 == 6
        assert_same(engine, project)
    assert not engine.poll()  # nothing new: no work


def test_a_judgment_moves_the_number_eval_prints(project):
    engine = live.LiveEvaluation(project, measures=["AnswerNuggets(all)"], ranges=False)
    engine.load()
    assert engine.snapshot().means["dense"]["AnswerNuggets(all)"] == 0.0
    view = answer_judging.answer_view(project, 2, None)  # q1 / dense
    assert view.run == "dense"
    tracking = next(i for i in view.items if i.nugget == "tracking")
    answer_judging.record_answer_judgment(project, annotator="ana", answer_id=2, nugget_id=tracking.nugget_id,
                                   support="full")
    assert engine.poll() and engine.touched == ("q1",)
    assert engine.snapshot().means["dense"]["AnswerNuggets(all)"] == pytest.approx(1 / 3)
    answer_judging.undo_last_answer_judgment(project, "ana")
    assert engine.poll()
    assert engine.snapshot().means["dense"]["AnswerNuggets(all)"] == 0.0


def test_without_an_answer_measure_answer_judgments_are_not_even_looked_at(project):
    engine = live.LiveEvaluation(project, measures=["P@5", "AP"])
    engine.load()
    assert not engine.watches_answers
    answer_judging.record_answer_judgment(project, annotator="ana", answer_id=2, sentence=0, chunk_id="c05",
                                   support="none")
    assert not engine.poll()
    engine.set_measures(["P@5", "CitationPrecision"])
    assert engine.watches_answers
    assert engine.answer_stamp == answer_events.answers_stamp(project)
    assert_same(engine, project)


def test_queries_without_a_grade_come_and_go_with_their_judged_answers(project, answers_db, tmp_path):
    """Answers to q4 and q5, which have no relevance grade: a judgment of one brings its query
    into every view's answer measures, its undo takes it out, a grade given and undone moves
    nothing else; after every step the engine equals eval from scratch (gold and annotators)."""
    import json

    from ragjudge.cli import main

    path = tmp_path / "more.jsonl"
    path.write_text("".join(json.dumps({"query_id": q, "run": run, "sentences": [
        {"text": f"{q} by {run}.", "citations": ["c02", "c03"]}]}) + "\n"
        for q in ("q4", "q5") for run in ("bm25", "dense")), encoding="utf-8")
    assert main(["--db", answers_db, "import", "answers", str(path)]) == 0
    engine = live.LiveEvaluation(project, measures=MEASURES)
    engine.load()
    assert_same(engine, project)
    before = engine.snapshot().n_queries
    items = [(a, i) for a, i in _items_of(project) if a > 3]  # the new answers' citations
    rnd = random.Random(5)
    seen = set()
    for step in range(30):
        who = rnd.choice(["ana", "ben"])
        if step % 5 == 4:
            answer_judging.undo_last_answer_judgment(project, who)
        elif step % 7 == 6:
            grade = rnd.choice([None, 1])
            if grade is None:
                judging.undo_last(project, "ana")
            else:
                judging.record_label(project, annotator="ana", query_id="q4", chunk_id="c02", grade=grade)
        else:
            answer_id, item = rnd.choice(items)
            answer_judging.record_answer_judgment(project, annotator=who, answer_id=answer_id,
                                                  sentence=item.sentence, chunk_id=item.chunk_id,
                                                  support=rnd.choice(answer_events.SUPPORTS))
        engine.poll()
        seen.add(engine.snapshot().n_queries)
        assert_same(engine, project)
    assert max(seen) > before  # the ungraded queries did come in


def _items_of(project) -> list[tuple[int, object]]:
    from sqlalchemy import select

    from ragjudge.store.schema import Answer

    with project.connect() as connection:
        ids = list(connection.scalars(select(Answer.id).order_by(Answer.id)))
    return [(a, item) for a in ids for item in answer_judging.answer_view(project, a, None).items]
