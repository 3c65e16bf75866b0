"""ragjudge.metrics: retrieval measures over numpy matrices (numpy is the only dependency).

A library in its own right: importing it does not import textual, sqlalchemy or pydantic, and
its submodules load on first use.

Data (built once, shared by every measure)::

    Qrels(query_ids, chunk_ids, grades)      # arrays; negative grade = unjudged
    Qrels.from_dict({qid: {chunk_id: grade}}); Qrels.from_trec(path_or_text)   # gz ok
    Run(query_ids, chunk_ids, scores, name=None)   # order: score desc, chunk id desc (trec_eval)
    Run.from_ranked({qid: [chunk_id, ...]})        # lists keep their order
    Run.from_dict({qid: {chunk_id: score}}); Run.from_trec(path_or_text, name=None)
    read_qrels_arrays(src) / read_run_arrays(src)  # bulk TREC parsing into numpy columns

Measures, by name in ir_measures' syntax (``P@5``, ``P(rel=2)@5``, ``nDCG@10``, ``MRR``,
``F(beta=2)@10``, ``iprec@0.5``; trec_eval's ``ndcg_cut_10`` too)::

    parse_measure("nDCG@10") -> Measure;   known_measures() -> [MeasureDef, ...]
    @measure("Name", cutoff=..., params=..., needs=...) def kernel(ctx, m): ...   # to add one

Evaluation::

    result = evaluate(qrels, run, ["P@5", "AP", "nDCG@10"], threshold=1, queries="judged")
    result.aggregate()       # {"P@5": 0.41, ...}   (result.averaging says over which queries)
    result.per_query()       # {qid: {"P@5": ..., ...}};  result.values: (queries x measures)
    evaluate_runs(qrels, [run_a, run_b], measures)   # qrels work shared; {name: EvalResult}
    build_context(qrels, run, ...) -> EvalContext         # the rank matrices, for custom kernels

Curves and explanations::

    metric_at_k(qrels, run, "nDCG", ks=range(1, 21)) -> Curve     # any @k measure, K = 1..N
    pr_curve(qrels, run) -> Curve                                # 11-point interpolated P-R
    explain(qrels, run, query_id, "AP") -> Explanation           # .steps, .value, .render()

Sampled judgments (``metrics/sampled.py``, ``metrics/prels.py``)::

    evaluate(qrels, run, ["infAP"])                     # trec_eval's: negative grade = unsampled
    qrels, sample = read_prels(path, "strata")          # or "probability" (Million Query prels)
    evaluate(qrels, run, ["statAP", "xinfAP", "infNDCG", "infP@10"], extras={"sample": sample})
    draw_sample(query_ids, chunk_ids, ranks, size=50, strategy="stratified", seed=0) -> PoolSample

Significance (per-query values as (measures x queries) matrices; ``b - a`` throughout)::

    significance: paired_t_test, randomization_test, wilcoxon_test, paired_bootstrap_ci,
                  cohens_dz, rank_biserial, compare_runs (a baseline against each run)
    corrections.correct(pvalues, "none" | "bonferroni" | "holm" | "bh")
    allpairs.compare_all_pairs(per_query, measures, test="fisher" | "t" | "wilcoxon" | "tukey")
        -> AllPairsComparison (.pairs, .matrix(measure), .beats(measure), .describe())
    distributions: studentized_range_sf / _cdf / _ppf, normal_sf, signed_rank_null

Errors: bad input raises ``ragjudge.errors.InputError`` (file, line, field), an unknown measure
or impossible option ``ragjudge.errors.UsageError``.
"""

from __future__ import annotations

import importlib
from typing import Any

# ``evaluate`` and ``explain`` are both a submodule and a function. Importing a submodule sets
# the package attribute of that name to the module, so these two are bound here, once, to the
# functions (the modules stay importable as ``ragjudge.metrics.evaluate`` / ``.explain``).
from ragjudge.metrics.evaluate import (
    EvalResult,
    build_context,
    evaluate,
    evaluate_runs,
)
from ragjudge.metrics.explain import ExplainStep, Explanation, explain

__all__ = [
    "Qrels",
    "Run",
    "read_qrels_arrays",
    "read_run_arrays",
    "Measure",
    "MeasureDef",
    "Param",
    "measure",
    "register",
    "parse_measure",
    "parse_measures",
    "known_measures",
    "known_names",
    "EvalContext",
    "EvalResult",
    "evaluate",
    "evaluate_runs",
    "build_context",
    "Curve",
    "metric_at_k",
    "pr_curve",
    "Explanation",
    "ExplainStep",
    "explain",
    "PoolSample",
    "draw_sample",
    "read_prels",
]

_WHERE = {
    "Qrels": "data",
    "Run": "data",
    "read_qrels_arrays": "trec",
    "read_run_arrays": "trec",
    "Measure": "registry",
    "MeasureDef": "registry",
    "Param": "registry",
    "measure": "registry",
    "register": "registry",
    "parse_measure": "registry",
    "parse_measures": "registry",
    "known_measures": "registry",
    "known_names": "registry",
    "EvalContext": "context",
    "EvalResult": "evaluate",
    "evaluate": "evaluate",
    "evaluate_runs": "evaluate",
    "build_context": "evaluate",
    "Curve": "curves",
    "metric_at_k": "curves",
    "pr_curve": "curves",
    "Explanation": "explain",
    "ExplainStep": "explain",
    "explain": "explain",
    "PoolSample": "sampled",
    "draw_sample": "sampled",
    "read_prels": "prels",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'ragjudge.metrics' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ragjudge.metrics.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
