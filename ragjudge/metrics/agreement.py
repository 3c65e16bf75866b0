"""Agreement between annotators: percent agreement, Cohen's κ, Fleiss' κ, Krippendorff's α,
Gwet's AC1, binarised agreement and relevant-set overlap.

Pure numpy, exact arithmetic in float64. A *unit* is one (query, chunk) pair; the input is a
ratings matrix (units × annotators, ``NaN`` = not rated) over a declared integer scale
``(min, max)``, or long arrays ``(unit, annotator, grade)`` turned into one by
:meth:`Ratings.from_long`.

Almost everything is computed from one table: ``counts[u, k]``, the number of ratings of unit
``u`` in grade ``scale_min + k``. Category weights always come from the *declared* scale, so a
grade nobody used still sits at its numeric distance from the others.

A statistic that cannot be computed (no pairable units, 0/0 because every rating is one grade,
Fleiss' κ on an unbalanced design, ...) is a :class:`Statistic` with ``value=None`` and a
``reason`` — never 1.0 and never an exception.

Disputed units, agreement per group of units and the ``AgreementReport`` gathering all of
these are in :mod:`ragjudge.metrics.agreement_report`.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any, Literal
from collections.abc import Sequence

import numpy as np

from ragjudge.errors import InputError
from ragjudge.safetext import quote

__all__ = [
    "Statistic",
    "Ratings",
    "PairAgreement",
    "ThresholdAgreement",
    "percent_agreement",
    "grade_distribution",
    "confusion_matrix",
    "cohen_kappa",
    "one_grade_only",
    "fleiss_kappa",
    "krippendorff_alpha",
    "gwet_ac1",
    "relevant_overlap",
    "kendall_tau",
    "pair_agreement",
    "binarised_agreement",
]

Level = Literal["nominal", "ordinal", "interval"]
Weights = Literal["linear", "quadratic"] | None


# --------------------------------------------------------------------------- result type


@dataclass(frozen=True)
class Statistic:
    """A statistic's value, or ``None`` with the reason it is undefined."""

    value: float | None
    reason: str | None = None

    @property
    def defined(self) -> bool:
        return self.value is not None

    @classmethod
    def undefined(cls, reason: str) -> Statistic:
        return cls(None, reason)

    def __float__(self) -> float:
        return float("nan") if self.value is None else self.value


def _ratio(numerator: float, denominator: float, reason: str) -> Statistic:
    # Sums of products of counts: a denominator that should be zero can come out as 1e-17.
    if abs(denominator) <= 1e-12:
        return Statistic.undefined(reason)
    return Statistic(float(numerator / denominator))


# --------------------------------------------------------------------------- input


