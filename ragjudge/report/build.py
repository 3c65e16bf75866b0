"""Everything a report shows, gathered from the services the command line uses.

:func:`build_report` evaluates a project's runs exactly as ``ragjudge eval --db`` does (the gold
of :func:`ragjudge.services.gold.gold.gold`, :func:`~ragjudge.services.scoring.evaluation.
evaluate_all` on the runs read from their stored arrays), so every number equals ``eval
--format json``'s under the same options; the intervals are ``eval --ci``'s
(:meth:`~ragjudge.services.scoring.evaluation.Evaluation.intervals`), the ranges over
annotators the evaluation screen's (:class:`~ragjudge.services.scoring.live.LiveEvaluation`),
the curves ``eval --curve``'s, the comparison :func:`~ragjudge.services.scoring.comparisons.
compare_all`, the agreement ``ragjudge agree``'s. What the viewer may not see (an annotator
who is not a lead, in a blind project) is left out here, before anything is rendered, and the
:class:`Report` says what and why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ragjudge.errors import UsageError
from ragjudge.numeric import MAX_GRADE, short_int
from ragjudge.report.natural import natural_key, natural_sorted

if TYPE_CHECKING:
    from ragjudge.metrics.allpairs import AllPairsComparison
    from ragjudge.metrics.data import Qrels, Run
    from ragjudge.metrics.settle import Comparison
    from ragjudge.services.access.visibility import Access
    from ragjudge.services.agreement.views import AgreementView
    from ragjudge.services.gold.gold import Composition
    from ragjudge.services.project.database import Project
    from ragjudge.services.scoring.evaluation import Evaluation
    from ragjudge.services.scoring.provenance import LabelSnapshot

Progress = Callable[..., None] | None

PER_QUERY = ("measure", "run", "both", "none")
"""How per-query tables are laid out: one per measure (queries x runs), one per run (queries x
measures), both, or none."""

DEFAULT_CURVES = ("P", "R", "nDCG")
DEFAULT_K = tuple(range(1, 21))
DEFAULT_STRATA = "category"
"""Strata by the queries' category when some query has one (``strata="none"``: no strata)."""
INTERVAL_RESAMPLES = 2_000
"""The bootstrap resamples of a mean's interval: ``eval --ci``'s, with its seed 0."""


@dataclass(frozen=True)
class ReportOptions:
    """What a report covers, as ``ragjudge report``'s options give it."""

    runs: tuple[str, ...] = ()
    """the project's runs to report (empty: all of them, in name order)"""
    measures: tuple[str, ...] = ()
    """measure names (empty: ``eval``'s defaults)"""
    rule: str | None = None
    threshold: int | None = None
    averaging: str = "judged"
    strata: str = DEFAULT_STRATA
    """a query field (``category`` or a meta key), or ``none``"""
    per_query: str = "measure"
    curves: tuple[str, ...] = DEFAULT_CURVES
    k: tuple[int, ...] = DEFAULT_K
    pr: bool = True
    test: str = "fisher"
    correction: str | None = None
    alpha: float = 0.05
    resamples: int = 10_000
    permutations: int = 10_000
    seed: int = 0
    disputes: int = 50
    """disputed pairs to list (0: none)"""
    settled: bool = True
    """whether to work out how settled each comparison is while the pool is being judged
    (``ragjudge settled``'s numbers, every pair of the runs on the measures it can bound)"""


@dataclass(frozen=True)
class Ranges:
    """The evaluation screen's range of each mean over the annotators (see
    :meth:`ragjudge.services.scoring.live.LiveEvaluation.snapshot`)."""

    values: dict[str, dict[str, tuple[float, float]]]
    """run -> measure -> (min, max)"""
    ends: dict[str, dict[str, tuple[str, str]]]
    """run -> measure -> (who sets the minimum, who sets the maximum)"""
    coverage: dict[str, float]
    min_coverage: float
    in_ranges: list[str]
    too_few: list[str]


