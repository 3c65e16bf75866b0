"""How settled each comparison of a project's runs is, while its pool is still being judged.

The project's judging pool (per query, the union of every run's top ``depth``, as ``ragjudge
annotate`` pools it) is partly judged. For each measure and pair of runs, :func:`settle_project`
asks :mod:`ragjudge.metrics.settle`, on the project's gold (:func:`ragjudge.services.gold.gold.gold`,
under the project's rule or the one named) and the runs as stored:

- how far the mean difference can still move over every grade the unjudged pool pairs may get
  (``low``, ``high``): when both are on one side of 0 the order is **certain**;
- how likely the current order is to hold under a model of those grades (``p_order``: a prior by
  rank and run learned from the judged pairs, and an LLM annotator's grades calibrated against the
  people's when the project has one): **probable** from the stated confidence;
- about how many more pool pairs, judged in the settle order, make it certain (``judge_more``).

This is about the unjudged pairs of the project's queries only; whether those queries stand for
others is the bootstrap interval's question (``eval --ci``, ``compare``), a separate one.

The same numbers order the judging queue (``--queue-order settle``): :func:`judging_queue` gives
a :class:`~ragjudge.services.labels.queue.JudgingQueue` the weigher :func:`queue_order` (each
open pair's weight on the comparisons of adjacent runs not settled yet; the heaviest tenth
first, shallowest first, then the rest heaviest first: :meth:`Settlement.weights`), which
the queue calls again on a thread of its own as labels arrive; ``--until-settled`` stops judging
once every one of those comparisons is settled.

Runs and labels come in coded once: each stored run's pair hashes (made when the run is read)
serve the pool and every lookup of its ranked chunks; only queries with open pairs are drawn.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics.registry import Measure, parse_measure
from ragjudge.metrics.settle import (
    CONFIDENCE,
    OPEN,
    SAMPLES,
    Comparison,
    LLMGrades,
    Pool,
    Settlement,
    supported,
)
from ragjudge.services.gold.pool import DEFAULT_DEPTH
from ragjudge.safetext import quote

if TYPE_CHECKING:
    from ragjudge.metrics.data import Run
    from ragjudge.services.access.rights import Access
    from ragjudge.services.gold.gold import Composition, Gold
    from ragjudge.services.labels.queue import JudgingQueue
    from ragjudge.services.labels.settleorder import PairOrder
    from ragjudge.services.project.database import Project

PAIRS = ("all", "adjacent")
"""Which pairs of runs ``settled`` compares: every pair (the default), or each run with the
next in each measure's ranking (what decides a ranking; R - 1 pairs a measure)."""

AUTO = "auto"
"""``llm``: the project's LLM annotator with the most grades, if it has one."""

NOTE = (
    "status is about the unjudged pool pairs of these queries only: certain = the bounds over "
    "every grade they may get exclude 0 (no judgment can change the order); tied = no judgment "
    "can separate the runs; probable = p_order >= {confidence:g} under the stated model (a prior "
    "by rank and run from the judged pairs{llm}); open = neither. Whether the queries stand for "
    "others is the bootstrap interval over queries (eval --ci, compare), a separate question."
)

_WHY = {
    "Rprec": "its cutoff is the number of relevant chunks, which every open pair can move",
    "bpref": "it counts judged non-relevant chunks, so judging a pair not relevant moves it too",
    "ERR": "no bounds are worked out for its cascade",
    "ERR_linear": "no bounds are worked out for its cascade",
    "ContextPrecision": "it divides by the relevant chunks found in the top k, which open pairs move",
    "F": "no bounds are worked out for F (a ratio of precision and recall)",
    "F1": "no bounds are worked out for F1 (a ratio of precision and recall)",
    "Judged": "it counts judgments, not relevance: it only grows as pairs are judged",
}


@dataclass(frozen=True)
class Skipped:
    """A measure asked for that cannot be settled, and why."""

    measure: str
    why: str

    def to_json(self) -> dict[str, str]:
        return {"measure": self.measure, "why": self.why}


@dataclass(frozen=True)
class LLMUse:
    """The LLM annotator whose grades sharpen p_order: how many pairs it graded that the gold
    judged (its calibration against the people) and how many open pool pairs it graded."""

    annotator: str
    calibration_pairs: int
    open_pairs: int

    def to_json(self) -> dict[str, Any]:
        return {"annotator": self.annotator, "calibration_pairs": self.calibration_pairs,
                "open_pairs": self.open_pairs}


