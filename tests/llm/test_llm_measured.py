"""An LLM annotator measured against the people: out of the gold unless asked, its own qrels
under annotator:llm:MODEL, agreement with each person and the run-ranking verdict, the
agreement screen, and (off by default) its part in human judging."""

from __future__ import annotations

from projectkit import rights, screen_app

import asyncio
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select
from textual.widgets import Static

from ragjudge.services.labels import llmhints as svc
from ragjudge.services.access import roster
from ragjudge.services.agreement.views import human_vs_llm
from ragjudge.services.agreement.ratings import load_ratings
from ragjudge.services.agreement.verdict import verdict_stability
from ragjudge.services.labels.queue import JudgingQueue
from ragjudge.services.labels.events import record_label
from ragjudge.services.scoring.live import LiveEvaluation
from ragjudge.services.gold.qrels import gold_qrels
from ragjudge.store.schema import Chunk

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
LLM = "llm:m"


def seed(project) -> dict:
    """ana and ben grade q1's and q2's pools much alike; the LLM grades every other pair one
    higher. Returns {(query, chunk): (ana, ben, llm)}."""
    roster.add(project, LLM, kind="llm", access=rights(project))
    queue = JudgingQueue(project, "ana", queries=["q1", "q2"])
    out = {}
    for i, (q, c) in enumerate(queue.open_pairs()):
        grade = i % 3
        grades = (grade, grade if i % 4 else 0, grade + 1 if i % 2 else grade)
        for who, g in zip(("ana", "ben", LLM), grades):
            record_label(project, annotator=who, query_id=q, chunk_id=c, grade=g)
        out[(q, c)] = grades
    return out


def test_llm_grades_stay_out_of_the_gold_unless_asked(project):
    grades = seed(project)
    people = gold_qrels(project)
    assert people == gold_qrels(project, "median")
    with_llm = {(q, c): g for q, c, g in gold_qrels(project, include_llm=True)}
    assert {(q, c): g for q, c, g in people} != with_llm
    mine = gold_qrels(project, f"annotator:{LLM}")
    # the LLM's own grades (a name with ':' parses)
    assert mine == sorted((q, c, m) for (q, c), (_, _, m) in grades.items())
    assert LLM not in load_ratings(project).annotators
    assert LLM in load_ratings(project, include_llm=True).annotators


def test_live_evaluation_leaves_the_llm_out_until_let_in(project):
    seed(project)
    live = LiveEvaluation(project, measures=["P@5"], resamples=50)
    live.load()

    def gold_view() -> set:
        q, c, g = live.views[live.rule].pairs()
        return set(zip(q.tolist(), c.tolist(), g.tolist()))

    assert f"annotator:{LLM}" not in live.views
    assert gold_view() == set(gold_qrels(project))
    live.set_include_llm(True)
    assert f"annotator:{LLM}" in live.views
    assert gold_view() == set(gold_qrels(project, include_llm=True)) != set(gold_qrels(project))


