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
import html
import importlib.util
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.cells import cell_len

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
    """dana has judged six pairs of m01, commented on one, flagged another, marked a facet and a
    nugget; the screen is back on the flagged one."""
    from ragjudge.services.events import state as J_state
    from ragjudge.services.labels import events as J_events
    from ragjudge.services.labels import facets as J_facets
    from ragjudge.services.labels import queue as J_queue

    _seen("dana")(project)
    queue = J_queue.JudgingQueue(project, "dana", queries=FACET_QUERY)
    view = queue.first()
    for i, grade in enumerate((3, 1, 0, 2, 2, 1)):
        J_events.record_label(project, annotator="dana", query_id=view.query_id, chunk_id=view.chunk_id,
                       grade=grade, duration_ms=9000)
        if i == 2:
            J_events.comment_pair(project, annotator="dana", query_id=view.query_id,
                                  chunk_id=view.chunk_id, note="lost, not damaged: related at most")
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


def _to_the_answer_measures() -> tuple[str, ...]:
    """The keys that bring the overview's cursor to its last column: the default scorecard has
    the answer measures after the ranking measures once answers are judged (the demo's are)."""
    from ragjudge.services.scoring.answers import ANSWER_MEASURES
    from ragjudge.services.scoring.files import DEFAULT_MEASURES

    return ("right",) * (len(DEFAULT_MEASURES) + len(ANSWER_MEASURES) + 2)  # from the run column


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
    Scenario("judge-until-settled", {"annotator": "dana", "start": "judge", "order": "settle",
                                     "until_settled": True}, prepare=_seen("dana")),
    Scenario("login", {"served": True}),
    Scenario("answers", {"annotator": "dana", "start": "answers", "queries": FACET_QUERY},
             keys=("2", "1", "2", "down"), prepare=_seen("dana")),
    Scenario("evaluation-answers", {"annotator": "dana"}, keys=("e", *_to_the_answer_measures())),
    Scenario("agreement-answers", {"annotator": "dana"}, keys=("a", "w")),
]


async def shoot(scenario: Scenario, db: str, out: Path, covered: set[int]) -> Path:
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
            for key in scenario.keys:  # each key once the screen has what the last one asked for
                await pilot.press(key)
                await pilot.pause()
                await app.workers.wait_for_complete()
                await pilot.pause()
            await pilot.pause(0.3)
            for widget in app.screen.query(Input):
                widget.cursor_blink = False
            await pilot.pause()
            svg = out / f"{scenario.name}.svg"
            # App's own method: a served app refuses to write files, this script may
            App.save_screenshot(app, svg.name, str(out))
    png = out / f"{scenario.name}.png"
    import cairosvg

    drawn, missing = draw_cells(monospaced(svg.read_text(encoding="utf-8")), covered)
    if missing:
        print(f"warning: {png.name}: {FONT} has no glyph for "
              + ", ".join(f"{ch} (U+{ord(ch):04X})" for ch in sorted(missing)), file=sys.stderr)
    svg.write_text(drawn, encoding="utf-8")
    cairosvg.svg2png(url=str(svg), write_to=str(png))
    svg.unlink()
    return png


FONT = "DejaVu Sans Mono"
"""The font the text is set in: monospaced, with a cell as wide as Textual's (its advance is
12.04 px at 20 px; letters are spaced out to Textual's 12.2). Textual's SVG asks for Fira Code,
which it loads from the web; cairosvg cannot, and fell back to a proportional font whose words
drifted and overlapped ("damagec", "843gold"). Debian and Ubuntu: apt-get install
fonts-dejavu-core; Fedora: dejavu-sans-mono-fonts; macOS: brew install --cask font-dejavu."""

CELL_W, CELL_H, ASCENT = 12.2, 24.4, 18.5
"""A cell of Textual's SVG (font size 20): its width and height, and its top above the baseline
of its text (the background rectangles start 1.5 px below the row's top, the baseline 20 px)."""