@dataclass
class Settled:
    """Every comparison asked for, with what it was computed from."""

    comparisons: list[Comparison]
    measures: list[str]
    skipped: list[Skipped]
    runs: list[str]
    depth: int
    pool_pairs: int
    judged_pairs: int
    confidence: float
    pairs: str
    composition: Composition
    llm: LLMUse | None = None
    samples: int = SAMPLES
    seed: int = 0
    stats: dict[str, float] = field(default_factory=dict)

    @property
    def open(self) -> list[Comparison]:
        """The comparisons not settled: neither certain, tied nor probable."""
        return [c for c in self.comparisons if c.status == OPEN]

    @property
    def settled(self) -> bool:
        """Every comparison listed is certain, tied or probable."""
        return not self.open

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(("certain", "probable", "tied", "open"), 0)
        for c in self.comparisons:
            out[c.status] = out.get(c.status, 0) + 1
        return out

    def note(self) -> str:
        llm = "" if self.llm is None else f", {self.llm.annotator}'s grades calibrated against the gold"
        return NOTE.format(confidence=self.confidence, llm=llm)

    def to_json(self) -> dict[str, Any]:
        return {
            "comparisons": [_comparison_json(c) for c in self.comparisons],
            "settled": self.settled,
            "counts": self.counts(),
            "pool_pairs": self.pool_pairs,
            "judged_pairs": self.judged_pairs,
            "depth": self.depth,
            "runs": list(self.runs),
            "measures": list(self.measures),
            "skipped": [s.to_json() for s in self.skipped],
            "pairs": self.pairs,
            "confidence": self.confidence,
            "model": {"prior": "grades by rank bucket and run, from the judged pairs the runs rank",
                      "llm": None if self.llm is None else self.llm.to_json(),
                      "samples": self.samples, "seed": self.seed},
            "gold": self.composition.to_json(),
            "note": self.note(),
        }


def _comparison_json(c: Comparison) -> dict[str, Any]:
    out = c.to_dict()
    if isinstance(out["p_order"], float) and math.isnan(out["p_order"]):
        out["p_order"] = None
    return out


def split_measures(names: Sequence[str | Measure]) -> tuple[list[str], list[Skipped]]:
    """The measures :mod:`ragjudge.metrics.settle` can bound, and the others with why not."""
    kept: list[str] = []
    skipped: list[Skipped] = []
    for name in names:
        measure = parse_measure(name)
        if supported(measure):
            kept.append(str(name))
            continue
        definition = measure.definition
        if definition.needs:
            why = (f"it reads the project's {', '.join(definition.needs)}, not the pool's "
                   "relevance grades")
        else:
            why = _WHY.get(definition.name, "no bounds are worked out for it (settled bounds P, "
                                            "Success, RR, R, AP, nDCG and DCG)")
        skipped.append(Skipped(str(name), why))
    return kept, skipped


def check_settleable(runs: Sequence[str], measures: Sequence[str], skipped: Sequence[Skipped],
                     stored: Sequence[str] = ()) -> None:
    """Two runs at least, and a measure that can be settled, or a :class:`UsageError`
    (``stored``: the project's runs, when ``runs`` is a choice among them)."""
    if len(runs) < 2 and len(stored) >= 2:
        raise UsageError(f"--runs {','.join(runs)}: settling compares runs, two at least; name "
                         f"another (runs: {', '.join(stored)}).")
    if len(runs) < 2:
        have = f"only {quote(runs[0])}" if runs else "none"
        raise UsageError(f"settling compares runs, two at least, and the project has {have}: "
                         "import another with 'ragjudge import run FILE'.")
    if not measures:
        listed = "; ".join(f"{s.measure}: {s.why}" for s in skipped)
        raise UsageError(f"none of the measures can be settled ({listed}). Name one that can: "
                         "P@k, Success@k, RR, R@k, AP, nDCG@k or DCG@k.")


def pick_runs(stored: Sequence[str], wanted: Sequence[str] | None, option: str = "--runs") -> list[str]:
    """The runs to compare: ``wanted`` (checked against the project's) or all of them."""
    if not wanted:
        return list(stored)
    unknown = [r for r in wanted if r not in stored]
    if unknown:
        raise UsageError(f"{option}: the project has no run named {', '.join(map(quote, unknown))} "
                         f"(runs: {', '.join(stored) or 'none'}).")
    return list(dict.fromkeys(wanted))


