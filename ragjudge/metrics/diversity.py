"""Novelty and diversity: alpha-nDCG over the facets of a query.

A query's facets are its subtopics (Clarke et al.'s "information nuggets" of a diversity task);
a chunk covers a facet when the annotators linked it to that facet (``extras["facets"]``, the
same data as ``Coverage``: an :class:`~ragjudge.metrics.rag.ItemLabels`, from
``ragjudge.services.rag.rag_extras``). A chunk linked to no facet gains nothing, like a
document without a subtopic judgment in TREC's ndeval.

Conventions, as TREC's ndeval (the Web track's diversity tool, version 4.5) has them:

- the ideal ranking is built greedily, rank by rank: the chunk that adds the most novelty
  gain given the ones already placed, ties to the larger chunk id (byte order); finding the
  true ideal is NP-hard (Clarke et al. 2008, section 4), and the greedy one is what ndeval and
  every TREC diversity result use;
- it is built from every chunk linked to a facet of the query, ranked by the run or not;
- alpha-nDCG@k divides the run's alpha-DCG@k by the greedy ideal's alpha-DCG@k (both to rank
  k); 0 when the run gains nothing;
- a facet no chunk covers changes nothing (ndeval leaves such a subtopic out).

Where ragjudge differs, on purpose: a query without facets is undefined (NaN, left out of the
mean and counted, as for ``Coverage``), where ndeval has no such topic at all; a query whose
facets no chunk covers scores 0 (ndeval: a topic whose judgments are all 0); and the cutoff
is any k, or none for the whole ranking (ndeval prints @5, @10 and @20). The run is ranked
ragjudge's way (score descending, ties by chunk id descending: ndeval's ``-traditional``).

Numpy only; the greedy ideal is computed rank by rank for every query at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics.rag import FULL, ItemLabels, ItemSupport, aligned_extra
from ragjudge.metrics.registry import Measure, Param, measure

if TYPE_CHECKING:
    from ragjudge.metrics.context import EvalContext
    from ragjudge.metrics.explanation import RagExplanation

__all__ = ["alpha_dcg", "ideal_alpha_gains", "facet_links", "explain_alpha_ndcg"]


def _discount(n: int) -> np.ndarray:
    """1 / log2(rank + 1) for ranks 1..n."""
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


def alpha_dcg(support: ItemSupport, k: int | None, alpha: float) -> np.ndarray:
    """(Q,) alpha-DCG@k of the ranked chunks (Clarke et al. 2008):

    ``alpha-DCG@k = sum_{i<=k} (sum_f J(i, f) (1 - alpha)^{c(i, f)}) / log2(i + 1)``

    J(i, f) = 1 when the chunk at rank i covers facet f (full support), c(i, f) = the chunks
    above rank i that cover f."""
    keep = support.levels >= FULL
    if k is not None:
        keep &= support.ranks <= k
    rows, ranks, items = support.rows[keep], support.ranks[keep], support.items[keep]
    width = max(int(support.valid.shape[1]), 1)
    depth = int(ranks.max()) + 1 if len(ranks) else 1
    key = np.unique((rows * depth + ranks) * width + items)  # once per (row, rank, facet)
    rows, rest = np.divmod(key, depth * width)
    ranks, items = np.divmod(rest, width)
    order = np.lexsort((ranks, items, rows))
    rows, ranks, items = rows[order], ranks[order], items[order]
    group = np.flatnonzero(np.r_[True, (rows[1:] != rows[:-1]) | (items[1:] != items[:-1])])
    before = np.arange(len(rows)) - np.repeat(group, np.diff(np.r_[group, len(rows)]))
    gain = np.power(1.0 - alpha, before) / np.log2(ranks + 1.0)
    return np.bincount(rows, weights=gain, minlength=support.n_queries).astype(np.float64)


def facet_links(labels: ItemLabels, query_ids: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The covering links of the evaluated queries, ranked by the run or not: row, facet column
    (as in the aligned ItemSupport) and chunk id (``S`` bytes) of each, once each."""
    item_row, item_col, _ = labels.placement(query_ids)
    items = np.asarray(labels.support_items, dtype=np.int64)
    levels = np.asarray(labels.support_levels, dtype=np.int64)
    if not len(items):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, "S1")
    keep = (levels >= FULL) & (item_row[items] >= 0)
    return item_row[items[keep]], item_col[items[keep]], labels.support_chunk_ids()[keep]


