"""The judging screen over a long session, driven with Pilot: claims beside nuggets, position
counters, moving within the queue order, the history of one's own labels, chunk metadata and
neighbours, the palette and a narrow terminal."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from test_pilot import SIZE, labels, open_judging, screen_text
from tui_project import sync

from ragjudge.services.events import state as J_state
from ragjudge.services.labels import events as J_events
from ragjudge.services.labels import facets as J_facets
from ragjudge.services.labels import texts as J_texts
from ragjudge.store.schema import Nugget, NuggetSupport, utcnow
from ragjudge.tui import make_app

pytestmark = pytest.mark.slow


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
        J_facets.add_nugget(project, pair.query_id, "paid to the card", "vital")
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
    kinds = {n.text: n.kind for n in J_facets.nuggets_for(project, pair.query_id)}
    assert kinds == {"paid to the card": "nugget", "refunds take five days": "claim"}


# -- position counters -------------------------------------------------------------------------


def progress(app) -> str:
    return panel_text(app, "#progress")


def queue_order(queue) -> list[tuple[str, str]]:
    """Every pair of the queue in queue order (what j walks through)."""
    out, view = [], queue.end(+1)
    while view is not None:
        out.append((view.query_id, view.chunk_id))
        view = queue.step(view.position, +1)
    return out


def expected_counter(queue, query_id: str, chunk_id: str) -> str:
    """"pair i of n in this query": i counts the query's pairs in queue order up to this one."""
    order = [c for q, c in queue_order(queue) if q == query_id]
    return f"pair {order.index(chunk_id) + 1} of {len(order)} in this query"


@sync
async def test_pair_counter_follows_j_and_k(project):
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        seen = []
        for key in ["j"] * 7 + ["k"] * 3 + ["2", "j", "k", "k"]:
            await pilot.press(key)
            pair = screen.pair
            counter = expected_counter(screen.queue, pair.query_id, pair.chunk_id)
            assert counter in progress(app), (key, progress(app))
            seen.append((pair.query_id, counter))
        assert len(set(seen)) > 3
        assert "pair 2 of" in seen[0][1]  # one j from the first pair


@sync
async def test_counters_after_an_undo_across_a_restart(tmp_path):
    from ragjudge.services.project.database import Project
    from tui_project import build_project

    db = tmp_path / "u.db"
    project = build_project(db)
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        await open_judging(app, pilot)
        await pilot.press("1", "2", "3", "0", "q")  # the first round: q1 and q2's top pairs
    project.close()
    project = Project.open(str(db))
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "(4/" in progress(app)
        undone = labels(project)[-1]
        await pilot.press("u")
        pair = screen.pair
        assert (pair.query_id, pair.chunk_id) == (undone.query_id, undone.chunk_id)
        assert expected_counter(screen.queue, pair.query_id, pair.chunk_id) in progress(app)
        assert "(3/" in progress(app), progress(app)
        assert "1 judged" in progress(app), progress(app)
    project.close()


# -- moving within the queue order ------------------------------------------------------------


def block_start(order: list[tuple[str, str]], i: int) -> int:
    while i > 0 and order[i - 1][0] == order[i][0]:
        i -= 1
    return i


@sync
async def test_brackets_and_jk_move_within_the_queue_order(project):
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        order = queue_order(screen.queue)
        assert len(order) == len(set(order)) == 28

        def here() -> int:
            return order.index((screen.pair.query_id, screen.pair.chunk_id))

        for _ in range(12):  # into the second round (q1..q4 have 2 pairs each in the first)
            await pilot.press("j")
        start = here()
        assert start == 12 and screen.pair.position.round >= 1
        await pilot.press("f", *"look again", "enter")
        await pilot.pause()
        flagged = order[start]
        await pilot.press("right_square_bracket")
        after = here()
        assert order[after][0] != flagged[0] and after > start
        assert all(q == flagged[0] for q, _ in order[start:after])  # the next query in the order
        assert block_start(order, after) == after
        await pilot.press("left_square_bracket")
        assert here() == block_start(order, start)
        await pilot.press("left_square_bracket")
        assert here() == block_start(order, block_start(order, start) - 1)
        back = here()
        for _ in range(start - back):
            await pilot.press("j")
        assert order[here()] == flagged and screen.pair.marks.flagged
        await pilot.press("k")
        assert here() == start - 1
        for _ in range(40):  # the ends stop the walk; the place stays in the order
            await pilot.press("left_square_bracket")
        assert here() == 0
        for _ in range(40):
            await pilot.press("right_square_bracket")
        assert here() == block_start(order, len(order) - 1)
    assert labels(project) == []


