"""The evaluation screen's compare tab: two runs side by side, each measure's paired test with
its p-values corrected over the measures (:class:`CompareTab`, a mixin of
:class:`ragjudge.tui.screens.evaluation.EvaluationScreen`, which keeps the worker that compares
and the message handler that shows its result), and the keys that choose the runs and the
correction."""

from __future__ import annotations

import math
import queue
from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import DataTable, Static

from ragjudge.numeric import p_value_text
from ragjudge.services.scoring import live as svc
from ragjudge.tui.widgets.evalpane import column_width, correction_words, fmt, next_other
from ragjudge.tui.widgets.literal import literal

if TYPE_CHECKING:
    from textual.screen import Screen

    CompareBase = Screen
else:
    CompareBase = object

CORRECTIONS = ("holm", "bonferroni", "bh", "none")
"""The compare tab's corrections over its measures, in the order ``x`` steps through them."""


class CompareTab(CompareBase):
    """The compare tab of the evaluation screen (a mixin: the screen sets what is annotated
    here)."""

    snapshot: svc.LiveSnapshot | None
    pair: tuple[str, str] | None
    correction: str
    requests: queue.Queue

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

    def _show_compare(self, pair: tuple[str, str], rows: list, correction: str) -> None:
        """The comparison of ``pair`` under ``correction`` (``rows``: its
        :class:`~ragjudge.services.scoring.comparisons.BaselinePair` per measure); only its
        columns when the runs or the correction chosen have changed since it was asked for."""
        from ragjudge.services.scoring.comparisons import SHORT_CORRECTIONS

        table = self.query_one("#compare-table", DataTable)
        table.clear(columns=True)
        adjusted = correction != "none"
        corrected = [(f"p ({SHORT_CORRECTIONS[correction]})", 12)] if adjusted else []
        for label, width in (("measure", column_width(["measure", *(self.snapshot.measures if self.snapshot else [])])),
                             ("A", 7), ("B", 7), ("B − A", 8),
                             ("95% CI (unadjusted)" if adjusted else "95% CI", 20), ("p rand", 8),
                             *corrected, ("d_z", 6), ("verdict", 12 + column_width(list(pair)))):
            table.add_column(label, width=width)
        if pair != self.pair or correction != self.correction:
            return
        for row in rows:
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

    # -- keys --------------------------------------------------------------------------------

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

