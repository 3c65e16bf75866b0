"""The chunk in view among its neighbours (``d`` while judging): the chunks before and after it
in the same document (``doc_id``), in the document's order (see
:func:`ragjudge.services.labels.texts.document_order`). ``←``/``→`` walk along the document; the
chunk being judged stays the one on the judging screen."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from ragjudge.services.labels import texts as judging
from ragjudge.tui.widgets.literal import chunk_heading, highlighted, literal


class NeighboursScreen(ModalScreen[None]):
    """The previous, this and the next chunk of one document."""

    BINDINGS = [
        Binding("left,k", "move(-1)", "earlier"),
        Binding("right,j", "move(1)", "later"),
        Binding("escape,d,q", "close", "back"),
    ]

    def __init__(self, project, chunk_id: str, doc_id: str, terms: list[str]) -> None:  # noqa: ANN001
        super().__init__()
        self.project = project
        self.judged = chunk_id
        self.terms = terms
        self.order = judging.document_order(project, doc_id)
        self.doc_id = doc_id
        self.at = self.order.index(chunk_id) if chunk_id in self.order else 0

    def compose(self) -> ComposeResult:
        with Vertical(id="neighbours-box"):
            title = Text("The chunk in its document ")
            title.append_text(literal(self.doc_id, "bold"))
            yield Label(title, classes="prompt-title")
            with VerticalScroll(id="neighbours-scroll"):
                yield Static(id="neighbours-text")
            yield Label("← / → earlier / later in the document · Escape: back to judging",
                        classes="prompt-hint")

    def on_mount(self) -> None:
        self.show()

    def show(self) -> None:
        out = Text()
        total = len(self.order)
        for i in (self.at - 1, self.at, self.at + 1):
            if out:
                out.append("\n\n")
            if not 0 <= i < total:
                out.append("— the start of the document —" if i < 0 else "— the end of the document —",
                           style="dim")
                continue
            chunk = judging.chunk_text(self.project, self.order[i])
            head = Text(f"{i + 1} of {total}  ", style="bold" if i == self.at else "dim")
            head.append_text(literal(chunk.id, "bold cyan"))
            if chunk.id == self.judged:
                head.append("  (the chunk you are judging)", style="bold yellow")
            out.append_text(head)
            heading = chunk_heading(chunk)
            if heading.plain:
                out.append("\n")
                out.append_text(heading)
            out.append("\n")
            body = highlighted(chunk.text, self.terms)
            if i != self.at:
                body.stylize("dim")
            out.append_text(body)
        self.query_one("#neighbours-text", Static).update(out)

    def action_move(self, delta: int) -> None:
        target = self.at + delta
        if 0 <= target < len(self.order):
            self.at = target
            self.show()

    def action_close(self) -> None:
        self.dismiss(None)
