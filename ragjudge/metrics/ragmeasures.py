"""The registered RAG measures of labelled facets, nuggets, claims, entities and citations:
Coverage, NuggetRecall, ContextRecall, EntityRecall and Attribution. The registry imports this
module on a lookup of their names (``MEASURE_MODULES``); the computations and their data are in
:mod:`ragjudge.metrics.rag`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics.rag import (
    aligned_extra,
    attribution,
    context_recall,
    coverage,
    entity_recall,
    nugget_recall,
)
from ragjudge.metrics.registry import Measure, Param, measure

if TYPE_CHECKING:
    from ragjudge.metrics.context import EvalContext


_FLAG = lambda doc: Param(bool, False, flag=True, doc=doc)  # noqa: E731


@measure("Coverage", cutoff="optional", needs=("facets",),
         aliases=("CoverageRecall", "Coverage_Recall"))
def _coverage_measure(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Coverage Recall at k: does the top k cover every facet of the query?

    ``Coverage@k = |{facets f : some chunk in the top k covers f}| / |facets of the query|``

    A chunk covers a facet when the annotators' combined judgement says so (the gold rule).
    NaN (undefined, left out of the mean) for a query without facets."""
    return coverage(aligned_extra(ctx, "facets"), m.cutoff)


@measure("NuggetRecall", cutoff="optional", needs=("nuggets",),
         params={"strict": _FLAG("only full support counts (partial counts 0.5 otherwise)"),
                 "vital": _FLAG("vital nuggets only"),
                 "all": _FLAG("every nugget (the default)"),
                 "weighted": _FLAG("each nugget counts with its weight: its own if set, else "
                                   "vital 1, okay 0.5 (TREC 2024)")},
         aliases=("Nugget_Recall",))
def _nugget_recall_measure(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Nugget Recall at k (TREC 2024 RAG Track, Pradeep et al. 2024).

    A nugget's score at k: 1 if a top-k chunk supports it fully, 0.5 if the best support in
    the top k is partial (0 with ``strict``), else 0.
    ``NuggetRecall@k = sum_n w_n score_n / sum_n w_n`` over all nuggets (``all``, the default)
    or the vital ones (``vital``), with w_n = 1, or with ``weighted``: the nugget's own weight
    where one is set, else by importance as TREC 2024 weighs nuggets, vital 1 and okay 0.5.
    The TREC 2024 RAG track's scores, here over the top k chunks: ``(all)`` = All (A),
    ``(strict,all)`` = All strict, ``(vital)`` = Vital (V), ``(strict,vital)`` = Vital strict,
    ``(weighted)`` = Weighted (W), ``(strict,weighted)`` = Weighted strict.
    NaN for a query with no nugget to count."""
    if m.get("vital") and m.get("all"):
        raise UsageError(f"measure {m}: choose vital or all, not both.")
    return nugget_recall(aligned_extra(ctx, "nuggets"), m.cutoff, strict=bool(m.get("strict")),
                         vital_only=bool(m.get("vital")), weighted=bool(m.get("weighted")))


@measure("ContextRecall", cutoff="optional", needs=("claims",),
         params={"partial": _FLAG("partial support counts 0.5")},
         aliases=("Context_Recall",))
def _context_recall_measure(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Context Recall at k (RAGAS's definition, Es et al. 2023; people as the judge).

    ``ContextRecall@k = |{claims of the reference answer fully supported by a top-k chunk}|
    / |claims of the reference answer|`` (``partial``: partial support counts 0.5).
    Claims are the query's nuggets of kind ``claim``. NaN for a query without claims."""
    return context_recall(aligned_extra(ctx, "claims"), m.cutoff, strict=not m.get("partial"))


@measure("EntityRecall", cutoff="optional", needs=("entities",),
         aliases=("ContextEntityRecall", "ContextEntitiesRecall"))
def _entity_recall_measure(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Context Entities Recall at k (RAGAS).

    ``EntityRecall@k = |RE ∩ RCE_k| / |RE|``: RE = the entities of the reference answer,
    RCE_k = those found in the text of a top-k chunk — case- and accent-insensitive on word
    boundaries (Unicode NFKD, combining marks removed, case-folded, white space collapsed; not
    preceded or followed by a letter, digit or underscore). NaN for a query without entities."""
    return entity_recall(aligned_extra(ctx, "entities"), m.cutoff)


@measure("Attribution", cutoff="optional", needs=("citations",),
         aliases=("AttributionRate", "ChunkAttribution"))
def _attribution_measure(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Chunk Attribution Rate at k.

    ``Attribution@k = |{top-k chunks cited by the run's generated answer}| / min(k, retrieved)``
    — the share of the chunks the run put in the top k that its answer uses (e.g. 3 cited
    of 10 retrieved = 0.300). NaN when the run has no answer for the query or retrieved nothing."""
    return attribution(aligned_extra(ctx, "citations"), m.cutoff)
