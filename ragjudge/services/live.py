"""Live evaluation: every run of a project scored against its gold qrels, kept current as labels
arrive — recomputing only the queries a new label touches.

State (:class:`LiveEvaluation`), built once by :meth:`LiveEvaluation.load`:

- the project's queries in the byte order of their ids (the row order of every evaluation
  context, so that means summed here are bit-for-bit the means ``ragjudge eval`` prints);
- every stored run, read once;
- *views*: one qrels per aggregation rule in use — the gold rule, and each annotator's own
  labels (``annotator:NAME``) for the between-annotator ranges — each with a (queries ×
  measures) matrix of per-query values per run, NaN for queries its qrels do not judge.

:meth:`LiveEvaluation.poll` reads the label events newer than the last one seen (any process may
have written them), re-reads the current labels of just the queries they touch, rebuilds those
queries' gold grades with the same rule code as :func:`ragjudge.services.qrels.gold_qrels`, and
re-evaluates those queries only: all runs at once, each (run, query) as its own row of one small
evaluation context. The aggregates are then column sums over the matrices. Judgments of the runs'
generated answers (when an answer measure is shown) are taken in the same way: the answer
measures of the queries whose answers were judged are evaluated again.

Everything the screen shows comes out as an immutable :class:`LiveSnapshot` (numbers that change
on every label) and :class:`LiveDetails` (bootstrap intervals, agreement, pool coverage: slower,
recomputed less often), so a worker thread can compute while the UI thread renders.
"""

from __future__ import annotations

import itertools
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

if TYPE_CHECKING:
    from ragjudge.services.project import Project

if TYPE_CHECKING:
    from ragjudge.services.qrels import GoldPolicy, LabelArrays

__all__ = [
    "COVERAGE_CHOICES",
    "CURVE_K",
    "MEASURES_SETTING",
    "MIN_INTERVAL_QUERIES",
    "PR_LEVELS",
    "RANGE_COVERAGE",
    "RANGE_COVERAGE_SETTING",
    "LiveDetails",
    "LiveEvaluation",
    "LiveSnapshot",
    "QueryRows",
    "saved_coverage",
    "saved_measures",
    "save_coverage",
    "save_measures",
]

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
_SEP = "\x1f"  # between run index and query id in the rows of an incremental context
SMALL_VIEW_CELLS = 50_000
"""Up to this many (query x column) cells a view's sums are recomputed exactly after every
update (well under a millisecond); beyond, running sums are kept and made exact again by
:meth:`LiveEvaluation.resync` (the details pass)."""


def saved_measures(project: Project) -> list[str]:
    """The measures the project's evaluation screen shows (the default scorecard until saved)."""
    from ragjudge.services.evaluation import DEFAULT_MEASURES

    saved = project.get_setting(MEASURES_SETTING)
    if isinstance(saved, list) and saved:
        try:
            for name in saved:
                parse_measure(name)
            return [str(n) for n in saved]
        except UsageError:
            pass
    return list(DEFAULT_MEASURES)


def saved_coverage(project: Project) -> float:
    """The share of the pool an annotator must cover to enter the ranges (the default until
    saved)."""
    saved = project.get_setting(RANGE_COVERAGE_SETTING)
    if isinstance(saved, (int, float)) and not isinstance(saved, bool) and 0 <= saved <= 1:
        return float(saved)
    return RANGE_COVERAGE


def save_coverage(project: Project, share: float) -> None:
    """Keep the coverage an annotator needs to enter the ranges (0 to 1) in the project."""
    if not 0 <= share <= 1:
        raise UsageError(f"the coverage an annotator needs is a share from 0 to 1, not {share}.")
    project.set_settings({RANGE_COVERAGE_SETTING: float(share)})


def save_measures(project: Project, measures: Sequence[str]) -> None:
    """Keep the evaluation screen's measures in the project (checked first)."""
    for name in measures:
        parse_measure(name)
    project.set_settings({MEASURES_SETTING: list(measures)})


# -- snapshots the screen renders ----------------------------------------------------------


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


# -- the engine ------------------------------------------------------------------------------


_CHANGES = itertools.count(1)


