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
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import func, or_, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql import ClauseElement, ColumnElement, Subquery
from sqlalchemy.sql.compiler import SQLCompiler

from ragjudge.errors import UsageError
from ragjudge.models import AGGREGATION_RULES
from ragjudge.store.schema import Adjudication, Annotator, Label

if TYPE_CHECKING:
    from ragjudge.metrics.data import Run
    from ragjudge.services.project import Project

RULES = (*AGGREGATION_RULES, "annotator:NAME", "adjudicated")


@dataclass(frozen=True)
class LabelArrays:
    """Current labels as parallel arrays (one row per annotator and pair with a grade)."""

    query_ids: np.ndarray  # object array of str
    chunk_ids: np.ndarray
    annotators: np.ndarray
    grades: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.grades)


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


def closed_queries(project: Project, rule: str) -> tuple[GoldPolicy, set[str]]:
    """The project's gold policy and the queries where unlisted pairs count as judged under
    ``rule`` (a complete reference's)."""
    with project.connect() as connection:
        policy = gold_policy(connection, project.scale.min)
        if not policy.completes(rule):
            return policy, set()
        names = sorted(policy.complete)
        if rule.startswith("annotator:"):
            names = [rule.split(":", 1)[1]]
        queries: set[str] = set()
        for name in names:
            queries |= set(current_labels(connection, annotator=name).query_ids.tolist())
    return policy, queries


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


RECHECK = "recheck"
"""``labels.source`` of a blind re-check: it measures self-agreement and never replaces the
annotator's current label."""


def not_recheck() -> ColumnElement[bool]:
    """A clause for label events that are not blind re-checks (portable SQL: no ``IS NOT 'x'``)."""
    return or_(Label.source.is_(None), Label.source != RECHECK)


def newest_label_ids() -> Subquery:
    """A subquery of the newest non-recheck label event id per (annotator, query, chunk)."""
    return (
        select(func.max(Label.id).label("id"))
        .where(not_recheck())
        .group_by(Label.annotator, Label.query_id, Label.chunk_id)
        .subquery()
    )


def current_labels(connection: Connection, *, annotator: str | None = None) -> LabelArrays:
    """Every annotator's current grade per pair (pairs whose newest event has no grade are left
    out), straight from SQL into arrays."""
    newest = newest_label_ids()
    stmt = (
        select(Label.query_id, Label.chunk_id, Label.annotator, Label.grade)
        .join(newest, Label.id == newest.c.id)
        .where(Label.grade.is_not(None))
        .order_by(Label.query_id, Label.chunk_id, Label.annotator)
    )
    if annotator is not None:
        stmt = stmt.where(Label.annotator == annotator)
    return _to_arrays(raw_rows(connection, stmt))


def raw_rows(connection: Connection, stmt: ClauseElement) -> list[tuple]:
    """All rows of a Core select as plain tuples from the database driver's own cursor: the
    same SQL and parameters as ``connection.execute(stmt).all()``, without building a
    SQLAlchemy row per result row (a third of the time on a million labels)."""
    compiled = stmt.compile(dialect=connection.dialect,
                            compile_kwargs={"render_postcompile": True})
    assert isinstance(compiled, SQLCompiler)  # a select compiles with the dialect's SQL compiler
    params: tuple[Any, ...] | dict[str, Any]
    if compiled.positional:
        params = tuple(compiled.params[name] for name in compiled.positiontup or ())
    else:
        params = dict(compiled.params)
    driver = connection.connection.driver_connection
    assert driver is not None  # an open connection has its driver's connection
    cursor = driver.cursor()
    try:
        cursor.execute(str(compiled), params)
        return cursor.fetchall()
    finally:
        cursor.close()


def _to_arrays(rows) -> LabelArrays:  # noqa: ANN001
    if not rows:
        empty = np.array([], dtype=object)
        return LabelArrays(empty, empty.copy(), empty.copy(), np.array([], dtype=np.int64))
    q, c, a, g = zip(*rows)
    return LabelArrays(
        np.array(q, dtype=object), np.array(c, dtype=object), np.array(a, dtype=object),
        np.array(g, dtype=np.int64),
    )


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


def adjudications(connection: Connection) -> dict[tuple[str, str], int]:
    """The newest adjudicated grade per pair."""
    newest = select(func.max(Adjudication.id).label("id")).group_by(
        Adjudication.query_id, Adjudication.chunk_id).subquery()
    rows = connection.execute(
        select(Adjudication.query_id, Adjudication.chunk_id, Adjudication.grade)
        .join(newest, Adjudication.id == newest.c.id)
    ).all()
    return {(q, c): int(g) for q, c, g in rows}


def _check_annotator_known(connection: Connection, name: str) -> None:
    """``--rule annotator:NAME`` with a name the project does not know is a typo, not 0 qrels."""
    known = sorted(set(connection.execute(select(Annotator.name)).scalars())
                   | set(connection.execute(select(Label.annotator).distinct()).scalars()))
    if name not in known:
        raise UsageError(
            f"--rule 'annotator:{name}': the project has no annotator named {name!r} "
            f"(annotators: {', '.join(known) or 'none yet'})."
        )


def llm_annotators(connection: Connection) -> frozenset[str]:
    """The annotators of kind ``llm`` (their grades stay out of the gold unless asked)."""
    return frozenset(connection.execute(select(Annotator.name).where(Annotator.kind == "llm")).scalars())


def without(labels: LabelArrays, names: frozenset[str]) -> LabelArrays:
    """``labels`` less the rows of the annotators ``names``."""
    if not names or not len(labels):
        return labels
    keep = ~np.isin(labels.annotators, list(names))
    return LabelArrays(labels.query_ids[keep], labels.chunk_ids[keep], labels.annotators[keep],
                       labels.grades[keep])


def gold_qrels(project: Project, rule: str | None = None, *,
               include_llm: bool = False) -> list[tuple[str, str, int]]:
    """The gold qrels of a project: adjudication first, else ``rule`` (default: the project's).
    LLM annotators' grades count only under ``annotator:NAME`` or with ``include_llm``."""
    rule = check_rule(rule or project.rule)
    with project.connect() as connection:
        annotator = rule.split(":", 1)[1] if rule.startswith("annotator:") else None
        if annotator is not None:
            _check_annotator_known(connection, annotator)
        labels = current_labels(connection, annotator=annotator)
        if annotator is None and not include_llm:
            labels = without(labels, llm_annotators(connection))
        decided = adjudications(connection)
        policy = gold_policy(connection, project.scale.min)
    merged = {(q, c): g for q, c, g in aggregate(gold_labels(labels, policy, rule), rule)}
    merged.update(decided)
    return sorted((q, c, g) for (q, c), g in merged.items())
