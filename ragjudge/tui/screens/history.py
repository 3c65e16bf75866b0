"""The annotator's own labels (``l`` while judging): every pair they labelled, newest first,
as it stands now, with ⚑ where they flagged it and ✎ where they commented on it. Enter on one
goes back to that pair to relabel it. A long session's list is read a page at a time: the
last line loads the next page."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from ragjudge.services.events import state as judging
from ragjudge.tui.widgets.literal import literal

PAGE = 200
MORE = "more"


class HistoryScreen(ModalScreen[tuple[str, str] | None]):
    """Dismisses with the (query id, chunk id) chosen, or None."""

    BINDINGS = [Binding("escape,l,q", "cancel", "back")]

    def __init__(self, project, annotator: str, scale) -> None:  # noqa: ANN001 - Project, Scale
        super().__init__()
        self.project = project
        self.annotator = annotator
        self.scale = scale
        self.entries: list[judging.HistoryEntry] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="history-box"):
            title = Text("Your labels, newest first — ")
            title.append_text(literal(self.annotator, "bold"))
            yield Label(title, classes="prompt-title")
            yield OptionList(id="history-list")
            yield Label("⚑ flagged · ✎ commented · Enter: go to the pair to relabel it · Escape: back",
                        classes="prompt-hint")

    def on_mount(self) -> None:
        self._load_page()
        options = self.query_one("#history-list", OptionList)
        if options.option_count:
            options.highlighted = 0
        options.focus()

    def _load_page(self) -> None:
        options = self.query_one("#history-list", OptionList)
        if options.option_count and options.get_option_at_index(options.option_count - 1).id == MORE:
            options.remove_option(MORE)
        page = judging.label_history(self.project, self.annotator, limit=PAGE + 1,
                                     offset=len(self.entries))
        more = len(page) > PAGE
        page = page[:PAGE]
        start = len(self.entries)
        self.entries.extend(page)
        options.add_options([Option(self._line(e), id=str(start + i)) for i, e in enumerate(page)])
        if more:
            options.add_option(Option(Text("… older labels: Enter loads the next page", style="dim"),
                                      id=MORE))
        if not self.entries:
            options.add_option(Option(Text("You have not labelled a pair yet.", style="dim"),
                                      disabled=True))

    def _line(self, entry: judging.HistoryEntry) -> Text:
        state = entry.state
        line = Text()
        if state.grade is not None:
            name = self.scale.level(state.grade).name if self.scale.contains(state.grade) else "off the scale"
            line.append(f"{state.grade} ", style="bold")
            line.append_text(literal(name))
        elif state.skipped:
            line.append("skipped", style="yellow")
        else:
            line.append("no grade (undone)", style="dim")
        line.pad_right(max(0, 22 - line.cell_len))
        marks = entry.marks
        line.append("⚑" if marks.flagged else " ", style="bold red")
        line.append("✎" if marks.comment is not None else " ", style="bold")
        line.append("  ")
        if state.created_at is not None:
            line.append(f"{state.created_at:%m-%d %H:%M}  ", style="dim")
        line.append_text(literal(entry.query_id, "bold cyan"))
        line.append(" / ")
        line.append_text(literal(entry.chunk_id, "bold"))
        line.append("  ")
        line.append_text(literal(entry.query_text[:80], "dim"))
        line.no_wrap = True
        line.overflow = "ellipsis"
        return line

    @on(OptionList.OptionSelected, "#history-list")
    def chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id == MORE:
            at = event.option_index
            self._load_page()
            self.query_one("#history-list", OptionList).highlighted = at
            return
        if event.option.id is None:
            return
        entry = self.entries[int(event.option.id)]
        self.dismiss((entry.query_id, entry.chunk_id))

    def action_cancel(self) -> None:
        self.dismiss(None)
