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

    _composed: tuple | None = None
    """what the keys were last composed from (:meth:`_shown_keys`)"""

    def _shown_keys(self) -> tuple:
        """What the keys are made of: the screen's active bindings (each key's action, text,
        whether it is enabled, its tooltip), the width and the style."""
        bindings = tuple((key, binding.action, binding.description, binding.show, binding.group,
                          binding.key_display, enabled, tooltip)
                         for key, (_, binding, enabled, tooltip) in self.screen.active_bindings.items())
        return bindings, self.size.width, self.compact, self.show_command_palette

    async def recompose(self) -> None:
        """Compose the keys again only when what they are made of changed (focus moving between
        widgets of the same bindings, a screen resumed as it was, a burst of signals: each
        composition mounts every key again)."""
        if self._composed is not None and self.is_attached and self._shown_keys() == self._composed:
            return
        await super().recompose()

    def compose(self) -> ComposeResult:
        if self._bindings_ready and self.is_attached:
            self._composed = self._shown_keys()
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
