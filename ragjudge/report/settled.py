"""The report's section on how settled each comparison is, while the pool is still being judged.

``ragjudge settled`` computes, per measure and pair of runs, the bounds the mean difference can
still reach whatever grades the open pool pairs get, the probability that its sign holds, a
status (certain, tied, probable, open) and how many more pairs would settle it. This module is
the report's side of it: :func:`ragjudge.report.build.add_settled` (or ``build_report(..., settled=...)``) takes that
result (objects with those fields, or their ``to_dict()``), and the section is rendered when it
is given — and not at all otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ragjudge.metrics.settle import Comparison

FIELDS = ("measure", "a", "b", "difference", "low", "high", "p_order", "status", "judge_more",
          "exact", "n_queries")
"""What each comparison of ``ragjudge settled`` carries."""

STATUS_WORDS = {
    "certain": "certain: no grade of the open pairs can change the order",
    "tied": "tied: no grade of the open pairs can separate the runs",
    "probable": "probable: the order holds with the model's confidence",
    "open": "open: the open pairs may still change the order",
}


def settled_rows(comparisons: Iterable[Any]) -> list[Comparison]:
    """The comparisons of ``ragjudge settled`` as rows (each an object with :data:`FIELDS` as
    attributes, or a mapping of them such as its ``to_dict()``)."""
    rows = []
    for item in comparisons:
        record: Mapping[str, Any] = item if isinstance(item, Mapping) else (
            item.to_dict() if hasattr(item, "to_dict") else {f: getattr(item, f) for f in FIELDS})
        rows.append(Comparison(
            measure=str(record["measure"]), a=str(record["a"]), b=str(record["b"]),
            difference=float(record["difference"]), low=float(record["low"]),
            high=float(record["high"]), p_order=float(record["p_order"]),
            status=str(record["status"]), judge_more=int(record["judge_more"]),
            exact=bool(record["exact"]), n_queries=int(record["n_queries"])))
    return rows


def status_words(status: str) -> str:
    return STATUS_WORDS.get(status, status)


def settled_index(rows: Iterable[Comparison]) -> dict[tuple[str, frozenset[str]], Comparison]:
    """Each comparison by its measure and its two runs (in either order), for the table of
    comparisons to show each pair's status beside its test."""
    return {(row.measure, frozenset((row.a, row.b))): row for row in rows}


__all__ = ["FIELDS", "STATUS_WORDS", "Comparison", "settled_index", "settled_rows", "status_words"]