# -- the history of one's own labels ----------------------------------------------------------


@sync
async def test_history_lists_own_labels_newest_first_and_jumps_to_relabel(project):
    J_events.record_label(project, annotator="zoe", query_id="q4", chunk_id="c05", grade=3)  # not alice's
    app = make_app(project, annotator="alice", start="judge", new_annotator=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        graded = []
        for key in "123":
            graded.append((screen.pair.query_id, screen.pair.chunk_id, int(key)))
            await pilot.press(key)
        await pilot.press("s")
        await pilot.press("l")
        await pilot.pause()
        from ragjudge.tui.screens.history import HistoryScreen

        assert isinstance(app.screen, HistoryScreen)
        options = app.screen.query_one("#history-list")
        texts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert len(texts) == 4 and "skipped" in texts[0]
        for text, (q, c, g) in zip(texts[1:], reversed(graded)):
            assert q in text and c in text and f"{g} " in text, text
        assert not any("c05" in t and "q4" in t for t in texts)
        await pilot.press("down", "down", "enter")  # the second label given
        await pilot.pause()
        assert screen is app.screen
        q, c, _ = graded[1]
        assert (screen.pair.query_id, screen.pair.chunk_id) == (q, c)
        assert "2 " in panel_text(app, "#earlier-panel")
        await pilot.press("0")
        assert J_state.current_label(project, "alice", q, c).grade == 0
        await pilot.press("l")
        await pilot.pause()
        first = str(app.screen.query_one("#history-list").get_option_at_index(0).prompt)
        assert q in first and c in first and "0 " in first
        await pilot.press("escape")
        await pilot.pause()
        assert screen is app.screen


@sync
async def test_history_marks_flagged_and_commented_pairs(project):
    for chunk, grade in (("c02", 3), ("c09", 1), ("c01", 0), ("c14", 2)):
        J_events.record_label(project, annotator="alice", query_id="q1", chunk_id=chunk, grade=grade)
    J_events.flag_pair(project, annotator="alice", query_id="q1", chunk_id="c09", note="stale?")
    J_events.comment_pair(project, annotator="alice", query_id="q1", chunk_id="c01", note="see §2")
    J_events.flag_pair(project, annotator="alice", query_id="q1", chunk_id="c14", note="x")
    J_events.comment_pair(project, annotator="alice", query_id="q1", chunk_id="c14", note="y")
    J_events.unflag_pair(project, annotator="alice", query_id="q1", chunk_id="c14")  # taken back
    J_events.flag_pair(project, annotator="zoe", query_id="q1", chunk_id="c02", note="not alice's")
    entries = {e.chunk_id: e.marks for e in J_state.label_history(project, "alice")}
    assert entries["c09"].flagged and entries["c09"].flag_note == "stale?"
    assert entries["c01"].comment == "see §2" and not entries["c01"].flagged
    assert not entries["c14"].flagged and entries["c14"].comment == "y"
    assert not entries["c02"].any, "another annotator's flag is not alice's"
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        await open_judging(app, pilot)
        await pilot.press("l")
        await pilot.pause()
        options = app.screen.query_one("#history-list")
        lines = {c: str(options.get_option_at_index(i).prompt) for i, c in
                 enumerate(("c14", "c01", "c09", "c02"))}
        assert all(c in lines[c] for c in lines), lines
        assert "⚑" in lines["c09"] and "✎" not in lines["c09"]
        assert "✎" in lines["c01"] and "⚑" not in lines["c01"]
        assert "✎" in lines["c14"] and "⚑" not in lines["c14"]
        assert "⚑" not in lines["c02"] and "✎" not in lines["c02"]
        assert "⚑ flagged" in screen_text(app) and "✎ commented" in screen_text(app)


@sync
async def test_history_pages_through_a_long_session(project, monkeypatch):
    from ragjudge.tui.screens import history

    monkeypatch.setattr(history, "PAGE", 2)
    pairs = [("q1", "c02"), ("q1", "c09"), ("q2", "c03"), ("q3", "c04"), ("q4", "c05")]
    for i, (q, c) in enumerate(pairs):
        J_events.record_label(project, annotator="alice", query_id=q, chunk_id=c, grade=i % 4)
    J_events.record_label(project, annotator="alice", query_id="q1", chunk_id="c02", grade=3)  # moves up
    newest = [("q1", "c02"), ("q4", "c05"), ("q3", "c04"), ("q2", "c03"), ("q1", "c09")]
    assert [(e.query_id, e.chunk_id) for e in J_state.label_history(project, "alice")] == newest
    assert [(e.query_id, e.chunk_id) for e in J_state.label_history(project, "alice", limit=2, offset=2)] == newest[2:4]
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        await pilot.press("l")
        await pilot.pause()
        options = app.screen.query_one("#history-list")
        assert options.option_count == 3  # two labels and "older labels"
        await pilot.press("end", "enter")
        await pilot.pause()
        assert options.option_count == 5
        await pilot.press("end", "enter")
        await pilot.pause()
        assert options.option_count == 5 and options.get_option_at_index(4).id != history.MORE
        await pilot.press("enter")
        await pilot.pause()
        assert (screen.pair.query_id, screen.pair.chunk_id) == ("q1", "c09")


# -- the command palette ----------------------------------------------------------------------


def palette_titles(app, screen) -> list[str]:
    return [c.title for c in app.get_system_commands(screen)]


@sync
async def test_palette_offers_the_scales_grades_and_each_command_once(project):
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        titles = palette_titles(app, screen)
        assert len(titles) == len(set(titles))
        words = [t.split("  (")[0].lower() for t in titles]
        assert len(words) == len(set(words)), words
        assert [t for t in titles if t.startswith("Grade")] == [
            "Grade 0  (0)", "Grade 1  (1)", "Grade 2  (2)", "Grade 3  (3)"]
        assert not any("binary" in t for t in titles)
        assert sum(w.startswith("quit") for w in words) == 1
        await pilot.press("3")
        pair = screen.pair
        from ragjudge.tui.screens.adjudicate import AdjudicateScreen

        adjudicate = AdjudicateScreen(project, pair.query_id, pair.chunk_id)
        await app.push_screen(adjudicate)
        await pilot.pause()
        titles = palette_titles(app, adjudicate)
        grades = [t for t in titles if t.lower().startswith("grade")]
        assert len(grades) == 4 and not any(f"({g})" in t for t in grades for g in range(4, 10))


@sync
async def test_palette_on_a_binary_scale_offers_y_and_n(tmp_path):
    from tui_project import build_project

    project = build_project(tmp_path / "b.db", scale="binary")
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        titles = palette_titles(app, screen)
        assert [t for t in titles if t.startswith("Grade")] == ["Grade 0  (0)", "Grade 1  (1)"]
        assert sum("binary" in t for t in titles) == 2
    project.close()


# -- a narrow terminal ------------------------------------------------------------------------


def footer_keys(app) -> dict[str, tuple[int, int]]:
    """action -> (x, right edge) of every key the footer shows."""
    from textual.widgets._footer import FooterKey

    return {k.action: (k.region.x, k.region.right) for k in app.screen.query(FooterKey)
            if k.region.width}


@sync
async def test_narrow_terminal_stacks_the_layout_and_keeps_the_footers_exits(project):
    for width in (80, 60, 99):
        app = make_app(project, annotator="alice", start="judge")
        async with app.run_test(size=(width, 30)) as pilot:
            await open_judging(app, pilot)
            await pilot.pause()
            chunk = app.screen.query_one("#chunk-scroll").region
            side = app.screen.query_one("#side").region
            assert chunk.width == width, (width, chunk)
            assert side.width == width and side.bottom <= chunk.y
            assert chunk.height >= 8
            keys = footer_keys(app)
            for action in ("evaluation", "agreement", "help", "quit"):
                assert action in keys, (width, sorted(keys))
                assert keys[action][1] <= width
            assert all(right <= width for _, right in keys.values())
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=(120, 30)) as pilot:  # wide: side by side, every key shown
        await open_judging(app, pilot)
        await pilot.pause()
        assert app.screen.query_one("#chunk-scroll").region.width < 120 - 40
        keys = footer_keys(app)
        assert {"grade(0)", "skip", "undo", "evaluation", "quit", "help"} <= set(keys)


