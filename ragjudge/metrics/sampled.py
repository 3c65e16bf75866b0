"""Measures estimated from a judged random sample of each query's pool.

When a team judges only a sample of the pool, the number of relevant chunks and the measures
are estimated from the sample. Four estimators, each registered as a measure:

==============  =====================================================  ======================
measure         estimates                                              reads
==============  =====================================================  ======================
``infAP``       AP from a uniform sample (Yilmaz & Aslam, CIKM 2006)   the qrels only
``statAP``      AP from any sample with known inclusion probabilities  ``extras["sample"]``
                (Aslam, Pavlu & Yilmaz, SIGIR 2006; Pavlu 2008)
``statAP_var``  the variance of ``statAP`` for one query               ``extras["sample"]``
``xinfAP``      AP from a sample stratified by rank bands              ``extras["sample"]``
                (Yilmaz, Kanoulas & Aslam, SIGIR 2008)
``infNDCG``     nDCG from the same stratified sample                   ``extras["sample"]``
``infP@k``      P@k from the same stratified sample                    ``extras["sample"]``
==============  =====================================================  ======================

``infAP`` follows trec_eval's convention: every (query, chunk) pair listed in the qrels is in the
pool, a pair with a negative grade was pooled but not sampled, a pair not listed was never
pooled. The other estimators read the pool and its sample from ``extras["sample"]``, a
:class:`PoolSample`: each pooled pair of a query with its stratum, its inclusion probability
(the chance the sampling design drew it) and whether it was drawn. A pair counts as sampled when
it was drawn and the qrels grade it (grade >= 0); the grade comes from the qrels, so the same
sample serves the gold labels as they grow. A drawn pair nobody judged yet counts as not drawn.

:func:`draw_sample` draws such a sample (uniform per query, or stratified by rank bands with
higher rates at the top); :func:`ragjudge.metrics.prels.read_prels` reads TREC's sampled
judgment files into qrels and a sample.

A query of the evaluation with no pooled pair in the sample has no estimate (NaN, left out of
the mean and counted); ``statAP`` is also NaN where no sampled chunk is relevant, as the Million
Query track's script leaves such a query out of its mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ragjudge.errors import InputError, UsageError
from ragjudge.metrics import _keys
from ragjudge.metrics.registry import Measure, Param, measure
from ragjudge.safetext import quote

if TYPE_CHECKING:
    from ragjudge.metrics.context import EvalContext
    from ragjudge.metrics.data import Qrels

__all__ = ["PoolSample", "SAMPLE_KEY", "draw_sample", "RANK_BANDS", "SAMPLE_EVAL_DEPTH",
           "INFAP_EPSILON"]

#: the ``extras`` key the sampled estimators read
SAMPLE_KEY = "sample"
#: trec_eval's smoothing of the precision among judged chunks above a relevant one (infAP)
INFAP_EPSILON = 0.00001
#: sample_eval.pl reads at most this many ranks of a run (its ``maxResultSize``)
SAMPLE_EVAL_DEPTH = 1000
#: sample_eval.pl's smoothing of each stratum's precision: (rel + 1e-5) / (sampled + 3e-5)
_REL_EPS, _SAMPLED_EPS = 0.00001, 0.00003
#: the rank bands of :func:`draw_sample`'s stratified design: 1-10, 11-30, 31-100, 101-
RANK_BANDS = (10, 30, 100)

REL = {"rel": Param(int, None, doc="relevance threshold of this measure (grade >= rel)")}


# -- the sample ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PoolSample:
    """The pool of each query and the sample drawn from it, one entry per pooled pair.

    - ``query_ids``, ``chunk_ids``: the pair (any ids; kept as ``as_ids`` byte arrays);
    - ``inclusion``: float, the probability that the sampling design draws the pair (0 < p <= 1
      for a drawn pair; statAP weighs a sampled relevant chunk by 1/p);
    - ``stratum``: int, the stratum the pair was sampled from (xinfAP and infNDCG estimate each
      stratum from its own sampling rate); default one stratum;
    - ``drawn``: bool, the pair was drawn for judging; default every pair.

    A pair listed twice for one query, lengths that differ or a drawn pair whose probability
    is not in (0, 1] is an ``InputError``.
    """

    query_ids: Any
    chunk_ids: Any
    inclusion: Any
    stratum: Any = None
    drawn: Any = None

    def __post_init__(self) -> None:
        qids, cids = _keys.as_ids(self.query_ids), _keys.as_ids(self.chunk_ids)
        n = len(qids)
        prob = np.asarray(self.inclusion, dtype=np.float64).ravel()
        stratum = np.zeros(n, np.int64) if self.stratum is None else \
            np.asarray(self.stratum, dtype=np.int64).ravel()
        drawn = np.ones(n, bool) if self.drawn is None else np.asarray(self.drawn, bool).ravel()
        if not (len(cids) == len(prob) == len(stratum) == len(drawn) == n):
            raise InputError(f"a pool sample's columns differ in length ({n} query ids, "
                             f"{len(cids)} chunk ids, {len(prob)} probabilities, "
                             f"{len(stratum)} strata, {len(drawn)} drawn flags).")
        bad = np.flatnonzero(drawn & ~((prob > 0) & (prob <= 1)))
        if len(bad):
            i = int(bad[0])
            raise InputError(f"query {quote(_keys.decode(qids[i:i + 1])[0])}, chunk "
                             f"{quote(_keys.decode(cids[i:i + 1])[0])}: inclusion probability "
                             f"{quote(prob[i])} of a drawn pair is not in (0, 1].",
                             field="inclusion")
        unique, qidx = _keys.factorize(qids)
        dup = _keys.first_duplicate(_keys.pair_hash(_keys.id_hash(unique)[qidx], cids), qidx, cids)
        if dup is not None:
            j = dup[1]
            raise InputError(f"query {quote(_keys.decode(qids[j:j + 1])[0])} lists chunk "
                             f"{quote(_keys.decode(cids[j:j + 1])[0])} twice in its pool sample.")
        for name, value in (("query_ids", qids), ("chunk_ids", cids), ("inclusion", prob),
                            ("stratum", stratum), ("drawn", drawn)):
            object.__setattr__(self, name, value)

    def __len__(self) -> int:
        return len(self.query_ids)

    def __repr__(self) -> str:
        return (f"PoolSample({len(np.unique(self.query_ids))} queries, {len(self)} pooled "
                f"pairs, {int(np.count_nonzero(self.drawn))} drawn)")

    @classmethod
    def from_qrels(cls, qrels: Qrels) -> PoolSample:
        """trec_eval's convention as a sample: every pair the qrels list is pooled, one with a
        negative grade was not drawn; one stratum, each pair drawn with probability
        judged / listed of its query (a uniform sample)."""
        listed = np.bincount(qrels.qidx, minlength=qrels.n_queries).astype(np.float64)
        judged = np.bincount(qrels.qidx, weights=qrels.grades >= 0, minlength=qrels.n_queries)
        prob = (judged / np.maximum(listed, 1))[qrels.qidx]
        return cls(qrels.query_id_bytes[qrels.qidx], qrels.chunk_ids, prob,
                   drawn=qrels.grades >= 0)


@dataclass(frozen=True)
class _Aligned:
    """A sample's pairs of the evaluated queries, aligned with a context (one entry per pair):
    the evaluation row, the 0-based rank (-1 when the run does not rank the chunk), the judged
    grade (-1 when not sampled), the inclusion probability and the stratum group (one id per
    (row, stratum)) with its position among its row's strata."""

    row: np.ndarray
    col: np.ndarray
    grade: np.ndarray
    inclusion: np.ndarray
    group: np.ndarray
    local: np.ndarray
    n_groups: int
    group_row: np.ndarray

    @cached_property
    def sampled(self) -> np.ndarray:
        return self.grade >= 0