def ideal_alpha_gains(rows: np.ndarray, cols: np.ndarray, chunks: np.ndarray, n_rows: int,
                      alpha: float, depth: int | None) -> np.ndarray:
    """(n_rows, d) novelty gains of the greedy ideal ranking, rank by rank (d = ``depth`` or the
    most chunks linked to one query).

    At each rank every query takes, among its chunks not yet placed, the one whose gain
    ``sum_f J(c, f) g_f`` is largest (ties: the larger chunk id), with g_f = (1 - alpha)^(times
    f is already covered), kept by multiplying as ndeval does; the gains are summed in facet
    order, as ndeval sums them, so that ties come out the same."""
    if not len(rows):
        return np.zeros((n_rows, 0))
    codes = np.unique(chunks, return_inverse=True)[1].ravel()
    order = np.lexsort((cols, -codes, rows))  # by query, chunk id descending, facet
    rows, cols, codes = rows[order], cols[order], codes[order]
    same = np.r_[False, (rows[1:] == rows[:-1]) & (codes[1:] == codes[:-1])]
    dup = same & np.r_[False, cols[1:] == cols[:-1]]
    rows, cols, same = rows[~dup], cols[~dup], same[~dup]
    doc = np.cumsum(~same) - 1  # the chunk of each link; chunks numbered by query, id descending
    doc_row = rows[~same]
    first = np.r_[True, doc_row[1:] != doc_row[:-1]]
    starts = np.flatnonzero(first)  # each query's first chunk
    query_of = np.cumsum(first) - 1  # each chunk's query, counted among those with chunks
    most = int(np.diff(np.r_[starts, len(doc_row)]).max())
    steps = most if depth is None else min(int(depth), most)
    gains = np.zeros((n_rows, steps))
    left = np.ones((n_rows, int(cols.max()) + 1))  # (1 - alpha)^(times covered) per facet
    placed = np.zeros(len(doc_row), dtype=bool)
    for step in range(steps):
        score = np.bincount(doc, weights=left[rows, cols], minlength=len(doc_row))
        score[placed] = -1.0
        best = np.maximum.reduceat(score, starts)
        if not np.any(best > 0):
            break  # every chunk left gains nothing
        winner = np.flatnonzero((score == best[query_of]) & ~placed)
        winner = winner[np.unique(query_of[winner], return_index=True)[1]]  # first per query
        gains[doc_row[winner], step] = score[winner]
        placed[winner] = True
        now = np.zeros(len(doc_row), dtype=bool)
        now[winner] = True
        hit = now[doc]
        left[rows[hit], cols[hit]] *= 1.0 - alpha
    return gains


ALPHA = {"alpha": Param(float, 0.5, doc="redundancy penalty: a facet's gain shrinks by (1 - alpha) "
                                        "each time it is covered again",
                        check=lambda a: 0.0 <= a <= 1.0, rule="a number from 0 to 1")}


@measure("alpha_nDCG", cutoff="optional", params=ALPHA, needs=("facets",),
         aliases=("alpha-nDCG", "alphaNDCG", "a-nDCG"))
