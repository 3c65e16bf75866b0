"""Agreement between a project's annotators, disputed pairs, adjudication and label-quality signals.

Current labels are read with one SQLAlchemy Core select straight into numpy arrays (the newest
non-recheck event per annotator and pair with a grade) and handed to
:mod:`ragjudge.metrics.agreement`. Units are (query, chunk) pairs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import func, select

from ragjudge.errors import InputError, UsageError
from ragjudge.formats.records import check_typed
from ragjudge.metrics.agreement import (
    AgreementReport,
    DisputedUnit,
    Ratings,
    agreement_report,
    cohen_kappa,
    confusion_matrix,
    grouped_agreement,
    kendall_tau,
    krippendorff_alpha,
    one_grade_only,
)
from ragjudge.services.qrels import (
    RECHECK,
    GoldPolicy,
    _to_arrays,
    adjudications,
    gold_policy,
    implied_labels,
    newest_label_ids,
    not_recheck,
)
from ragjudge.services.roster import require_lead
from ragjudge.store.schema import Adjudication, Annotator, Chunk, Label, Query, utcnow

if TYPE_CHECKING:
    from ragjudge.services.project import Project

__all__ = [
    "AgreementView",
    "PairDetail",
    "adjudicate",
    "adjudicated_grades",
    "annotator_breakdown",
    "disputed_pairs",
    "fast_labels",
    "grade_drift",
    "human_vs_llm",
    "label_quality",
    "labels_stamp",
    "load_ratings",
    "mean_pairwise_kappa",
    "pair_detail",
    "project_agreement",
    "query_breakdown",
    "ratings_from_records",
    "scale_bounds",
    "self_agreement",
    "verdict_stability",
]


# --------------------------------------------------------------------------- reading labels


def scale_bounds(project: Project) -> tuple[int, int]:
    scale = project.scale
    return scale.min, scale.max


def load_ratings(
    project: Project,
    *,
    annotators: Iterable[str] | None = None,
    query_ids: Iterable[str] | None = None,
    include_llm: bool = False,
) -> Ratings:
    """The project's current grades as a units × annotators :class:`Ratings` on its scale:
    the people's, and LLM annotators' too when named or with ``include_llm`` (agreement among
    people is its own figure; :func:`human_vs_llm` sets the model beside it). A complete
    reference's grade is the bottom of the scale on the pairs of its queries others graded and
    it does not list (:func:`ragjudge.services.qrels.implied_labels`)."""
    newest = newest_label_ids()
    stmt = (
        select(Label.query_id, Label.chunk_id, Label.annotator, Label.grade)
        .join(newest, Label.id == newest.c.id)
        .where(Label.grade.is_not(None))
    )
    if annotators is not None:
        stmt = stmt.where(Label.annotator.in_(list(annotators)))
    elif not include_llm:
        stmt = stmt.where(Label.annotator.not_in(select(Annotator.name).where(Annotator.kind == "llm")))
    if query_ids is not None:
        stmt = stmt.where(Label.query_id.in_(list(query_ids)))
    with project.connect() as connection:
        rows: Sequence[Any] = connection.execute(stmt).all()
        policy = gold_policy(connection, project.scale.min)
    if policy.complete and rows:
        labels = implied_labels(_to_arrays(rows), policy)
        rows = list(zip(labels.query_ids, labels.chunk_ids, labels.annotators, labels.grades.tolist()))
    return _ratings(rows, scale_bounds(project), source=None)


def labels_stamp(project: Project) -> tuple[int, int]:
    """(newest label id, newest adjudication id): changes exactly when there is something new
    to show, and costs two index lookups, so a live screen can poll it."""
    with project.connect() as connection:
        label = connection.scalar(select(func.max(Label.id)))
        decided = connection.scalar(select(func.max(Adjudication.id)))
    return int(label or 0), int(decided or 0)


def _ratings(rows: Sequence[Any], scale: tuple[int, int], *, source: str | None) -> Ratings:
    if not rows:
        return Ratings.from_matrix(np.empty((0, 0)), scale)
    q, c, a, g = (np.array(col, dtype=object) for col in zip(*rows))
    return Ratings.from_long((q, c), a, g.astype(np.float64), scale, duplicates="last", source=source)


def ratings_from_records(
    records: Iterable[Any], scale: tuple[int, int] | None = None, *, source: str | None = None
) -> tuple[Ratings, bool]:
    """Ratings from label records (``query_id``, ``chunk_id``, ``annotator``, ``grade``), e.g.
    a labels JSONL/CSV file. Without ``scale`` it is the observed lowest to highest grade;
    the second value says whether the scale was inferred so. A line without a grade (a pair
    only flagged or commented on) is no rating."""
    rows = []
    for record in records:
        if record.grade is None:
            continue
        if record.annotator is None:
            raise InputError(
                f"the label of {record.query_id} / {record.chunk_id} names no annotator; "
                "agreement needs an 'annotator' field on every label.",
                file=source,
                field="annotator",
            )
        rows.append((record.query_id, record.chunk_id, record.annotator, record.grade))
    inferred = scale is None
    if scale is None:
        grades = [r[3] for r in rows]
        lo, hi = (min(grades), max(grades)) if grades else (0, 1)
        scale = (lo, hi if hi > lo else lo + 1)
    else:
        lo, hi = scale
        for query_id, chunk_id, _, grade in rows:
            if not lo <= grade <= hi:
                raise InputError(
                    f"grade {grade} of {query_id} / {chunk_id} is off the scale {lo}-{hi}.",
                    file=source,
                    field="grade",
                    hint="Give the scale the labels use with --scale.",
                )
    return _ratings(rows, scale, source=source), inferred


# --------------------------------------------------------------------------- the report


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

    def to_dict(self, *, disputed_limit: int | None = None) -> dict:
        out = self.report.to_dict(disputed_limit=disputed_limit)
        if self.reference is not None:
            out["reference"] = self.reference
        if self.warnings:
            out["warnings"] = list(self.warnings)
        out["disputed"] = [_disputed_json(d, self.unit_fields)
                           for d in self.report.disputed[:disputed_limit]]
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


def project_agreement(project: Project, *, annotators: Iterable[str] | None = None) -> AgreementView:
    """Every agreement statistic of the project's current labels, with breakdowns, and each
    annotator against the reference annotator when there is one."""
    return with_reference(project, agreement_view(load_ratings(project, annotators=annotators)))


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


def summary_statistics(report) -> list[tuple[str, object]]:  # noqa: ANN001 - AgreementReport
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
    from ragjudge.services.qrels import gold_qrels, llm_annotators

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
        with_gold = _ratings(rows, (lo, hi), source=None)
        for m in machines:
            out["against_gold"].append(row(with_gold, "gold", m))
    return out


def disputed_pairs(project: Project, *, limit: int | None = None) -> list[dict]:
    """Pairs whose annotators' grades differ, largest spread first, then most ratings, with the
    newest adjudication of each (``adjudicated``: grade or None)."""
    report = agreement_report(load_ratings(project))
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


# --------------------------------------------------------------------------- adjudication


@dataclass(frozen=True)
class AnnotatorLabel:
    """One annotator's current label of the pair (``note``: the grade's note) and their flag
    (with its note) and comment; an annotator who only flagged or commented has no grade."""

    annotator: str
    grade: int | None
    skipped: bool
    flagged: bool
    note: str | None
    duration_ms: int | None
    created_at: datetime | None
    flag_note: str | None = None
    comment: str | None = None

    @property
    def remarks(self) -> str:
        """The flag, its note, the comment and the grade's note in one line (each text once)."""
        parts = []
        if self.flagged:
            parts.append(f"flagged: {self.flag_note}" if self.flag_note else "flagged")
        for text in (self.comment, self.note):
            if text and text != self.flag_note and text not in parts:
                parts.append(text)
        return " · ".join(parts)


