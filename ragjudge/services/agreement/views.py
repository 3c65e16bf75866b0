"""Agreement between a project's annotators, disputed pairs, adjudication and label-quality signals.

Current labels are read with one SQLAlchemy Core select straight into numpy arrays (the newest
non-recheck event per annotator and pair with a grade) and handed to
:mod:`ragjudge.metrics.agreement`. Units are (query, chunk) pairs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
import numpy as np
from ragjudge.metrics.agreement import (
    Ratings,
    Statistic,
    cohen_kappa,
    confusion_matrix,
    krippendorff_alpha,
    one_grade_only,
)
from ragjudge.metrics.agreement_report import (
    AgreementReport,
    DisputedUnit,
    agreement_report,
    disputed_order,
    grouped_agreement,
)
from ragjudge.services.access.rights import Access
from ragjudge.services.events.labels import adjudications
from ragjudge.services.gold.rules import GoldPolicy, gold_policy
from ragjudge.services.agreement.ratings import load_ratings, ratings_from_rows


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


@dataclass(frozen=True)
class AgreementView:
    """The report and its breakdowns, as the CLI and the agreement screen show them."""

    report: AgreementReport
    ratings: Ratings
    by_query: list[dict]
    by_annotator: list[dict]
    unit_fields: tuple[str, ...] = ("query_id", "chunk_id")
    """What a unit is: its parts' names (a judged answer's units are longer than a pair)."""
    reference: dict | None = None
    """Each annotator against the reference annotator (:func:`reference_agreement`)."""
    warnings: tuple[str, ...] = ()
    """Statistics that are degenerate (one grade only on the shared units), in words."""
    hidden_disputed: int = 0
    """Disputed units left out of ``report.disputed`` because the viewer may not see their
    grades (:func:`visible_to`)."""

    def to_dict(self, *, disputed_limit: int | None = None) -> dict:
        out = self.report.to_dict(disputed_limit=disputed_limit)
        if self.reference is not None:
            out["reference"] = self.reference
        if self.warnings:
            out["warnings"] = list(self.warnings)
        out["disputed"] = [_disputed_json(d, self.unit_fields)
                           for d in self.report.disputed[:disputed_limit]]
        if self.hidden_disputed:
            out["hidden_disputed"] = self.hidden_disputed
        out["by_query"] = self.by_query
        out["by_annotator"] = self.by_annotator
        return out


def _disputed_json(d: DisputedUnit, fields: tuple[str, ...] = ("query_id", "chunk_id")) -> dict:
    return {
        **dict(zip(fields, d.unit)),
        "spread": d.spread,
        "n_ratings": d.n_ratings,
        "grades": dict(d.grades),
    }


def project_agreement(project: Project, *, access: Access,
                      annotators: Iterable[str] | None = None) -> AgreementView:
    """Every agreement statistic of the project's current labels, with breakdowns, and each
    annotator against the reference annotator when there is one; the disputed pairs as
    ``access`` may see them (:func:`visible_to`)."""
    view = with_reference(project, agreement_view(load_ratings(project, annotators=annotators)))
    return visible_to(view, access)


def visible_to(view: AgreementView, access: Access) -> AgreementView:
    """``view`` with only the disputed units whose grades ``access`` may see: all of them for
    who sees every grade, else those the viewer rated. The statistics, aggregates, stay."""
    if access.sees_all:
        return view
    from dataclasses import replace

    shown = tuple(d for d in view.report.disputed if access.name is not None
                  and access.name in d.grades)
    return replace(view, report=replace(view.report, disputed=shown),
                   hidden_disputed=len(view.report.disputed) - len(shown))


def with_reference(project: Project, view: AgreementView) -> AgreementView:
    """``view`` with the section of each annotator against the project's reference."""
    from dataclasses import replace

    with project.connect() as connection:
        policy = gold_policy(connection, project.scale.min)
    return replace(view, reference=reference_agreement(view.ratings, policy))


