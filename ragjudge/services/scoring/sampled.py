"""The sampled estimators on a project: its current pool sample, and infAP's qrels from it.

``statAP``, ``xinfAP``, ``infNDCG`` and ``infP@k`` (:mod:`ragjudge.metrics.sampled`) read the pool
and its sample from ``extras["sample"]``, a :class:`~ragjudge.metrics.sampled.PoolSample`, and the
grades from the qrels. A project scored against its gold gives them its current sample
(:func:`project_sample`: the newest one ``assign --sample`` drew, with the inclusion
probabilities of its design); a sampled judgment file (``eval --prels``) brings its own.

``infAP`` reads trec_eval's convention from the qrels alone: every listed pair is in the pool, a
negative grade marks a pooled pair that was not sampled, an unlisted chunk was never pooled. A
project's gold lists its judged pairs only, so on a project with a sample ``infAP`` is computed
against the sample's qrels instead (:func:`sample_qrels`, :func:`infap_on_sample`): every pair
of the sample's pool, with its gold grade when it was drawn and is judged, -1 otherwise. A
drawn pair nobody has judged yet is then "not sampled", as the other estimators count it, and a
pair judged outside the sample (not drawn, or outside its pool) is no part of the estimate.
These are the qrels :func:`ragjudge.metrics.prels.read_prels` makes of the sample written as
``sample_eval.pl``'s strata file, so the project scores as ``eval --prels`` scores that file.

A query the evaluation covers and the sample does not has no estimate (NaN, left out of the
mean and counted), for ``infAP`` as for the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics import _keys
from ragjudge.metrics.data import Qrels, Run
from ragjudge.metrics.evaluate import EvalResult, evaluate
from ragjudge.metrics.registry import Measure
from ragjudge.metrics.sampled import SAMPLE_KEY, PoolSample

if TYPE_CHECKING:
    from ragjudge.services.labels.sampling import StoredSample
    from ragjudge.services.project.database import Project

INFAP = "infAP"

PRELS_MEASURES = {"strata": ["xinfAP", "infNDCG", "infP@10", "statAP"],
                  "probability": ["statAP"]}
"""``eval --prels`` without ``-m``: what each form's script reports (``sample_eval.pl``: its
infAP, which is xinfAP here, infNDCG and iP; ``statAP_MQ_eval``: statAP), and statAP, which the
strata's sampling rates serve as inclusion probabilities."""


def estimates_from_sample(measures: Sequence[Measure]) -> bool:
    """Whether any of ``measures`` is estimated from a sample of the pool."""
    return any(SAMPLE_KEY in m.needs or m.definition.name == INFAP for m in measures)


def project_sample(project: Project | None, measures: Sequence[Measure],
                   rule: str | None) -> StoredSample | None:
    """The project's current sample, when ``measures`` estimate from one and the qrels are the
    project's gold (``rule`` given; qrels from a file have none); None otherwise."""
    if project is None or rule is None or not estimates_from_sample(measures):
        return None
    from ragjudge.services.labels.sampling import current_sample  # the database layer

    return current_sample(project)


def sample_summary(found: StoredSample, qrels: Qrels) -> dict[str, Any]:
    """What the estimates read: the sample's number and design, its pooled and drawn pairs,
    and how many of the drawn pairs the gold grades (``"text"``: the same in words)."""
    judged = int(np.count_nonzero(sample_qrels(qrels, found.pool).grades >= 0))
    drawn = int(np.count_nonzero(found.pool.drawn))
    return {"id": found.id, "strategy": found.strategy, "size": found.size,
            "depth": found.depth, "seed": found.seed, "pooled": len(found.pool), "drawn": drawn,
            "judged": judged,
            "text": f"estimates from {found.describe()}: {judged:,} of its {drawn:,} drawn pairs "
                    f"judged ({len(found.pool):,} pooled)"}


def missing_sample(measures: Sequence[Measure], project_gold: bool) -> UsageError:
    """The refusal of measures that need a sample when none was given: how to give one."""
    asked = list(dict.fromkeys(str(m) for m in measures if SAMPLE_KEY in m.needs))
    names = f"{', '.join(asked)} {'is' if len(asked) == 1 else 'are'} estimated"
    if project_gold:
        return UsageError(
            f"{names} from a judged sample of the pool, and this project has drawn "
            "none: draw one with 'ragjudge assign --annotators NAMES --sample N --strategy "
            "uniform|stratified', judge the drawn pairs and evaluate again; or score a sampled "
            "judgment file with --prels FILE --prels-form strata|probability.")
    return UsageError(
        f"{names} from a judged sample of the pool: give a sampled judgment file "
        "with --prels FILE --prels-form strata|probability instead of --qrels, or draw a "
        "sample in a project with 'ragjudge assign --sample N' and evaluate its gold labels "
        "(--db without --qrels).")


def sample_qrels(qrels: Qrels, sample: PoolSample) -> Qrels:
    """trec_eval's qrels of a sample: each pooled pair of ``sample``, graded as ``qrels`` grade
    it when it was drawn and judged (grade >= 0), -1 (pooled, not sampled) otherwise. Made
    once per qrels and sample (every run of an evaluation reads the same)."""
    kept = qrels.__dict__.get("_sample_qrels")
    if kept is not None and kept[0] is sample:
        return kept[1]
    grade = np.full(len(sample), -1, dtype=np.int64)
    row = _keys.lookup(qrels.query_id_bytes, sample.query_ids)
    known = np.flatnonzero((row >= 0) & sample.drawn)
    if len(known) and len(qrels):
        hashes = _keys.id_hash(qrels.query_id_bytes)[row[known]]
        at = qrels.index.get(row[known], sample.chunk_ids[known], query_hash=hashes)
        hit = at >= 0
        grade[known[hit]] = np.maximum(qrels.grades[at[hit]], -1)
    made = Qrels(sample.query_ids, sample.chunk_ids, grade, top_grade=qrels.top_grade)
    qrels.__dict__["_sample_qrels"] = (sample, made)
    return made


def infap_on_sample(result: EvalResult, qrels: Qrels, run: Run, sample: PoolSample,
                    threshold: int) -> None:
    """Recompute ``result``'s infAP columns against :func:`sample_qrels` on the same queries;
    a query the sample does not cover is NaN there."""
    cols = [j for j, m in enumerate(result.measures) if m.definition.name == INFAP]
    if not cols or not result.query_ids:
        return
    found = evaluate(sample_qrels(qrels, sample), run, [result.measures[j] for j in cols],
                     threshold=threshold, queries=list(result.query_ids))
    at = {q: i for i, q in enumerate(found.query_ids)}
    rows = np.array([at.get(q, -1) for q in result.query_ids], dtype=np.int64)
    values = found.values[np.maximum(rows, 0)] if len(found.query_ids) else \
        np.full((len(rows), len(cols)), np.nan)
    result.values[:, cols] = np.where(rows[:, None] >= 0, values, np.nan)


NOT_IN_SAMPLE = "no pair of the query is in the pool sample"
NO_SAMPLED_RELEVANT = "no judged pair of the query's sample is relevant (nothing to estimate from)"


def sample_reasons(measure: Measure, query_ids: Sequence[str], sample: PoolSample) -> list[str | None]:
    """Why a sampled measure may be undefined on each query: the sample does not cover the
    query, or (statAP) none of its judged sampled pairs is relevant."""
    covered = set(_keys.decode(np.unique(sample.query_ids)))
    ratio = measure.definition.name.startswith("statAP")
    return [NOT_IN_SAMPLE if q not in covered else NO_SAMPLED_RELEVANT if ratio else None
            for q in query_ids]