@dataclass(frozen=True)
class PairDetail:
    """Everything the adjudication view shows for one pair."""

    query_id: str
    query_text: str
    chunk_id: str
    chunk_text: str
    labels: tuple[AnnotatorLabel, ...]
    adjudications: tuple[dict, ...]
    """Every adjudication of the pair, oldest first: grade, by, reason, created_at."""

    @property
    def adjudicated(self) -> int | None:
        return self.adjudications[-1]["grade"] if self.adjudications else None


def pair_detail(project: Project, query_id: str, chunk_id: str) -> PairDetail:
    """The query, the chunk, each annotator's current label with note and time spent, their
    flags and comments, and the pair's adjudications."""
    from ragjudge.services.judging import NO_MARKS, marks_of_pair

    newest = newest_label_ids()
    with project.read() as session:
        query = session.get(Query, query_id)
        chunk = session.get(Chunk, chunk_id)
        if query is None:
            raise UsageError(f"there is no query '{query_id}' in this project.")
        if chunk is None:
            raise UsageError(f"there is no chunk '{chunk_id}' in this project.")
        rows = session.execute(
            select(Label)
            .join(newest, Label.id == newest.c.id)
            .where(Label.query_id == query_id, Label.chunk_id == chunk_id)
            .order_by(Label.annotator)
        ).scalars().all()
        # time spent: every non-recheck event of the annotator on this pair
        spent = dict(
            session.execute(
                select(Label.annotator, func.sum(Label.duration_ms))
                .where(Label.query_id == query_id, Label.chunk_id == chunk_id, not_recheck())
                .group_by(Label.annotator)
            ).all()
        )
        marks = marks_of_pair(session, query_id, chunk_id)
        labelled = {row.annotator: row for row in rows}
        decisions = session.execute(
            select(Adjudication)
            .where(Adjudication.query_id == query_id, Adjudication.chunk_id == chunk_id)
            .order_by(Adjudication.id)
        ).scalars().all()
        return PairDetail(
            query_id=query_id,
            query_text=query.text,
            chunk_id=chunk_id,
            chunk_text=chunk.text,
            labels=tuple(
                AnnotatorLabel(
                    annotator=name,
                    grade=row.grade if row is not None else None,
                    skipped=bool(row.skipped) if row is not None else False,
                    flagged=mark.flagged,
                    note=row.note if row is not None else None,
                    duration_ms=None if (ms := spent.get(name)) is None else int(ms),
                    created_at=row.created_at if row is not None else None,
                    flag_note=mark.flag_note,
                    comment=mark.comment,
                )
                for name in sorted(labelled.keys() | {n for n, m in marks.items() if m.any})
                for row, mark in [(labelled.get(name), marks.get(name, NO_MARKS))]
            ),
            adjudications=tuple(
                {"grade": a.grade, "by": a.by, "reason": a.reason, "created_at": a.created_at}
                for a in decisions
            ),
        )


