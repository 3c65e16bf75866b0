"""Pieces of the evaluation screen: number formatting, the knee of a curve, the curves plot and
the explanation modal."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static
from textual_plotext import PlotextPlot

from ragjudge.tui.widgets.literal import clean, literal

__all__ = ["CurvePlot", "ExplainModal", "best_rows", "fmt", "knee", "settled_cell", "settled_note",
           "whole_ticks"]

FLAT = 0.01
"""A curve is flat from K on when no later step moves it by this much or more."""


def fmt(value: float | None, digits: int = 4) -> str:
    """A value as ``ragjudge eval`` prints it (``-`` when undefined)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def best_rows(column: list[float]) -> set[int]:
    """Rows holding the highest value of a column; none when every row has the same value."""
    finite = [v for v in column if v is not None and not math.isnan(v)]
    if len(column) < 2 or not finite or max(finite) == min(finite):
        return set()
    top = max(finite)
    return {i for i, v in enumerate(column)
            if v is not None and not math.isnan(v) and math.isclose(v, top, rel_tol=0, abs_tol=1e-12)}


SETTLED_STYLES = {"certain": "bold green", "probable": "green", "tied": "dim", "open": "yellow"}


def settled_cell(report, measure: str, run: str) -> Text:  # noqa: ANN001 - Settled
    """The settled column's cell of ``run`` under ``measure``: its comparison with the next run
    in that measure's ranking (``≻ B``), the status, and for an open one about how many more
    pool pairs settle it. ``report``: :class:`ragjudge.services.scoring.settled.Settled` (None:
    not weighed yet)."""
    if report is None:
        return Text("weighing…", style="dim")
    if measure not in report.measures:
        return Text("no bounds\n(see the note)", style="dim")
    mine = [c for c in report.comparisons if c.measure == measure]
    below = next((c for c in mine if c.a == run), None)
    if below is None:
        return Text("lowest" if any(c.b == run for c in mine) else "", style="dim")
    cell = Text("= " if below.status == "tied" else "≻ ")
    cell.append_text(literal(below.b))
    cell.append("\n" + below.status, style=SETTLED_STYLES.get(below.status, ""))
    if below.status == "probable":
        cell.append(f" (p {below.p_order:.2f})", style="green")
    if below.status == "open":
        cell.append(f"\njudge about {below.judge_more:,} more pairs", style="yellow")
    return cell


def settled_note(report, measure: str) -> Text:  # noqa: ANN001 - Settled
    """The overview's note on the settled column: what its statuses mean, apart from the
    bootstrap interval over queries (and why ``measure`` has none, when it has none)."""
    confidence = 0.95 if report is None else report.confidence
    note = Text("\nsettled (m: measure): each run against the next in that measure's ranking, "
                "about the unjudged pairs of the pool (top 10) only: certain = the bounds over "
                f"every grade they may get exclude 0; probable = p_order ≥ {confidence:g} under the stated "
                "model (a prior by rank and run from the judged pairs); judge about N = pool pairs "
                "in the settle order (annotate --queue-order settle). Apart from the bootstrap "
                "interval, which is over queries.", style="dim")
    if report is not None and report.pool_pairs:
        note.append(f" Pool: {report.judged_pairs:,} of {report.pool_pairs:,} pairs judged.",
                    style="dim")
    why = None if report is None else next((s.why for s in report.skipped if s.measure == measure), None)
    if why:
        note.append_text(literal(f" {measure} has no bounds: {why}.", "dim"))
    return note


def knee(values: list[float], ks: list[int], flat: float = FLAT) -> int | None:
    """The K from which the curve is flat: the smallest K after which every further step
    changes the value by less than ``flat`` (how many chunks to pass on to the LLM)."""
    clean = [0.0 if v is None or math.isnan(v) else v for v in values]
    for i in range(len(clean)):
        if all(abs(clean[j + 1] - clean[j]) < flat for j in range(i, len(clean) - 1)):
            return ks[i]
    return None


def whole_ticks(xs: list[int], most: int = 6) -> list[int]:
    """Ticks of a whole-number axis (K = 1..20: 1, 5, 10, 15, 20): the first value, then the
    multiples of a round step, at most about ``most`` of them. Plotext's own ticks split the
    range evenly (5.8, 10.5, 15.2), which means nothing for a count of chunks."""
    if not xs:
        return []
    low, high = min(xs), max(xs)
    step = 1
    for candidate in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000):
        step = candidate
        if (high - low) / candidate < most:
            break
    ticks = [low] + [k for k in range(step * (low // step + 1), high + 1, step) if k - low >= step / 2]
    return ticks


class CurvePlot(PlotextPlot):
    """One line per run; a vertical line marks the K where the best run's curve flattens."""

    def show(self, title: str, xs: Sequence[float], lines: dict[str, list[float]],
             x_label: str, mark: float | None = None, *, whole_x: bool = False) -> None:
        """``whole_x``: the x values are counts (K), ticked at whole numbers only."""
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        # plotext writes ANSI that Text.from_ansi reads back: names must not hold escapes
        plt.title(clean(title))
        plt.xlabel(clean(x_label))
        for name, ys in lines.items():
            values = [0.0 if y is None or math.isnan(y) else y for y in ys]
            plt.plot(xs, values, label=clean(name), marker="braille")
        if mark is not None:
            plt.vline(mark, "red")
        plt.ylim(0, 1)
        if whole_x:
            ticks = whole_ticks([int(x) for x in xs])
            plt.xticks([float(t) for t in ticks], [str(t) for t in ticks])
        self.refresh()


class ExplainModal(ModalScreen[str | None]):
    """The step-by-step computation of a measure for one query; ``j`` offers judging."""

    BINDINGS = [
        Binding("escape,q", "close", "close"),
        Binding("j", "judge", "judge its unjudged pairs"),
    ]

    DEFAULT_CSS = """
    ExplainModal { align: center middle; }
    ExplainModal > Vertical { width: 90%; height: 90%; border: round $primary; background: $surface; padding: 0 1; }
    ExplainModal #explain-hint { height: auto; color: $text-muted; }
    ExplainModal VerticalScroll { height: 1fr; }
    """

    def __init__(self, title: str, body: str, unjudged: list[str]) -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.unjudged = unjudged

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(literal(self.title_text, "bold"))
            with VerticalScroll():
                yield Static(literal(self.body), id="explain-body")
            hint = (f"j: judge this query's {len(self.unjudged)} unjudged pairs in the top 10 · "
                    "Escape: back" if self.unjudged else
                    "Every chunk in the runs' top 10 has a grade. Escape: back")
            yield Static(Text(hint), id="explain-hint")

    def action_close(self) -> None:
        self.dismiss(None)

    def action_judge(self) -> None:
        if not self.unjudged:
            self.notify("Nothing left to judge in this query's top 10.")
            return
        self.dismiss("judge")
