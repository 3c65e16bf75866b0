"""Answers, their judgments and the answer measures alike on SQLite and PostgreSQL: import,
eval, a judgment and its undo, export."""

from __future__ import annotations

import json

import pytest

from answerkit import JUDGMENTS, build
from projectkit import make_small_project
from ragjudge.cli import main
from ragjudge.services.labels import answers
from ragjudge.services.project.database import Project

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _clean_default(monkeypatch):
    from ragjudge.cli import common

    monkeypatch.setitem(common.CLI_STATE, "db", None)


def test_answers_on_both_backends(any_db, tmp_path, capsys):
    make_small_project(any_db).close()
    build(any_db, tmp_path)
    capsys.readouterr()
    assert main(["--db", any_db, "eval", "--format", "json", "--per-query", "-m", "AnswerNuggets(all)",
                 "-m", "CitationPrecision", "-m", "CitationRecall"]) == 0
    data = json.loads(capsys.readouterr().out)["runs"]
    q1 = data["bm25"]["per_query"]["q1"]
    assert q1["AnswerNuggets(all)"] == pytest.approx(2 / 3)
    assert q1["CitationPrecision"] == pytest.approx(0.5) and q1["CitationRecall"] == pytest.approx(0.5)
    assert data["bm25"]["per_query"]["q2"]["CitationRecall"] is None
    with Project.open(any_db) as project:
        view = next(answers.answer_view(project, a, "cy") for a in (1, 2, 3)
                    if answers.answer_view(project, a, None).run == "dense")
        item = view.items[-1]
        answers.record_answer_judgment(project, annotator="cy", answer_id=view.answer_id,
                                       sentence=item.sentence, chunk_id=item.chunk_id, support="full")
        assert answers.answer_view(project, view.answer_id, "cy").items[-1].support == "full"
        undone = answers.undo_last_answer_judgment(project, "cy")
        assert undone is not None and undone.support is None
        assert answers.answer_view(project, view.answer_id, "cy").items[-1].support is None
    assert main(["--db", any_db, "export", "answer-labels"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    key = lambda d: json.dumps(d, sort_keys=True)  # noqa: E731
    assert sorted(map(key, lines)) == sorted(map(key, JUDGMENTS))


def test_the_live_evaluation_takes_answer_judgments_in_on_both_backends(any_db, tmp_path):
    from ragjudge.services.scoring import live

    make_small_project(any_db).close()
    build(any_db, tmp_path)
    with Project.open(any_db) as project:
        engine = live.LiveEvaluation(project, measures=["AnswerNuggets(all)"], ranges=False)
        engine.load()
        assert engine.snapshot().means["dense"]["AnswerNuggets(all)"] == 0.0
        view = next(answers.answer_view(project, a, None) for a in (1, 2, 3)
                    if answers.answer_view(project, a, None).run == "dense")
        tracking = next(i for i in view.items if i.nugget == "tracking")
        answers.record_answer_judgment(project, annotator="ana", answer_id=view.answer_id,
                                       nugget_id=tracking.nugget_id, support="full")
        assert engine.poll() and engine.touched == ("q1",)
        assert engine.snapshot().means["dense"]["AnswerNuggets(all)"] == pytest.approx(1 / 3)
        assert not engine.poll()