def adjudicate(
    project: Project,
    *,
    query_id: str,
    chunk_id: str,
    grade: int,
    reason: str,
    by: str,
) -> int:
    """Record the lead's final grade for a pair (an append-only event; gold qrels use the newest
    one first). Returns the adjudication's id. Once the project has a lead, ``by`` must be one."""
    scale = project.scale
    if not scale.contains(grade):
        raise UsageError(f"grade {grade} is off the project's scale {scale.describe()}.")
    if not reason or not reason.strip():
        raise UsageError("an adjudication needs a reason (--reason): it is what later readers see.")
    if not by or not by.strip():
        raise UsageError("an adjudication needs the name of who decided (--by).")
    check_typed(reason, "The reason")
    check_typed(by, "The name of who decided")
    require_lead(project, by.strip(), "adjudicate")
    with project.read() as session:
        if session.get(Query, query_id) is None:
            raise UsageError(f"there is no query '{query_id}' in this project.")
        if session.get(Chunk, chunk_id) is None:
            raise UsageError(f"there is no chunk '{chunk_id}' in this project.")

    def add(session) -> int:  # noqa: ANN001
        row = Adjudication(
            query_id=query_id, chunk_id=chunk_id, grade=int(grade), by=by.strip(),
            reason=reason.strip(), created_at=utcnow(),
        )
        session.add(row)
        session.flush()
        return row.id

    return project.write(add)


# --------------------------------------------------------------------------- label quality

#: Reading faster than this many characters per second is not reading (about 3× a fast
#: skim of ~250 words a minute at ~6 characters a word).
MAX_CHARS_PER_SECOND = 75.0
#: Below this a label is too fast whatever the chunk's length.
MIN_DURATION_MS = 700