@dataclass(frozen=True)
class CurveData:
    """One plot: ``x`` (K, or the recall levels) and each run's mean curve."""

    measure: str
    """the @k measure's family (``nDCG``), or ``PR``"""
    x_label: str
    x: list[float]
    y: dict[str, list[float]]
    queries: int
    averaging: str
    area: dict[str, float] = field(default_factory=dict)
    """PR only: each run's trapezoidal area under its mean curve (mean AUC_PR)"""


@dataclass(frozen=True)
class Stratum:
    name: str
    queries: int
    means: dict[str, dict[str, float]]
    """run -> measure -> mean over the stratum's queries"""


@dataclass(frozen=True)
class QueryInfo:
    id: str
    text: str
    category: str | None
    order: int
    """its place in the natural order of the ids (the sort key of the table)"""


@dataclass(frozen=True)
class PerQuery:
    layout: str
    """``measure``, ``run`` or ``both`` (:data:`PER_QUERY`)"""
    queries: list[QueryInfo]
    """in natural order of their ids"""
    values: dict[str, dict[str, dict[str, float]]]
    """run -> query -> measure -> value (NaN: undefined)"""


@dataclass
class Report:
    """A report's content: numbers and texts as they came from the services (not escaped:
    each renderer escapes for its own format)."""

    project_name: str
    shown_db: str
    made_at: datetime
    command: str
    version: str
    viewer: str
    role: str
    """``lead``, ``annotator`` or ``unknown``"""
    blind: bool
    sees_all: bool
    options: ReportOptions
    evaluation: Evaluation
    gold: Composition
    aggregates: dict[str, dict[str, float]]
    intervals: dict[str, dict[str, tuple[float, float]]]
    interval_queries: dict[str, dict[str, int]]
    """run -> measure -> queries where the measure is defined (the interval's sample)"""
    ranges: Ranges | None
    undefined: dict[str, dict[str, int]]
    """run -> measure -> queries left out of its mean (undefined there)"""
    undefined_why: dict[str, dict[str, str]]
    """run -> measure -> which queries were left out and why, where the evaluation can say
    (``q2, q3: the run has no answer``), else ''"""
    curves: list[CurveData]
    strata: list[Stratum]
    strata_field: str | None
    per_query: PerQuery | None
    comparison: AllPairsComparison | None
    agreement: AgreementView | None
    disputes: list[dict] | None
    """the disputed pairs listed (None: left out for this viewer, or none asked for)"""
    disputes_total: int
    run_digests: dict[str, str]
    labels: LabelSnapshot
    settled: list[Comparison] | None = None
    settled_note: str = ""
    """what the settled statuses mean and the model behind ``p_order`` (``ragjudge settled``'s note)"""
    left_out: list[str] = field(default_factory=list)
    """sentences: what this viewer's report leaves out, and why"""
    notes: list[str] = field(default_factory=list)
    """sentences: what else a reader should know (ranges not drawn, labels that arrived...)"""

    @property
    def run_names(self) -> list[str]:
        return self.evaluation.run_names

    @property
    def measures(self) -> list[str]:
        return self.evaluation.measures


# -- checks ------------------------------------------------------------------------------------


def check_options(project: Project, options: ReportOptions) -> tuple[list[str], int]:
    """The measures and the threshold, after every option is checked (one paragraph for the
    first wrong one; nothing is computed before)."""
    from ragjudge.metrics.registry import parse_measure
    from ragjudge.services.scoring.comparisons import check_options as check_comparison
    from ragjudge.services.scoring.files import parse_measure_list

    if options.measures:
        measures = parse_measure_list(list(options.measures))
    else:  # the project's scorecard, as eval's: the answer measures once answers are judged
        from ragjudge.services.scoring.answers import default_measures

        measures = default_measures(project)
    if options.averaging not in ("judged", "run"):
        raise UsageError(f"--averaging {options.averaging}: use judged or run.")
    if options.per_query not in PER_QUERY:
        raise UsageError(f"--per-query {options.per_query}: use {', '.join(PER_QUERY[:-1])} or "
                         f"{PER_QUERY[-1]}.")
    if options.disputes < 0:
        raise UsageError(f"--disputes {options.disputes}: give how many disputed pairs to list, "
                         "0 for none.")
    check_comparison(options.test, options.correction, options.alpha, options.resamples,
                     options.permutations, options.seed)
    for base in options.curves:
        curve_measure(base, options.k)
    scale = project.scale
    threshold = scale.threshold if options.threshold is None else options.threshold
    if not 0 <= threshold <= MAX_GRADE:
        raise UsageError(f"--threshold {short_int(threshold)}: a grade threshold is a grade from 0 "
                         f"to {MAX_GRADE:,}.")
    if threshold > scale.max:
        raise UsageError(f"--threshold {threshold} is above the project's top grade "
                         f"({scale.describe()}): nothing could count as relevant.")
    for name in measures:
        rel = dict(parse_measure(name).params).get("rel")
        if rel is not None and rel > scale.max:
            raise UsageError(f"-m {name}: rel={rel} is above the project's top grade "
                             f"({scale.describe()}): nothing could count as relevant.")
    return measures, threshold


