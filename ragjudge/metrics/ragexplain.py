"""Step-by-step computations of the RAG measures on one query (facets, nuggets, claims,
entities, citations, both context precisions, alpha-nDCG and the answer measures): which
explainer a measure has, and the explainers of the chunk-level RAG measures."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics.explanation import RagExplanation, cell_text
from ragjudge.metrics.rag import NEVER, Citations, ItemSupport, aligned_extra, cutoff_rank, id_text, item_weights
from ragjudge.safetext import quote


def _k_text(k: int | None) -> str:
    return "the whole run" if k is None else f"the top {k}"


def _rank_text(rank: int, chunk_ids: Sequence[str] | None) -> str | None:
    if rank == NEVER:
        return None
    if chunk_ids is not None and rank <= len(chunk_ids):
        return f"{rank} ({chunk_ids[rank - 1]})"
    return str(rank)


_FOUND_WORDS = {"facet": "covers it", "entity": "contains it (in its text)"}


def explain_items(measure: str, support: ItemSupport, row: int, k: int | None, *,
                  strict: bool = True, vital_only: bool = False, weighted: bool = False,
                  chunk_ids: Sequence[str] | None = None, item: str = "item") -> RagExplanation:
    """Why Coverage / NuggetRecall / ContextRecall / EntityRecall has its value for one query:
    each item with the first rank fully (and partially) supporting it and its score at k.
    Facets and entities are found or not (one "first at" column); nuggets and claims show the
    first full and the first partial support."""
    names = support.names[row] if support.names is not None else None
    kk = cutoff_rank(k)
    binary = item in _FOUND_WORDS
    columns = [item, "first at", "score"] if binary else [item, "first full", "first partial",
                                                         "score"]
    if support.vital is not None and not binary:
        columns.insert(1, "vital")
    if weighted:
        columns.insert(-1, "weight")
    rows, num, den = [], 0.0, 0.0
    weights = item_weights(support.valid[row:row + 1],
                           None if support.vital is None else support.vital[row:row + 1],
                           None if support.weight is None else support.weight[row:row + 1])[0]
    for m in np.flatnonzero(support.valid[row]):
        full, partial = int(support.first_full[row, m]), int(support.first_partial[row, m])
        score = 1.0 if full <= kk else (0.5 if partial <= kk and not strict else 0.0)
        counted = not vital_only or support.vital is None or bool(support.vital[row, m])
        w = float(weights[m]) if weighted else 1.0
        cells: list[Any] = [names[int(m)] if names is not None else f"#{m + 1}", _rank_text(full, chunk_ids)]
        if not binary:
            cells.append(_rank_text(partial, chunk_ids) if partial < full else None)
            if support.vital is not None:
                cells.insert(1, bool(support.vital[row, m]))
        if weighted:
            cells.append(w)
        cells.append(score if counted else "not counted")
        rows.append(tuple(cells))
        if counted:
            num += w * score
            den += w
    value = num / den if den > 0 else math.nan
    if binary:
        steps = [f"{measure}: a {item} counts 1 when a chunk in {_k_text(k)} "
                 f"{_FOUND_WORDS[item]}, else 0."]
    else:
        rule = ("full support counts 1, anything less 0" if strict
                else "full support counts 1, partial 0.5, none 0")
        steps = [f"{measure}: a {item} scores by its best support in {_k_text(k)}: {rule}."]
    if vital_only:
        steps.append(f"Only vital {item}s count.")
    if den > 0:
        what = ("sum of weight x score / sum of weights" if weighted
                else f"sum of scores / {item}s counted")
        steps.append(f"{what} = {num:g} / {den:g} = {value:.4f}")
    else:
        steps.append(f"No {item} to count for this query: undefined (left out of the mean).")
    if not rows:
        columns = []
    return RagExplanation(measure, value, tuple(columns), rows, steps)


def explain_attribution(measure: str, citations: Citations, row: int, k: int | None, *,
                        chunk_ids: Sequence[str] | None = None) -> RagExplanation:
    """Why Attribution@k has its value for one query: the cited ranks within the top k."""
    kk = cutoff_rank(k)
    ranks = sorted(int(r) for r in citations.ranks[citations.rows == row])
    shown = int(min(citations.retrieved[row], kk))
    rows = [(r, chunk_ids[r - 1] if chunk_ids is not None and r <= len(chunk_ids) else None,
             r <= kk) for r in ranks]
    steps = []
    elsewhere = 0 if citations.cited_elsewhere is None else int(citations.cited_elsewhere[row])
    if elsewhere:
        steps.append(f"The answer also cites {elsewhere} chunk(s) the run did not retrieve; "
                     "they do not count.")
    if not citations.answered[row]:
        steps.append("The run has no generated answer for this query: undefined.")
        value = math.nan
    elif shown == 0:
        steps.append("The run retrieved nothing for this query: undefined.")
        value = math.nan
    else:
        cited = sum(1 for r in ranks if r <= kk)
        value = cited / shown
        steps.append(f"cited chunks in {_k_text(k)} / chunks retrieved in {_k_text(k)} = "
                     f"{cited} / {shown} = {value:.4f}")
    return RagExplanation(measure, value, ("rank", "cited chunk", f"in {_k_text(k)}"), rows, steps)


def explain_context_precision(relevant: Sequence[bool], n_relevant: int, k: int | None = None,
                              chunk_ids: Sequence[str] | None = None, *,
                              measure: str = "ContextPrecision", ap: bool = False
                              ) -> RagExplanation:
    """AP (what some RAG guides call "Context Precision") and RAGAS Context Precision@k side by
    side on one ranked list: the same sum of precision at each relevant rank, divided by all
    relevant chunks of the query (AP, n_relevant) or by the relevant chunks found in the top k
    (RAGAS). They differ exactly when some relevant chunk is missing from the top k.
    The explanation's value is the RAGAS one, or AP with ``ap=True``."""
    kk = len(relevant) if k is None else min(int(k), len(relevant))
    rows, hits, total = [], 0, 0.0
    for rank in range(1, kk + 1):
        rel = bool(relevant[rank - 1])
        p = None
        if rel:
            hits += 1
            p = hits / rank
            total += p
        rows.append((rank, chunk_ids[rank - 1] if chunk_ids is not None else None, rel, p, total))
    # trec_eval and RAGAS give 0 (not undefined) when there is nothing relevant to find
    ap_value = total / n_relevant if n_relevant > 0 else 0.0
    cp = total / hits if hits > 0 else 0.0
    steps = [
        f"sum of P@rank at the relevant ranks of {_k_text(k)} = {total:.4f}",
        f"AP = sum / relevant chunks of the query = {total:.4f} / {n_relevant}"
        f" = {cell_text(ap_value)}",
        f"ContextPrecision (RAGAS) = sum / relevant chunks found in {_k_text(k)}"
        f" = {total:.4f} / {hits} = {cell_text(cp)}",
    ]
    missed = n_relevant - hits
    if missed > 0:
        steps.append(f"They differ because {missed} relevant chunk(s) are not in {_k_text(k)}: "
                     "AP counts them as found at no rank (precision 0); RAGAS ignores them.")
    else:
        steps.append("Every relevant chunk is in the list, so both divide by the same number.")
    return RagExplanation(measure, ap_value if ap else cp, ("rank", "chunk", "relevant", "P@rank",
                                                            "running sum"), rows, steps)


