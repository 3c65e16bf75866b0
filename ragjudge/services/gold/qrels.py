"""A project's gold qrels: adjudications first, then the rule over the current labels."""

from __future__ import annotations

from typing import TYPE_CHECKING
import numpy as np
from sqlalchemy import select
from sqlalchemy.engine import Connection
from ragjudge.errors import UsageError
from ragjudge.store.schema import Annotator, Label
from ragjudge.services.events.labels import adjudications, current_labels, llm_annotators, read_labels
from ragjudge.services.gold.rules import GoldPolicy, aggregate, check_rule, coded_gold, gold_labels, gold_policy


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


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


def _byte_order(q: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The permutation sorting pairs of ``as_ids`` arrays by (query, chunk) bytes."""
    from ragjudge.metrics._keys import words

    keys = [*words(c).T[::-1], *words(q).T[::-1]]
    return np.lexsort(keys)


def gold_qrel_arrays(project: Project, rule: str | None = None, *,
                     include_llm: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The gold qrels of a project as arrays ``(query ids, chunk ids, grades)`` (ids as
    ``as_ids`` arrays), sorted by query and chunk: the judgments of :func:`gold_qrels`,
    computed from the labels read in bulk."""
    from ragjudge.metrics._keys import as_ids, lookup, widen

    rule = check_rule(rule or project.rule)
    with project.connect() as connection:
        annotator = rule.split(":", 1)[1] if rule.startswith("annotator:") else None
        if annotator is not None:
            _check_annotator_known(connection, annotator)
        labels = read_labels(connection, annotator=annotator)
        if annotator is None and not include_llm:
            labels = labels.without(llm_annotators(connection))
        decided = adjudications(connection)
        policy = gold_policy(connection, project.scale.min)
    if policy.complete and policy.applies(rule):
        # the implied grades of a complete reference are rows of their own: the label arrays
        merged = {(q, c): g for q, c, g in aggregate(gold_labels(labels.arrays(), policy, rule), rule)}
        merged.update(decided)
        triples = sorted((q, c, g) for (q, c), g in merged.items())
        if not triples:
            return as_ids([]), as_ids([]), np.zeros(0, dtype=np.int64)
        tq, tc, tg = zip(*triples)
        return as_ids(tq), as_ids(tc), np.array(tg, dtype=np.int64)
    pairs, grades = coded_gold(labels.grade_rows(), policy, rule)
    q = labels.queries[labels.pair_query[pairs]]
    c = labels.chunks[labels.pair_chunk[pairs]]
    if not decided:
        return q, c, grades
    dq = as_ids([k[0] for k in decided])
    dc = as_ids([k[1] for k in decided])
    dg = np.array(list(decided.values()), dtype=np.int64)
    # the gold pairs an adjudication decides give way to it
    qi, ci = lookup(labels.queries, dq), lookup(labels.chunks, dc)
    known = (qi >= 0) & (ci >= 0)
    pair_key = labels.pair_query[pairs] * max(len(labels.chunks), 1) + labels.pair_chunk[pairs]
    decided_key = qi[known] * max(len(labels.chunks), 1) + ci[known]
    keep = ~np.isin(pair_key, decided_key)
    qw = max(q.dtype.itemsize, dq.dtype.itemsize)
    cw = max(c.dtype.itemsize, dc.dtype.itemsize)
    q = np.concatenate([widen(q[keep], qw), widen(dq, qw)])
    c = np.concatenate([widen(c[keep], cw), widen(dc, cw)])
    g = np.concatenate([grades[keep], dg])
    order = _byte_order(q, c)
    return q[order], c[order], g[order]


def _check_annotator_known(connection: Connection, name: str) -> None:
    """``--rule annotator:NAME`` with a name the project does not know is a typo, not 0 qrels."""
    known = sorted(set(connection.execute(select(Annotator.name)).scalars())
                   | set(connection.execute(select(Label.annotator).distinct()).scalars()))
    if name not in known:
        raise UsageError(
            f"--rule 'annotator:{name}': the project has no annotator named {name!r} "
            f"(annotators: {', '.join(known) or 'none yet'})."
        )


def gold_qrels(project: Project, rule: str | None = None, *,
               include_llm: bool = False) -> list[tuple[str, str, int]]:
    """The gold qrels of a project: adjudication first, else ``rule`` (default: the project's).
    LLM annotators' grades count only under ``annotator:NAME`` or with ``include_llm``.
    Sorted by query and chunk (:func:`gold_qrel_arrays`)."""
    from ragjudge.metrics._keys import decode

    q, c, g = gold_qrel_arrays(project, rule, include_llm=include_llm)
    return list(zip(decode(q), decode(c), g.tolist()))