# -- adjudication: the query's description, its terms highlighted ------------------------------


def styled_words(text, style: str = "reverse") -> set[str]:
    return {text.plain[span.start:span.end].lower() for span in text.spans
            if style in str(span.style) or getattr(span.style, style, False)}


@sync
async def test_adjudication_shows_the_description_and_highlights_query_terms(project):
    from ragjudge.tui.screens.adjudicate import AdjudicateScreen
    from ragjudge.tui.widgets.literal import highlighted, query_terms

    J_events.record_label(project, annotator="ann", query_id="q1", chunk_id="c02", grade=3)
    J_events.record_label(project, annotator="bob", query_id="q1", chunk_id="c02", grade=0)
    app = make_app(project, annotator="lead")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = AdjudicateScreen(project, "q1", "c02")
        await app.push_screen(screen)
        await pilot.pause()
        query = screen.query_one("#adjudicate-query").render()
        assert "Customer asks about refund timing." in str(query)
        assert "billing" in str(query)
        chunk = screen.query_one("#adjudicate-chunk-text").render()
        assert "refund" in styled_words(chunk)  # "A refund is issued …" for "How long does a refund take?"
        # the same highlighting as the judging screen's
        expected = highlighted("A refund is issued to the original payment method within 5 working days.",
                               query_terms("How long does a refund take?"))
        assert styled_words(chunk) == styled_words(expected)


