"""The agreement screen: κ, α and AC1 of the project's annotators, live as labels arrive;
breakdowns per query and per annotator; confusion matrices; the disputed pairs, largest spread
first. Enter on a disputed pair opens adjudication (a lead's work). The disputed pairs list
each annotator's grade: in a blind project an annotator who is not a lead sees those of the
pairs they judged, the services leaving the others out; everyone sees the statistics
(:mod:`ragjudge.services.access.visibility`). A tab shows the same statistics on the
judgments of generated answers (nugget support, citation support).

The statistics are computed in a thread worker (:func:`ragjudge.services.agreement.views.agreement_view`)
and delivered as a message; a timer polls a two-number stamp of the labels and recomputes only
when something changed.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Static, TabbedContent, TabPane

from ragjudge.services.agreement import quality as svc_quality
from ragjudge.services.agreement import ratings as svc_ratings
from ragjudge.services.agreement import views as svc_views
from ragjudge.tui.host import host
from ragjudge.tui.widgets.fitted import Fitted
from ragjudge.tui.widgets.footer import PriorityFooter
from ragjudge.tui.widgets.literal import literal

POLL_SECONDS = 3.0
#: rows of the disputed table: a DataTable slows down past ~10^5 cells, and the largest
#: spreads come first, so the rest can wait until these are adjudicated
DISPUTED_ROWS = 500

AGREEMENT_KEYS = (
    ("enter", "adjudicate", "adjudicate", "Adjudicate the disputed pair under the cursor."),
    ("o", "tab('overview')", "overview", "Statistics of all annotators."),
    ("p", "tab('pairs')", "pairs", "Cohen's κ and confusion matrix per pair of annotators."),
    ("b", "tab('by-query')", "by query", "Agreement per query."),
    ("n", "tab('by-annotator')", "by annotator", "Each annotator against the others."),
    ("d", "tab('disputed')", "disputed", "Pairs the annotators disagree on, largest spread first."),
    ("l", "tab('quality')", "label quality", "Too-fast labels, drifting grades, self-agreement on re-checks."),
    ("w", "tab('answers')", "answers", "Agreement on judgments of generated answers: nugget and citation support."),
    ("v", "review", "review", "The flags and comments annotators left, to resolve or send back."),
    ("r", "refresh", "refresh", "Compute again now."),
    ("escape,q", "back", "back", "Back to the previous screen."),
)


def _num(value: float | None, reason: str | None = None) -> Text:
    if value is None:
        return Text("undefined" + (f" — {reason}" if reason else ""), style="dim")
    return Text(f"{value:.3f}")


class AgreementScreen(Screen):
    """Agreement statistics of a project, with disputed pairs to adjudicate."""

    DEFAULT_CSS = """
    AgreementScreen #agreement-title { height: 1; padding: 0 1; background: $panel; }
    AgreementScreen TabbedContent { height: 1fr; }
    AgreementScreen #disputed-table { height: 1fr; }
    AgreementScreen #disputed-hint { height: auto; max-height: 3; color: $text-muted; padding: 0 1; }
    """

    BINDINGS = [
        Binding(k, a, n, tooltip=t, show=k != "enter", priority=k == "enter")
        for k, a, n, t in AGREEMENT_KEYS
    ]
    FOOTER_PRIORITY = {"back": 0, "tab('overview')": 1, "tab('disputed')": 1, "tab('answers')": 2,
                       "tab('pairs')": 2, "tab('by-query')": 2, "tab('by-annotator')": 2,
                       "tab('quality')": 2, "review": 3}
    """What a narrow footer keeps first (see PriorityFooter)."""

    class Computed(Message):
        """A fresh agreement view, computed in a worker."""

        def __init__(self, view: svc_views.AgreementView, decided: dict, quality: dict,
                     stamp: tuple[int, ...], answers: dict | None = None,
                     llm: dict | None = None) -> None:
            super().__init__()
            self.llm = llm
            self.view = view
            self.quality = quality
            self.decided = decided
            self.stamp = stamp
            self.answers = answers

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, AgreementScreen.Computed)

    def __init__(self, project) -> None:  # noqa: ANN001 - Project
        super().__init__()
        self.project = project
        self.view: svc_views.AgreementView | None = None
        self.decided: dict[tuple[str, str], int] = {}
        self.stamp: tuple[int, ...] | None = None
        self._disputed: list[tuple[str, str]] = []

    def compose(self) -> ComposeResult:
        yield Static(id="agreement-title")
        with TabbedContent(initial="overview"):
            with TabPane("overview", id="overview"):
                with VerticalScroll():
                    yield Static(Text("computing…", style="dim"), id="overview-body")
            with TabPane("pairs", id="pairs"):
                with VerticalScroll():
                    yield Static(id="llm-body")
                    yield Static(id="pairs-body")
            with TabPane("by query", id="by-query"):
                with VerticalScroll():
                    yield Static(id="by-query-body")
            with TabPane("by annotator", id="by-annotator"):
                with VerticalScroll():
                    yield Static(id="by-annotator-body")
            with TabPane("disputed", id="disputed"):
                yield Fitted(id="disputed-hint")
                yield DataTable(id="disputed-table", cursor_type="row", zebra_stripes=True)
            with TabPane("label quality", id="quality"):
                with VerticalScroll():
                    yield Static(id="quality-body")
            with TabPane("answers", id="answers"):
                with VerticalScroll():
                    yield Static(id="answers-body")
        yield PriorityFooter(compact=True)

    def on_mount(self) -> None:
        title = Text("agreement  ", style="bold")
        title.append_text(literal(self.project.name, "bold cyan"))
        self.query_one("#agreement-title", Static).update(title)
        table = self.query_one("#disputed-table", DataTable)
        table.add_columns("query", "chunk", "spread", "ratings", "grades", "adjudicated")
        self.compute(force=True)
        self.set_interval(POLL_SECONDS, self._poll)

    # -- computing ---------------------------------------------------------------------

    def _poll(self) -> None:
        """The timer: look for new labels, unless a computation is under way (starting another
        would cancel it and throw its work away)."""
        if any(w.group == "agreement" and w.node is self and not w.is_finished
               for w in self.app.workers):
            return
        self.compute()

    @work(thread=True, exclusive=True, group="agreement")
    def compute(self, force: bool = False) -> None:
        from ragjudge.services.agreement import answers as answer_agreement_svc
        from ragjudge.services.events import answers as answer_events

        stamp = (*svc_ratings.labels_stamp(self.project), answer_events.answers_stamp(self.project))
        if not force and stamp == self.stamp:
            return
        access = host(self.app, self.project).access()
        view = svc_views.project_agreement(self.project, access=access)
        self.post_message(self.Computed(
            view, svc_views.adjudicated_grades(self.project),
            svc_quality.label_quality(self.project, access=access), stamp,
            answer_agreement_svc.answer_agreement(self.project, access=access),
            llm=svc_views.human_vs_llm(self.project, view.ratings)))

    def on_agreement_screen_computed(self, message: Computed) -> None:
        view = self.view = message.view
        self.decided = message.decided
        self.stamp = message.stamp
        self._show_overview(view)
        self._show_pairs(view)
        self._show_by_query(view)
        self._show_by_annotator(view)
        self._show_disputed(view)
        self._show_quality(message.quality)
        if message.answers is not None:
            self._show_answers(message.answers)
        if message.llm is not None:
            self._show_llm(message.llm)

    # -- panes -------------------------------------------------------------------------

    def _show_overview(self, view: svc_views.AgreementView) -> None:
        r = view.report
        head = Text()
        head.append(f"{r.units:,}", style="bold")
        head.append(f" pairs judged, {r.pairable_units:,} by two or more annotators · scale "
                    f"{r.scale[0]}-{r.scale[1]} · annotators: ")
        head.append_text(literal(", ".join(map(str, r.annotators)) or "none yet"))
        stats = Table(box=None, show_header=False, padding=(0, 2))
        stats.add_column(style="bold")
        stats.add_column()
        for label, stat in svc_views.summary_statistics(r):
            stats.add_row(label, _num(stat.value, stat.reason))
        binary = Table(title="binarised: relevant = grade ≥ t", title_justify="left",
                       header_style="bold", box=None)
        for col in ("t", "agree", "α", "AC1", "mean |A∩B|/|A∪B|"):
            binary.add_column(col, justify="right")
        for t in r.binarised:
            overlaps = [p["overlap"].value for p in t.pairwise if p["overlap"].value is not None]
            binary.add_row(str(t.threshold), _num(t.percent_agreement.value),
                           _num(t.krippendorff_alpha.value), _num(t.gwet_ac1.value),
                           _num(sum(overlaps) / len(overlaps) if overlaps else None))
        self.query_one("#overview-body", Static).update(
            Group(head, Text(""), stats, Text(""), binary, *self._reference_parts(view)))

    def _reference_parts(self, view: svc_views.AgreementView) -> list[RenderableType]:
        """Each annotator against the reference, and the degenerate statistics, in words."""
        parts: list[RenderableType] = []
        ref = view.reference
        if ref is not None:
            title = Text("\nagainst the reference ", style="bold")
            title.append_text(literal(ref["name"], "bold cyan"))
            if ref["complete"]:
                title.append(" (complete: an unlisted pair of its queries is not relevant)", style="dim")
            table = Table(box=None, header_style="bold")
            for col in ("annotator", "n", "accuracy", "κ"):
                table.add_column(col, justify="left" if col == "annotator" else "right")
            for row in ref["annotators"]:
                why = row.get("undefined", {})
                table.add_row(literal(row["name"]), str(row["n"]), _num(row["accuracy"]),
                              _num(row["kappa"], "degenerate (see below)"
                                   if "one grade only" in (why.get("kappa") or "") else why.get("kappa")))
            parts += [title, table]
        for warning in view.warnings:
            line = Text("\n⚠ κ is degenerate for ", style="yellow")
            line.append_text(literal(warning, "yellow"))
            parts.append(line)
        return parts

    def _show_pairs(self, view: svc_views.AgreementView) -> None:
        r = view.report
        if not r.pairwise:
            self.query_one("#pairs-body", Static).update(Text("Fewer than two annotators.", style="dim"))
            return
        parts: list[RenderableType] = []
        table = Table(header_style="bold", box=None)
        for col in ("a", "b", "n", "agree", "κ", "κ linear", "κ quadratic"):
            table.add_column(col, justify="left" if col in ("a", "b") else "right")
        degenerate = {(a, b) for a, b, _ in svc_views.degenerate_pairs(view.ratings)}
        for p in r.pairwise:
            kappas: list[RenderableType]
            if (str(p.a), str(p.b)) in degenerate:
                kappas = [Text("degenerate", style="yellow")] * 3
            else:
                kappas = [_num(p.cohen_kappa.value), _num(p.cohen_kappa_linear.value),
                          _num(p.cohen_kappa_quadratic.value)]
            table.add_row(literal(p.a), literal(p.b), str(p.n), _num(p.percent_agreement.value),
                          *kappas)
        parts.append(table)
        grades = list(range(r.scale[0], r.scale[1] + 1))
        for p in r.pairwise:
            if not p.n:
                continue
            title = literal(p.a, "bold")
            title.append(" (rows) × ")
            title.append_text(literal(p.b, "bold"))
            title.append(" (columns)")
            matrix = Table(box=None, header_style="bold")
            matrix.add_column("")
            for g in grades:
                matrix.add_column(str(g), justify="right")
            for g, row in zip(grades, p.confusion):
                matrix.add_row(str(g), *(
                    Text(str(int(v)), style=("bold green" if i == g - grades[0] else "") if v else "dim")
                    for i, v in enumerate(row)))
            parts.extend([Text(""), title, matrix])
        self.query_one("#pairs-body", Static).update(Group(*parts))

    def _show_by_query(self, view: svc_views.AgreementView) -> None:
        rows = view.by_query
        table = Table(header_style="bold", box=None)
        for col in ("query", "pairs", "by ≥2", "disputed", "agree", "α ordinal", "AC1"):
            table.add_column(col, justify="left" if col == "query" else "right")
        for row in rows:
            table.add_row(literal(row["query_id"]), str(row["units"]), str(row["pairable_units"]),
                          str(row["disputed"]), _num(row["percent_agreement"]),
                          _num(row["krippendorff_alpha_ordinal"]), _num(row["gwet_ac1"]))
        body = table if rows else Text("No labels yet.", style="dim")
        self.query_one("#by-query-body", Static).update(body)

    def _show_by_annotator(self, view: svc_views.AgreementView) -> None:
        rows = view.by_annotator
        table = Table(header_style="bold", box=None)
        for col in ("annotator", "labels", "grades", "mean", "agree w/ others", "mean κ", "α without"):
            table.add_column(col, justify="left" if col in ("annotator", "grades") else "right")
        for row in rows:
            dist = " ".join(f"{g}:{n}" for g, n in row["grade_distribution"].items())
            table.add_row(literal(row["annotator"]), str(row["labels"]), dist, _num(row["mean_grade"]),
                          _num(row["percent_agreement_with_others"]), _num(row["mean_cohen_kappa"]),
                          _num(row["krippendorff_alpha_ordinal_without"]))
        body = table if rows else Text("No labels yet.", style="dim")
        self.query_one("#by-annotator-body", Static).update(body)

    def _show_disputed(self, view: svc_views.AgreementView) -> None:
        table = self.query_one("#disputed-table", DataTable)
        keep = table.cursor_row
        table.clear()
        decided = self.decided
        self._disputed = []
        disputed = view.report.disputed
        for d in disputed[:DISPUTED_ROWS]:
            query_id, chunk_id = d.unit
            grades = ", ".join(f"{a}={g}" for a, g in d.grades.items())
            adjudicated = decided.get((query_id, chunk_id))
            table.add_row(literal(query_id), literal(chunk_id), str(d.spread), str(d.n_ratings),
                          literal(grades), "–" if adjudicated is None else str(adjudicated))
            self._disputed.append((query_id, chunk_id))
        if self._disputed:
            table.move_cursor(row=min(keep, len(self._disputed) - 1))
        shown = "" if len(disputed) <= DISPUTED_ROWS else f" (the {DISPUTED_ROWS} largest shown)"
        hint = (f"{len(disputed)} disputed pairs{shown} · Enter to adjudicate"
                if disputed else "No disputed pairs: every pair judged twice has one grade.")
        if view.hidden_disputed:
            hint += " " + self._blind_note(view.hidden_disputed)
        self.query_one("#disputed-hint", Static).update(Text(hint))

    def _blind_note(self, hidden: int, noun: str = "pairs") -> str:
        return (f"({hidden} more disputed {noun} not shown: this project is blind, and they are "
                "ones you have not judged; their grades must not sway a grade still to be given. "
                "The statistics in the other tabs are for everyone.)")

    def _show_quality(self, quality: dict) -> None:
        fast: dict[str, int] = {}
        fast.update(quality["fast_label_counts"])
        drift = {d["annotator"]: d for d in quality["grade_drift"]}
        selfs = {s["annotator"]: s for s in quality["self_agreement"]}
        table = Table(header_style="bold", box=None)
        for col in ("annotator", "too fast", "mean grade 1st half", "2nd half", "drifting",
                    "re-checks", "self-agreement"):
            table.add_column(col, justify="left" if col == "annotator" else "right")
        for name in sorted(set(drift) | set(fast) | set(selfs)):
            d, s = drift.get(name, {}), selfs.get(name)
            table.add_row(literal(name), str(fast.get(name, 0)), _num(d.get("mean_first")),
                          _num(d.get("mean_second")),
                          Text("yes", style="bold yellow") if d.get("drifting") else Text("no"),
                          str(s["rechecks"]) if s else "0",
                          _num(s["self_agreement"]) if s else Text("–", style="dim"))
        note = Text(f"too fast: a current label quicker than reading the chunk allows "
                    f"({svc_quality.MAX_CHARS_PER_SECOND:g} characters a second, "
                    f"{svc_quality.MIN_DURATION_MS / 1000:g} s at least); {quality['drift_rule']}.",
                    style="dim")
        self.query_one("#quality-body", Static).update(Group(table, Text(""), note))

    def _show_answers(self, views: dict) -> None:
        """Nugget support and citation support: the headline statistics, each pair of
        annotators, and the units they disagree on most."""
        titles = {"nugget_support": ("Nugget support", "how fully an answer supports a nugget",
                                     "(query, run, nugget)"),
                  "citation_support": ("Citation support", "how fully a cited chunk supports the "
                                       "sentence citing it", "(query, run, sentence, chunk)")}
        parts: list = []
        for key, view in views.items():
            name, what, units = titles[key]
            r = view.report
            head = Text()
            head.append(name, style="bold")
            head.append(f" — {what}; scale 0 none, 1 partial, 2 full (sentences counted from 0)\n"
                        if key == "citation_support" else f" — {what}; scale 0 none, 1 partial, 2 full\n")
            head.append(f"{r.units:,}", style="bold")
            head.append(f" {units} units judged, {r.pairable_units:,} by two or more annotators")
            stats = Table(box=None, show_header=False, padding=(0, 2))
            stats.add_column(style="bold")
            stats.add_column()
            for label, stat in svc_views.summary_statistics(r):
                if label == "within ±1 grade":
                    continue
                stats.add_row(label, _num(stat.value, stat.reason))
            parts += [head, stats]
            if r.pairwise:
                pairs = Table(header_style="bold", box=None)
                for col in ("a", "b", "n", "agree", "κ", "κ linear"):
                    pairs.add_column(col, justify="left" if col in ("a", "b") else "right")
                for p in r.pairwise:
                    pairs.add_row(literal(p.a), literal(p.b), str(p.n), _num(p.percent_agreement.value),
                                  _num(p.cohen_kappa.value), _num(p.cohen_kappa_linear.value))
                parts += [Text(""), pairs]
            if view.hidden_disputed:
                parts += [Text(""), Text(self._blind_note(view.hidden_disputed, "units"), style="dim")]
            if r.disputed:
                disputed = Table(title=f"disputed: {len(r.disputed)} (largest spread first)",
                                 title_justify="left", header_style="bold", box=None)
                for col in (*units.strip("()").split(", "), "spread", "support"):
                    disputed.add_column(col, justify="right" if col == "spread" else "left")
                words = {0: "none", 1: "partial", 2: "full"}
                for d in r.disputed[:20]:
                    support = ", ".join(f"{a}={words.get(int(g), g)}" for a, g in d.grades.items())
                    disputed.add_row(*(literal(u) for u in d.unit), str(d.spread), literal(support))
                parts += [Text(""), disputed]
            parts.append(Text(""))
        if not any(v.report.units for v in views.values()):
            parts = [Text("No answer judged yet: judge answers with 'ragjudge annotate --answers' "
                          "or w on the home screen.", style="dim")]
        self.query_one("#answers-body", Static).update(Group(*parts))

    def _show_llm(self, data: dict) -> None:
        """On the pairs tab, above the people's pairs: each LLM annotator against each person
        and the people's gold (κ, α, confusion), beside the people's agreement with each other
        (nothing when no LLM annotator graded a pair)."""
        body = self.query_one("#llm-body", Static)
        body.display = bool(data["llm"])
        if not data["llm"]:
            return
        head = Text("LLM annotators: ", style="bold")
        head.append_text(literal(", ".join(data["llm"])))
        head.append(" — the other tabs show the people alone; Δ = LLM − person (above 0: the model "
                    "is more lenient)", style="dim")
        table = Table(header_style="bold", box=None)
        for col in ("person", "LLM", "n", "agree", "κ", "κ linear", "α ordinal", "mean Δ"):
            table.add_column(col, justify="left" if col in ("person", "LLM") else "right")
        for p in [*data["pairs"], *data["against_gold"]]:
            who = Text("gold (people)", style="italic") if p["a"] == "gold" else literal(p["a"])
            table.add_row(who, literal(p["b"]), str(p["n"]), _num(p["percent_agreement"]),
                          _num(p["cohen_kappa"]), _num(p["cohen_kappa_linear"]),
                          _num(p["krippendorff_alpha_ordinal"]), _num(p["mean_difference"]))
        people = Table(title="people with each other", title_justify="left", header_style="bold", box=None)
        for col in ("a", "b", "n", "agree", "κ", "κ linear", "α ordinal"):
            people.add_column(col, justify="left" if col in ("a", "b") else "right")
        for p in data["human_pairs"]:
            people.add_row(literal(p["a"]), literal(p["b"]), str(p["n"]), _num(p["percent_agreement"]),
                           _num(p["cohen_kappa"]), _num(p["cohen_kappa_linear"]),
                           _num(p["krippendorff_alpha_ordinal"]))
        parts: list = [head, Text(""), table, Text(""), people]
        if not data["human_pairs"]:
            parts = parts[:3]
        grades = list(range(data["scale"][0], data["scale"][1] + 1))
        for p in data["against_gold"]:
            if not p["n"]:
                continue
            title = Text("gold of the people (rows) × ")
            title.append_text(literal(p["b"], "bold"))
            title.append(" (columns)")
            matrix = Table(box=None, header_style="bold")
            matrix.add_column("")
            for g in grades:
                matrix.add_column(str(g), justify="right")
            for g, row in zip(grades, p["confusion"]):
                matrix.add_row(str(g), *(Text(str(v), style=("bold green" if i == g - grades[0] else "")
                                              if v else "dim") for i, v in enumerate(row)))
            parts += [Text(""), title, matrix]
        parts += [Text(""), Text("People with each other, pair by pair:", style="bold")]
        body.update(Group(*parts))

    # -- actions -----------------------------------------------------------------------

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        if tab == "disputed":
            self.query_one("#disputed-table", DataTable).focus()

    def action_refresh(self) -> None:
        self.compute(force=True)

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_review(self) -> None:
        host(self.app, self.project).open_review()

    def action_adjudicate(self) -> None:
        tabs = self.query_one(TabbedContent)
        if tabs.active != "disputed":
            tabs.active = "disputed"
            self.query_one("#disputed-table", DataTable).focus()
            return
        table = self.query_one("#disputed-table", DataTable)
        from ragjudge.tui.screens.adjudicate import refuse_non_lead

        if refuse_non_lead(self, self.project):
            return
        if not self._disputed:
            self.notify("No disputed pair to adjudicate.", severity="warning")
            return
        self._open(*self._disputed[table.cursor_row])

    @on(DataTable.RowSelected, "#disputed-table")
    def row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if 0 <= event.cursor_row < len(self._disputed):
            self._open(*self._disputed[event.cursor_row])

    def _open(self, query_id: str, chunk_id: str) -> None:
        from ragjudge.tui.screens.adjudicate import AdjudicateScreen, refuse_non_lead

        if refuse_non_lead(self, self.project):
            return

        def done(changed: bool | None) -> None:
            if changed:
                self.compute(force=True)

        self.app.push_screen(AdjudicateScreen(self.project, query_id, chunk_id), done)
