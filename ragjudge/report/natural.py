"""Natural order of ids: ``q1, q2, q10, q100`` rather than the text order ``q1, q10, q100, q2``."""

from __future__ import annotations

import re
from collections.abc import Iterable

_DIGITS = re.compile(r"([0-9]+)")


def natural_key(text: str) -> tuple:
    """A sort key comparing runs of ASCII digits by their number and the rest by its text
    (case-folded first, then exactly, so that the order is total).

    ``re.split`` with a group puts text at even places and digits at odd ones, so two keys
    compare text with text and numbers with numbers. A number is compared as (digits without
    leading zeros, their count, then the text): no conversion to ``int``, which Python limits
    to 4,300 digits."""
    parts = _DIGITS.split(text)
    key: list[tuple] = []
    for i, part in enumerate(parts):
        if i % 2:
            digits = part.lstrip("0")
            key.append((len(digits), digits, len(part)))
        else:
            key.append((part.casefold(), part))
    return (tuple(key), text)


def natural_sorted(ids: Iterable[str]) -> list[str]:
    """``ids`` in natural order (:func:`natural_key`)."""
    return sorted(ids, key=natural_key)


__all__ = ["natural_key", "natural_sorted"]