def _judged_grades(qrels: Qrels, qids: np.ndarray, cids: np.ndarray) -> np.ndarray:
    """The qrels grade of each pair, -1 when the qrels do not grade it (or grade it < 0)."""
    qrow = _keys.lookup(qrels.query_id_bytes, qids)
    grade = np.full(len(qids), -1, dtype=np.int64)
    known = np.flatnonzero(qrow >= 0)
    if len(known) and len(qrels):
        hash_of_query = _keys.id_hash(qrels.query_id_bytes)
        at = qrels.index.get(qrow[known], cids[known], query_hash=hash_of_query[qrow[known]])
        hit = at >= 0
        grade[known[hit]] = np.maximum(qrels.grades[at[hit]], -1)
    return grade


def _sample_positions(ctx: EvalContext, sample: PoolSample) -> tuple[np.ndarray, np.ndarray]:
    """Evaluation row (-1: not evaluated) and 0-based rank (-1: not ranked) of each pooled pair.

    The ranked chunks are looked up among the pooled pairs (a hash index of the sample), which
    costs less than indexing every ranked chunk when the pool is shallower than the run."""
    unique, qidx = _keys.factorize(sample.query_ids)
    row = _keys.lookup(ctx.query_id_bytes, unique)[qidx]
    col = np.full(len(sample), -1, dtype=np.int64)
    if ctx.depth and len(sample):
        hashes = _keys.id_hash(unique)
        index = _keys.PairIndex(qidx, sample.chunk_ids, hashes[qidx])
        rows, cols = np.nonzero(ctx.valid)
        srow = _keys.lookup(unique, ctx.query_id_bytes)[rows]
        keep = srow >= 0
        rows, cols, srow = rows[keep], cols[keep], srow[keep]
        at = index.get(srow, ctx.chunk_ids[rows, cols], query_hash=hashes[srow])
        col[at[at >= 0]] = cols[at >= 0]
    return row, col