def curve_measure(base: str, ks: Sequence[int]) -> Any:
    """The measure a Metric@K curve of family ``base`` starts from, checked as ``eval --curve``
    checks it."""
    from ragjudge.metrics.registry import parse_measure

    family = base.strip().split("@", 1)[0]
    if not ks:
        raise UsageError("--k gives no cutoff: give a range 1-20, a list 1,3,5,10 or a largest K.")
    try:
        probe = parse_measure(f"{family}@{ks[0]}")
    except UsageError as exc:
        raise UsageError(f"--curve {base}: {str(exc).rstrip('.')}; curves are drawn for @k "
                         "measures (P, R, nDCG, Success, ...).") from None
    if probe.definition.cutoff_kind is not int:
        raise UsageError(f"--curve {base}: {probe.definition.name} takes no @k cutoff; curves are "
                         "drawn for @k measures (P, R, nDCG, Success, ...); the precision-recall "
                         "curve is drawn unless --no-pr.")
    return probe


# -- gathering ---------------------------------------------------------------------------------


def build_report(project: Project, options: ReportOptions, *, access: Access, command: str = "",
                 progress: Progress = None, settled: Sequence[Any] | None = None) -> Report:
    """The report of ``project`` under ``options`` as ``access`` may see it. ``command`` is the
    command line that made it (shown, its database password masked by the caller);
    ``settled``: the comparisons of ``ragjudge settled`` (:mod:`ragjudge.report.settled`), shown
    when given."""
    import ragjudge
    from ragjudge.services.scoring import provenance
    from ragjudge.services.scoring.evaluation import evaluate_all, project_gold

    measures, threshold = check_options(project, options)
    rule_of = options.rule.split(":", 1)[1] if options.rule and options.rule.startswith("annotator:") else None
    if rule_of is not None and rule_of != access.name:
        access.require_sees_all(f"make a report with {rule_of}'s grades as the gold")
    before = provenance.newest_ids(project)
    found = project_gold(project, options.rule)
    qrels, rule = found.qrels(), found.composition.rule
    runs = _read_runs(project, options.runs, progress)
    strata_field, strata = _strata(project, options.strata)
    evaluation = evaluate_all(
        qrels, runs, measures, threshold=threshold, queries=options.averaging, project=project,
        rule=rule, qrels_source=f"project {project.shown_db}", strata=strata, by=strata_field,
        progress=progress, composition=found.composition, reader=access)
    _step(progress, "intervals")
    intervals, sizes = _intervals(evaluation)
    report = Report(
        project_name=project.name, shown_db=project.shown_db, made_at=datetime.now(UTC),
        command=command, version=ragjudge.__version__, viewer=str(access.identity),
        role="lead" if access.lead else ("annotator" if access.identity.known else "unknown"),
        blind=access.blind, sees_all=access.sees_all, options=options, evaluation=evaluation,
        gold=found.composition, aggregates={n: evaluation.aggregate(n) for n in evaluation.run_names},
        intervals=intervals, interval_queries=sizes, ranges=None,
        undefined={n: {m: k for m, k in evaluation.results[n].undefined().items() if k}
                   for n in evaluation.run_names},
        undefined_why={n: {m: left_out_text(why) for m, why in evaluation.left_out.get(n, {}).items()}
                       for n in evaluation.run_names},
        curves=[], strata=[], strata_field=strata_field, per_query=None, comparison=None,
        agreement=None, disputes=None, disputes_total=0, run_digests={},
        labels=provenance.LabelSnapshot("", {}, {}),
    )
    _step(progress, "ranges over annotators")
    report.ranges = _ranges(project, report, rule, threshold)
    _step(progress, "curves")
    report.curves = _curves(project, qrels, runs, report, rule, threshold)
    report.strata = _strata_means(evaluation, report)
    report.per_query = _per_query(project, evaluation, report)
    if len(evaluation.run_names) > 1:
        _step(progress, "comparing every pair of runs")
        from ragjudge.services.scoring.comparisons import compare_all

        report.comparison = compare_all(
            evaluation, test=options.test, correction=options.correction, alpha=options.alpha,
            resamples=options.resamples, permutations=options.permutations, seed=options.seed)
        _runs_left_out(report)
        if settled is None and options.settled:
            _step(progress, "how settled each comparison is")
            _settle(project, report, measures, access)
    _step(progress, "agreement")
    _agreement(project, report, access)
    _step(progress, "digests")
    report.run_digests = provenance.run_digests(project, evaluation.run_names)
    report.labels = provenance.label_snapshot(project, before, progress=progress)
    _moved(before, provenance.newest_ids(project), report)
    if settled is not None:
        add_settled(report, settled)
    return report


