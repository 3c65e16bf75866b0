"""A key acts on what the screen shows. Before every key that writes, the pair (judging screen)
or the facet, nugget or claim (facets panel) the screen names is read from the rendered
characters; after it, the row stored in the database must be that one — through moves, undo
and refreshes."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from ragjudge.services.labels import facets as facet_service
from ragjudge.store.schema import Facet, FacetLink, Label, Nugget, NuggetSupport
from ragjudge.tui import make_app
from ragjudge.tui.screens.facets import FacetsScreen
from ragjudge.tui.screens.judge import JudgeScreen
from test_pilot import open_judging, screen_text
from tui_project import QUERIES, sync

pytestmark = pytest.mark.slow

SIZE = (120, 40)


# -- the judging screen: the pair on screen ------------------------------------------------------


def pair_on_screen(app) -> tuple[str, str]:
    """(query id, chunk id) as the screen shows them: the query's text in its panel, the chunk's
    id in the chunk panel's title."""
    text = screen_text(app)
    chunk = re.search(r"chunk (c\d\d)\b", text)
    queries = [qid for qid, query, _, _ in QUERIES if query[:30] in text]
    assert chunk and len(queries) == 1, text
    return queries[0], chunk.group(1)


def last_label(project) -> tuple[str, str, int | None]:
    with project.read() as s:
        row = s.execute(select(Label.query_id, Label.chunk_id, Label.grade)
                        .where(Label.annotator == "alice").order_by(Label.id.desc()).limit(1)).one()
    return row[0], row[1], row[2]


async def grade(pilot, project, key: str) -> tuple[str, str]:
    before = pair_on_screen(pilot.app)
    await pilot.press(key)
    await pilot.pause()
    assert last_label(project) == (*before, int(key))
    return before


@sync
async def test_every_grade_is_stored_for_the_pair_on_screen(project):
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        first = await grade(pilot, project, "2")
        # moving: the next pair, back two, the next query
        await pilot.press("j")
        await grade(pilot, project, "1")
        await pilot.press("k", "k", "k")  # back past the two pairs after the first
        await pilot.pause()
        assert pair_on_screen(app) == first
        await grade(pilot, project, "3")
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert pair_on_screen(app)[0] != first[0]
        graded = await grade(pilot, project, "0")
        # after undo: the undone pair is on screen, and the next grade is its
        await pilot.press("u")
        await pilot.pause()
        assert pair_on_screen(app) == graded
        await grade(pilot, project, "2")
        # after refreshes: a comment written (the pair is read again), the facets panel and
        # the help screen opened and closed
        await pilot.press("k")
        await pilot.pause()
        shown = pair_on_screen(app)
        await pilot.press("c")
        await pilot.pause()
        for ch in "see c02":
            await pilot.press(ch)
        await pilot.press("enter")
        await pilot.pause()
        assert pair_on_screen(app) == shown
        await grade(pilot, project, "1")
        for key in ("g", "question_mark"):
            await pilot.press(key)
            await pilot.pause()
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, JudgeScreen)
            await grade(pilot, project, "3")
        assert screen is app.screen


# -- the facets panel: the highlighted facet, nugget or claim --------------------------------------


def target_on_screen(app) -> tuple[str, str, str]:
    """(facet | nugget | claim, its name, the chunk) from the panel's "keys act on" line."""
    found = re.search(r"keys act on: (facet|nugget|claim) “(.+?)”  ·  chunk (c\d\d)", screen_text(app))
    assert found, screen_text(app)
    return found.group(1), found.group(2), found.group(3)


def last_mark(project) -> tuple[str, str, str, object]:
    """The newest facet link or nugget support of alice: (kind, name, chunk, value)."""
    with project.read() as s:
        link = s.execute(select(FacetLink).where(FacetLink.annotator == "alice")
                         .order_by(FacetLink.id.desc()).limit(1)).scalar()
        support = s.execute(select(NuggetSupport).where(NuggetSupport.annotator == "alice")
                            .order_by(NuggetSupport.id.desc()).limit(1)).scalar()
        newest = max([m for m in (link, support) if m is not None], key=lambda m: m.created_at)
        if newest is link:
            return "facet", s.get(Facet, link.facet_id).name, link.chunk_id, link.covered
        nugget = s.get(Nugget, support.nugget_id)
        return nugget.kind, nugget.text, support.chunk_id, support.support


async def mark(pilot, project, key: str, value) -> tuple[str, str]:
    before = target_on_screen(pilot.app)
    await pilot.press(key)
    await pilot.pause()
    assert last_mark(project) == (*before, value)
    return before[:2]


async def add(pilot, key: str, text: str) -> None:
    await pilot.press(key)
    await pilot.pause()
    for ch in text:
        await pilot.press(ch)
    await pilot.press("enter")
    await pilot.pause()


@sync
async def test_every_mark_is_stored_for_the_line_the_panel_names(project):
    facet_service.add_facet(project, "q1", "how long")
    facet_service.add_nugget(project, "q1", "five working days", "vital")
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        await open_judging(app, pilot)
        chunk = pair_on_screen(app)[1]
        await pilot.press("g")
        await pilot.pause()
        assert isinstance(app.screen, FacetsScreen)
        assert target_on_screen(app) == ("facet", "how long", chunk)
        assert await mark(pilot, project, "space", True) == ("facet", "how long")
        await pilot.press("down")
        await pilot.pause()
        assert await mark(pilot, project, "f", "full") == ("nugget", "five working days")
        assert await mark(pilot, project, "space", "none") == ("nugget", "five working days")
        # a claim, added in the panel (c), is a claim: its own section, marked like a nugget
        await add(pilot, "c", "refunds take five days")
        assert target_on_screen(app) == ("claim", "refunds take five days", chunk)
        with project.read() as s:
            assert s.execute(select(Nugget.kind).where(Nugget.text == "refunds take five days")).scalar() == "claim"
        assert "CLAIMS of the reference answer" in screen_text(app)
        assert await mark(pilot, project, "p", "partial") == ("claim", "refunds take five days")
        # "claim: ..." typed as a nugget is not stored as a nugget of that name
        await add(pilot, "b", "claim: parcels are insured")
        with project.read() as s:
            assert s.execute(select(Nugget.id).where(Nugget.text.like("%insured%"))).first() is None
        # a refresh after a facet is added elsewhere (the lines above move down): the
        # highlight, and so the next key, stay on the claim
        facet_service.add_facet(project, "q1", "where the refund goes")
        await pilot.press("up", "down")  # back on the claim; the list is read on the next mark
        await pilot.pause()
        assert await mark(pilot, project, "x", "none") == ("claim", "refunds take five days")
        assert "where the refund goes" in screen_text(app)
        assert target_on_screen(app)[:2] == ("claim", "refunds take five days")
        assert await mark(pilot, project, "f", "full") == ("claim", "refunds take five days")
        # moving up to the facets: each line named, each mark stored for it
        await pilot.press("up", "up")
        await pilot.pause()
        assert await mark(pilot, project, "space", True) == ("facet", "where the refund goes")
        await pilot.press("up")
        await pilot.pause()
        # covered at the start: space uncovers it
        assert await mark(pilot, project, "space", False) == ("facet", "how long")
