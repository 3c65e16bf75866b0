"""Live evaluation: every run of a project scored against its gold qrels, kept current as labels
arrive — recomputing only the queries a new label touches.

:class:`LiveEvaluation` is the engine the evaluation screen drives from a worker thread. It
owns the state and takes the label events in; the parts it is made of live beside it:

- :mod:`~ragjudge.services.scoring.livespace` — the queries, the runs, every judged (query,
  chunk) pair numbered once, each run's ranked chunks as pair numbers, the pool;
- :mod:`~ragjudge.services.scoring.livelabels` — the engine's copy of the current labels and
  adjudications (read once in bulk, then kept equal to the database), and what is decided
  from it: each view's grades, the gold's composition, the ratings of agreement;
- :mod:`~ragjudge.services.scoring.livecore` — the structures: numbered pairs, run layouts,
  a view (a grade per pair number and a (queries × measures) matrix per run), the kernels;
- :mod:`~ragjudge.services.scoring.livepass` — the evaluation of whole views (a full pass)
  and of the queries a label touched;
- :mod:`~ragjudge.services.scoring.livesnapshot` — what the screen shows at one moment
  (:class:`LiveSnapshot`);
- :mod:`~ragjudge.services.scoring.livedetails` — the slower numbers (:class:`LiveDetails`:
  intervals, agreement, pool coverage, the gold's composition).

*Views* are one qrels per rule in use — the gold rule, and each annotator's own labels
(``annotator:NAME``) for the between-annotator ranges. :meth:`LiveEvaluation.load` reads the
queries, the runs and (meanwhile, on a worker thread) the labels, then evaluates every view
(:meth:`LiveEvaluation.recompute`). :meth:`LiveEvaluation.poll` reads the label events newer
than the last one seen (any process may have written them), re-reads the current labels of
just the queries they touch, rebuilds those queries' gold grades with the same rule code as
:func:`ragjudge.services.gold.gold.gold`, and re-evaluates those queries only; judgments of the
runs' generated answers (when an answer measure is shown) are taken in the same way. The
aggregates are column sums over the matrices.

Everything the screen shows comes out as immutable copies (:class:`LiveSnapshot`,
:class:`LiveDetails`), so a worker thread computes while the UI thread renders.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, UTC
from typing import TYPE_CHECKING, Any
import numpy as np
from ragjudge.errors import UsageError
from ragjudge.metrics.data import Qrels, Run
from ragjudge.metrics.evaluate import EvalResult, evaluate
from ragjudge.metrics.registry import parse_measure
from ragjudge.services.events.labels import NO_GRADE
from ragjudge.models import AGGREGATION_RULES
from ragjudge.services.access.rights import Access
from ragjudge.services.scoring.livecore import CHANGE_COUNTER, CURRENT_SQL, DECIDED_SQL, IN_BATCH, LiveView, driver_rows
from ragjudge.services.scoring.livedetails import MIN_INTERVAL_QUERIES, LiveDetails, agreement, interval_resamples, intervals
from ragjudge.services.scoring.livelabels import CurrentLabels
from ragjudge.services.scoring.livepass import LivePass, evaluate_touched, evaluate_views
from ragjudge.services.scoring.livesnapshot import COVERAGE_CHOICES, CURVE_K, PR_LEVELS, RANGE_COVERAGE, LiveSnapshot, QueryRows, fields, gold_measures, gold_numbers, means, query_rows, ranges, strata, strata_of
from ragjudge.services.scoring.livespace import PairSpace, Queries, read_queries, worker_pool


__all__ = ["COVERAGE_CHOICES", "CURVE_K", "MEASURES_SETTING", "MIN_INTERVAL_QUERIES", "PR_LEVELS",
           "RANGE_COVERAGE", "RANGE_COVERAGE_SETTING", "LiveDetails", "LiveEvaluation", "LiveSnapshot",
           "QueryRows", "gold_rules", "save_coverage", "save_measures", "saved_coverage", "saved_measures"]
"""The engine and what the evaluation screen reads from it (the snapshots' types and settings
are defined beside it and named here too)."""


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project
    from ragjudge.services.events.labels import CodedLabels
    from ragjudge.services.gold.rules import GoldPolicy


MEASURES_SETTING = "evaluation_measures"
"""Project setting holding the measures the evaluation screen shows (a list of names)."""


RANGE_COVERAGE_SETTING = "range_min_coverage"
"""Project setting: the share of the pool of the judged queries an annotator's labels must
cover for their scores to enter the range over annotators (a number from 0 to 1; by default
:data:`RANGE_COVERAGE`)."""


EARLY_CELLS = 2_000_000
"""From this many (query x rank x run) cells :meth:`LiveEvaluation.load` lets a screen show the
gold's numbers before the annotators' views are evaluated."""


SMALL_VIEW_CELLS = 50_000
"""Up to this many (query x column) cells a view's sums are recomputed exactly after every
update (well under a millisecond); beyond, running sums are kept and made exact again by
:meth:`LiveEvaluation.resync` (the details pass)."""


def saved_measures(project: Project) -> list[str]:
    """The measures the project's evaluation screen shows (until saved, the default scorecard,
    with the answer measures once answers are judged:
    :func:`ragjudge.services.scoring.answers.default_measures`)."""
    from ragjudge.services.scoring.answers import default_measures

    saved = project.get_setting(MEASURES_SETTING)
    if isinstance(saved, list) and saved:
        try:
            for name in saved:
                parse_measure(name)
            return [str(n) for n in saved]
        except UsageError:
            pass
    return default_measures(project)


def saved_coverage(project: Project) -> float:
    """The share of the pool an annotator must cover to enter the ranges (the default until
    saved)."""
    saved = project.get_setting(RANGE_COVERAGE_SETTING)
    if isinstance(saved, (int, float)) and not isinstance(saved, bool) and 0 <= saved <= 1:
        return float(saved)
    return RANGE_COVERAGE


def save_coverage(project: Project, share: float, *, access: Access) -> None:
    """Keep the coverage an annotator needs to enter the ranges (0 to 1) in the project: a
    lead's setting."""
    access.require_lead("change the coverage the ranges need (a project setting)")
    if not 0 <= share <= 1:
        raise UsageError(f"the coverage an annotator needs is a share from 0 to 1, not {share}.")
    project.set_settings({RANGE_COVERAGE_SETTING: float(share)})


