"""Regenerate screenshots/*.png of the app's screens on the demo project.

    .venv/bin/python screenshots/make_screenshots.py             # every scenario
    .venv/bin/python screenshots/make_screenshots.py judge help  # some of them

Each scenario opens the app the way the CLI does (``ragjudge.tui.make_app``), presses keys, and
saves an SVG screenshot that cairosvg turns into a PNG, with the text set in a local monospaced
font (:func:`monospaced`) so that it keeps Textual's layout. To add a screen, append a
:class:`Scenario` to ``SCENARIOS``: a file name, the app's options, the keys to press, and
optionally a ``prepare(project)`` that writes what the screen needs to show.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIZE = (120, 40)


@dataclass
class Scenario:
    name: str
    """The PNG's file name without extension."""
    options: dict = field(default_factory=dict)
    """Arguments of make_app: annotator, start ('home', 'judge' or 'answers'), queue options."""
    keys: tuple[str, ...] = ()
    prepare: Callable | None = None
    size: tuple[int, int] = SIZE
    """The terminal's columns and rows."""
    needs: str | None = None
    """A module the screen lives in; the scenario is left out while it does not exist."""


def _seen(name: str) -> Callable:
    def prepare(project) -> None:
        from ragjudge.services.events.annotators import mark_guidelines_seen

        mark_guidelines_seen(project, name)

    return prepare


FACET_QUERY = ["m01"]  # a demo query with facets and nuggets


def _judged_a_few(project) -> None:
    """dana has judged six pairs of m01, flagged one, marked a facet and a nugget; the screen is
    back on it."""
    from ragjudge.services.events import state as J_state
    from ragjudge.services.labels import events as J_events
    from ragjudge.services.labels import facets as J_facets
    from ragjudge.services.labels import queue as J_queue

    _seen("dana")(project)
    queue = J_queue.JudgingQueue(project, "dana", queries=FACET_QUERY)
    view = queue.first()
    for grade in (3, 1, 0, 2, 2, 1):
        J_events.record_label(project, annotator="dana", query_id=view.query_id, chunk_id=view.chunk_id,
                       grade=grade, duration_ms=9000)
        queue.note_event(view.query_id, view.chunk_id,
                         J_state.current_label(project, "dana", view.query_id, view.chunk_id))
        last = view
        view = queue.after(view.position)
    J_events.flag_pair(project, annotator="dana", query_id=last.query_id, chunk_id=last.chunk_id,
                note="the chunk contradicts the policy page")
    facets = J_facets.facets_for(project, last.query_id)
    if facets:
        J_facets.set_facet_link(project, annotator="dana", facet_id=facets[0].id, chunk_id=last.chunk_id,
                         covered=True)
    nuggets = J_facets.nuggets_for(project, last.query_id)
    if nuggets:
        J_facets.set_nugget_support(project, annotator="dana", nugget_id=nuggets[0].id,
                             chunk_id=last.chunk_id, support="partial")


def _flags_for_review(project) -> None:
    """dora leads the demo; ana and ben flagged or commented on pairs of m01 she has to review."""
    from ragjudge.services.labels import events as J_events
    from ragjudge.services.labels import queue as J_queue
    from ragjudge.services.access import roster
    from ragjudge.services.access.visibility import access_for

    roster.add(project, "dora", role="lead", access=access_for(project, "dora"))
    _seen("dora")(project)
    queue = J_queue.JudgingQueue(project, "ana", queries=FACET_QUERY)
    view = queue.first()
    J_events.flag_pair(project, annotator="ana", query_id=view.query_id, chunk_id=view.chunk_id,
                note="is a claim form the same as a report?")
    J_events.comment_pair(project, annotator="ben", query_id=view.query_id, chunk_id=view.chunk_id,
                   note="the deadline is in the second paragraph")
    nxt = queue.after(view.position)
    if nxt is not None:
        J_events.flag_pair(project, annotator="chen", query_id=nxt.query_id, chunk_id=nxt.chunk_id,
                    note="outdated policy?")


def _lead(name: str) -> Callable:
    def prepare(project) -> None:
        from ragjudge.services.access import roster
        from ragjudge.services.access.visibility import access_for

        roster.add(project, name, role="lead", access=access_for(project, name))
        _seen(name)(project)

    return prepare


ANSWER_MEASURES = ["AnswerNuggets(strict,vital)", "AnswerNuggets(all)", "CitationPrecision",
                   "CitationRecall", "Attribution@5"]


def _answer_board(project) -> None:
    """The evaluation screen shows the answer measures and chunk attribution."""
    from ragjudge.services.scoring.live import save_measures

    save_measures(project, ANSWER_MEASURES)