def aligned_sample(ctx: EvalContext) -> _Aligned:
    """``ctx.extras["sample"]`` aligned with the context's rows and ranks (once per context)."""
    cache = ctx.__dict__.setdefault("_sample_aligned", {})
    if "value" in cache:
        return cache["value"]
    sample = ctx.extras[SAMPLE_KEY]
    if not isinstance(sample, PoolSample):
        raise UsageError(f"extras[{quote(SAMPLE_KEY)}] must be a PoolSample, not "
                         f"{type(sample).__name__}.")
    row, col = _sample_positions(ctx, sample)
    keep = np.flatnonzero(row >= 0)
    row, col = row[keep], col[keep]
    grade = _judged_grades(ctx.qrels, sample.query_ids[keep], sample.chunk_ids[keep])
    grade = np.where(sample.drawn[keep], grade, -1)
    stratum = sample.stratum[keep]
    levels, code = np.unique(stratum, return_inverse=True)
    cells, group = np.unique(row * len(levels) + code.ravel(), return_inverse=True)
    group = group.ravel()
    group_row = cells // max(len(levels), 1)
    first = np.searchsorted(group_row, group_row, side="left")
    local = (np.arange(len(cells)) - first)[group]
    value = _Aligned(row, col, grade, sample.inclusion[keep], group, local, len(cells), group_row)
    cache["value"] = value
    return value


def _has_pool(ctx: EvalContext, al: _Aligned) -> np.ndarray:
    return np.bincount(al.row, minlength=ctx.n_queries) > 0


# -- infAP -----------------------------------------------------------------------------------------


def _pooled_unjudged(ctx: EvalContext) -> np.ndarray:
    """(Q, D) bool: the chunk at that rank is listed in the qrels with a negative grade."""
    cache = ctx.__dict__.setdefault("_pooled_unjudged", {})
    if "value" not in cache:
        qrels = ctx.qrels
        out = np.zeros((ctx.n_queries, ctx.depth), dtype=bool)
        if ctx.depth and np.any(qrels.grades < 0):
            # the ranked chunks without a grade that the qrels list (with a negative grade)
            rows, cols = np.nonzero(ctx.valid & ~ctx.judged)
            qrow = _keys.lookup(qrels.query_id_bytes, ctx.query_id_bytes)[rows]
            keep = qrow >= 0
            rows, cols, qrow = rows[keep], cols[keep], qrow[keep]
            at = qrels.index.get(qrow, ctx.chunk_ids[rows, cols],
                                 query_hash=_keys.id_hash(qrels.query_id_bytes)[qrow])
            out[rows[at >= 0], cols[at >= 0]] = True
        cache["value"] = out
    return cache["value"]