def test_an_annotators_range_view_fills_in_from_the_gold_the_screen_shows(project):
    """A person's view for the ranges takes the gold's grades where they graded nothing: the
    people's gold while the LLM is left out, on a full pass and on a label taken in place."""
    grades = seed(project)
    # the LLM alone grades two more chunks of q1, a query ana judged; one before the screen
    # opens (a full pass), one after (taken in place)
    graded = {c for q, c, _ in gold_qrels(project, include_llm=True) if q == "q1"}
    with project.connect() as connection:
        chunks = connection.execute(select(Chunk.id).order_by(Chunk.id)).scalars().all()
    extra = [c for c in chunks if c not in graded][:2]
    assert len(extra) == 2, "the project has no chunk left for the LLM alone"
    record_label(project, annotator=LLM, query_id="q1", chunk_id=extra[0], grade=3)
    live = LiveEvaluation(project, measures=["P@5"], resamples=50)
    live.load()

    def view(rule: str) -> dict:
        q, c, g = live.views[rule].pairs()
        return {(a, b): x for a, b, x in zip(q.tolist(), c.tolist(), g.tolist())}

    people = {(q, c): g for q, c, g in gold_qrels(project)}
    assert ("q1", extra[0]) not in people
    assert ("q1", extra[0]) not in view("annotator:ana")
    # on q1: the gold the screen shows, with ana's grades in place of its own
    on_q1 = {k: g for k, g in view(live.rule).items() if k[0] == "q1"}
    on_q1 |= {k: ana for k, (ana, _, _) in grades.items() if k[0] == "q1"}
    assert {k: g for k, g in view("annotator:ana").items() if k[0] == "q1"} == on_q1
    record_label(project, annotator=LLM, query_id="q1", chunk_id=extra[1], grade=3)
    live.poll()
    assert ("q1", extra[1]) not in view("annotator:ana")
    live.set_include_llm(True)  # let in: the gold and the views both have the LLM's grades
    assert view("annotator:ana")[("q1", extra[1])] == view(live.rule)[("q1", extra[1])] == 3


