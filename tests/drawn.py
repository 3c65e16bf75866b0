"""What a Textual app really draws: the characters of the composited screen, toasts included.

The compositor's strips are what the driver turns into terminal output; Textual's own control
segments (cursor moves) are left out, so any control character in what is left came from a
widget's text and would reach the terminal.
"""

from __future__ import annotations

from rich.segment import Segment

from ragjudge.safetext import is_clean


def drawn_segments(app) -> list[list[Segment]]:
    """The segments of every line of the screen as the next full refresh would write them."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    return [[segment for strip in line for segment in strip if not segment.control]
            for line in update.strips]


def drawn_text(app) -> str:
    """The characters on screen, one line per screen row."""
    return "\n".join("".join(segment.text for segment in line) for line in drawn_segments(app))


def drawn_links(app) -> list[str]:
    """Every hyperlink (OSC 8) the screen would write."""
    return [segment.style.link for line in drawn_segments(app) for segment in line
            if segment.style is not None and segment.style.link]


def assert_clean_screen(app, where: str = "") -> str:
    """The screen's text, after checking it holds no control character and no link."""
    text = drawn_text(app)
    bad = sorted({f"U+{ord(ch):04X}" for ch in text if not is_clean(ch, multiline=True)})
    assert not bad, f"{where}: raw control characters on screen: {bad}"
    assert "\t" not in text, where
    assert drawn_links(app) == [], f"{where}: links on screen: {drawn_links(app)}"
    return text