def reference_agreement(ratings: Ratings, policy: GoldPolicy) -> dict | None:
    """Each annotator against the reference (the one with most ratings when there are several)
    on the units both rated: ``n``, ``accuracy`` (same grade), Cohen's ``kappa`` and the
    ``confusion`` matrix (reference rows, annotator columns). κ is undefined, with the reason,
    when either side gave one grade only on those units."""
    names = [a for a in ratings.annotators if a in policy.reference]
    if not names:
        return None
    m = ratings.matrix
    col = {a: j for j, a in enumerate(ratings.annotators)}
    name = max(names, key=lambda a: (int((~np.isnan(m[:, col[a]])).sum()), a))
    ref = m[:, col[name]]
    rows = []
    for other in ratings.annotators:
        if other == name:
            continue
        mine = m[:, col[other]]
        both = ~np.isnan(ref) & ~np.isnan(mine)
        n = int(both.sum())
        row: dict[str, Any] = {"name": other, "n": n,
                               "accuracy": float((ref[both] == mine[both]).mean()) if n else None,
                               "kappa": None,
                               "confusion": confusion_matrix(ref, mine, ratings.scale).tolist()}
        why = one_grade_only(ref, mine, (name, other))
        kappa = cohen_kappa(ref, mine, ratings.scale)
        if why is None and kappa.value is not None:
            row["kappa"] = kappa.value
        else:
            row["undefined"] = {"kappa": why or kappa.reason}
            if not n:
                row["undefined"]["accuracy"] = "no unit rated by both"
        rows.append(row)
    return {"name": name, "complete": name in policy.complete, "annotators": rows}


def degenerate_pairs(ratings: Ratings) -> list[tuple[str, str, str]]:
    """(a, b, why) for every pair of annotators whose κ is degenerate: one of them gave a single
    grade on the units they share (κ is then 0 or 0/0 whatever the other did)."""
    m = ratings.matrix
    out = []
    names = [str(a) for a in ratings.annotators]
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            why = one_grade_only(m[:, i], m[:, j], (names[i], names[j]))
            if why is not None:
                out.append((names[i], names[j], why))
    return out


def agreement_view(ratings: Ratings, *, unit_fields: tuple[str, ...] = ("query_id", "chunk_id")
                   ) -> AgreementView:
    return AgreementView(
        report=agreement_report(ratings),
        ratings=ratings,
        by_query=query_breakdown(ratings),
        by_annotator=annotator_breakdown(ratings),
        unit_fields=unit_fields,
        warnings=tuple(f"{a} and {b}: {why}" for a, b, why in degenerate_pairs(ratings)),
    )


def summary_statistics(report: AgreementReport) -> list[tuple[str, Statistic]]:
    """The headline statistics of a report as (label, Statistic), in the order screens show them."""
    return [
        ("percent agreement", report.percent_agreement),
        ("within ±1 grade", report.percent_agreement_within_1),
        ("Krippendorff's α nominal", report.krippendorff_alpha["nominal"]),
        ("Krippendorff's α ordinal", report.krippendorff_alpha["ordinal"]),
        ("Krippendorff's α interval", report.krippendorff_alpha["interval"]),
        ("Fleiss' κ", report.fleiss_kappa),
        ("Gwet's AC1", report.gwet_ac1),
    ]


def _subset(ratings: Ratings, rows: np.ndarray | None = None, cols: np.ndarray | None = None) -> Ratings:
    m = ratings.matrix
    units, annotators = ratings.units, ratings.annotators
    if rows is not None:
        m = m[rows]
        units = tuple(units[i] for i in rows)
    if cols is not None:
        m = m[:, cols]
        annotators = tuple(annotators[j] for j in cols)
    return Ratings(m, ratings.scale, annotators, units)


def query_breakdown(ratings: Ratings) -> list[dict]:
    """Per query: units, disputed units, percent agreement, α (nominal, ordinal) and AC1
    (undefined → None), all queries in one vectorised pass."""
    if not ratings.units:
        return []
    queries, groups = np.unique(np.array([u[0] for u in ratings.units], dtype=object),
                                return_inverse=True)
    stats = grouped_agreement(ratings, groups.ravel())
    out = []
    for i, query_id in enumerate(queries.tolist()):
        row: dict[str, Any] = {"query_id": query_id}
        for key, values in stats.items():
            value = values[i]
            if values.dtype.kind == "i":
                row[key] = int(value)
            else:
                row[key] = None if np.isnan(value) else float(value)
        out.append(row)
    return out


