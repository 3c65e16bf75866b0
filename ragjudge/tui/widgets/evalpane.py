"""Pieces of the evaluation screen: number formatting, the ranges over annotators and their note,
the per-query tab's order, the knee of a curve, the curves plot and the explanation modal."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static
from textual_plotext import PlotextPlot

from ragjudge.numeric import probability_text
from ragjudge.safetext import natural_key
from ragjudge.tui.widgets.literal import clean, literal

if TYPE_CHECKING:
    from ragjudge.services.scoring.live import LiveSnapshot

__all__ = ["CurvePlot", "ExplainModal", "best_rows", "column_width", "correction_words", "curve_note",
           "fmt", "knee", "lowest_cells", "next_other", "overview_note", "per_query_order",
           "range_note", "settled_cell", "settled_note", "short_name", "spread_text", "whole_ticks"]

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
        cell.append(f" (p {probability_text(below.p_order, 2)})", style="green")
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


def next_other(names: list[str], current: str, other: str) -> str:
    """The run after ``current`` in ``names`` (cycling) that is not ``other``: the compare tab
    never compares a run with itself."""
    at = names.index(current) if current in names else -1
    for step in range(1, len(names) + 1):
        name = names[(at + step) % len(names)]
        if name != other:
            return name
    return current


def spread_text(s: LiveSnapshot, run: str, measure: str) -> str:
    """``↕ben 0.410–chen 0.620``: the range over annotators and who sets each end."""
    spread = s.ranges.get(run, {}).get(measure)
    if not spread:
        return ""
    low, high = (short_name(n) for n in s.range_ends.get(run, {}).get(measure, ("", "")))
    return f"↕{low} {spread[0]:.3f}–{high} {spread[1]:.3f}"


def short_name(name: str, limit: int = 8) -> str:
    return name if len(name) <= limit else name[:limit - 1] + "…"


def range_note(s: LiveSnapshot) -> Text:
    """How the ranges are made, who is in them and who has too few labels."""
    note = Text(f"\n↕ min–max over the annotators whose labels cover ≥ {s.min_coverage:.0%} of the "
                "pool of the judged queries (n: change): the gold value moved by each one's "
                "difference from the gold on the queries they judged", style="dim")
    if s.in_ranges:
        note.append(" · in the ranges: ", style="dim")
        note.append_text(literal(", ".join(f"{a} {s.coverage[a]:.0%}" for a in s.in_ranges), "dim"))
    if s.too_few:
        note.append(" · too few labels: ", style="dim")
        note.append_text(literal(", ".join(f"{a} {s.coverage[a]:.0%}" for a in s.too_few), "dim"))
    return note


def column_width(texts: list[str]) -> int:
    return max((len(str(t)) for t in texts), default=1)


def per_query_order(rows, category: str | None, sort: str, first: str | None,  # noqa: ANN001 - QueryRows
                    disputed: dict[str, int]) -> list[int]:
    """The per-query tab's rows: the queries of ``category`` (all for None; "(none)" for those
    without one) in natural id order (q2 before q10), then sorted by ``sort`` ("value ↓"/"value ↑"
    of run ``first``, a query it has no value for last; "disputed ↓"; "judged ↑"), ties kept."""
    order = sorted((i for i in range(len(rows.query_ids))
                    if category is None or (rows.categories[i] or "(none)") == category),
                   key=lambda i: natural_key(rows.query_ids[i]))
    if sort.startswith("value") and first is not None:
        column = rows.values[first]
        sign = -1 if sort == "value ↓" else 1
        order.sort(key=lambda i: (math.isnan(column[i]), sign * (0 if math.isnan(column[i]) else column[i])))
    elif sort == "disputed ↓":
        order.sort(key=lambda i: -disputed.get(rows.query_ids[i], 0))
    elif sort == "judged ↑":
        order.sort(key=lambda i: rows.judged[i])
    return order


def overview_note(s: LiveSnapshot, resamples: int | None, settled, measure: str) -> Text:  # noqa: ANN001 - Settled
    """The note under the overview: how the values, intervals, ranges and the settled column are
    made (``resamples`` None until the bootstrap intervals are in)."""
    from ragjudge.services.scoring.livedetails import MIN_INTERVAL_QUERIES

    note = Text(f"{s.n_queries} judged queries; a query a run does not answer counts 0. "
                "* best in its column · [95% bootstrap interval]"
                + (f" ({resamples} resamples; none from fewer than {MIN_INTERVAL_QUERIES} queries)"
                   if resamples is not None else ""), style="dim")
    note.append_text(range_note(s))
    note.append_text(settled_note(settled, measure))
    return note


def curve_note(family: str, best: str, mark: int | None) -> Text:
    """The curves tab's note: where the best run's curve flattens (``mark``), if it does."""
    note = Text()
    note.append(f"{family}@K for K = 1..20 (m: next family) · ")
    if mark is not None:
        note.append_text(literal(f"{best}'s curve flattens at K = {mark}", "bold"))
        note.append(" (each further chunk moves it by < 0.01): passing more chunks to the LLM "
                    "adds little.")
    else:
        note.append_text(literal(f"{best}'s curve is still rising at K = 20."))
    return note


def lowest_cells(s: LiveSnapshot) -> dict[str, tuple[str, str]]:
    """Per measure, the (stratum, run) with the lowest value, when there is more than one
    stratum: the strata tab marks it, so an aggregate cannot hide a failing group."""
    worst = {}
    for m in s.measures:
        values = [(s.strata[st][n][m], st, n) for st in s.strata for n in s.run_names
                  if not math.isnan(s.strata[st][n][m])]
        if values and len(s.strata) > 1:
            worst[m] = min(values)[1:]
    return worst


def correction_words(correction: str, measures: int) -> Text:
    """The compare tab's words: which test, which correction over how many measures, and which
    figures it adjusts."""
    from ragjudge.metrics.allpairs import CORRECTION_NAMES

    words = Text("Fisher's randomization test per measure; ")
    if correction == "none":
        words.append("p-values not corrected over the ", style="bold")
        words.append(f"{measures} measures", style="bold")
    else:
        words.append(f"p-values {CORRECTION_NAMES[correction]}-corrected", style="bold")
        words.append(f" over the {measures} measures")
    words.append("; verdict at α = 0.05 from the " + ("raw" if correction == "none" else "corrected")
                 + " p; the 95% bootstrap interval of B − A is not adjusted")
    return words


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