@dataclass
class _View:
    rule: str
    measures: list[str]
    values: dict[str, np.ndarray] = field(default_factory=dict)
    present: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    totals: dict[str, np.ndarray] = field(default_factory=dict)
    """run -> per column: sum of the defined values (exact after a full pass, then running)"""
    counts: dict[str, np.ndarray] = field(default_factory=dict)
    """run -> per column: queries where the value is defined"""
    base: tuple[np.ndarray, np.ndarray, np.ndarray] = field(default_factory=lambda: (
        np.array([], dtype=object), np.array([], dtype=object), np.array([], dtype=np.int64)))
    """the judgments of the last full pass: (query ids, chunk ids, grades), grouped by query"""
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    """query -> its rows in ``base``"""
    override: dict[str, dict[str, int]] = field(default_factory=dict)
    """query -> its judgments since (empty: none left), replacing its rows in ``base``"""
    parsed: list[Measure] = field(default_factory=list)
    """``measures`` parsed"""
    plain: list[int] = field(default_factory=list)
    """columns of the measures that need only the qrels and the run"""
    rag: list[int] = field(default_factory=list)
    """columns of the measures that need the project's facets, nuggets, ..."""
    changes: int = field(default_factory=lambda: next(_CHANGES))
    """a number new with every change of the judgments (the pool coverage is cached on it)"""

    def set_base(self, q: np.ndarray, c: np.ndarray, g: np.ndarray) -> None:
        if len(q) and np.any(q[1:] < q[:-1]):
            order = np.argsort(q, kind="stable")
            q, c, g = q[order], c[order], g[order]
        self.base = (q, c, g)
        self.override = {}
        self.changes = next(_CHANGES)
        starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]]) if len(q) else np.zeros(0, dtype=int)
        ends = np.r_[starts[1:], len(q)]
        self.spans = {q[s]: (int(s), int(e)) for s, e in zip(starts, ends)}

    def judgments_of(self, query_id: str) -> dict[str, int]:
        if query_id in self.override:
            return self.override[query_id]
        span = self.spans.get(query_id)
        if span is None:
            return {}
        _, c, g = self.base
        return dict(zip(c[span[0]:span[1]].tolist(), g[span[0]:span[1]].tolist()))

    def count_of(self, query_id: str) -> int:
        if query_id in self.override:
            return len(self.override[query_id])
        span = self.spans.get(query_id)
        return 0 if span is None else span[1] - span[0]

    def judged_queries(self) -> list[str]:
        out = {q for q in self.spans if q not in self.override}
        out |= {q for q, j in self.override.items() if j}
        return sorted(out)

    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every current judgment: (query ids, chunk ids, grades) as object/int arrays."""
        q, c, g = self.base
        if not self.override:
            return q, c, g
        keep = np.array([qid not in self.override for qid in q.tolist()], dtype=bool) if len(q) \
            else np.zeros(0, dtype=bool)
        extra = [(qid, cid, grade) for qid, items in self.override.items() for cid, grade in items.items()]
        eq = np.array([e[0] for e in extra], dtype=object)
        ec = np.array([e[1] for e in extra], dtype=object)
        eg = np.array([e[2] for e in extra], dtype=np.int64)
        return np.concatenate([q[keep], eq]), np.concatenate([c[keep], ec]), np.concatenate([g[keep], eg])

    def n_pairs(self) -> int:
        return len(self.base[0]) - sum(self.spans.get(q, (0, 0))[1] - self.spans.get(q, (0, 0))[0]
                                      for q in self.override) + sum(len(j) for j in self.override.values())

    def resum(self) -> None:
        """Column sums in query order, as :attr:`EvalResult.means` adds them (bit for bit)."""
        for name, matrix in self.values.items():
            defined = ~np.isnan(matrix)
            self.counts[name] = defined.sum(axis=0)
            self.totals[name] = np.where(defined, matrix, 0.0).sum(axis=0)

    def add_rows(self, rows: np.ndarray, sign: float) -> None:
        for name, matrix in self.values.items():
            part = matrix[rows]
            defined = ~np.isnan(part)
            self.counts[name] = self.counts[name] + int(sign) * defined.sum(axis=0)
            self.totals[name] = self.totals[name] + sign * np.where(defined, part, 0.0).sum(axis=0)


class _LabelCopy:
    """The engine's copy of the current labels (as :func:`ragjudge.services.qrels.current_labels`
    gives them: sorted by query, chunk, annotator) and adjudications, kept equal to the database
    by replacing the rows of the queries that new events touch."""

    def __init__(self, labels, decided: dict[tuple[str, str], int]) -> None:  # noqa: ANN001
        self._set(labels)
        self.decided = dict(decided)

    def _set(self, labels) -> None:  # noqa: ANN001
        self.base = labels
        self.override: dict[str, Any] = {}
        q = labels.query_ids
        if len(q):
            starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
            ends = np.r_[starts[1:], len(q)]
            self.spans = dict(zip(q[starts].tolist(), zip(starts.tolist(), ends.tolist())))
        else:
            self.spans = {}

    def replace(self, touched: Iterable[str], labels, decided: dict[tuple[str, str], int]) -> None:  # noqa: ANN001
        """The touched queries' current labels and adjudications, as just read."""
        touched = set(touched)
        q = labels.query_ids
        spans: dict[str, list[int]] = {}
        for i, query in enumerate(q.tolist()):  # rows of one query are adjacent (sorted)
            spans.setdefault(query, [i, i])[1] = i + 1
        for query in touched:
            start, end = spans.get(query, (0, 0))
            self.override[query] = type(labels)(q[start:end], labels.chunk_ids[start:end],
                                                labels.annotators[start:end], labels.grades[start:end])
        self.decided = {k: g for k, g in self.decided.items() if k[0] not in touched}
        self.decided.update(decided)

    def merged(self) -> LabelArrays:
        """Every current label, sorted by query, chunk, annotator (then kept as the base)."""
        if not self.override:
            return self.base
        base = self.base
        q = base.query_ids
        pieces: list[tuple] = []
        at = 0
        for query in sorted(self.override):
            span = self.spans.get(query)
            if span is None:
                pos = int(np.searchsorted(q, query)) if len(q) else 0
                span = (pos, pos)
            pieces.append((at, span[0]))
            pieces.append(self.override[query])
            at = span[1]
        pieces.append((at, len(q)))
        columns = []
        for name in ("query_ids", "chunk_ids", "annotators", "grades"):
            parts = [getattr(base, name)[p[0]:p[1]] if isinstance(p, tuple) else getattr(p, name)
                     for p in pieces]
            columns.append(np.concatenate(parts))
        self._set(type(base)(*columns))
        return self.base


