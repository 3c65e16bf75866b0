"""The ``?`` screen: every key of the screen it was opened from, from that screen's bindings."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static


HelpRow = tuple[str, str | Text, str | Text]
"""A key, its action's name and what it does; text from the project (a grade's name) as a
:class:`~rich.text.Text`, never parsed as markup."""


def key_table(rows: Sequence[HelpRow]) -> Table:
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False, expand=True)
    table.add_column("key", style="bold cyan", no_wrap=True)
    table.add_column("action", style="bold")
    table.add_column("what it does")
    for key, action, text in rows:
        table.add_row(key, action, text)
    return table


class HelpScreen(ModalScreen[None]):
    """A table of keys: ``rows`` are (key, name, explanation)."""

    BINDINGS = [Binding("escape,q,question_mark,enter", "close", "Close")]

    def __init__(self, title: str, rows: Sequence[HelpRow]) -> None:
        super().__init__()
        self.title_text = title
        self.rows = rows

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Label(self.title_text, classes="prompt-title")
            with VerticalScroll():
                yield Static(key_table(self.rows), id="help-table")
            yield Label("ctrl+p lists every action too · Escape to close", classes="prompt-hint")

    def action_close(self) -> None:
        self.dismiss(None)