def fast_labels(
    project: Project,
    *,
    max_chars_per_second: float = MAX_CHARS_PER_SECOND,
    min_duration_ms: int = MIN_DURATION_MS,
) -> list[dict]:
    """Current labels made implausibly fast for the chunk's length: duration below
    ``max(min_duration_ms, 1000 · len(chunk) / max_chars_per_second)``. Only the annotator's
    current grade of a pair counts: a grade undone or replaced since is no longer a label."""
    newest = newest_label_ids()
    with project.connect() as connection:
        rows = connection.execute(
            select(
                Label.id, Label.annotator, Label.query_id, Label.chunk_id, Label.grade,
                Label.duration_ms, func.length(Chunk.text),
            )
            .join(newest, Label.id == newest.c.id)
            .join(Chunk, Chunk.id == Label.chunk_id)
            .where(Label.grade.is_not(None), Label.duration_ms.is_not(None))
            .order_by(Label.id)
        ).all()
    if not rows:
        return []
    ids, ann, q, c, g, dur, length = (np.array(col, dtype=object) for col in zip(*rows))
    dur = dur.astype(np.float64)
    needed = np.maximum(min_duration_ms, 1000.0 * length.astype(np.float64) / max_chars_per_second)
    fast = np.flatnonzero(dur < needed)
    return [
        {
            "label_id": int(ids[i]), "annotator": ann[i], "query_id": q[i], "chunk_id": c[i],
            "grade": int(g[i]), "duration_ms": int(dur[i]), "chunk_chars": int(length[i]),
            "expected_ms": int(needed[i]),
        }
        for i in fast
    ]


#: Grade drift: an annotator with at least this many current labels ...
DRIFT_MIN_LABELS = 20
#: ... whose mean grade moved by this many grades or more between the halves ...
DRIFT_MEAN = 0.5
#: ... or whose grade distribution moved by this total variation distance or more, drifts.
DRIFT_DISTANCE = 0.25


def drift_rule(min_labels: int = DRIFT_MIN_LABELS, threshold: float = DRIFT_MEAN,
               distance: float = DRIFT_DISTANCE) -> str:
    """The rule :func:`grade_drift` applies, in words (what the screens print under it)."""
    return (f"drifting: with at least {min_labels} current labels, the mean grade of the second "
            f"half (in the order made) moved by {threshold:g} grades or more from the first "
            f"half's, or the grade distribution by a total variation distance of {distance:g} or "
            "more; undone and replaced grades do not count")


def grade_drift(project: Project, *, min_labels: int = DRIFT_MIN_LABELS,
                threshold: float = DRIFT_MEAN, distance: float = DRIFT_DISTANCE) -> list[dict]:
    """Per annotator, the grade distribution of the first half of their current labels against
    the second half (in the order made): mean grade change and total variation distance
    ``½ Σ_g |p₁(g) − p₂(g)|``; ``drifting`` as :func:`drift_rule` says. A grade undone or
    replaced since is not one of their labels (a burst they undid is no drift)."""
    lo, hi = scale_bounds(project)
    newest = newest_label_ids()
    with project.connect() as connection:
        rows = connection.execute(
            select(Label.annotator, Label.grade)
            .join(newest, Label.id == newest.c.id)
            .where(Label.grade.is_not(None))
            .order_by(Label.annotator, Label.id)
        ).all()
    by_annotator: dict[str, list[int]] = {}
    for name, grade in rows:
        if grade is not None:  # (the select leaves out events without a grade)
            by_annotator.setdefault(name, []).append(int(grade))
    out = []
    q = hi - lo + 1
    for name, grades in sorted(by_annotator.items()):
        g = np.clip(np.array(grades), lo, hi) - lo
        half = len(g) // 2
        first, second = g[:half], g[half:]
        if half == 0:
            out.append({"annotator": name, "labels": len(g), "mean_first": None,
                        "mean_second": None, "distance": None, "drifting": False})
            continue
        p1 = np.bincount(first, minlength=q) / len(first)
        p2 = np.bincount(second, minlength=q) / len(second)
        moved = float(0.5 * np.abs(p1 - p2).sum())
        mean1, mean2 = float(first.mean() + lo), float(second.mean() + lo)
        drifting = len(g) >= min_labels and (abs(mean2 - mean1) >= threshold or moved >= distance)
        out.append({"annotator": name, "labels": len(g), "mean_first": mean1,
                    "mean_second": mean2, "distance": moved, "drifting": bool(drifting)})
    return out