def add_settled(report: Report, comparisons: Iterable[Any]) -> Report:
    """The hook for ``ragjudge settled``: attach its comparisons (:mod:`ragjudge.report.settled`)
    to ``report``, whose HTML and Markdown then have the section "How settled each comparison
    is" (without it, neither has a trace of the section)."""
    from ragjudge.report.settled import settled_rows

    report.settled = settled_rows(comparisons)
    return report


def _settle(project: Project, report: Report, measures: list[str], access: Access) -> None:
    """How settled each comparison of the report's runs is, as ``ragjudge settled --runs ...
    -m ...`` says under the report's gold rule: every pair on each measure it can bound; the
    others are named, with why, in a note."""
    from ragjudge.services.scoring.settled import settle_project

    try:
        found = settle_project(project, access=access, runs=report.run_names, measures=measures,
                               rule=report.options.rule, seed=report.options.seed)
    except UsageError as exc:
        report.notes.append(f"How settled each comparison is: not worked out: {exc}")
        return
    add_settled(report, found.comparisons)
    report.settled_note = found.note()
    if found.skipped:
        report.notes.append("Not settled (no bounds worked out): " + "; ".join(
            f"{s.measure}: {s.why}" for s in found.skipped) + ".")


def _step(progress: Progress, what: str) -> None:
    if progress is not None:
        progress(0, None, what, "steps")


def _read_runs(project: Project, names: Sequence[str], progress: Progress) -> dict[str, Run]:
    from ragjudge.services.runs.stored import project_run, project_run_names

    stored = project_run_names(project)
    if not stored:
        raise UsageError("the project has no runs yet: import one with 'ragjudge import run FILE' "
                         "before making a report.")
    wanted = list(dict.fromkeys(names)) or stored
    unknown = [n for n in wanted if n not in stored]
    if unknown:
        raise UsageError(f"--run {unknown[0]}: the project has no run of that name. Its runs: "
                         f"{', '.join(stored)}.")
    runs = {}
    for done, name in enumerate(wanted):
        if progress is not None:
            progress(done, len(wanted), "reading runs", "runs")
        runs[name] = project_run(project, name)
    if progress is not None:
        progress(len(wanted), len(wanted), "reading runs", "runs")
    return runs


def _strata(project: Project, field_name: str) -> tuple[str | None, dict[str, str] | None]:
    """The field and ``{query: stratum}``; by default the category, when some query has one."""
    from ragjudge.services.scoring.evaluation import project_strata

    if field_name == "none":
        return None, None
    try:
        return field_name, project_strata(project, field_name)
    except UsageError:
        if field_name == DEFAULT_STRATA:  # not asked for: no query has a category
            return None, None
        raise