@dataclass(frozen=True, eq=False)
class Ratings:
    """Grades of units by annotators on the integer scale ``scale = (min, max)``.

    ``matrix`` is float64, units × annotators, ``NaN`` where an annotator did not rate a unit.
    ``units`` and ``annotators`` name the rows and columns (row/column numbers when not given).
    """

    matrix: np.ndarray
    scale: tuple[int, int]
    annotators: tuple[Any, ...]
    units: tuple[Any, ...]

    # -- construction

    @classmethod
    def from_matrix(
        cls,
        matrix: Any,
        scale: tuple[int, int],
        *,
        annotators: Sequence[Any] | None = None,
        units: Sequence[Any] | None = None,
        source: str | None = None,
    ) -> Ratings:
        """Check ``matrix`` (units × annotators, NaN = missing) against ``scale``."""
        lo, hi = _check_scale(scale)
        m = np.array(matrix, dtype=np.float64)
        if m.ndim != 2:
            raise InputError(
                f"a ratings matrix must be 2-dimensional (units × annotators), got shape {m.shape}.",
                file=source,
            )
        annotators = tuple(range(m.shape[1])) if annotators is None else tuple(annotators)
        units = tuple(range(m.shape[0])) if units is None else tuple(units)
        if len(annotators) != m.shape[1] or len(units) != m.shape[0]:
            raise InputError(
                f"{len(units)} unit names and {len(annotators)} annotator names do not fit a "
                f"{m.shape[0]} × {m.shape[1]} ratings matrix.",
                file=source,
            )
        rated = ~np.isnan(m)
        values = m[rated]
        bad = (values != np.round(values)) | (values < lo) | (values > hi)
        if bad.any():
            row, col = np.argwhere(rated)[np.flatnonzero(bad)[0]]
            raise InputError(
                f"grade {m[row, col]:g} given by annotator {annotators[col]} to "
                f"{_show_key(units[row])} is not a whole grade of the scale {lo}-{hi}.",
                file=source,
                field="grade",
            )
        return cls(m, (lo, hi), annotators, units)

    @classmethod
    def from_long(
        cls,
        units: Any,
        annotators: Any,
        grades: Any,
        scale: tuple[int, int],
        *,
        duplicates: Literal["error", "last"] = "error",
        source: str | None = None,
    ) -> Ratings:
        """Build the matrix from parallel arrays, one rating per position.

        ``units`` is one array of unit keys, or a tuple of arrays whose positions together form
        the key (e.g. ``(query_ids, chunk_ids)``). ``duplicates="error"`` rejects a second grade
        of one annotator for one unit; ``"last"`` keeps the later one (label events in order).
        """
        lo, hi = _check_scale(scale)
        grades = np.asarray(grades, dtype=np.float64)
        ann_names, ann_idx = _distinct(annotators)
        unit_keys, unit_idx = _unit_codes(units, len(grades))
        if len(ann_idx) != len(grades):
            raise InputError(
                f"{len(grades)} grades but {len(ann_idx)} annotators were given.", file=source
            )
        matrix = np.full((len(unit_keys), len(ann_names)), np.nan)
        flat = unit_idx * len(ann_names) + ann_idx
        if duplicates == "error":
            _, first, counts = np.unique(flat, return_index=True, return_counts=True)
            if (counts > 1).any():
                dup = np.flatnonzero(flat == flat[first[np.argmax(counts > 1)]])[1]
                raise InputError(
                    f"annotator {ann_names[ann_idx[dup]]!s} rated unit "
                    f"{_show_key(unit_keys[unit_idx[dup]])} more than once.",
                    file=source,
                    line=int(dup) + 1 if source else None,
                    field="grade",
                )
        # the last position of each (unit, annotator) wins: unique over the reversed order
        _, last_rev = np.unique(flat[::-1], return_index=True)
        last = len(flat) - 1 - last_rev
        matrix.ravel()[flat[last]] = grades[last]
        return cls.from_matrix(
            matrix,
            (lo, hi),
            annotators=ann_names.tolist(),
            units=unit_keys.tolist(),
            source=source,
        )

    # -- derived views

    @property
    def levels(self) -> np.ndarray:
        """The grades of the declared scale, ``min..max``."""
        return np.arange(self.scale[0], self.scale[1] + 1)

    @property
    def n_categories(self) -> int:
        return self.scale[1] - self.scale[0] + 1

    def counts(self) -> np.ndarray:
        """``counts[u, k]``: ratings of unit ``u`` in grade ``min + k`` (units × categories)."""
        q = self.n_categories
        rated = ~np.isnan(self.matrix)
        rows = np.nonzero(rated)[0]
        cats = (self.matrix[rated] - self.scale[0]).astype(np.int64)
        return np.bincount(rows * q + cats, minlength=self.matrix.shape[0] * q).reshape(-1, q)

    def binarised(self, threshold: int) -> Ratings:
        """Grade ≥ ``threshold`` → 1 (relevant), else 0; missing stays missing."""
        m = np.where(np.isnan(self.matrix), np.nan, (self.matrix >= threshold).astype(float))
        return Ratings(m, (0, 1), self.annotators, self.units)

    def annotator_index(self, annotator: Any) -> int:
        try:
            return self.annotators.index(annotator)
        except ValueError:
            raise InputError(f"no annotator named {annotator!s} in these ratings.") from None


def _check_scale(scale: Any) -> tuple[int, int]:
    try:
        lo, hi = (int(scale[0]), int(scale[1]))
    except (TypeError, ValueError, IndexError):
        raise InputError(f"a scale is (min, max) in whole grades, got {quote(scale)}.") from None
    if hi <= lo:
        raise InputError(f"a scale needs at least two grades, got {lo}-{hi}.", field="scale")
    return lo, hi


