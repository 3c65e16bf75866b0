"""What testers found, each as it was reported: an annotator of a blind project with a lead,
running commands as themselves (no ``--by``: ``$RAGJUDGE_USER``), saw other people's grades
and notes; an annotator changed a lead's setting on the evaluation screen; an annotator could
not export their own labels; a revoked token and a stale browser tab still recorded grades."""

from __future__ import annotations

import asyncio
import json

import pytest
from projectkit import make_small_project, rights
from sqlalchemy import select

from ragjudge.cli import main
from ragjudge.services.access import roster
from ragjudge.services.labels.events import comment_pair, flag_pair, record_label
from ragjudge.services.project.database import Project
from ragjudge.store.schema import Label

pytestmark = pytest.mark.slow

#: bm25 ranks q2's pool c08..c17 and q3's c11..c20 (make_small_project); bo grades them all
BO_PAIRS = [(f"q{q}", f"c{(q * 3 + rank) % 20 + 1:02d}") for q in (2, 3) for rank in range(1, 11)]
BO_PAIRS += [("q1", "c06"), ("q1", "c07"), ("q1", "c08"), ("q1", "c09")]
ANN_PAIRS = [("q1", "c05"), ("q1", "c06")]


@pytest.fixture
def db(tmp_path, monkeypatch):
    """dora leads; bo graded 24 pairs (grade 3 on q2/c08: an exact value to look for), flagged
    q2/c09 with a note and commented on it; ann graded two pairs of q1 only."""
    path = str(tmp_path / "blind.db")
    with make_small_project(path) as project:
        roster.add(project, "dora", role="lead", access=rights(project))
        for name in ("ann", "bo"):
            roster.add(project, name, access=rights(project))
        for i, (q, c) in enumerate(BO_PAIRS):
            record_label(project, annotator="bo", query_id=q, chunk_id=c, grade=[3, 1, 2, 0][i % 4])
        for q, c in ANN_PAIRS:
            record_label(project, annotator="ann", query_id=q, chunk_id=c, grade=1)
        flag_pair(project, annotator="bo", query_id="q2", chunk_id="c09", note="bo-private-note")
        comment_pair(project, annotator="bo", query_id="q2", chunk_id="c09", note="bo-private-comment")
    monkeypatch.setenv("RAGJUDGE_USER", "ann")
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_export_qrels_refuses_the_gold_to_an_annotator_of_a_blind_project(db, capsys):
    code, out, err = run(capsys, "--db", db, "export", "qrels")
    assert code == 2 and out == ""
    assert "Only a lead" in err and "annotator:ann" in err
    code, out, _ = run(capsys, "--db", db, "export", "qrels", "--rule", "annotator:ann")
    assert code == 0 and {tuple(line.split()[::2][:2]) for line in out.splitlines()} == set(ANN_PAIRS)
    code, out, _ = run(capsys, "--db", db, "export", "qrels", "--by", "dora")
    assert code == 0 and len(out.splitlines()) == len(set(BO_PAIRS) | set(ANN_PAIRS))


def test_explain_shows_no_grade_of_a_pair_the_annotator_has_not_judged(db, capsys):
    code, out, _ = run(capsys, "--db", db, "explain", "--run", "bm25", "--query", "q2", "-m", "nDCG@10")
    assert code == 0
    assert "not shown: you have not judged this pair" in out
    for q, c in BO_PAIRS:
        if q == "q2":
            assert c not in out
    code, out, _ = run(capsys, "--db", db, "explain", "--run", "bm25", "--query", "q2", "-m",
                       "nDCG@10", "--format", "json")
    steps = json.loads(out)["explanations"][0]["steps"]
    assert steps and all(s["grade"] is None and s["chunk_id"] is None for s in steps)
    code, out, _ = run(capsys, "--db", db, "explain", "--run", "bm25", "--query", "q2", "-m",
                       "nDCG@10", "--by", "dora")
    assert "c08" in out and "not shown" not in out


def test_review_lists_no_other_annotator_s_flag_or_comment(db, capsys):
    for argv in (["review"], ["review", "--all", "--format", "json"]):
        code, out, err = run(capsys, "--db", db, *argv)
        assert code == 0, err
        assert "bo-private" not in out + err
    code, out, _ = run(capsys, "--db", db, "review", "--by", "dora", "--format", "json")
    assert "bo-private-note" in out and "bo-private-comment" in out


def test_an_annotator_exports_their_own_labels(db, capsys):
    code, out, err = run(capsys, "--db", db, "export", "labels", "--by", "ann")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert {(r["query_id"], r["chunk_id"]) for r in rows} == set(ANN_PAIRS)
    assert {r["annotator"] for r in rows} == {"ann"}
    code, out, _ = run(capsys, "--db", db, "export", "labels", "--by", "dora")
    assert {json.loads(line)["annotator"] for line in out.splitlines()} == {"ann", "bo"}