def check_font() -> set[int]:
    """The code points :data:`FONT` has glyphs for; a clear message and exit when it is missing
    (cairosvg would set every picture in some other font)."""
    import subprocess

    try:
        found = subprocess.run(["fc-match", "--format=%{family}\n%{file}", FONT], capture_output=True,
                               text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        found = []
    if len(found) < 2 or FONT not in found[0]:
        sys.exit(f"make_screenshots: the pictures need the font {FONT!r}, which fontconfig does "
                 f"not find (fc-match gives {found[0] if found else 'nothing'!r}). "
                 "Debian or Ubuntu: apt-get install fonts-dejavu-core; Fedora: "
                 "dnf install dejavu-sans-mono-fonts. Then run this script again.")
    ranges = subprocess.run(["fc-query", "--format=%{charset}", found[1]], capture_output=True,
                            text=True, check=True).stdout.split()
    covered: set[int] = set()
    for part in ranges:
        low, _, high = part.partition("-")
        covered.update(range(int(low, 16), int(high or low, 16) + 1))
    return covered


def monospaced(svg: str) -> str:
    """The SVG with the terminal text in :data:`FONT`, its letters spaced so that a cell is as
    wide as Textual drew it."""
    return svg.replace("font-family: Fira Code, monospace;",
                       f'font-family: "{FONT}", monospace; letter-spacing: 0.16px;')


# -- lines, blocks and braille drawn as shapes --------------------------------------------------
#
# A font draws a box-drawing or block character within its own line height, not the row's, and
# never quite to a cell's edge: borders showed seams between rows and cells, and an input's
# outline ("▊ … ▎") sat off its background. Braille (the plots' points) has no glyph in most
# monospaced fonts at all. A terminal draws these itself; so does this script: each becomes
# rectangles, arcs or dots filling its cell exactly, in the colour of its text.

LIGHT, HEAVY, GAP = 1.6, 3.4, 2.6
"""Thickness of a light and a heavy line, and the half gap of a double line (px)."""
WEIGHTS = {"LIGHT": 1, "SINGLE": 1, "HEAVY": 2, "DOUBLE": 3}
ARMS = {"UP": "n", "DOWN": "s", "LEFT": "w", "RIGHT": "e", "VERTICAL": "ns", "HORIZONTAL": "we"}
OPPOSITE = {"n": "s", "s": "n", "w": "e", "e": "w"}
DASHES = {"DOUBLE": 2, "TRIPLE": 3, "QUADRUPLE": 4}


def box_arms(ch: str) -> tuple[dict[str, int], int, bool] | None:
    """A box-drawing character as its arms (direction -> 1 light, 2 heavy, 3 double), the number
    of dashes a line of it has (1: solid) and whether it is an arc; None for a diagonal or any
    other character. Read from the character's Unicode name ("BOX DRAWINGS DOWN LIGHT AND RIGHT
    HEAVY"): a weight before directions applies to those that follow, one after them to those
    before."""
    import unicodedata

    name = unicodedata.name(ch, "")
    if not name.startswith("BOX DRAWINGS ") or "DIAGONAL" in name:
        return None
    words = name[len("BOX DRAWINGS "):].split()
    dashes = 1
    if "DASH" in words:
        at = words.index("DASH")
        dashes = DASHES[words[at - 1]]
        del words[at - 1:at + 1]
    arc = "ARC" in words
    arms: dict[str, int] = {}
    pending: list[str] = []
    weight = None
    for word in words:
        if word in ARMS:
            if weight is not None:
                arms.update(dict.fromkeys(ARMS[word], weight))
            else:
                pending += ARMS[word]
        elif word in WEIGHTS:
            if pending:
                arms.update(dict.fromkeys(pending, WEIGHTS[word]))
                pending, weight = [], None
            else:
                weight = WEIGHTS[word]
    return arms, dashes, arc


def _rect(x: float, y: float, w: float, h: float, cls: str, opacity: float = 1.0) -> str:
    extra = f' fill-opacity="{opacity:g}"' if opacity < 1 else ""
    return (f'<rect class="{cls}" x="{x:.2f}" y="{y:.2f}" width="{w:.2f}" height="{h:.2f}" '
            f'shape-rendering="crispEdges"{extra}/>')


def _arm(direction: str, cx: float, cy: float, x: float, y: float, start: float, offset: float,
         t: float, cls: str) -> str:
    """One straight line of an arm: from ``start`` (along the arm, from the centre) to the
    cell's edge, ``offset`` across it, ``t`` thick (overlapping the next cell a little)."""
    if direction in "we":
        y0 = cy + offset - t / 2
        if direction == "e":
            return _rect(cx + start - t / 2, y0, x + CELL_W - cx - start + t / 2 + 0.3, t, cls)
        return _rect(x - 0.3, y0, cx - start - x + t / 2 + 0.3, t, cls)
    x0 = cx + offset - t / 2
    if direction == "s":
        return _rect(x0, cy + start - t / 2, t, y + CELL_H - cy - start + t / 2 + 0.3, cls)
    return _rect(x0, y - 0.3, t, cy - start - y + t / 2 + 0.3, cls)


def _double_start(direction: str, side: str, arms: dict[str, int]) -> float:
    """Where a double arm's line on ``side`` starts, from the centre along the arm: short of
    the centre where a perpendicular arm turns off on that side, beyond it at an outer corner."""
    if side in arms:
        return GAP
    if OPPOSITE[direction] in arms:
        return 0.0
    return -GAP if OPPOSITE[side] in arms else 0.0


def box_shapes(ch: str, x: float, y: float, cls: str) -> list[str] | None:
    parsed = box_arms(ch)
    if parsed is None:
        return None
    arms, dashes, arc = parsed
    cx, cy = x + CELL_W / 2, y + CELL_H / 2
    if arc:
        return [_arc(arms, cx, cy, cls)]
    if dashes > 1:
        return _dashes(arms, dashes, x, y, cx, cy, cls)
    out = []
    doubles = any(w == 3 for w in arms.values())
    for direction, weight in arms.items():
        sides = ("n", "s") if direction in "we" else ("w", "e")
        sign = {"n": -1, "s": 1, "w": -1, "e": 1}
        if weight == 3:
            for side in sides:
                start = _double_start(direction, side, arms)
                out.append(_arm(direction, cx, cy, x, y, start, sign[side] * GAP, LIGHT, cls))
            continue
        crossing = any(arms.get(s) == 3 for s in sides)
        start = GAP if doubles and crossing and OPPOSITE[direction] not in arms else 0.0
        out.append(_arm(direction, cx, cy, x, y, start, 0.0, HEAVY if weight == 2 else LIGHT, cls))
    return out


def _dashes(arms: dict[str, int], n: int, x: float, y: float, cx: float, cy: float,
            cls: str) -> list[str]:
    t = HEAVY if 2 in arms.values() else LIGHT
    if "e" in arms:
        step = CELL_W / n
        return [_rect(x + i * step + step * 0.2, cy - t / 2, step * 0.6, t, cls) for i in range(n)]
    step = CELL_H / n
    return [_rect(cx - t / 2, y + i * step + step * 0.2, t, step * 0.6, cls) for i in range(n)]


def _arc(arms: dict[str, int], cx: float, cy: float, cls: str) -> str:
    """A rounded corner (╭╮╰╯): a quarter ring drawn for ╭ and mirrored into place."""
    r, t = CELL_W / 2, LIGHT
    sx = -1 if "w" in arms else 1
    sy = -1 if "n" in arms else 1
    far_x, far_y = cx + CELL_W / 2 + 0.3, cy + CELL_H / 2 + 0.3
    path = (f"M {far_x:.2f} {cy - t / 2:.2f} L {cx + r:.2f} {cy - t / 2:.2f} "
            f"A {r + t / 2:.2f} {r + t / 2:.2f} 0 0 0 {cx - t / 2:.2f} {cy + r:.2f} "
            f"L {cx - t / 2:.2f} {far_y:.2f} L {cx + t / 2:.2f} {far_y:.2f} L {cx + t / 2:.2f} {cy + r:.2f} "
            f"A {r - t / 2:.2f} {r - t / 2:.2f} 0 0 1 {cx + r:.2f} {cy + t / 2:.2f} "
            f"L {far_x:.2f} {cy + t / 2:.2f} Z")
    transform = f"matrix({sx} 0 0 {sy} {cx * (1 - sx):.2f} {cy * (1 - sy):.2f})"
    return f'<path class="{cls}" d="{path}" transform="{transform}"/>'


_QUARTERS = {"UL": (0, 0), "UR": (0.5, 0), "LL": (0, 0.5), "LR": (0.5, 0.5)}
_QUADRANTS = {"▖": "LL", "▗": "LR", "▘": "UL", "▙": "UL LL LR", "▚": "UL LR", "▛": "UL UR LL",
              "▜": "UL UR LR", "▝": "UR", "▞": "UR LL", "▟": "UR LL LR"}


def block_boxes(ch: str) -> list[tuple[float, float, float, float, float]] | None:
    """A block element (U+2580–U+259F) as (x, y, width, height, opacity) fractions of its
    cell; None for any other character."""
    cp = ord(ch)
    if ch == "▀":
        return [(0, 0, 1, 0.5, 1)]
    if 0x2581 <= cp <= 0x2588:  # lower one eighth .. full block
        n = cp - 0x2580
        return [(0, 1 - n / 8, 1, n / 8, 1)]
    if 0x2589 <= cp <= 0x258F:  # left seven eighths .. left one eighth
        return [(0, 0, (0x2590 - cp) / 8, 1, 1)]
    if ch == "▐":
        return [(0.5, 0, 0.5, 1, 1)]
    if ch in "░▒▓":
        return [(0, 0, 1, 1, 0.25 * (cp - 0x2590))]
    if ch == "▔":
        return [(0, 0, 1, 1 / 8, 1)]
    if ch == "▕":
        return [(7 / 8, 0, 1 / 8, 1, 1)]
    if ch in _QUADRANTS:
        return [(*_QUARTERS[q], 0.5, 0.5, 1) for q in _QUADRANTS[ch].split()]
    return None


def braille_dots(ch: str, x: float, y: float, cls: str) -> list[str] | None:
    """A braille pattern (U+2800–U+28FF, the plots' points) as its dots: bits 1-3 and 7 the
    left column from the top, 4-6 and 8 the right one."""
    cp = ord(ch) - 0x2800
    if not 0 <= cp <= 0xFF:
        return None
    places = ((0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (0, 3), (1, 3))
    r = CELL_W / 7
    return [f'<circle class="{cls}" cx="{x + (col + 0.5) * CELL_W / 2:.2f}" '
            f'cy="{y + (row + 0.5) * CELL_H / 4:.2f}" r="{r:.2f}"/>'
            for bit, (col, row) in enumerate(places) if cp >> bit & 1]


def cell_shapes(ch: str, x: float, y: float, cls: str) -> list[str] | None:
    """The shapes that draw ``ch`` in the cell at (x, y) (its top left), or None for a
    character the font draws."""
    boxes = block_boxes(ch)
    if boxes is not None:
        return [_rect(x + bx * CELL_W - 0.15, y + by * CELL_H - 0.15, bw * CELL_W + 0.3,
                      bh * CELL_H + 0.3, cls, opacity) for bx, by, bw, bh, opacity in boxes]
    dots = braille_dots(ch, x, y, cls)
    return dots if dots is not None else box_shapes(ch, x, y, cls)


_TEXT = re.compile(r'<text class="([^"]+)" x="([0-9.]+)" y="([0-9.]+)" textLength="[0-9.]+" '
                   r'clip-path="[^"]*">([^<]*)</text>')


def draw_cells(svg: str, covered: set[int]) -> tuple[str, set[str]]:
    """``svg`` with every line, block and braille character drawn as shapes (the text keeps a
    space in its place); also the characters left to the font that it has no glyph for."""
    missing: set[str] = set()

    def shapes(match: re.Match) -> str:
        cls, x0, baseline, body = match[1], float(match[2]), float(match[3]), html.unescape(match[4])
        drawn, kept, x = [], [], x0
        for ch in body:
            made = cell_shapes(ch, x, baseline - ASCENT, cls)
            if made is None:
                kept.append(ch)
                if not ch.isspace() and ord(ch) not in covered:
                    missing.add(ch)
            else:
                drawn += made
                kept.append(" " * cell_len(ch))
            x += CELL_W * cell_len(ch)
        text = "".join(kept)
        if not drawn:
            return match[0]
        if text.strip():
            escaped = html.escape(text, quote=False).replace(" ", "&#160;")
            drawn.append(match[0].replace(f">{match[4]}</text>", f">{escaped}</text>"))
        return "".join(drawn)

    return _TEXT.sub(shapes, svg), missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="scenarios to render (default: all)")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    from ragjudge.services.transfer.demo import build_demo

    covered = check_font()
    chosen = [s for s in SCENARIOS if not args.names or s.name in args.names]
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # relative database paths: the screens show "home.db", not a temp folder
        for scenario in chosen:
            if scenario.needs and importlib.util.find_spec(scenario.needs) is None:
                print(f"skipped {scenario.name}: {scenario.needs} does not exist yet")
                continue
            db = f"{scenario.name}.db"
            build_demo(db)  # a fresh demo project per scenario, so they do not see each other
            print(asyncio.run(shoot(scenario, db, out, covered)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
