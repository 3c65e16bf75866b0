"""Multiple-comparison corrections of a family of p-values (numpy only).

Comparing k runs pair by pair makes k (k - 1) / 2 tests per measure; some come out "significant"
by chance alone. :func:`correct` adjusts the p-values of such a family so that a threshold
still means what it says:

- ``"none"`` — the raw p-values.
- ``"bonferroni"`` — min(1, m p): the family-wise error rate (any false positive) stays below
  alpha (Dunn 1961).
- ``"holm"`` — Holm's (1979) step-down: the same guarantee, never less powerful than Bonferroni.
- ``"bh"`` — Benjamini & Hochberg (1995): the expected share of false positives among the
  positives (the false discovery rate) stays below alpha, for independent or positively
  dependent tests.

Each equals ``statsmodels.stats.multitest.multipletests`` with method ``bonferroni``, ``holm``
and ``fdr_bh``; unlike it, NaN p-values (a test that could not be made) are left out of the
family and stay NaN.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["CORRECTIONS", "correct", "holm"]

#: the accepted ``method`` names of :func:`correct`
CORRECTIONS = ("none", "bonferroni", "holm", "bh")


def _bonferroni(p: np.ndarray) -> np.ndarray:
    return np.minimum(1.0, p.size * p)


def _holm(p: np.ndarray) -> np.ndarray:
    """Sorted ascending p_(1) ≤ … ≤ p_(m): adjusted p_(i) = max_{j ≤ i} min(1, (m - j + 1) p_(j))."""
    order = np.argsort(p, kind="stable")
    m = p.size
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    return adjusted


def _benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """Sorted ascending: adjusted p_(i) = min_{j ≥ i} min(1, m p_(j) / j) (Benjamini & Hochberg
    1995, the step-up rule written as adjusted p-values)."""
    order = np.argsort(p, kind="stable")
    m = p.size
    scaled = np.minimum(1.0, m * p[order] / np.arange(1, m + 1))
    adjusted = np.empty(m)
    adjusted[order] = np.minimum.accumulate(scaled[::-1])[::-1]
    return adjusted


_METHODS = {"bonferroni": _bonferroni, "holm": _holm, "bh": _benjamini_hochberg}


def correct(pvalues: Sequence[float] | np.ndarray, method: str = "holm") -> np.ndarray:
    """Adjusted p-values of one family (a vector) or of one family per row (a matrix).

    ``method`` is one of :data:`CORRECTIONS`. NaN p-values are left out of their family (m
    counts the others) and stay NaN. Returns a new float array shaped like ``pvalues``.
    """
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}: choose one of {', '.join(CORRECTIONS)}")
    p = np.array(pvalues, dtype=np.float64)
    if p.ndim not in (1, 2):
        raise ValueError("p-values must be a vector (one family) or a matrix (a family per row)")
    if method == "none":
        return p
    rows = p if p.ndim == 2 else p[None, :]
    adjust = _METHODS[method]
    for row in rows:
        valid = ~np.isnan(row)
        if valid.any():
            row[valid] = adjust(row[valid])
    return p


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values: :func:`correct` with ``method="holm"``."""
    return correct(pvalues, "holm")
