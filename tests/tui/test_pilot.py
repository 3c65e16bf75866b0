"""The judging app driven with Pilot: keys pressed, then the database checked."""

from __future__ import annotations

import html
import re

import pytest
from sqlalchemy import select

from ragjudge.services.events import annotators as J_annotators
from ragjudge.services.events import marks as J_marks
from ragjudge.services.events import state as J_state
from ragjudge.services.labels import events as J_events
from ragjudge.services.labels import facets as J_facets
from ragjudge.services.project.database import Project
from ragjudge.store.schema import Annotator, FacetLink, Label, NuggetSupport
from ragjudge.tui import make_app
from ragjudge.tui.screens.judge import JUDGE_KEYS, JudgeScreen
from tui_project import build_project, sync

pytestmark = pytest.mark.slow

SIZE = (120, 40)


def labels(project, annotator: str = "alice") -> list[Label]:
    with project.read() as s:
        return list(s.scalars(select(Label).where(Label.annotator == annotator).order_by(Label.id)))


async def open_judging(app, pilot) -> JudgeScreen:
    await pilot.pause()
    if not isinstance(app.screen, JudgeScreen):  # the guidelines, shown once
        await pilot.press("enter")
        await pilot.pause()
    assert isinstance(app.screen, JudgeScreen)
    return app.screen


def screen_text(app) -> str:
    """The characters on screen, line by line (from the SVG screenshot)."""
    svg = app.export_screenshot()
    lines: dict[str, list[str]] = {}
    for line, body in re.findall(r'<text [^>]*clip-path="url\(#[^)]*-line-(\d+)\)"[^>]*>(.*?)</text>', svg):
        lines.setdefault(line, []).append(html.unescape(body).replace("\xa0", " "))
    return "\n".join("".join(parts) for _, parts in sorted(lines.items(), key=lambda kv: int(kv[0])))


@sync
async def test_digit_grades_pair_and_moves_on(project):
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        first = screen.pair
        await pilot.press("2")
        # committed before the next pair is on screen
        rows = labels(project)
        assert [(r.query_id, r.chunk_id, r.grade, r.source) for r in rows] == [
            (first.query_id, first.chunk_id, 2, "tui")]
        assert rows[0].duration_ms is not None and rows[0].duration_ms >= 0
        assert (screen.pair.query_id, screen.pair.chunk_id) != (first.query_id, first.chunk_id)
        await pilot.press("9")  # off the 0-3 scale: nothing recorded
        assert len(labels(project)) == 1


@sync
async def test_undo_brings_the_pair_back(project):
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        await pilot.press("1")
        second = screen.pair
        await pilot.press("3", "u")
        rows = labels(project)
        assert [r.grade for r in rows] == [1, 3, None]
        assert rows[2].undoes == rows[1].id
        assert (screen.pair.query_id, screen.pair.chunk_id) == (second.query_id, second.chunk_id)
        await pilot.press("ctrl+z")
        assert labels(project)[-1].undoes == rows[0].id


@sync
async def test_skip_and_flag(project):
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        await pilot.press("s")
        flagged = screen.pair
        await pilot.press("2", "left")  # grade, then back to it
        assert (screen.pair.query_id, screen.pair.chunk_id) == (flagged.query_id, flagged.chunk_id)
        await pilot.press("f")
        await pilot.press(*"unsure")
        await pilot.press("enter")
        await pilot.pause()
        rows = labels(project)
        assert (rows[0].skipped, rows[0].grade) == (True, None)
        assert [r.grade for r in rows[1:]] == [2]  # the flag is a mark, not a label event
        where = ("alice", flagged.query_id, flagged.chunk_id)
        assert J_marks.current_marks(project, *where) == J_marks.PairMarks(True, "unsure", None)
        await pilot.press("c", *"see doc", "enter")
        await pilot.pause()
        assert J_marks.current_marks(project, *where) == J_marks.PairMarks(True, "unsure", "see doc")
        assert J_state.current_label(project, *where).grade == 2


@sync
async def test_resume_after_restart(tmp_path):
    project = build_project(tmp_path / "r.db")
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        for key in "0123":
            await pilot.press(key)
        await pilot.press("u")  # the 4th comes back
        expected = (screen.pair.query_id, screen.pair.chunk_id)
        await pilot.press("q")
    project.close()
    project = Project.open(str(tmp_path / "r.db"))
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)  # guidelines not shown again
        assert (screen.pair.query_id, screen.pair.chunk_id) == expected
        assert [r.grade for r in labels(project)] == [0, 1, 2, 3, None]
    project.close()