def settle_project(project: Project, *, access: Access, runs: Sequence[str] | None = None,
                   measures: Sequence[str] | None = None, depth: int = DEFAULT_DEPTH,
                   confidence: float = CONFIDENCE, pairs: str = "all", rule: str | None = None,
                   llm: str | None = AUTO, seed: int = 0, samples: int = SAMPLES) -> Settled:
    """Every comparison of ``runs`` (default: all the project's) under ``measures`` (default:
    the scorecard ``ragjudge eval`` shows; those that cannot be settled are left out, with why)
    on the pool of the project's runs' top ``depth``, as :class:`Settled`. Aggregates: anyone
    may ask, except for a rule of one other annotator's grades in a blind project
    (``access``). ``llm``: an LLM annotator's name, :data:`AUTO` or None (no LLM grades)."""
    from ragjudge.services.gold.gold import gold
    from ragjudge.services.runs.stored import project_run, project_run_names
    from ragjudge.services.scoring.answers import default_measures

    access.require_readable_rule(rule)
    if pairs not in PAIRS:
        raise UsageError(f"--pairs {pairs}: use all or adjacent.")
    stored = project_run_names(project)
    names = pick_runs(stored, runs)
    kept, skipped = split_measures(list(measures) if measures else default_measures(project))
    check_settleable(names, kept, skipped, stored)
    every = {name: project_run(project, name) for name in stored}
    found = gold(project, rule, runs=every)
    use = _llm_grades(project, llm, found)
    pool = Pool.from_runs(every.values(), depth)
    settlement = Settlement(found.qrels(), {n: every[n] for n in names}, pool, kept,
                            threshold=project.scale.threshold, top_grade=project.scale.max,
                            confidence=confidence, seed=seed, samples=samples,
                            llm=None if use is None else use[1], pairs=pairs)
    comparisons = settlement.comparisons()
    layout = settlement.layout
    return Settled(comparisons, kept, skipped, names, depth, len(pool), len(pool) - layout.n_vars,
                   confidence, pairs, found.composition,
                   None if use is None else _llm_use(use[0], use[1], settlement),
                   samples=settlement.samples_used or samples, seed=seed)


def _llm_grades(project: Project, wanted: str | None, found: Gold) -> tuple[str, LLMGrades] | None:
    """The grades of the LLM annotator ``wanted`` (:data:`AUTO`: the one with most grades),
    unless the gold already holds them (a rule naming it, or LLMs let in)."""
    from ragjudge.services.events.labels import llm_annotators, read_labels

    if wanted is None or (wanted == AUTO and found.composition.rule.startswith("annotator:")):
        return None
    with project.connect() as connection:
        machines = sorted(llm_annotators(connection))
        if wanted != AUTO and wanted not in machines:
            raise UsageError(f"--llm {wanted}: no LLM annotator of that name (LLM annotators: "
                             f"{', '.join(machines) or 'none'}; --llm none uses none).")
        if wanted in found.composition.annotators:
            return None  # its grades are the gold's already
        candidates = [wanted] if wanted != AUTO else [m for m in machines
                                                      if m not in found.composition.annotators]
        best: tuple[str, Any] | None = None
        for name in candidates:
            labels = read_labels(connection, annotator=name)
            if len(labels) and (best is None or len(labels) > len(best[1])):
                best = (name, labels)
    if best is None:
        return None
    name, labels = best
    return name, LLMGrades(labels.queries[labels.pair_query[labels.pair]],
                           labels.chunks[labels.pair_chunk[labels.pair]], labels.grade)


def _llm_use(name: str, grades: LLMGrades, settlement: Settlement) -> LLMUse:
    from ragjudge.metrics import _keys

    rows = settlement.layout.locate(_keys.as_ids(grades.query_ids), _keys.as_ids(grades.chunk_ids))
    judged = int(np.count_nonzero((rows >= 0) & (rows < settlement.layout.n_judged)))
    return LLMUse(name, judged, int(np.count_nonzero(rows >= settlement.layout.n_judged)))


# -- the settle order of the judging queue ----------------------------------------------------


def queue_measures(project: Project) -> list[str]:
    """The measures the settle order weighs and ``--until-settled`` waits for: those of the
    evaluation screen (its saved measures, else the scorecard) that can be settled."""
    from ragjudge.services.scoring.live import saved_measures

    return split_measures(saved_measures(project))[0]


