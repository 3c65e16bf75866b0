"""The review screen: a lead walks the open flags and comments one at a time.

Each item shows the query (text and description), the chunk, and every annotator's current
label on the pair with their note, flag, comment and time. The lead resolves it (with a note
its author sees the next time they open the pair), adjudicates the pair (the adjudication
screen), or sends it back (the pair comes first in the author's queue again). Answers are
review events (:mod:`ragjudge.services.labels.review`); the list of items is read when the screen
opens, so an answered item stays reachable with ``p`` and shows its answer.

Once the project has a lead, only a lead reads everyone's items and answers them; anyone else
walks their own flags and comments and the lead's answers to them, and an answer key shows the
service's refusal. Who looks is the app's identity (:mod:`ragjudge.tui.host`).
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from ragjudge.errors import RagjudgeError
from ragjudge.services.labels import review as svc
from ragjudge.tui.host import Host, host
from ragjudge.tui.screens.prompts import Refused
from ragjudge.tui.widgets.fitted import FitBar, Fitted, Part
from ragjudge.tui.widgets.literal import literal

REVIEW_KEYS = (
    ("r", "resolve", "resolve", "Resolve the flag or comment, with a note its author sees next time."),
    ("a", "adjudicate", "adjudicate", "Decide the pair's final grade (the adjudication screen)."),
    ("b", "send_back", "send back", "Send the pair back: it comes first in the author's queue again."),
    ("n,j,right", "next", "next", "The next item."),
    ("p,k,left", "previous", "previous", "The previous item."),
    ("l", "list", "list", "All items as a list; Enter opens one."),
    ("question_mark", "help", "help", "This list of keys."),
    ("escape,q", "back", "back", "Back to the previous screen."),
)


def key_rows() -> list[tuple[str, str, str]]:
    """The keys as the help screen and the README show them."""
    shown = {"question_mark": "?", "right": "→", "left": "←", "escape": "Escape"}
    return [(" / ".join(shown.get(k, k) for k in keys.split(",")), name, text)
            for keys, _, name, text in REVIEW_KEYS]


class ReviewScreen(Screen):
    """Walk the open review items of a project: everyone's for a lead, one's own for anyone
    else."""

    DEFAULT_CSS = """
    ReviewScreen #review-title { height: 1; padding: 0 1; background: $panel; }
    ReviewScreen #review-walk { height: 1fr; }
    ReviewScreen #review-chunk { width: 1fr; height: 100%; border: round $primary 50%; padding: 0 1; }
    ReviewScreen #review-side { width: 72; height: 100%; }
    ReviewScreen .review-panel { height: auto; border: round $primary 50%; padding: 0 1; }
    ReviewScreen #review-labels { height: auto; max-height: 18; }
    ReviewScreen #review-list { height: 1fr; display: none; }
    """

    BINDINGS = [
        Binding(k, a, n, tooltip=t, key_display="?" if k == "question_mark" else None,
                show=a not in ("help",))
        for k, a, n, t in REVIEW_KEYS
    ]
    ACTION_NAMES = {a: n for _, a, n, _ in REVIEW_KEYS}

    def __init__(self, project) -> None:  # noqa: ANN001 - Project
        super().__init__()
        self.project = project
        self.items: list[svc.ReviewItem] = []
        self.index = 0
        self.current: svc.ReviewDetail | None = None
        self.mine_only = False
        """the viewer is not a lead: the items are their own"""

    def compose(self) -> ComposeResult:
        yield FitBar(id="review-title")
        with Horizontal(id="review-walk"):
            with VerticalScroll(id="review-chunk"):
                yield Static(id="review-chunk-text")
            with Vertical(id="review-side"):
                yield Fitted(id="review-query", classes="review-panel")
                yield Fitted(id="review-item", classes="review-panel")
                yield Fitted(id="review-labels", classes="review-panel")
        yield DataTable(id="review-list", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#review-query").border_title = "query"
        self.query_one("#review-item").border_title = "under review"
        self.query_one("#review-labels").border_title = "labels of the pair"
        self.query_one("#review-chunk").border_title = "chunk"
        self.query_one("#review-list", DataTable).add_columns(
            "query", "chunk", "annotator", "flag", "comment", "review")
        self.load()

    @property
    def host(self) -> Host:
        return host(self.app, self.project)

    # -- loading and showing ---------------------------------------------------------------

    def load(self) -> None:
        """Read the open items the viewer may read (the walk goes through these, answered or
        not since)."""
        access = self.host.access()
        self.mine_only = not access.lead
        try:
            self.items = svc.items(self.project, access=access)
        except RagjudgeError as exc:  # nobody known: nobody's items
            self.items = []
            self.notify(str(exc), severity="warning", timeout=10)
        self.index = 0
        self.show()

    def show(self) -> None:
        if not self.items:
            self.current = None
            self._title("nothing open")
            self.query_one("#review-chunk-text", Static).update(Text(
                ("None of your flags or comments is open: a lead answers them, and you see the "
                 "answer when you next open the pair. Escape goes back.") if self.mine_only else
                "No open flags or comments: every one is answered. Escape goes back.", style="dim"))
            for panel in ("#review-query", "#review-item", "#review-labels"):
                self.query_one(panel, Static).update(Text(""))
            return
        self.index = max(0, min(self.index, len(self.items) - 1))
        try:
            self.current = svc.detail(self.project, self.items[self.index],
                                      access=self.host.access())
        except RagjudgeError as exc:
            self.notify(str(exc), severity="error", timeout=8)
            return
        self.items[self.index] = self.current.item
        d = self.current
        self._title(f"item {self.index + 1} of {len(self.items)} · {self._state(d)}")
        self.query_one("#review-chunk").border_title = literal(f"chunk {d.chunk.id}")
        self.query_one("#review-chunk-text", Static).update(literal(d.chunk.text))
        self.query_one("#review-query", Static).update(self._query_text(d))
        self.query_one("#review-item", Static).update(self._item_text(d))
        self.query_one("#review-labels", Static).update(self._labels_table(d))

    @staticmethod
    def _state(d: svc.ReviewDetail) -> str:
        if d.withdrawn:
            return "withdrawn"
        if d.item.resolved is None:
            return "open"
        return "resolved" if d.item.resolved.action == "resolve" else "sent back"

    def _title(self, state: str) -> None:
        title = Text("review  ", style="bold")
        title.append_text(literal(self.project.name, "bold cyan"))
        parts = [Part(title, cut=True)]
        if self.mine_only:
            parts.append(Part(Text("your flags and comments"), Text("yours")))
        parts.append(Part(Text(state)))
        self.query_one("#review-title", FitBar).show(*parts)

    def _query_text(self, d: svc.ReviewDetail) -> Text:
        out = literal(d.query.id, "bold cyan")
        out.append("\n")
        out.append_text(literal(d.query.text, "bold"))
        if d.query.description:
            out.append("\n")
            out.append_text(literal(d.query.description))
        return out

    def _item_text(self, d: svc.ReviewDetail) -> Text:
        i = d.item
        out = literal(i.annotator, "bold")
        if i.created_at is not None:
            out.append(f"  {i.created_at:%Y-%m-%d %H:%M}", style="dim")
        if i.flagged:
            out.append("\n⚑ flagged", style="bold red")
            if i.note:
                out.append(": ", style="bold red")
                out.append_text(literal(i.note, "italic"))
        if i.comment:
            out.append("\ncomment: ", style="bold")
            out.append_text(literal(i.comment, "italic"))
        if d.withdrawn:
            out.append("\nwithdrawn: the flag and comment were taken off since", style="yellow")
        for r in i.reviews:
            out.append("\n")
            out.append("✓ resolved" if r.action == "resolve" else "↩ sent back", style="green")
            out.append(" by ")
            out.append_text(literal(r.by, "bold"))
            if r.note:
                out.append(": ")
                out.append_text(literal(r.note, "italic"))
            if r.at is not None:
                out.append(f"  {r.at:%Y-%m-%d %H:%M}", style="dim")
        for a in d.pair.adjudications:
            out.append(f"\nadjudicated {a['grade']}", style="bold")
            out.append(" by ")
            out.append_text(literal(f"{a['by']}: {a['reason'] or ''}"))
        return out

    def _labels_table(self, d: svc.ReviewDetail) -> Table:
        scale = self.project.scale
        table = Table(box=None, header_style="bold", expand=True, padding=(0, 1))
        for col in ("annotator", "grade", "flag, comment, note", "time"):
            table.add_column(col, no_wrap=col in ("grade", "time"), ratio=1 if col.startswith("flag") else None)
        for lab in d.pair.labels:
            if lab.grade is not None:
                grade = literal(f"{lab.grade} {scale.level(lab.grade).name}"
                                if scale.contains(lab.grade) else str(lab.grade))
            else:
                grade = Text("skipped" if lab.skipped else "–", style="dim")
            when = "–" if lab.created_at is None else f"{lab.created_at:%m-%d %H:%M}"
            table.add_row(literal(lab.annotator), grade, literal(lab.remarks), when)
        if not d.pair.labels:
            table.add_row(Text("nobody has labelled this pair", style="dim"), "", "", "")
        return table

    # -- answering -------------------------------------------------------------------------

    def _answer(self, action: str) -> None:
        d = self.current
        if d is None:
            return
        if d.withdrawn:
            self.notify("The author took this flag and comment off; there is nothing to answer.",
                        severity="warning")
            return
        from ragjudge.tui.screens.prompts import TextPrompt

        answer = svc.resolve if action == "resolve" else svc.send_back
        item = d.item

        access = self.host.access()
        try:  # asked before the note is typed: a refusal takes the keys typed next
            access.require_lead("resolve flags or send them back")
        except RagjudgeError as exc:
            self.app.push_screen(Refused(str(exc)))
            return

        def done(note: str | None) -> None:
            if note is None:
                return
            try:
                answer(self.project, query_id=item.query_id, chunk_id=item.chunk_id,
                       annotator=item.annotator, access=access, note=note or None, source="tui")
            except RagjudgeError as exc:
                self.app.push_screen(Refused(str(exc)))
                return
            verb = "Resolved" if action == "resolve" else "Sent back"
            self.notify(f"{verb}: {item.annotator}'s item on {item.query_id} / {item.chunk_id}.")
            self.index += 1 if self.index + 1 < len(self.items) else 0
            self.show()

        prompt = ("Resolve — a note for the annotator (optional):" if action == "resolve"
                  else "Send back — what should the annotator look at? (optional):")
        self.app.push_screen(TextPrompt(prompt, allow_empty=True,
                                        placeholder="shown to them on the judging screen"), done)

    def action_resolve(self) -> None:
        self._answer("resolve")

    def action_send_back(self) -> None:
        self._answer("send-back")

    def action_adjudicate(self) -> None:
        d = self.current
        if d is None:
            return
        from ragjudge.tui.screens.adjudicate import AdjudicateScreen, refuse_non_lead

        if refuse_non_lead(self, self.project):
            return

        def done(_: bool | None) -> None:
            self.show()

        self.app.push_screen(AdjudicateScreen(self.project, d.item.query_id, d.item.chunk_id), done)

    # -- moving ----------------------------------------------------------------------------

    def action_next(self) -> None:
        if not self.items:
            return
        if self.index + 1 >= len(self.items):
            self.notify("This is the last item.")
            return
        self.index += 1
        self.show()

    def action_previous(self) -> None:
        if not self.items:
            return
        if self.index == 0:
            self.notify("This is the first item.")
            return
        self.index -= 1
        self.show()

    def action_list(self) -> None:
        table = self.query_one("#review-list", DataTable)
        walk = self.query_one("#review-walk")
        if table.display:
            table.display, walk.display = False, True
            self.show()
            return
        table.clear()
        for i in self.items:
            answer = i.resolved
            state = "open" if answer is None else f"{answer.action} by {answer.by}"
            table.add_row(literal(i.query_id), literal(i.chunk_id), literal(i.annotator),
                          literal(("⚑ " + (i.note or "")).strip()) if i.flagged else Text("–"),
                          literal(i.comment or "–"), literal(state))
        walk.display, table.display = False, True
        if self.items:
            table.move_cursor(row=self.index)
        table.focus()

    @on(DataTable.RowHighlighted, "#review-list")
    def row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self.items):
            self.index = event.cursor_row

    @on(DataTable.RowSelected, "#review-list")
    def row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if 0 <= event.cursor_row < len(self.items):
            self.index = event.cursor_row
            self.action_list()

    def action_help(self) -> None:
        from ragjudge.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen("Review keys", key_rows()))

    def action_back(self) -> None:
        self.app.pop_screen()
