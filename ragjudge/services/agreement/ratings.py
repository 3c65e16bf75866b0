"""The people's current grades as ratings (units × annotators) for the agreement statistics."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any
import numpy as np
from sqlalchemy import func, select
from ragjudge.errors import InputError
from ragjudge.metrics.agreement import (
    Ratings,
)
from ragjudge.models import AGGREGATION_RULES
from ragjudge.services.events.labels import GradeRows, label_arrays_from_rows, newest_label_ids
from ragjudge.services.gold.gold import skipped_pairs
from ragjudge.services.gold.rules import GoldPolicy, Unjudged, coded_gold_labels, gold_policy, implied_labels
from ragjudge.store.schema import Adjudication, Annotator, Label


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


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
    it does not list (:func:`ragjudge.services.gold.rules.implied_labels`)."""
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
        skipped = skipped_pairs(connection, policy.complete) if policy.complete and rows else {}
    if policy.complete and rows:
        labels = implied_labels(label_arrays_from_rows(rows), policy, skipped)
        rows = list(zip(labels.query_ids, labels.chunk_ids, labels.annotators, labels.grades.tolist()))
    return ratings_from_rows(rows, scale_bounds(project), source=None)


def coded_ratings(rows: GradeRows, scale: tuple[int, int], policy: GoldPolicy, *,
                  leave_out: Iterable[str] = (), unjudged: Unjudged | None = None
                  ) -> tuple[Ratings, np.ndarray]:
    """:func:`load_ratings` of current labels already coded (the evaluation screen's copy of
    them), without reading or decoding a label: the same matrix, annotators and order of units.

    ``rows.pair`` numbers the pairs in the order of their (query id, chunk id), the order of
    :func:`load_ratings`' units, and ``rows.pair_query`` gives each pair number's query (a
    code); ``leave_out`` names the annotators whose labels stay out (the LLM annotators). A
    complete reference's implied grades are added as :func:`implied_labels` adds them.
    Returns the ratings, their units named by pair number, and those pair numbers."""
    pair, who, grade = rows.pair, rows.annotator, rows.grade
    out = [rows.codes[n] for n in leave_out if n in rows.codes]
    if out:
        keep = ~np.isin(who, out)
        pair, who, grade = pair[keep], who[keep], grade[keep]
    if policy.complete and len(grade):
        complete = GoldPolicy(policy.complete, policy.complete, policy.lowest)
        people = GradeRows(pair, who, grade, rows.pair_query, rows.codes)
        ip, iw, ig, implied = coded_gold_labels(people, complete, AGGREGATION_RULES[0], unjudged)
        pair, who, grade = (np.concatenate([a, b[implied]]) for a, b in ((pair, ip), (who, iw), (grade, ig)))
    if not len(grade):
        return Ratings.from_matrix(np.empty((0, 0)), scale), np.zeros(0, dtype=np.int64)
    names = {code: name for name, code in rows.codes.items()}
    codes = sorted(np.unique(who).tolist(), key=names.__getitem__)
    column = np.zeros(max(codes) + 1, dtype=np.int64)
    column[codes] = np.arange(len(codes))
    used = np.zeros(len(rows.pair_query), dtype=bool)
    used[pair] = True
    units = np.flatnonzero(used)
    matrix = np.full((len(units), len(codes)), np.nan)
    matrix[(np.cumsum(used) - 1)[pair], column[who]] = grade
    ratings = Ratings.from_matrix(matrix, scale, annotators=[names[c] for c in codes], units=units.tolist())
    return ratings, units


def labels_stamp(project: Project) -> tuple[int, int]:
    """(newest label id, newest adjudication id): changes exactly when there is something new
    to show, and costs two index lookups, so a live screen can poll it."""
    with project.connect() as connection:
        label = connection.scalar(select(func.max(Label.id)))
        decided = connection.scalar(select(func.max(Adjudication.id)))
    return int(label or 0), int(decided or 0)


def ratings_from_rows(rows: Sequence[Any], scale: tuple[int, int], *, source: str | None) -> Ratings:
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
    return ratings_from_rows(rows, scale, source=source), inferred
