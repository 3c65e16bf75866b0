"""The home screen: what the project holds, who has judged how much, and where to go next."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from ragjudge.services.overview import project_status
from ragjudge.services.labels.queuecounts import annotator_progress
from ragjudge.services.labels import review
from ragjudge.tui.host import Host, host
from ragjudge.tui.widgets.fitted import Fitted
from ragjudge.tui.widgets.footer import PriorityFooter
from ragjudge.tui.widgets.literal import literal

HOME_KEYS = (
    ("enter,j", "judge", "start judging", "Judge the next pairs of your queue."),
    ("w", "judge_answers", "answers", "Judge the runs' generated answers: nugget and citation support."),
    ("e", "evaluation", "evaluation", "Scores of every run, from the labels so far."),
    ("a", "agreement", "agreement", "Where annotators disagree."),
    ("v", "review", "review", "A lead's review of the flags and comments annotators left."),
    ("h", "guidelines", "guidelines", "The project's judging guidelines."),
    ("r", "refresh", "refresh", "Count again."),
    ("question_mark", "help", "help", "This list of keys."),
    ("q", "quit", "quit", "Quit."),
)


class HomeScreen(Screen):
    """Project summary, annotators and runs; keys to judge, evaluate and check agreement."""

    BINDINGS = [Binding(k, a, n, tooltip=t, key_display="?" if k == "question_mark" else None,
                        show=k != "v")  # shown beside the count of open flags instead
                for k, a, n, t in HOME_KEYS]
    FOOTER_PRIORITY = {"judge": 0, "help": 0, "quit": 0, "evaluation": 1, "agreement": 1,
                       "judge_answers": 2, "guidelines": 2}
    """What a narrow footer keeps first (see PriorityFooter)."""

    class Counted(Message):
        def __init__(self, status: dict, progress: list[dict]) -> None:
            super().__init__()
            self.status = status
            self.progress = progress

    def __init__(self, project) -> None:  # noqa: ANN001
        super().__init__()
        self.project = project

    def compose(self) -> ComposeResult:
        yield Static(id="home-title")
        with Horizontal(id="home-main"):
            with Vertical(id="home-left"):
                yield Fitted(id="home-summary", classes="panel")
                yield Fitted(id="home-start", classes="panel")
            with Vertical(id="home-right"):
                yield Fitted(id="home-annotators", classes="panel")
                yield Fitted(id="home-runs", classes="panel")
        yield PriorityFooter(compact=True)

    def on_mount(self) -> None:
        self.query_one("#home-summary").border_title = "project"
        self.query_one("#home-annotators").border_title = "annotators"
        self.query_one("#home-runs").border_title = "runs"
        self.query_one("#home-start").border_title = "next"
        title = Text("ragjudge  ", style="bold")
        title.append_text(literal(self.project.name, "bold cyan"))
        self.query_one("#home-title", Static).update(title)
        self.query_one("#home-summary", Static).update(Text("counting…", style="dim"))
        self._show_start()

    @property
    def host(self) -> Host:
        return host(self.app, self.project)

    def _count_if_shown(self) -> None:
        if self.is_current and not self.host.opening_on_top:
            self.count()

    def _show_start(self) -> None:
        opts = self.host.queue_options
        order = opts.get("order", "depth")
        text = Text()
        text.append(" enter ", style="bold reverse")
        text.append("  start judging")
        annotator = self.host.annotator
        if annotator:
            text.append(" as ")
            text.append_text(literal(annotator, "bold"))
        text.append("\n")
        text.append(" e ", style="bold reverse")
        text.append("  evaluation   ")
        text.append(" a ", style="bold reverse")
        text.append("  agreement   ")
        text.append(" h ", style="bold reverse")
        text.append("  guidelines\n")
        text.append(" w ", style="bold reverse")
        text.append("  judge generated answers (nuggets, citations)\n\n")
        # the facts first, the explanation of the order last (a short panel cuts it)
        text.append(f"pool: top {opts.get('depth', 10)} of ")
        text.append_text(literal(', '.join(opts['runs']) if opts.get('runs') else 'every run'))
        text.append(f", blind {'off' if opts.get('show_source') else 'on'}\n")
        if order == "depth":
            text.append("order: depth", style="bold")
            text.append(" — rounds of growing depth (1, 2, 3, 5, 10, …): every query's top pairs "
                        "first, so the run comparison settles early.", style="dim")
        else:
            text.append("order: query", style="bold")
            text.append(" — a query's whole pool before the next.", style="dim")
        self.query_one("#home-start", Static).update(text)

    @work(thread=True, exclusive=True, group="home-count")
    def count(self) -> None:
        status = project_status(self.project)
        progress = annotator_progress(self.project)
        status["to_review"] = review.open_count(self.project)
        self.post_message(self.Counted(status, progress))

    def on_home_screen_counted(self, message: Counted) -> None:
        s = message.status
        pool = s["pool"]
        summary = Table.grid(padding=(0, 2))
        summary.add_column(style="bold")
        summary.add_column(justify="right")
        summary.add_row("database", literal(s["db"]))
        summary.add_row("scale", literal(f"{s['scale']} (relevant from {s['threshold']})"))
        summary.add_row("gold rule", literal(s["rule"]))
        for key in ("queries", "chunks", "runs", "annotators", "labels", "flagged"):
            summary.add_row(key, f"{s[key]:,}")
        if s.get("to_review"):
            summary.add_row("to review (v)", f"{s['to_review']:,}")
        share = f"{pool['judged'] / pool['pairs']:.0%}" if pool["pairs"] else "–"
        summary.add_row(f"pool (top {pool['depth']})", f"{pool['pairs']:,} pairs")
        summary.add_row("judged by anyone", f"{pool['judged']:,} ({share})")
        self.query_one("#home-summary", Static).update(summary)

        people = Table(box=None, expand=True, header_style="bold")
        for col in ("annotator", "graded", "skipped", "flagged", "of pool"):
            people.add_column(col, justify="left" if col == "annotator" else "right")
        for row in message.progress:
            in_pool = pool.get("by_annotator", {}).get(row["annotator"], 0)
            of_pool = f"{in_pool / pool['pairs']:.0%}" if pool["pairs"] else "–"
            name = literal(row["annotator"])
            if row.get("kind") == "llm":
                name.append(" (llm)", style="dim")
            people.add_row(name, f"{row['graded']:,}", f"{row['skipped']:,}",
                           f"{row['flagged']:,}", of_pool)
        if not message.progress:
            people.add_row(Text("nobody yet", style="dim"), "", "", "", "")
        self.query_one("#home-annotators", Static).update(people)

        runs = Table(box=None, expand=True, header_style="bold")
        for col in ("run", "queries", "entries", "depth"):
            runs.add_column(col, justify="left" if col == "run" else "right")
        for row in s["run_summary"]:
            runs.add_row(literal(row["name"]), f"{row['queries']:,}", f"{row['entries']:,}",
                         str(row["depth"]))
        if not s["run_summary"]:
            runs.add_row(Text("no runs yet: ragjudge import run FILE", style="dim"), "", "", "")
        self.query_one("#home-runs", Static).update(runs)

    def action_judge(self) -> None:
        self.host.start_judging(from_home=True)

    def action_judge_answers(self) -> None:
        self.host.start_judging(from_home=True, answers=True)

    def action_evaluation(self) -> None:
        self.host.open_evaluation()

    def action_agreement(self) -> None:
        self.host.open_agreement()

    def action_guidelines(self) -> None:
        from ragjudge.tui.screens.guidelines import GuidelinesScreen

        self.app.push_screen(GuidelinesScreen(self.project.get_setting("guidelines")))

    def action_review(self) -> None:
        self.host.open_review()

    def action_refresh(self) -> None:
        self.count()

    def action_help(self) -> None:
        from ragjudge.tui.screens.help import HelpScreen

        rows = [(k.split(",")[0] if k != "question_mark" else "?", n, t) for k, _, n, t in HOME_KEYS]
        self.app.push_screen(HelpScreen("Home keys", rows))

    def on_screen_resume(self) -> None:
        # each time this screen is shown (the first time too), unless another screen opens on
        # top of it at once (``eval --tui``): on a large project the count takes seconds of
        # the cores that screen loads on
        self.call_after_refresh(self._count_if_shown)

    async def action_quit(self) -> None:
        self.app.exit()
