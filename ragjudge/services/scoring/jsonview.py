"""An evaluation as JSON: what ``ragjudge eval --format json`` prints and what the web API's
``/api/v1/eval`` answers, written once for both."""

from __future__ import annotations

from typing import Any


def gold_json(composition: Any) -> dict[str, Any] | None:
    """``"gold"`` of a JSON output: what the project's gold is made of (null for a qrels file)."""
    return None if composition is None else composition.to_json()


def closed_json(closed: tuple[int, int] | None) -> dict[str, int] | None:
    """``"closed_world"`` of a JSON output with ``--complete``: the file's queries closed and the
    unlisted pairs the runs retrieve there, judged 0."""
    return None if closed is None else {"queries": closed[0], "implied_pairs": closed[1]}


def evaluation_block(evaluation: Any, per_query: bool, ci: bool, stratum: str | None) -> dict[str, Any]:
    """One stratum (None: all queries) of an evaluation: each run's means, the queries left
    out and why, the intervals (``ci``) and the per-query values (``per_query``)."""
    runs: dict[str, Any] = {}
    for name in evaluation.run_names:
        entry: dict[str, Any] = {"aggregate": evaluation.aggregate(name, stratum)}
        if evaluation.queries_mode == "run":  # each run is averaged over its own queries
            entry["queries"] = evaluation.n_queries(stratum, run=name)
        left_out = undefined_counts(evaluation, name, stratum)
        if left_out:
            entry["undefined"] = left_out
        why = evaluation.left_out.get(name, {})
        if stratum is not None:
            wanted = set(evaluation.strata[stratum])
            why = {m: {q: r for q, r in reasons.items() if q in wanted} for m, reasons in why.items()}
        if any(why.values()):  # each query left out, with why (the measures that can say)
            entry["left_out"] = {m: reasons for m, reasons in why.items() if reasons}
        if ci:
            entry["ci95"] = {m: [low, high] for m, (_, low, high)
                             in evaluation.intervals(name, stratum=stratum).items()}
        if per_query:
            entry["per_query"] = evaluation.per_query(name, stratum)
        runs[name] = entry
    return {"queries": evaluation.n_queries(stratum), "runs": runs}


def undefined_counts(evaluation: Any, run: str, stratum: str | None) -> dict[str, int]:
    """Per measure, the queries left out of the mean because it is undefined there (a query
    with no facets for Coverage, no nuggets for NuggetRecall, ...)."""
    result = evaluation.results[run]
    if stratum is not None:
        result = result.subset(evaluation.strata[stratum])
    return {m: n for m, n in result.undefined().items() if n}


def evaluation_json(evaluation: Any, per_query: bool, ci: bool,
                    closed: tuple[int, int] | None = None) -> dict[str, Any]:
    """The whole evaluation: its measures, averaging, gold rule and composition, every run, and
    each stratum's block when it is stratified."""
    overall = evaluation_block(evaluation, per_query, ci, None)
    data: dict[str, Any] = {
        "measures": evaluation.measures,
        "queries": overall["queries"],
        "runs": overall["runs"],
        "averaging": evaluation.averaging,
        "threshold": evaluation.threshold,
        "rule": evaluation.rule,
        "qrels": evaluation.qrels_source,
        "gold": gold_json(evaluation.composition),
    }
    if closed is not None:
        data["closed_world"] = closed_json(closed)
    if evaluation.sample is not None:
        data["sample"] = {k: v for k, v in evaluation.sample.items() if k != "text"}
    if evaluation.hidden or evaluation.hidden_strata:
        # blind: which queries' own values (and strata of one of them) this reader is not shown
        data["hidden"] = {"queries": evaluation.hidden_in(), "strata": list(evaluation.hidden_strata)}
    if evaluation.by is not None:
        data["by"] = evaluation.by
        data["strata"] = {s: evaluation_block(evaluation, per_query, ci, s) for s in evaluation.strata}
    return data