def queue_order(project: Project, *, runs: Sequence[str] | None = None, depth: int = DEFAULT_DEPTH,
                measures: Sequence[str] | None = None, confidence: float = CONFIDENCE,
                until_settled: bool = False) -> PairOrder:
    """The settle order of the judging pool: its open pairs (no gold grade yet) with a weight on
    the comparisons of adjacent runs not settled yet, in :meth:`Settlement.weights`' queue order
    (the heaviest tenth shallowest first, then the rest heaviest first; pairs of weight 0 are
    left to the queue's depth order). With ``until_settled`` the comparisons' statuses too (their
    draws cost more): ``settled`` says so once none is open."""
    from ragjudge.services.gold.gold import gold
    from ragjudge.services.labels.settleorder import PairOrder
    from ragjudge.services.runs.stored import project_run, project_run_names

    stored = project_run_names(project)
    names = pick_runs(stored, runs)
    kept = list(measures) if measures is not None else queue_measures(project)
    check_settleable(names, kept, [], stored)
    every = {name: project_run(project, name) for name in stored}
    found = gold(project, runs=every)
    chosen = {n: every[n] for n in names}
    settlement = Settlement(found.qrels(), chosen, Pool.from_runs(chosen.values(), depth), kept,
                            threshold=project.scale.threshold, top_grade=project.scale.max,
                            confidence=confidence, pairs="adjacent")
    weights = settlement.weights()
    heavy = weights.weights > 0
    if not until_settled:
        return PairOrder(weights.query_ids[heavy], weights.chunk_ids[heavy])
    comparisons = settlement.comparisons()
    still = sum(c.status == OPEN for c in comparisons)
    return PairOrder(weights.query_ids[heavy], weights.chunk_ids[heavy],
                     settled=None if still else settled_message(comparisons, confidence),
                     open=still, comparisons=len(comparisons))


def settled_message(comparisons: Sequence[Comparison], confidence: float) -> str:
    """What ``--until-settled`` says when it stops."""
    counts: dict[str, int] = {}
    for c in comparisons:
        counts[c.status] = counts.get(c.status, 0) + 1
    measures = len({c.measure for c in comparisons})
    told = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return (f"Every comparison of adjacent runs is settled ({len(comparisons)} over {measures} "
            f"measure{'s' if measures != 1 else ''}: {told}; probable at {confidence:g}): more "
            "labels would not change the ranking.")


def check_settle_order(project: Project, runs: list[str] | None = None) -> None:
    """That the settle order can weigh the pool: two runs at least (of ``runs``, or of the
    project) and a measure of the evaluation screen that can be settled; a
    :class:`UsageError` saying which is missing otherwise."""
    from ragjudge.services.runs.stored import project_run_names

    stored = project_run_names(project)
    check_settleable(pick_runs(stored, runs), queue_measures(project), [], stored)


def judging_queue(project: Project, annotator: str, *, order: str = "depth",
                  until_settled: bool = False, runs: list[str] | None = None,
                  depth: int = DEFAULT_DEPTH, **options: Any) -> JudgingQueue:
    """An annotator's :class:`~ragjudge.services.labels.queue.JudgingQueue`, with the weigher of
    the settle order (:func:`queue_order`) when ``order='settle'`` or ``until_settled`` asks for
    it: what ``annotate``, ``queue``, ``llm-judge`` and the app open. ``options`` as the queue's."""
    from ragjudge.services.labels.queue import JudgingQueue

    weigher = None
    if order == "settle" or until_settled:
        check_settle_order(project, runs)
        weigher = partial(queue_order, project, runs=runs, depth=depth, until_settled=until_settled)
    return JudgingQueue(project, annotator, order=order, runs=runs, depth=depth, weigher=weigher,
                        until_settled=until_settled, **options)


def screen_settlement(project: Project, runs: Mapping[str, Run], *, rule: str, include_llm: bool,
                      measures: Sequence[str], depth: int = DEFAULT_DEPTH,
                      confidence: float = CONFIDENCE) -> Settled:
    """The evaluation screen's settled column: each comparison of adjacent runs under the
    screen's measures that can be settled, from the runs it holds (every run of the project)."""
    from ragjudge.services.gold.gold import gold

    kept, skipped = split_measures(measures)
    ranked = {name: run for name, run in runs.items() if len(run)}  # not runs of answers only
    names = list(ranked)
    found = gold(project, rule, include_llm=include_llm, runs=runs)
    pool = Pool.from_runs(ranked.values(), depth)
    if len(names) < 2 or not kept:
        return Settled([], kept, skipped, names, depth, len(pool), 0, confidence, "adjacent",
                       found.composition)
    settlement = Settlement(found.qrels(), ranked, pool, kept,
                            threshold=project.scale.threshold, top_grade=project.scale.max,
                            confidence=confidence, pairs="adjacent")
    comparisons = settlement.comparisons()
    return Settled(comparisons, kept, skipped, names, depth, len(pool),
                   len(pool) - settlement.layout.n_vars, confidence, "adjacent", found.composition,
                   samples=settlement.samples_used)