def mean_pairwise_kappa(ratings: Ratings, annotator: int | None = None) -> tuple[float | None, int, int]:
    """Cohen's κ of the pairs of annotators (those with ``annotator``, a column, when given)
    averaged with each pair weighted by the units it shares -- a pair sharing 3 units does not
    count as much as one sharing 300 --, leaving out pairs whose κ is undefined or degenerate
    (one grade only on their shared units). Returns (mean or None, shared units, pairs)."""
    m = ratings.matrix
    total = weight = 0.0
    pairs = 0
    for a in range(m.shape[1]):
        for b in range(a + 1, m.shape[1]):
            if annotator is not None and annotator not in (a, b):
                continue
            both = ~np.isnan(m[:, a]) & ~np.isnan(m[:, b])
            n = int(both.sum())
            if not n or one_grade_only(m[both, a], m[both, b]) is not None:
                continue
            value = cohen_kappa(m[both, a], m[both, b], ratings.scale).value
            if value is not None:
                total += n * value
                weight += n
                pairs += 1
    return (total / weight if weight else None), int(weight), pairs


def headline_agreement(ratings: Ratings, unit_query: np.ndarray, query_ids: Sequence[str]) -> dict[str, Any]:
    """The figures the evaluation screen shows: Krippendorff's α (ordinal, nominal), Cohen's κ
    averaged over the pairs of annotators (:func:`mean_pairwise_kappa`: ``mean_kappa``,
    ``kappa_units``, ``kappa_pairs``), and the disputed units (grades differ) in all and per
    query (``unit_query[u]``: unit u's index into ``query_ids``), the queries in the order
    :func:`ragjudge.metrics.agreement_report.disputed_units` first lists one of theirs: counted in
    numpy, without a :class:`DisputedUnit` per unit. None where undefined."""
    out: dict[str, Any] = {"alpha_ordinal": None, "alpha_nominal": None, "mean_kappa": None,
                           "disputed": 0, "disputed_by_query": {}}
    if ratings.matrix.size == 0:
        return out
    out["alpha_ordinal"] = krippendorff_alpha(ratings, "ordinal").value
    out["alpha_nominal"] = krippendorff_alpha(ratings, "nominal").value
    out["mean_kappa"], out["kappa_units"], out["kappa_pairs"] = mean_pairwise_kappa(ratings)
    rows = disputed_order(ratings)[0]
    queries, first, counts = np.unique(unit_query[rows], return_index=True, return_counts=True)
    out["disputed"] = len(rows)
    out["disputed_by_query"] = {query_ids[queries[i]]: int(counts[i]) for i in np.argsort(first).tolist()}
    return out


def annotator_breakdown(ratings: Ratings) -> list[dict]:
    """Per annotator: labels, grade distribution and mean grade, agreement with the others over
    the pairs they share (percent agreement, and Cohen's κ averaged over the other annotators
    weighted by the pairs shared with each: :func:`mean_pairwise_kappa`),
    and ordinal α of everyone else without them (a rise means they pull agreement down)."""
    out = []
    m = ratings.matrix
    for j, name in enumerate(ratings.annotators):
        col = m[:, j]
        mine = ~np.isnan(col)
        grades = col[mine].astype(int)
        dist = np.bincount(grades - ratings.scale[0], minlength=ratings.n_categories)
        shared, agree = 0, 0
        for k in range(len(ratings.annotators)):
            if k == j:
                continue
            both = mine & ~np.isnan(m[:, k])
            shared += int(both.sum())
            agree += int((col[both] == m[both, k]).sum())
        mean_kappa, _, _ = mean_pairwise_kappa(ratings, j)
        others = np.array([k for k in range(len(ratings.annotators)) if k != j], dtype=int)
        alpha_without = (
            krippendorff_alpha(_subset(ratings, cols=others), "ordinal").value
            if len(others) >= 2
            else None
        )
        out.append(
            {
                "annotator": name,
                "labels": int(mine.sum()),
                "grade_distribution": {
                    str(g): int(n) for g, n in zip(ratings.levels, dist)
                },
                "mean_grade": float(grades.mean()) if len(grades) else None,
                "shared_ratings": shared,
                "percent_agreement_with_others": agree / shared if shared else None,
                "mean_cohen_kappa": mean_kappa,
                "krippendorff_alpha_ordinal_without": alpha_without,
            }
        )
    return out


