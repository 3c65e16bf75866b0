"""Signals of labelling quality: labels given faster than one can read, a grade scale that
drifts over a session, and an annotator's agreement with their own blind re-checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
import numpy as np
from sqlalchemy import func, select
from ragjudge.services.access.rights import Access
from ragjudge.services.events.labels import RECHECK, newest_label_ids
from ragjudge.store.schema import Chunk, Label
from ragjudge.services.agreement.ratings import scale_bounds


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


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


def label_quality(project: Project, *, access: Access) -> dict:
    """Every label-quality signal at once: counts per annotator for everyone; the too-fast
    labels themselves (each a grade of a pair) only of the pairs ``access`` may see."""
    fast = fast_labels(project)
    counts: dict[str, int] = {}
    for row in fast:
        counts[row["annotator"]] = counts.get(row["annotator"], 0) + 1
    visible = access.pair_filter()
    if visible is not None:
        fast = [row for row in fast if row["annotator"] == access.name
                or visible(row["query_id"], row["chunk_id"])]
    return {
        "fast_label_counts": counts,
        "fast_labels": fast,
        "grade_drift": grade_drift(project),
        "self_agreement": self_agreement(project),
        "drift_rule": drift_rule(),
    }
