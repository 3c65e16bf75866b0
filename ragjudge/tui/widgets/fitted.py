"""Text that says where it is cut: a panel ends its last line in "…" when its text needs more
lines than it has, and a one-line bar fits its parts into the width it gets.

A panel of the judging screen (the query, the facets and nuggets) has the rows the layout gives
it, fewer on a small terminal; Textual drops the lines that do not fit without a sign.
:class:`Fitted` draws the last line it has with an ellipsis instead, so the reader knows there
is more (the full text is a key away: the facets screen, the guidelines, a wider terminal).

A bar (the judging screen's top line, its progress line) says several things on one row.
:class:`FitBar` gets them as :class:`Part`\\ s and, when they do not fit, first tightens the
separators, then uses each part's short form (from the last part back), then cuts the parts that
may be cut (a project's name, a nugget's text) with an ellipsis, and only then cuts the line's
end: what the bar says last ("pool top 10 · blind") is not lost to a long name before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.segment import Segment
from rich.text import Text
from textual.content import Content
from textual.strip import Strip
from textual.visual import VisualType
from textual.widgets import Static

ELLIPSIS = "…"
WIDE = "  ·  "
TIGHT = " · "
MIN_CUT = 12
"""A part that may be cut keeps at least this many cells (with its ellipsis)."""


class Fitted(Static):
    """A :class:`Static` whose last line ends in "…" when its text does not all fit.

    With ``squeeze``, a text whose wrapped lines do not all fit shows each line on one row
    instead, cut with "…" (a list of facets and nuggets: one row each when rows are short,
    wrapped in full when there is room)."""

    def __init__(self, content: VisualType = "", *, squeeze: bool = False, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(content, id=id, classes=classes)
        self.squeeze = squeeze

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        super().update(content, layout=layout)
        self._squeeze()

    def on_resize(self) -> None:
        self._squeeze()

    def _squeeze(self) -> None:
        width, height = self.size
        visual = self.visual
        if not self.squeeze or not width or not height or not isinstance(visual, Content):
            return
        wrapped = len(visual.wrap(width))
        self.styles.text_wrap = "wrap" if wrapped <= height else "nowrap"
        self.styles.text_overflow = "ellipsis"

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        width, height = self.size
        if y != height - 1 or not width or not self._overflows(width, height):
            return strip
        return with_ellipsis(strip, width)

    def _overflows(self, width: int, height: int) -> bool:
        try:
            return self.visual.get_height(self.styles, width) > height  # type: ignore[arg-type]  # Textual's widgets pass their styles here too
        except Exception:  # noqa: BLE001 - a visual that cannot say its height is not cut here
            return False


def with_ellipsis(strip: Strip, width: int) -> Strip:
    """The line with "…" after its last character (in place of the last one when the line is
    full), in that character's style, padded to ``width``."""
    end = min(cell_len(strip.text.rstrip()), width - 1)
    kept = strip.crop(0, end)
    segments = [s for s in kept if s.text]
    style = segments[-1].style if segments else None
    padding = [s for s in strip if s.text]  # the line's own padding keeps its background
    line = Strip.join([kept, Strip([Segment(ELLIPSIS, style)])])
    return line.extend_cell_length(width, padding[-1].style if padding else None)


@dataclass(frozen=True)
class Part:
    """One thing a bar says."""

    text: Text
    short: Text | None = None
    """A shorter form, used when the bar is too narrow for ``text``."""
    cut: bool = False
    """Whether the part may be cut with an ellipsis to make room (a name, a nugget's text)."""


def fit_line(parts: Sequence[Part], width: int, *, wide: bool = True) -> Text:
    """``parts`` on one line of at most ``width`` cells, as :class:`FitBar` fits them (a part
    whose short form is empty is left out when its short form is used); with ``wide`` False
    the separators are always the tight ones."""
    texts = [p.text for p in parts]

    def joined() -> Text:
        return Text(TIGHT).join(t for t in texts if t.plain)

    for sep in (WIDE, TIGHT) if wide else (TIGHT,):
        line = Text(sep).join(texts)
        if line.cell_len <= width:
            return line
    for i in reversed(range(len(parts))):
        short = parts[i].short
        if short is not None:
            texts[i] = short
            if joined().cell_len <= width:
                return joined()
    over = joined().cell_len - width
    for i, part in enumerate(parts):
        if part.cut and over > 0:
            keep = max(MIN_CUT, texts[i].cell_len - over)
            if keep < texts[i].cell_len:
                over -= texts[i].cell_len - keep
                texts[i] = _cut(texts[i], keep)
    line = joined()
    return line if line.cell_len <= width else _cut(line, width)


def _cut(text: Text, width: int) -> Text:
    cut = text.copy()
    cut.truncate(max(width, 1), overflow="ellipsis")
    return cut


class FitBar(Static):
    """Lines of :class:`Part`\\ s (one for a bar), each fitted again to the width whenever
    the width changes."""

    DEFAULT_CSS = "FitBar { height: auto; text-wrap: nowrap; text-overflow: ellipsis; }"

    def __init__(self, content: Text | str = "", *, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(content, id=id, classes=classes)
        self.lines: tuple[tuple[Part, ...], ...] = ()
        self.wide = True
        """Whether a line that has the room separates its parts widely ("  ·  ")."""

    def show(self, *parts: Part | Text | str) -> None:
        """Say ``parts`` on one line (a bare text is a part with no short form, never cut)."""
        self.show_lines(parts)

    def show_lines(self, *lines: Sequence[Part | Text | str], wide: bool = True) -> None:
        """Say each of ``lines`` on a line of its own (``wide``: see :attr:`wide`)."""
        self.wide = wide
        self.lines = tuple(tuple(p if isinstance(p, Part) else Part(p if isinstance(p, Text) else Text(p))
                                 for p in line) for line in lines)
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        width = self.size.width
        fitted = [fit_line(line, width, wide=self.wide) if width else Text(TIGHT).join(p.text for p in line)
                  for line in self.lines]
        self.update(Text("\n").join(fitted), layout=len(self.lines) > 1)