def human_vs_llm(project: Project, people: Ratings | None = None) -> dict:
    """How each LLM annotator agrees with each person, beside how the people agree with each
    other: per (person, LLM) the pairs both graded, percent agreement, Cohen's κ (plain and
    linear), Krippendorff's α (ordinal) and the confusion matrix (rows: the person), and the
    mean grade difference (LLM − person: above 0, the model is the more lenient); per LLM the
    same against the people's gold grade (the project's rule over the people's grades).
    ``people``: the caller's :func:`load_ratings` of the people, which are all the ratings
    when the roster has no LLM annotator (read once, not twice)."""
    from ragjudge.metrics.agreement import pair_agreement
    from ragjudge.services.gold.qrels import gold_qrels
    from ragjudge.services.events.labels import llm_annotators

    with project.connect() as connection:
        machines = sorted(llm_annotators(connection))
    ratings = people if people is not None and not machines else load_ratings(project, include_llm=True)
    present = [str(a) for a in ratings.annotators]
    machines = [m for m in machines if m in present]
    humans = [a for a in present if a not in machines]
    out: dict[str, Any] = {"llm": machines, "humans": humans, "scale": list(ratings.scale),
                           "pairs": [], "human_pairs": [], "against_gold": []}
    if not machines and len(humans) < 2:
        return out

    def row(r: Ratings, a: str, b: str) -> dict:
        p = pair_agreement(r, a, b)
        both = ~np.isnan(r.matrix[:, r.annotator_index(a)]) & ~np.isnan(r.matrix[:, r.annotator_index(b)])
        diff = (r.matrix[both, r.annotator_index(b)] - r.matrix[both, r.annotator_index(a)])
        alpha = krippendorff_alpha(_subset(r, cols=np.array([r.annotator_index(a), r.annotator_index(b)])),
                                   "ordinal")
        return {"a": a, "b": b, "n": p.n, "percent_agreement": p.percent_agreement.value,
                "cohen_kappa": p.cohen_kappa.value, "cohen_kappa_linear": p.cohen_kappa_linear.value,
                "krippendorff_alpha_ordinal": alpha.value,
                "undefined": {k: v.reason for k, v in (("cohen_kappa", p.cohen_kappa),
                                                       ("krippendorff_alpha_ordinal", alpha))
                              if v.value is None},
                "mean_difference": float(diff.mean()) if len(diff) else None,
                "confusion": p.confusion.astype(int).tolist()}

    for m in machines:
        for h in humans:
            out["pairs"].append(row(ratings, h, m))
    for i, a in enumerate(humans):
        for b in humans[i + 1:]:
            out["human_pairs"].append(row(ratings, a, b))
    kappas = [p["cohen_kappa"] for p in out["human_pairs"] if p["cohen_kappa"] is not None]
    out["human_mean_kappa"] = float(np.mean(kappas)) if kappas else None
    if machines:
        gold = gold_qrels(project)
        rows = [(q, c, "gold", g) for q, c, g in gold]
        lo, hi = ratings.scale
        for j, m in enumerate(ratings.annotators):
            if str(m) in machines:
                col = ratings.matrix[:, j]
                rows += [(u[0], u[1], str(m), int(g)) for u, g in zip(ratings.units, col) if not np.isnan(g)]
        with_gold = ratings_from_rows(rows, (lo, hi), source=None)
        for m in machines:
            out["against_gold"].append(row(with_gold, "gold", m))
    return out


def disputed_pairs(project: Project, *, access: Access, limit: int | None = None) -> list[dict]:
    """Pairs whose annotators' grades differ, largest spread first, then most ratings, with the
    newest adjudication of each (``adjudicated``: grade or None); those ``access`` may see
    (:func:`visible_to`: in a blind project an annotator's, the pairs they judged)."""
    ratings = load_ratings(project)
    view = AgreementView(agreement_report(ratings), ratings, [], [])
    report = visible_to(view, access).report
    decided = adjudicated_grades(project)
    out = []
    for d in report.disputed[:limit]:
        row = _disputed_json(d)
        row["adjudicated"] = decided.get(d.unit)
        out.append(row)
    return out


def adjudicated_grades(project: Project) -> dict[tuple[str, str], int]:
    with project.connect() as connection:
        return adjudications(connection)