def test_the_peoples_ratings_are_read_once_and_only_without_an_llm(project):
    """human_vs_llm takes the caller's ratings of the people when the roster has no LLM
    annotator (they are then every rating), and reads its own when it has one."""
    for i, (q, c) in enumerate(JudgingQueue(project, "ana", queries=["q1"]).open_pairs()):
        for who, g in (("ana", i % 4), ("ben", (i // 2) % 4)):
            record_label(project, annotator=who, query_id=q, chunk_id=c, grade=g)
    people = load_ratings(project)
    assert human_vs_llm(project, people) == human_vs_llm(project)
    assert human_vs_llm(project)["human_pairs"][0]["n"] > 0
    seed(project)  # now with an LLM annotator: the people's ratings alone would leave it out
    assert human_vs_llm(project, load_ratings(project)) == human_vs_llm(project)
    assert human_vs_llm(project, load_ratings(project))["llm"] == [LLM]


def test_people_and_llm_agreement_and_the_verdict(project):
    seed(project)
    data = human_vs_llm(project)
    assert data["llm"] == [LLM] and data["humans"] == ["ana", "ben"]
    by = {(p["a"], p["b"]): p for p in data["pairs"]}
    assert by[("ana", LLM)]["mean_difference"] > 0  # the model is the more lenient
    assert by[("ana", LLM)]["n"] == 20
    assert sum(map(sum, by[("ana", LLM)]["confusion"])) == by[("ana", LLM)]["n"]
    assert data["human_pairs"][0]["a"] == "ana" and data["human_mean_kappa"] is not None
    assert data["against_gold"][0]["a"] == "gold"
    verdict = verdict_stability(project)
    assert LLM not in verdict["qrels"]
    (entry,) = verdict["llm"]
    assert entry["annotator"] == LLM and entry["queries"] == 2
    assert [m["measure"] for m in entry["measures"]] == ["AP", "nDCG@10", "P@5", "RR"]


def test_agree_cli_shows_people_and_llm(project_db):
    from ragjudge.services.project.database import Project

    with Project.open(project_db) as project:
        seed(project)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "ragjudge", "--db", project_db, "agree", "--verdict",
                          "--format", "json"], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["annotators"] == ["ana", "ben"]
    assert data["human_vs_llm"]["llm"] == [LLM]
    assert data["verdict"]["llm"][0]["annotator"] == LLM
    table = subprocess.run([sys.executable, "-m", "ragjudge", "--db", project_db, "agree", "--verdict"],
                           capture_output=True, text=True, env={**env, "COLUMNS": "160"}, timeout=120)
    assert "People and LLM annotators" in table.stdout and "its qrels alone" in table.stdout
    evaluated = subprocess.run([sys.executable, "-m", "ragjudge", "--db", project_db, "eval", "--rule",
                                f"annotator:{LLM}", "--format", "json"], capture_output=True, text=True,
                               env=env, timeout=120)
    assert evaluated.returncode == 0, evaluated.stderr
    assert f"annotator:{LLM}" in evaluated.stdout


def Host(project):
    from ragjudge.tui.screens.agreement import AgreementScreen

    return screen_app(project, lambda: AgreementScreen(project))


def _text(screen, selector: str) -> str:
    from rich.console import Console

    console = Console(width=140, record=True, file=io.StringIO())
    console.print(screen.query_one(selector, Static).content)
    return console.export_text()


def test_agreement_screen_shows_the_llm_beside_the_people(project):
    seed(project)

    async def drive() -> None:
        app = Host(project)
        async with app.run_test(size=(140, 50)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            screen = app.screen
            overview = _text(screen, "#overview-body")
            assert "ana, ben" in overview and LLM not in overview
            await pilot.press("p")
            await pilot.pause()
            llm = _text(screen, "#llm-body")
            assert "LLM annotators: llm:m" in llm
            assert "gold (people)" in llm and "α ordinal" in llm and "mean Δ" in llm
            assert "gold of the people (rows) × llm:m (columns)" in llm
            assert screen.query_one("#llm-body", Static).display

    asyncio.run(drive())


def test_queue_order_puts_the_llm_s_hard_pairs_first_only_when_set(project):
    grades = seed(project)
    plain = [c for q, c in JudgingQueue(project, "cy", queries=["q1"], order="query").open_pairs()]
    llm_grades = {c: g for c, g in ((c, svc.llm_grades(project, "q1", c, access=rights(project))) for c in plain)}
    middle = {c for c, words in llm_grades.items() if words and 0 < words[0][1] < 3}
    assert middle and len(middle) < len(plain)
    svc.set_judging_settings(project, order="hardest", access=rights(project))
    hard = [c for q, c in JudgingQueue(project, "cy", queries=["q1"], order="query").open_pairs()]
    assert set(hard[:len(middle)]) == middle and sorted(hard) == sorted(plain)
    svc.set_judging_settings(project, order="disagreement", access=rights(project))
    disagree = [c for q, c in JudgingQueue(project, "cy", queries=["q1"], order="query").open_pairs()]
    differ = {c for (q, c), (a, b, m) in grades.items() if q == "q1" and {m} != {a, b}}
    assert differ and len(differ) < len(plain)
    assert set(disagree[:len(differ)]) == differ and sorted(disagree) == sorted(plain)
    svc.set_judging_settings(project, order="off", access=rights(project))
    assert [c for q, c in JudgingQueue(project, "cy", queries=["q1"], order="query").open_pairs()] == plain


def test_the_llm_grade_is_revealed_only_after_grading(project):
    from ragjudge.tui.screens.judge import JudgeScreen

    seed(project)
    svc.set_judging_settings(project, reveal=True, access=rights(project))
    assert svc.reveal_after_grading(project)
    notes: list[str] = []

    class Probe:
        pass

    screen = Probe()
    screen.project = project
    screen._run = lambda fn, *a, **k: fn(*a, **k)
    screen.notify = lambda message, **kw: notes.append(message)
    screen._viewer_access = lambda: rights(project, "ana")
    JudgeScreen._reveal_llm(screen, "q1", JudgingQueue(project, "ana", queries=["q1"]).pool("q1").chunk_ids[0], 2)
    assert notes and notes[0].startswith("You gave 2; the LLM gave: llm:m ")
    svc.set_judging_settings(project, reveal=False, access=rights(project))
    notes.clear()
    screen._llm_reveal = None
    JudgeScreen._reveal_llm(screen, "q1", "c01", 2)
    assert notes == []


def test_the_home_screen_s_annotator_list_tells_the_llm_apart(project):
    from ragjudge.services.labels.queuecounts import annotator_progress

    seed(project)
    kinds = {row["annotator"]: row["kind"] for row in annotator_progress(project)}
    assert kinds == {"ana": "human", "ben": "human", LLM: "llm"}
