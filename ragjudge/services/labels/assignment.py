"""Assignment: splitting the judging pool among annotators, with a blind overlap.

A chosen share of the pool's pairs (``overlap``) goes to ``judges_per_overlap`` annotators each,
who judge it without seeing one another's labels; that overlap is what agreement is measured on.
Every other pair goes to one annotator. Each pair goes to the annotators with the least work so
far (ties broken by a seeded rotation), so workloads differ by at most one pair.

Assignments are stored in ``assignments``. Running ``assign`` again keeps existing assignments
and distributes only pairs not yet assigned (new runs, deeper pools), unless ``replace``.

With a ``sample`` size, only a random sample of each query's pool is assigned: the sample is
drawn and kept in the same transaction as the assignment (:mod:`ragjudge.services.labels.sampling`),
and the overlap and workload rules above apply to the drawn pairs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from sqlalchemy import and_, delete, exists, func, insert, select
from ragjudge.errors import UsageError
from ragjudge.services.events.annotators import check_annotator
from ragjudge.services.gold.pool import DEFAULT_DEPTH, pool_select
from ragjudge.services.runs.head import ensure_rows
from ragjudge.services.access.rights import Access
from ragjudge.services.labels import sampling
from ragjudge.services.labels.progress import assignment_progress  # noqa: F401 - re-exported
from ragjudge.store.annotators import ensure_annotators
from ragjudge.store.schema import Assignment, Run, utcnow


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


@dataclass(frozen=True)
class AssignmentPlan:
    """Pairs per annotator: ``{annotator: [(query_id, chunk_id, overlap), ...]}``; with
    ``assign(sample=...)`` the sample drawn (a :class:`~ragjudge.services.labels.sampling.StoredSample`)."""

    pairs: dict[str, list[tuple[str, str, bool]]]
    sample: Any = None

    def workloads(self) -> dict[str, int]:
        return {name: len(items) for name, items in self.pairs.items()}

    def overlap_pairs(self) -> set[tuple[str, str]]:
        return {(q, c) for items in self.pairs.values() for q, c, o in items if o}


def plan_assignment(
    pairs: Sequence[tuple[str, str]],
    annotators: Sequence[str],
    *,
    overlap: float = 0.2,
    judges_per_overlap: int = 2,
    seed: int = 0,
    loads: dict[str, int] | None = None,
) -> AssignmentPlan:
    """Split ``pairs`` among ``annotators``: ``round(overlap · len(pairs))`` of them, drawn at
    random (``seed``), to ``judges_per_overlap`` distinct annotators each, the rest to one.

    ``loads`` is the work each annotator already has; each pair goes to the least loaded.
    """
    names = _check_names(annotators)
    if not 0.0 <= overlap <= 1.0:
        raise UsageError(f"--overlap {overlap}: give a share between 0 and 1 (0.2 = 20 % of pairs).")
    if judges_per_overlap < 2:
        raise UsageError(f"--judges-per-overlap {judges_per_overlap}: overlap pairs need 2 or more judges.")
    # one annotator alone has nobody to overlap with: everything is theirs
    if overlap > 0 and len(names) >= 2 and judges_per_overlap > len(names):
        raise UsageError(
            f"--judges-per-overlap {judges_per_overlap} needs at least that many annotators; "
            f"{len(names)} given ({', '.join(names)})."
        )
    rng = random.Random(seed)
    order = sorted(set(pairs))
    rng.shuffle(order)
    n_overlap = int(round(overlap * len(order))) if len(names) >= 2 else 0
    load = {name: (loads or {}).get(name, 0) for name in names}
    rotation = {name: i for i, name in enumerate(rng.sample(names, len(names)))}
    out: dict[str, list[tuple[str, str, bool]]] = {name: [] for name in names}

    def least_loaded(k: int) -> list[str]:
        chosen = sorted(names, key=lambda n: (load[n], rotation[n]))[:k]
        for name in chosen:
            load[name] += 1
            # the rotation moves the just-chosen annotator to the back among equals
            rotation[name] += len(names)
        return chosen

    for i, (query_id, chunk_id) in enumerate(order):
        is_overlap = i < n_overlap
        for name in least_loaded(judges_per_overlap if is_overlap else 1):
            out[name].append((query_id, chunk_id, is_overlap))
    for items in out.values():
        items.sort()
    return AssignmentPlan(out)


def _check_names(annotators: Sequence[str]) -> list[str]:
    names = [check_annotator(name.strip()) for name in annotators if name.strip()]
    if not names:
        raise UsageError("--annotators: name at least one annotator, e.g. --annotators ann,bob,cy.")
    if len(set(names)) != len(names):
        raise UsageError(f"--annotators names someone twice: {', '.join(names)}.")
    return names


def assign(
    project: Project,
    annotators: Sequence[str],
    *,
    overlap: float = 0.2,
    judges_per_overlap: int = 2,
    depth: int = DEFAULT_DEPTH,
    runs: Sequence[str] | None = None,
    seed: int = 0,
    replace: bool = False,
    access: Access,
    progress: Callable[..., None] | None = None,
    sample: int | None = None,
    strategy: str = "uniform",
) -> AssignmentPlan:
    """Plan and store the assignment of the pool (top ``depth`` of ``runs``, default all runs)
    in one transaction. Returns the pairs newly assigned. Only who may lead (``access``)
    assigns. ``progress``: of writing the runs' deeper ranks, when the pool
    goes deeper than their rows (:func:`ragjudge.services.runs.head.ensure_rows`).

    ``sample``: draw that many pairs of each query's pool (``strategy`` uniform or stratified,
    ``seed``), keep the sample as the project's current one and assign only its drawn pairs."""
    names = _check_names(annotators)
    access.require_lead("assign pairs")
    if depth < 1:
        raise UsageError(f"--depth {depth}: the pool depth is at least 1.")
    if sample is not None:
        sampling.check_sample(sample, strategy)
    with project.connect() as connection:
        if runs:
            known = set(connection.execute(select(Run.name)).scalars())
            unknown = [r for r in runs if r not in known]
            if unknown:
                raise UsageError(
                    f"--runs: no run named {', '.join(unknown)} in this project "
                    f"(runs: {', '.join(sorted(known)) or 'none'})."
                )
    ensure_rows(project, depth, list(runs) if runs else None, progress)
    pooled, drawn = None, None
    with project.connect() as connection:
        if sample is None:
            pool = [tuple(row) for row in connection.execute(pool_select(depth, list(runs) if runs else None))]
        else:
            pooled = sampling.pooled_pairs(connection, depth, runs)
            pool = list(zip(pooled.query_ids, pooled.chunk_ids))
            if pool:
                drawn = sampling.draw(pooled, sample, strategy, seed)
                pool = [pair for pair, d in zip(pool, drawn.drawn.tolist()) if d]
        if not pool:
            raise UsageError("the pool is empty: import a run first (ragjudge import run FILE).")
        taken: set[tuple[str, str]] = set()
        loads: dict[str, int] = {}
        if not replace:
            taken = {(r.query_id, r.chunk_id) for r in connection.execute(
                select(Assignment.query_id, Assignment.chunk_id).distinct())}
            loads = dict(connection.execute(
                select(Assignment.annotator, func.count()).group_by(Assignment.annotator)).all())
    todo = [pair for pair in pool if pair not in taken]
    plan = plan_assignment(todo, names, overlap=overlap, judges_per_overlap=judges_per_overlap,
                           seed=seed, loads=loads)

    def store(session) -> sampling.StoredSample | None:  # noqa: ANN001
        if replace:
            session.execute(delete(Assignment))
        kept = None
        if pooled is not None and drawn is not None and sample is not None:
            kept = sampling.store_sample(session, pooled, drawn, strategy=strategy, size=sample,
                                         seed=seed, depth=depth, runs=runs)
        ensure_annotators(session.connection(), names)
        now = utcnow()
        rows = [{"annotator": name, "query_id": q, "chunk_id": c, "overlap": o, "created_at": now}
                for name, items in plan.pairs.items() for q, c, o in items]
        if rows:  # one executemany: objects per row kept the write lock for seconds per 100,000
            session.execute(insert(Assignment), rows)
        return kept

    kept = project.write(store)
    return plan if kept is None else AssignmentPlan(plan.pairs, kept)


def has_assignment(project: Project, annotator: str) -> bool:
    """True when ``annotator`` has an assignment (the judging queue then follows it)."""
    with project.connect() as connection:
        return bool(connection.scalar(
            select(exists().where(Assignment.annotator == annotator))))


def assignment_clause(annotator: str, query_col, chunk_col):  # noqa: ANN001, ANN201
    """A SQL condition for the judging queue: the pair (``query_col``, ``chunk_col``) is assigned
    to ``annotator``. Add it to the pool select when :func:`has_assignment` is true."""
    return exists().where(
        and_(Assignment.annotator == annotator, Assignment.query_id == query_col,
             Assignment.chunk_id == chunk_col)
    )


def assigned_pairs(project: Project, annotator: str) -> set[tuple[str, str]] | None:
    """The pairs assigned to ``annotator``, or None when they have no assignment (no restriction)."""
    with project.connect() as connection:
        rows = connection.execute(
            select(Assignment.query_id, Assignment.chunk_id).where(Assignment.annotator == annotator)
        ).all()
    return {(r.query_id, r.chunk_id) for r in rows} or None