_ITEM_WORDS = {"Coverage": ("facets", "facet"), "NuggetRecall": ("nuggets", "nugget"),
               "ContextRecall": ("claims", "claim"), "EntityRecall": ("entities", "entity")}


#: measures :func:`explain_in_context` explains
EXPLAINED = (*_ITEM_WORDS, "Attribution", "ContextPrecision", "ContextPrecisionAP", "alpha_nDCG")


def explain_in_context(ctx: Any, query_id: str, measure: Any) -> RagExplanation | None:
    """The step-by-step computation of a RAG measure (or of ``ContextPrecision`` /
    ``ContextPrecisionAP``, side by side) for one query of an evaluation context whose extras
    hold the measure's data. None for a measure this module does not explain."""
    from ragjudge.metrics.registry import parse_measure

    m = parse_measure(measure)
    name = m.definition.name
    from ragjudge.metrics import answers

    if name in answers.EXPLAINED:
        return answers.explain_in_context(ctx, query_id, m)
    if name not in EXPLAINED:
        return None
    ids = ctx.query_ids
    if query_id not in ids:
        raise UsageError(f"query {quote(query_id)} is not among the evaluated queries (is it judged?).")
    row = ids.index(query_id)
    n = int(min(ctx.n_ret[row], ctx.depth))
    chunk_ids = [id_text(c) for c in ctx.chunk_ids[row, :n]]
    if name == "alpha_nDCG":
        from ragjudge.metrics.diversity import explain_alpha_ndcg

        return explain_alpha_ndcg(ctx, row, m, chunk_ids)
    label = str(m)
    if name in _ITEM_WORDS:
        key, word = _ITEM_WORDS[name]
        options: dict[str, Any] = {"strict": True}
        if name == "NuggetRecall":
            options = {"strict": bool(m.get("strict")), "vital_only": bool(m.get("vital")),
                       "weighted": bool(m.get("weighted"))}
        elif name == "ContextRecall":
            options = {"strict": not m.get("partial")}
        return explain_items(label, aligned_extra(ctx, key), row, m.cutoff, chunk_ids=chunk_ids,
                             item=word, **options)
    if name == "Attribution":
        return explain_attribution(label, aligned_extra(ctx, "citations"), row, m.cutoff,
                                   chunk_ids=chunk_ids)
    relevant = ctx.relevant(m.rel)[row, :n].tolist()
    return explain_context_precision(relevant, int(ctx.n_relevant(m.rel)[row]), m.cutoff,
                                     chunk_ids, measure=label, ap=name == "ContextPrecisionAP")


def explain_rag(qrels: Any, run: Any, query_id: str, measure: Any, *,
                extras: Mapping[str, Any] | None = None, threshold: int = 1
                ) -> RagExplanation | None:
    """:func:`explain_in_context` from a qrels, a run and the extras (e.g. from
    ``ragjudge.services.scoring.rag.rag_extras``). None for a measure this module does not explain."""
    from ragjudge.metrics.evaluate import build_context
    from ragjudge.metrics.registry import parse_measure

    ctx = build_context(qrels, run, threshold=threshold, queries=[query_id], extras=extras,
                        measures=[parse_measure(measure)])
    return explain_in_context(ctx, query_id, measure)
