"""The judging screen over a long session, driven with Pilot: claims beside nuggets, position
counters, moving within the queue order, the history of one's own labels, chunk metadata and
neighbours, the palette and a narrow terminal."""

from __future__ import annotations

from sqlalchemy import select
from test_pilot import SIZE, labels, open_judging, screen_text
from tui_project import sync

from ragjudge.services import judging as J
from ragjudge.store.schema import Nugget, NuggetSupport, utcnow
from ragjudge.tui import make_app


def add_claim(project, query_id: str, text: str) -> int:
    def work(session) -> int:
        row = Nugget(query_id=query_id, text=text, importance="okay", kind="claim", weight=1.0,
                     removed=False, created_at=utcnow())
        session.add(row)
        session.flush()
        return int(row.id)

    return project.write(work)


def panel_text(app, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


# -- claims ------------------------------------------------------------------------------------


@sync
async def test_claims_are_shown_and_marked_like_nuggets(project):
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        pair = screen.pair
        claim = add_claim(project, pair.query_id, "refunds take five days")
        J.add_nugget(project, pair.query_id, "paid to the card", "vital")
        await pilot.press("right", "left")  # the pair again: its panel is read anew
        assert "refunds take five days" in panel_text(app, "#facets-panel")
        assert "claim" in panel_text(app, "#facets-panel")
        await pilot.press("g")
        await pilot.pause()
        options = app.screen.query_one("#facet-list")
        options.highlighted = options.get_option_index(f"n:{claim}")
        await pilot.press("f")
        await pilot.pause()
        assert "refunds take five days" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert "●" in panel_text(app, "#facets-panel").split("refunds take five days")[0].splitlines()[-1]
    with project.read() as s:
        rows = s.scalars(select(NuggetSupport)).all()
    assert [(r.nugget_id, r.chunk_id, r.annotator, r.support) for r in rows] == [
        (claim, pair.chunk_id, "alice", "full")]
    kinds = {n.text: n.kind for n in J.nuggets_for(project, pair.query_id)}
    assert kinds == {"paid to the card": "nugget", "refunds take five days": "claim"}
