"""A footer that keeps the most important keys when the terminal is too narrow for all.

Textual's footer cuts its keys off at the right edge; on a narrow terminal the ways out
(evaluation, agreement, help, quit) came last and were lost first. Here a screen's
``FOOTER_PRIORITY`` maps actions to a rank (0 first); when the keys do not fit, those of the
highest rank are left out, the rest keep their order."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.events import Resize
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

DEFAULT_RANK = 5


class PriorityFooter(Footer):
    """A :class:`~textual.widgets.Footer` that drops its least important keys to fit."""

    def compose(self) -> ComposeResult:
        widgets = list(super().compose())
        width = self.size.width
        keys = [k for k in widgets if isinstance(k, FooterKey)]
        if not width or len(keys) != len(widgets):
            yield from widgets
            return
        ranks = getattr(self.screen, "FOOTER_PRIORITY", {})
        by_rank = sorted(range(len(keys)), key=lambda i: (ranks.get(keys[i].action, DEFAULT_RANK), i))
        kept: set[int] = set()
        used = 0
        for i in by_rank:
            need = self._width(keys[i])
            if used + need > width:
                continue
            used += need
            kept.add(i)
        yield from (k for i, k in enumerate(keys) if i in kept)

    def _width(self, key: FooterKey) -> int:
        """The cells a key takes in the footer (its text, paddings and margin)."""
        text = Text(key.key_display).cell_len
        if key.description:
            text += Text(key.description).cell_len + (1 if self.compact else 3)
        return text + (1 if self.compact else 0)

    def on_resize(self, event: Resize) -> None:
        if event.size.width != getattr(self, "_laid_out_for", None):
            self._laid_out_for = event.size.width
            self.call_after_refresh(self.recompose)