# -- the evaluation screen -------------------------------------------------------------------


def _settings(db: str) -> tuple:
    with Project.open(db) as project:
        return project.get_setting("range_min_coverage"), project.get_setting("measures")


def test_an_annotator_cannot_change_the_evaluation_s_settings(db):
    from ragjudge.tui import make_app
    from ragjudge.tui.screens.evaluation import EvaluationScreen

    before = _settings(db)

    async def go() -> tuple[str, str]:
        with Project.open(db) as project:
            app = make_app(project, annotator="ann")
            async with app.run_test(size=(140, 45)) as pilot:
                await pilot.pause()
                screen = EvaluationScreen(project)
                app.push_screen(screen)
                for _ in range(200):
                    if screen.snapshot is not None:
                        break
                    await pilot.pause(0.05)
                await pilot.press("n")
                await pilot.pause()
                await pilot.press("escape")  # the refusal takes the keys until dismissed
                await pilot.press("plus")
                await pilot.pause()
                await pilot.press(*"pc")  # typed as a measure's name: not tab switches
                await pilot.pause()
                tab = screen.query_one("TabbedContent").active
                await pilot.press("escape")
                await pilot.pause()
                return tab, type(app.screen).__name__

    tab, top = asyncio.run(go())
    assert tab == "overview" and top == "EvaluationScreen"
    assert _settings(db) == before


def test_a_host_app_that_is_not_ragjudge_s_grants_no_lead_rights(db):
    from textual.app import App

    from ragjudge.tui.screens.evaluation import EvaluationScreen

    before = _settings(db)

    class Bare(App):
        pass

    async def go() -> None:
        with Project.open(db) as project:
            app = Bare()
            async with app.run_test(size=(140, 45)) as pilot:
                screen = EvaluationScreen(project)
                app.push_screen(screen)
                for _ in range(200):
                    if screen.snapshot is not None:
                        break
                    await pilot.pause(0.05)
                await pilot.press("n")
                await pilot.pause(0.3)

    asyncio.run(go())
    assert _settings(db) == before


# -- sessions in the browser -------------------------------------------------------------------


def _labels(db: str, annotator: str) -> list[tuple[str, str, int | None]]:
    with Project.open(db) as project, project.read() as session:
        return [(r.query_id, r.chunk_id, r.grade) for r in session.scalars(
            select(Label).where(Label.annotator == annotator).order_by(Label.id))]


def test_a_revoked_token_records_nothing_after_the_revocation(db):
    from textual.widgets import Input

    from ragjudge.tui.screens.judge import JudgeScreen
    from ragjudge.tui.served import ServedApp

    with Project.open(db) as project:
        _, token = roster.add(project, "finn", token=True, access=rights(project))

    async def go() -> None:
        with Project.open(db) as project:
            app = ServedApp(project)
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.pause()
                app.screen.query_one("#login-token", Input).value = token
                await pilot.press("enter")
                await pilot.pause()
                await pilot.press("enter")  # judging
                await pilot.pause()
                assert isinstance(app.screen, JudgeScreen)
                with Project.open(db) as other:  # the lead, elsewhere: a new token for finn
                    roster.issue_token(other, "finn", access=rights(other))
                await pilot.press("2")  # well before the next periodic check
                await pilot.pause()

    asyncio.run(go())
    assert _labels(db, "finn") == []


def test_a_stale_tab_does_not_replace_the_grade_another_tab_gave(db):
    from ragjudge.tui import make_app
    from ragjudge.tui.screens.judge import JudgeScreen

    async def go() -> tuple:
        with Project.open(db) as project:
            app = make_app(project, annotator="ann", start="judge")
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.pause()
                screen = app.screen
                assert isinstance(screen, JudgeScreen)
                pair = screen.pair
                with Project.open(db) as other:  # the other tab grades the same pair first
                    record_label(other, annotator="ann", query_id=pair.query_id,
                                 chunk_id=pair.chunk_id, grade=3)
                await pilot.press("0")
                await pilot.pause()
                shown = screen.pair
                notes = [n.message for n in app._notifications]
                stands = shown.state.grade if shown is not None and shown.state else None
                same = shown is not None and (shown.query_id, shown.chunk_id) == (pair.query_id, pair.chunk_id)
                await pilot.press("1")  # seen what stands, the annotator grades again
                await pilot.pause()
                return pair, same, stands, notes

    pair, same, stands, notes = asyncio.run(go())
    assert same and stands == 3
    assert any("Another session of ann recorded grade 3" in n for n in notes)
    mine = [g for q, c, g in _labels(db, "ann") if (q, c) == (pair.query_id, pair.chunk_id)]
    assert mine == [3, 1]
