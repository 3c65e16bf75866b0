"""Live evaluation: every run of a project scored against its gold qrels, kept current as labels
arrive — recomputing only the queries a new label touches.

State (:class:`LiveEvaluation`), built once by :meth:`LiveEvaluation.load`:

- the project's queries in the byte order of their ids (the row order of every evaluation
  context, so that means summed here are bit-for-bit the means ``ragjudge eval`` prints);
- every stored run, read once (the labels are read meanwhile on a worker thread);
- *pairs*: every (query, chunk) pair that labels, adjudications or a complete reference's
  closed world judged, numbered once (:class:`_Pairs`, append-only), and each run's ranked
  chunks as pair numbers (:class:`_RunLayout`: one hash lookup per entry, at load);
- the engine's copy of the current labels as numbers (pair, annotator code, grade), read in
  bulk by :func:`ragjudge.services.events.labels.read_labels`;
- *views*: one qrels per aggregation rule in use — the gold rule, and each annotator's own
  labels (``annotator:NAME``) for the between-annotator ranges — each a grade per pair number
  and a (queries × measures) matrix of per-query values per run, NaN for queries its qrels do
  not judge.

A full pass (:meth:`LiveEvaluation.recompute`) computes every view's grades for all pairs at
once (the rule, adjudications, closed world: :func:`ragjudge.services.gold.rules.coded_gold`), then
evaluates each (view, run) on a grade matrix gathered from the run's layout and the view's
grades (:class:`_LayoutContext`), the qrels' per-query counts computed once per view and
shared by its runs; on large projects the (view, run) evaluations run on two threads.

:meth:`LiveEvaluation.poll` reads the label events newer than the last one seen (any process may
have written them), re-reads the current labels of just the queries they touch, rebuilds those
queries' gold grades with the same rule code as :func:`ragjudge.services.gold.qrels.gold_qrels`, and
re-evaluates those queries only: all runs at once, each (view, run, query) as its own row of one
small evaluation context gathered from the layouts. The aggregates are then column sums over the
matrices. Judgments of the runs' generated answers (when an answer measure is shown) are taken
in the same way: the answer measures of the queries whose answers were judged are evaluated
again.

Everything the screen shows comes out as an immutable :class:`LiveSnapshot` (numbers that change
on every label) and :class:`LiveDetails` (bootstrap intervals, agreement, pool coverage: slower,
recomputed less often), so a worker thread can compute while the UI thread renders.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, UTC
from typing import TYPE_CHECKING, Any
import numpy as np
from sqlalchemy import select
from ragjudge.errors import UsageError
from ragjudge.metrics import _keys
from ragjudge.metrics.data import Qrels, Run
from ragjudge.metrics.evaluate import EvalResult, evaluate
from ragjudge.metrics.registry import Measure, parse_measure
from ragjudge.metrics.significance import bootstrap_ci
from ragjudge.services.events.labels import NO_GRADE
from ragjudge.models import AGGREGATION_RULES
from ragjudge.services.access.rights import Access
from ragjudge.services.scoring.livecore import CHANGE_COUNTER, CURRENT_SQL, DECIDED_SQL, IN_BATCH, LiveLabels, LivePairs, LiveView, RunLayout, driver_rows, encode_id_runs, encode_ids, ideal_cutoffs, live_kernels
from functools import cached_property
from ragjudge.metrics.context import EvalContext


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project
    from ragjudge.services.events.labels import CodedLabels, LabelArrays
    from ragjudge.services.gold.rules import GoldPolicy


MEASURES_SETTING = "evaluation_measures"
"""Project setting holding the measures the evaluation screen shows (a list of names)."""


RANGE_COVERAGE_SETTING = "range_min_coverage"
"""Project setting: the share of the pool of the judged queries an annotator's labels must
cover for their scores to enter the range over annotators (a number from 0 to 1)."""


RANGE_COVERAGE = 0.5
"""The default of :data:`RANGE_COVERAGE_SETTING`: half the pool of the judged queries."""


COVERAGE_CHOICES = (0.5, 0.75, 1.0, 0.0, 0.1, 0.25)
"""The shares the evaluation screen's key steps through."""


MIN_INTERVAL_QUERIES = 5
"""A bootstrap interval from fewer queries than this is not shown (it says too little)."""


JUDGED = "Judged@10"


CURVE_K = tuple(range(1, 21))


PR_LEVELS = tuple(j / 10 for j in range(11))


_PR_NAMES = tuple(f"iprec@{x:g}" for x in PR_LEVELS)


POOL_DEPTH = 10
"""The pool is the union of every run's top ``POOL_DEPTH``."""


EARLY_CELLS = 2_000_000
"""From this many (query x rank x run) cells :meth:`LiveEvaluation.load` lets a screen show the
gold's numbers before the annotators' views are evaluated."""


_THREADS: Any = None


_THREADS_LOCK = threading.Lock()


PARALLEL_CELLS = 200_000
"""From this many (query x rank) cells a view's runs are evaluated on two threads (numpy lets
go of the interpreter in its array loops, so the second core does half the work)."""


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


@dataclass(frozen=True)
class QueryRows:
    """Per-query values of one measure for every run, with each query's facts."""

    measure: str
    query_ids: list[str]
    values: dict[str, np.ndarray]
    """run -> value per query (NaN: undefined)"""
    categories: list[str | None]
    judged: np.ndarray
    """gold-judged pairs of each query"""


@dataclass(frozen=True)
class LiveSnapshot:
    """What changes with every label: aggregates, ranges, curves, one per-query column."""

    version: int
    rule: str
    threshold: int
    measures: list[str]
    run_names: list[str]
    means: dict[str, dict[str, float]]
    """run -> measure -> mean over the judged queries (``ragjudge eval``'s number)"""
    judged_at_10: dict[str, float]
    unjudged_top10: dict[str, int]
    """run -> unjudged chunks in its top 10 over the judged queries (score is a lower bound)"""
    n_queries: int
    n_queries_total: int
    gold_pairs: int
    labels_used: int
    annotators: list[str]
    ranges: dict[str, dict[str, tuple[float, float]]]
    """run -> measure -> (min, max) over the annotators who cover enough of the pool of the
    gold value moved by each one's difference from the gold on the queries they judged (their
    grades in place of the gold's there)"""
    curve: str
    curve_values: dict[str, list[float]]
    pr_values: dict[str, list[float]]
    updated_at: datetime
    touched: tuple[str, ...]
    compute_ms: float
    rows: QueryRows | None = None
    strata: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    """stratum -> run -> measure -> mean (for the field asked for)"""
    strata_sizes: dict[str, int] = field(default_factory=dict)
    strata_field: str | None = None
    range_ends: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    """run -> measure -> (who sets the minimum, who sets the maximum) of :attr:`ranges`"""
    range_gold: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    """run -> measure -> annotator -> the gold mean on the queries that annotator judged"""
    coverage: dict[str, float] = field(default_factory=dict)
    """annotator -> share of the pool of the judged queries their labels cover"""
    min_coverage: float = RANGE_COVERAGE
    """the share an annotator needs to enter the ranges; the others have too few labels"""

    @property
    def in_ranges(self) -> list[str]:
        return [a for a, share in self.coverage.items() if share >= self.min_coverage and share > 0]

    @property
    def too_few(self) -> list[str]:
        return [a for a in self.coverage if a not in self.in_ranges]


