"""The project's judging guidelines (Markdown), on ``h`` and once before a new annotator's first pair."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Markdown

from ragjudge.tui.widgets.literal import clean

NO_GUIDELINES = (
    "# No guidelines yet\n\n"
    "This project has no judging guidelines. A lead sets them with "
    "`ragjudge init --guidelines FILE` or `ragjudge import guidelines FILE`.\n\n"
    "Until then: judge whether the chunk helps answer the query, using the level descriptions "
    "of the scale shown beside every pair."
)


class GuidelinesScreen(ModalScreen[None]):
    """Shows the guidelines; Escape, Enter, ``h`` or ``q`` closes."""

    BINDINGS = [
        Binding("escape,enter,h,q", "close", "Close"),
    ]

    def __init__(self, markdown: str | None, *, first_time: bool = False) -> None:
        super().__init__()
        self.markdown = markdown or NO_GUIDELINES
        self.first_time = first_time

    def compose(self) -> ComposeResult:
        with Vertical(id="guidelines-box"):
            if self.first_time:
                yield Label("Welcome! Please read the judging guidelines before your first pair.",
                            id="guidelines-welcome")
            with VerticalScroll(id="guidelines-scroll"):
                # Markdown renders the project's own document; it never executes or fetches
                # anything. Control characters are shown, not passed on: every new annotator
                # sees this document, and it comes from a file someone else wrote.
                yield Markdown(clean(self.markdown), id="guidelines-text")
            yield Label("Enter or Escape to close · h opens this again while judging",
                        classes="prompt-hint")

    def on_mount(self) -> None:
        self.query_one("#guidelines-scroll").focus()

    def action_close(self) -> None:
        self.dismiss(None)
