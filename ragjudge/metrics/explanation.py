"""The worked computation of a measure on one query: a table, the lines of arithmetic, the value.

The RAG, diversity and answer measures explain themselves with :class:`RagExplanation`
(:mod:`ragjudge.metrics.ragexplain` picks the explainer); the ranking measures with
:class:`ragjudge.metrics.explain.Explanation`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

HIDDEN_VALUE = ("not shown: you have not judged every pair of this query's gold, and its value "
                "would give their grades away")
"""What a blind reader sees in place of a query's value made of grades they may not see."""


@dataclass(frozen=True)
class RagExplanation:
    """A step-by-step computation for one query, as a worked example lays it out: a table (``columns``,
    ``rows``), the lines of arithmetic (``steps``) and the final ``value`` (NaN = undefined)."""

    measure: str
    value: float
    columns: tuple[str, ...]
    rows: list[tuple]
    steps: list[str]

    def lines(self) -> list[str]:
        """Plain-text rendering (a table, then the steps)."""
        cells = [tuple(cell_text(v) for v in row) for row in self.rows]
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(self.columns)]
        fmt = lambda row: "  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip()  # noqa: E731
        out = [fmt(self.columns)] + [fmt(r) for r in cells] if self.columns else []
        return out + self.steps

    value_hidden: bool = False
    """Made for a blind reader who may not see the value either (:meth:`blind`)."""

    def blind(self, visible: Callable[[str], bool], *, value_shown: bool) -> RagExplanation:
        """This explanation for a blind reader (see
        :meth:`ragjudge.metrics.explain.Explanation.blind`): the value only, since the table and
        its arithmetic are built from every pair's grade; not even the value unless
        ``value_shown`` (the reader judged every pair of the query's gold)."""
        return RagExplanation(self.measure, self.value if value_shown else math.nan, (), [], [
            "blind: the table and its arithmetic are not shown (they rest on the grades of "
            "pairs you have not judged)"], value_hidden=not value_shown)

    def render(self) -> str:
        """The explanation as plain text: a title line, the table, the steps."""
        value = (HIDDEN_VALUE if self.value_hidden else
                 "undefined" if math.isnan(self.value) else f"{self.value:.4f}")
        return "\n".join([f"{self.measure} = {value}", *self.lines()])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: measure, value (None when undefined), columns, rows, steps."""
        clean = lambda v: None if isinstance(v, float) and math.isnan(v) else v  # noqa: E731
        return {"measure": self.measure, "value": clean(self.value),
                "value_hidden": self.value_hidden, "columns": list(self.columns),
                "rows": [[clean(v) for v in row] for row in self.rows], "steps": list(self.steps)}


def cell_text(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "-"
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.4f}"
    return "-" if value is None else str(value)
