"""Facets and nuggets of a query (``g`` while judging).

Facets are aspects of the information need; nuggets are atomic facts a good answer needs, each
vital or okay (TREC RAG 2024); claims (nuggets of kind ``claim``, added with ``c``) are the
reference answer's claims of Context Recall, listed after the nuggets and marked the same way.
While a chunk is on screen, ``space`` toggles whether it covers the highlighted facet, and
``space`` / ``f`` / ``p`` / ``x`` set how fully it supports the highlighted nugget or claim.
Every mark is an append-only event of this annotator.

The highlighted line is the one piece of state a key acts on, and the line under the list names
it ("keys act on: nugget …"); a refresh of the list keeps the highlight on the same facet,
nugget or claim, wherever it moved.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from ragjudge.errors import RagjudgeError
from ragjudge.services.labels import facets as judging
from ragjudge.tui.widgets.footer import PriorityFooter
from ragjudge.tui.widgets.literal import literal

FACET_KEYS = (
    ("space", "toggle_mark", "toggle", "Facet: this chunk covers it or not. Nugget: none → partial → full."),
    ("f", "support('full')", "full", "The chunk fully supports the highlighted nugget or claim."),
    ("p", "support('partial')", "partial", "The chunk partly supports the highlighted nugget or claim."),
    ("x", "support('none')", "none", "The chunk does not support the highlighted nugget or claim."),
    ("a", "add_facet", "add facet", "Add a facet (an aspect of the information need)."),
    ("b", "add_nugget", "add nugget", "Add a nugget (an atomic fact a good answer needs)."),
    ("c", "add_claim", "add claim", "Add a claim of the reference answer (Context Recall counts "
     "the chunks that support it)."),
    ("r", "rename", "rename", "Rename the highlighted facet or edit the nugget's text."),
    ("v", "vital", "vital/okay", "Switch the highlighted nugget between vital and okay."),
    ("d,delete", "remove", "remove", "Remove the highlighted facet or nugget (its marks are kept)."),
    ("escape,g", "close", "back", "Back to judging."),
)

SUPPORT_CYCLE = {"none": "partial", "partial": "full", "full": "none"}
MARKS = {"full": ("● full   ", "green"), "partial": ("◐ partial", "yellow"), "none": ("○ none   ", "dim")}


class FacetsScreen(ModalScreen[None]):
    """Edit the query's facets and nuggets and mark what the chunk in view covers."""

    BINDINGS = [Binding(keys, action, name, tooltip=text, priority=keys != "space")
                for keys, action, name, text in FACET_KEYS]
    FOOTER_PRIORITY = {"close": 0, "toggle": 1, "support('full')": 1, "support('partial')": 1,
                       "support('none')": 1, "add_facet": 2, "add_nugget": 2, "add_claim": 2}
    """What a narrow footer keeps first (see PriorityFooter); the hint under the list names
    every key."""

    def __init__(self, project, annotator: str, query_id: str, chunk_id: str | None) -> None:  # noqa: ANN001
        super().__init__()
        self.project = project
        self.annotator = annotator
        self.query_id = query_id
        self.chunk_id = chunk_id
        self._named: dict[str, tuple[str, str]] = {}
        """option id -> (facet | nugget | claim, its name), as the list shows them"""

    def compose(self) -> ComposeResult:
        with Vertical(id="facets-box"):
            title = Text("Facets & nuggets of query ")
            title.append_text(literal(self.query_id, "bold"))
            if self.chunk_id is not None:
                title.append(" — marks for chunk ")
                title.append_text(literal(self.chunk_id, "bold"))
            else:  # no chunk in view (an answer citing nothing): definitions only
                title.append(" — no chunk in view: add, edit and remove only")
            yield Label(title, classes="prompt-title")
            yield OptionList(id="facet-list")
            yield Static(id="facet-target", classes="prompt-hint")
            yield Static(id="facet-hint", classes="prompt-hint")
        yield PriorityFooter(compact=True)

    def on_mount(self) -> None:
        self.refresh_list()
        self.query_one("#facet-hint", Static).update(Text(
            "space toggles the highlighted facet or cycles the nugget's support; "
            "a/b/c add a facet/nugget/claim; r rename; v vital/okay; d remove; Esc back"))
        self.query_one("#facet-list").focus()

    def refresh_list(self, keep: str | None = None) -> None:
        """Read the facets and nuggets again; the highlight stays on the same line (``keep``,
        else the one highlighted), by its id, wherever it moved."""
        options = self.query_one("#facet-list", OptionList)
        highlighted = options.highlighted
        if keep is None and highlighted is not None:
            keep = options.get_option_at_index(highlighted).id
        options.clear_options()
        facets = judging.facets_for(self.project, self.query_id, annotator=self.annotator,
                                    chunk_id=self.chunk_id)
        nuggets = judging.nuggets_for(self.project, self.query_id, annotator=self.annotator,
                                      chunk_id=self.chunk_id)
        self._named = {f"f:{f.id}": ("facet", f.name) for f in facets}
        self._named |= {f"n:{n.id}": ("claim" if n.kind == "claim" else "nugget", n.text) for n in nuggets}
        options.add_option(Option(Text("FACETS — does this chunk cover it?", style="bold"), disabled=True))
        if not facets:
            options.add_option(Option(Text("  none yet: a adds one", style="dim"), disabled=True))
        for f in facets:
            line = Text("  ")
            line.append("[x] " if f.covered else "[ ] ", style="green bold" if f.covered else "dim")
            line.append_text(literal(f.name))
            options.add_option(Option(line, id=f"f:{f.id}"))
        options.add_option(Option(Text("NUGGETS — how fully does this chunk support it?", style="bold"),
                                  disabled=True))
        plain = [n for n in nuggets if n.kind != "claim"]
        claims = [n for n in nuggets if n.kind == "claim"]
        if not plain:
            options.add_option(Option(Text("  none yet: b adds one", style="dim"), disabled=True))
        self._add_nuggets(options, plain)
        if claims:  # claims of the reference answer: marked as nuggets are (space, f, p, x)
            options.add_option(Option(Text("CLAIMS of the reference answer — how fully does this "
                                           "chunk support it?", style="bold"), disabled=True))
            self._add_nuggets(options, claims)
        options.highlighted = self._kept(options, keep, highlighted)
        self._show_target()

    @staticmethod
    def _kept(options: OptionList, keep: str | None, highlighted: int | None) -> int | None:
        """The line to highlight after a refresh: ``keep``'s, else (it was removed) the nearest
        selectable line at or above where the highlight was, else the first selectable one."""
        if keep is not None:
            try:
                return options.get_option_index(keep)
            except Exception:  # noqa: BLE001 - the option is gone (removed)
                pass
        selectable = [i for i in range(options.option_count) if not options.get_option_at_index(i).disabled]
        if not selectable:
            return None
        if highlighted is not None:
            at_or_above = [i for i in selectable if i <= highlighted]
            if at_or_above:
                return at_or_above[-1]
        return selectable[0]

    def on_option_list_option_highlighted(self, _event: OptionList.OptionHighlighted) -> None:
        self._show_target()

    def _show_target(self) -> None:
        """The line that says what the keys act on, from the highlight they read."""
        target = Text("keys act on: ", style="bold")
        options = self.query_one("#facet-list", OptionList)
        selected = None if options.highlighted is None else options.get_option_at_index(options.highlighted)
        if selected is None or selected.disabled or selected.id not in self._named:
            target.append("nothing (highlight a facet, nugget or claim)", style="dim")
        else:
            kind, name = self._named[selected.id]
            target.append(f"{kind} “")
            target.append_text(literal(name))
            target.append("”")
            if self.chunk_id is not None:
                target.append("  ·  chunk ")
                target.append_text(literal(self.chunk_id, "bold"))
        self.query_one("#facet-target", Static).update(target)

    @staticmethod
    def _add_nuggets(options: OptionList, nuggets: list[judging.NuggetView]) -> None:
        for n in nuggets:
            mark, style = MARKS.get(n.support, MARKS["none"])
            line = Text("  ")
            line.append(mark + " ", style=style)
            line.append("vital " if n.importance == "vital" else "okay  ",
                        style="bold" if n.importance == "vital" else "dim")
            line.append_text(literal(n.text))
            options.add_option(Option(line, id=f"n:{n.id}"))

    def _selected(self) -> tuple[str, int] | None:
        options = self.query_one("#facet-list", OptionList)
        if options.highlighted is None:
            return None
        option = options.get_option_at_index(options.highlighted)
        if option.disabled or not option.id:
            return None
        kind, _, ident = option.id.partition(":")
        return kind, int(ident)

    def _do(self, fn: Callable[..., object], *args: Any, **kwargs: Any) -> bool:
        try:
            fn(*args, **kwargs)
            return True
        except RagjudgeError as exc:
            self.notify(str(exc), severity="error")
            return False

    def _no_chunk(self) -> bool:
        if self.chunk_id is None:
            self.notify("No chunk is in view: marks need one. Here you can add, edit and remove.",
                        severity="warning")
        return self.chunk_id is None

    def action_toggle_mark(self) -> None:
        selected = self._selected()
        if selected is None or self._no_chunk():
            return
        kind, ident = selected
        if kind == "f":
            facet = next((f for f in judging.facets_for(self.project, self.query_id, annotator=self.annotator,
                                                         chunk_id=self.chunk_id) if f.id == ident), None)
            if facet is not None:
                self._do(judging.set_facet_link, self.project, annotator=self.annotator,
                         facet_id=ident, chunk_id=self.chunk_id, covered=not facet.covered)
        else:
            nugget = self._nugget(ident)
            if nugget is not None:
                self._do(judging.set_nugget_support, self.project, annotator=self.annotator,
                         nugget_id=ident, chunk_id=self.chunk_id,
                         support=SUPPORT_CYCLE.get(nugget.support, "full"))
        self.refresh_list(keep=f"{kind}:{ident}")

    def on_option_list_option_selected(self, _event: OptionList.OptionSelected) -> None:
        self.action_toggle_mark()

    def _nugget(self, ident: int) -> judging.NuggetView | None:
        return next((n for n in judging.nuggets_for(self.project, self.query_id, annotator=self.annotator,
                                                    chunk_id=self.chunk_id) if n.id == ident), None)

    def action_support(self, support: str) -> None:
        selected = self._selected()
        if selected is None or selected[0] != "n":
            self.notify("Highlight a nugget first (f/p/x set a nugget's support).", severity="warning")
            return
        if self._no_chunk():
            return
        self._do(judging.set_nugget_support, self.project, annotator=self.annotator,
                 nugget_id=selected[1], chunk_id=self.chunk_id, support=support)
        self.refresh_list(keep=f"n:{selected[1]}")

    def action_add_facet(self) -> None:
        from ragjudge.tui.screens.prompts import TextPrompt

        def done(name: str | None) -> None:
            if not name:
                return
            try:
                ident = judging.add_facet(self.project, self.query_id, name)
            except RagjudgeError as exc:
                self.notify(str(exc), severity="error")
                return
            self.refresh_list(keep=f"f:{ident}")

        self.app.push_screen(TextPrompt("New facet (an aspect of the information need):"), done)

    def action_add_nugget(self) -> None:
        self._add("nugget", "New nugget (an atomic fact; start with 'vital:' for a vital one):")

    def action_add_claim(self) -> None:
        self._add("claim", "New claim of the reference answer (start with 'vital:' for a vital one):")

    def _add(self, kind: str, prompt: str) -> None:
        """Ask for the text of a new nugget or claim; the new line is highlighted."""
        from ragjudge.tui.screens.prompts import TextPrompt

        def done(text: str | None) -> None:
            if not text:
                return
            if kind == "nugget" and text.lower().startswith("claim:"):
                self.notify("A claim is added with c, not as a nugget named 'claim: …'. Nothing "
                            "was added.", severity="warning")
                return
            importance = "okay"
            if text.lower().startswith("vital:"):
                importance, text = "vital", text[6:].strip()
            try:
                ident = judging.add_nugget(self.project, self.query_id, text, importance, kind=kind)
            except RagjudgeError as exc:
                self.notify(str(exc), severity="error")
                return
            self.refresh_list(keep=f"n:{ident}")

        self.app.push_screen(TextPrompt(prompt), done)

    def action_rename(self) -> None:
        from ragjudge.tui.screens.prompts import TextPrompt

        selected = self._selected()
        if selected is None:
            return
        kind, ident = selected
        if kind == "f":
            current = next((f.name for f in judging.facets_for(self.project, self.query_id) if f.id == ident), "")

            def done(name: str | None) -> None:
                if name and self._do(judging.rename_facet, self.project, ident, name):
                    self.refresh_list(keep=f"f:{ident}")

            self.app.push_screen(TextPrompt("Rename the facet:", value=current), done)
        else:
            nugget = self._nugget(ident)

            def done_n(text: str | None) -> None:
                if text and self._do(judging.edit_nugget, self.project, ident, text=text):
                    self.refresh_list(keep=f"n:{ident}")

            self.app.push_screen(TextPrompt("Edit the nugget:", value=nugget.text if nugget else ""), done_n)

    def action_vital(self) -> None:
        selected = self._selected()
        if selected is None or selected[0] != "n":
            return
        nugget = self._nugget(selected[1])
        if nugget is not None:
            self._do(judging.edit_nugget, self.project, selected[1],
                     importance="okay" if nugget.importance == "vital" else "vital")
            self.refresh_list(keep=f"n:{selected[1]}")

    def action_remove(self) -> None:
        selected = self._selected()
        if selected is None:
            return
        kind, ident = selected
        if kind == "f":
            self._do(judging.remove_facet, self.project, ident)
        else:
            self._do(judging.remove_nugget, self.project, ident)
        self.refresh_list()

    def action_close(self) -> None:
        self.dismiss(None)
