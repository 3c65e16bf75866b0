"""The evaluation screen: every run scored against the gold qrels, live as labels arrive.

A timer looks at a two-number stamp of the labels (and, while an answer measure is shown, the
newest judgment of an answer) every few tens of milliseconds (any process may have written them);
when it moved, a thread worker has the :class:`ragjudge.services.scoring.live.LiveEvaluation`
re-evaluate only the queries the new events touch and posts a
:class:`EvaluationScreen.Updated` message. Messages of one kind replace an undelivered
predecessor (``can_replace``), so a burst of labels is one repaint. The slower numbers —
bootstrap intervals, agreement, pool coverage — and the paired comparison follow in their own
messages at a calmer pace. Only the message handlers touch widgets.

Tabs: overview (runs × measures), per query, curves, strata, compare.
"""

from __future__ import annotations

import math
import queue
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import DataTable, Static, TabbedContent, TabPane, Tabs

from ragjudge.errors import RagjudgeError
from ragjudge.models import AGGREGATION_RULES
from ragjudge.numeric import p_value_text
from ragjudge.services.scoring import live as svc
from ragjudge.services.access.rights import Access
from ragjudge.tui.host import Host, host
from ragjudge.tui.screens.prompts import Refused
from ragjudge.tui.widgets.evalpane import (
    CurvePlot,
    ExplainModal,
    best_rows,
    column_width,
    correction_words,
    curve_note,
    fmt,
    knee,
    lowest_cells,
    next_other,
    overview_note,
    per_query_order,
    settled_cell,
    spread_text,
)
from ragjudge.tui.widgets.fitted import FitBar, Fitted, Part
from ragjudge.tui.widgets.footer import PriorityFooter
from ragjudge.tui.widgets.literal import literal
from ragjudge.tui.widgets.widetable import WideTable

if TYPE_CHECKING:
    from ragjudge.services.gold.gold import Composition
    from ragjudge.services.scoring.settled import Settled as SettledReport

POLL_SECONDS = 0.03
"""How often the worker looks for new label events (two index lookups)."""
DETAILS_SECONDS = 2.0
"""Bootstrap intervals, agreement and pool coverage are recomputed at most this often."""
FIRST_MEASURE = 2
"""The overview's first measure column: after the run and the settled column."""
CURVE_FAMILIES = ("nDCG", "P", "R", "Success", "ContextPrecision", "AP")
SORTS = ("query", "value ↓", "value ↑", "disputed ↓", "judged ↑")
CORRECTIONS = ("holm", "bonferroni", "bh", "none")
"""The compare tab's corrections over its measures, in the order ``x`` steps through them."""

EVAL_KEYS = (
    ("o", "tab('overview')", "overview", "Runs × measures, with intervals and ranges."),
    ("p", "tab('per-query')", "per query", "Each query's value of one measure, per run."),
    ("v", "tab('curves')", "curves", "Metric@K for K = 1..20 and the precision-recall curve."),
    ("s", "tab('strata')", "strata", "The measures per query category or any query field."),
    ("c", "tab('compare')", "compare", "Two runs side by side with paired tests."),
    ("plus", "add_measure", "add", "Add a measure by name (nDCG@20, P(rel=2)@5); saved in the project."),
    ("minus", "remove_measure", "remove", "Remove the measure under the cursor from the overview."),
    ("g", "next_rule", "rule", "Next gold rule: median, majority, mean, min, max, one annotator, adjudicated."),
    ("m", "next_measure", "measure", "Per query / strata / curves, and the overview's settled column: the next measure or curve family."),
    ("f", "next_filter", "filter", "Per query: the next category; strata: the next query field."),
    ("t", "next_sort", "sort", "Per query: the next sort order."),
    ("a", "next_run('a')", "run A", "Compare: the next run as A."),
    ("b", "next_run('b')", "run B", "Compare: the next run as B."),
    ("x", "next_correction", "correction", "Compare: the next correction of the p-values over the measures (Holm, Bonferroni, Benjamini-Hochberg, none)."),
    ("n", "next_coverage", "coverage", "Ranges: the next share of the pool an annotator's labels must cover to count (50%, 75%, 100%, any, 10%, 25%); saved in the project."),
    ("r", "refresh", "refresh", "Recompute everything from the database now."),
    ("l", "toggle_llm", "LLM in gold", "Let LLM annotators' grades into the gold and the ranges (off: people only)."),
    ("escape,q", "back", "back", "Back to the previous screen."),
)


