"""Gold qrels: one grade per (query, chunk) pair from the annotators' current labels.

A pair's gold grade is its newest adjudication if any, else the aggregate of every annotator's
current grade under a rule (ragjudge/ARCHITECTURE.md):

- ``median`` (default) — the lower median: with grades [1, 2] it is 1;
- ``majority`` — the most frequent grade, ties going to the lower grade (a conservative choice);
- ``mean`` — the arithmetic mean rounded half up to a whole grade;
- ``min`` / ``max``;
- ``annotator:NAME`` — that annotator's grades only (adjudications still come first);
- ``adjudicated`` — adjudicated pairs only.

A *reference* annotator (a collection's official qrels, ``ragjudge import qrels --reference``)
is not one more opinion: on the pairs it graded its grade is the gold (unless adjudicated) and
the rule decides only the other pairs (:func:`gold_labels`). A *complete* reference declares
every pair of its queries that it does not list not relevant, as trec_eval reads such qrels:
those pairs count as judged at the bottom of the scale (:func:`implied_labels`,
:func:`complete_runs`) without a row being written for them.

The current labels are read in bulk (:func:`read_labels`: on SQLite one pass over the label
events, each column joined into one string by the database; ids coded once, no Python object
per row) and the gold grade of every pair is computed at once from those codes
(:func:`coded_gold`, :func:`aggregate_pairs`); :func:`aggregate` and :func:`gold_labels` are the
same rules pair by pair, on :class:`LabelArrays`, for the few pairs a label event touches.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING
import numpy as np
from sqlalchemy import select
from sqlalchemy.engine import Connection
from ragjudge.errors import UsageError
from ragjudge.models import AGGREGATION_RULES
from ragjudge.store.schema import Annotator
from ragjudge.services.events.labels import GradeRows, LabelArrays


if TYPE_CHECKING:
    from ragjudge.metrics.data import Run


RULES = (*AGGREGATION_RULES, "annotator:NAME", "adjudicated")


@dataclass(frozen=True)
class GoldPolicy:
    """Which annotators' grades decide the gold before the rule: the reference annotators, and
    those of them that are complete (an unlisted pair of their queries is not relevant)."""

    reference: frozenset[str] = frozenset()
    complete: frozenset[str] = frozenset()
    lowest: int = 0
    """the bottom of the scale: the grade of a pair a complete reference does not list"""

    def applies(self, rule: str) -> bool:
        """The reference decides under the aggregation rules; ``annotator:NAME`` and
        ``adjudicated`` ask for something else."""
        return bool(self.reference) and rule in AGGREGATION_RULES

    def completes(self, rule: str) -> bool:
        """Whether unlisted pairs of a complete reference's queries count as judged under
        ``rule`` (the aggregation rules, and the complete reference's own labels)."""
        if not self.complete:
            return False
        return rule in AGGREGATION_RULES or (
            rule.startswith("annotator:") and rule.split(":", 1)[1] in self.complete)

    def complete_queries(self, labels: LabelArrays, rule: str | None = None) -> set[str]:
        """The queries a complete reference has graded (its world is closed there); under
        ``annotator:NAME``, those of that reference only."""
        if len(labels) == 0 or (rule is not None and not self.completes(rule)):
            return set()
        names = self.complete
        if rule is not None and rule.startswith("annotator:"):
            names = frozenset([rule.split(":", 1)[1]])
        mine = np.isin(labels.annotators, list(names))
        return set(labels.query_ids[mine].tolist())


def gold_policy(connection: Connection, lowest: int) -> GoldPolicy:
    """The project's reference annotators (``annotators.reference``) as a :class:`GoldPolicy`."""
    rows = connection.execute(
        select(Annotator.name, Annotator.complete).where(Annotator.reference.is_(True))).all()
    return GoldPolicy(frozenset(n for n, _ in rows), frozenset(n for n, c in rows if c), int(lowest))


def implied_labels(labels: LabelArrays, policy: GoldPolicy) -> LabelArrays:
    """``labels`` and, for each complete reference, its grade ``policy.lowest`` on every pair
    of its queries that another annotator graded and it does not list: those pairs are judged
    not relevant by the reference (for the gold and for agreement). Rows stay grouped by pair."""
    if not policy.complete or len(labels) == 0:
        return labels
    q, c, a = labels.query_ids, labels.chunk_ids, labels.annotators
    extra_q: list[str] = []
    extra_c: list[str] = []
    extra_a: list[str] = []
    for name in sorted(policy.complete):
        mine = a == name
        if not mine.any():
            continue
        queries = set(q[mine].tolist())
        listed = set(zip(q[mine].tolist(), c[mine].tolist()))
        in_scope = np.fromiter((x in queries for x in q.tolist()), dtype=bool, count=len(q))
        missing = sorted({p for p in zip(q[in_scope].tolist(), c[in_scope].tolist())} - listed)
        extra_q += [p[0] for p in missing]
        extra_c += [p[1] for p in missing]
        extra_a += [name] * len(missing)
    if not extra_q:
        return labels
    q = np.concatenate([q, np.array(extra_q, dtype=object)])
    c = np.concatenate([c, np.array(extra_c, dtype=object)])
    a = np.concatenate([a, np.array(extra_a, dtype=object)])
    g = np.concatenate([labels.grades, np.full(len(extra_q), policy.lowest, dtype=np.int64)])
    order = np.lexsort((a.astype(str), c.astype(str), q.astype(str)))
    return LabelArrays(q[order], c[order], a[order], g[order])


def gold_labels(labels: LabelArrays, policy: GoldPolicy | None, rule: str) -> LabelArrays:
    """The labels the gold rule aggregates (the one place that decides whose grades count):
    on a pair a reference annotator graded (a complete one: any pair of its queries), only the
    reference's grades; elsewhere everyone's. ``labels`` are grouped by pair."""
    if policy is None or not policy.applies(rule) or len(labels) == 0:
        return labels
    labels = implied_labels(labels, policy)
    q, c, a = labels.query_ids, labels.chunk_ids, labels.annotators
    is_reference = np.isin(a, list(policy.reference))
    if not is_reference.any():
        return labels
    new = np.ones(len(q), dtype=bool)
    new[1:] = (q[1:] != q[:-1]) | (c[1:] != c[:-1])
    pair = np.cumsum(new) - 1
    has_reference = np.bincount(pair, weights=is_reference) > 0
    keep = is_reference | ~has_reference[pair]
    return LabelArrays(q[keep], c[keep], a[keep], labels.grades[keep])


def complete_runs(q: np.ndarray, c: np.ndarray, g: np.ndarray, queries: set[str],
                  runs: Iterable[Run], lowest: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Judgments (query ids, chunk ids, grades) and, on each of ``queries`` (a complete
    reference's), grade ``lowest`` for every chunk a run ranks that has none: a closed world
    for Judged@k, bpref and pool coverage, made for the runs at hand instead of stored."""
    if not queries:
        return q, c, g
    judged = {p for p in zip(q.tolist(), c.tolist()) if p[0] in queries}
    extra: dict[tuple[str, str], None] = {}
    for run in runs:
        for qid, chunks in ranked_chunks(run, queries).items():
            for cid in chunks:
                if (qid, cid) not in judged:
                    extra.setdefault((qid, cid))
    if not extra:
        return q, c, g
    eq, ec = zip(*extra)
    return (np.concatenate([q, np.array(eq, dtype=object)]),
            np.concatenate([c, np.array(ec, dtype=object)]),
            np.concatenate([np.asarray(g, dtype=np.int64), np.full(len(eq), lowest, dtype=np.int64)]))


def ranked_chunks(run: Run, queries: set[str]) -> dict[str, list[str]]:
    """The chunks ``run`` ranks for each of ``queries`` (that it answers), in rank order."""
    from ragjudge.metrics._keys import decode

    out: dict[str, list[str]] = {}
    names = run.query_ids
    for i, qid in enumerate(names):
        if qid in queries:
            out[qid] = decode(run.chunk_ids[run.offsets[i]:run.offsets[i + 1]])
    return out


def check_rule(rule: str) -> str:
    if rule in AGGREGATION_RULES or rule == "adjudicated":
        return rule
    if rule.startswith("annotator:") and len(rule) > len("annotator:"):
        return rule
    raise UsageError(
        f"--rule '{rule}' is not an aggregation rule. Use one of: median, majority, mean, min, "
        "max, adjudicated, or annotator:NAME."
    )


def aggregate_pairs(pair: np.ndarray, grade: np.ndarray, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """The rule's grade of each pair from its annotators' grades, for every pair at once:
    ``(pairs, grades)``, the pairs ascending. Rows must be grouped by pair.

    Rules (as :func:`aggregate`): the lower median ``g[(n - 1) // 2]`` of the sorted grades;
    ``min``; ``max``; ``mean`` rounded half up ``floor(mean + 0.5)``; ``majority`` the most
    frequent grade, ties to the lower."""
    if not len(grade):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    new = np.ones(len(grade), dtype=bool)
    new[1:] = pair[1:] != pair[:-1]
    gid = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    counts = np.diff(np.r_[starts, len(grade)])
    if rule == "mean":
        out = np.floor(np.bincount(gid, weights=grade) / counts + 0.5).astype(np.int64)
    elif rule == "majority":
        low = int(grade.min())
        span = int(grade.max()) - low + 1
        keys, n = np.unique(gid * span + (grade - low), return_counts=True)
        group, value = keys // span, keys % span + low
        first = np.lexsort((value, -n, group))
        take = first[np.r_[True, group[first][1:] != group[first][:-1]]]
        out = value[take]
    else:
        low = int(grade.min())
        span = int(grade.max()) - low + 1
        # each pair's grades in order: (pair, grade) in one integer, sorted
        ordered = np.sort(gid * span + (grade - low)) - gid * span + low
        if rule == "median":
            out = ordered[starts + (counts - 1) // 2]
        elif rule == "min":
            out = ordered[starts]
        else:  # max
            out = ordered[starts + counts - 1]
    return pair[starts], np.asarray(out, dtype=np.int64)


def coded_gold_labels(rows: GradeRows, policy: GoldPolicy | None,
                      rule: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`gold_labels` on coded rows: the rows ``(pair, annotator, grade)`` the rule
    aggregates, grouped by pair. A complete reference's implied grades (:func:`implied_labels`)
    are rows added on the pairs of its queries others graded and it does not list."""
    pair, who, grade = rows.pair, rows.annotator, rows.grade
    if policy is None or not policy.applies(rule) or not len(grade):
        return pair, who, grade
    n_pairs = len(rows.pair_query)
    query = rows.pair_query
    n_queries = int(query.max()) + 1 if n_pairs else 0
    parts = [(pair, who, grade)]
    for name in sorted(policy.complete):
        code = rows.code_of(name)
        mine = who == code
        if code < 0 or not mine.any():
            continue
        listed = np.zeros(n_pairs, dtype=bool)
        listed[pair[mine]] = True
        scope = np.zeros(n_queries, dtype=bool)
        scope[query[pair[mine]]] = True
        missing = np.unique(pair[scope[query[pair]] & ~listed[pair]])
        if len(missing):
            parts.append((missing, np.full(len(missing), code, dtype=np.int64),
                          np.full(len(missing), policy.lowest, dtype=np.int64)))
    if len(parts) > 1:
        pair, who, grade = (np.concatenate([p[i] for p in parts]) for i in range(3))
        order = np.lexsort((who, pair))
        pair, who, grade = pair[order], who[order], grade[order]
    codes = [rows.code_of(n) for n in policy.reference]
    is_reference = np.isin(who, [c for c in codes if c >= 0])
    if not is_reference.any():
        return pair, who, grade
    has_reference = np.zeros(n_pairs, dtype=bool)
    has_reference[pair[is_reference]] = True
    keep = is_reference | ~has_reference[pair]
    return pair[keep], who[keep], grade[keep]


def coded_gold(rows: GradeRows, policy: GoldPolicy | None, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """``(pairs, grades)``: the gold grade of every pair the rule grades (adjudications not
    included), the same grades as :func:`aggregate` over :func:`gold_labels`."""
    rule = check_rule(rule)
    if rule == "adjudicated":
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    pair, who, grade = coded_gold_labels(rows, policy, rule)
    if rule.startswith("annotator:"):
        keep = who == rows.code_of(rule.split(":", 1)[1])
        return pair[keep], grade[keep]
    return aggregate_pairs(pair, grade, rule)


def aggregate(labels: LabelArrays, rule: str) -> list[tuple[str, str, int]]:
    """Aggregate several annotators' grades per pair under ``rule`` (adjudication not included)."""
    rule = check_rule(rule)
    if rule.startswith("annotator:"):
        keep = labels.annotators == rule.split(":", 1)[1]
        return [(q, c, int(g)) for q, c, g in zip(labels.query_ids[keep], labels.chunk_ids[keep],
                                                  labels.grades[keep])]
    if rule == "adjudicated" or len(labels) == 0:
        return []
    # Rows are sorted by pair; find each pair's run of rows.
    keys = np.char.add(np.char.add(labels.query_ids.astype(str), "\x00"), labels.chunk_ids.astype(str))
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    ends = np.r_[starts[1:], len(keys)]
    out = []
    for start, end in zip(starts, ends):
        grades = np.sort(labels.grades[start:end])
        out.append((labels.query_ids[start], labels.chunk_ids[start], _combine(grades, rule)))
    return out


def _combine(grades: np.ndarray, rule: str) -> int:
    if rule == "median":
        return int(grades[(len(grades) - 1) // 2])
    if rule == "min":
        return int(grades[0])
    if rule == "max":
        return int(grades[-1])
    if rule == "mean":
        return int(np.floor(grades.mean() + 0.5))
    values, counts = np.unique(grades, return_counts=True)
    return int(values[np.argmax(counts)])  # argmax takes the first, i.e. lowest, tied grade
