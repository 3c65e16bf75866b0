"""The evaluation screen: every run scored against the gold qrels, live as labels arrive.

A timer looks at a two-number stamp of the labels (and, while an answer measure is shown, the
newest judgment of an answer) every few tens of milliseconds (any process may have written them);
when it moved, a thread worker has the :class:`ragjudge.services.scoring.live.LiveEvaluation`
re-evaluate only the queries the new events touch and posts a
:class:`EvaluationScreen.Updated` message. Messages of one kind replace an undelivered
predecessor (``can_replace``), so a burst of labels is one repaint. The slower numbers —
bootstrap intervals, agreement, pool coverage — and the paired comparison follow in their own
messages at a calmer pace. Only the message handlers touch widgets.

Tabs: overview (runs × measures), per query, curves, strata, compare. The header and the first
four tabs are filled by :class:`~ragjudge.tui.screens.evaltabs.EvalTabs`, the compare tab (and
its keys a, b, x) by :class:`~ragjudge.tui.screens.evalcompare.CompareTab`: mixins of this
screen, which keeps the workers, the message handlers, the bindings and the reactive attributes.
"""

from __future__ import annotations

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
from ragjudge.services.scoring import live as svc
from ragjudge.services.access.rights import Access
from ragjudge.tui.host import Host, host
from ragjudge.tui.screens.evalcompare import CORRECTIONS, CompareTab
from ragjudge.tui.screens.evaltabs import FIRST_MEASURE, SORTS, EvalTabs
from ragjudge.tui.screens.prompts import Refused
from ragjudge.tui.widgets.evalpane import CurvePlot
from ragjudge.tui.widgets.fitted import FitBar, Fitted
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
CURVE_FAMILIES = ("nDCG", "P", "R", "Success", "ContextPrecision", "AP")

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


class EvaluationScreen(EvalTabs, CompareTab, Screen):
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
        per_query = self._active in ("per-query", "strata")
        self.post_message(self.Updated(engine.snapshot(
            measure=measure if self._active == "per-query" else None,
            by=self.field if self._active == "strata" else None,
            # a blind reader's per-query values: the engine leaves out what they may not see
            access=self.host.access() if per_query else None)))

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
        self._show_compare(message.pair, message.rows, message.correction)

    def on_evaluation_screen_failed(self, message: Failed) -> None:
        self.notify(message.text, severity="error", timeout=10)

    @on(DataTable.RowSelected, "#per-query-table")
    def query_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if not 0 <= event.cursor_row < len(self._query_rows) or self.engine is None:
            return
        self._explain(self._query_rows[event.cursor_row])

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