def _intervals(evaluation: Evaluation) -> tuple[dict, dict]:
    import numpy as np

    intervals, sizes = {}, {}
    for name in evaluation.run_names:
        found = evaluation.intervals(name, resamples=INTERVAL_RESAMPLES, seed=0)
        intervals[name] = {m: (low, high) for m, (_, low, high) in found.items()}
        values = evaluation.results[name].values
        sizes[name] = {m: int((~np.isnan(values[:, j])).sum()) for j, m in enumerate(evaluation.measures)}
    return intervals, sizes


def _ranges(project: Project, report: Report, rule: str, threshold: int) -> Ranges | None:
    """The evaluation screen's ranges over annotators (averaging over the judged queries only:
    the screen has no other)."""
    from ragjudge.services.scoring.live import LiveEvaluation

    if report.evaluation.queries_mode != "judged":
        report.notes.append("The ranges over annotators are the evaluation screen's, which "
                            "averages over every judged query; with --averaging run they are "
                            "left out.")
        return None
    engine = LiveEvaluation(project, measures=report.measures, rule=rule, threshold=threshold)
    engine.load()
    snap = engine.snapshot()
    names = report.run_names
    return Ranges(values={n: dict(snap.ranges.get(n, {})) for n in names},
                  ends={n: dict(snap.range_ends.get(n, {})) for n in names},
                  coverage=dict(snap.coverage), min_coverage=snap.min_coverage,
                  in_ranges=snap.in_ranges, too_few=snap.too_few)


def _curves(project: Project, qrels: Qrels, runs: dict[str, Run], report: Report, rule: str,
            threshold: int) -> list[CurveData]:
    """``eval --curve FAMILY --k K`` for each family, and ``eval --curve PR``."""
    from ragjudge.metrics.curves import metric_at_k, pr_curve
    from ragjudge.services.scoring.evaluation import project_extras

    options, mode = report.options, report.evaluation.queries_mode
    out = []
    for base in dict.fromkeys(options.curves):
        probe = curve_measure(base, options.k)
        curves = {}
        for name, run in runs.items():
            extras = project_extras(project, name, qrels, run, [probe], threshold, mode, rule)
            curves[name] = metric_at_k(qrels, run, probe, list(options.k), threshold=threshold,
                                       queries=mode, extras=extras)
        first = next(iter(curves.values()))
        out.append(CurveData(measure=base.strip().split("@", 1)[0],
                             x_label="k", x=[int(x) for x in first.x.tolist()],
                             y={n: c.y.tolist() for n, c in curves.items()},
                             queries=len(first.query_ids), averaging=first.averaging))
    if options.pr:
        curves = {name: pr_curve(qrels, run, threshold=threshold, queries=mode)
                  for name, run in runs.items()}
        first = next(iter(curves.values()))
        out.append(CurveData(measure="PR", x_label="recall", x=[float(x) for x in first.x.tolist()],
                             y={n: c.y.tolist() for n, c in curves.items()},
                             queries=len(first.query_ids), averaging=first.averaging,
                             area={n: c.area for n, c in curves.items()}))
    return out


def _strata_means(evaluation: Evaluation, report: Report) -> list[Stratum]:
    """Each stratum's means (``eval --by``'s blocks). A stratum of one query is one query's
    values: left out for a viewer who may not see that query's values (:func:`hide_for`)."""
    out = [Stratum(name, len(qids), {n: evaluation.aggregate(n, name) for n in evaluation.run_names})
           for name, qids in evaluation.strata.items()]
    hidden = evaluation.hidden_strata
    if hidden:
        report.left_out.append(
            f"{len(hidden)} {'stratum' if len(hidden) == 1 else 'strata'} of a single query "
            f"({_listed(hidden)}): a stratum of one query shows that query's values, which this "
            "report leaves out (see the per-query tables).")
    return sorted(out, key=lambda s: (s.name == "(none)", natural_key(s.name)))


