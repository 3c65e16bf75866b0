"""Small modal prompts: one line of text (a name, a note, a comment), a yes/no question, the
query finder, the question before a session starts under an unknown name, and a refusal."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList
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


class Refused(ModalScreen[None]):
    """A service's refusal (a lead's setting, a lead's screen), shown where the keys go: what is
    typed next -- the name of a measure after a refused ``+`` -- stays here instead of reaching
    the screen below as commands. Enter or Escape closes it."""

    BINDINGS = [Binding("enter,escape", "close", "Close")]

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    def compose(self) -> ComposeResult:
        with Vertical(classes="prompt", id="refused"):
            yield Label(literal(self.message), classes="prompt-title")
            yield Label(literal("Enter or Escape closes this; nothing was changed."),
                        classes="prompt-hint")

    def action_close(self) -> None:
        self.dismiss(None)


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


class NameChoice(ModalScreen[str | None]):
    """Before a session starts under a name the project does not know: use the known name it
    most likely means (``u``), create the new one (``c``), or cancel (Escape). Returns the
    name to use, or None."""

    BINDINGS = [Binding("u", "use", "Use the known name"), Binding("c", "create", "Create"),
                Binding("escape", "cancel", "Cancel")]

    DEFAULT_CSS = """
    NameChoice #name-buttons { height: auto; margin-top: 1; }
    NameChoice #name-buttons Button { margin-right: 2; }
    """

    def __init__(self, name: str, nearest: str | None, known: list[str]) -> None:
        super().__init__()
        self.typed = name
        self.nearest = nearest
        self.known = known

    def compose(self) -> ComposeResult:
        question = f"No annotator {self.typed!r} in this project."
        if self.nearest is not None:
            question += f" Did you mean {self.nearest!r}?"
        shown = ", ".join(self.known[:12]) + (", …" if len(self.known) > 12 else "")
        with Vertical(classes="prompt"):
            yield Label(literal(question), classes="prompt-title", id="name-question")
            yield Label(literal(f"Annotators of this project: {shown}"), classes="prompt-hint")
            with Horizontal(id="name-buttons"):
                if self.nearest is not None:
                    yield Button(literal(f"use {self.nearest}"), id="name-use", variant="primary")
                yield Button(literal(f"create {self.typed}"), id="name-create")
                yield Button("cancel", id="name-cancel")
            keys = ("u: use the known name · " if self.nearest is not None else "") + \
                "c: create the new name (a new annotator with an empty history) · Escape: cancel"
            yield Label(literal(keys), classes="prompt-hint")

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        {"name-use": self.action_use, "name-create": self.action_create,
         "name-cancel": self.action_cancel}[event.button.id or "name-cancel"]()

    def action_use(self) -> None:
        if self.nearest is not None:
            self.dismiss(self.nearest)

    def action_create(self) -> None:
        self.dismiss(self.typed)

    def action_cancel(self) -> None:
        self.dismiss(None)
