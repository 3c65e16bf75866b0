"""Text cut off on screen without an ellipsis.

:func:`cut_texts` compares, for every text widget (``Static``, ``Label``) of the screen shown,
the text it holds with the characters drawn in its content region. A widget whose text does not
all fit (a one-line bar whose line wraps onto rows it does not have, a panel whose last lines
fall below its border, a line cropped at the right edge) must say so with ``…`` where it cuts;
a cut without one ("a new annotator wi", "pool top") is reported with what was lost. A widget
inside a container that shows a scroll bar is left out: the bar says there is more. A key of a
footer that does not fit in it is reported too.

Whitespace is left out of the comparison (wrapping moves it), and an ellipsis may stand for any
run of the text it replaces (one line cut short or many).
"""

from __future__ import annotations

import re

from rich.cells import cell_len
from textual.content import Content
from textual.visual import RichVisual
from textual.widgets import Footer, Static
from textual.widgets._footer import FooterKey

_SPACE = re.compile(r"\s+")


def drawn_cells(app) -> list[list[str]]:
    """The screen as rows of cells (a wide character fills its first cell, the next is '')."""
    screen = app.screen
    update = screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    rows = []
    for line in update.strips:
        cells: list[str] = []
        for strip in line:
            for segment in strip:
                if segment.control:
                    continue
                for ch in segment.text:
                    cells.append(ch)
                    cells.extend([""] * (cell_len(ch) - 1))
        rows.append(cells)
    return rows


def held_text(widget: Static) -> str | None:
    """The plain text a widget holds, or None for what is not text (a table, a plot)."""
    visual = widget.visual
    if isinstance(visual, Content):
        return visual.plain
    if isinstance(visual, RichVisual):
        renderable = visual._renderable
        plain = getattr(renderable, "plain", None)
        return plain if isinstance(plain, str) else None
    return None


def fits(drawn: str, full: str) -> bool:
    """Whether ``drawn`` is ``full``, or ``full`` with runs replaced by ``…`` (an ellipsis)."""
    if drawn == full:
        return True
    if "…" not in drawn:
        return False
    at = 0
    for part in drawn.split("…"):
        found = full.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return True


def cut_texts(app, where: str = "") -> list[str]:
    """Every text widget of the screen shown whose text is cut without an ellipsis: one line
    each, the widget, what is drawn and what is lost."""
    screen = app.screen
    rows = drawn_cells(app)
    found = []
    for widget, geometry in screen._compositor.full_map.items():
        if not isinstance(widget, Static) or not widget.display or not widget.visible:
            continue
        region = geometry.region
        if not region or _in_scroll_view(widget):
            continue
        full = held_text(widget)
        if full is None:
            continue
        content = region.shrink(widget.styles.gutter).intersection(geometry.clip)
        drawn = "".join("".join(rows[y][content.x:content.right]) for y in range(content.y, content.bottom)
                        if y < len(rows))
        shown, whole = _SPACE.sub("", drawn), _SPACE.sub("", full)
        if not fits(shown, whole):
            name = f"#{widget.id}" if widget.id else type(widget).__name__
            found.append(f"{where} {name}: drawn {_SPACE.sub(' ', drawn).strip()[-60:]!r}, "
                         f"lost {_lost(full, shown)[:60]!r}")
    return found + _cut_keys(screen, where)


def _lost(full: str, shown: str) -> str:
    """What of ``full`` is not drawn, as written (``shown`` is what is drawn, without
    whitespace): the text after the drawn part, or "(differs)" when the drawing is not a
    beginning of the text."""
    if not _SPACE.sub("", full).startswith(shown):
        return "(differs)"
    seen = 0
    for at, ch in enumerate(full):
        if seen == len(shown):
            return _SPACE.sub(" ", full[at:]).strip()
        if not ch.isspace():
            seen += 1
    return ""


def _in_scroll_view(widget) -> bool:
    """Whether an ancestor of ``widget`` shows a scroll bar (what it cuts can be scrolled to)."""
    for node in widget.ancestors:
        if getattr(node, "show_vertical_scrollbar", False) or getattr(node, "show_horizontal_scrollbar", False):
            return True
    return False


def _cut_keys(screen, where: str) -> list[str]:
    """The keys of the screen's footer drawn only in part, or not at all, for want of room."""
    found = []
    for footer in screen.query(Footer):
        room = screen._compositor.full_map[footer].region if footer in screen._compositor.full_map else None
        for key in footer.query(FooterKey):
            geometry = screen._compositor.full_map.get(key)
            if room is None or geometry is None or not room.contains_region(geometry.region):
                found.append(f"{where} footer: key {key.key_display} {key.description!r} cut off")
    return found