@dataclass(frozen=True)
class LiveDetails:
    """What is slower and may lag a little: intervals, agreement, pool coverage."""

    version: int
    intervals: dict[str, dict[str, tuple[float, float]]]
    """run -> measure -> (low, high), the 95 % bootstrap interval of the mean"""
    resamples: int
    pool_pairs: int
    pool_judged: int
    alpha_ordinal: float | None
    alpha_nominal: float | None
    mean_kappa: float | None
    disputed: int
    disputed_by_query: dict[str, int]
    kappa_units: int = 0
    """units shared by the pairs of annotators in :attr:`mean_kappa` (each pair weighs as many)"""
    kappa_pairs: int = 0
    too_few: dict[str, list[str]] = field(default_factory=dict)
    """run -> measures defined on fewer than :data:`MIN_INTERVAL_QUERIES` queries (no interval)"""


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
        self.rule = check_rule(rule or project.rule)
        self.threshold = project.scale.threshold if threshold is None else int(threshold)
        self.measures = list(measures) if measures else saved_measures(project)
        for m in self.measures:
            parse_measure(m)
        self.curve = self._check_curve(curve)
        self.with_ranges = ranges
        self.min_coverage = saved_coverage(project) if min_coverage is None else float(min_coverage)
        self._covered: dict[int, np.ndarray] = {}
        """annotator code -> their labels in the pool, per query row"""
        self._pool_rows = np.zeros(0, dtype=np.int64)
        """pairs in the pool per query row"""
        self._pool_total = 0
        self._in_pool = np.zeros(0, dtype=bool)
        """per pair number: in the pool (some run ranks it in its top 10)"""
        self._layouts: dict[str, RunLayout] = {}
        self._names: list[str] = []
        self._code: dict[str, int] = {}
        self._decided: dict[tuple[str, str], int] = {}
        self.resamples = resamples
        self.include_llm = include_llm
        """Whether LLM annotators' grades enter the gold and the ranges (off: people only)."""
        self.llm: frozenset[str] = frozenset()
        self.lock = threading.RLock()
        self.version = 0
        self.stamp = (0, 0)
        self.answer_stamp = 0
        """The newest answer judgment taken in (judgments of answers move the answer measures)."""
        self.touched: tuple[str, ...] = ()
        self.compute_ms = 0.0
        self.updated_at = datetime.now(UTC)
        self.views: dict[str, LiveView] = {}
        self.runs: dict[str, Run] = {}
        self.answers_only: frozenset[str] = frozenset()
        """Runs of generated answers only (no ranked chunk): every measure of a ranking is
        undefined for them, as in ``ragjudge eval``."""
        self._labels: LiveLabels | None = None
        self._loaded = False
        from ragjudge.services.gold.rules import GoldPolicy

        self.policy = GoldPolicy()
        #: per complete reference, the pairs it skipped (unjudged: see gold.skipped_pairs)
        self.unjudged: dict[str, set[tuple[str, str]]] = {}

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

    def _gold_labels(self, labels: LabelArrays, rule: str) -> LabelArrays:
        """The labels ``rule`` aggregates: without LLM annotators unless they are let in or
        named (as :func:`ragjudge.services.gold.qrels.gold_qrels` does)."""
        from ragjudge.services.events.labels import without

        return without(labels, self.llm) if self._people(rule) else labels

    def _read_llm(self) -> None:
        from ragjudge.services.events.labels import llm_annotators

        with self.project.connect() as connection:
            self.llm = llm_annotators(connection)

    def set_curve(self, curve: str) -> None:
        self.curve = self._check_curve(curve)
        self._recompute(reuse=True)

    # -- columns ---------------------------------------------------------------------------

    def _gold_measures(self) -> list[str]:
        curve = [f"{self.curve}@{k}" for k in CURVE_K]
        return list(dict.fromkeys([*self.measures, JUDGED, *curve, *_PR_NAMES]))

    # -- loading ---------------------------------------------------------------------------

    def load(self, first: Callable[[], None] | None = None) -> None:
        """Read queries, runs and labels, then evaluate everything (:meth:`recompute`).

        ``first``: on a large project (:data:`EARLY_CELLS`), called once the gold view is
        evaluated and before the annotators' views are, so that a screen can show the scores
        while the ranges over annotators are still being made (a snapshot taken then has no
        ranges yet)."""
        from ragjudge.services.scoring.answers import scored_run, scored_run_names
        from ragjudge.store.schema import Query

        with self.lock:
            with self.project.connect() as connection:
                rows = connection.execute(select(Query.id, Query.category, Query.meta)).all()
            ids = _keys.as_ids([r[0] for r in rows])
            order = np.lexsort(_keys.words(ids).T[::-1]) if len(ids) else np.zeros(0, dtype=int)
            self.query_bytes = ids[order]
            self.query_ids = [rows[i][0] for i in order]
            self.categories = [rows[i][1] for i in order]
            self.meta = [rows[i][2] if isinstance(rows[i][2], dict) else {} for i in order]
            self.row = {q: i for i, q in enumerate(self.query_ids)}
            # the labels are read on a worker thread (mostly in SQLite) while the runs are read here
            fetching = self._pool().submit(self._fetch_labels)
            try:
                self.runs = {name: scored_run(self.project, name) for name in scored_run_names(self.project)}
                self.answers_only = frozenset(name for name, run in self.runs.items() if not len(run))
                self.run_rows: dict[str, np.ndarray] = {}
                self.run_lengths: dict[str, np.ndarray] = {}
                for name, run in self.runs.items():
                    rr = _keys.lookup(run.query_id_bytes, self.query_bytes)
                    self.run_rows[name] = rr
                    lengths = np.diff(run.offsets)
                    self.run_lengths[name] = np.where(rr >= 0, lengths[np.maximum(rr, 0)], 0) \
                        if len(lengths) else np.zeros(len(rr), dtype=np.int64)
                self._query_hash = _keys.id_hash(self.query_bytes)
                self._pool_of_runs()
            finally:
                fetched = fetching.result()
            self._loaded = True
            self._take_labels(*fetched)
            self._recompute(reuse=False, first=first)

    def fields(self) -> list[str]:
        """Query fields to stratify by: ``category`` and every key of the queries' meta."""
        keys: dict[str, None] = {"category": None}
        for meta in self.meta:
            for key in meta:
                keys.setdefault(str(key), None)
        return list(keys)

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
            pair, who, grade = self._labels.merged()
            self._read_llm()
            self.annotators = sorted(self._names[c] for c in np.unique(who).tolist())
            self._count_covered(pair, who)
            golds: dict[tuple[bool, str], np.ndarray] = {}
            self.views = {}
            fresh: list[LiveView] = []
            for rule in self._rules():
                view = old.get(rule)
                if view is not None and view.measures == self._view_measures(rule):
                    view.resum()
                else:
                    view = self._new_view(rule)
                    view.set_grades(self._grades_of(rule, pair, who, grade, golds))
                    fresh.append(view)
                self.views[rule] = view
            width = max((layout.pairs.shape[1] for layout in self._layouts.values()), default=0)
            if first is not None and fresh and fresh[0].rule == self.rule \
                    and len(self.query_ids) * width * len(self.runs) >= EARLY_CELLS:
                views, self.views = self.views, {self.rule: fresh[0]}
                self._full_views(fresh[:1])
                first()  # the gold's numbers, before the annotators' views
                self.views = views
                fresh = fresh[1:]
            self._full_views(fresh)
            self.touched = ()
            self._stamp_done(t0)

    # -- judgments of every pair at once (a full pass) --------------------------------------

    def _grades_of(self, rule: str, pair: np.ndarray, who: np.ndarray, grade: np.ndarray,
                   golds: dict[tuple[bool, str], np.ndarray]) -> np.ndarray:
        """A view's grade per pair number: the gold under ``rule`` (of the people, unless the
        LLM annotators are let in or named), or an annotator's view for the ranges: on the
        queries they judged, the gold the screen shows (the people's unless the LLM annotators
        are let in, as the incremental :meth:`_in_place_of_gold` takes it) with their grades in place of the gold's."""
        if rule != self.rule and rule.startswith("annotator:"):
            code = self._code.get(rule.split(":", 1)[1], -1)
            out = np.full(self.pairs.n, NO_GRADE, dtype=np.int64)
            mine = who == code
            if code < 0 or not mine.any():
                return out
            gold = self._gold_grades(self._people(self.rule), self.rule, pair, who, grade, golds)
            out = np.full(len(gold), NO_GRADE, dtype=np.int64)
            rows = np.zeros(len(self.query_ids), dtype=bool)
            rows[self.pairs.rows[pair[mine]]] = True
            take = rows[self.pairs.rows] & (gold != NO_GRADE)
            out[take] = gold[take]
            out[pair[mine]] = grade[mine]
            return out
        return self._gold_grades(self._people(rule), rule, pair, who, grade, golds)

    def _people(self, rule: str) -> bool:
        """Whether ``rule``'s gold leaves the LLM annotators' labels out (see :meth:`_gold_labels`)."""
        return not (self.include_llm or rule.startswith("annotator:"))

    def _gold_grades(self, people: bool, rule: str, pair: np.ndarray, who: np.ndarray,
                     grade: np.ndarray, golds: dict[tuple[bool, str], np.ndarray]) -> np.ndarray:
        """The gold grade per pair number under ``rule`` (``people``: without the LLM
        annotators' labels): :func:`ragjudge.services.gold.rules.decide` for every pair at once (the rule, then the
        adjudications), and on a complete reference's queries every chunk the runs rank judged
        at the bottom of the scale (:func:`ragjudge.services.gold.gold.closure`)."""
        from ragjudge.services.events.labels import GradeRows
        from ragjudge.services.gold.rules import coded_gold

        llm = [self._code[n] for n in self.llm if n in self._code]
        if people and llm:
            keep = ~np.isin(who, llm)
            pair, who, grade = pair[keep], who[keep], grade[keep]
        else:
            people = False  # the same labels: one computation serves both
        key = (people, rule)
        if key in golds:
            return golds[key]
        rows = GradeRows(pair, who, grade, self.pairs.rows, self._code)
        numbers, values = coded_gold(rows, self.policy, rule, self._unjudged_numbers() or None)
        decided = [(self.row[q], c, g) for (q, c), g in self._decided.items() if q in self.row]
        decided_numbers = self._numbers_of([d[0] for d in decided], [d[1] for d in decided])
        out = np.full(self.pairs.n, NO_GRADE, dtype=np.int64)
        out[numbers] = values
        if decided:
            out[decided_numbers] = [d[2] for d in decided]
        if self.policy.completes(rule):
            names = sorted(self.policy.complete)
            if rule.startswith("annotator:"):
                names = [rule.split(":", 1)[1]]
            codes = [self._code[n] for n in names if n in self._code]
            closed = np.unique(self.pairs.rows[pair[np.isin(who, codes)]]) if codes \
                else np.zeros(0, dtype=np.int64)
            if len(closed):
                ranked = self._ranked_pairs(closed)
                if len(out) < self.pairs.n:
                    out = np.concatenate([out, np.full(self.pairs.n - len(out), NO_GRADE, dtype=np.int64)])
                open_ = ranked[out[ranked] == NO_GRADE]
                if self.unjudged:  # a complete reference's skips stay unjudged (gold.closure)
                    skipped = self._unjudged_numbers()
                    left = [skipped[n] for n in names if n in skipped]
                    if left:
                        open_ = open_[~np.isin(open_, np.concatenate(left))]
                out[open_] = self.policy.lowest
        golds[key] = out
        return out

    def _unjudged_numbers(self) -> dict[str, np.ndarray]:
        """Per complete reference, the numbers of the pairs it left unjudged
        (:func:`ragjudge.services.gold.gold.skipped_pairs`); a pair not numbered yet is in no
        run's ranking and nobody's label."""
        out = {}
        width = self.pairs.width
        for name, found in self.unjudged.items():
            pairs = [(self.row[q], c.encode("utf-8")) for q, c in found if q in self.row]
            pairs = [(row, c) for row, c in pairs if len(c) <= width]
            if not pairs:
                continue
            rows = np.array([row for row, _ in pairs], dtype=np.int64)
            numbers = self.pairs.find(rows, _keys.widen(_keys.as_ids([c for _, c in pairs]), width))
            out[name] = numbers[numbers >= 0]
        return out

    def _ranked_pairs(self, rows: np.ndarray) -> np.ndarray:
        """The pair numbers of every chunk any run ranks for the query rows ``rows`` (pairs
        nobody judged yet are numbered now)."""
        found: list[np.ndarray] = []
        for name, run in self.runs.items():
            rr = self.run_rows[name][rows]
            have = rr >= 0
            if not have.any():
                continue
            starts, ends = run.offsets[rr[have]], run.offsets[rr[have] + 1]
            entries = np.concatenate([np.arange(s, e) for s, e in zip(starts.tolist(), ends.tolist())])
            entry_rows = np.repeat(rows[have], ends - starts)
            found.append(self._numbers_of(entry_rows, run.chunk_ids[entries]))
        return np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)

    def _numbers_of(self, rows: Sequence[int] | np.ndarray, chunks: Any) -> np.ndarray:
        """The pair numbers of ``(row, chunk id)`` pairs, numbering the new ones (and pointing
        the runs' layouts and the pool at them). A few pairs are found among their rows' own
        pairs; many through the hash index of every pair."""
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return np.zeros(0, dtype=np.int64)
        chunks = _keys.as_ids(chunks)
        if len(rows) <= 256:
            numbers = np.empty(len(rows), dtype=np.int64)
            listed = chunks.tolist()
            for row in np.unique(rows).tolist():
                at = np.flatnonzero(rows == row)
                numbers[at] = self._row_numbers(row, [listed[i] for i in at.tolist()])
            return numbers
        numbers = self.pairs.find(rows, chunks)
        missing = np.flatnonzero(numbers < 0)
        if len(missing):
            key_rows, key_chunks = rows[missing], chunks[missing]
            order = np.lexsort([*_keys.words(key_chunks).T[::-1], key_rows])
            r, c = key_rows[order], key_chunks[order]
            first = np.ones(len(order), dtype=bool)
            first[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
            new = self.pairs.add(r[first], c[first])
            self._point_runs_at(new)
            numbers[missing[order]] = new[np.cumsum(first) - 1]
        return numbers

    def pair_numbers(self, row: int, chunks: list[str]) -> np.ndarray:
        """The pair numbers of one query row's chunks (new pairs numbered)."""
        return self._row_numbers(row, [c.encode("utf-8") for c in chunks])

    def _row_numbers(self, row: int, chunks: list[bytes]) -> np.ndarray:
        """:meth:`pair_numbers` of chunk ids as bytes: found among the row's own pairs, without
        the hash index (the few pairs of a label event)."""
        mine = self.pairs.of_row(row)
        known = dict(zip(self.pairs.chunks[mine].tolist(), mine.tolist()))
        numbers = [known.get(c, -1) for c in chunks]
        missing = list(dict.fromkeys(c for c, n in zip(chunks, numbers) if n < 0))
        if missing:
            new = self.pairs.add(np.full(len(missing), row, dtype=np.int64), _keys.as_ids(missing))
            self._point_runs_at(new)
            known.update(zip(missing, new.tolist()))
            numbers = [known[c] for c in chunks]
        return np.array(numbers, dtype=np.int64)

    def _point_runs_at(self, numbers: np.ndarray) -> None:
        """Enter newly numbered pairs in every run's layout and in the pool flags."""
        self._fit_pool()
        if not self._layouts:
            return
        rows, chunks = self.pairs.rows[numbers], self.pairs.chunks[numbers]
        if len(numbers) > 64:
            index = _keys.PairIndex(rows, chunks, self._query_hash[rows])
            affected = np.unique(rows)
        for name, run in self.runs.items():
            layout = self._layouts[name]
            rr = self.run_rows[name]
            if len(numbers) > 64:
                have = affected[rr[affected] >= 0]
                starts, ends = run.offsets[rr[have]], run.offsets[rr[have] + 1]
                if not len(have):
                    continue
                entries = np.concatenate([np.arange(s, e) for s, e in zip(starts.tolist(), ends.tolist())])
                entry_rows = np.repeat(have, ends - starts)
                hit = index.get(entry_rows, run.chunk_ids[entries], query_hash=self._query_hash[entry_rows])
                found = hit >= 0
                pos = entries[found] - run.offsets[run.qidx[entries[found]]]
                layout.pairs[entry_rows[found], pos] = numbers[hit[found]]
                self._in_pool[numbers[hit[found]][pos < POOL_DEPTH]] = True
                continue
            for i in np.flatnonzero(rr[rows] >= 0).tolist():
                r = int(rr[rows[i]])
                ranked = run.chunk_ids[run.offsets[r]:run.offsets[r + 1]]
                width = max(ranked.dtype.itemsize, chunks.dtype.itemsize)
                at = np.flatnonzero(_keys.widen(ranked, width) == _keys.widen(chunks[i:i + 1], width)[0])
                if len(at):
                    layout.pairs[rows[i], at[0]] = numbers[i]
                    if at[0] < POOL_DEPTH:
                        self._in_pool[numbers[i]] = True

    def _layout(self, name: str) -> RunLayout:
        """A run's ranked chunks as pair numbers (one hash lookup of every entry)."""
        run = self.runs[name]
        n_rows = len(self.query_ids)
        lengths = self.run_lengths[name]
        width = int(lengths.max()) if n_rows else 0
        pairs = np.full((n_rows, width), -1, dtype=np.int32)
        row_of = _keys.lookup(self.query_bytes, run.query_id_bytes)
        if len(row_of) == n_rows and len(run) == n_rows * width and np.array_equal(row_of, np.arange(n_rows)):
            # every query ranked to the same depth: the entries are the matrix, row by row
            numbers = self.pairs.find(run.qidx, run.chunk_ids, run.pair_hashes)
            return RunLayout(numbers.astype(np.int32).reshape(n_rows, width), lengths)
        entry_row = row_of[run.qidx]
        known = entry_row >= 0
        if known.all():
            numbers = self.pairs.find(entry_row, run.chunk_ids, run.pair_hashes)
            pos = np.arange(len(run)) - run.offsets[run.qidx]
            pairs[entry_row, pos] = numbers
        elif known.any():
            sel = np.flatnonzero(known)
            numbers = self.pairs.find(entry_row[sel], run.chunk_ids[sel], run.pair_hashes[sel])
            pos = sel - run.offsets[run.qidx[sel]]
            pairs[entry_row[sel], pos] = numbers
        return RunLayout(pairs, lengths)

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
                     skipped: dict[str, set[tuple[str, str]]]) -> None:
        """Labels as read by :meth:`_fetch_labels` into the engine: pairs numbered, the runs'
        layouts made (on two threads for large runs), the copy of the labels kept."""
        self.stamp = stamp
        self.policy = policy
        self.unjudged = skipped
        self.labels_used = len(labels)
        per_query = np.bincount(labels.pair_query[labels.pair], minlength=len(labels.queries))
        names = _keys.decode(labels.queries)
        self.label_rows = {names[i]: int(per_query[i]) for i in np.flatnonzero(per_query).tolist()}
        row_of_query = _keys.lookup(self.query_bytes, labels.queries)
        pair_row = row_of_query[labels.pair_query]
        kept = pair_row >= 0  # a query the screen does not list (added since it read them): left out
        width = max([labels.chunks.dtype.itemsize] + [r.chunk_ids.dtype.itemsize for r in self.runs.values()])
        self.pairs = LivePairs(pair_row[kept], _keys.widen(labels.chunks[labels.pair_chunk[kept]], width),
                            len(self.query_ids), self._query_hash)
        number = np.cumsum(kept) - 1
        rows_kept = kept[labels.pair]
        pair = number[labels.pair[rows_kept]]
        self._names = list(labels.names)
        self._code = {n: i for i, n in enumerate(self._names)}
        self._labels = LiveLabels(pair, labels.annotator[rows_kept], labels.grade[rows_kept],
                               self.pairs.rows[pair])
        self._decided = dict(decided)
        self._in_pool = np.zeros(0, dtype=bool)
        self._layouts = {}
        names_ = list(self.runs)
        if sum(len(r) for r in self.runs.values()) >= PARALLEL_CELLS and len(names_) > 1:
            self.pairs.index()  # built once, before the threads read it
            self._layouts = dict(zip(names_, self._pool().map(self._layout, names_)))
        else:
            self._layouts = {name: self._layout(name) for name in names_}
        self._fit_pool()
        for layout in self._layouts.values():
            top = layout.pairs[:, :POOL_DEPTH]
            self._in_pool[top[top >= 0]] = True

    def _fit_pool(self) -> None:
        if len(self._in_pool) < self.pairs.n:
            grown = np.zeros(max(self.pairs.n, 2 * len(self._in_pool)), dtype=bool)
            grown[:len(self._in_pool)] = self._in_pool
            self._in_pool = grown

    def _count_covered(self, pair: np.ndarray, who: np.ndarray) -> None:
        """Per annotator code, the labels in the pool of each query row."""
        self._fit_pool()
        n = len(self.query_ids)
        pooled = self._in_pool[pair]
        codes = len(self._names)
        counts = np.bincount(who[pooled] * n + self.pairs.rows[pair[pooled]], minlength=codes * n)
        self._covered = {c: counts[c * n:(c + 1) * n].copy() for c in range(codes)}

    # -- judgments of the queries a label touched -------------------------------------------

    def _gold(self, labels: LabelArrays, decided: dict[tuple[str, str], int],
              rule: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The judgments of a view: :func:`ragjudge.services.gold.gold.labels_gold`, and on a
        complete reference's queries its closed world over every run
        (:func:`ragjudge.services.gold.gold.closure`), as :func:`ragjudge.services.gold.gold.gold`
        makes them for the whole project."""
        from ragjudge.services.gold.gold import closed_queries, closure, labels_gold, left_unjudged

        if rule != self.rule and rule.startswith("annotator:"):
            return self._in_place_of_gold(labels, decided, rule.split(":", 1)[1])
        q, c, g = labels_gold(labels, decided, rule, self.policy, self.unjudged)
        closed = closed_queries(labels, self.policy, rule)
        if not closed:
            return q, c, g
        eq, ec = closure(q, c, closed, self.runs.values(),
                         unjudged=left_unjudged(self.unjudged, self.policy, rule))
        return (np.concatenate([q, eq]), np.concatenate([c, ec]),
                np.concatenate([g, np.full(len(eq), self.policy.lowest, dtype=np.int64)]))

    def _in_place_of_gold(self, labels: LabelArrays, decided: dict[tuple[str, str], int],
                          name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """An annotator's view for the ranges: on the queries they judged, the gold with their
        grade in place of the gold's on every pair they graded (a pair they never saw keeps the
        gold's grade, so their view is not poorer than the gold for want of labels)."""
        mine = labels.annotators == name
        if not mine.any():
            empty = np.array([], dtype=object)
            return empty, empty.copy(), np.array([], dtype=np.int64)
        q, c, g = self._gold(self._gold_labels(labels, self.rule), decided, self.rule)
        xq, xc, xg = labels.query_ids[mine], labels.chunk_ids[mine], labels.grades[mine]
        queries = set(xq.tolist())
        own = set(zip(xq.tolist(), xc.tolist()))
        keep = np.fromiter((qid in queries and (qid, cid) not in own
                            for qid, cid in zip(q.tolist(), c.tolist())), dtype=bool, count=len(q))
        return (np.concatenate([q[keep], xq]), np.concatenate([c[keep], xc]),
                np.concatenate([np.asarray(g, dtype=np.int64)[keep], xg]))

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

    def _rules(self) -> list[str]:
        rules = [self.rule]
        if self.with_ranges:
            rules += [f"annotator:{a}" for a in self.annotators if f"annotator:{a}" != self.rule
                      and (self.include_llm or a not in self.llm)]
        return rules

    def _view_measures(self, rule: str) -> list[str]:
        return self._gold_measures() if rule == self.rule else list(self.measures)

    def _new_view(self, rule: str) -> LiveView:
        measures = self._view_measures(rule)
        n = len(self.query_ids)
        view = LiveView(rule, measures, present=np.zeros(n, dtype=bool))
        view.parsed = [parse_measure(m) for m in measures]
        view.plain = [j for j, m in enumerate(view.parsed) if not m.needs]
        view.rag = [j for j, m in enumerate(view.parsed) if m.needs]
        for name in self.runs:
            view.values[name] = np.full((n, len(measures)), np.nan)
        view.space = self
        view.grades = np.full(self.pairs.n, NO_GRADE, dtype=np.int64)
        view.per_row = np.zeros(n, dtype=np.int64)
        return view

    def _stamp_done(self, t0: float) -> None:
        self.compute_ms = (time.perf_counter() - t0) * 1000
        self.version += 1
        self.updated_at = datetime.now(UTC)

    # -- evaluation of a view ----------------------------------------------------------------

    def _qrels_of(self, view: LiveView, query_ids: Iterable[str]) -> Qrels:
        """The view's qrels of some queries, chunk ids as wide as the runs' (the pair index
        compares ids as words of equal width)."""
        qs: list[str] = []
        cs: list[str] = []
        gs: list[int] = []
        for qid in query_ids:
            for cid, grade in view.judgments_of(qid).items():
                qs.append(qid)
                cs.append(cid)
                gs.append(grade)
        q, c, g = np.array(qs, dtype=object), np.array(cs, dtype=object), np.array(gs, dtype=np.int64)
        chunks = encode_ids(c)
        width = max([chunks.dtype.itemsize] + [r.chunk_ids.dtype.itemsize for r in self.runs.values()])
        return Qrels(encode_id_runs(q), chunks.astype(f"S{width}"), np.asarray(g, dtype=np.int64),
                     top_grade=self.project.scale.max)

    def _view_qrels(self, grades: np.ndarray) -> Qrels:
        """The qrels of a view's grades per pair number (rows grouped by query row)."""
        judged = np.flatnonzero(grades != NO_GRADE)
        rows = self.pairs.rows[judged]
        if len(rows) > 1 and np.any(rows[1:] < rows[:-1]):  # pairs numbered since: regroup
            n = max(self.pairs.n, 1)
            judged = np.sort(rows * n + judged) % n
            rows = self.pairs.rows[judged]
        counts = np.bincount(rows, minlength=len(self.query_ids))
        present = np.flatnonzero(counts)
        counts = counts[present]
        return Qrels.from_grouped(self.query_bytes[present], counts, self.pairs.chunks[judged],
                                  grades[judged], top_grade=self.project.scale.max)

    def _full(self, view: LiveView) -> None:
        self._full_views([view])

    def _full_views(self, views: list[LiveView]) -> None:
        """Evaluate views on every query they judge, for every run: the measures that need only
        the qrels and the run on matrices gathered from the runs' layouts (the qrels' counts
        computed on a view's first run and shared by its others), the others through
        :func:`evaluate` with the project's extras.

        Each view's qrels and first run make one task, each other (view, run) one more; on
        large matrices the tasks run on two threads (numpy lets go of the interpreter in its
        array loops), each writing only its own view's matrix of its own run."""
        passes = [LivePass(self, view) for view in views]
        names = list(self.runs)
        width = max((layout.pairs.shape[1] for layout in self._layouts.values()), default=0)
        cells = len(self.query_ids) * width * len(names) * len(passes)
        pool = self._pool() if cells >= PARALLEL_CELLS and len(passes) * len(names) > 2 else None

        def run_all(tasks: list[tuple[LivePass, str]]) -> None:
            if pool is None:
                for task, name in tasks:
                    task.evaluate(name)
            else:
                list(pool.map(lambda t: t[0].evaluate(t[1]), tasks))

        if names:
            run_all([(p, names[0]) for p in passes])
            run_all([(p, name) for name in names[1:] for p in passes if p.plain])
        for p in passes:
            p.finish()

    @staticmethod
    def _pool() -> Any:
        """The two worker threads of the engines' large passes (made once per process; a task
        never waits on another task of the pool)."""
        global _THREADS
        with _THREADS_LOCK:
            if _THREADS is None:
                from concurrent.futures import ThreadPoolExecutor

                _THREADS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="ragjudge-eval")
            return _THREADS

    def _rows(self, query_ids: Iterable[str]) -> np.ndarray:
        return np.fromiter((self.row[q] for q in query_ids), dtype=np.int64)

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
        run = self.runs[name]
        rr = self.run_rows[name]
        q, c = [], []
        for qid in query_ids:
            r = rr[self.row[qid]]
            if r >= 0:
                chunks = run.chunk_ids[run.offsets[r]:run.offsets[r + 1]]
                q.append(np.full(len(chunks), qid.encode("utf-8")))
                c.append(chunks)
        if not q:
            return Run([], [], None, ordered=True, name=name)
        return Run(np.concatenate(q), np.concatenate(c), None, ordered=True, name=name)

    def _evaluate_plain(self, jobs: list[tuple[LiveView, list[str]]]) -> None:
        """Every (view, run, touched query) as one row of a single small evaluation context:
        its judgments are the query's under the view, its grade matrix gathered from the run's
        layout (the rows keyed by their position, as zero-padded decimals)."""
        from ragjudge.metrics.evaluate import max_depth

        jobs = [(view, judged) for view, judged in jobs if judged and view.plain]
        if not jobs:
            return
        columns: dict[str, int] = {}
        parsed: list[Measure] = []
        for view, _ in jobs:
            for j in view.plain:
                label = view.measures[j]
                if label not in columns:
                    columns[label] = len(parsed)
                    parsed.append(view.parsed[j])
        names = list(self.runs)
        if not names:
            return
        width = max(layout.pairs.shape[1] for layout in self._layouts.values())
        counts: list[int] = []
        pairs: list[np.ndarray] = []
        grades: list[np.ndarray] = []
        blocks: list[np.ndarray] = []
        n_ret: list[np.ndarray] = []
        places: list[tuple[LiveView, int, int]] = []  # (view, run index, query row) of each row
        for view, judged in jobs:
            view_grades = view.fitted()
            rows = self._rows(judged)
            for row in rows.tolist():
                mine = self.pairs.of_row(row)
                mine = mine[view_grades[mine] != NO_GRADE]
                for i in range(len(names)):
                    counts.append(len(mine))
                    pairs.append(mine)
                    grades.append(view_grades[mine])
                    places.append((view, i, row))
            for name in names:
                layout = self._layouts[name]
                ranked = layout.pairs[rows]
                block = np.full((len(rows), width), -1, dtype=np.int32)
                block[:, :ranked.shape[1]] = np.where(
                    ranked >= 0, np.maximum(view_grades[np.maximum(ranked, 0)], -1), -1)
                blocks.append(block)
                n_ret.append(layout.n_ret[rows])
        # blocks are (view, run) by query; the rows are (view, query, run): put them in order
        order: list[int] = []
        at = 0
        for _, judged in jobs:
            k = len(judged)
            for q in range(k):
                order.extend(at + i * k + q for i in range(len(names)))
            at += k * len(names)
        matrix = np.concatenate(blocks)[order]
        ranked_n = np.concatenate(n_ret)[order]
        keys = np.array([b"%010d" % k for k in range(len(counts))])
        qrels = Qrels.from_grouped(keys, np.array(counts, dtype=np.int64),
                                   self.pairs.chunks[np.concatenate(pairs)], np.concatenate(grades),
                                   top_grade=self.project.scale.max)
        ctx = LayoutContext(qrels, None, qrels.query_id_bytes, n_ret=ranked_n,
                             gather=lambda size: matrix[:, :size], threshold=self.threshold,
                             depth=max_depth(parsed))
        for gain, cutoffs in ideal_cutoffs(parsed).items():
            ctx.prime_ideal_dcg(cutoffs, gain)
        values = live_kernels(ctx, parsed)
        maps = {id(view): (np.array(view.plain), np.array([columns[view.measures[j]] for j in view.plain]))
                for view, _ in jobs}
        for k, (view, i, row) in enumerate(places):
            cols, source = maps[id(view)]
            view.values[names[i]][row, cols] = np.nan if names[i] in self.answers_only \
                else values[k, source]

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
        jobs: list[tuple[LiveView, list[str]]] = []
        for rule, view in self.views.items():
            # an annotator's view holds the gold of the queries they judged: it moves with them
            if rule != self.rule and not adjudicated and rule.split(":", 1)[1] not in annotators \
                    and not view.present[self._rows(touched)].any():
                continue
            judgments: dict[str, dict[str, int]] = {}
            for q, c, g in zip(*(a.tolist() for a in self._gold(self._gold_labels(labels, rule), decided, rule))):
                judgments.setdefault(q, {})[c] = g
            jobs.append((view, self._begin(view, touched, judgments)))
        self._evaluate_plain(jobs)
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
        with self.project.connect() as connection:
            self.policy = self._read_policy(connection)
            for at in range(0, len(touched), IN_BATCH):  # rows grouped by query either way
                part = list(touched[at:at + IN_BATCH])
                marks = ", ".join(["?"] * len(part))
                rows += driver_rows(connection, CURRENT_SQL.format(marks=marks), (*part, RECHECK))
                adj += driver_rows(connection, DECIDED_SQL.format(marks=marks), tuple(part))
        for q in touched:
            self.labels_used -= self.label_rows.pop(q, 0)
        for q, *_ in rows:
            self.label_rows[q] = self.label_rows.get(q, 0) + 1
            self.labels_used += 1
        labels, decided = label_arrays_from_rows(rows), {(q, c): int(g) for q, c, g in adj}
        if self._labels is not None:
            self._keep_labels(touched, labels, decided)
        return labels, decided

    def _keep_labels(self, touched: list[str], labels: LabelArrays,
                     decided: dict[tuple[str, str], int]) -> None:
        """The touched queries' current labels and adjudications, as just read, into the
        engine's copy (pairs numbered, annotators coded) and the pool coverage counts."""
        assert self._labels is not None
        touched_set = set(touched)
        self._decided = {k: g for k, g in self._decided.items() if k[0] not in touched_set}
        self._decided.update(decided)
        q = labels.query_ids.tolist()
        spans: dict[str, list[int]] = {}
        for i, query in enumerate(q):  # rows of one query are adjacent (sorted)
            spans.setdefault(query, [i, i])[1] = i + 1
        for name in set(labels.annotators.tolist()) - set(self._code):
            self._code[name] = len(self._names)
            self._names.append(name)
        self._fit_pool()
        for query in touched:
            row = self.row.get(query)
            if row is None:
                continue
            start, end = spans.get(query, (0, 0))
            pair = self.pair_numbers(row, labels.chunk_ids[start:end].tolist())
            who = np.array([self._code[a] for a in labels.annotators[start:end].tolist()], dtype=np.int64)
            self._labels.replace(row, pair, who, labels.grades[start:end].astype(np.int64))
            pooled = self._in_pool[pair]
            for code, counts in self._covered.items():
                counts[row] = int(np.count_nonzero(pooled & (who == code)))
            for code in set(who.tolist()) - set(self._covered):
                self._covered[code] = np.zeros(len(self.query_ids), dtype=np.int64)
                self._covered[code][row] = int(np.count_nonzero(pooled & (who == code)))

    # -- what the screen shows ---------------------------------------------------------------

    def means(self, rule: str | None = None, rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """run -> mean of each column over the judged queries (``rows``: a subset of them),
        summed in query order like :attr:`EvalResult.means`."""
        view = self.views[rule or self.rule]
        out = {}
        if rows is None:
            for name in view.values:
                count, total = view.counts[name], view.totals[name]
                with np.errstate(invalid="ignore", divide="ignore"):
                    out[name] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
            return out
        every = len(rows) == len(view.present)  # rows are ascending and distinct: all of them
        for name, matrix in view.values.items():
            m = matrix if every else matrix[rows]
            defined = ~np.isnan(m)
            count = defined.sum(axis=0)
            total = np.where(defined, m, 0.0).sum(axis=0)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[name] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        return out

    def resync(self) -> None:
        """Make every view's running sums exact again (column sums in query order)."""
        with self.lock:
            for view in self.views.values():
                view.resum()

    def snapshot(self, *, measure: str | None = None, by: str | None = None) -> LiveSnapshot:
        """The numbers of the moment; ``measure`` adds its per-query column, ``by`` its strata."""
        with self.lock:
            gold = self.views[self.rule]
            labels = gold.measures
            means = self.means()
            col = {m: j for j, m in enumerate(labels)}
            agg = {n: {m: float(v[col[m]]) for m in self.measures} for n, v in means.items()}
            judged10 = {n: float(v[col[JUDGED]]) for n, v in means.items()}
            unjudged = {}
            for name, matrix in gold.values.items():
                shown = np.minimum(self.run_lengths[name], 10)
                # a query evaluated for its nuggets alone has no grade: its top 10 is unjudged
                judged = np.nan_to_num(np.rint(matrix[:, col[JUDGED]] * 10))
                unjudged[name] = int(np.where(gold.present, shown - judged, 0).sum())
            curve = {n: [float(v[col[f"{self.curve}@{k}"]]) for k in CURVE_K] for n, v in means.items()}
            pr = {n: [float(v[col[p]]) for p in _PR_NAMES] for n, v in means.items()}
            spread = self._ranges() if self.with_ranges else {"ranges": {}}
            rows = self._query_rows(measure) if measure else None
            strata, sizes = self._strata(by) if by else ({}, {})
            return LiveSnapshot(
                version=self.version, rule=self.rule, threshold=self.threshold,
                measures=list(self.measures), run_names=list(self.runs), means=agg,
                judged_at_10=judged10, unjudged_top10=unjudged,
                n_queries=int(gold.present.sum()), n_queries_total=len(self.query_ids),
                gold_pairs=gold.n_pairs(),
                labels_used=self.labels_used, annotators=list(self.annotators), **spread,
                curve=self.curve, curve_values=curve, pr_values=pr, updated_at=self.updated_at,
                touched=self.touched, compute_ms=self.compute_ms, rows=rows, strata=strata,
                strata_sizes=sizes, strata_field=by,
            )

    def _ranges(self) -> dict[str, Any]:
        """The range of each mean over the annotators whose labels cover at least
        :attr:`min_coverage` of the pool of the judged queries, each scored on the queries they
        judged; who sets each end; the gold on each one's queries; everyone's coverage."""
        gold = self.views[self.rule]
        coverage = {rule.split(":", 1)[1]: self._coverage(view, gold)
                    for rule, view in self.views.items() if rule.startswith("annotator:")}
        ranges: dict[str, dict[str, tuple[float, float]]] = {n: {} for n in self.runs}
        ends: dict[str, dict[str, tuple[str, str]]] = {n: {} for n in self.runs}
        golds: dict[str, dict[str, dict[str, float]]] = {n: {} for n in self.runs}
        enough = [a for a, share in coverage.items() if share >= self.min_coverage and share > 0]
        overall = self.means()
        on_rows: dict[bytes, dict[str, np.ndarray]] = {}  # annotators who judged the same queries
        for name in enough:
            view = self.views[f"annotator:{name}"]
            own = self.means(view.rule)
            rows = np.flatnonzero(view.present & gold.present)
            same = on_rows.get(rows.tobytes())
            if same is None:
                same = on_rows[rows.tobytes()] = self.means(rows=rows)
            for run in self.runs:
                for j, m in enumerate(self.measures):
                    k = gold.measures.index(m)
                    # their difference from the gold on their queries, moved onto the gold's mean
                    value = float(overall[run][k] + own[run][j] - same[run][k])
                    if np.isnan(value):
                        continue
                    golds[run].setdefault(m, {})[name] = float(same[run][k])
                    low, high = ranges[run].get(m, (value, value))
                    lo_name, hi_name = ends[run].get(m, (name, name))
                    if value < low:
                        low, lo_name = value, name
                    if value > high:
                        high, hi_name = value, name
                    ranges[run][m] = (low, high)
                    ends[run][m] = (lo_name, hi_name)
        return {"ranges": ranges, "range_ends": ends, "range_gold": golds,
                "coverage": dict(sorted(coverage.items())), "min_coverage": self.min_coverage}

    def _pool_of_runs(self) -> None:
        """The pool (the union of every run's top 10): its size, and its pairs per query row."""
        q, c, h, rows = [], [], [], []
        for run in self.runs.values():
            starts = run.offsets[:-1]
            keep = (np.arange(len(run)) - starts[run.qidx]) < POOL_DEPTH
            q.append(run.query_id_bytes[run.qidx[keep]])
            c.append(run.chunk_ids[keep])
            h.append(run.pair_hashes[keep])
            rows.append(_keys.lookup(self.query_bytes, run.query_id_bytes)[run.qidx[keep]])
        self._pool_rows = np.zeros(len(self.query_ids), dtype=np.int64)
        self._pool_total = 0
        if not q or not sum(len(x) for x in q):
            return
        width_q, width_c = max(x.dtype.itemsize for x in q), max(x.dtype.itemsize for x in c)
        qa = np.concatenate([_keys.widen(x, width_q) for x in q])
        ca = np.concatenate([_keys.widen(x, width_c) for x in c])
        ha = np.concatenate(h)
        ra = np.concatenate(rows)
        # distinct pairs by their hash, every equal hash checked on the exact ids
        order = np.argsort(ha)
        hs, qs, cs = ha[order], qa[order], ca[order]
        same = hs[1:] == hs[:-1]
        if np.any(same & ((qs[1:] != qs[:-1]) | (cs[1:] != cs[:-1]))):  # a collision: sort the ids
            order = np.lexsort([*_keys.words(ca).T[::-1], *_keys.words(qa).T[::-1]])
            qs, cs = qa[order], ca[order]
            same = (qs[1:] == qs[:-1]) & (cs[1:] == cs[:-1])
        first = np.ones(len(order), dtype=bool)
        first[1:] = ~same
        self._pool_total = int(first.sum())
        distinct_rows = ra[order][first]
        distinct_rows = distinct_rows[distinct_rows >= 0]
        self._pool_rows = np.bincount(distinct_rows, minlength=len(self.query_ids)).astype(np.int64)

    def _coverage(self, view: LiveView, gold: LiveView) -> float:
        """The share of the pool of the gold's judged queries that the labels of ``view``'s
        annotator cover (their own grades, not the gold their view borrows)."""
        judged = gold.per_row > 0
        size = int(self._pool_rows[judged].sum())
        if not size:
            return 0.0
        counts = self._covered.get(self._code.get(view.rule.split(":", 1)[1], -1))
        mine = int(counts[judged].sum()) if counts is not None else 0
        return min(1.0, mine / size)

    def _query_rows(self, measure: str) -> QueryRows:
        gold = self.views[self.rule]
        j = gold.measures.index(measure)
        rows = np.flatnonzero(gold.present)
        return QueryRows(
            measure=measure,
            query_ids=[self.query_ids[r] for r in rows],
            values={n: m[rows, j].copy() for n, m in gold.values.items()},
            categories=[self.categories[r] for r in rows],
            judged=gold.per_row[rows].copy(),
        )

    def strata_of(self, by: str) -> list[str]:
        """Each query's stratum for ``by`` (``category`` or a meta key), as ``ragjudge eval --by``."""
        from ragjudge.services.scoring.evaluation import stratum_of

        if by == "category":
            return [stratum_of(c) for c in self.categories]
        return [stratum_of(m.get(by)) for m in self.meta]

    def _strata(self, by: str) -> tuple[dict, dict]:
        from ragjudge.services.scoring.evaluation import NO_STRATUM

        gold = self.views[self.rule]
        labels = np.array(self.strata_of(by), dtype=object)
        out: dict[str, dict[str, dict[str, float]]] = {}
        sizes: dict[str, int] = {}
        present = gold.present
        names = sorted(set(labels[present].tolist()), key=lambda s: (s == NO_STRATUM, s))
        for stratum in names:
            rows = np.flatnonzero(present & (labels == stratum))
            means = self.means(rows=rows)
            sizes[stratum] = len(rows)
            out[stratum] = {n: {m: float(v[j]) for j, m in enumerate(self.measures)}
                            for n, v in means.items()}
        return out, sizes

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
        """Bootstrap intervals of every mean, the annotators' agreement, pool coverage."""
        with self.lock:
            version = self.version
            gold = self.views[self.rule]
            rows = np.flatnonzero(gold.present)
            cols = [gold.measures.index(m) for m in self.measures]
            matrices = {n: m[np.ix_(rows, cols)].copy() for n, m in gold.values.items()}  # type: ignore[arg-type]  # numpy's stubs omit the int lists ix_ takes
            grades = gold.fitted()
            self._fit_pool()
            pool_judged = int(np.count_nonzero((grades != NO_GRADE) & self._in_pool[:len(grades)]))
        n = len(rows)
        budget = resamples or self.resamples
        if n * budget > 4_000_000:  # keep a refresh of 10,000 queries near a second
            budget = max(200, 4_000_000 // max(n, 1))
        intervals = {name: _intervals(matrix, self.measures, budget) for name, matrix in matrices.items()}
        too_few = {name: [m for j, m in enumerate(self.measures)
                          if (~np.isnan(matrix[:, j])).sum() < MIN_INTERVAL_QUERIES]
                   for name, matrix in matrices.items()}
        for name, measures in too_few.items():
            for m in measures:
                intervals[name][m] = (float("nan"), float("nan"))
        agreement = self._agreement()
        pairs, covered = self._pool_total, pool_judged
        return LiveDetails(version=version, intervals=intervals, resamples=budget,
                           pool_pairs=pairs, pool_judged=covered, too_few=too_few, **agreement)

    def _agreement(self) -> dict:
        from ragjudge.metrics.agreement import disputed_units, krippendorff_alpha
        from ragjudge.services.agreement.ratings import load_ratings
        from ragjudge.services.agreement.views import mean_pairwise_kappa

        ratings = load_ratings(self.project)
        out: dict[str, Any] = {"alpha_ordinal": None, "alpha_nominal": None, "mean_kappa": None, "disputed": 0,
               "disputed_by_query": {}}
        if ratings.matrix.size == 0:
            return out
        out["alpha_ordinal"] = krippendorff_alpha(ratings, "ordinal").value
        out["alpha_nominal"] = krippendorff_alpha(ratings, "nominal").value
        out["mean_kappa"], out["kappa_units"], out["kappa_pairs"] = mean_pairwise_kappa(ratings)
        disputed = disputed_units(ratings)
        out["disputed"] = len(disputed)
        counts: dict[str, int] = {}
        for d in disputed:
            counts[d.unit[0]] = counts.get(d.unit[0], 0) + 1
        out["disputed_by_query"] = counts
        return out

    def unjudged_pairs(self, query_id: str, depth: int = 10) -> list[str]:
        """Chunks in some run's top ``depth`` for the query that have no gold grade yet."""
        with self.lock:
            judged = self.views[self.rule].judgments_of(query_id)
            out: dict[str, None] = {}
            row = self.row.get(query_id)
            if row is None:
                return []
            for name, run in self.runs.items():
                r = self.run_rows[name][row]
                if r < 0:
                    continue
                top = run.chunk_ids[run.offsets[r]:min(run.offsets[r] + depth, run.offsets[r + 1])]
                for c in _keys.decode(top):
                    if c not in judged:
                        out.setdefault(c, None)
            return list(out)

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


def _intervals(matrix: np.ndarray, measures: list[str], resamples: int) -> dict[str, tuple[float, float]]:
    """``{measure: (low, high)}``, as :meth:`Evaluation.intervals` (per measure, NaN dropped)."""
    out = {}
    if matrix.size and not np.isnan(matrix).any() and len(matrix) * resamples > 200_000:
        _, low, high = bootstrap_ci(matrix.T, resamples=resamples, seed=0)
        return {m: (float(lo), float(hi)) for m, lo, hi in zip(measures, low, high)}
    for j, m in enumerate(measures):
        column = matrix[:, j]
        column = column[~np.isnan(column)]
        _, low, high = bootstrap_ci(column, resamples=resamples, seed=0)
        out[m] = (float(low), float(high))
    return out


class LayoutContext(EvalContext):
    """An :class:`EvalContext` whose grade matrix is gathered from pair numbers (a run's
    :class:`_RunLayout`) and a view's grades per pair number, instead of looking every ranked
    chunk up in the qrels: the same matrices (a test compares them), built in one gather.
    ``n_ret`` is the chunks ranked for each query, ``gather(depth)`` the (queries x depth)
    grade matrix.

    With ``like`` (a context of the same qrels, queries and threshold, for another run) the
    qrels side is taken from it instead of computed again: its lookups of the queries, and its
    caches of per-query counts (relevant, judged, ideal DCG), which depend on the qrels alone.
    This leans on :class:`EvalContext`'s attributes (``_qrels_row``, ``_judgment_row``, the
    ``_n_rel`` / ``_idcg`` / ``n_judged`` caches); the tests of this module compare every
    matrix, count and value with a plain context's.
    """

    def __init__(self, qrels: Qrels, run: Run | None, query_ids: np.ndarray, *, n_ret: np.ndarray,
                 gather: Callable[[int], np.ndarray], threshold: int, depth: int | None,
                 like: EvalContext | None = None) -> None:
        self._all_n_ret, self._gather = n_ret, gather
        if like is None:
            super().__init__(qrels, None, query_ids, threshold=threshold, depth=depth)
        else:
            self.qrels, self._qids = qrels, query_ids
            self.threshold = like.threshold
            self.extras = like.extras  # none: measures that read extras take the other path
            self.n_queries = like.n_queries
            self._qrels_row, self._judgment_row = like._qrels_row, like._judgment_row
            for key in ("_n_rel", "_idcg"):
                self.__dict__[key] = like.__dict__.setdefault(key, {})
            if "n_judged" in like.__dict__:
                self.__dict__["n_judged"] = like.__dict__["n_judged"]
            self._build_empty(depth)
        self.run = run
        if self.n_queries:
            self._build(run, depth)

    def _build(self, run: Run | None, depth: int | None) -> None:
        n_ret = self._all_n_ret
        size = int(n_ret.max()) if self.n_queries else 0
        if depth is not None:
            size = min(size, int(depth))
        self.depth = size
        self.n_ret = n_ret
        self.grade_matrix = self._gather(size)

    @cached_property
    def chunk_ids(self) -> np.ndarray:
        """(Q, D) ``S`` array of the chunk ids in the matrix (b"" for padding)."""
        run = self.run
        if run is None or self.depth == 0:
            return np.zeros((self.n_queries, self.depth), dtype="S8")
        row = _keys.lookup(run.query_id_bytes, self._qids)
        start = np.where(row >= 0, run.offsets[np.maximum(row, 0)], 0)
        at = start[:, None] + np.arange(self.depth)[None, :]
        valid = self.valid
        out = np.zeros((self.n_queries, self.depth), dtype=run.chunk_ids.dtype)
        out[valid] = run.chunk_ids[at[valid]]
        return out

    def prime_ideal_dcg(self, cutoffs: Iterable[int | None], gain: str) -> None:
        """Compute :meth:`ideal_dcg` at several cutoffs in one pass and keep them in its cache:
        the sum of each query's ideal gains is built rank by rank, in the order and with the
        terms :meth:`ideal_dcg` adds them (qrels rows in ideal-rank order, a zero for a gain
        not counted), and read at each cutoff: the same numbers, bit for bit."""
        cache = self.__dict__.setdefault("_idcg", {})
        todo = sorted({k for k in cutoffs if (k, gain) not in cache}, key=lambda k: (k is None, k or 0))
        if len(todo) < 2:
            return
        g = np.maximum(self.qrels.grades, 0).astype(np.float64)
        if gain == "exp":
            g = np.exp2(g) - 1.0
        rank = self.qrels.ideal_rank
        weights = np.zeros(len(g))
        positive = g > 0
        weights[positive] = g[positive] / np.log2(rank[positive] + 1.0)
        rows = self._judgment_row
        starts = self.qrels.offsets[:-1]
        sizes = np.diff(self.qrels.offsets)
        by_size = np.argsort(-sizes, kind="stable")  # queries with more judgments first
        sizes_desc = sizes[by_size]
        total = np.zeros(self.n_queries)
        top = int(sizes.max()) if len(sizes) else 0
        done = 0
        for k in todo:
            stop = top if k is None else min(int(k), top)
            while done < stop:  # add each query's judgment at ideal rank done + 1
                live = by_size[:np.searchsorted(-sizes_desc, -(done + 1), side="right")]
                at = starts[live] + done
                target = rows[at]
                keep = target >= 0
                total[target[keep]] += weights[at[keep]]
                done += 1
            cache[(k, gain)] = total.copy()


class LivePass:
    """One view's full evaluation (:meth:`LiveEvaluation._full_views`): its qrels and each
    run's values of the plain measures (``prepare`` and ``evaluate``: they read the engine and
    write only this pass, so they may run on a worker thread), then the rest on the calling
    thread (``finish``)."""

    def __init__(self, engine: LiveEvaluation, view: LiveView) -> None:
        self.engine, self.view = engine, view
        self.grades = view.fitted()
        self.first: EvalContext | None = None
        self.values: dict[str, np.ndarray] = {}

    def prepare(self) -> None:
        """The view's qrels, and what every run's context takes from them."""
        from ragjudge.metrics.evaluate import max_depth

        engine, view, grades = self.engine, self.view, self.grades
        self.qrels = engine._view_qrels(grades)
        self.plain = [view.parsed[j] for j in view.plain] if self.qrels.n_queries else []
        self.rag = [view.parsed[j] for j in view.rag]
        self.qids = self.qrels.query_id_bytes
        self.rows = _keys.lookup(engine.query_bytes, self.qids)
        self.depth = max_depth(self.plain)
        self.source = np.full(len(grades) + 1, -1, dtype=np.int32)
        self.source[:-1] = np.maximum(grades, -1)
        self.ideal = ideal_cutoffs(self.plain)
        # every query judged and every measure plain: a run's values are its whole matrix
        self.whole = bool(self.plain) and len(self.rows) == len(view.present) \
            and view.plain == list(range(len(view.measures)))
        self.sums: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def evaluate(self, name: str) -> None:
        """The plain measures on one run (the first run's context computes the qrels' counts,
        the later ones share them); the first call prepares the pass."""
        if self.first is None:
            self.prepare()
        if not self.plain:
            return
        engine = self.engine
        pairs, rows, source = engine._layouts[name].pairs, self.rows, self.source

        def gather(size: int) -> np.ndarray:
            if len(rows) == pairs.shape[0] and size == pairs.shape[1]:
                return source[pairs]
            return source[pairs[rows, :size]]

        ctx = LayoutContext(self.qrels, engine.runs[name], self.qids,
                             n_ret=engine._layouts[name].n_ret[rows], gather=gather,
                             threshold=engine.threshold, depth=self.depth, like=self.first)
        if self.first is None:
            for gain, cutoffs in self.ideal.items():
                ctx.prime_ideal_dcg(cutoffs, gain)
        values = live_kernels(ctx, self.plain)
        if name in engine.answers_only:  # no ranking: its measures are undefined, as in eval
            values = np.full_like(values, np.nan)
        if self.first is None:
            self.first = ctx
        self.values[name] = values
        if self.whole:  # the values are the run's whole matrix: its column sums, here
            defined = ~np.isnan(values)
            self.sums[name] = (defined.sum(axis=0), np.where(defined, values, 0.0).sum(axis=0))

    def finish(self) -> None:
        """Put the values in the view's matrices (and evaluate the measures that need the
        project's extras), mark the evaluated queries, sum the columns."""
        view, engine = self.view, self.engine
        if not hasattr(self, "qrels"):
            self.prepare()
        view.present[:] = False
        if self.qrels.n_queries == 0 and not view.rag:
            for matrix in view.values.values():
                matrix[:] = np.nan
            view.resum()
            return
        if self.whole:
            for name in engine.runs:
                view.values[name] = self.values[name]
                view.counts[name], view.totals[name] = self.sums[name]
            view.present[:] = True
            return
        rows = None
        for name, run in engine.runs.items():
            matrix = view.values[name]
            matrix[:] = np.nan
            if self.plain:
                rows = self.rows
                matrix[np.ix_(rows, view.plain)] = self.values[name]  # type: ignore[arg-type]  # numpy's stubs omit the int lists ix_ takes
            if self.rag:
                result = engine._rag(view, name, self.qrels, run, self.rag, "judged")
                rows = engine._rows(result.query_ids)
                matrix[np.ix_(rows, view.rag)] = result.values  # type: ignore[arg-type]  # numpy's stubs omit the int lists ix_ takes
        if rows is not None:
            view.present[rows] = True
        view.resum()
