"""A data table wider than the screen that says so: a cue line under it counts the columns
hidden to the left and right ("◀ 3 more", "4 more ▶"), kept up to date as the table scrolls
(the arrow keys scroll it, or move its column cursor, which scrolls along).

It scrolls by whole columns: the first column after the fixed ones (a run's name, the settled
column) is always shown from its first character. A table that scrolled by cells showed the
rest of a half-hidden column there, pieces of intervals and ranges (".514]", "8–bo 0.578")
under the run names. Its scrollable width is widened to the next column's start, so that the
last columns can still be scrolled fully into view.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import accumulate

from rich.text import Text
from textual.geometry import Size
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

    # -- scrolling by whole columns ------------------------------------------------------

    def column_starts(self) -> list[int]:
        """Where each scrollable column starts, as a horizontal scroll offset (the first at 0)."""
        widths = [c.get_render_width(self) for c in self.ordered_columns[self.fixed_columns:]]
        return list(accumulate(widths, initial=0))[:-1] or [0]

    def snapped(self, old: float, new: float) -> int:
        """The scroll offset to use for ``new``: a column's start, the next one when scrolling
        right, the one before when scrolling left."""
        starts = self.column_starts()
        if new >= old:
            at = bisect_left(starts, new)
            return starts[min(at, len(starts) - 1)]
        return starts[max(bisect_right(starts, new) - 1, 0)]

    def validate_virtual_size(self, size: Size) -> Size:
        """The table's width, widened so that the largest scroll offset is a column's start."""
        view = self.scrollable_content_region.width
        if not view or size.width <= view:
            return size
        starts = self.column_starts()
        need = size.width - view  # the offset that shows the last column's end at the right edge
        at = bisect_left(starts, need)
        return Size(view + starts[at], size.height) if at < len(starts) else size

    def watch_scroll_x(self, old_value: float, new_value: float) -> None:
        snapped = self.snapped(old_value, new_value)
        if snapped != new_value and snapped <= self.max_scroll_x:
            self.scroll_x = snapped  # this watcher runs again for the snapped offset
            return
        super().watch_scroll_x(old_value, new_value)
        self.refresh_cue()

    def watch_virtual_size(self) -> None:
        self.call_after_refresh(self.refresh_cue)

    def on_resize(self) -> None:
        # the widening depends on the view's width: ask for it again
        width = sum(c.get_render_width(self) for c in self.ordered_columns)
        self.virtual_size = Size(width, self.virtual_size.height)
        self.call_after_refresh(self.refresh_cue)
