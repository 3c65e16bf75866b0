"""Adjudication of one disputed pair: the query, the chunk, every annotator's label with their
note and time spent, earlier decisions; a grade key and a reason record the final grade (an
append-only adjudication that gold qrels use first). Dismisses with True when a decision was
recorded. Only a lead adjudicates once the project has one: for anyone else the screen does not
open (:func:`refuse_non_lead`), and the service refuses the decision besides."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from ragjudge.errors import RagjudgeError
from ragjudge.services.gold import pairs as svc_pairs
from ragjudge.services.gold import adjudication as svc_adjudication
from ragjudge.services.labels import texts as judging
from ragjudge.tui.host import host
from ragjudge.tui.screens.prompts import Refused
from ragjudge.tui.widgets.fitted import Fitted
from ragjudge.tui.widgets.literal import highlighted, literal, query_block, query_terms

if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


def refuse_non_lead(screen: Screen, project: Project) -> bool:
    """True (after showing the refusal) when who looks at ``screen`` may not adjudicate."""
    try:
        host(screen.app, project).access().require_lead("adjudicate")
    except RagjudgeError as exc:
        screen.app.push_screen(Refused(str(exc)))
        return True
    return False


class AdjudicateScreen(Screen[bool]):
    """Decide the final grade of (``query_id``, ``chunk_id``)."""

    DEFAULT_CSS = """
    AdjudicateScreen #adjudicate-title { height: 1; padding: 0 1; background: $panel; }
    AdjudicateScreen #adjudicate-main { height: 1fr; }
    AdjudicateScreen #adjudicate-chunk { width: 1fr; height: 100%; border: round $primary 50%; padding: 0 1; }
    AdjudicateScreen #adjudicate-side { width: 60; max-width: 60%; height: 100%; }
    AdjudicateScreen .adjudicate-panel { height: auto; border: round $primary 50%; padding: 0 1; }
    AdjudicateScreen #adjudicate-query { max-height: 40%; }
    AdjudicateScreen #adjudicate-hint { height: auto; padding: 0 1; margin-bottom: 1; }
    """

    BINDINGS = [
        *(Binding(str(g), f"decide({g})", "grade" if g == 0 else f"grade {g}", show=g == 0,
                  key_display="0-9" if g == 0 else None, tooltip=f"Final grade {g}, then a reason.")
          for g in range(10)),
        Binding("escape,q", "back", "back", tooltip="Back without deciding."),
    ]

    ACTION_NAMES = {"decide(0)": "grade 0"}
    ACTION_KEYS = {f"decide({g})": str(g) for g in range(10)}
    """The palette names grade 0 and its key as they are, not as the footer's "0-9"."""

    def offers(self, action: str) -> bool:
        """The command palette lists the final grades of the project's scale only."""
        return not action.startswith("decide(") or self.project.scale.contains(int(action[7:-1]))

    def __init__(self, project, query_id: str, chunk_id: str) -> None:  # noqa: ANN001 - Project
        super().__init__()
        self.project = project
        self.query_id = query_id
        self.chunk_id = chunk_id
        self.decided = False

    def compose(self) -> ComposeResult:
        yield Static(id="adjudicate-title")
        with Horizontal(id="adjudicate-main"):
            with VerticalScroll(id="adjudicate-chunk"):
                yield Static(id="adjudicate-chunk-text")
            with VerticalScroll(id="adjudicate-side", can_focus=False):  # a short screen scrolls it
                yield Fitted(id="adjudicate-hint")  # the keys first: a short screen cuts below
                yield Fitted(id="adjudicate-query", classes="adjudicate-panel")
                yield Fitted(id="adjudicate-labels", classes="adjudicate-panel")
                yield Fitted(id="adjudicate-history", classes="adjudicate-panel")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#adjudicate-chunk").border_title = "chunk"
        self.query_one("#adjudicate-query").border_title = "query"
        self.query_one("#adjudicate-labels").border_title = "labels"
        self.query_one("#adjudicate-history").border_title = "decisions"
        self.show()

    def show(self) -> None:
        access = host(self.app, self.project).access()
        try:
            access.require_lead("adjudicate")
            detail = svc_pairs.pair_detail(self.project, self.query_id, self.chunk_id,
                                           access=access)
        except RagjudgeError as exc:
            self.notify(str(exc), severity="error")
            self.dismiss(False)
            return
        scale = self.project.scale
        title = Text("adjudicate  ", style="bold")
        title.append_text(literal(f"{detail.query_id} / {detail.chunk_id}", "bold cyan"))
        self.query_one("#adjudicate-title", Static).update(title)
        # the query as the judging screen shows it, its terms highlighted in the chunk
        query = judging.query_text(self.project, self.query_id)
        self.query_one("#adjudicate-chunk-text", Static).update(
            highlighted(detail.chunk_text, query_terms(query.text or detail.query_text)))
        self.query_one("#adjudicate-query", Static).update(query_block(query))

        labels = Table(box=None, header_style="bold", expand=True)
        for col in ("annotator", "grade", "time", "note"):
            labels.add_column(col, justify="right" if col == "time" else "left")
        for lab in detail.labels:
            if lab.grade is not None:
                grade = literal(f"{lab.grade} {scale.level(lab.grade).name}" if scale.contains(lab.grade)
                                else str(lab.grade))
            else:
                grade = Text("skipped" if lab.skipped else "–", style="dim")
            if lab.flagged:
                grade.append(" ⚑", style="yellow")
            seconds = "–" if lab.duration_ms is None else f"{lab.duration_ms / 1000:.1f}s"
            labels.add_row(literal(lab.annotator), grade, seconds, literal(lab.remarks))
        if not detail.labels:
            labels.add_row(Text("nobody has labelled this pair", style="dim"), "", "", "")
        self.query_one("#adjudicate-labels", Static).update(labels)

        history = Text()
        for a in detail.adjudications:
            history.append(f"{a['grade']} ", style="bold")
            history.append_text(literal(f"by {a['by']}: {a['reason'] or ''}"))
            if a["created_at"] is not None:
                history.append(f"  {a['created_at']:%Y-%m-%d %H:%M}", style="dim")
            history.append("\n")
        if not detail.adjudications:
            history.append("not adjudicated yet", style="dim")
        self.query_one("#adjudicate-history", Static).update(history)

        hint = Text("Press the final grade ", style="")
        hint.append(f"{scale.min}–{scale.max}", style="bold")
        hint.append(", then give the reason. Escape goes back.")
        levels = Text("\n")
        for level in scale.levels:
            levels.append(f" {level.grade} ", style="bold reverse")
            levels.append_text(literal(f" {level.name}  "))
        self.query_one("#adjudicate-hint", Static).update(hint + levels)

    def action_decide(self, grade: int) -> None:
        scale = self.project.scale
        if not scale.contains(grade):
            self.notify(f"{grade} is not on the scale {scale.describe()}.", severity="warning")
            return
        from ragjudge.tui.screens.prompts import TextPrompt

        def with_reason(reason: str | None) -> None:
            if not reason:
                return
            try:
                svc_adjudication.adjudicate(self.project, query_id=self.query_id,
                                            chunk_id=self.chunk_id, grade=grade, reason=reason,
                                            access=host(self.app, self.project).access())
            except RagjudgeError as exc:
                self.app.push_screen(Refused(str(exc)))
                return
            self.decided = True
            self.notify(f"Adjudicated {self.query_id} / {self.chunk_id}: grade {grade}.")
            self.dismiss(True)

        self.app.push_screen(
            TextPrompt(f"Why grade {grade} ({scale.level(grade).name})?",
                       placeholder="the reason later readers will see"),
            with_reason,
        )

    def action_back(self) -> None:
        self.dismiss(self.decided)
