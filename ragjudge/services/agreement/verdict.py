"""Whether the disagreement between annotators changes which run wins: every run scored under
each annotator's labels (and the LLM's), and the order of the runs compared; with a reference,
the reference alone against the gold that includes the team's labels.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
import numpy as np
from ragjudge.metrics.agreement import (
    kendall_tau,
)
from ragjudge.services.agreement.ratings import load_ratings


if TYPE_CHECKING:
    from ragjudge.services.gold.gold import Gold
    from ragjudge.services.project.database import Project


DEFAULT_VERDICT_MEASURES = ("AP", "nDCG@10", "P@5", "RR")


def verdict_stability(
    project: Project,
    *,
    measures: Iterable[str] | None = None,
    rule: str | None = None,
) -> dict:
    """Does disagreement change which run wins? (issue 5 item 4; Voorhees 2000)

    Every run is scored with the gold qrels (adjudications first, then ``rule``, default the
    project's) and once per annotator with *that annotator's* qrels: the gold qrels with the
    annotator's own grade on every pair they judged — so each annotator's opinion is final where
    they gave one, and pairs they never saw keep the gold grade (with an assignment, annotators
    judge different pairs; scoring them on their own pairs only would compare different pools).

    Per measure: Kendall's τ_b between the gold ranking of runs and each annotator's, the
    smallest and mean τ, the largest change of any run's score (which run, under whose qrels),
    and the winning run under each qrels.

    LLM annotators are not among those annotators: each has its own entry under ``llm``, the
    τ_b between the ranking under its qrels alone and under the people's gold qrels, both on
    the queries it judged (as the TREC 2024 RAG track compared UMBRELA's qrels with NIST's).

    With a reference annotator, ``reference`` (:func:`reference_verdict`) compares the runs under
    the reference alone with the gold, which adds the team's labels, and names every order of two
    runs that changes.
    """
    from ragjudge.metrics import Qrels, evaluate_runs, parse_measure
    from ragjudge.services.gold.gold import gold as project_gold
    from ragjudge.services.gold.rules import check_rule
    from ragjudge.services.runs.stored import project_run, project_run_names

    rule = check_rule(project.rule if rule is None else rule)
    names = list(measures) if measures else list(DEFAULT_VERDICT_MEASURES)
    labels = [str(parse_measure(m)) for m in names]
    run_names = project_run_names(project)
    runs = [project_run(project, name) for name in run_names]
    team = project_gold(project, rule, runs=dict(zip(run_names, runs)))
    gold = {(q, c): g for q, c, g in team.triples()}
    ratings = load_ratings(project)
    variants: dict[str, dict[tuple[str, str], int]] = {"gold": gold}
    for j, annotator in enumerate(ratings.annotators):
        mine = dict(gold)
        col = ratings.matrix[:, j]
        for unit, grade in zip(ratings.units, col):
            if not np.isnan(grade):
                mine[unit] = int(grade)
        variants[str(annotator)] = mine
    threshold = project.scale.threshold
    # scores[variant][measure] = array over runs
    scores: dict[str, np.ndarray] = {}
    for variant, judgments in variants.items():
        if not judgments or not runs:
            scores[variant] = np.full((len(labels), len(runs)), np.nan)
            continue
        (q, c), g = zip(*judgments.keys()), list(judgments.values())
        qrels = Qrels(list(q), list(c), np.array(g, dtype=np.int64), top_grade=project.scale.max)
        results = evaluate_runs(qrels, runs, names, threshold=threshold)
        scores[variant] = np.array([[results[r].means[k] for r in run_names]
                                    for k in range(len(labels))])
    annotators = [v for v in variants if v != "gold"]
    out_measures = []
    for k, label in enumerate(labels):
        base = scores["gold"][k]
        taus, tau_undefined = {}, {}
        for a in annotators:
            tau = kendall_tau(base, scores[a][k])
            if tau.value is None:
                tau_undefined[a] = tau.reason
            taus[a] = tau.value
        defined = [t for t in taus.values() if t is not None]
        largest: dict[str, Any] | None = None
        for a in annotators:
            delta = scores[a][k] - base
            if len(delta) and np.isfinite(delta).any():
                i = int(np.nanargmax(np.abs(delta)))
                if largest is None or abs(delta[i]) > abs(largest["delta"]):
                    largest = {"run": run_names[i], "qrels": a, "gold": float(base[i]),
                               "value": float(scores[a][k][i]), "delta": float(delta[i])}
        winners = {v: _winner(scores[v][k], run_names) for v in variants}
        out_measures.append({
            "measure": label,
            "scores": {v: dict(zip(run_names, _floats(scores[v][k]))) for v in variants},
            "tau": taus,
            "tau_undefined": tau_undefined,
            "min_tau": min(defined) if defined else None,
            "mean_tau": float(np.mean(defined)) if defined else None,
            "tau_reason": None if defined else (
                "fewer than two runs" if len(runs) < 2 else
                "no annotator's ranking can be compared" if annotators else "no annotators"),
            "largest_change": largest,
            "winner": winners,
            "winner_changes": len({w for w in winners.values() if w is not None}) > 1,
        })
    return {
        "rule": rule,
        "threshold": threshold,
        "runs": run_names,
        "qrels": list(variants),
        "measures": out_measures,
        "llm": _llm_verdict(project, runs, run_names, names, labels, gold),
        "reference": reference_verdict(project, team, runs, run_names, names, labels),
        "method": "each annotator's qrels = the gold qrels with that annotator's grades on the "
                  "pairs they judged; tau = Kendall's tau-b against the gold ranking of runs",
    }


def _llm_verdict(project: Project, runs: list, run_names: list[str], names: list[str],
                 labels: list[str], gold: dict[tuple[str, str], int]) -> list[dict]:
    """Per LLM annotator and measure: Kendall's τ_b between the run ranking under its qrels
    alone and under the people's gold qrels, on the queries the LLM judged."""
    from ragjudge.metrics import Qrels, evaluate_runs
    from ragjudge.services.events.labels import llm_annotators

    with project.connect() as connection:
        machines = sorted(llm_annotators(connection))
    ratings = load_ratings(project, annotators=machines) if machines else None
    out = []
    for m in machines:
        assert ratings is not None
        if m not in ratings.annotators:
            continue
        col = ratings.matrix[:, ratings.annotator_index(m)]
        mine = {u: int(g) for u, g in zip(ratings.units, col) if not np.isnan(g)}
        queries = {q for q, _ in mine}
        people = {k: g for k, g in gold.items() if k[0] in queries}
        scores = {}
        for key, judged in (("llm", mine), ("human", people)):
            if not judged or not runs:
                scores[key] = np.full((len(labels), len(runs)), np.nan)
                continue
            (q, c), g = zip(*judged.keys()), list(judged.values())
            qrels = Qrels(list(q), list(c), np.array(g, dtype=np.int64), top_grade=project.scale.max)
            results = evaluate_runs(qrels, runs, names, threshold=project.scale.threshold)
            scores[key] = np.array([[results[r].means[k] for r in run_names] for k in range(len(labels))])
        rows = []
        for k, label in enumerate(labels):
            tau = kendall_tau(scores["human"][k], scores["llm"][k])
            rows.append({"measure": label, "tau": tau.value, "tau_reason": tau.reason,
                         "human": dict(zip(run_names, _floats(scores["human"][k]))),
                         "llm": dict(zip(run_names, _floats(scores["llm"][k]))),
                         "winner_human": _winner(scores["human"][k], run_names),
                         "winner_llm": _winner(scores["llm"][k], run_names)})
        out.append({"annotator": m, "queries": len(queries), "pairs": len(mine), "measures": rows})
    return out


def reference_verdict(project: Project, team: Gold, runs: list, run_names: list[str],
                      names: list[str], labels: list[str]) -> dict | None:
    """The reference alone (rule ``reference``) against ``team``, the gold under the project's
    rule, which adds the team's labels on the pairs the reference does not list (and the
    adjudications): per measure each run's score under both, Kendall's τ_b between the two
    rankings of runs, the winner under each, and every order of two runs that changes (a lead
    that turns, or a tie that becomes a lead, or the reverse). None without a reference or when
    the project's rule is the reference alone."""
    from ragjudge.metrics import evaluate_runs
    from ragjudge.services.gold.gold import gold
    from ragjudge.services.gold.rules import REFERENCE_RULE

    composition = team.composition
    if not composition.reference or composition.rule == REFERENCE_RULE:
        return None
    alone = gold(project, REFERENCE_RULE, runs=dict(zip(run_names, runs)))
    added = composition.other_pairs + composition.adjudicated
    gained = f"+{composition.other_pairs:,} pairs" + (
        f", {composition.adjudicated:,} adjudicated" if composition.adjudicated else "")
    scores = {}
    for key, found in (("reference", alone), ("team", team)):
        if not len(found) or not runs:
            scores[key] = np.full((len(labels), len(runs)), np.nan)
            continue
        results = evaluate_runs(found.qrels(), runs, names, threshold=project.scale.threshold)
        scores[key] = np.array([[results[r].means[k] for r in run_names] for k in range(len(labels))])
    rows = []
    for k, label in enumerate(labels):
        before, after = scores["reference"][k], scores["team"][k]
        tau = kendall_tau(before, after)
        rows.append({"measure": label, "tau": tau.value, "tau_reason": tau.reason,
                     "reference_scores": dict(zip(run_names, _floats(before))),
                     "team_scores": dict(zip(run_names, _floats(after))),
                     "winner_reference": _winner(before, run_names),
                     "winner_team": _winner(after, run_names),
                     "changes": _order_changes(label, before, after, run_names, gained)})
    return {"reference": ", ".join(composition.reference), "complete": composition.complete,
            "rule": composition.rule, "added_pairs": added, "gold": composition.to_json(),
            "reference_pairs": len(alone), "measures": rows}


def _order_changes(label: str, before: np.ndarray, after: np.ndarray, run_names: list[str],
                   gained: str) -> list[dict]:
    """Every two runs whose order differs between ``before`` (the reference alone) and
    ``after`` (with the team's labels), each named in a sentence."""
    out = []
    for i in range(len(run_names)):
        for j in range(i + 1, len(run_names)):
            was, now = _order(before[i], before[j]), _order(after[i], after[j])
            if was is None or now is None or was == now:
                continue
            a, b = run_names[i], run_names[j]
            ahead_before = a if was > 0 else b if was < 0 else None
            ahead_after = a if now > 0 else b if now < 0 else None
            behind = b if ahead_before == a else a
            first = (f"{ahead_before} ahead of {behind} under the reference alone" if ahead_before
                     else f"{a} and {b} tied under the reference alone")
            second = (f"{ahead_after} ahead with the team's labels" if ahead_after
                      else "tied with the team's labels")
            out.append({"runs": [a, b], "ahead_reference": ahead_before, "ahead_team": ahead_after,
                        "text": f"{label}: {first}, {second} ({gained})"})
    return out


def _order(x: float, y: float) -> int | None:
    """1 when x is ahead, -1 when y is, 0 for a tie (equal within 1e-12); None when either is
    undefined."""
    if not (np.isfinite(x) and np.isfinite(y)):
        return None
    if abs(x - y) <= 1e-12:
        return 0
    return 1 if x > y else -1


def _floats(values: np.ndarray) -> list[float | None]:
    return [None if not np.isfinite(v) else float(v) for v in values]


def _winner(values: np.ndarray, run_names: list[str]) -> str | None:
    if not len(values) or not np.isfinite(values).any():
        return None
    best = np.nanmax(values)
    tied = [name for name, v in zip(run_names, values) if v == best]
    return tied[0] if len(tied) == 1 else " = ".join(tied)
