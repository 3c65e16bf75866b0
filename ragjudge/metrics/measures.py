"""The ranking and set measures of IR evaluation (trec_eval's and the RAG literature's), declared and registered.

Notation for one query: the run ranks chunks 1..n; ``rel_i`` is 1 when the chunk at rank i is
judged with grade >= the threshold (``rel=``, default the evaluation's threshold, 1); ``g_i`` its
grade (0 when unjudged); ``R`` the number of relevant chunks of the query in the qrels; ``N`` the
number of judged non-relevant ones; ``hits@k = sum_{i<=k} rel_i``. Unjudged chunks count as not
relevant (except in bpref and Judged@k). A measure whose denominator is 0 gives 0, as trec_eval.

Every kernel is a vectorised expression over the (queries x depth) matrices of the
:class:`~ragjudge.metrics.context.EvalContext`; none loops over queries.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ragjudge.errors import InputError, UsageError
from ragjudge.metrics.registry import Measure, Param, measure
from ragjudge.numeric import MAX_GRADE
from ragjudge.safetext import quote

if TYPE_CHECKING:
    from ragjudge.metrics.context import EvalContext

REL = {"rel": Param(int, None, doc="relevance threshold of this measure (grade >= rel)")}

#: trec_eval's recall levels for the interpolated precision-recall curve (exact decimals)
RECALL_LEVELS = np.array([float(f"0.{j}") if j < 10 else 1.0 for j in range(11)])


def _div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den == 0."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den != 0)
    return out


def _relevant_positions(ctx: Any, k: int | None, rel: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, 0-based ranks and hits-so-far of every relevant chunk in the top k."""
    cols = ctx.columns(k)
    rows, ranks = np.nonzero(ctx.relevant(rel)[:, :cols])
    hits = ctx.cum_relevant(rel)[rows, ranks].astype(np.float64)
    return rows, ranks, hits


