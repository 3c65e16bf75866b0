"""Agreement reports: disputed units, agreement per group of units (e.g. per query) and the
:class:`AgreementReport` that gathers every statistic of :mod:`ragjudge.metrics.agreement`.

Pure numpy, like the statistics it assembles; a :class:`~ragjudge.metrics.agreement.Statistic`
that cannot be computed stays ``value=None`` with its ``reason`` (listed by
:meth:`AgreementReport.undefined`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from ragjudge.errors import InputError
from ragjudge.metrics.agreement import (
    PairAgreement,
    Ratings,
    Statistic,
    ThresholdAgreement,
    binarised_agreement,
    fleiss_kappa,
    grade_distribution,
    gwet_ac1,
    krippendorff_alpha,
    pair_agreement,
    percent_agreement,
)

__all__ = [
    "DisputedUnit",
    "AgreementReport",
    "disputed_order",
    "disputed_units",
    "grouped_agreement",
    "agreement_report",
]


# --------------------------------------------------------------------------- disputes


@dataclass(frozen=True)
class DisputedUnit:
    """A unit whose grades differ: ``spread`` = max − min grade over its ``n_ratings``."""

    unit: Any
    spread: int
    n_ratings: int
    grades: dict
    """``{annotator: grade}`` of the annotators who rated the unit."""


def disputed_order(ratings: Ratings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, spread, n)``: the rows of the units with spread > 0, largest spread first, then
    most ratings first, then unit order; each unit's spread (highest grade - lowest) and number
    of ratings."""
    m = ratings.matrix
    n = (~np.isnan(m)).sum(axis=1)
    rated = n > 0
    spread = np.zeros(len(m))
    if rated.any():
        spread[rated] = np.nanmax(m[rated], axis=1) - np.nanmin(m[rated], axis=1)
    rows = np.flatnonzero(spread > 0)
    return rows[np.lexsort((rows, -n[rows], -spread[rows]))], spread, n


def disputed_units(ratings: Ratings) -> list[DisputedUnit]:
    """Units with spread > 0, largest spread first, then most ratings first, then unit order."""
    m = ratings.matrix
    rows, spread, n = disputed_order(ratings)
    return [
        DisputedUnit(
            unit=ratings.units[i],
            spread=int(spread[i]),
            n_ratings=int(n[i]),
            grades={
                ratings.annotators[j]: int(m[i, j]) for j in np.flatnonzero(~np.isnan(m[i]))
            },
        )
        for i in rows
    ]