def self_agreement(project: Project) -> list[dict]:
    """Blind re-checks: per annotator, how often a recheck grade equals their own current grade
    for the pair (each recheck event against the label it re-asked)."""
    newest = newest_label_ids()
    current = (
        select(Label.annotator, Label.query_id, Label.chunk_id, Label.grade)
        .join(newest, Label.id == newest.c.id)
        .where(Label.grade.is_not(None))
        .subquery()
    )
    with project.connect() as connection:
        rows = connection.execute(
            select(Label.annotator, Label.grade, current.c.grade)
            .join(
                current,
                (current.c.annotator == Label.annotator)
                & (current.c.query_id == Label.query_id)
                & (current.c.chunk_id == Label.chunk_id),
            )
            .where(Label.source == RECHECK, Label.grade.is_not(None))
        ).all()
    stats: dict[str, list[int]] = {}
    for name, again, before in rows:
        entry = stats.setdefault(name, [0, 0, 0])
        entry[0] += 1
        entry[1] += int(again == before)
        entry[2] += int(abs(again - before) <= 1)
    return [
        {"annotator": name, "rechecks": n, "self_agreement": same / n, "within_1": near / n}
        for name, (n, same, near) in sorted(stats.items())
    ]


def label_quality(project: Project) -> dict:
    """Every label-quality signal at once."""
    return {
        "fast_labels": fast_labels(project),
        "grade_drift": grade_drift(project),
        "self_agreement": self_agreement(project),
        "drift_rule": drift_rule(),
    }


# --------------------------------------------------------------------------- the verdict

DEFAULT_VERDICT_MEASURES = ("AP", "nDCG@10", "P@5", "RR")


def verdict_stability(
    project: Project,
    *,
    measures: Iterable[str] | None = None,
    rule: str | None = None,
) -> dict:
    """Does disagreement change which run wins? (issue 5 item 4; Voorhees 2000)

    Every run is scored with the gold qrels (adjudications first, then ``rule``, default the
    project's) and once per annotator with *that annotator's* qrels: the gold qrels with the
    annotator's own grade on every pair they judged — so each annotator's opinion is final where
    they gave one, and pairs they never saw keep the gold grade (with an assignment, annotators
    judge different pairs; scoring them on their own pairs only would compare different pools).

    Per measure: Kendall's τ_b between the gold ranking of runs and each annotator's, the
    smallest and mean τ, the largest change of any run's score (which run, under whose qrels),
    and the winning run under each qrels.

    LLM annotators are not among those annotators: each has its own entry under ``llm``, the
    τ_b between the ranking under its qrels alone and under the people's gold qrels, both on
    the queries it judged (as the TREC 2024 RAG track compared UMBRELA's qrels with NIST's).
    """
    from ragjudge.metrics import Qrels, evaluate_runs, parse_measure
    from ragjudge.services.evaluation import project_run, project_run_names
    from ragjudge.services.qrels import check_rule, gold_qrels

    rule = check_rule(rule or project.rule)
    names = list(measures) if measures else list(DEFAULT_VERDICT_MEASURES)
    labels = [str(parse_measure(m)) for m in names]
    run_names = project_run_names(project)
    gold = {(q, c): g for q, c, g in gold_qrels(project, rule)}
    ratings = load_ratings(project)
    variants: dict[str, dict[tuple[str, str], int]] = {"gold": gold}
    for j, annotator in enumerate(ratings.annotators):
        mine = dict(gold)
        col = ratings.matrix[:, j]
        for unit, grade in zip(ratings.units, col):
            if not np.isnan(grade):
                mine[unit] = int(grade)
        variants[str(annotator)] = mine
    threshold = project.scale.threshold
    runs = [project_run(project, name) for name in run_names]
    # scores[variant][measure] = array over runs
    scores: dict[str, np.ndarray] = {}
    for variant, judgments in variants.items():
        if not judgments or not runs:
            scores[variant] = np.full((len(labels), len(runs)), np.nan)
            continue
        (q, c), g = zip(*judgments.keys()), list(judgments.values())
        qrels = Qrels(list(q), list(c), np.array(g, dtype=np.int64), top_grade=project.scale.max)
        results = evaluate_runs(qrels, runs, names, threshold=threshold)
        scores[variant] = np.array([[results[r].means[k] for r in run_names]
                                    for k in range(len(labels))])
    annotators = [v for v in variants if v != "gold"]
    out_measures = []
    for k, label in enumerate(labels):
        base = scores["gold"][k]
        taus, tau_undefined = {}, {}
        for a in annotators:
            tau = kendall_tau(base, scores[a][k])
            if tau.value is None:
                tau_undefined[a] = tau.reason
            taus[a] = tau.value
        defined = [t for t in taus.values() if t is not None]
        largest: dict[str, Any] | None = None
        for a in annotators:
            delta = scores[a][k] - base
            if len(delta) and np.isfinite(delta).any():
                i = int(np.nanargmax(np.abs(delta)))
                if largest is None or abs(delta[i]) > abs(largest["delta"]):
                    largest = {"run": run_names[i], "qrels": a, "gold": float(base[i]),
                               "value": float(scores[a][k][i]), "delta": float(delta[i])}
        winners = {v: _winner(scores[v][k], run_names) for v in variants}
        out_measures.append({
            "measure": label,
            "scores": {v: dict(zip(run_names, _floats(scores[v][k]))) for v in variants},
            "tau": taus,
            "tau_undefined": tau_undefined,
            "min_tau": min(defined) if defined else None,
            "mean_tau": float(np.mean(defined)) if defined else None,
            "tau_reason": None if defined else (
                "fewer than two runs" if len(runs) < 2 else
                "no annotator's ranking can be compared" if annotators else "no annotators"),
            "largest_change": largest,
            "winner": winners,
            "winner_changes": len({w for w in winners.values() if w is not None}) > 1,
        })
    return {
        "rule": rule,
        "threshold": threshold,
        "runs": run_names,
        "qrels": list(variants),
        "measures": out_measures,
        "llm": _llm_verdict(project, runs, run_names, names, labels, gold),
        "method": "each annotator's qrels = the gold qrels with that annotator's grades on the "
                  "pairs they judged; tau = Kendall's tau-b against the gold ranking of runs",
    }