# -- the chunk's title and section, and its neighbours in the document ---------------------------


def place_in_document(project) -> None:
    """c09, c02, c14 are the chunks 1, 2, 3 of document "refunds" (not their id order)."""
    from ragjudge.store.schema import Chunk

    def work(session) -> None:
        for cid, index in (("c09", 1), ("c02", 2), ("c14", 3)):
            chunk = session.get(Chunk, cid)
            chunk.doc_id = "refunds"
            chunk.meta = {"title": "Refund [bold]policy[/bold]", "section": f"Part \x1b[31m{index}",
                          "chunk_index": index}

    project.write(work)


@sync
async def test_chunk_title_section_and_neighbours_in_the_document(project):
    place_in_document(project)
    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_judging(app, pilot)
        screen.pair = screen.queue.goto_pair("q1", "c02")
        await pilot.pause()
        chunk = str(screen.query_one("#chunk-text").render())
        assert "Refund [bold]policy[/bold]" in chunk and "Part ␛[31m2" in chunk
        await pilot.press("d")
        await pilot.pause()
        from ragjudge.tui.screens.neighbours import NeighboursScreen

        assert isinstance(app.screen, NeighboursScreen)
        text = str(app.screen.query_one("#neighbours-text").render())
        assert "Refund status appears" in text.split("A refund is issued")[0]  # c09 before
        assert "Returns are free" in text.split("A refund is issued")[1]  # c14 after
        assert "2 of 3" in text
        await pilot.press("right")
        text = str(app.screen.query_one("#neighbours-text").render())
        assert "3 of 3" in text and "end of the document" in text
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen and screen.pair.chunk_id == "c02"
    assert labels(project) == []


def test_neighbours_without_an_order_follow_the_ids(project):
    before, after = J_texts.chunk_neighbours(project, "c13")
    assert (before.id if before else None, after) == ("c03", None)
    before, after = J_texts.chunk_neighbours(project, "c03")
    assert (before, after.id if after else None) == (None, "c13")
    place_in_document(project)
    assert [c.id if c else None for c in J_texts.chunk_neighbours(project, "c09")] == [None, "c02"]
    assert [c.id if c else None for c in J_texts.chunk_neighbours(project, "c14")] == ["c02", None]


# -- every key in the help screen and the README -------------------------------------------------


KEY_SYMBOLS = {"left_square_bracket": "[", "right_square_bracket": "]", "slash": "/",
               "question_mark": "?", "left": "←", "right": "→"}


def judging_keys() -> list[str]:
    from ragjudge.tui.screens.judge import JudgeScreen

    out = []
    for binding in JudgeScreen.BINDINGS:
        for key in binding.key.split(","):
            out.append(KEY_SYMBOLS.get(key, key))
    return out


BINARY_ONLY = ("y", "n")
"""Keys that grade a binary scale (yes, no) and are listed only there."""


@sync
async def test_every_judging_key_is_in_the_help_screen_and_the_readme(project):
    from pathlib import Path

    from ragjudge.tui.screens.help import HelpScreen

    app = make_app(project, annotator="alice", start="judge")
    async with app.run_test(size=SIZE) as pilot:
        await open_judging(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        keys = " ".join(row[0] for row in app.screen.rows)
        for key in judging_keys():
            if key.isdigit() or key in BINARY_ONLY:
                continue
            assert key in keys.split() or key in keys.replace("/", " ").split(), (key, keys)
        for key in BINARY_ONLY:  # y and n grade a binary scale only: not offered on 0-3
            assert key not in keys.replace("/", " ").split(), (key, keys)
        # the scale's grades, not 0-9, each by its name
        assert [(row[0], str(row[1])) for row in app.screen.rows[:4]] == [
            ("0", "Irrelevant"), ("1", "Related"), ("2", "Highly relevant"), ("3", "Perfectly relevant")]
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    table = readme.split("Keys on the judging screen")[1].split("\n\n")[1]
    for key in judging_keys():
        if key.isdigit():
            continue
        assert f"`{key}`" in table, key