class EvaluationScreen(Screen):
    """Every run of the project scored live against the gold qrels."""

    CSS_PATH = "evaluation.tcss"

    BINDINGS = [
        Binding(k, a, n, tooltip=t, id=f"eval.{n.replace(' ', '-')}",
                show=k not in ("minus", "a", "b", "x", "t", "r", "n", "l"),
                key_display={"plus": "+", "minus": "-"}.get(k))
        for k, a, n, t in EVAL_KEYS
    ]
    FOOTER_PRIORITY = {"back": 0, "tab('overview')": 1, "tab('per-query')": 1, "tab('curves')": 1,
                       "tab('strata')": 1, "tab('compare')": 1, "add_measure": 2,
                       "next_rule": 2, "next_measure": 2, "next_filter": 3}
    """What a narrow footer keeps first (see PriorityFooter)."""

    rule: reactive[str] = reactive("median", init=False)
    """The gold rule the numbers are computed under."""
    measure: reactive[str] = reactive("nDCG@10", init=False)
    """The measure of the per-query and strata tabs."""
    clock = staticmethod(lambda snapshot: snapshot.updated_at.astimezone().strftime("%H:%M:%S"))
    """How the time of the last update is shown (tests freeze it)."""

    class Updated(Message):
        """A fresh snapshot of the numbers (replaces an undelivered one)."""

        def __init__(self, snapshot: svc.LiveSnapshot) -> None:
            super().__init__()
            self.snapshot = snapshot

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, EvaluationScreen.Updated)

    class Detailed(Message):
        """Intervals, agreement and pool coverage, and what the gold is made of (replaces an
        undelivered one)."""

        def __init__(self, details: svc.LiveDetails, composition: Composition | None = None) -> None:
            super().__init__()
            self.details = details
            self.composition = composition

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, EvaluationScreen.Detailed)

    class Compared(Message):
        """The paired comparison of the two chosen runs (``rows``: its
        :class:`~ragjudge.services.scoring.comparisons.BaselinePair` per measure)."""

        def __init__(self, pair: tuple[str, str], rows: list, queries: int,
                     correction: str = CORRECTIONS[0]) -> None:
            super().__init__()
            self.pair = pair
            self.rows = rows
            self.queries = queries
            self.correction = correction

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, EvaluationScreen.Compared)

    class SettledFound(Message):
        """Whether each comparison of adjacent runs is settled (after a details pass; replaces
        an undelivered one)."""

        def __init__(self, report: SettledReport) -> None:
            super().__init__()
            self.report = report

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, EvaluationScreen.SettledFound)

    class Failed(Message):
        """The worker hit an error it can explain."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, project) -> None:  # noqa: ANN001 - Project
        super().__init__()
        self.project = project
        self.engine: svc.LiveEvaluation | None = None
        self.snapshot: svc.LiveSnapshot | None = None
        self.details: svc.LiveDetails | None = None
        self.composition: Composition | None = None
        """what the gold is made of (:class:`ragjudge.services.gold.gold.Composition`), as the
        last details pass counted it (set by the message handler)"""
        self.requests: queue.Queue = queue.Queue()
        self.applied: list[tuple[int, float]] = []
        """(label id, time.perf_counter()) each time a snapshot reached the widgets"""
        self.category: str | None = None
        self.sort = 0
        self.field = "category"
        self.pair: tuple[str, str] | None = None
        self.correction = CORRECTIONS[0]
        """the compare tab's correction of its p-values over the measures"""
        self._query_rows: list[str] = []
        self._stale: set[str] = set()
        self._rendered: dict[str, tuple] = {}
        self._active = "overview"
        """the visible tab (read by the workers: what the snapshot must carry)"""
        self._busy = {"live": True, "details": True, "compare": True}
        self._settle_wanted = False
        """a details pass came in: the settled pass is to follow (once the engine is loaded)"""
        self._fields: list[str] = ["category"]
        self._added: str | None = None
        """A measure just added with +: the overview scrolls to it once it is computed."""
        self._rules: list[str] = list(AGGREGATION_RULES)
        self.settled: SettledReport | None = None
        """whether each comparison of adjacent runs is settled, as the last settled pass found
        (:func:`ragjudge.services.scoring.settled.screen_settlement`)"""

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="eval-title")
        yield FitBar(Text("loading the runs and labels…", style="dim"), id="eval-header")
        with TabbedContent(initial="overview"):
            with TabPane("overview", id="overview"):
                yield WideTable(id="overview-table", cursor_type="column", zebra_stripes=True)
                yield Static(id="overview-table-cue", classes="cue")
                yield Fitted(id="overview-note")
            with TabPane("per query", id="per-query"):
                yield Static(id="per-query-hint")
                yield WideTable(id="per-query-table", cursor_type="row", zebra_stripes=True)
                yield Static(id="per-query-table-cue", classes="cue")
            with TabPane("curves", id="curves"):
                with Horizontal(id="curves-row"):
                    yield CurvePlot(id="curve-k")
                    yield CurvePlot(id="curve-pr")
                yield Fitted(id="curves-note")
            with TabPane("strata", id="strata"):
                yield Static(id="strata-hint")
                yield WideTable(id="strata-table", cursor_type="row", zebra_stripes=True)
                yield Static(id="strata-table-cue", classes="cue")
            with TabPane("compare", id="compare"):
                yield Static(id="compare-hint")
                with VerticalScroll():
                    yield WideTable(id="compare-table", cursor_type="row", zebra_stripes=True)
                yield Static(id="compare-table-cue", classes="cue")
        yield PriorityFooter(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        # the arrow keys belong to the tables (they scroll wide ones); tabs go by their letters
        self.query_one(TabbedContent).query_one(Tabs).can_focus = False
        self.query_one("#overview-table", DataTable).focus()
        title = Text("evaluation  ", style="bold")
        title.append_text(literal(self.project.name, "bold cyan"))
        self.query_one("#eval-title", Static).update(title)
        options = self.host.evaluation_options
        try:
            self.host.access().require_readable_rule(options.get("rule"))
            self.engine = svc.LiveEvaluation(self.project, **options)
        except RagjudgeError as exc:
            self.query_one("#eval-header", FitBar).update(literal(str(exc), "red"))
            return
        self.set_reactive(EvaluationScreen.rule, self.engine.rule)
        self.set_reactive(EvaluationScreen.measure, self.engine.measures[0])
        if "nDCG@10" in self.engine.measures:
            self.set_reactive(EvaluationScreen.measure, "nDCG@10")
        self._start()

    @property
    def host(self) -> Host:
        """The app as this screen sees it: who looks, and what they may do."""
        return host(self.app, self.project)

    def _as_lead(self, doing: str) -> Access | None:
        """The viewer's rights when they may ``doing`` (a lead's setting); else None, with the
        refusal shown where the next keys go (:class:`Refused`)."""
        access = self.host.access()
        try:
            access.require_lead(doing)
        except RagjudgeError as exc:
            self.app.push_screen(Refused(str(exc)))
            return None
        return access

    def _saved(self, save: Any) -> bool:
        """Run a service call that saves a setting; a refusal is shown as :meth:`_as_lead` does."""
        try:
            save()
        except RagjudgeError as exc:
            self.app.push_screen(Refused(str(exc)))
            return False
        return True

    # -- the worker --------------------------------------------------------------------------

    def _start(self) -> None:
        self._busy = {"live": True, "details": False, "compare": False, "settled": False}
        self._settle_wanted = False
        self._details_version = -1
        self._details_at = 0.0
        self._details_cost = 0.0
        self._compared: tuple | None = None
        self.load_engine()
        self.set_interval(POLL_SECONDS, self._tick)

    @work(thread=True, group="live-evaluation")
    def load_engine(self) -> None:
        """Read the runs and labels and evaluate everything (the one slow step)."""
        try:
            engine = self._loaded()
            engine.load(first=self._first_numbers)  # a large project: the gold's numbers first
            self._fields = engine.fields()
            self._post_snapshot()
        except RagjudgeError as exc:
            self.post_message(self.Failed(str(exc)))
            self.engine = None
        finally:
            self._busy["live"] = False

    def _first_numbers(self) -> None:
        """On a large project, once the gold view is evaluated (on the loading thread, the
        engine's lock held): its numbers shown, and the details pass started on its own worker
        from a copy of what it reads (the gold view and the labels), so that the intervals,
        agreement and pool coverage are made while the annotators' views are evaluated."""
        self._post_snapshot()
        self._busy["details"] = True
        self.compute_details(self._loaded().details_work())

    def _tick(self) -> None:
        """Every POLL_SECONDS on the UI thread: start a worker only when there is work (new
        label events or adjudications — two index lookups —, a request, stale details)."""
        from ragjudge.services.agreement.ratings import labels_stamp

        engine = self.engine
        if engine is None or self._busy["live"]:
            return
        self._settle()
        # the details pass waits at least three times its own last duration, so that on a
        # large project it never takes most of the interpreter from the label updates
        pause = max(DETAILS_SECONDS, 3 * self._details_cost)
        if not self._busy["details"] and engine.version != self._details_version \
                and time.monotonic() - self._details_at >= pause:
            self._busy["details"] = True
            self.compute_details()
        want = self._compare_wanted(engine)
        if want is not None and want != self._compared and not self._busy["compare"]:
            self._busy["compare"] = True
            self._compared = want
            self.compute_comparison(want[1:3], want[4])
        try:
            changed = labels_stamp(self.project) != engine.stamp
            if not changed and engine.watches_answers:  # judgments of the runs' answers
                from ragjudge.services.events.answers import answers_stamp

                changed = answers_stamp(self.project) != engine.answer_stamp
        except RagjudgeError as exc:
            self.notify(str(exc), severity="error", timeout=10)
            return
        if changed or not self.requests.empty():
            self._busy["live"] = True
            self.update_numbers()

    @work(thread=True, group="live-evaluation")
    def update_numbers(self) -> None:
        """Take in new label events (only the touched queries) and what the UI asked for."""
        try:
            engine = self._loaded()
            changed = self._serve_requests(engine)
            changed = engine.poll() or changed
            if changed:
                self._post_snapshot()
        except RagjudgeError as exc:
            self.post_message(self.Failed(str(exc)))
        finally:
            self._busy["live"] = False

    @work(thread=True, group="live-evaluation-details")
    def compute_details(self, prepared: Callable[[], svc.LiveDetails] | None = None) -> None:
        """Intervals, agreement and pool coverage, beside the fast updates (``prepared``: from
        a copy already taken, :meth:`_first_numbers`)."""
        started = time.monotonic()
        try:
            if prepared is not None:
                details = prepared()
            else:
                engine = self._loaded()
                engine.resync()
                details = engine.details()
            self._details_version = details.version
            self.post_message(self.Detailed(details, details.composition))
        except RagjudgeError as exc:
            self.post_message(self.Failed(str(exc)))
        finally:
            self._details_at = time.monotonic()
            self._details_cost = self._details_at - started
            self._busy["details"] = False

    @work(thread=True, group="live-evaluation-settled")
    def compute_settled(self) -> None:
        """Whether each comparison of adjacent runs is settled: after a details pass, beside
        the fast updates (it reads the gold again and draws the unjudged pairs' grades)."""
        from ragjudge.services.scoring.settled import screen_settlement

        try:
            engine = self._loaded()
            report = screen_settlement(self.project, engine.runs, rule=engine.rule,
                                       include_llm=engine.include_llm, measures=engine.measures)
            self.post_message(self.SettledFound(report))
        except RagjudgeError as exc:
            self.post_message(self.Failed(str(exc)))
        finally:
            self._busy["settled"] = False

    @work(thread=True, group="live-evaluation-compare")
    def compute_comparison(self, pair: tuple[str, str], correction: str) -> None:
        try:
            self._post_comparison(self._loaded(), pair, correction)
        except RagjudgeError as exc:
            self.post_message(self.Failed(str(exc)))
        finally:
            self._busy["compare"] = False

    def _loaded(self) -> svc.LiveEvaluation:
        """The engine a worker runs on (None only once loading it failed)."""
        if self.engine is None:
            raise RagjudgeError("the evaluation could not be loaded")
        return self.engine

    def _serve_requests(self, engine: svc.LiveEvaluation) -> bool:
        """Apply what the UI asked for (new rule, measures, ...)."""
        served = False
        while True:
            try:
                kind, value = self.requests.get_nowait()
            except queue.Empty:
                return served
            served = True
            if kind == "rule":
                engine.set_rule(value)
            elif kind == "measures":
                engine.set_measures(value)
            elif kind == "curve":
                engine.set_curve(value)
            elif kind == "coverage":
                engine.set_coverage(value)
            elif kind == "refresh":
                engine.recompute()
            elif kind == "llm":
                engine.set_include_llm(value)

    def _post_snapshot(self) -> None:
        """The numbers of the moment; the per-query column and the strata only while their tab
        is shown (on 10,000 queries they cost more than the update itself)."""
        engine = self._loaded()
        measure = self.measure if self.measure in engine.measures else engine.measures[0]
        self.post_message(self.Updated(engine.snapshot(
            measure=measure if self._active == "per-query" else None,
            by=self.field if self._active == "strata" else None)))

    def _compare_wanted(self, engine: svc.LiveEvaluation) -> tuple | None:
        if self.pair is None or self.query_one(TabbedContent).active != "compare":
            return None
        return (engine.version, *self.pair, tuple(engine.measures), self.correction)

    def _post_comparison(self, engine: svc.LiveEvaluation, pair: tuple[str, str],
                         correction: str) -> None:
        """The two runs' comparison: Fisher's randomization test on each measure, its p-values
        corrected over the measures (the family of this tab's verdicts)."""
        from ragjudge.services.scoring.comparisons import compare_baseline

        a, b = pair
        if a == b:
            self.post_message(self.Compared((a, b), [], 0, correction))
            return
        evaluation = engine.evaluation([a, b])
        if not evaluation.query_ids:
            self.post_message(self.Compared((a, b), [], 0, correction))
            return
        compared = compare_baseline(evaluation, baseline=a, correction=correction, family="measures")
        self.post_message(self.Compared((a, b), list(compared.pairs), len(evaluation.query_ids),
                                        correction))

    # -- handlers: only these touch widgets -------------------------------------------------

    def on_evaluation_screen_updated(self, message: Updated) -> None:
        snapshot = message.snapshot
        self.snapshot = snapshot
        if self.pair is None and len(snapshot.run_names) >= 2:
            self.pair = (snapshot.run_names[0], snapshot.run_names[1])
        self._show_header()
        self._stale = {"overview", "per-query", "curves", "strata", "compare"}
        self._show_active()
        self.applied.append((self.engine.stamp[0] if self.engine else 0, time.perf_counter()))
        self._settle()

    def on_evaluation_screen_detailed(self, message: Detailed) -> None:
        self.details = message.details
        self.composition = message.composition
        self._show_header()
        self._stale |= {"overview", "per-query"}
        self._show_active()
        self._settle_wanted = True
        self._settle()

    def _settle(self) -> None:
        """Start the settled pass a details pass asked for once the screen shows the numbers
        those details are of (details made while the annotators' views are evaluated: once
        those views are loaded and shown; the settled pass reads the gold again and would
        compete with them)."""
        shown = self.snapshot is not None and self.details is not None \
            and self.snapshot.version >= self.details.version
        if self._settle_wanted and shown and self.engine is not None and not self._busy["settled"] \
                and not self._busy["live"]:
            self._settle_wanted = False
            self._busy["settled"] = True
            self.compute_settled()

    def on_evaluation_screen_settled_found(self, message: SettledFound) -> None:
        self.settled = message.report
        self._stale.add("overview")
        self._show_active()

    def _show_active(self) -> None:
        """Render the visible tab only; the others when they are shown (a label costs one
        table, not five)."""
        try:
            active = self.query_one(TabbedContent).active or "overview"
        except Exception:  # noqa: BLE001 - not composed yet
            return
        if active not in self._stale:
            return
        self._stale.discard(active)
        s = self.snapshot
        key = (s.version if s else None, s.strata_field if s else None, s.rows.measure if s and s.rows else None,
               s.curve if s else None, id(self.details), self.pair, id(self.settled), self.measure)
        if self._rendered.get(active) == key:
            return  # the same numbers: leave the table (and its layout) alone
        self._rendered[active] = key
        {"overview": self._show_overview, "per-query": self._show_per_query,
         "curves": self._show_curves, "strata": self._show_strata,
         "compare": self._show_compare_hint}[active]()

    def on_evaluation_screen_compared(self, message: Compared) -> None:
        self._show_compare(message)

    def on_evaluation_screen_failed(self, message: Failed) -> None:
        self.notify(message.text, severity="error", timeout=10)

    # -- header ------------------------------------------------------------------------------

    def _show_header(self) -> None:
        """Four lines: the labels and the gold, Judged@10 per run, agreement, what the gold is
        made of; each fitted to the width (short forms, then an ellipsis)."""
        s, d = self.snapshot, self.details
        if s is None:
            return
        counts = Text()
        counts.append(f"{s.labels_used:,}", style="bold")
        counts.append(f" labels ({len(s.annotators)} annotators) → ")
        counts.append(f"{s.gold_pairs:,}", style="bold")
        counts.append(" gold pairs")
        line = [Part(counts, Text(f"{s.labels_used:,} labels → {s.gold_pairs:,} gold pairs")),
                Part(Text(f"{s.n_queries}/{s.n_queries_total} queries"))]
        if d is not None and d.pool_pairs:
            share = f"{100 * d.pool_judged / d.pool_pairs:.0f}%"
            line.append(Part(Text(f"pool@10 {share} judged"), Text(f"pool {share}")))
        line += [Part(Text(f"rel ≥ {s.threshold}")), Part(Text(f"at {self.clock(s)}"), Text(""))]
        judged = []
        for i, name in enumerate(s.run_names):
            cell = Text("Judged@10 " if i == 0 else "")
            cell.append_text(literal(name))
            cell.append(f" {fmt(s.judged_at_10[name], 2)}")
            short = cell.copy()
            unjudged = s.unjudged_top10[name]
            if unjudged:
                cell.append(f" ({unjudged:,} unjudged)", style="yellow")
                short.append(f" ({unjudged:,})", style="yellow")
            judged.append(Part(cell, short, cut=True))
        judged.append(Part(Text("(unjudged: scores are lower bounds)", style="dim"), Text("")))
        if d is None:
            agree = [Part(Text.assemble("agreement: ", ("computing…", "dim")))]
        else:
            agree = [Part(Text(f"agreement: Krippendorff's α ordinal {fmt(d.alpha_ordinal, 3)}, "
                               f"nominal {fmt(d.alpha_nominal, 3)}"),
                          Text(f"α ordinal {fmt(d.alpha_ordinal, 3)}")),
                     Part(Text(f"Cohen's κ {fmt(d.mean_kappa, 3)} over {d.kappa_units:,} shared pairs"),
                          Text(f"κ {fmt(d.mean_kappa, 3)}")),
                     Part(Text(f"{d.disputed:,} disputed pairs", style="bold" if d.disputed else ""),
                          Text(f"{d.disputed:,} disputed", style="bold" if d.disputed else ""))]
        self.query_one("#eval-header", FitBar).show_lines(
            line, judged, agree, [Part(self._gold_line(s), cut=True)], wide=False)

    def _gold_line(self, s: svc.LiveSnapshot) -> Text:
        """The gold's composition under the rule shown; until it is counted, the rule alone."""
        composition = self.composition
        if composition is not None and composition.rule == s.rule:
            return literal(composition.describe())
        line = Text("gold: ")
        line.append_text(literal(s.rule, "bold"))
        line.append(" · counting what it is made of…", style="dim")
        return line

    # -- overview ----------------------------------------------------------------------------

    def _show_overview(self) -> None:
        s, d = self.snapshot, self.details
        if s is None:
            return
        table = self.query_one("#overview-table", DataTable)
        keep = table.cursor_coordinate
        table.clear(columns=True)
        table.fixed_columns = FIRST_MEASURE  # the run and the settled column stay in view
        # explicit widths: the table lays out at once, not on the next idle moment
        table.add_column("run", key="run", width=column_width(["run", *s.run_names]))
        settled = {n: settled_cell(self.settled, self.measure, n) for n in s.run_names}
        table.add_column(literal(f"settled {self.measure}"), key="settled", width=max(
            len(self.measure) + 8, *(len(line) for t in settled.values() for line in t.plain.split("\n"))))
        spreads = {(n, m): spread_text(s, n, m) for n in s.run_names for m in s.measures}
        for m in s.measures:
            table.add_column(literal(m), key=m, width=max(
                len(m), 14, *(len(spreads[n, m]) for n in s.run_names)))
        best = {m: best_rows([s.means[n][m] for n in s.run_names]) for m in s.measures}
        for i, name in enumerate(s.run_names):
            cells: list[Text] = [literal(name, "bold"), settled[name]]
            for m in s.measures:
                value = s.means[name][m]
                cell = Text(("*" if i in best[m] else " ") + fmt(value),
                            style="bold green" if i in best[m] else "")
                ci = d.intervals.get(name, {}).get(m) if d is not None else None
                if d is not None and m in d.too_few.get(name, ()):
                    cell.append("\ntoo few queries", style="dim")
                else:
                    cell.append("\n" + (f"[{ci[0]:.3f},{ci[1]:.3f}]" if ci and not math.isnan(ci[0])
                                        else ""), style="dim")
                cell.append_text(literal("\n" + spreads[name, m], "cyan"))
                cells.append(cell)
            table.add_row(*cells, height=3, key=name)
        if s.run_names and s.measures:
            table.cursor_coordinate = (keep if keep.column < len(s.measures) + FIRST_MEASURE
                                       else keep._replace(column=FIRST_MEASURE))
        added, self._added = self._added, None
        if added in s.measures and s.run_names:  # a measure just added: its column in view
            table.move_cursor(column=s.measures.index(added) + FIRST_MEASURE, animate=False)
            self.notify(f"Added {added}: column {s.measures.index(added) + 1} of {len(s.measures)}.",
                        timeout=3)
        elif added is not None:
            self._added = added  # the snapshot with it has not come yet
        self.query_one("#overview-note", Static).update(overview_note(
            s, d.resamples if d is not None else None, self.settled, self.measure))

    # -- per query ---------------------------------------------------------------------------

    def _show_per_query(self) -> None:
        s, d = self.snapshot, self.details
        if s is None or s.rows is None:
            return
        rows = s.rows
        disputed = d.disputed_by_query if d is not None else {}
        categories = sorted({c or "(none)" for c in rows.categories})
        if self.category is not None and self.category not in categories:
            self.category = None
        hint = Text()
        hint.append_text(literal(rows.measure, "bold"))
        hint.append(" per query · category: ")
        hint.append_text(literal(self.category or "all"))
        hint.append(f" · sort: {SORTS[self.sort]} · m measure · f category · t sort · "
                    "Enter: explain and judge")
        self.query_one("#per-query-hint", Static).update(hint)
        order = per_query_order(rows, self.category, SORTS[self.sort],
                                s.run_names[0] if s.run_names else None, disputed)
        table = self.query_one("#per-query-table", DataTable)
        keep = table.cursor_row
        table.clear(columns=True)
        for label, texts in (("query", rows.query_ids), ("category", [c or "" for c in rows.categories]),
                             ("judged", ["judged"]), ("disputed", ["disputed"])):
            table.add_column(label, width=column_width([label, *texts]))
        for name in s.run_names:
            table.add_column(literal(name), width=max(len(name), 7))
        self._query_rows = []
        for i in order:
            qid = rows.query_ids[i]
            values = [rows.values[n][i] for n in s.run_names]
            top = best_rows(values)
            cells = [literal(qid), literal(rows.categories[i] or ""), str(int(rows.judged[i])),
                     str(disputed.get(qid, 0))]
            cells += [Text(fmt(v), style="bold green" if j in top else "") for j, v in enumerate(values)]
            table.add_row(*cells)
            self._query_rows.append(qid)
        if self._query_rows:
            table.move_cursor(row=min(keep, len(self._query_rows) - 1))

    @on(DataTable.RowSelected, "#per-query-table")
    def query_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if not 0 <= event.cursor_row < len(self._query_rows) or self.engine is None:
            return
        self._explain(self._query_rows[event.cursor_row])

    def _explain(self, query_id: str) -> None:
        """The computation per run, as the viewer may read it (in a blind project, without the
        grades and ranks of the pairs they have not judged: the service leaves them out)."""
        engine, s = self.engine, self.snapshot
        if engine is None or s is None or s.rows is None:
            return
        access = self.host.access()
        parts = []
        for name in s.run_names:
            parts.append(f"── run {name} ──\n" + engine.explain(name, query_id, s.rows.measure,
                                                                access=access))
        unjudged = engine.unjudged_pairs(query_id)
        title = f"{s.rows.measure} for query {query_id} (rule {s.rule})"

        def chosen(answer: str | None) -> None:
            if answer == "judge":
                self._judge(query_id)

        self.app.push_screen(ExplainModal(title, "\n\n".join(parts), unjudged), chosen)

    def _judge(self, query_id: str) -> None:
        """Judge the query's unjudged pairs: the judging screen on a queue of exactly the pairs
        of the runs' top 10 for this query that have no gold grade yet."""
        unjudged = self.engine.unjudged_pairs(query_id) if self.engine else []
        from ragjudge.tui.screens.prompts import TextPrompt

        def named(name: str | None) -> None:
            if not name:
                return
            self.host.confirm_annotator(
                name, start, cancelled=lambda: None,
                refuse=lambda message: self.notify(message, severity="error", timeout=8))

        def start(name: str) -> None:
            from ragjudge.services.events import annotators as judging_annotators
            from ragjudge.services.labels import queue as judging_queue
            from ragjudge.tui.screens.judge import JudgeScreen

            try:
                name = judging_annotators.check_annotator(name)
                judging_annotators.ensure_annotator(self.project, name)
                queue_ = judging_queue.JudgingQueue(self.project, name,
                                              pairs=[(query_id, c) for c in unjudged])
            except RagjudgeError as exc:
                self.notify(str(exc), severity="error", timeout=8)
                return
            self.host.annotator = name
            self.app.push_screen(JudgeScreen(self.project, queue_, from_home=True))

        annotator = self.host.annotator
        if annotator:
            named(annotator)
        else:
            self.app.push_screen(TextPrompt("Your name (every label you give is recorded under it):",
                                            placeholder="e.g. alice"), named)

    # -- curves ------------------------------------------------------------------------------

    def _show_curves(self) -> None:
        s = self.snapshot
        if s is None or not s.run_names:
            return
        ks = list(svc.CURVE_K)
        best = max(s.run_names, key=lambda n: sum(0 if math.isnan(v) else v for v in s.curve_values[n]))
        mark = knee(s.curve_values[best], ks)
        self.query_one("#curve-k", CurvePlot).show(f"{s.curve}@K", ks, s.curve_values, "K", mark,
                                                 whole_x=True)
        self.query_one("#curve-pr", CurvePlot).show(
            "interpolated precision at recall", list(svc.PR_LEVELS), s.pr_values, "recall")
        self.query_one("#curves-note", Static).update(curve_note(s.curve, best, mark))

    # -- strata ------------------------------------------------------------------------------

    def _show_strata(self) -> None:
        s = self.snapshot
        if s is None or s.strata_field is None:
            return
        hint = Text()
        hint.append_text(literal(f"by {s.strata_field}", "bold"))
        hint.append_text(literal(f" (f: next field of {', '.join(self._fields)})"))
        hint.append(" · the lowest value per measure is red, so an aggregate cannot hide a failing group")
        self.query_one("#strata-hint", Static).update(hint)
        table = self.query_one("#strata-table", DataTable)
        table.clear(columns=True)
        first = s.strata_field or "stratum"
        table.add_column(literal(first), width=column_width([first, *s.strata]))
        table.add_column("queries", width=7)
        table.add_column("run", width=column_width(["run", *s.run_names]))
        for m in s.measures:
            table.add_column(literal(m), width=max(len(m), 7))
        worst = lowest_cells(s)
        for stratum, by_run in s.strata.items():
            for j, name in enumerate(s.run_names):
                cells = [literal(stratum if j == 0 else ""), str(s.strata_sizes[stratum]) if j == 0 else "",
                         literal(name)]
                for m in s.measures:
                    style = "bold red" if worst.get(m) == (stratum, name) else ""
                    cells.append(Text(fmt(by_run[name][m]), style=style))
                table.add_row(*cells)

    # -- compare -----------------------------------------------------------------------------

    def _show_compare_hint(self) -> None:
        hint = Text()
        if self.pair is None:
            hint.append("Compare needs two runs.", style="dim")
        else:
            hint.append("A = ")
            hint.append_text(literal(self.pair[0], "bold"))
            hint.append(", B = ")
            hint.append_text(literal(self.pair[1], "bold"))
            hint.append(" · a / b: next run · x: next correction\n")
            hint.append_text(correction_words(
                self.correction, len(self.snapshot.measures) if self.snapshot is not None else 0))
        self.query_one("#compare-hint", Static).update(hint)

    def _show_compare(self, message: Compared) -> None:
        from ragjudge.services.scoring.comparisons import SHORT_CORRECTIONS

        table = self.query_one("#compare-table", DataTable)
        table.clear(columns=True)
        adjusted = message.correction != "none"
        corrected = [(f"p ({SHORT_CORRECTIONS[message.correction]})", 12)] if adjusted else []
        for label, width in (("measure", column_width(["measure", *(self.snapshot.measures if self.snapshot else [])])),
                             ("A", 7), ("B", 7), ("B − A", 8),
                             ("95% CI (unadjusted)" if adjusted else "95% CI", 20), ("p rand", 8),
                             *corrected, ("d_z", 6), ("verdict", 12 + column_width(list(message.pair)))):
            table.add_column(label, width=width)
        if message.pair != self.pair or message.correction != self.correction:
            return
        for row in message.rows:
            verdict = Text(row.verdict)
            if row.winner is not None:
                verdict.stylize("bold green" if row.verdict == "B better" else "bold red")
                verdict.append(" (")
                verdict.append_text(literal(row.winner))
                verdict.append(")")
            ci = ("-" if math.isnan(row.ci_low) else f"[{row.ci_low:+.4f}, {row.ci_high:+.4f}]")
            p_values = [p_value_text(row.p_value)] + ([p_value_text(row.p_adjusted)] if adjusted else [])
            effect = "-" if not math.isfinite(row.effect_size) else f"{row.effect_size:+.2f}"
            table.add_row(literal(row.measure), fmt(row.mean_a), fmt(row.mean_b),
                          "-" if math.isnan(row.difference) else f"{row.difference:+.4f}", ci,
                          *p_values, effect, verdict)

    # -- actions -----------------------------------------------------------------------------

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self._active = tab
        self._focus_table(tab)
        self.requests.put(("wake", None))

    def _focus_table(self, tab: str) -> None:
        """The tab's table takes the keys (the arrows scroll it)."""
        focus = {"overview": "#overview-table", "per-query": "#per-query-table",
                 "strata": "#strata-table", "compare": "#compare-table"}.get(tab)
        if focus:
            self.query_one(focus, DataTable).focus()

    @on(TabbedContent.TabActivated)
    def tab_activated(self) -> None:
        self._active = self.query_one(TabbedContent).active
        self._focus_table(self._active)
        self._show_active()
        self.requests.put(("wake", None))

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_refresh(self) -> None:
        self.requests.put(("refresh", None))

    def action_toggle_llm(self) -> None:
        if self.engine is None:
            return
        self._include_llm = not getattr(self, "_include_llm", False)
        self.requests.put(("llm", self._include_llm))
        self.notify("LLM annotators' grades: " + ("in the gold and the ranges" if self._include_llm
                                                  else "left out (people only)"), timeout=3)

    def action_next_rule(self) -> None:
        if self.engine is None:
            return
        annotators = self.snapshot.annotators if self.snapshot else []
        rules = svc.gold_rules(self.host.access(), annotators)
        current = rules.index(self.rule) if self.rule in rules else -1
        self.rule = rules[(current + 1) % len(rules)]
        self.requests.put(("rule", self.rule))
        self.notify(f"Gold rule: {self.rule}", timeout=2)

    def action_next_coverage(self) -> None:
        if self.engine is None:
            return
        current = self.snapshot.min_coverage if self.snapshot else svc.RANGE_COVERAGE
        choices = svc.COVERAGE_CHOICES
        share = choices[(choices.index(current) + 1) % len(choices)] if current in choices else choices[0]
        access = self.host.access()
        if not self._saved(lambda: svc.save_coverage(self.project, share, access=access)):
            return
        self.requests.put(("coverage", share))
        self.notify(f"Ranges: annotators covering ≥ {share:.0%} of the pool", timeout=2)

    def action_next_measure(self) -> None:
        if self.snapshot is None:
            return
        if self.query_one(TabbedContent).active == "curves":
            family = CURVE_FAMILIES[(CURVE_FAMILIES.index(self.snapshot.curve) + 1) % len(CURVE_FAMILIES)
                                    if self.snapshot.curve in CURVE_FAMILIES else 0]
            self.requests.put(("curve", family))
            return
        measures = self.snapshot.measures
        i = measures.index(self.measure) if self.measure in measures else -1
        self.measure = measures[(i + 1) % len(measures)]
        self.requests.put(("wake", None))
        self._wake_snapshot()

    def action_next_filter(self) -> None:
        if self.snapshot is None:
            return
        if self.query_one(TabbedContent).active == "strata":
            i = self._fields.index(self.field) if self.field in self._fields else -1
            self.field = self._fields[(i + 1) % len(self._fields)]
        else:
            rows = self.snapshot.rows
            categories: list[str | None] = [None, *sorted({c or "(none)" for c in rows.categories})] if rows else [None]
            i = categories.index(self.category) if self.category in categories else 0
            self.category = categories[(i + 1) % len(categories)]
            self._show_per_query()
        self._wake_snapshot()

    def action_next_sort(self) -> None:
        self.sort = (self.sort + 1) % len(SORTS)
        self._show_per_query()

    def action_next_run(self, which: str) -> None:
        s = self.snapshot
        if s is None or len(s.run_names) < 2 or self.pair is None:
            return
        a, b = self.pair
        if which == "a":
            a = next_other(s.run_names, a, b)
        else:
            b = next_other(s.run_names, b, a)
        self.pair = (a, b)
        self._show_compare_hint()
        self.query_one("#compare-table", DataTable).clear()
        self.requests.put(("wake", None))

    def action_next_correction(self) -> None:
        """The compare tab's next correction over its measures (a view, not a project setting)."""
        self.correction = CORRECTIONS[(CORRECTIONS.index(self.correction) + 1) % len(CORRECTIONS)]
        self._show_compare_hint()
        self.query_one("#compare-table", DataTable).clear()
        self.requests.put(("wake", None))

    def _save_measures(self, measures: list[str], access: Access) -> bool:
        """Save the measures (the service refuses a non-lead), then show them."""
        if not self._saved(lambda: svc.save_measures(self.project, measures, access=access)):
            return False
        self.requests.put(("measures", measures))
        return True

    def action_add_measure(self) -> None:
        from ragjudge.tui.screens.prompts import TextPrompt

        access = self._as_lead("add a measure to the saved measures (a project setting)")
        if access is None:
            return

        def add(name: str | None) -> None:
            if not name or self.engine is None:
                return
            from ragjudge.metrics.registry import parse_measure

            try:
                parse_measure(name)
            except RagjudgeError as exc:
                self.notify(str(exc), severity="error", timeout=8)
                return
            measures = list(dict.fromkeys([*self.engine.measures, name]))
            if self._save_measures(measures, access):
                self._added = name

        self.app.push_screen(TextPrompt("Add a measure (ir_measures syntax, e.g. nDCG@20, P(rel=2)@5):",
                                        placeholder="nDCG@20"), add)

    def action_remove_measure(self) -> None:
        if self.engine is None or self.snapshot is None:
            return
        access = self._as_lead("remove a measure from the saved measures (a project setting)")
        if access is None:
            return
        table = self.query_one("#overview-table", DataTable)
        column = table.cursor_coordinate.column - FIRST_MEASURE
        measures = list(self.snapshot.measures)
        if not 0 <= column < len(measures) or len(measures) == 1:
            self.notify("Put the cursor on a measure's column (one measure always stays).")
            return
        measures.pop(column)
        self._save_measures(measures, access)

    def _wake_snapshot(self) -> None:
        self.requests.put(("snapshot", None))

    def watch_measure(self) -> None:
        self._wake_snapshot()
        self._stale.add("overview")  # the settled column follows the measure
        self._show_active()
