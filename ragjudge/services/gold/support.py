"""The gold rule on support: facet links, nugget support and answer judgments combined across
annotators with the project's aggregation rule, on numbers (none 0, partial 1, full 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
import numpy as np
from ragjudge.services.events.labels import LabelArrays
from ragjudge.services.gold.rules import aggregate, check_rule


if TYPE_CHECKING:
    pass


def support_rule(rule: str) -> str:
    rule = check_rule(rule)
    return "median" if rule == "adjudicated" else rule


def combine_support(keys: list[str], chunks: list[str], annotators: list[str], values: list[int],
             rule: str) -> list[tuple[str, str, int]]:
    """Per (item key, chunk), the annotators' current values combined under ``rule``."""
    if rule.startswith("annotator:"):
        who = rule.split(":", 1)[1]
        keep = [i for i, a in enumerate(annotators) if a == who]
        keys, chunks = [keys[i] for i in keep], [chunks[i] for i in keep]
        annotators, values = [annotators[i] for i in keep], [values[i] for i in keep]
    if not keys:
        return []
    order = sorted(range(len(keys)), key=lambda i: (keys[i], chunks[i], annotators[i]))
    pick = lambda xs: np.array([xs[i] for i in order], dtype=object)  # noqa: E731
    labels = LabelArrays(pick(keys), pick(chunks), pick(annotators),
                         np.array([values[i] for i in order], dtype=np.int64))
    return aggregate(labels, rule)