@sync
async def test_guidelines_shown_once_to_a_new_annotator(project):
    from ragjudge.tui.screens.guidelines import GuidelinesScreen

    app = make_app(project, annotator="newbie", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, GuidelinesScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert J_annotators.annotator_seen_guidelines(project, "newbie")
        await pilot.press("h")
        await pilot.pause()
        assert isinstance(app.screen, GuidelinesScreen)
    app = make_app(project, annotator="newbie", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, JudgeScreen)


@sync
async def test_guidelines_not_shown_to_an_annotator_with_imported_labels(project, tmp_path):
    """An import creates its annotators without the seen flag: ``ana``, whose labels came from
    a file, is no new annotator, and neither is she after a lead renames her."""
    from ragjudge.services.access import roster
    from ragjudge.services.transfer.importing import import_file

    labels_file = tmp_path / "ana.jsonl"
    labels_file.write_text('{"query_id": "q1", "chunk_id": "c02", "grade": 3, "annotator": "ana"}\n'
                           '{"query_id": "q2", "chunk_id": "c03", "grade": 1, "annotator": "ana"}\n')
    import_file(project, "labels", labels_file)
    assert not J_annotators.annotator_seen_guidelines(project, "ana")  # what the import leaves
    app = make_app(project, annotator="ana", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, JudgeScreen)
    roster.rename(project, "ana", "ana.k", access=roster_rights(project))
    app = make_app(project, annotator="ana.k", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, JudgeScreen)
    # a name with nothing recorded is new, even where others have labels
    assert J_annotators.is_new_to_judging(project, "newbie")
    assert not J_annotators.is_new_to_judging(project, "ana.k")


def roster_rights(project):
    from ragjudge.services.access.visibility import access_for

    return access_for(project, "ana")  # a project without a lead: anyone named may change it


@sync
async def test_name_is_asked_when_not_given(project):
    app = make_app(project, start="judge")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press(*"dora", "enter")
        await open_judging(app, pilot)
        await pilot.press("1")
    assert [r.grade for r in labels(project, "dora")] == [1]
    with project.read() as s:
        assert s.get(Annotator, "dora").seen_guidelines


@sync
async def test_facets_and_nuggets_keys(project):
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        pair = screen.pair
        await pilot.press("g", "a", *"timing", "enter")
        await pilot.pause()
        await pilot.press("b", *"vital: five days", "enter")
        await pilot.pause()
        facet = J_facets.facets_for(project, pair.query_id)[0]
        nugget = J_facets.nuggets_for(project, pair.query_id)[0]
        assert (facet.name, nugget.text, nugget.importance) == ("timing", "five days", "vital")
        options = app.screen.query_one("#facet-list")
        options.highlighted = options.get_option_index(f"f:{facet.id}")
        await pilot.press("space")
        options.highlighted = options.get_option_index(f"n:{nugget.id}")
        await pilot.press("p")
        await pilot.press("f")
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, JudgeScreen)
        assert "timing" in screen_text(app)
    with project.read() as s:
        links = s.scalars(select(FacetLink)).all()
        support = s.scalars(select(NuggetSupport).order_by(NuggetSupport.id)).all()
    assert [(lab.facet_id, lab.chunk_id, lab.annotator, lab.covered) for lab in links] == [
        (facet.id, pair.chunk_id, "alice", True)]
    assert [x.support for x in support] == ["partial", "full"]


@sync
async def test_blind_no_run_names_unless_show_source(project):
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        await open_judging(app, pilot)
        text = screen_text(app)
        assert "bm25" not in text and "dense" not in text
    app = make_app(project, annotator="alice", start="judge", show_source=True)
    async with app.run_test(size=SIZE) as pilot:
        await open_judging(app, pilot)
        assert "bm25 #" in screen_text(app) or "dense #" in screen_text(app)


@sync
async def test_blind_order_on_screen_per_annotator(project):
    async def first_pairs(name: str) -> list[tuple[str, str]]:
        app = make_app(project, annotator=name, start="judge", order="query", new_annotator=True)
        out = []
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_judging(app, pilot)
            for _ in range(7):
                out.append((screen.pair.query_id, screen.pair.chunk_id))
                await pilot.press("right")
        return out

    alice = await first_pairs("alice")
    assert alice == await first_pairs("alice")
    bob = await first_pairs("bob")
    assert sorted(alice) == sorted(bob) and alice != bob