@measure("infAP", full_depth=True, params=REL, aliases=("InfAP", "inf_AP"))
def inf_ap(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Inferred AP (Yilmaz & Aslam, "Estimating average precision with incomplete and
    imperfect judgments", CIKM 2006), exactly as trec_eval's ``infAP`` computes it.

    The pool is every pair the qrels list; a negative grade marks a pooled pair that was not
    sampled; a chunk not listed was never pooled. For the relevant chunk at rank k (0-based j =
    k - 1), with r relevant, n judged non-relevant and u pooled-unsampled chunks above it:

    ``E[prec@k] = 1/k + ((k-1)/k) * ((r + n + u)/(k-1)) * (r + eps)/(r + n + 2 eps)``

    (1 at rank 1; eps = 0.00001): the chunk itself, then the chunks above it, of which the
    unpooled ones count as non-relevant and the pooled ones as relevant in the proportion the
    judged ones are. ``infAP = (1/R) sum over relevant ranked chunks of E[prec@k]``, R the
    relevant chunks in the qrels (0 when R = 0). With every pooled pair judged it is AP.
    """
    rel = ctx.relevant(m.rel)
    nonrel = ctx.judged & ~rel
    unjudged = _pooled_unjudged(ctx)
    rows, cols = np.nonzero(rel)
    r = ctx.cum_relevant(m.rel)[rows, cols].astype(np.float64) - 1.0
    n = np.cumsum(nonrel, axis=1, dtype=np.int64)[rows, cols].astype(np.float64)
    u = np.cumsum(unjudged, axis=1, dtype=np.int64)[rows, cols].astype(np.float64)
    j = cols.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        term = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((r + n + u) / j) * (
            (r + INFAP_EPSILON) / (r + n + 2 * INFAP_EPSILON))
    term = np.where(cols == 0, 1.0, term)
    total = np.bincount(rows, weights=term, minlength=ctx.n_queries)
    n_rel = ctx.n_relevant(m.rel)
    return np.where(n_rel > 0, total / np.maximum(n_rel, 1.0), total)


# -- statAP ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _StatAP:
    value: np.ndarray
    variance: np.ndarray


def _stat_ap(ctx: EvalContext, m: Measure) -> _StatAP:
    """statAP and its variance for every query, once per (context, threshold)."""
    cache = ctx.__dict__.setdefault("_stat_ap", {})
    level = ctx.threshold if m.rel is None else int(m.rel)
    if level in cache:
        return cache[level]
    al = aligned_sample(ctx)
    nq = ctx.n_queries
    relevant = al.sampled & (al.grade >= max(level, 0))
    weight = np.where(relevant, 1.0 / np.where(relevant, al.inclusion, 1.0), 0.0)
    rq = np.bincount(al.row, weights=weight, minlength=nq)
    n_sampled = np.bincount(al.row, weights=al.sampled, minlength=nq)
    # the relevant sampled chunks the run ranks, in rank order
    found = np.flatnonzero(relevant & (al.col >= 0))
    found = found[np.lexsort((al.col[found], al.row[found]))]
    row, rank = al.row[found], al.col[found] + 1.0
    w = weight[found]
    before = _exclusive_cumsum(w, np.searchsorted(row, row, side="left"))
    prec = (1.0 + before) / rank
    up = np.bincount(row, weights=prec * w, minlength=nq)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(rq > 0, up / rq, np.nan)
    value = np.where(_has_pool(ctx, al), value, np.nan)
    variance = _stat_ap_variance(ctx, al, relevant, weight, found, prec, rank, value, rq, n_sampled)
    cache[level] = _StatAP(value, variance)
    return cache[level]


def _stat_ap_variance(ctx: EvalContext, al: _Aligned, relevant: np.ndarray, weight: np.ndarray,
                      found: np.ndarray, prec: np.ndarray, rank: np.ndarray, value: np.ndarray,
                      rq: np.ndarray, n_sampled: np.ndarray) -> np.ndarray:
    """The variance of statAP as the Million Query track's statAP_MQ_eval_v3.pl estimates it."""
    nq = ctx.n_queries
    row = al.row[found]
    p = al.inclusion[found]
    stat = np.nan_to_num(value)
    # y of each sampled relevant chunk: (prec - statAP) / p when ranked, -statAP / p when not
    y = np.zeros(len(al.row))
    rel_rows = al.row[relevant]
    y[relevant] = -stat[rel_rows] * weight[relevant]
    y[found] = (prec - stat[row]) / p
    keep = np.flatnonzero(relevant)
    yr, pr, rows_r = y[keep], al.inclusion[keep], al.row[keep]
    sum1 = np.bincount(rows_r, weights=(1.0 - pr) * yr * yr, minlength=nq)
    total = np.bincount(rows_r, weights=yr, minlength=nq)
    squares = np.bincount(rows_r, weights=yr * yr, minlength=nq)
    sum2 = total * total - squares
    acc = _segment_cumsum((1.0 - p) / p / p, np.searchsorted(row, row, side="left"))
    sum3 = np.bincount(row, weights=acc / rank / rank, minlength=nq)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = (sum1 - sum2 / (n_sampled - 1.0) + sum3) / rq / rq
    return np.where(np.isfinite(value) & (n_sampled > 1), var, np.nan)


@measure("statAP", full_depth=True, params=REL, needs=(SAMPLE_KEY,), aliases=("StatAP",))
def stat_ap(ctx: EvalContext, m: Measure) -> np.ndarray:
    """statAP (Aslam, Pavlu & Yilmaz, "A statistical method for system evaluation using
    incomplete judgments", SIGIR 2006; Pavlu's thesis, Northeastern University 2008), as the
    TREC Million Query track's ``statAP_MQ_eval_v3.pl`` computes it.

    Each sampled chunk d has its inclusion probability p_d; a sampled relevant chunk stands for
    1/p_d relevant chunks of the pool (Horvitz-Thompson). With S the sampled relevant chunks:

    ``R^ = sum_{d in S} 1/p_d``; for the d in S the run ranks, at rank k_d,
    ``prec^_d = (1 + sum_{d' in S ranked above d} 1/p_d') / k_d``, and

    ``statAP = (1/R^) sum_{d in S ranked} prec^_d / p_d``.

    Unbiased ratio estimate of AP for any sampling design with known probabilities. NaN when
    R^ = 0 (no sampled chunk is relevant): undefined, as the track's script leaves the query out
    of statMAP. Needs ``extras["sample"]`` (a :class:`PoolSample`).
    """
    return _stat_ap(ctx, m).value


@measure("statAP_var", full_depth=True, params=REL, needs=(SAMPLE_KEY,),
         aliases=("statAP_variance", "varAP"))
def stat_ap_var(ctx: EvalContext, m: Measure) -> np.ndarray:
    """The estimated variance of one query's statAP, as ``statAP_MQ_eval_v3.pl`` (version 3,
    TREC 2008 Million Query track) estimates it from the sample:

    ``var = (sum1 - sum2 / (n - 1) + sum3) / R^2`` with n the sampled chunks of the query,
    y_d = (prec^_d - statAP)/p_d for a ranked sampled relevant chunk and -statAP/p_d for an
    unranked one, ``sum1 = sum_d (1 - p_d) y_d^2``, ``sum2 = sum_{d != d'} y_d y_d'`` and
    ``sum3 = sum_{d ranked} (1/k_d^2) sum_{d' ranked at or above d} (1 - p_d')/p_d'^2``.

    The variance of statMAP over Q queries is the sum of these over Q^2 (the mean this measure
    reports divided by Q). NaN where statAP is, and where fewer than 2 chunks were sampled.
    """
    return _stat_ap(ctx, m).variance


# -- xinfAP, infNDCG, infP (sample_eval.pl) ------------------------------------------------------


@dataclass(frozen=True)
class _Inferred:
    ap: np.ndarray
    ndcg: np.ndarray
    precision: dict[int, np.ndarray]


def _segment_cumsum(values: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Cumulative sums restarting at each segment (``start[i]``: first index of i's segment);
    exact for integer counts."""
    cum = np.cumsum(values, axis=0)
    base = np.where((start > 0)[:, None] if values.ndim == 2 else start > 0,
                    cum[np.maximum(start - 1, 0)], 0)
    return cum - base


def _exclusive_cumsum(values: np.ndarray, start: np.ndarray) -> np.ndarray:
    """The sum of the values before each one within its segment."""
    shifted = np.concatenate(([0.0], np.cumsum(values)[:-1])) if len(values) else values
    return shifted - shifted[start]


def _strata_terms(docs: np.ndarray, rel: np.ndarray, sampled: np.ndarray) -> np.ndarray:
    """sample_eval.pl's estimate of the relevant chunks ranked so far, per stratum:
    ``docs * (rel + 1e-5) / (sampled + 3e-5)`` (0 for a stratum with no chunk yet)."""
    return np.where(docs > 0, docs * (rel + _REL_EPS) / (sampled + _SAMPLED_EPS), 0.0)


def _depth(m: Measure) -> int:
    return SAMPLE_EVAL_DEPTH if m.cutoff is None else int(m.cutoff)


def _inferred(ctx: EvalContext, level: int, depth: int, cuts: tuple[int, ...] = ()) -> _Inferred:
    """sample_eval.pl's estimates for every query: xinfAP, infNDCG and infP at ``cuts``."""
    al = aligned_sample(ctx)
    nq, ng = ctx.n_queries, al.n_groups
    sampled = al.sampled
    relevant = sampled & (al.grade >= max(level, 0))
    # per stratum of a query, over the whole pool: pooled, sampled, sampled relevant
    size = np.bincount(al.group, minlength=ng).astype(np.float64)
    n_sampled = np.bincount(al.group, weights=sampled, minlength=ng)
    n_rel = np.bincount(al.group, weights=relevant, minlength=ng)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel_estimate = np.where(n_sampled > 0, n_rel * size / n_sampled, 0.0)
    r_hat = np.bincount(al.group_row, weights=rel_estimate, minlength=nq)
    # the pooled chunks the run ranks within the depth, in rank order: the "events"
    cols = min(ctx.depth, depth, SAMPLE_EVAL_DEPTH)
    ev = np.flatnonzero((al.col >= 0) & (al.col < cols))
    ev = ev[np.lexsort((al.col[ev], al.row[ev]))]
    row, rank, group = al.row[ev], al.col[ev] + 1.0, al.group[ev]
    start = np.searchsorted(row, row, side="left")
    onehot = np.zeros((len(ev), int(al.local[ev].max()) + 1 if len(ev) else 1))
    onehot[np.arange(len(ev)), al.local[ev]] = 1.0
    is_samp, is_rel = sampled[ev][:, None], relevant[ev][:, None]
    # counts per stratum after each event (pooled, relevant, sampled), and before it
    after = (_segment_cumsum(onehot, start), _segment_cumsum(onehot * is_rel, start),
             _segment_cumsum(onehot * is_samp, start))
    before = (after[0] - onehot, after[1] - onehot * is_rel, after[2] - onehot * is_samp)
    # xinfAP: the estimated precision at each relevant chunk, from the pool above it
    prec = (1.0 + _strata_terms(*before).sum(axis=1)) / rank
    hit = relevant[ev]
    sap = np.bincount(group[hit], weights=prec[hit], minlength=ng)
    with np.errstate(divide="ignore", invalid="ignore"):
        part = np.where((n_rel > 0) & (r_hat[al.group_row] > 0),
                        rel_estimate / r_hat[al.group_row] * (sap / n_rel), 0.0)
    ap = np.bincount(al.group_row, weights=part, minlength=nq)
    ndcg = _inf_ndcg(ctx, al, ev, group, rank, size, n_sampled, min(depth, SAMPLE_EVAL_DEPTH))
    precision = {}
    if cuts:
        state = _strata_terms(*after).sum(axis=1)
        for k in cuts:
            last = np.full(nq, -1, dtype=np.int64)
            upto = np.flatnonzero(rank <= k)
            np.maximum.at(last, row[upto], upto)
            found = np.where(last >= 0, state[np.maximum(last, 0)], 0.0) if len(ev) else np.zeros(nq)
            precision[k] = found / k
    pooled = _has_pool(ctx, al)
    return _Inferred(np.where(pooled, ap, np.nan), np.where(pooled, ndcg, np.nan),
                     {k: np.where(pooled, v, np.nan) for k, v in precision.items()})


def _inf_ndcg(ctx: EvalContext, al: _Aligned, ev: np.ndarray, group: np.ndarray,
              rank: np.ndarray, size: np.ndarray, n_sampled: np.ndarray, depth: int) -> np.ndarray:
    """infNDCG: each stratum's gain in the run scaled by the stratum's sampling rate among the
    pooled chunks the run ranks, over the ideal DCG of the estimated grade counts."""
    nq, ng = ctx.n_queries, al.n_groups
    grade = np.where(al.sampled[ev], al.grade[ev], 0).astype(np.float64)
    gain = np.bincount(group, weights=grade / np.log2(rank + 1.0), minlength=ng)
    docs_in_run = np.bincount(group, minlength=ng).astype(np.float64)
    sampled_in_run = np.bincount(group, weights=al.sampled[ev], minlength=ng)
    with np.errstate(divide="ignore", invalid="ignore"):
        part = np.where(sampled_in_run > 0, docs_in_run * gain / sampled_in_run, 0.0)
        ideal = _ideal_dcg(ctx, al, size, n_sampled, depth)
        dcg = np.bincount(al.group_row, weights=part, minlength=nq)
        return np.where(ideal > 0, dcg / ideal, 0.0)


def _ideal_dcg(ctx: EvalContext, al: _Aligned, size: np.ndarray, n_sampled: np.ndarray,
               depth: int) -> np.ndarray:
    """DCG of the ideal ranking: per grade g > 0 (best first), round(sum over strata of the
    sampled chunks of grade g times N_s / n_s) chunks of gain g, to rank ``depth``."""
    nq = ctx.n_queries
    pick = np.flatnonzero(al.sampled & (al.grade > 0))
    if len(pick) == 0:
        return np.zeros(nq)
    # sampled chunks per (query, grade, stratum), each scaled as sample_eval.pl does
    top = int(al.grade[pick].max()) + 1
    ng = max(al.n_groups, 1)
    # (query, grade descending) as one integer, then the stratum within it
    query_grade = al.row[pick] * top + (top - 1 - al.grade[pick])
    cells, count = np.unique(query_grade * ng + al.group[pick], return_counts=True)
    group = cells % ng
    scaled = count * size[group] / n_sampled[group]
    pairs, which = np.unique(cells // ng, return_inverse=True)
    estimate = np.bincount(which.ravel(), weights=scaled, minlength=len(pairs))
    count_g = np.floor(estimate + 0.5)
    row, grade = pairs // top, (top - 1 - pairs % top).astype(np.float64)
    start = np.searchsorted(row, row, side="left")
    end = _segment_cumsum(count_g, start)
    begin = end - count_g
    discount = np.concatenate(([0.0], np.cumsum(1.0 / np.log2(np.arange(2, depth + 2)))))
    hi = np.minimum(end, depth).astype(np.int64)
    lo = np.minimum(begin, depth).astype(np.int64)
    ideal = grade * (discount[hi] - discount[lo])
    # sample_eval.pl stops each grade's loop at the depth only after adding a term, so a grade
    # whose chunks all lie past the depth still adds its first one (estimated R over 1000)
    past = (begin >= depth) & (count_g > 0)
    ideal[past] += grade[past] / np.log2(begin[past] + 2.0)
    return np.bincount(row, weights=ideal, minlength=nq)


@measure("xinfAP", cutoff="optional", params=REL, needs=(SAMPLE_KEY,), aliases=("XinfAP",))
def xinf_ap(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Extended inferred AP (Yilmaz, Kanoulas & Aslam, "A simple and efficient sampling method
    for estimating AP and NDCG", SIGIR 2008), as NIST's ``sample_eval.pl`` computes it (its
    ``infAP``).

    The pool of a query is cut into strata, each sampled at its own rate; a stratum s has N_s
    pooled chunks, n_s sampled, r_s sampled relevant. ``R^ = sum_s r_s N_s / n_s``. For the
    relevant chunk at rank k, with D chunks of the pool above it, of which d_s in stratum s
    (m_s sampled, q_s relevant):

    ``prec^@k = 1/k + (1/k) sum_s d_s (q_s + 1e-5) / (m_s + 3e-5)``

    and ``xinfAP = (1/R^) sum_{relevant ranked chunks d} prec^@k_d * N_s(d) / n_s(d)``: each
    stratum's precisions weighed by the inverse of its sampling rate. 0 when R^ = 0. The run is
    read to rank k of ``xinfAP@k``, else to rank 1000 (sample_eval.pl's ``maxResultSize``).
    Needs ``extras["sample"]`` (a :class:`PoolSample`; its strata, not its probabilities).
    """
    level = ctx.threshold if m.rel is None else int(m.rel)
    return _inferred(ctx, level, _depth(m)).ap


@measure("infNDCG", cutoff="optional", graded=True, needs=(SAMPLE_KEY,),
         aliases=("InfNDCG", "infnDCG"))
def inf_ndcg(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Inferred nDCG (Yilmaz, Kanoulas & Aslam, SIGIR 2008), as ``sample_eval.pl`` computes it.

    Gain = grade. For the pooled chunks the run ranks (to rank k, or 1000): in stratum s, D_s
    of them, M_s sampled, G_s the sum of g_d / log2(k_d + 1) over the sampled ones.
    ``DCG^ = sum_s G_s D_s / M_s``. The ideal DCG ranks, per grade g > 0 from the best,
    ``round(sum_s n_s(g) N_s / n_s)`` chunks of gain g (n_s(g) sampled chunks of grade g in
    stratum s of the pool), cut at rank k (or 1000; as in sample_eval.pl, a grade whose chunks
    all fall past that rank still adds its first one, which matters only when the estimated
    relevant chunks outnumber the ranks). ``infNDCG = DCG^ / IDCG^``, 0 when IDCG^ = 0. Needs
    ``extras["sample"]``.
    """
    return _inferred(ctx, ctx.threshold, _depth(m)).ndcg


@measure("infP", cutoff="required", params=REL, needs=(SAMPLE_KEY,), aliases=("InfP", "iP"))
def inf_precision(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Inferred precision at k, as ``sample_eval.pl`` computes its ``iP<k>``:

    ``infP@k = (1/k) sum_s D_s (Q_s + 1e-5) / (M_s + 3e-5)`` over the pooled chunks the run
    ranks in the top k (D_s of stratum s, M_s sampled, Q_s relevant): each stratum's relevant
    share among its sampled chunks times its pooled chunks. A run shorter than k divides its
    estimate by k all the same. Needs ``extras["sample"]``.
    """
    level = ctx.threshold if m.rel is None else int(m.rel)
    k = int(m.cutoff)
    return _inferred(ctx, level, k, (k,)).precision[k]


# -- drawing a sample ----------------------------------------------------------------------------


def _draw_within(group: np.ndarray, take: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw ``take[g]`` pairs at random, without replacement, from each group g."""
    order = np.lexsort((rng.random(len(group)), group))
    first = np.searchsorted(group[order], group[order], side="left")
    position = np.empty(len(group), dtype=np.int64)
    position[order] = np.arange(len(group)) - first
    return position < take[group]


def _allocate(size: np.ndarray, weights: np.ndarray, int_size: int) -> np.ndarray:
    """(Q, S) sample sizes: rates min(1, c w_s) with c per query such that the expected sizes
    add up to the query's budget, rounded by largest remainder to whole numbers."""
    q, s = size.shape
    budget = np.minimum(float(int_size), size.sum(axis=1))
    rate = np.zeros((q, s))
    done = np.zeros(q, dtype=bool)
    for t in range(s + 1):  # strata 0..t-1 saturated (rate 1); strata are few
        left = budget - size[:, :t].sum(axis=1)
        mass = (weights[None, t:] * size[:, t:]).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(mass > 0, left / mass, 0.0)
        fits = ~done & (left >= 0) & ((t == s) | (c * weights[min(t, s - 1)] <= 1.0))
        rate[fits, :t] = 1.0
        rate[fits, t:] = np.minimum(1.0, c[fits, None] * weights[None, t:])
        done |= fits
    expected = rate * size
    take = np.floor(expected + 1e-9)
    short = np.round(budget - take.sum(axis=1)).astype(np.int64)
    order = np.argsort(-(expected - take), axis=1, kind="stable")
    for j in range(s):
        col = order[:, j]
        add = (short > j) & (take[np.arange(q), col] < size[np.arange(q), col])
        take[np.arange(q)[add], col[add]] += 1
    return take


def draw_sample(query_ids: Any, chunk_ids: Any, ranks: Any = None, *, size: int,
                strategy: Literal["uniform", "stratified"] = "uniform",
                bands: tuple[int, ...] = RANK_BANDS, seed: int = 0) -> PoolSample:
    """Draw ``size`` pairs of each query's pool for judging; return the pool with each pair's
    inclusion probability and whether it was drawn (a :class:`PoolSample`).

    ``query_ids``, ``chunk_ids``: the pooled pairs (each once); ``ranks``: each pair's rank in
    the pool (its best rank over the pooled runs), needed by the stratified design.

    - ``uniform``: a simple random sample of min(size, N) of the query's N pooled pairs; each
      pair's inclusion probability is min(size, N) / N (infAP's and statAP's setting).
    - ``stratified``: the pool is cut into rank bands (``bands``: upper ranks of the bands,
      default 1-10, 11-30, 31-100, 101-), and band s is sampled at rate min(1, c 2^-s), c
      chosen so the expected sizes add up to ``size``: the top of the pool is judged densely and
      the tail sparsely, as the TREC Million Query track (2008-2009) and the Web track's
      stratified pools did. Each band's sample is a simple random sample of n_s of its N_s
      pairs, rounded to whole pairs by largest remainder; inclusion probability n_s / N_s, and
      the band is the pair's stratum (for xinfAP and infNDCG).

    The same ``seed`` and pool give the same sample.
    """
    qids, cids = _keys.as_ids(query_ids), _keys.as_ids(chunk_ids)
    if len(qids) != len(cids):
        raise InputError(f"{len(qids)} query ids but {len(cids)} chunk ids in the pool.")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise UsageError(f"the sample size per query must be a whole number >= 1, not {quote(size)}.")
    rng = np.random.default_rng(seed)
    unique, qidx = _keys.factorize(qids)
    pool = np.bincount(qidx, minlength=len(unique)).astype(np.float64)
    if strategy == "uniform":
        take = np.minimum(pool, float(size))
        drawn = _draw_within(qidx, take, rng)
        with np.errstate(divide="ignore", invalid="ignore"):
            prob = (take / pool)[qidx]
        return PoolSample(qids, cids, prob, None, drawn)
    if strategy != "stratified":
        raise UsageError(f"unknown sampling strategy {quote(strategy)}: uniform or stratified.")
    if ranks is None:
        raise UsageError("a stratified sample needs each pooled pair's rank.")
    rank = np.asarray(ranks, dtype=np.int64).ravel()
    if len(rank) != len(qids) or (len(rank) and rank.min() < 1):
        raise InputError("the pool's ranks must be one whole number >= 1 per pair.", field="rank")
    cut = np.asarray(sorted(bands), dtype=np.int64)
    stratum = np.searchsorted(cut, rank, side="left")
    n_strata = len(cut) + 1
    cells = qidx * n_strata + stratum
    size_qs = np.bincount(cells, minlength=len(unique) * n_strata).reshape(-1, n_strata)
    weights = 0.5 ** np.arange(n_strata)
    take = _allocate(size_qs.astype(np.float64), weights, int(size)).ravel()
    drawn = _draw_within(cells, take, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        prob = np.where(size_qs.ravel() > 0, take / np.maximum(size_qs.ravel(), 1), 0.0)[cells]
    return PoolSample(qids, cids, prob, stratum, drawn)