def grouped_agreement(ratings: Ratings, groups: Any) -> dict[str, np.ndarray]:
    """Per group of units at once (e.g. per query): ``units``, ``pairable_units``, ``disputed``
    (spread > 0), ``percent_agreement``, ``krippendorff_alpha_nominal``,
    ``krippendorff_alpha_ordinal`` and ``gwet_ac1`` as arrays over ``0..max(groups)``, NaN where
    a statistic is undefined for the group. ``groups[u]`` is unit u's group number.

    The same formulas as the single-set functions, applied to every group in one pass: per-unit
    coincidences and agreement shares are summed by group with ``bincount``/``add.at`` instead of
    a Python loop per group (thousands of queries).
    """
    g = np.asarray(groups, dtype=np.int64)
    n_groups = int(g.max()) + 1 if len(g) else 0
    q = ratings.n_categories
    counts = ratings.counts().astype(np.float64)
    m = counts.sum(axis=1)
    rated, pairable = m > 0, m >= 2

    def per_group(weights: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return np.bincount(g[mask], weights=weights[mask], minlength=n_groups)

    n_rated = per_group(np.ones(len(m)), rated)
    n_pairable = per_group(np.ones(len(m)), pairable)
    lo = np.where(counts > 0, np.arange(q), q).min(axis=1) if len(m) else np.zeros(0)
    hi = np.where(counts > 0, np.arange(q), -1).max(axis=1) if len(m) else np.zeros(0)
    disputed = per_group(np.ones(len(m)), pairable & (hi > lo))

    with np.errstate(invalid="ignore", divide="ignore"):
        mm = np.where(pairable, m, 2.0)
        share = (counts * (counts - 1)).sum(axis=1) / (mm * (mm - 1))
        pa = per_group(share, pairable) / n_pairable
        pa[n_pairable == 0] = np.nan

        # Krippendorff: coincidences of pairable units, summed per group
        per_unit = np.where(pairable[:, None], counts / (mm - 1)[:, None], 0.0)
        o = np.zeros((n_groups, q, q))
        np.add.at(o, g, per_unit[:, :, None] * counts[:, None, :])
        diag = np.zeros((n_groups, q))
        np.add.at(diag, g, per_unit)
        o -= diag[:, :, None] * np.eye(q)[None]
        n_c = o.sum(axis=2)
        n = n_c.sum(axis=1)
        expected = n_c[:, :, None] * n_c[:, None, :]
        nominal = 1.0 - np.eye(q)
        alpha_nominal = 1.0 - (n - 1) * (o * nominal).sum(axis=(1, 2)) / (expected * nominal).sum(axis=(1, 2))
        cum = np.concatenate([np.zeros((n_groups, 1)), np.cumsum(n_c, axis=1)], axis=1)
        ks = np.arange(q)
        a, b = np.minimum.outer(ks, ks), np.maximum.outer(ks, ks)
        ordinal = (cum[:, b + 1] - cum[:, a] - (n_c[:, :, None] + n_c[:, None, :]) / 2) ** 2
        d_e = (expected * ordinal).sum(axis=(1, 2))
        alpha_ordinal = 1.0 - (n - 1) * (o * ordinal).sum(axis=(1, 2)) / d_e
        d_e_nominal = (expected * nominal).sum(axis=(1, 2))
        alpha_nominal[(n == 0) | (np.abs(d_e_nominal) <= 1e-12)] = np.nan
        alpha_ordinal[(n == 0) | (np.abs(d_e) <= 1e-12)] = np.nan

        # Gwet's AC1: p_e from the mean share of each grade over rated units of the group
        mr = np.where(rated, m, 1.0)
        pi = np.zeros((n_groups, q))
        np.add.at(pi, g[rated], counts[rated] / mr[rated][:, None])
        pi /= n_rated[:, None]
        p_e = (pi * (1 - pi)).sum(axis=1) / (q - 1)
        ac1 = (pa - p_e) / (1 - p_e)
    return {
        "units": n_rated.astype(np.int64),
        "pairable_units": n_pairable.astype(np.int64),
        "disputed": disputed.astype(np.int64),
        "percent_agreement": pa,
        "krippendorff_alpha_nominal": alpha_nominal,
        "krippendorff_alpha_ordinal": alpha_ordinal,
        "gwet_ac1": ac1,
    }


# --------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class AgreementReport:
    """Everything :func:`agreement_report` computes; :meth:`to_dict` gives the JSON form."""

    units: int
    pairable_units: int
    scale: tuple[int, int]
    annotators: tuple[Any, ...]
    percent_agreement: Statistic
    percent_agreement_within_1: Statistic
    krippendorff_alpha: dict[str, Statistic]
    fleiss_kappa: Statistic
    gwet_ac1: Statistic
    pairwise: tuple[PairAgreement, ...]
    grade_distribution: dict
    binarised: tuple[ThresholdAgreement, ...]
    disputed: tuple[DisputedUnit, ...] = field(default=())

    def undefined(self) -> dict[str, str]:
        """``{statistic: reason}`` for every undefined statistic, by its JSON path."""
        out: dict[str, str] = {}

        def note(name: str, stat: Statistic) -> None:
            if stat.value is None:
                out[name] = stat.reason or "undefined"

        note("percent_agreement", self.percent_agreement)
        note("percent_agreement_within_1", self.percent_agreement_within_1)
        for level, stat in self.krippendorff_alpha.items():
            note(f"krippendorff_alpha.{level}", stat)
        note("fleiss_kappa", self.fleiss_kappa)
        note("gwet_ac1", self.gwet_ac1)
        for p in self.pairwise:
            for name, stat in p.statistics().items():
                note(f"pairwise[{p.a},{p.b}].{name}", stat)
        for t in self.binarised:
            for name in ("percent_agreement", "krippendorff_alpha", "fleiss_kappa", "gwet_ac1"):
                note(f"binarised[{t.threshold}].{name}", getattr(t, name))
            for pair in t.pairwise:
                for name in ("cohen_kappa", "overlap"):
                    note(f"binarised[{t.threshold}].pairwise[{pair['a']},{pair['b']}].{name}", pair[name])
        return out

    def to_dict(self, *, disputed_limit: int | None = None) -> dict:
        """The JSON contract of ``ragjudge agree --format json`` (undefined → ``None``),
        plus the within-±1 agreement, grade distributions, binarised agreement and disputes."""
        disputed = self.disputed if disputed_limit is None else self.disputed[:disputed_limit]
        return {
            "units": self.units,
            "pairable_units": self.pairable_units,
            "scale": list(self.scale),
            "annotators": list(self.annotators),
            "percent_agreement": self.percent_agreement.value,
            "percent_agreement_within_1": self.percent_agreement_within_1.value,
            "krippendorff_alpha": {k: v.value for k, v in self.krippendorff_alpha.items()},
            "fleiss_kappa": self.fleiss_kappa.value,
            "gwet_ac1": self.gwet_ac1.value,
            "pairwise": [
                {
                    "a": p.a,
                    "b": p.b,
                    "n": p.n,
                    **{name: stat.value for name, stat in p.statistics().items()},
                    "confusion": p.confusion.tolist(),
                }
                for p in self.pairwise
            ],
            "grade_distribution": {
                str(a): {str(g): n for g, n in dist.items()}
                for a, dist in self.grade_distribution.items()
            },
            "binarised": [
                {
                    "threshold": t.threshold,
                    "percent_agreement": t.percent_agreement.value,
                    "krippendorff_alpha": t.krippendorff_alpha.value,
                    "fleiss_kappa": t.fleiss_kappa.value,
                    "gwet_ac1": t.gwet_ac1.value,
                    "pairwise": [
                        {
                            "a": p["a"],
                            "b": p["b"],
                            "n": p["n"],
                            "cohen_kappa": p["cohen_kappa"].value,
                            "overlap": p["overlap"].value,
                        }
                        for p in t.pairwise
                    ],
                }
                for t in self.binarised
            ],
            "disputed": [
                {
                    "unit": list(d.unit) if isinstance(d.unit, tuple) else d.unit,
                    "spread": d.spread,
                    "n_ratings": d.n_ratings,
                    "grades": {str(a): g for a, g in d.grades.items()},
                }
                for d in disputed
            ],
            "undefined": self.undefined(),
        }


def agreement_report(
    ratings: Ratings | Any,
    *,
    scale: tuple[int, int] | None = None,
    annotators: Iterable[Any] | None = None,
) -> AgreementReport:
    """Compute every statistic of :mod:`ragjudge.metrics.agreement` for ``ratings`` (a
    :class:`Ratings`, or a matrix with ``scale``); ``annotators`` names a matrix's columns."""
    if not isinstance(ratings, Ratings):
        if scale is None:
            raise InputError("the declared scale (min, max) is needed to read a ratings matrix.")
        ratings = Ratings.from_matrix(
            ratings, scale, annotators=None if annotators is None else list(annotators)
        )
    n = (~np.isnan(ratings.matrix)).sum(axis=1)
    return AgreementReport(
        units=int((n > 0).sum()),
        pairable_units=int((n >= 2).sum()),
        scale=ratings.scale,
        annotators=ratings.annotators,
        percent_agreement=percent_agreement(ratings),
        percent_agreement_within_1=percent_agreement(ratings, tolerance=1),
        krippendorff_alpha={
            level: krippendorff_alpha(ratings, level) for level in ("nominal", "ordinal", "interval")
        },
        fleiss_kappa=fleiss_kappa(ratings),
        gwet_ac1=gwet_ac1(ratings),
        pairwise=tuple(
            pair_agreement(ratings, a, b) for a, b in combinations(ratings.annotators, 2)
        ),
        grade_distribution=grade_distribution(ratings),
        binarised=tuple(binarised_agreement(ratings)),
        disputed=tuple(disputed_units(ratings)),
    )