def _per_query(project: Project, evaluation: Evaluation, report: Report) -> PerQuery | None:
    from ragjudge.services.labels.texts import query_texts

    layout = report.options.per_query
    if layout == "none":
        return None
    hidden = evaluation.hidden_in()
    if hidden:
        report.left_out.append(
            f"{len(hidden):,} of the {len(evaluation.query_ids):,} queries in the per-query tables "
            f"({_listed(hidden)}): in this blind project {report.viewer} is not a lead and has not "
            "judged every pair of their gold, and a query's value can tell the gold grade of a "
            "single pair (P@1 is the grade of the run's first chunk). A lead's report has them.")
    texts = query_texts(project)
    ids = natural_sorted(dict.fromkeys(q for n in evaluation.run_names
                                       for q in evaluation.results[n].query_ids
                                       if q not in evaluation.hidden))
    if not ids:
        return None
    queries = []
    for order, qid in enumerate(ids):
        known = texts.get(qid)
        queries.append(QueryInfo(qid, known.text if known else "", known.category if known else None,
                                 order))
    values = {n: evaluation.per_query(n) for n in evaluation.run_names}
    return PerQuery(layout, queries, values)


def _runs_left_out(report: Report) -> None:
    """Say which runs a measure's comparisons leave out (undefined on every query)."""
    comparison = report.comparison
    if comparison is None:
        return
    missing: dict[tuple[str, ...], list[str]] = {}
    for measure in report.measures:
        compared = {r for p in comparison.for_measure(measure) for r in (p.run_a, p.run_b)}
        gone = tuple(n for n in report.run_names if n not in compared)
        if gone:
            missing.setdefault(gone, []).append(measure)
    for gone, measures in missing.items():
        report.notes.append(
            f"{_listed(list(gone))} {'is' if len(gone) == 1 else 'are'} left out of the comparisons "
            f"on {_listed(measures, 8)}: undefined on every query there (a run without answers has "
            "no answer measure); the p-values are corrected over the remaining pairs.")


def _agreement(project: Project, report: Report, access: Access) -> None:
    from ragjudge.services.agreement.views import adjudicated_grades, project_agreement

    view = project_agreement(project, access=access)
    if not view.report.units:
        report.notes.append("Agreement: no pair has labels yet.")
        return
    report.agreement = view
    report.disputes_total = len(view.report.disputed)
    if not report.disputes_total or not report.options.disputes:
        return
    if not report.sees_all:
        report.left_out.append(
            f"Disputed pairs {report.viewer} has not judged: they list each annotator's grade of a "
            "pair, which in this blind project only a lead, or who judged the pair, may see.")
    decided = adjudicated_grades(project)
    rows = []
    for d in view.report.disputed[:report.options.disputes]:
        rows.append({"query_id": d.unit[0], "chunk_id": d.unit[1], "spread": d.spread,
                     "n_ratings": d.n_ratings, "grades": dict(d.grades),
                     "adjudicated": decided.get(d.unit)})
    report.disputes = rows


def _moved(before: dict[str, int | None], after: dict[str, int | None], report: Report) -> None:
    """Say so when label events arrived while the report was made."""
    arrived = {t: (before.get(t) or 0, n or 0) for t, n in after.items() if (n or 0) > (before.get(t) or 0)}
    if arrived:
        listed = "; ".join(f"{t} ids {a + 1} to {b}" for t, (a, b) in arrived.items())
        report.notes.append(
            f"Labels arrived while this report was made ({listed}): the numbers may count some of "
            "them, the label digest does not. Make the report again for one snapshot.")


def left_out_text(reasons: dict[str, str], shown: int = 8) -> str:
    """``{query: why}`` grouped by reason: ``q2, q3: the run has no answer; q9: ...``, at most
    ``shown`` queries named per reason."""
    grouped: dict[str, list[str]] = {}
    for query in natural_sorted(reasons):
        grouped.setdefault(reasons[query], []).append(query)
    return "; ".join(_listed(queries, shown) + f": {why}" for why, queries in grouped.items())


def _listed(names: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


__all__ = ["DEFAULT_CURVES", "add_settled", "DEFAULT_K", "PER_QUERY", "CurveData", "PerQuery", "QueryInfo",
           "Ranges", "Report", "ReportOptions", "Stratum", "build_report", "check_options",
           "curve_measure"]