_IN_BATCH = 500
_CURRENT_SQL = (
    "SELECT l.query_id, l.chunk_id, l.annotator, l.grade FROM labels AS l JOIN "
    "(SELECT max(id) AS id FROM labels WHERE query_id IN ({marks}) "
    "AND (source IS NULL OR source != ?) GROUP BY annotator, query_id, chunk_id) AS n "
    "ON l.id = n.id WHERE l.grade IS NOT NULL ORDER BY l.query_id, l.chunk_id, l.annotator"
)
_DECIDED_SQL = (
    "SELECT a.query_id, a.chunk_id, a.grade FROM adjudications AS a JOIN "
    "(SELECT max(id) AS id FROM adjudications WHERE query_id IN ({marks}) "
    "GROUP BY query_id, chunk_id) AS n ON a.id = n.id"
)


def _raw(connection, sql: str, params: tuple) -> list[tuple]:  # noqa: ANN001
    """Rows of ``sql`` (``?`` placeholders) from the database driver's own cursor."""
    if connection.dialect.paramstyle != "qmark":
        sql = sql.replace("%", "%%").replace("?", "%s")
    cursor = connection.connection.driver_connection.cursor()
    try:
        cursor.execute(sql, params)
        return cursor.fetchall()
    finally:
        cursor.close()


def _encode(values: Any) -> np.ndarray:
    """Ids as :func:`ragjudge.metrics._keys.as_ids` makes them (UTF-8 bytes, NUL padded to a
    multiple of 8); ASCII ids of an array convert in numpy, without a Python call per id."""
    if isinstance(values, np.ndarray) and values.dtype == object and len(values):
        try:
            return _keys.as_ids(values.astype("U").astype("S"))
        except (UnicodeEncodeError, TypeError, ValueError):
            pass
    return _keys.as_ids(values)


def _encode_runs(values: Any) -> np.ndarray:
    """:func:`_encode` for ids that come in runs of equal values (a view's query ids, grouped by
    query): each run's id is encoded once."""
    if not (isinstance(values, np.ndarray) and values.dtype == object and len(values)):
        return _encode(values)
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    return np.repeat(_encode(values[starts]), np.diff(np.r_[starts, len(values)]))