@sync
async def test_markup_and_escape_sequences_are_shown_literally(project):
    app = make_app(project, annotator="alice", start="judge", queries=["q1"], order="query")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        for _ in range(8):
            if screen.pair.chunk_id == "c01":
                break
            await pilot.press("right")
        assert screen.pair.chunk_id == "c01"
        text = screen_text(app)
        assert "[bold red]x[/]" in text
        assert "[link=http://e.x]click[/link]" in text
        assert "\x1b" not in text
        # the rest of the screen is intact: the query and the scale are still there
        assert "How long does a refund take?" in text and "Perfectly relevant" in text


@sync
async def test_binary_scale_y_and_n(tmp_path):
    project = build_project(tmp_path / "b.db", scale="binary", guidelines=None)
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        await open_judging(app, pilot)
        await pilot.press("y", "n", "1", "2")
    assert [r.grade for r in labels(project)] == [1, 0, 1]
    project.close()


@sync
async def test_help_lists_y_and_n_on_a_binary_scale_only(project, tmp_path):
    async def help_text(p) -> str:
        app = make_app(p, annotator="alice", start="judge")
        async with app.run_test(size=SIZE) as pilot:
            await open_judging(app, pilot)
            await pilot.press("question_mark")
            await pilot.pause()
            return screen_text(app)

    graded = await help_text(project)  # 0-3
    assert "Perfectly relevant" in graded and "skip" in graded  # each grade by its name
    assert "binary" not in graded and not re.search(r"^\s*[yn]\s", graded, re.M)
    binary = build_project(tmp_path / "b.db", scale="binary", guidelines=None)
    shown = await help_text(binary)
    assert "relevant (binary)" in shown and "not relevant (binary)" in shown
    binary.close()


@sync
async def test_navigation_between_queries_and_find(project):
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        assert screen.pair.query_id == "q1"
        await pilot.press("right_square_bracket")
        assert screen.pair.query_id == "q2"
        await pilot.press("left_square_bracket")
        assert screen.pair.query_id == "q1"
        await pilot.press("slash", *"damaged")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert screen.pair.query_id == "q4"
    assert labels(project) == []


@sync
async def test_command_palette_lists_every_judging_action(project):
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        titles = " ".join(c.title for c in app.get_system_commands(screen))
        for key in JUDGE_KEYS:
            if not screen.offers(key.action):  # grades off the 0-3 scale, y/n
                assert f"  ({key.keys})" not in titles, key.name
                continue
            name = screen.ACTION_NAMES[key.action]
            assert f"{name.capitalize()}  (" in titles, key.name


@sync
async def test_home_screen_and_missing_screens(project):
    from ragjudge.tui.screens.home import HomeScreen

    J_events.record_label(project, annotator="zoe", query_id="q1", chunk_id="c02", grade=3)
    app = make_app(project, annotator="alice", new_annotator=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        text = screen_text(app)
        assert "zoe" in text and "bm25" in text and "order: depth" in text
        await pilot.press("enter")
        await open_judging(app, pilot)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)


@sync
async def test_recheck_pairs_are_recorded_apart(project):
    app = make_app(project, annotator="alice", start="judge", recheck=0.5, order="query")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        rechecked = None
        for _ in range(24):
            if screen.pair.recheck:
                rechecked = screen.pair
                assert "no grade" in screen_text(app)  # the earlier grade stays hidden
                break
            await pilot.press("3")
        assert rechecked is not None
        await pilot.press("0")
    rows = [r for r in labels(project) if r.source == "recheck"]
    assert [(r.query_id, r.chunk_id, r.grade) for r in rows] == [(rechecked.query_id, rechecked.chunk_id, 0)]
    assert J_state.current_label(project, "alice", rechecked.query_id, rechecked.chunk_id).grade == 3


@sync
async def test_project_without_runs_says_so(tmp_path):
    from ragjudge.models import Scale

    project = Project.init(str(tmp_path / "empty.db"), scale=Scale.parse("0-3"))
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        await open_judging(app, pilot)
        assert "nothing to judge" in screen_text(app)
        await pilot.press("2", "s", "u", "right", "left_square_bracket")
        assert labels(project) == []
    project.close()