def _alpha_ndcg_measure(ctx: EvalContext, m: Measure) -> np.ndarray:
    """alpha-nDCG@k = alpha-DCG@k(run) / alpha-DCG@k(greedy ideal), facets as subtopics.

    Clarke, Kolla, Cormack, Vechtomova, Ashkan, Büttcher & MacKinnon, "Novelty and diversity
    in information retrieval evaluation", SIGIR 2008:
    ``alpha-DCG@k = sum_{i<=k} (sum_f J(i, f) (1 - alpha)^{c(i, f)}) / log2(i + 1)``

    J(i, f) = 1 when the chunk at rank i is linked to (covers) facet f, c(i, f) = how many chunks
    above rank i cover f; alpha (``alpha=``, default 0.5) discounts each facet found again.
    The ideal ranking is ndeval's greedy one, over every chunk linked to a facet of the query
    (module docstring). NaN for a query without facets; 0 when no chunk covers any of them.
    Equal to ir_measures' ``alpha_nDCG`` (pyndeval) on the same subtopic qrels."""
    labels = ctx.extras["facets"]
    if not isinstance(labels, ItemLabels):
        raise UsageError(f"measure {m} needs extras['facets'] as an ItemLabels (every chunk "
                         "linked to a facet, ranked or not, for the ideal ranking), not "
                         f"{type(labels).__name__}.")
    alpha = float(m.get("alpha", 0.5))
    support = aligned_extra(ctx, "facets")
    run = alpha_dcg(support, m.cutoff, alpha)
    rows, cols, chunks = facet_links(labels, ctx.query_ids)
    ideal = ideal_alpha_gains(rows, cols, chunks, ctx.n_queries, alpha, m.cutoff)
    best = ideal @ _discount(ideal.shape[1])
    value = np.divide(run, best, out=np.zeros(ctx.n_queries), where=best > 0)
    return np.where(support.valid.any(axis=1), value, np.nan)


def explain_alpha_ndcg(ctx: EvalContext, row: int, m: Measure,
                       chunk_ids: list[str] | None = None) -> RagExplanation:
    """Why alpha_nDCG@k has its value for one query (row of ``ctx``): each rank's facets, new
    or found again, its gain and discounted gain; then the greedy ideal's gains."""
    from ragjudge.metrics.explanation import RagExplanation

    value = float(m(ctx)[row])
    alpha = float(m.get("alpha", 0.5))
    support = aligned_extra(ctx, "facets")
    names = support.names[row] if support.names is not None else None
    label = lambda f: names[f] if names is not None else f"#{f + 1}"  # noqa: E731
    keep = (support.rows == row) & (support.levels >= FULL)
    if m.cutoff is not None:
        keep &= support.ranks <= m.cutoff
    seen: dict[int, int] = {}
    rows: list[tuple[object, ...]] = []
    dcg = 0.0
    for rank in sorted(set(support.ranks[keep].tolist())):
        facets = sorted(set(support.items[keep & (support.ranks == rank)].tolist()))
        gain = sum((1.0 - alpha) ** seen.get(f, 0) for f in facets)
        new = [label(f) for f in facets if f not in seen]
        again = [label(f) for f in facets if f in seen]
        for f in facets:
            seen[f] = seen.get(f, 0) + 1
        dcg += gain / np.log2(rank + 1.0)
        chunk = chunk_ids[rank - 1] if chunk_ids is not None and rank <= len(chunk_ids) else None
        rows.append((rank, chunk, ", ".join(new) or None, ", ".join(again) or None, gain,
                     gain / np.log2(rank + 1.0)))
    labels = ctx.extras["facets"]
    links = facet_links(labels, ctx.query_ids)
    mine = links[0] == row
    ideal = ideal_alpha_gains(np.zeros(int(mine.sum()), np.int64), links[1][mine], links[2][mine],
                              1, alpha, m.cutoff)[0]
    best = float(ideal @ _discount(len(ideal)))
    where = "the whole run" if m.cutoff is None else f"the top {m.cutoff}"
    steps = [f"{m}: a chunk gains, for each facet it covers, (1 - {alpha:g})^(times the facet "
             f"was covered above it); alpha-DCG sums gain / log2(rank + 1) over {where}. Ranks "
             "covering no facet gain nothing and are not listed.",
             f"alpha-DCG = {dcg:.4f}",
             "greedy ideal (every chunk linked to a facet, the largest gain first): gains "
             + (", ".join(f"{g:g}" for g in ideal[ideal > 0]) or "none") + f"; alpha-DCG = {best:.4f}"]
    if not support.valid[row].any():
        steps.append("The query has no facets: undefined (left out of the mean).")
    elif best > 0:
        steps.append(f"alpha-nDCG = {dcg:.4f} / {best:.4f} = {value:.4f}")
    else:
        steps.append("No chunk covers a facet of this query: 0.")
    return RagExplanation(str(m), value, ("rank", "chunk", "new facets", "facets again", "gain",
                                          "discounted"), rows, steps)