class LiveEvaluation:
    """Every run of ``project`` scored against its gold qrels, updated per touched query.

    Thread safety: one thread drives it (:meth:`load`, :meth:`poll`, the setters); snapshots
    are immutable copies that any thread may read.
    """

    def __init__(self, project, *, measures: Sequence[str] | None = None,  # noqa: ANN001
                 rule: str | None = None, threshold: int | None = None, curve: str = "nDCG",
                 ranges: bool = True, resamples: int = 2_000,
                 min_coverage: float | None = None, include_llm: bool = False) -> None:
        from ragjudge.services.qrels import check_rule

        self.project = project
        self.rule = check_rule(rule or project.rule)
        self.threshold = project.scale.threshold if threshold is None else int(threshold)
        self.measures = list(measures) if measures else saved_measures(project)
        for m in self.measures:
            parse_measure(m)
        self.curve = self._check_curve(curve)
        self.with_ranges = ranges
        self.min_coverage = saved_coverage(project) if min_coverage is None else float(min_coverage)
        self._covered: dict[str, tuple[int, dict[str, int]]] = {}
        self._pool_keys: np.ndarray = np.zeros(0, dtype="S1")
        self._pool_sizes: dict[bytes, int] = {}
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
        self.views: dict[str, _View] = {}
        self.runs: dict[str, Run] = {}
        self._labels: _LabelCopy | None = None
        self._loaded = False
        from ragjudge.services.qrels import GoldPolicy

        self.policy = GoldPolicy()

    # -- settings --------------------------------------------------------------------------

    @staticmethod
    def _check_curve(curve: str) -> str:
        base = curve.strip().split("@", 1)[0]
        probe = parse_measure(f"{base}@1")
        if probe.definition.cutoff_kind is not int:
            raise UsageError(f"{base} takes no @k cutoff; curves are drawn for @k measures.")
        return base

    def set_rule(self, rule: str) -> None:
        from ragjudge.services.qrels import check_rule

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
        named (as :func:`ragjudge.services.qrels.gold_qrels` does)."""
        from ragjudge.services.qrels import without

        if self.include_llm or rule.startswith("annotator:"):
            return labels
        return without(labels, self.llm)

    def _read_llm(self) -> None:
        from ragjudge.services.qrels import llm_annotators

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

    def load(self) -> None:
        """Read queries and runs, then evaluate everything (:meth:`recompute`)."""
        from ragjudge.services.evaluation import project_run, project_run_names
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
            self.runs = {name: project_run(self.project, name) for name in project_run_names(self.project)}
            self.run_rows: dict[str, np.ndarray] = {}
            self.run_lengths: dict[str, np.ndarray] = {}
            for name, run in self.runs.items():
                rr = _keys.lookup(run.query_id_bytes, self.query_bytes)
                self.run_rows[name] = rr
                lengths = np.diff(run.offsets)
                self.run_lengths[name] = np.where(rr >= 0, lengths[np.maximum(rr, 0)], 0)
            self._pool_keys, self._pool_sizes = self._pool_of_runs()
            self._covered.clear()
            self._loaded = True
            self._labels = None
            self.recompute()

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

    def _recompute(self, *, reuse: bool) -> None:
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
            labels, decided = self._labels.merged(), self._labels.decided
            self._read_llm()
            self.annotators = sorted(set(labels.annotators.tolist()))
            self.views = {}
            for rule in self._rules():
                view = old.get(rule)
                if view is not None and view.measures == self._view_measures(rule):
                    view.resum()
                else:
                    view = self._new_view(rule)
                    view.set_base(*self._gold(self._gold_labels(labels, rule), decided, rule))
                    self._full(view)
                self.views[rule] = view
            self.touched = ()
            self._stamp_done(t0)

    def _gold(self, labels: LabelArrays, decided: dict[tuple[str, str], int],
              rule: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The judgments of a view: :func:`gold_arrays`, and on a complete reference's queries
        every chunk the runs rank judged at the bottom of the scale."""
        from ragjudge.services.qrels import complete_runs

        if rule != self.rule and rule.startswith("annotator:"):
            return self._in_place_of_gold(labels, decided, rule.split(":", 1)[1])
        q, c, g = gold_arrays(labels, decided, rule, self.policy)
        closed = self.policy.complete_queries(labels, rule)
        return complete_runs(q, c, g, closed, self.runs.values(), self.policy.lowest)

    def _in_place_of_gold(self, labels: LabelArrays, decided: dict[tuple[str, str], int],
                          name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """An annotator's view for the ranges: on the queries they judged, the gold with their
        grade in place of the gold's on every pair they graded (a pair they never saw keeps the
        gold's grade, so their view is not poorer than the gold for want of labels)."""
        mine = labels.annotators == name
        if not mine.any():
            empty = np.array([], dtype=object)
            return empty, empty.copy(), np.array([], dtype=np.int64)
        q, c, g = self._gold(labels, decided, self.rule)
        xq, xc, xg = labels.query_ids[mine], labels.chunk_ids[mine], labels.grades[mine]
        queries = set(xq.tolist())
        own = set(zip(xq.tolist(), xc.tolist()))
        keep = np.fromiter((qid in queries and (qid, cid) not in own
                            for qid, cid in zip(q.tolist(), c.tolist())), dtype=bool, count=len(q))
        return (np.concatenate([q[keep], xq]), np.concatenate([c[keep], xc]),
                np.concatenate([np.asarray(g, dtype=np.int64)[keep], xg]))

    def _policy_moved(self) -> bool:
        """Whether the reference annotators changed (then every query's gold may move)."""
        from ragjudge.services.qrels import gold_policy

        with self.project.connect() as connection:
            return gold_policy(connection, self.project.scale.min) != self.policy

    def _read_labels(self) -> None:
        """Every current label and adjudication, read afresh (the engine's copy of them)."""
        from ragjudge.services.qrels import adjudications, current_labels, gold_policy

        self.stamp = self._stamp()
        with self.project.connect() as connection:
            labels = current_labels(connection)
            decided = adjudications(connection)
            self.policy = gold_policy(connection, self.project.scale.min)
        self._labels = _LabelCopy(labels, decided)
        self.labels_used = len(labels)
        self.label_rows = {q: e - s for q, (s, e) in self._labels.spans.items()}

    def _rules(self) -> list[str]:
        rules = [self.rule]
        if self.with_ranges:
            rules += [f"annotator:{a}" for a in self.annotators if f"annotator:{a}" != self.rule
                      and (self.include_llm or a not in self.llm)]
        return rules

    def _view_measures(self, rule: str) -> list[str]:
        return self._gold_measures() if rule == self.rule else list(self.measures)

    def _new_view(self, rule: str) -> _View:
        measures = self._view_measures(rule)
        n = len(self.query_ids)
        view = _View(rule, measures, present=np.zeros(n, dtype=bool))
        view.parsed = [parse_measure(m) for m in measures]
        view.plain = [j for j, m in enumerate(view.parsed) if not m.needs]
        view.rag = [j for j, m in enumerate(view.parsed) if m.needs]
        for name in self.runs:
            view.values[name] = np.full((n, len(measures)), np.nan)
        view.set_base(np.array([], dtype=object), np.array([], dtype=object), np.array([], dtype=np.int64))
        return view

    def _stamp_done(self, t0: float) -> None:
        self.compute_ms = (time.perf_counter() - t0) * 1000
        self.version += 1
        self.updated_at = datetime.now(UTC)

    # -- evaluation of a view ----------------------------------------------------------------

    def _qrels_of(self, view: _View, query_ids: Iterable[str] | None = None) -> Qrels:
        """The view's qrels (of some queries), chunk ids as wide as the runs' (the pair index
        compares ids as words of equal width)."""
        if query_ids is None:
            q, c, g = view.pairs()
        else:
            qs: list[str] = []
            cs: list[str] = []
            gs: list[int] = []
            for qid in query_ids:
                for cid, grade in view.judgments_of(qid).items():
                    qs.append(qid)
                    cs.append(cid)
                    gs.append(grade)
            q, c, g = np.array(qs, dtype=object), np.array(cs, dtype=object), np.array(gs, dtype=np.int64)
        chunks = _encode(c)
        width = max([chunks.dtype.itemsize] + [r.chunk_ids.dtype.itemsize for r in self.runs.values()])
        return Qrels(_encode_runs(q), chunks.astype(f"S{width}"), np.asarray(g, dtype=np.int64),
                     top_grade=self.project.scale.max)

    def _full(self, view: _View) -> None:
        qrels = self._qrels_of(view)
        view.present[:] = False
        if qrels.n_queries == 0 and not view.rag:
            for matrix in view.values.values():
                matrix[:] = np.nan
            view.resum()
            return
        plain = [view.parsed[j] for j in view.plain]
        rag = [view.parsed[j] for j in view.rag]
        rows = None
        for name, run in self.runs.items():
            matrix = view.values[name]
            matrix[:] = np.nan
            if plain:
                result = evaluate(qrels, run, plain, threshold=self.threshold, queries="judged")
                rows = self._rows(result.query_ids)
                matrix[np.ix_(rows, view.plain)] = result.values  # type: ignore[arg-type]  # numpy's stubs omit the int lists ix_ takes
            if rag:
                result = self._rag(view, name, qrels, run, rag, "judged")
                rows = self._rows(result.query_ids)
                matrix[np.ix_(rows, view.rag)] = result.values  # type: ignore[arg-type]  # numpy's stubs omit the int lists ix_ takes
        if rows is not None:
            view.present[rows] = True
        view.resum()

    def _rows(self, query_ids: Iterable[str]) -> np.ndarray:
        return np.fromiter((self.row[q] for q in query_ids), dtype=np.int64)

    def _rag(self, view: _View, name: str, qrels: Qrels, run: Run, measures: list, queries: Any) -> EvalResult:
        from ragjudge.services.evaluation import _project_extras

        extras = _project_extras(self.project, name, qrels, run, measures, self.threshold,
                                 queries, view.rule)
        return evaluate(qrels, run, measures, threshold=self.threshold, queries=queries, extras=extras)

    def _begin(self, view: _View, touched: list[str], judgments: dict[str, dict[str, int]]) -> list[str]:
        """Take the touched queries' new judgments into ``view`` and clear their rows; returns
        the touched queries still judged (to evaluate). No other query moves: ERR's scale is
        the project's, not the labels' top grade."""
        view.changes = next(_CHANGES)
        for q in touched:
            view.override[q] = judgments.get(q, {})
        rows = self._rows(touched)
        if not self._small(view):
            view.add_rows(rows, -1.0)
        for name in self.runs:
            view.values[name][rows] = np.nan
        judged = [q for q in touched if view.override[q]]
        view.present[rows] = False
        if judged:
            view.present[self._rows(judged)] = True
        return judged

    def _finish(self, view: _View, touched: list[str]) -> None:
        if self._small(view):
            view.resum()
        else:
            view.add_rows(self._rows(touched), 1.0)

    @staticmethod
    def _small(view: _View) -> bool:
        return view.present.size * len(view.measures) <= SMALL_VIEW_CELLS

    def _evaluate_rag(self, view: _View, judged: list[str]) -> None:
        if view.rag:
            rag = [view.parsed[j] for j in view.rag]
            qrels = self._qrels_of(view, judged)
            for name in self.runs:
                run = self._sub_run(name, judged)
                result = self._rag(view, name, qrels, run, rag, judged)
                view.values[name][np.ix_(self._rows(result.query_ids), view.rag)] = result.values  # type: ignore[arg-type]  # numpy's stubs omit the int lists ix_ takes

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

    def _evaluate_plain(self, jobs: list[tuple[_View, list[str]]]) -> None:
        """Every (view, run, touched query) as one row of a single small evaluation context:
        row ``"{v}\x1f{i}\x1f{query}"`` is run i on that query under view v's judgments."""
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
        qq: list[bytes] = []
        qc: list[bytes] = []
        qg: list[int] = []
        rq: list[np.ndarray] = []
        rc: list[np.ndarray] = []
        wanted: list[bytes] = []
        for v, (view, judged) in enumerate(jobs):
            for qid in judged:
                items = view.judgments_of(qid)
                chunks = [c.encode("utf-8") for c in items]
                grades = list(items.values())
                row = self.row[qid]
                for i, name in enumerate(names):
                    key = f"{v}{_SEP}{i}{_SEP}{qid}".encode()
                    wanted.append(key)
                    qq.extend([key] * len(chunks))
                    qc.extend(chunks)
                    qg.extend(grades)
                    r = self.run_rows[name][row]
                    if r >= 0:
                        run = self.runs[name]
                        ranked = run.chunk_ids[run.offsets[r]:run.offsets[r + 1]]
                        rq.append(np.full(len(ranked), key))
                        rc.append(ranked)
        # one width for the chunk ids of both sides: the pair index compares them as words
        qc_array = _keys.as_ids(qc)
        width = max([qc_array.dtype.itemsize] + [a.dtype.itemsize for a in rc])
        qrels = Qrels(np.array(qq), qc_array.astype(f"S{width}"), np.array(qg, dtype=np.int64),
                      top_grade=self.project.scale.max)
        if rq:
            run = Run(np.concatenate(rq), np.concatenate([a.astype(f"S{width}") for a in rc]),
                      None, ordered=True)
        else:
            run = Run([], [], None, ordered=True)
        result = evaluate(qrels, run, parsed, threshold=self.threshold, queries=wanted)
        maps = [(np.array(view.plain), np.array([columns[view.measures[j]] for j in view.plain]))
                for view, _ in jobs]
        for row_key, values in zip(result.query_ids, result.values):
            job, run_index, qid = row_key.split(_SEP, 2)
            view = jobs[int(job)][0]
            cols, source = maps[int(job)]
            view.values[names[int(run_index)]][self.row[qid], cols] = values[source]

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
                if any(q not in self.row for q in touched) or self._policy_moved():
                    self._labels = None  # a query added since the screen opened: start again
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
            (newest,), = _raw(connection, "SELECT max(id) FROM answer_judgments", ())
        return int(newest or 0)

    def _answer_events(self, stamp: int) -> list[str]:
        """The queries whose answers were judged after ``self.answer_stamp`` up to ``stamp``."""
        with self.project.connect() as connection:
            rows = _raw(connection, "SELECT DISTINCT a.query_id FROM answer_judgments j JOIN answers a "
                        "ON a.id = j.answer_id WHERE j.id > ? AND j.id <= ?",
                        (self.answer_stamp, stamp))
        return sorted(q for q, in rows)

    def _apply_answers(self, touched: list[str]) -> None:
        """Re-evaluate the answer measures of the queries whose answers were just judged, in
        every view where those queries are judged (the other measures do not move)."""
        for view in self.views.values():
            cols = [j for j in view.rag if "answers" in view.parsed[j].needs]
            queries = [q for q in touched if q in self.row and view.present[self.row[q]]]
            if not cols or not queries:
                continue
            rows = self._rows(queries)
            if not self._small(view):
                view.add_rows(rows, -1.0)
            measures = [view.parsed[j] for j in cols]
            qrels = self._qrels_of(view, queries)
            for name in self.runs:
                result = self._rag(view, name, qrels, self._sub_run(name, queries), measures, queries)
                view.values[name][np.ix_(self._rows(result.query_ids), cols)] = result.values  # type: ignore[arg-type]  # numpy's stubs omit the int lists ix_ takes
            self._finish(view, queries)

    def _stamp(self) -> tuple[int, int]:
        """(newest label id, newest adjudication id), as
        :func:`ragjudge.services.agreement.labels_stamp` gives it, in one driver call."""
        with self.project.connect() as connection:
            (label, decided), = _raw(connection, "SELECT (SELECT max(id) FROM labels), "
                                     "(SELECT max(id) FROM adjudications)", ())
        return int(label or 0), int(decided or 0)

    def _events(self, stamp: tuple[int, int]) -> tuple[list[str], set[str], bool]:
        """The queries touched by the label events and adjudications after ``self.stamp`` up to
        ``stamp``, the annotators of those events, and whether any adjudication is among them."""
        with self.project.connect() as connection:
            # by id range only (a DISTINCT would let SQLite scan a covering index instead)
            events = _raw(connection, "SELECT id, query_id, annotator FROM labels "
                          "WHERE id > ? AND id <= ?", (self.stamp[0], stamp[0]))
            decided = _raw(connection, "SELECT id, query_id FROM adjudications "
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
        jobs: list[tuple[_View, list[str]]] = []
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
        for view, judged in jobs:
            self._evaluate_rag(view, judged)
            self._finish(view, touched)

    def _current(self, touched: list[str]):  # noqa: ANN202
        """The current labels and adjudications of some queries, as services.qrels reads them
        for the whole project (the same SQL, written out once and run on the driver's cursor:
        building and compiling the Core statement cost more than running it)."""
        from ragjudge.services.qrels import RECHECK, _to_arrays, gold_policy

        rows: list[tuple] = []
        adj: list[tuple] = []
        with self.project.connect() as connection:
            self.policy = gold_policy(connection, self.project.scale.min)
            for at in range(0, len(touched), _IN_BATCH):  # rows grouped by query either way
                part = list(touched[at:at + _IN_BATCH])
                marks = ", ".join(["?"] * len(part))
                rows += _raw(connection, _CURRENT_SQL.format(marks=marks), (*part, RECHECK))
                adj += _raw(connection, _DECIDED_SQL.format(marks=marks), tuple(part))
        for q in touched:
            self.labels_used -= self.label_rows.pop(q, 0)
        for q, *_ in rows:
            self.label_rows[q] = self.label_rows.get(q, 0) + 1
            self.labels_used += 1
        labels, decided = _to_arrays(rows), {(q, c): int(g) for q, c, g in adj}
        if self._labels is not None:
            self._labels.replace(touched, labels, decided)
        return labels, decided

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
        for name, matrix in view.values.items():
            m = matrix[rows]
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
        for name in enough:
            view = self.views[f"annotator:{name}"]
            own = self.means(view.rule)
            same = self.means(rows=np.flatnonzero(view.present & gold.present))
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

    def _pool_of_runs(self) -> tuple[np.ndarray, dict[bytes, int]]:
        """The pool (the union of every run's top 10) as sorted unique ``query\x1fchunk`` keys,
        and its size per query (query id bytes -> pairs)."""
        tops = []
        for run in self.runs.values():
            starts = run.offsets[:-1]
            keep = (np.arange(len(run)) - starts[run.qidx]) < 10
            tops.append((run.query_id_bytes[run.qidx[keep]], run.chunk_ids[keep]))
        if not tops or not sum(len(t[0]) for t in tops):
            return np.zeros(0, dtype="S1"), {}
        width_q = max(t[0].dtype.itemsize for t in tops)
        width_c = max(t[1].dtype.itemsize for t in tops)
        q = np.concatenate([t[0].astype(f"S{width_q}") for t in tops])
        c = np.concatenate([t[1].astype(f"S{width_c}") for t in tops])
        unique = np.unique(np.char.add(np.char.add(q, b"\x1f"), c))
        queries, sizes = np.unique(np.array([k.split(b"\x1f", 1)[0] for k in unique.tolist()],
                                            dtype=object), return_counts=True)
        return unique, dict(zip(queries.tolist(), sizes.tolist()))

    def _pool_keys_of(self, q: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Which of the pairs (query ids, chunk ids) are in the pool."""
        if not len(q) or not len(self._pool_keys):
            return np.zeros(len(q), dtype=bool)
        keys = [f"{qid}\x1f{cid}".encode() for qid, cid in zip(q.tolist(), c.tolist())]
        return np.isin(np.array(keys, dtype=object).astype(bytes), self._pool_keys)

    def _coverage(self, view: _View, gold: _View) -> float:
        """The share of the pool of the gold's judged queries that the labels of ``view``'s
        annotator cover (their own grades, not the gold their view borrows)."""
        judged = {q.encode() for q in gold.judged_queries()}
        size = sum(n for q, n in self._pool_sizes.items() if q in judged)
        if not size:
            return 0.0
        cached = self._covered.get(view.rule)
        if cached is None or cached[0] != view.changes:
            assert self._labels is not None  # read before any view is made
            labels = self._labels.merged()
            mine = labels.annotators == view.rule.split(":", 1)[1]
            q, c = labels.query_ids[mine], labels.chunk_ids[mine]
            per_query: dict[str, int] = {}
            for qid in q[self._pool_keys_of(q, c)].tolist():
                per_query[qid] = per_query.get(qid, 0) + 1
            cached = self._covered[view.rule] = (view.changes, per_query)
        mine = sum(n for qid, n in cached[1].items() if qid.encode() in judged)
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
            judged=np.array([gold.count_of(self.query_ids[r]) for r in rows], dtype=np.int64),
        )

    def strata_of(self, by: str) -> list[str]:
        """Each query's stratum for ``by`` (``category`` or a meta key), as ``ragjudge eval --by``."""
        from ragjudge.services.evaluation import _stratum

        if by == "category":
            return [_stratum(c) for c in self.categories]
        return [_stratum(m.get(by)) for m in self.meta]

    def _strata(self, by: str) -> tuple[dict, dict]:
        from ragjudge.services.evaluation import NO_STRATUM

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
        """The gold view as a :class:`ragjudge.services.evaluation.Evaluation` of the shown
        measures (what :func:`~ragjudge.services.evaluation.compare` takes)."""
        from ragjudge.services.evaluation import Evaluation

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
            judged = gold.pairs()
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
        pairs, covered = self._pool(judged)
        return LiveDetails(version=version, intervals=intervals, resamples=budget,
                           pool_pairs=pairs, pool_judged=covered, too_few=too_few, **agreement)

    def _pool(self, judged: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[int, int]:
        """Pairs in the union of every run's top 10, and how many have a gold grade."""
        return len(self._pool_keys), int(self._pool_keys_of(judged[0], judged[1]).sum())

    def _agreement(self) -> dict:
        from ragjudge.metrics.agreement import disputed_units, krippendorff_alpha
        from ragjudge.services.agreement import load_ratings, mean_pairwise_kappa

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

    def explain(self, run: str, query_id: str, measure: str,
                visible: Callable[[str], bool] | None = None) -> str:
        """The step-by-step computation of ``measure`` for one query of one run, as text;
        ``visible`` hides the grades a blind reader may not see
        (:func:`ragjudge.services.visibility.grade_filter`)."""
        with self.lock:
            judgments = dict(self.views[self.rule].judgments_of(query_id))
        qrels = Qrels([query_id] * len(judgments), list(judgments),
                      np.array(list(judgments.values()), dtype=np.int64),
                      top_grade=self.project.scale.max)
        sub = self._sub_run(run, [query_id]) if query_id in self.row else Run([], [], None, ordered=True)
        from ragjudge.services.evaluation import explain_query

        explanation = explain_query(self.project, run, qrels, sub, query_id, measure,
                                    threshold=self.threshold, rule=self.rule)
        return explanation.render(visible=visible)


def gold_arrays(labels: LabelArrays, decided: dict[tuple[str, str], int],
                rule: str, policy: GoldPolicy | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query ids, chunk ids, grades) of the gold qrels under ``rule``: the same grades as
    :func:`ragjudge.services.qrels.gold_qrels` (adjudication first, else the rule over the
    annotators' current grades), computed for every pair at once.

    ``labels`` are :class:`ragjudge.services.qrels.LabelArrays` sorted by query and chunk.
    Rules: the lower median ``g[(n - 1) // 2]`` of the sorted grades; ``min``; ``max``; ``mean``
    rounded half up ``floor(mean + 0.5)``; ``majority`` the most frequent grade, ties to the
    lower; ``annotator:NAME`` that annotator's grades; ``adjudicated`` none. The labels the
    rule aggregates are :func:`ragjudge.services.qrels.gold_labels` (a reference decides its
    pairs).
    """
    from ragjudge.services.qrels import gold_labels

    labels = gold_labels(labels, policy, rule)
    q, c, a, g = labels.query_ids, labels.chunk_ids, labels.annotators, labels.grades
    empty = (np.array([], dtype=object), np.array([], dtype=object), np.array([], dtype=np.int64))
    if rule.startswith("annotator:"):
        keep = a == rule.split(":", 1)[1]
        q, c, g = q[keep], c[keep], g[keep]
    elif rule == "adjudicated" or len(g) == 0:
        q, c, g = empty
    else:
        new = np.ones(len(g), dtype=bool)
        new[1:] = (q[1:] != q[:-1]) | (c[1:] != c[:-1])
        gid = np.cumsum(new) - 1
        starts = np.flatnonzero(new)
        counts = np.diff(np.r_[starts, len(g)])
        ordered = g[np.lexsort((g, gid))]
        if rule == "median":
            out = ordered[starts + (counts - 1) // 2]
        elif rule == "min":
            out = ordered[starts]
        elif rule == "max":
            out = ordered[starts + counts - 1]
        elif rule == "mean":
            out = np.floor(np.bincount(gid, weights=g) / counts + 0.5).astype(np.int64)
        else:  # majority
            low = int(g.min())
            span = int(g.max()) - low + 1
            keys, n = np.unique(gid * span + (g - low), return_counts=True)
            group, grade = keys // span, keys % span + low
            first = np.lexsort((grade, -n, group))
            take = first[np.r_[True, group[first][1:] != group[first][:-1]]]
            out = grade[take]
        q, c, g = q[starts], c[starts], np.asarray(out, dtype=np.int64)
    if decided:
        keep = np.array([(qid, cid) not in decided for qid, cid in zip(q.tolist(), c.tolist())],
                        dtype=bool) if len(q) else np.zeros(0, dtype=bool)
        dq, dc, dg = zip(*((qid, cid, grade) for (qid, cid), grade in decided.items()))
        q = np.concatenate([q[keep], np.array(dq, dtype=object)])
        c = np.concatenate([c[keep], np.array(dc, dtype=object)])
        g = np.concatenate([g[keep], np.array(dg, dtype=np.int64)])
    return q, c, g


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


