"""Every screen of the app at 80×24 and at 120×40, on the demo project: no text is cut off
without an ellipsis, and no footer key is cut (tests/screencuts.py finds them).

The tour walks the screens as a user would, in a few sessions (an annotator, a lead, a new
name, a browser login), checking each stop at both sizes. The data each session needs is made
by the screenshot script's own scenes (screenshots/make_screenshots.py), so that the pictures
and this test look at the same screens."""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import sys
from pathlib import Path

import pytest
from screencuts import cut_texts

pytestmark = pytest.mark.slow

SIZES = ((120, 40), (80, 24))
SHOTS = Path(__file__).resolve().parents[2] / "screenshots" / "make_screenshots.py"


def scenes():
    """The screenshot script, as a module (its scenes prepare the demo for each screen)."""
    if "make_screenshots" not in sys.modules:
        spec = importlib.util.spec_from_file_location("make_screenshots", SHOTS)
        module = importlib.util.module_from_spec(spec)
        sys.modules["make_screenshots"] = module
        spec.loader.exec_module(module)
    return sys.modules["make_screenshots"]


@pytest.fixture(scope="module")
def demo_file(tmp_path_factory):
    from ragjudge.services.transfer.demo import build_demo

    path = tmp_path_factory.mktemp("fit") / "demo.db"
    build_demo(str(path))
    return path


#: (what the stop shows, the keys that lead there from the stop before)
EVALUATION_TOUR = (
    ("home", ()),
    ("home help", ("question_mark",)),
    ("guidelines", ("escape", "h")),
    ("evaluation overview", ("escape", "e")),
    ("evaluation per query", ("p",)),
    ("explanation", ("enter",)),
    ("evaluation curves", ("escape", "v")),
    ("evaluation strata", ("s",)),
    ("evaluation compare", ("c",)),
    ("a lead's setting refused", ("plus",)),
)

AGREEMENT_TOUR = (
    ("agreement overview", ("a",)),
    *((f"agreement {tab}", (key,)) for key, tab in (
        ("p", "pairs"), ("b", "by query"), ("n", "by annotator"), ("d", "disputed"),
        ("l", "label quality"), ("w", "answers"))),
    ("review of one's own flags", ("v",)),
)

JUDGING_TOUR = (
    ("judging", ("enter",)),
    ("facets and nuggets", ("g",)),
    ("one's labels", ("escape", "l")),
    ("the chunk's document", ("escape", "d")),
    ("judging help", ("escape", "question_mark")),
    ("find a query", ("escape", "slash", *"refund")),
    ("a comment", ("escape", "c")),
    ("answer judging", ("escape", "escape", "w")),
    ("answer judging help", ("question_mark",)),
    ("answer judging: nuggets", ("escape", "g")),
)

LEAD_TOUR = (
    ("review", ("v",)),
    ("review list", ("l",)),
    ("adjudication from review", ("l", "a")),
    ("the reason of a grade", ("2",)),
    ("adjudication of a disputed pair", ("escape", "escape", "escape", "a", "d", "enter")),
)

FLAGGED_TOUR = (
    ("judging a flagged pair", ("left",)),
    ("unflag?", ("f",)),
)


async def settle(app, pilot) -> None:
    """Wait until the workers are done and the screen is drawn; toasts are cleared (they lie
    over the panels)."""
    for _ in range(2):
        await app.workers.wait_for_complete()
        await pilot.pause(0.05)
    app.clear_notifications()
    await pilot.pause()


async def walk(app, tour) -> list[str]:
    found: list[str] = []
    async with app.run_test(size=SIZES[0]) as pilot:
        await settle(app, pilot)
        for name, keys in tour:
            for key in keys:
                await pilot.press(key)
                await pilot.pause(0.05)
            for width, height in SIZES:
                await pilot.resize_terminal(width, height)
                await settle(app, pilot)
                found += cut_texts(app, f"[{name} {width}×{height} {type(app.screen).__name__}]")
    return found


def tour(demo_file, tmp_path, make, tour, prepare=()) -> list[str]:
    from ragjudge.services.project.database import Project

    db = tmp_path / "demo.db"
    shutil.copyfile(demo_file, db)
    with Project.open(str(db)) as project:
        for step in prepare:
            step(project)
        return asyncio.run(walk(make(project), tour))


@pytest.mark.parametrize("stops", [EVALUATION_TOUR, AGREEMENT_TOUR, JUDGING_TOUR],
                         ids=["home and evaluation", "agreement", "judging"])
def test_an_annotator_s_screens_fit(demo_file, tmp_path, stops):
    from ragjudge.tui import make_app

    s = scenes()
    cuts = tour(demo_file, tmp_path, lambda p: make_app(p, annotator="dana"), stops,
                (s._flags_for_review, s._judged_a_few, s._seen("dana")))
    assert not cuts, "\n".join(cuts)


def test_a_lead_s_screens_fit(demo_file, tmp_path):
    from ragjudge.tui import make_app

    s = scenes()
    cuts = tour(demo_file, tmp_path, lambda p: make_app(p, annotator="dora"), LEAD_TOUR,
                (s._flags_for_review,))
    assert not cuts, "\n".join(cuts)


def test_the_questions_before_judging_fit(demo_file, tmp_path):
    from ragjudge.tui import make_app
    from ragjudge.tui.served import ServedApp

    s = scenes()
    cuts = tour(demo_file, tmp_path, lambda p: make_app(p, start="judge"),
                (("your name?", ()), ("did you mean ana?", (*"Ana", "enter"))))
    cuts += tour(demo_file, tmp_path, lambda p: make_app(p, annotator="erin", start="judge",
                                                         new_annotator=True),
                 (("the first-time guidelines", ()),))
    cuts += tour(demo_file, tmp_path, ServedApp, (("the browser's login", ()),))
    cuts += tour(demo_file, tmp_path,
                 lambda p: make_app(p, annotator="dana", start="judge", queries=s.FACET_QUERY),
                 FLAGGED_TOUR, (s._judged_a_few,))
    assert not cuts, "\n".join(cuts)
