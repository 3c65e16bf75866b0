"""Agreement on judgments of generated answers: units (query, run, nugget) and (query, run,
sentence, chunk) on the scale 0 none, 1 partial, 2 full, in the service, ``agree --answers`` and
the agreement screen.

The judgments of :mod:`answerkit`, as units (ana, ben):
nugget support — bm25 five days (2, 2), bm25 free returns (1, 0), bm25 tracking (2, -),
dense five days (0, 1): 4 units, 3 judged by both, 1 of them alike.
citation support — bm25 (0, c05) (2, 2), bm25 (0, c06) (0, 1), bm25 (1, c07) (1, 1),
dense (0, c05) (2, -): 4 units, 3 judged by both, 2 of them alike.
"""

from __future__ import annotations

import asyncio
import io
import json

import krippendorff
import numpy as np
import pytest
from projectkit import rights, screen_app

from answerkit import JUDGMENTS, jsonl
from clikit import run_cli
from ragjudge.services.agreement import answers as answer_agreement_svc
from ragjudge.services.labels import answers as answer_judging
from ragjudge.services.project.database import Project


@pytest.mark.slow
def test_ratings_have_the_answer_units_on_a_0_to_2_scale(answers_db):
    with Project.open(answers_db) as project:
        nuggets, citations = answer_agreement_svc.answer_ratings(project)
    assert nuggets.scale == (0, 2) and citations.scale == (0, 2)
    assert list(nuggets.annotators) == ["ana", "ben"]
    as_dict = lambda r: {u: tuple(None if np.isnan(v) else int(v) for v in row)  # noqa: E731
                         for u, row in zip(r.units, r.matrix)}
    assert as_dict(nuggets) == {
        ("q1", "bm25", "five days"): (2, 2), ("q1", "bm25", "free returns"): (1, 0),
        ("q1", "bm25", "tracking"): (2, None), ("q1", "dense", "five days"): (0, 1)}
    assert as_dict(citations) == {
        ("q1", "bm25", 0, "c05"): (2, 2), ("q1", "bm25", 0, "c06"): (0, 1),
        ("q1", "bm25", 1, "c07"): (1, 1), ("q1", "dense", 0, "c05"): (2, None)}


def test_the_statistics_are_the_labels_statistics(answers_db):
    with Project.open(answers_db) as project:
        views = answer_agreement_svc.answer_agreement(project, access=rights(project))
    nugget = views["nugget_support"].report
    assert nugget.units == 4 and nugget.pairable_units == 3
    assert nugget.percent_agreement.value == pytest.approx(1 / 3)
    reference = krippendorff.alpha(reliability_data=np.array(
        [[2, 1, 2, 0], [2, 0, np.nan, 1]]), level_of_measurement="ordinal", value_domain=[0, 1, 2])
    assert nugget.krippendorff_alpha["ordinal"].value == pytest.approx(reference)
    cite = views["citation_support"].report
    assert cite.percent_agreement.value == pytest.approx(2 / 3)
    assert {d.unit for d in cite.disputed} == {("q1", "bm25", 0, "c06")}
    row = views["citation_support"].to_dict()["disputed"][0]
    assert {k: row[k] for k in ("query_id", "run", "sentence", "chunk_id", "spread")} == {
        "query_id": "q1", "run": "bm25", "sentence": 0, "chunk_id": "c06", "spread": 1}


def test_agree_answers_as_json(answers_db, capsys):
    code, out, err = run_cli(capsys, "--db", answers_db, "agree", "--answers", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert set(data) == {"nugget_support", "citation_support"}
    disputed = {(d["run"], d["nugget"]) for d in data["nugget_support"]["disputed"]}
    assert disputed == {("bm25", "free returns"), ("dense", "five days")}
    assert data["nugget_support"]["percent_agreement"] == pytest.approx(1 / 3)


def test_agree_answers_from_a_file_equals_the_project(answers_db, tmp_path, capsys):
    path = tmp_path / "judged.jsonl"
    path.write_text(jsonl(JUDGMENTS), encoding="utf-8")
    from_file = json.loads(run_cli(capsys, "agree", "--answers", "--labels", str(path), "--format", "json")[1])
    from_project = json.loads(run_cli(capsys, "--db", answers_db, "agree", "--answers", "--format", "json")[1])
    assert from_file == from_project


def test_agree_answers_table_names_the_units(answers_db, capsys):
    code, out, err = run_cli(capsys, "--db", answers_db, "agree", "--answers")
    assert code == 0, err
    flat = " ".join(out.split())
    assert "4 (query, run, nugget) units judged, 3 by two or more annotators" in flat
    assert "4 (query, run, sentence, chunk) units judged" in flat
    assert "disputed units" in flat and "free returns" in flat


@pytest.mark.parametrize(("extra", "words"), [
    (("--verdict",), "--verdict"), (("--scale", "0-3"), "--scale"),
])
def test_agree_answers_refuses_options_that_do_not_apply(answers_db, capsys, extra, words):
    code, _, err = run_cli(capsys, "--db", answers_db, "agree", "--answers", *extra)
    assert code == 2 and words in err and "Traceback" not in err


@pytest.mark.slow
def test_the_agreement_screen_has_an_answers_tab(answers_db):
    asyncio.run(_answers_tab(answers_db))


async def _answers_tab(db: str) -> None:
    from rich.console import Console
    from textual.widgets import Static, TabbedContent

    from ragjudge.tui.screens.agreement import AgreementScreen

    with Project.open(db) as project:
        app = screen_app(project, lambda: AgreementScreen(project))
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()
            await pilot.press("w")
            await pilot.pause()
            screen = app.screen
            assert screen.query_one(TabbedContent).active == "answers"
            console = Console(width=120, record=True, file=io.StringIO())
            console.print(screen.query_one("#answers-body", Static).content)
            text = console.export_text()
            assert "Nugget support" in text and "Citation support" in text
            assert "4 (query, run, nugget) units judged, 3 by two or more annotators" in text
            assert "free returns" in text and "ana=partial, ben=none" in text
            # a new judgment elsewhere shows up on the next poll
            answer_id = answer_judging.answer_view(project, 1, None).answer_id
            view = answer_judging.answer_view(project, answer_id, "ben")
            tracking = next(i for i in view.items if i.nugget == "tracking")
            answer_judging.record_answer_judgment(project, annotator="ben", answer_id=answer_id,
                                           nugget_id=tracking.nugget_id, support="none")
            screen.compute()
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()
            console = Console(width=120, record=True, file=io.StringIO())
            console.print(screen.query_one("#answers-body", Static).content)
            assert "4 (query, run, nugget) units judged, 4 by two or more annotators" in console.export_text()
