"""Small modal prompts: one line of text (a name, a note, a comment), a yes/no question and the
query finder."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from ragjudge.safetext import for_terminal
from ragjudge.tui.widgets.literal import literal


class TextPrompt(ModalScreen[str | None]):
    """Ask for one line of text; Enter returns it, Escape returns None.

    A ``value`` to edit (a note, a facet's name) is shown as one line with its control
    characters visible, and what is saved is what was on screen.
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, *, placeholder: str = "", value: str = "",
                 allow_empty: bool = False, note: str | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.placeholder = placeholder
        self.value = value
        self.allow_empty = allow_empty
        self.note = note

    def compose(self) -> ComposeResult:
        with Vertical(classes="prompt"):
            yield Label(literal(self.title_text), classes="prompt-title")
            yield Input(value=for_terminal(self.value), placeholder=self.placeholder, id="prompt-input")
            if self.note:
                yield Label(literal(self.note), classes="prompt-hint")
            yield Label(literal("Enter to confirm · Escape to cancel"), classes="prompt-hint")

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        if not value and not self.allow_empty:
            self.notify("Type something first, or press Escape.", severity="warning")
            return
        self.dismiss(value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmPrompt(ModalScreen[bool]):
    """Ask a yes/no question; y or Enter returns True, n or Escape returns False."""

    BINDINGS = [Binding("y,enter", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(classes="prompt"):
            yield Label(literal(self.question), classes="prompt-title")
            yield Label(literal("y or Enter: yes · n or Escape: no"), classes="prompt-hint")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class FindQuery(ModalScreen[str | None]):
    """Find a query of the queue by id or text; returns its id."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, search) -> None:  # noqa: ANN001 - callable(str) -> list[(id, text)]
        super().__init__()
        self.search = search

    def compose(self) -> ComposeResult:
        with Vertical(classes="prompt finder"):
            yield Label("Find a query (id or words of its text)", classes="prompt-title")
            yield Input(placeholder="e.g. refund", id="find-input")
            yield OptionList(id="find-results")
            yield Label("Enter on a result to go there · Escape to cancel", classes="prompt-hint")

    @on(Input.Changed, "#find-input")
    def changed(self, event: Input.Changed) -> None:
        results = self.query_one("#find-results", OptionList)
        results.clear_options()
        if not event.value.strip():
            return
        for qid, text in self.search(event.value):
            line = literal(qid, "bold")
            line.append("  ")
            line.append_text(literal(text.replace("\n", " ")[:90]))
            results.add_option(Option(line, id=qid))

    @on(Input.Submitted, "#find-input")
    def submitted(self) -> None:
        results = self.query_one("#find-results", OptionList)
        if results.option_count:
            self.dismiss(results.get_option_at_index(results.highlighted or 0).id)

    @on(OptionList.OptionSelected, "#find-results")
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
