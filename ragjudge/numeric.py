"""The numbers ragjudge reads: one strict syntax and one set of bounds for every reader.

Python's ``int()`` and ``float()`` accept more than a number written in a data file: ``1_0``
(a digit separator: 10, where trec_eval reads 1), surrounding white space, digits of other
scripts (``"１"`` is 1), ``nan`` and ``infinity``. A reader that used them would read a typo as
another number. Every reader of ragjudge (TREC, JSONL, CSV and BEIR files, the bulk TREC
parser of ``ragjudge.metrics``, measure names) goes through the syntax here instead:

- an integer (a grade, a rank, a measure's cutoff or parameter): ``[+-]?[0-9]+``, ASCII digits;
- a number (a score, a weight, a parameter such as ``beta``): ASCII decimal notation, an
  optional sign, digits with at most one ``.``, an optional exponent (``1``, ``-0.5``,
  ``.5``, ``2.``, ``1e-3``); ``nan`` and ``inf`` are read so that the reader can refuse them
  by name (scores and weights are finite).

And every number is bounded where it enters, before anything is allocated for it:

- a grade lies within ``-MAX_GRADE .. MAX_GRADE`` (±1,000; negative grades mean "unjudged");
- a rank within ``1 .. MAX_RANK`` (2,147,483,647, the database's 32-bit integer column);
- a cutoff K (``P@K``, ``eval --curve --k``) within ``1 .. MAX_CUTOFF`` (100,000).

This module imports only the standard library and ``ragjudge.errors``, so every layer (the
numpy-only metrics included) may use it.
"""

from __future__ import annotations

import math
import re

MAX_GRADE = 1_000
"""Grades lie within -MAX_GRADE .. MAX_GRADE: room for any relevance scale, and 2**grade (the
exponential gain of nDCG_exp and ERR) stays far from float64's limit."""

MAX_RANK = 2**31 - 1
"""The highest rank a run file may give (the rank column is a 32-bit integer in the database)."""

MAX_CUTOFF = 100_000
"""The highest cutoff K of a measure (``P@K``) or a Metric@K curve."""

_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_WORD = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE | re.ASCII)


def parse_integer(text: str) -> int | None:
    """``text`` as an integer when it is one in ASCII (``[+-]?[0-9]+``, nothing around it);
    else None. ``1_0``, ``" 1 "``, ``"１"``, ``2.0`` and ``0x1`` are not integers."""
    if _INTEGER.fullmatch(text) is None:
        return None
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-").lstrip("0") or "0"
    if len(digits) > 4_000:  # beyond what int() converts; far beyond every bound anyway
        return sign * 10 ** (len(digits) - 1)
    return sign * int(digits)


def parse_number(text: str) -> float | None:
    """``text`` as a float when it is a decimal number in ASCII (``-0.5``, ``.5``, ``1e-3``)
    or one of the words ``nan``, ``inf``, ``infinity`` (any case, signed); else None.

    The words and a number too large for float64 (``1e400``) give NaN or an infinity, which
    the caller refuses with its own words ("scores must be finite"). ``1_0.5``, ``0x1p3``,
    ``"１"`` and white space around the number are not numbers."""
    if _NUMBER.fullmatch(text) is None and _WORD.fullmatch(text) is None:
        return None
    return float(text)


def grade_problem(grade: int) -> str | None:
    """Why ``grade`` cannot be a grade (outside ±MAX_GRADE), or None when it can."""
    if -MAX_GRADE <= grade <= MAX_GRADE:
        return None
    return (f"the grade {short_int(grade)} is out of range: grades are whole numbers from "
            f"{-MAX_GRADE:,} to {MAX_GRADE:,}.")


def rank_problem(rank: int) -> str | None:
    """Why ``rank`` cannot be a rank (above MAX_RANK), or None when it can. Ranks below 1 are
    the readers' business (a TREC run may count from 0; a JSONL rank starts at 1)."""
    if rank <= MAX_RANK:
        return None
    return f"the rank {short_int(rank)} is out of range: ranks go up to {MAX_RANK:,}."


def cutoff_problem(k: int) -> str | None:
    """Why ``k`` cannot be a cutoff (below 1 or above MAX_CUTOFF), or None when it can."""
    if 1 <= k <= MAX_CUTOFF:
        return None
    return f"the cutoff {short_int(k)} is out of range: a cutoff K goes from 1 to {MAX_CUTOFF:,}."


def short_int(value: int) -> str:
    """An integer for a message, without printing thousands of digits."""
    if abs(value) < 10**24:
        return str(value)
    digits = math.floor(math.log10(abs(value))) + 1
    return f"({'a negative' if value < 0 else 'a'} number of {digits:,} digits)"


def p_value_text(value: float | None) -> str:
    """A p-value as ``compare``, its screen tab and the report print it: four decimals,
    ``<0.0001`` below; "-" for None or NaN (no test)."""
    if value is None or math.isnan(value):
        return "-"
    return "<0.0001" if value < 0.0001 else f"{value:.4f}"


def probability_text(p: float, digits: int = 3, *, sure: bool = False) -> str:
    """A probability to ``digits`` decimals that reads 0 or 1 only when it is: 0.9996 is
    ">0.999" (to 3) and 0.0004 "<0.001", since "1.000" beside a claim that is only probable
    reads as a certainty. 1 itself prints as 1 only when ``sure`` (proved, not estimated: a
    certain or tied comparison); an estimate of 1 is ">0.999" too. NaN (not drawn) is "-"."""
    if math.isnan(p):
        return "-"
    step = 10.0 ** -digits
    if round(p, digits) >= 1.0 and not (sure and p >= 1.0):
        return f">{1.0 - step:.{digits}f}"
    if p > 0.0 and round(p, digits) <= 0.0:
        return f"<{step:.{digits}f}"
    return f"{p:.{digits}f}"


AGGREGATION_RULES = ("median", "majority", "mean", "min", "max")
"""Rules that turn several annotators' grades into one gold grade (plus ``annotator:NAME``)."""


class GradeRange:
    """A relevance scale as the readers of a project need it: its lowest and highest grade and
    the threshold of relevance (:class:`ragjudge.models.Scale` is the whole scale, with its
    names; it describes itself with this class)."""

    __slots__ = ("min", "max", "threshold")

    def __init__(self, low: int, high: int, threshold: int = 1) -> None:
        self.min, self.max, self.threshold = low, high, threshold

    @property
    def is_binary(self) -> bool:
        return self.min == 0 and self.max == 1

    def describe(self) -> str:
        return "binary" if self.is_binary else f"{self.min}-{self.max}"