def _llm_verdict(project: Project, runs: list, run_names: list[str], names: list[str],
                 labels: list[str], gold: dict[tuple[str, str], int]) -> list[dict]:
    """Per LLM annotator and measure: Kendall's τ_b between the run ranking under its qrels
    alone and under the people's gold qrels, on the queries the LLM judged."""
    from ragjudge.metrics import Qrels, evaluate_runs
    from ragjudge.services.qrels import llm_annotators

    with project.connect() as connection:
        machines = sorted(llm_annotators(connection))
    ratings = load_ratings(project, annotators=machines) if machines else None
    out = []
    for m in machines:
        assert ratings is not None
        if m not in ratings.annotators:
            continue
        col = ratings.matrix[:, ratings.annotator_index(m)]
        mine = {u: int(g) for u, g in zip(ratings.units, col) if not np.isnan(g)}
        queries = {q for q, _ in mine}
        people = {k: g for k, g in gold.items() if k[0] in queries}
        scores = {}
        for key, judged in (("llm", mine), ("human", people)):
            if not judged or not runs:
                scores[key] = np.full((len(labels), len(runs)), np.nan)
                continue
            (q, c), g = zip(*judged.keys()), list(judged.values())
            qrels = Qrels(list(q), list(c), np.array(g, dtype=np.int64), top_grade=project.scale.max)
            results = evaluate_runs(qrels, runs, names, threshold=project.scale.threshold)
            scores[key] = np.array([[results[r].means[k] for r in run_names] for k in range(len(labels))])
        rows = []
        for k, label in enumerate(labels):
            tau = kendall_tau(scores["human"][k], scores["llm"][k])
            rows.append({"measure": label, "tau": tau.value, "tau_reason": tau.reason,
                         "human": dict(zip(run_names, _floats(scores["human"][k]))),
                         "llm": dict(zip(run_names, _floats(scores["llm"][k]))),
                         "winner_human": _winner(scores["human"][k], run_names),
                         "winner_llm": _winner(scores["llm"][k], run_names)})
        out.append({"annotator": m, "queries": len(queries), "pairs": len(mine), "measures": rows})
    return out


def _floats(values: np.ndarray) -> list[float | None]:
    return [None if not np.isfinite(v) else float(v) for v in values]


def _winner(values: np.ndarray, run_names: list[str]) -> str | None:
    if not len(values) or not np.isfinite(values).any():
        return None
    best = np.nanmax(values)
    tied = [name for name, v in zip(run_names, values) if v == best]
    return tied[0] if len(tied) == 1 else " = ".join(tied)