def _unit_codes(units: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(units, tuple):
        parts = [_distinct(part) for part in units]
        codes = np.stack([inverse for _, inverse in parts], axis=1)
        combos, idx = np.unique(codes, axis=0, return_inverse=True)
        keys = np.empty(len(combos), dtype=object)
        keys[:] = list(zip(*(parts[j][0][combos[:, j]].tolist() for j in range(len(parts)))))
        return keys, idx.ravel()
    return _distinct(units)


def _distinct(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)``, sorted the same way. Text is sorted as its
    UTF-8 bytes, which order as the code points do (sorting Python strings one comparison at
    a time took most of the time of a project's 1.4 million labels)."""
    array = np.asarray(values)
    if array.dtype == object and len(array):
        items = array.tolist()
        try:
            encoded = [v.encode("utf-8") for v in items]
        except (AttributeError, UnicodeEncodeError):  # not all text: Python's comparisons
            encoded = None
        if encoded is not None:
            raw = np.array(encoded, dtype=bytes)
            lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
            if np.array_equal(np.char.str_len(raw), lengths):  # no text ends in NUL (S drops it)
                keys, inverse = np.unique(raw, return_inverse=True)
                out = np.empty(len(keys), dtype=object)
                out[:] = [k.decode("utf-8") for k in keys.tolist()]
                return out, inverse.ravel()
    keys, inverse = np.unique(array, return_inverse=True)
    return keys, inverse.ravel()


def _show_key(key: Any) -> str:
    return "/".join(map(str, key)) if isinstance(key, tuple) else str(key)


def _as_ratings(data: Any, scale: tuple[int, int] | None) -> Ratings:
    if isinstance(data, Ratings):
        return data
    if scale is None:
        raise InputError("the declared scale (min, max) is needed to read a ratings matrix.")
    return Ratings.from_matrix(data, scale)


# --------------------------------------------------------------------------- helpers on counts


def _pairable(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counts and rating totals of the units rated at least twice."""
    m = counts.sum(axis=1)
    keep = m >= 2
    return counts[keep].astype(np.float64), m[keep].astype(np.float64)


def _distance(levels: np.ndarray, kind: str) -> np.ndarray:
    """Disagreement weights between grades of the declared scale, scaled to [0, 1]."""
    diff = np.abs(levels[:, None] - levels[None, :]).astype(np.float64)
    span = float(levels[-1] - levels[0])
    if kind == "nominal":
        return (diff > 0).astype(np.float64)
    if kind == "linear":
        return diff / span
    if kind == "quadratic":
        return (diff / span) ** 2
    raise InputError(f"unknown weighting {quote(kind)}; use nominal, linear or quadratic.")


# --------------------------------------------------------------------------- statistics


def percent_agreement(
    ratings: Ratings | Any, *, tolerance: int = 0, scale: tuple[int, int] | None = None
) -> Statistic:
    r"""Share of agreeing pairs of ratings, averaged over units rated at least twice.

    For a unit with :math:`m_u \ge 2` ratings, :math:`n_{uk}` of them in grade :math:`k`:

    .. math:: P_u = \frac{\sum_{k,l:\,|k-l| \le t} n_{uk} n_{ul} - m_u}{m_u (m_u - 1)},
              \qquad P = \frac{1}{U'} \sum_u P_u

    with ``tolerance`` :math:`t` = 0 for exact agreement and 1 for "within ±1 grade". With two
    annotators this is the share of units they agree on; with complete data and :math:`t = 0` it
    is Fleiss' (1971) :math:`\bar P`; with missing ratings it is the observed agreement
    :math:`p_a` of Gwet (2014, *Handbook of Inter-Rater Reliability*, 4th ed., §2.5).
    """
    r = _as_ratings(ratings, scale)
    counts, m = _pairable(r.counts())
    if len(m) == 0:
        return Statistic.undefined("no unit has two or more ratings")
    near = (np.abs(r.levels[:, None] - r.levels[None, :]) <= tolerance).astype(np.float64)
    agreeing = np.einsum("uk,kl,ul->u", counts, near, counts) - m
    return Statistic(float(np.mean(agreeing / (m * (m - 1)))))


def grade_distribution(ratings: Ratings | Any, *, scale: tuple[int, int] | None = None) -> dict:
    """Each annotator's count of ratings per grade of the scale: ``{annotator: {grade: n}}``."""
    r = _as_ratings(ratings, scale)
    out = {}
    for j, name in enumerate(r.annotators):
        col = r.matrix[:, j]
        col = col[~np.isnan(col)].astype(np.int64) - r.scale[0]
        n = np.bincount(col, minlength=r.n_categories)
        out[name] = {int(g): int(c) for g, c in zip(r.levels, n)}
    return out


def confusion_matrix(a: Any, b: Any, scale: tuple[int, int]) -> np.ndarray:
    """``C[i, j]``: units graded ``min+i`` by ``a`` and ``min+j`` by ``b`` (both rated)."""
    lo, hi = _check_scale(scale)
    r = Ratings.from_matrix(np.column_stack([np.asarray(a, float), np.asarray(b, float)]), (lo, hi))
    both = ~np.isnan(r.matrix).any(axis=1)
    q = hi - lo + 1
    i = (r.matrix[both, 0] - lo).astype(np.int64)
    j = (r.matrix[both, 1] - lo).astype(np.int64)
    return np.bincount(i * q + j, minlength=q * q).reshape(q, q)


def _kappa_from_confusion(confusion: np.ndarray, weights: Weights, levels: np.ndarray) -> Statistic:
    n = confusion.sum()
    if n == 0:
        return Statistic.undefined("the two annotators rated no unit in common")
    w = _distance(levels, weights or "nominal")
    observed = confusion / n
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    d_o = float((w * observed).sum())
    d_e = float((w * expected).sum())
    reason = "0/0: both annotators gave every unit one and the same grade"
    stat = _ratio(d_o, d_e, reason)
    return stat if stat.value is None else Statistic(1.0 - stat.value)


def cohen_kappa(
    a: Any, b: Any, scale: tuple[int, int], *, weights: Weights = None
) -> Statistic:
    r"""Cohen's κ of two annotators over the units both rated.

    With :math:`p_{ij}` the share of units graded :math:`i` by *a* and :math:`j` by *b*, and
    :math:`e_{ij} = p_{i\cdot} p_{\cdot j}` its chance expectation,

    .. math:: \kappa_w = 1 - \frac{\sum_{ij} w_{ij} p_{ij}}{\sum_{ij} w_{ij} e_{ij}}

    with disagreement weights over the *declared* scale ``min..max``: unweighted
    :math:`w_{ij} = [i \ne j]` (Cohen 1960, :math:`\kappa = (p_o - p_e)/(1 - p_e)`),
    ``"linear"`` :math:`|i-j|/(max-min)`, ``"quadratic"`` :math:`(i-j)^2/(max-min)^2`
    (Cohen 1968; Fleiss & Cohen 1973). ``a`` and ``b`` are aligned grade arrays, ``NaN`` where
    not rated. Undefined when they share no unit, or when both gave every unit the same grade
    (:math:`p_e = 1`, 0/0).
    """
    lo, hi = _check_scale(scale)
    return _kappa_from_confusion(confusion_matrix(a, b, (lo, hi)), weights, np.arange(lo, hi + 1))


def one_grade_only(a: Any, b: Any, names: tuple[str, str] = ("a", "b")) -> str | None:
    """Why κ of ``a`` and ``b`` says nothing, or None: on the units both rated, one of them (or
    both) gave a single grade. Then chance agreement equals observed agreement for that side and
    κ is 0 (or 0/0) whatever the other did -- relevant-only qrels against an annotator are the
    usual case."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    both = ~np.isnan(a) & ~np.isnan(b)
    n = int(both.sum())
    if n == 0:
        return None
    for name, side in zip(names, (a[both], b[both])):
        grades = np.unique(side)
        if len(grades) == 1:
            return (f"{name} gave one grade only ({int(grades[0])}) on the {n} shared units: "
                    "kappa cannot tell agreement from chance")
    return None


def fleiss_kappa(ratings: Ratings | Any, *, scale: tuple[int, int] | None = None) -> Statistic:
    r"""Fleiss' κ for units that all have the same number of ratings :math:`m` (Fleiss 1971).

    .. math:: \bar P = \frac{1}{N} \sum_u \frac{\sum_k n_{uk}(n_{uk}-1)}{m(m-1)},\quad
              p_k = \frac{1}{Nm}\sum_u n_{uk},\quad \bar P_e = \sum_k p_k^2,\quad
              \kappa = \frac{\bar P - \bar P_e}{1 - \bar P_e}

    Units nobody rated are ignored. Not applicable (undefined, with the reason) when the units
    have different numbers of ratings or only one each, and 0/0 when every rating is one grade.
    """
    r = _as_ratings(ratings, scale)
    counts = r.counts()
    m = counts.sum(axis=1)
    counts, m = counts[m > 0].astype(np.float64), m[m > 0]
    if len(m) == 0:
        return Statistic.undefined("no unit has a rating")
    if m.min() != m.max():
        return Statistic.undefined(
            f"not applicable: units have between {int(m.min())} and {int(m.max())} ratings; "
            "Fleiss' kappa needs the same number for every unit"
        )
    if m[0] < 2:
        return Statistic.undefined("not applicable: every unit has a single rating")
    k = float(m[0])
    p_bar = float(np.mean(((counts * (counts - 1)).sum(axis=1)) / (k * (k - 1))))
    p_k = counts.sum(axis=0) / counts.sum()
    p_e = float((p_k**2).sum())
    return _ratio(p_bar - p_e, 1.0 - p_e, "0/0: every rating is the same grade")


def _coincidences(counts: np.ndarray) -> np.ndarray:
    """Krippendorff's coincidence matrix :math:`o_{ck}` from pairable units' counts."""
    c, m = _pairable(counts)
    per_unit = c / (m - 1)[:, None]
    return per_unit.T @ c - np.diag(per_unit.sum(axis=0))


def krippendorff_alpha(
    ratings: Ratings | Any,
    level: Level = "nominal",
    *,
    scale: tuple[int, int] | None = None,
) -> Statistic:
    r"""Krippendorff's α with missing ratings (Krippendorff 2011, "Computing Krippendorff's
    Alpha-Reliability"; Hayes & Krippendorff 2007).

    Units rated once are left out. From the coincidence matrix

    .. math:: o_{ck} = \sum_u \frac{\text{number of } (c, k) \text{ pairs of ratings in } u}{m_u - 1},
              \quad n_c = \sum_k o_{ck},\quad n = \sum_c n_c,

    .. math:: \alpha = 1 - (n - 1)\,\frac{\sum_{c,k} o_{ck}\,\delta^2_{ck}}
                                         {\sum_{c,k} n_c n_k\,\delta^2_{ck}}

    with :math:`\delta^2_{ck}` = ``nominal`` :math:`[c \ne k]`; ``interval`` :math:`(c - k)^2`;
    ``ordinal`` :math:`\big(\sum_{g=c}^{k} n_g - (n_c + n_k)/2\big)^2`. Undefined without a
    unit rated twice, or when all pairable ratings are one grade (0/0).
    """
    r = _as_ratings(ratings, scale)
    o = _coincidences(r.counts())
    n_c = o.sum(axis=1)
    n = n_c.sum()
    if n == 0:
        return Statistic.undefined("no unit has two or more ratings")
    levels = r.levels.astype(np.float64)
    if level == "nominal":
        d2 = _distance(r.levels, "nominal")
    elif level == "interval":
        d2 = (levels[:, None] - levels[None, :]) ** 2
    elif level == "ordinal":
        cum = np.concatenate([[0.0], np.cumsum(n_c)])
        lo = np.minimum.outer(np.arange(len(n_c)), np.arange(len(n_c)))
        hi = np.maximum.outer(np.arange(len(n_c)), np.arange(len(n_c)))
        d2 = (cum[hi + 1] - cum[lo] - (n_c[:, None] + n_c[None, :]) / 2) ** 2
    else:
        raise InputError(f"unknown level of measurement {quote(level)}; use nominal, ordinal or interval.")
    d_o = float((o * d2).sum())
    d_e = float((np.outer(n_c, n_c) * d2).sum())
    stat = _ratio((n - 1) * d_o, d_e, "0/0: every pairable rating is the same grade")
    return stat if stat.value is None else Statistic(1.0 - stat.value)


def gwet_ac1(ratings: Ratings | Any, *, scale: tuple[int, int] | None = None) -> Statistic:
    r"""Gwet's AC1 for any number of annotators, missing ratings allowed (Gwet 2008, "Computing
    inter-rater reliability and its variance in the presence of high agreement"; the form with
    missing ratings of Gwet 2014, *Handbook of Inter-Rater Reliability*, 4th ed., §2.5 & ch. 4).

    With :math:`q` the number of grades of the declared scale, :math:`r_{uk}` the ratings of unit
    :math:`u` in grade :math:`k`, :math:`r_u` its ratings, :math:`N` the units with any rating
    and :math:`N'` those with at least two:

    .. math:: p_a = \frac{1}{N'} \sum_{u:\,r_u \ge 2} \sum_k \frac{r_{uk}(r_{uk}-1)}{r_u(r_u-1)},
              \quad \pi_k = \frac{1}{N} \sum_{u:\,r_u \ge 1} \frac{r_{uk}}{r_u},
              \quad p_e = \frac{1}{q-1} \sum_k \pi_k (1 - \pi_k),
              \quad AC_1 = \frac{p_a - p_e}{1 - p_e}

    Unlike κ, the chance term shrinks as one grade dominates, so AC1 stays meaningful when
    nearly every pair is "not relevant" (the prevalence paradox). :math:`p_e \le 1/q < 1`, so it
    is undefined only without a unit rated twice.
    """
    r = _as_ratings(ratings, scale)
    counts = r.counts().astype(np.float64)
    m = counts.sum(axis=1)
    pair_c, pair_m = counts[m >= 2], m[m >= 2]
    if len(pair_m) == 0:
        return Statistic.undefined("no unit has two or more ratings")
    p_a = float(np.mean((pair_c * (pair_c - 1)).sum(axis=1) / (pair_m * (pair_m - 1))))
    pi = (counts[m > 0] / m[m > 0][:, None]).mean(axis=0)
    q = r.n_categories
    p_e = float((pi * (1 - pi)).sum() / (q - 1))
    return _ratio(p_a - p_e, 1.0 - p_e, "0/0: chance agreement is 1")


def relevant_overlap(a: Any, b: Any, threshold: int) -> Statistic:
    r"""Overlap of two annotators' relevant sets, :math:`|A \cap B| / |A \cup B|`, over the units
    both rated, with relevant = grade ≥ ``threshold`` — the measure of assessor agreement TREC
    reports (Voorhees 2000, "Variations in relevance judgments and the measurement of retrieval
    effectiveness"). Undefined when neither found anything relevant.
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    both = ~(np.isnan(a) | np.isnan(b))
    ra, rb = a[both] >= threshold, b[both] >= threshold
    return _ratio(
        float((ra & rb).sum()),
        float((ra | rb).sum()),
        "neither annotator judged a common unit relevant (empty union)",
    )


def kendall_tau(x: Any, y: Any) -> Statistic:
    r"""Kendall's :math:`\tau_b` between two scorings of the same items (e.g. the scores of each
    run under two sets of qrels): with :math:`C` concordant and :math:`D` discordant pairs,
    :math:`n_0 = n(n-1)/2` and :math:`n_x, n_y` the pairs tied in ``x`` and in ``y``,

    .. math:: \tau_b = \frac{C - D}{\sqrt{(n_0 - n_x)(n_0 - n_y)}}

    (Kendall 1945; the correlation of system rankings TREC reports since Voorhees 2000). NaN
    entries are dropped pairwise. Undefined with fewer than two items or when one side ties
    everything.
    """
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = len(x)
    if n < 2:
        return Statistic.undefined("fewer than two items to rank")
    i, j = np.triu_indices(n, k=1)
    dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    n0 = len(i)
    n_x, n_y = int((dx == 0).sum()), int((dy == 0).sum())
    reason = "one ranking ties every item"
    if n_x == n0 or n_y == n0:
        return Statistic.undefined(reason)
    return Statistic(float((dx * dy).sum() / np.sqrt((n0 - n_x) * (n0 - n_y))))


# --------------------------------------------------------------------------- pairwise, thresholds


@dataclass(frozen=True)
class PairAgreement:
    """Agreement of annotators ``a`` and ``b`` over the ``n`` units both rated."""

    a: Any
    b: Any
    n: int
    percent_agreement: Statistic
    percent_agreement_within_1: Statistic
    cohen_kappa: Statistic
    cohen_kappa_linear: Statistic
    cohen_kappa_quadratic: Statistic
    confusion: np.ndarray
    """Rows: ``a``'s grade, columns: ``b``'s grade, over the declared scale min..max."""

    def statistics(self) -> dict[str, Statistic]:
        return {
            "percent_agreement": self.percent_agreement,
            "percent_agreement_within_1": self.percent_agreement_within_1,
            "cohen_kappa": self.cohen_kappa,
            "cohen_kappa_linear": self.cohen_kappa_linear,
            "cohen_kappa_quadratic": self.cohen_kappa_quadratic,
        }


def pair_agreement(ratings: Ratings, a: Any, b: Any) -> PairAgreement:
    """Percent agreement, the three Cohen's κ and the confusion matrix of annotators a and b."""
    ia, ib = ratings.annotator_index(a), ratings.annotator_index(b)
    confusion = confusion_matrix(ratings.matrix[:, ia], ratings.matrix[:, ib], ratings.scale)
    n = int(confusion.sum())
    levels = ratings.levels
    if n == 0:
        none = Statistic.undefined(f"{a} and {b} rated no unit in common")
        pa = pa1 = none
    else:
        dist = np.abs(levels[:, None] - levels[None, :])
        pa = Statistic(float(np.trace(confusion) / n))
        pa1 = Statistic(float(confusion[dist <= 1].sum() / n))
    return PairAgreement(
        a=a,
        b=b,
        n=n,
        percent_agreement=pa,
        percent_agreement_within_1=pa1,
        cohen_kappa=_kappa_from_confusion(confusion, None, levels),
        cohen_kappa_linear=_kappa_from_confusion(confusion, "linear", levels),
        cohen_kappa_quadratic=_kappa_from_confusion(confusion, "quadratic", levels),
        confusion=confusion,
    )


@dataclass(frozen=True)
class ThresholdAgreement:
    """Agreement after binarising at ``threshold`` (grade ≥ threshold = relevant)."""

    threshold: int
    percent_agreement: Statistic
    krippendorff_alpha: Statistic
    fleiss_kappa: Statistic
    gwet_ac1: Statistic
    pairwise: tuple[dict, ...]
    """Per pair: ``a``, ``b``, ``n``, ``cohen_kappa`` and ``overlap`` (Statistic values)."""


def binarised_agreement(ratings: Ratings) -> list[ThresholdAgreement]:
    """Agreement at every threshold of the scale: for t in min+1..max, relevant = grade ≥ t."""
    out = []
    for t in ratings.levels[1:]:
        b = ratings.binarised(int(t))
        pairs = []
        for x, y in combinations(range(len(ratings.annotators)), 2):
            conf = confusion_matrix(b.matrix[:, x], b.matrix[:, y], (0, 1))
            pairs.append(
                {
                    "a": ratings.annotators[x],
                    "b": ratings.annotators[y],
                    "n": int(conf.sum()),
                    "cohen_kappa": _kappa_from_confusion(conf, None, np.arange(2)),
                    "overlap": relevant_overlap(ratings.matrix[:, x], ratings.matrix[:, y], int(t)),
                }
            )
        out.append(
            ThresholdAgreement(
                threshold=int(t),
                percent_agreement=percent_agreement(b),
                krippendorff_alpha=krippendorff_alpha(b, "nominal"),
                fleiss_kappa=fleiss_kappa(b),
                gwet_ac1=gwet_ac1(b),
                pairwise=tuple(pairs),
            )
        )
    return out