def _row_sum(ctx: Any, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    return np.bincount(rows, weights=values, minlength=ctx.n_queries).astype(np.float64)


def _discount(ctx: Any, cols: int) -> np.ndarray:
    """1 / log2(rank + 1) for ranks 1..cols."""
    return 1.0 / np.log2(ctx.ranks[:cols] + 1.0)


# --------------------------------------------------------------------------- set measures
@measure("P", cutoff="required", params=REL, aliases=("Precision",))
def precision(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Precision at k: ``P@k = hits@k / k``.

    Divides by k even when fewer than k chunks are ranked (trec_eval ``P_k``): two relevant
    chunks in the top 5 give 2/5 = 0.40.
    """
    return ctx.hits_at(m.cutoff, m.rel) / float(m.cutoff)


@measure("R", cutoff="optional", params=REL, aliases=("Recall", "MR"))
def recall(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Recall at k: ``R@k = hits@k / R`` (0 when R = 0); without a cutoff, the whole ranking.

    trec_eval ``recall_k``; its mean over queries is sometimes called MR@K (mean recall).
    """
    return _div(ctx.hits_at(m.cutoff, m.rel), ctx.n_relevant(m.rel))


def _f_beta(ctx: EvalContext, m: Measure, beta: float) -> np.ndarray:
    p = _div(ctx.hits_at(m.cutoff, m.rel), ctx.retrieved_at(m.cutoff)) if m.cutoff is None \
        else ctx.hits_at(m.cutoff, m.rel) / float(m.cutoff)
    r = _div(ctx.hits_at(m.cutoff, m.rel), ctx.n_relevant(m.rel))
    b2 = beta * beta
    return _div((1.0 + b2) * p * r, b2 * p + r)


@measure("F1", cutoff="optional", params=REL)
def f1(ctx: EvalContext, m: Measure) -> np.ndarray:
    """F1 at k: ``2 P R / (P + R)`` with P = P@k and R = R@k (0 when both are 0).

    Without a cutoff P is hits / chunks ranked. P = 0.40 and R = 0.33 give F1 = 0.36.
    """
    return _f_beta(ctx, m, 1.0)


@measure("F", cutoff="optional",
         params={**REL, "beta": Param(float, 1.0, doc="weight of recall",
                                      check=lambda b: 0.0 < b < math.inf,
                                      rule="a positive finite number")})
def f_beta(ctx: EvalContext, m: Measure) -> np.ndarray:
    """F-beta at k: ``(1 + b^2) P R / (b^2 P + R)``, textbook (van Rijsbergen) form.

    b > 1 favours recall (F2, where a missed relevant chunk costs more than a wrong one, as in medical retrieval). Note: trec_eval's ``set_F``
    reads its parameter as b^2; ragjudge's ``beta`` is b.
    """
    return _f_beta(ctx, m, float(m.get("beta", 1.0)))


@measure("Accuracy", cutoff="required", params=REL, needs=("corpus_size",))
def accuracy(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Accuracy at k: ``(TP + TN) / corpus size``, taking the top k as "retrieved".

    TP = hits@k, FP = chunks in the top k - TP, FN = R - TP, TN = corpus - TP - FP - FN.
    Needs ``extras={"corpus_size": n}`` (an int, or ``{query_id: n}``). Seed 004's
    "accuracy trap": 2 of 6 relevant in the top 5 of 10,000 chunks gives 99.93 %, which is why
    it is a poor retrieval measure; it is here to show that.
    """
    size = ctx.extras["corpus_size"]
    if isinstance(size, dict):
        n = np.array([float(size.get(q, np.nan)) for q in ctx.query_ids])
    else:
        n = np.full(ctx.n_queries, float(size))
    tp = ctx.hits_at(m.cutoff, m.rel)
    fp = ctx.retrieved_at(m.cutoff) - tp
    fn = ctx.n_relevant(m.rel) - tp
    tn = n - tp - fp - fn
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (tp + tn) / n
    out[~(n > 0)] = np.nan
    return out


@measure("Success", cutoff="optional", params=REL,
         aliases=("hit_rate", "HitRate", "Hit", "Hit_Rate"))
def success(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Success (hit rate) at k: 1 when at least one relevant chunk is in the top k, else 0.

    trec_eval ``success_k``; also called hit rate or Hit@k.
    """
    return (ctx.hits_at(m.cutoff, m.rel) > 0).astype(np.float64)


@measure("Judged", cutoff="required")
def judged(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Judged at k: ``|judged chunks in the top k| / min(k, chunks ranked)`` (0 if none ranked).

    How much of what the run shows in its top k the qrels cover (any grade >= 0). Unjudged
    chunks silently count as not relevant in every other measure, so a low value warns that
    the scores are lower bounds. The top k is the run in trec_eval's order (tied scores by
    chunk id descending) and a negative grade is unjudged, as everywhere in ragjudge.
    ir_measures' ``Judged@k`` differs on both: it breaks ties by id ascending and counts a
    chunk with a negative grade as judged (the two agree on runs without tied scores and
    qrels without negative grades).
    """
    cols = ctx.columns(m.cutoff)
    return _div(np.count_nonzero(ctx.judged[:, :cols], axis=1), ctx.retrieved_at(m.cutoff))


# --------------------------------------------------------------------------- trec_eval's counts and set measures
# The whole ranking is one set. trec_eval reports these per query and sums the counts in its
# "all" line; ragjudge's aggregate is the mean over queries, as for every measure (the sum is
# the mean times the number of queries counted).
@measure("NumRet", params={"rel": Param(int, None, doc="count only the chunks with grade >= rel "
                                                     "(then the same as NumRelRet(rel=...))")},
         aliases=("num_ret",))
def num_ret(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Chunks the run ranks for the query: ``num_ret = n`` (trec_eval ``num_ret``).

    With ``rel=r`` only the ranked chunks graded >= r, as ir_measures' ``NumRet(rel=r)``
    (= trec_eval ``num_rel_ret`` at relevance level r). Unjudged and negatively graded chunks
    are counted: they are retrieved all the same.
    """
    if m.rel is None:
        return ctx.retrieved_at(None)
    return ctx.hits_at(None, m.rel)


@measure("NumRel", params=REL, aliases=("num_rel",))
def num_rel(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Relevant chunks of the query in the qrels: ``num_rel = R`` (trec_eval ``num_rel``).

    Counts the qrels, retrieved or not; a query the run does not answer still has its R (under
    trec_eval -c such a query adds nothing to the summed ``num_rel``).
    """
    return ctx.n_relevant(m.rel)


@measure("NumRelRet", params=REL, aliases=("num_rel_ret",))
def num_rel_ret(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Relevant chunks the run ranks: ``num_rel_ret = sum_i rel_i`` (whole ranking).

    trec_eval ``num_rel_ret``; ir_measures ``NumRelRet``."""
    return ctx.hits_at(None, m.rel)


@measure("SetP", params={**REL, "relative": Param(bool, False, flag=True,
                                                  doc="divide by min(n, R) (set_relative_P)")},
         aliases=("set_P",))
def set_precision(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Set precision: ``set_P = num_rel_ret / num_ret`` (0 when nothing is ranked).

    The ranking as an unordered set (trec_eval ``set_P``). ``SetP(relative)`` divides by the
    best possible count instead, ``num_rel_ret / min(num_ret, R)`` (trec_eval
    ``set_relative_P``, ir_measures ``SetRelP``; 0 when the minimum is 0).
    """
    if m.get("relative"):
        return set_relative_precision(ctx, m)
    return _div(ctx.hits_at(None, m.rel), ctx.retrieved_at(None))


@measure("SetRelP", params=REL, aliases=("set_relative_P",))
def set_relative_precision(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Relative set precision: ``num_rel_ret / min(num_ret, R)`` (0 when that is 0).

    trec_eval ``set_relative_P``; the same as ``SetP(relative)``.
    """
    return _div(ctx.hits_at(None, m.rel), np.minimum(ctx.retrieved_at(None), ctx.n_relevant(m.rel)))


@measure("SetR", params=REL, aliases=("set_recall", "SetRecall"))
def set_recall(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Set recall: ``set_recall = num_rel_ret / R`` (0 when R = 0).

    trec_eval ``set_recall``; the same value as ``R`` without a cutoff."""
    return _div(ctx.hits_at(None, m.rel), ctx.n_relevant(m.rel))


@measure("SetF", params={**REL, "beta": Param(float, 1.0, doc="weight of recall (textbook beta)",
                                              check=lambda b: 0.0 < b < math.inf,
                                              rule="a positive finite number")},
         aliases=("set_F",))
def set_f(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Set F: ``(1 + b^2) P R / (b^2 P + R)``, P = ``set_P``, R = ``set_recall`` (0 if both 0).

    Van Rijsbergen's F over the whole ranking as one set.
    ``beta`` is the textbook b, as in ``F``: trec_eval's ``set_F.x`` computes
    ``(x + 1) P R / (x P + R)``, so its x is b^2 (``set_F.4`` = ``SetF(beta=2)``), and
    ir_measures' ``SetF(beta=x)`` passes its beta to trec_eval as that x. The default
    (b = x = 1) is the same in all three.
    """
    return _f_beta(ctx, m, float(m.get("beta", 1.0)))


# --------------------------------------------------------------------------- rank measures
@measure("AP", cutoff="optional", params=REL, aliases=("MAP", "AveP", "AvgPrec"))
def average_precision(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Average precision: ``AP@k = (1/R) sum_{i<=k} P@i rel_i`` (0 when R = 0).

    R counts every relevant chunk of the query in the qrels, retrieved or not (trec_eval
    ``map``; ``map_cut_k`` with a cutoff). MAP is its mean over queries.
    """
    rows, ranks, hits = _relevant_positions(ctx, m.cutoff, m.rel)
    return _div(_row_sum(ctx, rows, hits / (ranks + 1.0)), ctx.n_relevant(m.rel))


@measure("ContextPrecisionAP", cutoff="optional", params=REL,
         aliases=("ContextPrecision_AP", "CP_AP"))
def context_precision_ap(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Context precision as some RAG guides define it: average precision (divides by R).

    ``(1/R) sum_{i<=k} P@i rel_i`` -- the same value as ``AP@k``; offered under this name so
    that reports following that definition say what they mean. Compare ``ContextPrecision@k``.
    """
    return average_precision(ctx, m)


@measure("ContextPrecision", cutoff="optional", params=REL, aliases=("CP",))
def context_precision(ctx: EvalContext, m: Measure) -> np.ndarray:
    """RAGAS context precision at k: ``sum_{i<=k} P@i rel_i / hits@k`` (0 when hits@k = 0).

    Divides by the relevant chunks found in the top k, not by all relevant chunks: ranking
    the found ones first scores 1.0 however many were missed. Seed 001.
    """
    rows, ranks, hits = _relevant_positions(ctx, m.cutoff, m.rel)
    return _div(_row_sum(ctx, rows, hits / (ranks + 1.0)), ctx.hits_at(m.cutoff, m.rel))


@measure("Rprec", full_depth=True, params=REL, aliases=("R-Precision", "RPrec", "R_Precision"))
def r_precision(ctx: EvalContext, m: Measure) -> np.ndarray:
    """R-precision: ``P@R = hits@R / R`` with R the relevant chunks of the query (0 if R = 0).

    trec_eval ``Rprec``.
    """
    n_rel = ctx.n_relevant(m.rel)
    if ctx.depth == 0:
        return np.zeros(ctx.n_queries)
    cum = ctx.cum_relevant(m.rel)
    col = np.clip(n_rel.astype(np.int64), 1, ctx.depth) - 1
    hits = cum[np.arange(ctx.n_queries), col].astype(np.float64)
    return _div(hits, n_rel)


@measure("RR", cutoff="optional", params=REL, aliases=("MRR", "RecipRank", "MeanRR"))
def reciprocal_rank(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Reciprocal rank: ``1 / rank of the first relevant chunk`` (within the top k), else 0.

    trec_eval ``recip_rank``; MRR is its mean over queries. Seed 000 §3.3, seeds 002, 004.
    """
    cols = ctx.columns(m.cutoff)
    rel = ctx.relevant(m.rel)[:, :cols]
    if cols == 0:
        return np.zeros(ctx.n_queries)
    first = np.argmax(rel, axis=1)
    return np.where(rel[np.arange(ctx.n_queries), first], 1.0 / (first + 1.0), 0.0)


@measure("bpref", full_depth=True, params=REL, aliases=("BPref",))
def bpref(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Binary preference (Buckley & Voorhees 2004), as trec_eval computes it:

    ``bpref = (1/R) sum_{relevant retrieved r} (1 - min(n_r, R) / min(R, N))`` where n_r is the
    number of judged non-relevant chunks ranked above r; unjudged chunks are skipped. When no
    judged non-relevant chunk is ranked above r (in particular when the query has none,
    N = 0) the term is 1.0, so bpref = relevant retrieved / R. 0 when R = 0.
    """
    rel = ctx.relevant(m.rel)
    nonrel = ctx.judged & ~rel
    cum_nonrel = np.cumsum(nonrel, axis=1, dtype=np.int32)
    rows, ranks = np.nonzero(rel)
    before = cum_nonrel[rows, ranks].astype(np.float64)
    n_rel = ctx.n_relevant(m.rel)
    n_non = ctx.n_nonrelevant(m.rel)
    r_row, n_row = n_rel[rows], n_non[rows]
    term = np.where(before > 0,
                    1.0 - _div(np.minimum(before, r_row), np.minimum(r_row, n_row)), 1.0)
    return _div(_row_sum(ctx, rows, term), n_rel)


# --------------------------------------------------------------------------- graded measures
@measure("DCG", cutoff="optional", graded=True)
def dcg(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Discounted cumulative gain: ``DCG@k = sum_{i<=k} g_i / log2(i + 1)``, gain = grade.

    Grades 2, 0, 1, 0, 2 in the top 5 give DCG@5 = 2 + 1/2 + 2/log2(6) = 3.274.
    """
    cols = ctx.columns(m.cutoff)
    return ctx.gains_to(cols) @ _discount(ctx, cols)


@measure("nDCG", cutoff="optional", graded=True, aliases=("NDCG", "ndcg"))
def ndcg(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Normalised DCG: ``nDCG@k = DCG@k / IDCG@k`` with gain = grade (0 when IDCG = 0).

    The ideal ranking sorts every judged grade of the query, retrieved or not. Matches
    trec_eval ``ndcg`` / ``ndcg_cut_k``, which also ignore the relevance threshold: every
    positive grade is gain. Seeds 000 §3.2, 002, 004.
    """
    return _div(dcg(ctx, m), ctx.ideal_dcg(m.cutoff, "grade"))


@measure("nDCG_exp", cutoff="optional", graded=True, aliases=("NDCG_exp", "nDCG_burges"))
def ndcg_exp(ctx: EvalContext, m: Measure) -> np.ndarray:
    """nDCG with exponential gain ``2^g - 1`` (Burges et al. 2005):

    ``sum_{i<=k} (2^g_i - 1) / log2(i + 1)`` over the same sum for the ideal ranking.
    """
    cols = ctx.columns(m.cutoff)
    gains = np.exp2(ctx.gains_to(cols)) - 1.0
    return _div(gains @ _discount(ctx, cols), ctx.ideal_dcg(m.cutoff, "exp"))


def _err(ctx: EvalContext, m: Measure, stop: np.ndarray) -> np.ndarray:
    """sum_r (1/r) p_r prod_{i<r} (1 - p_i) for a (Q, cols) matrix of stop probabilities."""
    cols = stop.shape[1]
    if cols == 0:
        return np.zeros(ctx.n_queries)
    reach = np.ones_like(stop)
    np.cumprod(1.0 - stop[:, :-1], axis=1, out=reach[:, 1:])
    return (reach * stop) @ (1.0 / ctx.ranks[:cols])


TOP_GRADE = {"max_grade": Param(
    int, None, doc="top of the grade scale (default: the project's scale, or the highest grade "
                   "in a qrels file)",
    check=lambda g: 1 <= g <= MAX_GRADE, rule=f"a grade from 1 to {MAX_GRADE:,}")}


def _top_grade(ctx: EvalContext, m: Measure) -> int:
    """g_max of ERR: ``max_grade=`` or else the top of the qrels' scale (``Qrels.max_grade``).

    A judged grade above a given ``max_grade`` is refused, as gdeval (ir_measures' ERR, whose
    top grade is 4) refuses it: the satisfaction probability would exceed 1."""
    given = m.get("max_grade")
    if given is None:
        return ctx.max_grade
    above = np.flatnonzero(ctx.qrels.grades > given)
    if len(above):
        row = int(above[0])
        query = ctx.qrels.query_ids[int(ctx.qrels.qidx[row])]
        raise InputError(
            f"query {quote(query)} has grade {int(ctx.qrels.grades[row])}, above {m}'s "
            f"max_grade={given}: its satisfaction probability (2^g - 1) / 2^max_grade would "
            "exceed 1. Give the top of the scale as max_grade (or leave it out).",
            file=ctx.qrels.file, field="grade")
    return int(given)


@measure("ERR", cutoff="optional", graded=True, params=TOP_GRADE)
def err(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Expected reciprocal rank (Chapelle, Metzler, Zhang & Grinspan 2009):

    ``ERR@k = sum_{r<=k} (1/r) R_r prod_{i<r} (1 - R_i)``, ``R_i = (2^g_i - 1) / 2^g_max``.
    g_max is the top of the scale: ``max_grade=`` if given (a higher grade in the qrels is
    refused), else the project's scale, else (qrels from a file or arrays) the highest grade of
    the whole qrels, the same for every query. gdeval, used by ir_measures, fixes it at 4:
    ``ERR(max_grade=4)@k`` reproduces it.
    """
    top = _top_grade(ctx, m)
    cols = ctx.columns(m.cutoff)
    stop = (np.exp2(ctx.gains_to(cols)) - 1.0) / np.exp2(float(top))
    return _err(ctx, m, stop)


@measure("ERR_linear", cutoff="optional", graded=True, params=TOP_GRADE)
def err_linear(ctx: EvalContext, m: Measure) -> np.ndarray:
    """ERR with a linear satisfaction probability ``R_i = g_i / g_max`` (instead of Chapelle's (2^g - 1) / 2^g_max):

    ``sum_{r<=k} (1/r) R_r prod_{i<r} (1 - R_i)``; g_max as in ``ERR``. 0 when g_max = 0.
    """
    top = _top_grade(ctx, m)
    cols = ctx.columns(m.cutoff)
    if top <= 0:
        return np.zeros(ctx.n_queries)
    stop = np.minimum(ctx.gains_to(cols) / float(top), 1.0)
    return _err(ctx, m, stop)


PERSISTENCE = {"p": Param(float, 0.8, doc="persistence: the chance of going on to the next rank",
                         check=lambda p: 0.0 <= p < 1.0, rule="a number from 0 up to (not including) 1")}


def _rbp_weights(ctx: EvalContext, cols: int, p: float) -> np.ndarray:
    """(1 - p) p^(i-1) for ranks i = 1..cols: the chance the user looks at rank i and stops."""
    return (1.0 - p) * np.power(p, ctx.ranks[:cols] - 1.0)


@measure("RBP", cutoff="optional",
         params={**REL, **PERSISTENCE, **TOP_GRADE,
                 "graded": Param(bool, False, flag=True, doc="gain = grade / max_grade instead "
                                                             "of relevant or not")})
def rbp(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Rank-biased precision: ``RBP@k = (1 - p) sum_{i<=k} r_i p^(i-1)``, persistence p.

    Moffat & Zobel, "Rank-biased precision for measurement of retrieval effectiveness", ACM
    TOIS 27(1), 2008. p is ``p=`` (default 0.8): the chance the user goes on to the next rank.

    r_i is 1 when the chunk at rank i is relevant (grade >= ``rel``, default the evaluation's
    threshold: the authors' rbp_eval on integer qrels, and ir_measures' ``RBP(rel=1)``), else 0.
    ``RBP(graded)`` takes r_i = g_i / g_max instead, g_max as in ``ERR`` (``max_grade=`` or the
    top of the scale): rbp_eval's fractional relevance scaled by 1/g_max. Unjudged chunks and
    negative grades give 0 and are what the residual counts (``RBP_residual``); without a
    cutoff the sum runs over the whole ranking. The ranking is ragjudge's order (ties by chunk
    id descending); rbp_eval instead averages the weights over tied scores.
    """
    p = float(m.get("p", 0.8))
    cols = ctx.columns(m.cutoff)
    if m.get("graded"):
        if m.rel is not None:
            raise UsageError(f"measure {m}: graded takes the grade as gain; leave rel out.")
        top = _top_grade(ctx, m)
        if top <= 0:
            return np.zeros(ctx.n_queries)
        gains = ctx.gains_to(cols) / float(top)
    else:
        gains = ctx.relevant(m.rel)[:, :cols].astype(np.float64)
    return gains @ _rbp_weights(ctx, cols, p)


@measure("RBP_residual", cutoff="optional", params=PERSISTENCE,
         aliases=("RBP_res", "RBPResidual"))
def rbp_residual(ctx: EvalContext, m: Measure) -> np.ndarray:
    """RBP's residual: ``(1 - p) sum_{i<=d, i unjudged} p^(i-1) + p^d``, d = min(k, ranked).

    How much RBP could still grow (Moffat & Zobel 2008): the weight of the unjudged positions
    (a negative grade is unjudged) plus the weight of everything past the ranking. The true RBP lies in
    [RBP, RBP + residual] whatever the unjudged and unranked chunks turn out to be; rbp_eval
    prints the same number as its error term. A query the run does not answer has residual 1.
    A separate name, not a parameter of ``RBP``, so that a report shows both columns side by
    side with the same ``p`` (and cutoff).
    """
    p = float(m.get("p", 0.8))
    cols = ctx.columns(m.cutoff)
    unjudged = (ctx.valid[:, :cols] & ~ctx.judged[:, :cols]).astype(np.float64)
    return unjudged @ _rbp_weights(ctx, cols, p) + np.power(p, ctx.retrieved_at(m.cutoff))


# --------------------------------------------------------------------------- curves
def interpolated_precision(ctx: EvalContext, levels: np.ndarray, rel: int | None = None) -> np.ndarray:
    """(Q, len(levels)): ``max {P@i : rel_i = 1, hits@i >= floor(level * R + 0.9)}``, else 0.

    Interpolated precision at a recall level is the best precision at any rank reaching that
    recall. Recall levels are turned into counts of relevant chunks the way trec_eval
    ``iprec_at_recall`` does (``floor(level * R + 0.9)``, so with R = 3 recall 2/3 already counts
    for level 0.7); a query with R = 0 or no relevant chunk ranked gives 0 at every level.
    """
    rows, ranks, hits = _relevant_positions(ctx, None, rel)
    out = np.zeros((ctx.n_queries, len(levels)))
    if len(rows) == 0:
        return out
    prec = hits / (ranks + 1.0)
    n_rel = ctx.n_relevant(rel)[rows]
    for j, level in enumerate(levels):
        ok = hits >= np.floor(float(level) * n_rel + 0.9)
        np.maximum.at(out[:, j], rows[ok], prec[ok])
    return out


@measure("iprec", cutoff="required", cutoff_kind=float, params=REL,
         aliases=("IPrec", "iprec_at_recall"), full_depth=True)
def iprec(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Interpolated precision at recall level r: ``max {P@i : recall@i >= r, rel_i = 1}``.

    With trec_eval's rounding of r to a count of relevant chunks (see
    ``interpolated_precision``). trec_eval ``iprec_at_recall_r``; written ``iprec@0.5``.
    Seed 000 §1.5.
    """
    return interpolated_precision(ctx, np.array([float(m.cutoff)]), m.rel)[:, 0]


@measure("AUC_PR", params=REL, aliases=("AUCPR", "AUC-PR"), full_depth=True)
def auc_pr(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Area under the 11-point interpolated precision-recall curve, trapezoidal rule:

    ``sum_{j=0}^{9} 0.1 (p(r_j) + p(r_{j+1})) / 2`` at r = 0.0, 0.1, ..., 1.0, p = iprec.
    Seed 000 §1.5.
    """
    p = interpolated_precision(ctx, RECALL_LEVELS, m.rel)
    return np.sum((p[:, :-1] + p[:, 1:]) * 0.5 * np.diff(RECALL_LEVELS), axis=1)


def _check_corpus(size: Any) -> None:  # pragma: no cover - guard for callers
    if not isinstance(size, (int, dict)):
        raise UsageError("corpus_size must be an int or a {query_id: int} mapping.")