def save_measures(project: Project, measures: Sequence[str], *, access: Access) -> None:
    """Keep the evaluation screen's measures in the project (checked first): a lead's setting."""
    access.require_lead("change the saved measures (a project setting)")
    for name in measures:
        parse_measure(name)
    project.set_settings({MEASURES_SETTING: list(measures)})


def gold_rules(access: Access, annotators: Iterable[str]) -> list[str]:
    """The gold rules a viewer may evaluate under, in the order the screen steps through them:
    the aggregation rules, one annotator's grades (in a blind project an annotator's own only:
    another's per-query values would show their grades, query by query), the adjudications."""
    named = [a for a in annotators if access.may_read_labels_of(a)]
    return [*AGGREGATION_RULES, *(f"annotator:{a}" for a in named), "adjudicated"]


class LiveEvaluation:
    """Every run of ``project`` scored against its gold qrels, updated per touched query.

    Thread safety: one thread drives it (:meth:`load`, :meth:`poll`, the setters); snapshots
    are immutable copies that any thread may read.
    """

    def __init__(self, project, *, measures: Sequence[str] | None = None,  # noqa: ANN001
                 rule: str | None = None, threshold: int | None = None, curve: str = "nDCG",
                 ranges: bool = True, resamples: int = 2_000,
                 min_coverage: float | None = None, include_llm: bool = False) -> None:
        from ragjudge.services.gold.rules import check_rule

        self.project = project
        self.rule = check_rule(project.rule if rule is None else rule)
        self.threshold = project.scale.threshold if threshold is None else int(threshold)
        self.measures = list(measures) if measures else saved_measures(project)
        for m in self.measures:
            parse_measure(m)
        self.curve = self._check_curve(curve)
        self.with_ranges = ranges
        self.min_coverage = saved_coverage(project) if min_coverage is None else float(min_coverage)
        self.resamples = resamples
        self.include_llm = include_llm
        """Whether LLM annotators' grades enter the gold and the ranges (off: people only)."""
        self.lock = threading.RLock()
        self.version = 0
        self.stamp = (0, 0)
        self.answer_stamp = 0
        """The newest answer judgment taken in (judgments of answers move the answer measures)."""
        self.touched: tuple[str, ...] = ()
        self.compute_ms = 0.0
        self.updated_at = datetime.now(UTC)
        self.views: dict[str, LiveView] = {}
        self.annotators: list[str] = []
        self.runs: dict[str, Run] = {}
        self.space = PairSpace(Queries.none(), {})
        self.answers_only: frozenset[str] = frozenset()
        """Runs of generated answers only (no ranked chunk): every measure of a ranking is
        undefined for them, as in ``ragjudge eval``."""
        self._labels: CurrentLabels | None = None
        """the engine's copy of the current labels (None: to be read afresh)"""
        self._loaded = False
        self._early = False
        """True while ``load``'s ``first`` runs: the gold view is evaluated, the version it will
        be stamped with not yet given (:meth:`details_work` gives it)."""

    # -- settings --------------------------------------------------------------------------

    @staticmethod
    def _check_curve(curve: str) -> str:
        base = curve.strip().split("@", 1)[0]
        probe = parse_measure(f"{base}@1")
        if probe.definition.cutoff_kind is not int:
            raise UsageError(f"{base} takes no @k cutoff; curves are drawn for @k measures.")
        return base

    def set_rule(self, rule: str) -> None:
        from ragjudge.services.gold.rules import check_rule

        self.rule = check_rule(rule)
        self._recompute(reuse=False)  # the annotators' views hold the gold of their queries

    def set_measures(self, measures: Sequence[str]) -> None:
        for m in measures:
            parse_measure(m)
        self.measures = list(dict.fromkeys(measures))
        self.recompute()

    def set_coverage(self, share: float) -> None:
        """The share of the pool an annotator needs to enter the ranges (not saved here)."""
        if not 0 <= share <= 1:
            raise UsageError(f"the coverage an annotator needs is a share from 0 to 1, not {share}.")
        with self.lock:
            self.min_coverage = float(share)
            self.version += 1  # the ranges change: a new snapshot to show

    def set_include_llm(self, include: bool) -> None:
        """Let the LLM annotators' grades into the gold and the between-annotator ranges."""
        self.include_llm = bool(include)
        self._recompute(reuse=False)

    def _read_llm(self) -> None:
        from ragjudge.services.events.labels import llm_annotators

        assert self._labels is not None  # the labels are read first
        with self.project.connect() as connection:
            self._labels.llm = llm_annotators(connection)

    def set_curve(self, curve: str) -> None:
        self.curve = self._check_curve(curve)
        self._recompute(reuse=True)

    # -- the state its parts hold -----------------------------------------------------------

    @property
    def query_ids(self) -> list[str]:
        """The project's queries, in the byte order of their ids (the rows of every matrix)."""
        return self.space.query_ids

    @property
    def row(self) -> dict[str, int]:
        """query id -> its row"""
        return self.space.row

    @property
    def run_rows(self) -> dict[str, np.ndarray]:
        """run -> its row of each query row (-1: the run does not answer it)"""
        return self.space.run_rows

    @property
    def run_lengths(self) -> dict[str, np.ndarray]:
        """run -> chunks it ranks for each query row"""
        return self.space.run_lengths

    @property
    def labels(self) -> CurrentLabels | None:
        """The engine's copy of the current labels (None before they are read)."""
        return self._labels

    @property
    def llm(self) -> frozenset[str]:
        """The LLM annotators (their grades enter the gold only when let in or named)."""
        return self._labels.llm if self._labels is not None else frozenset()

    @property
    def labels_used(self) -> int:
        """Current labels with a grade."""
        return self._labels.used if self._labels is not None else 0

    @property
    def policy(self) -> GoldPolicy:
        """The reference annotators, as the gold reads them."""
        from ragjudge.services.gold.rules import GoldPolicy

        return self._labels.policy if self._labels is not None else GoldPolicy()

    # -- loading ---------------------------------------------------------------------------

    def load(self, first: Callable[[], None] | None = None) -> None:
        """Read queries, runs and labels, then evaluate everything (:meth:`recompute`).

        ``first``: on a large project (:data:`EARLY_CELLS`), called once the gold view is
        evaluated and before the annotators' views are, so that a screen can show the scores
        while the ranges over annotators are still being made (a snapshot taken then has no
        ranges yet)."""
        from ragjudge.services.scoring.answers import scored_run, scored_run_names

        with self.lock:
            # the labels are read on a worker thread (mostly in SQLite) while the queries and
            # the runs are read here
            fetching = worker_pool().submit(self._fetch_labels)
            try:
                queries = read_queries(self.project)
                self.runs = {name: scored_run(self.project, name) for name in scored_run_names(self.project)}
                self.answers_only = frozenset(name for name, run in self.runs.items() if not len(run))
                self.space = PairSpace(queries, self.runs)
            finally:
                fetched = fetching.result()
            self._loaded = True
            self._take_labels(*fetched)
            self._recompute(reuse=False, first=first)

    def fields(self) -> list[str]:
        """Query fields to stratify by: ``category`` and every key of the queries' meta."""
        return fields(self.space)

    def recompute(self) -> None:
        """Evaluate every view on every query from the labels in the database now.

        The first time (from :meth:`load`) every current label is read; afterwards the engine's
        own copy of them is brought up to date with the events written since (labels and
        adjudications are append-only, so that copy equals a fresh read) and evaluated again.
        """
        self._recompute(reuse=False)

    def _recompute(self, *, reuse: bool, first: Callable[[], None] | None = None) -> None:
        """:meth:`recompute`; with ``reuse``, a view whose rule and measures are unchanged and
        that is up to date with the labels (no event came in since it was last updated) is
        kept, its sums made exact again (a curve change leaves the annotators' views as they
        are; a rule change does not, since their views hold the gold of their queries)."""
        if not self._loaded:
            self.load()
            return
        with self.lock:
            t0 = time.perf_counter()
            if self.watches_answers:
                self.answer_stamp = self._answers_stamp()
            old = self.views
            if self._labels is None:
                self._read_labels()
                old = {}
            else:
                stamp = self._stamp()
                if stamp != self.stamp:
                    touched, _, _ = self._events(stamp)
                    self._current(touched)
                    self.stamp = stamp
                    old = {}
            if not reuse:
                old = {}
            assert self._labels is not None  # read or brought up to date just above
            labels = self._labels
            pair, who, _ = labels.merged()
            self._read_llm()
            self.annotators = sorted(labels.names[c] for c in np.unique(who).tolist())
            golds: dict[tuple[bool, str], np.ndarray] = {}
            self.views = {}
            fresh: list[LiveView] = []

            def made(rule: str) -> LiveView:
                view = old.get(rule)
                if view is not None and view.measures == self._view_measures(rule):
                    view.resum()
                    return view
                view = self._new_view(rule)
                view.set_grades(labels.grades_of(rule, self.rule, self.include_llm, golds))
                fresh.append(view)
                return view

            rules = self._rules()
            kept = old.get(self.rule)
            if first is not None and (kept is None or kept.measures != self._view_measures(self.rule)) \
                    and len(self.query_ids) * self.space.width * len(self.runs) >= EARLY_CELLS:
                # the gold's numbers first: its view alone made and evaluated, then shown; the
                # annotators' views (the ranges) and their pool coverage after
                self.views = {self.rule: made(self.rule)}
                self._full_views(fresh)
                self._early = True
                try:
                    first()
                finally:
                    self._early = False
                fresh.clear()
                rules = rules[1:]
            self.space.count_covered(pair, who, len(labels.names))
            for rule in rules:
                self.views[rule] = made(rule)
            self._full_views(fresh)
            self.touched = ()
            self._stamp_done(t0)

    # -- the labels --------------------------------------------------------------------------

    def _read_labels(self) -> None:
        """Every current label and adjudication, read afresh: the pairs they judge are
        numbered, the runs' layouts made, and the engine's copy of the labels kept."""
        self._take_labels(*self._fetch_labels())

    def _fetch_labels(self) -> tuple[tuple[int, int], CodedLabels, dict[tuple[str, str], int], GoldPolicy,
                                     dict[str, set[tuple[str, str]]]]:
        """The labels' stamp, then every current label, adjudication, the gold policy and the
        pairs its complete references skipped (the database's part of :meth:`_read_labels`; it
        may run on a worker thread)."""
        from ragjudge.services.events.labels import adjudications, read_labels
        from ragjudge.services.gold.gold import skipped_pairs
        from ragjudge.services.gold.rules import gold_policy

        stamp = self._stamp()
        with self.project.connect() as connection:
            labels = read_labels(connection)
            decided = adjudications(connection)
            policy = gold_policy(connection, self.project.scale.min)
            skipped = skipped_pairs(connection, policy.complete)
        return stamp, labels, decided, policy, skipped

    def _take_labels(self, stamp: tuple[int, int], labels: CodedLabels,
                     decided: dict[tuple[str, str], int], policy: GoldPolicy,
                     skipped: dict[str, set[tuple[str, str]]] | None = None) -> None:
        """Labels as read by :meth:`_fetch_labels` into the engine: pairs numbered, the runs'
        layouts made (on two threads for large runs), the copy of the labels kept."""
        self.stamp = stamp
        self._labels = CurrentLabels(self.space, labels, decided, policy, skipped)

    def _policy_moved(self) -> bool:
        """Whether the reference annotators changed (then every query's gold may move)."""
        with self.project.connect() as connection:
            return self._read_policy(connection) != self.policy

    def _read_policy(self, connection: Any) -> GoldPolicy:
        """:func:`ragjudge.services.gold.rules.gold_policy`, in one driver call (a label event
        reads it)."""
        from ragjudge.services.gold.rules import GoldPolicy

        rows = driver_rows(connection, "SELECT name, complete FROM annotators WHERE reference = ?", (True,))
        return GoldPolicy(frozenset(n for n, _ in rows), frozenset(n for n, c in rows if c),
                          int(self.project.scale.min))

    # -- views -------------------------------------------------------------------------------

    def _rules(self) -> list[str]:
        rules = [self.rule]
        if self.with_ranges:
            rules += [f"annotator:{a}" for a in self.annotators if f"annotator:{a}" != self.rule
                      and (self.include_llm or a not in self.llm)]
        return rules

    def _view_measures(self, rule: str) -> list[str]:
        return gold_measures(self.measures, self.curve) if rule == self.rule else list(self.measures)

    def _new_view(self, rule: str) -> LiveView:
        measures = self._view_measures(rule)
        n = len(self.query_ids)
        view = LiveView(rule, measures, present=np.zeros(n, dtype=bool))
        view.parsed = [parse_measure(m) for m in measures]
        view.plain = [j for j, m in enumerate(view.parsed) if not m.needs]
        view.rag = [j for j, m in enumerate(view.parsed) if m.needs]
        for name in self.runs:
            view.values[name] = np.full((n, len(measures)), np.nan)
        view.space = self.space
        view.grades = np.full(self.space.pairs.n, NO_GRADE, dtype=np.int64)
        view.per_row = np.zeros(n, dtype=np.int64)
        return view

    def _stamp_done(self, t0: float) -> None:
        self.compute_ms = (time.perf_counter() - t0) * 1000
        self.version += 1
        self.updated_at = datetime.now(UTC)

    # -- evaluation of a view ----------------------------------------------------------------

    def _qrels_of(self, view: LiveView, query_ids: Iterable[str]) -> Qrels:
        """The view's qrels of some queries."""
        return self.space.qrels_of(view, query_ids, self.project.scale.max)

    def _full_views(self, views: list[LiveView]) -> None:
        """Evaluate views on every query they judge, for every run (:func:`evaluate_views`)."""
        evaluate_views([LivePass(self.space, view, threshold=self.threshold, top_grade=self.project.scale.max,
                                 answers_only=self.answers_only, rag=self._rag) for view in views])

    def _rows(self, query_ids: Iterable[str]) -> np.ndarray:
        return self.space.rows(query_ids)

    def _rag(self, view: LiveView, name: str, qrels: Qrels, run: Run, measures: list, queries: Any) -> EvalResult:
        from ragjudge.services.scoring.evaluation import project_extras, without_ranking

        extras = project_extras(self.project, name, qrels, run, measures, self.threshold,
                                 queries, view.rule)
        result = evaluate(qrels, run, measures, threshold=self.threshold, queries=queries, extras=extras)
        if name in self.answers_only:
            without_ranking(result)
        return result

    def _begin(self, view: LiveView, touched: list[str], judgments: dict[str, dict[str, int]]) -> list[str]:
        """Take the touched queries' new judgments into ``view`` and clear their rows; returns
        the touched queries still judged (to evaluate). No other query moves: ERR's scale is
        the project's, not the labels' top grade."""
        view.changes = next(CHANGE_COUNTER)
        rows = self._rows(touched)
        for q, row in zip(touched, rows.tolist()):
            view.set_query(row, judgments.get(q, {}))
        if not self._small(view):
            view.add_rows(rows, -1.0)
        for name in self.runs:
            view.values[name][rows] = np.nan
        judged = [q for q in touched if view.per_row[self.row[q]]]
        view.present[rows] = False
        if judged:
            view.present[self._rows(judged)] = True
        return judged

    def _finish(self, view: LiveView, touched: list[str]) -> None:
        if self._small(view):
            view.resum()
        else:
            view.add_rows(self._rows(touched), 1.0)

    @staticmethod
    def _small(view: LiveView) -> bool:
        return view.present.size * len(view.measures) <= SMALL_VIEW_CELLS

    def _evaluate_rag(self, view: LiveView, queries: list[str]) -> None:
        """The measures that need the project's labels (facets, nuggets, answers ...) on some
        queries, as :func:`evaluate` takes them: a query without a grade is evaluated when
        those labels cover it (it is marked present), and its measures of a ranking stay
        undefined. The caller has cleared the queries' rows (and took their sums out)."""
        if not view.rag or not queries:
            return
        rag = [view.parsed[j] for j in view.rag]
        qrels = self._qrels_of(view, queries)
        for name in self.runs:
            run = self._sub_run(name, queries)
            result = self._rag(view, name, qrels, run, rag, queries)
            rows = self._rows(result.query_ids)
            view.values[name][np.ix_(rows, view.rag)] = result.values  # type: ignore[arg-type]  # numpy's stubs omit the int lists ix_ takes
            view.present[rows] = True

    def _sub_run(self, name: str, query_ids: list[str]) -> Run:
        return self.space.sub_run(name, query_ids)

    # -- new labels --------------------------------------------------------------------------

    def poll(self) -> bool:
        """Take in the label events, adjudications and (when an answer measure is shown) answer
        judgments written since the last look (by any process). Returns True when something
        changed (and the numbers were updated)."""
        stamp = self._stamp()
        judged = self._answers_stamp() if self.watches_answers else self.answer_stamp
        if stamp == self.stamp and judged == self.answer_stamp:
            return False
        with self.lock:
            t0 = time.perf_counter()
            touched: list[str] = []
            if stamp != self.stamp:
                touched, annotators, decided = self._events(stamp)
                if any(q not in self.row for q in touched):
                    self.load()  # a query added since the screen opened: start again
                    self.touched = tuple(touched)
                    return True
                if self._policy_moved() or annotators & self.policy.complete:
                    # every query's gold may move (a complete reference's skips close less of
                    # its world): read the labels again
                    self._labels = None
                    self.recompute()
                    self.touched = tuple(touched)
                    return True
                if annotators - set(self.annotators):
                    self._read_llm()
                for name in sorted(annotators - set(self.annotators)):
                    self._add_annotator(name)
                self._apply(touched, annotators, decided)
                self.stamp = stamp
            if judged != self.answer_stamp:
                answered = self._answer_events(judged)
                self.answer_stamp = judged
                self._apply_answers(answered)
                touched = sorted(set(touched) | set(answered))
            self.touched = tuple(touched)
            self._stamp_done(t0)
            return True

    # -- judgments of generated answers ------------------------------------------------------

    @property
    def watches_answers(self) -> bool:
        """True when a shown measure reads the judgments of the runs' answers."""
        key = tuple(self.measures)
        if getattr(self, "_watching", (None,))[0] != key:
            self._watching = (key, any("answers" in parse_measure(m).needs for m in key))
        return self._watching[1]

    def _answers_stamp(self) -> int:
        """The newest answer judgment's id (the table is append-only), in one driver call."""
        with self.project.connect() as connection:
            (newest,), = driver_rows(connection, "SELECT max(id) FROM answer_judgments", ())
        return int(newest or 0)

    def _answer_events(self, stamp: int) -> list[str]:
        """The queries whose answers were judged after ``self.answer_stamp`` up to ``stamp``."""
        with self.project.connect() as connection:
            rows = driver_rows(connection, "SELECT DISTINCT a.query_id FROM answer_judgments j JOIN answers a "
                        "ON a.id = j.answer_id WHERE j.id > ? AND j.id <= ?",
                        (self.answer_stamp, stamp))
        return sorted(q for q, in rows)

    def _apply_answers(self, touched: list[str]) -> None:
        """Re-evaluate the measures that need the project's labels on the queries whose answers
        were just judged, in every view that shows an answer measure (the measures of a ranking
        do not move). A query without a grade comes in with its first judged answer and leaves
        when none is judged any more."""
        queries = [q for q in touched if q in self.row]
        for view in self.views.values():
            if not queries or not any("answers" in view.parsed[j].needs for j in view.rag):
                continue
            rows = self._rows(queries)
            if not self._small(view):
                view.add_rows(rows, -1.0)
            for matrix in view.values.values():
                matrix[np.ix_(rows, view.rag)] = np.nan  # type: ignore[arg-type]  # numpy's stubs omit the int lists ix_ takes
            view.present[rows] = view.per_row[rows] > 0
            self._evaluate_rag(view, queries)
            self._finish(view, queries)

    def _stamp(self) -> tuple[int, int]:
        """(newest label id, newest adjudication id), as
        :func:`ragjudge.services.agreement.ratings.labels_stamp` gives it, in one driver call."""
        with self.project.connect() as connection:
            (label, decided), = driver_rows(connection, "SELECT (SELECT max(id) FROM labels), "
                                     "(SELECT max(id) FROM adjudications)", ())
        return int(label or 0), int(decided or 0)

    def _events(self, stamp: tuple[int, int]) -> tuple[list[str], set[str], bool]:
        """The queries touched by the label events and adjudications after ``self.stamp`` up to
        ``stamp``, the annotators of those events, and whether any adjudication is among them."""
        with self.project.connect() as connection:
            # by id range only (a DISTINCT would let SQLite scan a covering index instead)
            events = driver_rows(connection, "SELECT id, query_id, annotator FROM labels "
                          "WHERE id > ? AND id <= ?", (self.stamp[0], stamp[0]))
            decided = driver_rows(connection, "SELECT id, query_id FROM adjudications "
                           "WHERE id > ? AND id <= ?", (self.stamp[1], stamp[1]))
        touched = sorted({q for _, q, _ in events} | {q for _, q in decided})
        return touched, {a for _, _, a in events}, bool(decided)

    def _add_annotator(self, name: str) -> None:
        """A first label by a new annotator: an empty view of their own (filled by _apply)."""
        self.annotators = sorted([*self.annotators, name])
        rule = f"annotator:{name}"
        if (self.with_ranges and rule != self.rule and rule not in self.views
                and (self.include_llm or name not in self.llm)):
            view = self._new_view(rule)
            view.resum()
            self.views[rule] = view

    def _apply(self, touched: list[str], annotators: set[str], adjudicated: bool) -> None:
        labels, decided = self._current(touched)
        assert self._labels is not None  # poll takes events into labels already read
        jobs: list[tuple[LiveView, list[str]]] = []
        for rule, view in self.views.items():
            # an annotator's view holds the gold of the queries they judged: it moves with them
            if rule != self.rule and not adjudicated and rule.split(":", 1)[1] not in annotators \
                    and not view.present[self._rows(touched)].any():
                continue
            judgments: dict[str, dict[str, int]] = {}
            gold = self._labels.touched_gold(labels, decided, rule, self.rule, self.include_llm)
            for q, c, g in zip(*(a.tolist() for a in gold)):
                judgments.setdefault(q, {})[c] = g
            jobs.append((view, self._begin(view, touched, judgments)))
        evaluate_touched(self.space, jobs, threshold=self.threshold, top_grade=self.project.scale.max,
                         answers_only=self.answers_only)
        for view, _ in jobs:
            # every touched query: one without a grade now may still have labels of a RAG measure
            self._evaluate_rag(view, [q for q in touched if q in self.row])
            self._finish(view, touched)

    def _current(self, touched: list[str]):  # noqa: ANN202
        """The current labels and adjudications of some queries, as services.qrels reads them
        for the whole project (the same SQL, written out once and run on the driver's cursor:
        building and compiling the Core statement cost more than running it)."""
        from ragjudge.services.events.labels import RECHECK, label_arrays_from_rows

        rows: list[tuple] = []
        adj: list[tuple] = []
        assert self._labels is not None  # only the events since the labels were read
        with self.project.connect() as connection:
            self._labels.policy = self._read_policy(connection)
            for at in range(0, len(touched), IN_BATCH):  # rows grouped by query either way
                part = list(touched[at:at + IN_BATCH])
                marks = ", ".join(["?"] * len(part))
                rows += driver_rows(connection, CURRENT_SQL.format(marks=marks), (*part, RECHECK))
                adj += driver_rows(connection, DECIDED_SQL.format(marks=marks), tuple(part))
        self._labels.recount(touched, rows)
        labels, decided = label_arrays_from_rows(rows), {(q, c): int(g) for q, c, g in adj}
        self._labels.keep(touched, labels, decided)
        return labels, decided

    # -- what the screen shows ---------------------------------------------------------------

    def means(self, rule: str | None = None, rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """run -> mean of each column over the judged queries (``rows``: a subset of them),
        summed in query order like :attr:`EvalResult.means`."""
        return means(self.views[rule or self.rule], rows)

    def resync(self) -> None:
        """Make every view's running sums exact again (column sums in query order)."""
        with self.lock:
            for view in self.views.values():
                view.resum()

    def snapshot(self, *, measure: str | None = None, by: str | None = None,
                 access: Access | None = None) -> LiveSnapshot:
        """The numbers of the moment; ``measure`` adds its per-query column, ``by`` its strata.
        ``access``: who reads them (None: who sees every grade); a blind reader's per-query
        column and strata leave out the queries whose own values they may not see
        (:meth:`ragjudge.services.access.rights.Access.hidden_queries`)."""
        with self.lock:
            assert self._labels is not None  # loaded
            gold = self.views[self.rule]
            spread = ranges(self.space, self.views, gold, self.measures, self._labels.code, self.min_coverage) \
                if self.with_ranges else {"ranges": {}}
            hidden: frozenset[str] = frozenset()
            if access is not None and not access.sees_all and (measure or by):
                hidden = access.hidden_queries({self.query_ids[r]: gold.judgments_of(self.query_ids[r])
                                                for r in np.flatnonzero(gold.present).tolist()})
            rows = query_rows(self.space, gold, measure, hidden) if measure else None
            by_stratum, sizes = strata(self.space, gold, self.measures, by, hidden) if by else ({}, {})
            return LiveSnapshot(
                version=self.version, rule=self.rule, threshold=self.threshold,
                measures=list(self.measures), run_names=list(self.runs),
                **gold_numbers(self.space, gold, self.measures, self.curve),
                n_queries=int(gold.present.sum()), n_queries_total=len(self.query_ids),
                gold_pairs=gold.n_pairs(),
                labels_used=self.labels_used, annotators=list(self.annotators), **spread,
                curve=self.curve, updated_at=self.updated_at,
                touched=self.touched, compute_ms=self.compute_ms, rows=rows, strata=by_stratum,
                strata_sizes=sizes, strata_field=by,
            )

    def strata_of(self, by: str) -> list[str]:
        """Each query's stratum for ``by`` (``category`` or a meta key), as ``ragjudge eval --by``."""
        return strata_of(self.space, by)

    def evaluation(self, runs: Sequence[str] | None = None):  # noqa: ANN201
        """The gold view as a :class:`ragjudge.services.scoring.evaluation.Evaluation` of the shown
        measures (what :func:`~ragjudge.services.scoring.evaluation.compare` takes)."""
        from ragjudge.services.scoring.evaluation import Evaluation

        with self.lock:
            gold = self.views[self.rule]
            rows = np.flatnonzero(gold.present)
            qids = [self.query_ids[r] for r in rows]
            cols = [gold.measures.index(m) for m in self.measures]
            parsed = [gold.parsed[j] for j in cols]
            results = {}
            for name in runs or list(self.runs):
                answered = self.run_lengths[name][rows] > 0
                results[name] = EvalResult(name, qids, parsed, gold.values[name][np.ix_(rows, cols)].copy(),  # type: ignore[arg-type]  # numpy's stubs omit the int lists ix_ takes
                                           answered, "judged", self.threshold)
            first = next(iter(results.values()))
            return Evaluation(measures=list(self.measures), results=results, query_ids=qids,
                              averaging=first.averaging, queries_mode="judged",
                              threshold=self.threshold, rule=self.rule,
                              qrels_source=f"project {self.project.shown_db}")

    def details(self, *, resamples: int | None = None) -> LiveDetails:
        """Bootstrap intervals of every mean, the annotators' agreement, pool coverage, what the
        gold is made of: what the engine holds is copied under the lock, the rest is computed
        outside it (the numbers of new labels do not wait)."""
        return self.details_work(resamples=resamples)()

    def details_work(self, *, resamples: int | None = None) -> Callable[[], LiveDetails]:
        """:meth:`details` in two steps: what they read of the engine (the gold view, the
        labels), copied under the lock now, and the function that computes them from the copy
        on any thread, without the lock. Called from ``load``'s ``first``, it lets the details
        pass run while the annotators' views are evaluated (it reads none of them)."""
        with self.lock:
            assert self._labels is not None  # loaded
            version, rule, measures, query_ids = self.version, self.rule, list(self.measures), self.query_ids
            if self._early:  # the details of the numbers the load is about to stamp
                version += 1
            include_llm = self.include_llm
            gold = self.views[rule]
            rows = np.flatnonzero(gold.present)
            cols = [gold.measures.index(m) for m in measures]
            matrices = {n: m[np.ix_(rows, cols)] for n, m in gold.values.items()}  # type: ignore[arg-type]  # numpy's stubs omit the int lists ix_ takes
            pool_judged = self.space.pool_judged(gold.fitted())
            judged, labels = gold.n_pairs(), self._labels.at()
        space, project, budget = self.space, self.project, interval_resamples(len(rows), resamples or self.resamples)

        def work() -> LiveDetails:
            from ragjudge.services.events.labels import llm_annotators
            from ragjudge.services.gold.rules import gold_policy

            with project.connect() as connection:  # whom agreement counts, as `ragjudge agree` reads it
                llm = llm_annotators(connection)
                policy = gold_policy(connection, project.scale.min)
            scale = (project.scale.min, project.scale.max)
            # the agreement on the second core while the intervals and the composition are made here
            agreed = worker_pool().submit(agreement, labels, llm, policy, scale, query_ids)
            spans, too_few = intervals(matrices, measures, budget)
            composition = labels.composition(rule, include_llm, judged)
            return LiveDetails(version=version, intervals=spans, resamples=budget,
                               pool_pairs=space.pool_total, pool_judged=pool_judged, too_few=too_few,
                               composition=composition, **agreed.result())
        return work

    def unjudged_pairs(self, query_id: str, depth: int = 10) -> list[str]:
        """Chunks in some run's top ``depth`` for the query that have no gold grade yet."""
        with self.lock:
            judged = self.views[self.rule].judgments_of(query_id)
            return [c for c in self.space.top_chunks(query_id, depth) if c not in judged]

    def explain(self, run: str, query_id: str, measure: str, *, access: Access) -> str:
        """The step-by-step computation of ``measure`` for one query of one run, as text, as
        ``access`` may read it (:func:`ragjudge.services.scoring.evaluation.explain_query`)."""
        with self.lock:
            judgments = dict(self.views[self.rule].judgments_of(query_id))
        qrels = Qrels([query_id] * len(judgments), list(judgments),
                      np.array(list(judgments.values()), dtype=np.int64),
                      top_grade=self.project.scale.max)
        sub = self._sub_run(run, [query_id]) if query_id in self.row else Run([], [], None, ordered=True)
        from ragjudge.services.scoring.evaluation import explain_query

        explanation = explain_query(self.project, run, qrels, sub, query_id, measure,
                                    threshold=self.threshold, rule=self.rule, access=access)
        return explanation.render()

