"""A data table wider than the screen that says so: a cue line under it counts the columns
hidden to the left and right ("◀ 3 more", "4 more ▶"), kept up to date as the table scrolls
(the arrow keys scroll it, or move its column cursor, which scrolls along)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable, Static


class WideTable(DataTable):
    """A :class:`DataTable` that keeps the :class:`Static` ``#{id}-cue`` telling how many
    columns are out of view on either side."""

    def hidden(self) -> tuple[int, int]:
        """How many columns are cut off (wholly or in part) on the left and on the right."""
        columns = self.ordered_columns
        widths = [c.get_render_width(self) for c in columns]
        fixed = sum(widths[: self.fixed_columns])
        view = self.scrollable_content_region.width
        if not view:
            return 0, 0
        left = right = 0
        x = fixed
        scroll = int(self.scroll_x)
        for width in widths[self.fixed_columns:]:
            start, end = x - scroll, x + width - scroll
            if start < fixed:
                left += 1
            elif end > view:
                right += 1
            x += width
        return left, right

    def cue(self) -> Text:
        left, right = self.hidden()
        out = Text()
        if left:
            out.append(f"◀ {left} more", style="bold")
        if left or right:
            out.append("   ← → scroll   ", style="dim")
        if right:
            out.append(f"{right} more ▶", style="bold")
        return out

    def refresh_cue(self) -> None:
        if not self.id or not self.is_attached:
            return
        try:
            target = self.screen.query_one(f"#{self.id}-cue", Static)
        except Exception:  # noqa: BLE001 - no cue line for this table
            return
        target.update(self.cue())

    def watch_scroll_x(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_x(old_value, new_value)
        self.refresh_cue()

    def watch_virtual_size(self) -> None:
        self.call_after_refresh(self.refresh_cue)

    def on_resize(self) -> None:
        self.call_after_refresh(self.refresh_cue)