SCENARIOS: list[Scenario] = [
    Scenario("home", {"annotator": "dana"}),
    Scenario("guidelines", {"annotator": "dana", "start": "judge", "new_annotator": True}),
    Scenario("judge", {"annotator": "dana", "start": "judge"}, prepare=_seen("dana")),
    Scenario("judge-earlier-label", {"annotator": "dana", "start": "judge", "queries": FACET_QUERY},
             keys=("left",), prepare=_judged_a_few),
    Scenario("judge-show-source", {"annotator": "dana", "start": "judge", "show_source": True,
                                   "order": "query"}, prepare=_seen("dana")),
    Scenario("facets", {"annotator": "dana", "start": "judge", "queries": FACET_QUERY},
             keys=("left", "g"), prepare=_judged_a_few),
    Scenario("help", {"annotator": "dana", "start": "judge"}, keys=("question_mark",), prepare=_seen("dana")),
    Scenario("find", {"annotator": "dana", "start": "judge"}, keys=("slash", *"refund"), prepare=_seen("dana")),
    Scenario("name", {"start": "judge"}),
    *(Scenario(f"evaluation-{tab}", {"annotator": "dana"}, keys=("e", key),
               needs="ragjudge.tui.screens.evaluation")
      for tab, key in (("overview", "o"), ("per-query", "p"), ("curves", "v"), ("strata", "s"),
                       ("compare", "c"))),
    Scenario("agreement", {"annotator": "dana"}, keys=("a",), prepare=_lead("dana")),
    Scenario("agreement-disputed", {"annotator": "dana"}, keys=("a", "d"), prepare=_lead("dana")),
    Scenario("review", {"annotator": "dora"}, keys=("v",), prepare=_flags_for_review),
    Scenario("history", {"annotator": "dana", "start": "judge", "queries": FACET_QUERY},
             keys=("l",), prepare=_judged_a_few),
    Scenario("neighbours", {"annotator": "dana", "start": "judge", "queries": FACET_QUERY},
             keys=("d",), prepare=_seen("dana")),
    Scenario("name-choice", {"annotator": "Ana", "start": "judge"}),
    Scenario("judge-narrow", {"annotator": "dana", "start": "judge"}, prepare=_seen("dana"),
             size=(90, 36)),
    Scenario("login", {"served": True}),
    Scenario("answers", {"annotator": "dana", "start": "answers", "queries": FACET_QUERY},
             keys=("2", "1", "2", "down"), prepare=_seen("dana")),
    Scenario("evaluation-answers", {"annotator": "dana"}, keys=("e",), prepare=_answer_board),
    Scenario("agreement-answers", {"annotator": "dana"}, keys=("a", "w")),
]


async def shoot(scenario: Scenario, db: str, out: Path) -> Path:
    from textual.app import App
    from textual.widgets import Input

    from ragjudge.services.project.database import Project
    from ragjudge.tui import make_app

    with Project.open(db) as project:
        if scenario.prepare is not None:
            scenario.prepare(project)
        options = dict(scenario.options)
        if options.pop("served", False):  # a browser tab of 'ragjudge serve': the login screen
            from ragjudge.tui.served import ServedApp

            app = ServedApp(project, **options)
        else:
            app = make_app(project, **options)
        async with app.run_test(size=scenario.size) as pilot:
            await pilot.pause()
            for key in scenario.keys:
                await pilot.press(key)
            await app.workers.wait_for_complete()
            await pilot.pause(0.3)
            for widget in app.screen.query(Input):
                widget.cursor_blink = False
            await pilot.pause()
            svg = out / f"{scenario.name}.svg"
            # App's own method: a served app refuses to write files, this script may
            App.save_screenshot(app, svg.name, str(out))
    png = out / f"{scenario.name}.png"
    import cairosvg

    svg.write_text(monospaced(svg.read_text(encoding="utf-8")), encoding="utf-8")
    cairosvg.svg2png(url=str(svg), write_to=str(png))
    svg.unlink()
    return png


MONO = '"DejaVu Sans Mono", "Liberation Mono", monospace'
"""Fonts cairosvg finds on a Linux machine. Textual's SVG asks for Fira Code, which is loaded from
the web and so is missing here; cairosvg then falls back to a proportional font and ignores each
span's ``textLength``, so words drift, overlap and get clipped ("damagec", "843gold")."""


def monospaced(svg: str) -> str:
    """The SVG with the terminal text in a local monospaced font, its letters spaced so that a
    cell is as wide as Textual drew it (12.2 px at 20 px; DejaVu Sans Mono's advance is 12.04)."""
    return svg.replace("font-family: Fira Code, monospace;",
                       f"font-family: {MONO}; letter-spacing: 0.16px;")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="scenarios to render (default: all)")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    from ragjudge.services.transfer.demo import build_demo

    chosen = [s for s in SCENARIOS if not args.names or s.name in args.names]
    out = args.out.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # relative database paths: the screens show "home.db", not a temp folder
        for scenario in chosen:
            if scenario.needs and importlib.util.find_spec(scenario.needs) is None:
                print(f"skipped {scenario.name}: {scenario.needs} does not exist yet")
                continue
            db = f"{scenario.name}.db"
            build_demo(db)  # a fresh demo project per scenario, so they do not see each other
            print(shoot_path := asyncio.run(shoot(scenario, db, out)))
            del shoot_path
    return 0


if __name__ == "__main__":
    sys.exit(main())
