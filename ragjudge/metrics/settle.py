"""How settled is each comparison of two runs, while the pool is still being judged.

A team judges a pool (per query, the union of the runs' top K) to learn which run is better.
For every measure and pair of runs (A, B) this module says, from the labels so far:

- **low, high** -- the smallest and largest mean difference mean_q(M_A(q) - M_B(q)) the
  collection can still end with, over every grade (0..G) the open pool pairs may get. Queries
  are independent, so these are sums of per-query bounds, exact for P@k, Success@k, RR(@k),
  R(@k), nDCG(@k), nDCG_exp(@k) and DCG(@k). AP(@k) is exact on every query with at most
  ``AP_EXACT_PAIRS`` (6) open pairs in either run's cells and valid but possibly loose above
  (a relaxation up to ``AP_RELAX_PAIRS``, then each run's own extremes): maximising AP's
  difference is a 0/1 quadratic fractional program, which no structure makes cheap. The
  proofs are in :mod:`ragjudge.metrics.settle_measures`, :mod:`~ragjudge.metrics.settle_ap`
  and :mod:`~ragjudge.metrics.settle_gain`; ``Comparison.exact`` says whether every query was
  exact. Chunks outside the pool that nobody judged stay not relevant, as trec_eval
  counts them. Other measures (Rprec, bpref, ERR, F, ContextPrecision ...) have no bounds:
  :func:`supported` tells, and asking for one is a ``UsageError``.
- **p_order** -- the probability, under a model of the open pairs' grades
  (:mod:`ragjudge.metrics.settle_model`: a prior by rank bucket and run learned from the
  judged pairs, optionally an LLM annotator's grades calibrated against the people's), that
  the final difference has the sign of the current one, by Monte Carlo: every open pair drawn
  at once, the same draws for all runs (so the runs stay paired), seeded. ``samples`` draws
  (default 200), fewer on a large open pool (``CELL_BUDGET`` draws x open cells; never under
  ``MIN_SAMPLES``, 16), their number in ``Comparison.samples``. With at least
  ``NORMAL_QUERIES`` queries whose difference can still move, p_order is read from a normal
  law fitted to the draws' per-query means and variances (the final difference is a sum of
  many independent queries); below, it is the share of draws with the current sign (standard
  error at most 0.5 / sqrt(draws)). This is about the unjudged pairs of *these* queries only;
  whether the queries generalise is the bootstrap's question (:mod:`ragjudge.metrics.
  significance`), a separate one.
- **status** -- ``"certain"`` when [low, high] excludes 0 (strictly, beyond ``EPS``), so no
  grade of the open pairs can change the order; ``"tied"`` when low = high = 0 (no grade can
  separate the runs); ``"probable"`` when p_order >= ``confidence``; else ``"open"``.
- **judge_more** -- an estimate of how many more pool pairs, judged in the queue order of
  :meth:`Settlement.weights`, settle the comparison (make it certain): the pairs in that order
  until the bound's expected movement (below) adds up to what it needs; see :func:`_judge_more`.

**Weights** (:meth:`Settlement.weights`, after Carterette, Allan & Sitaraman, "Minimal test
collections for retrieval evaluation", SIGIR 2006: judge first the pairs that can most change
the open differences). A comparison with A ahead is certain once its low bound passes 0; what
it still *needs* is how far that bound must move. A pair's *swing* on it is how far its
judgment alone, the other open pairs as now, moves the difference toward 0 if the pair is
relevant (the swings of a comparison scaled to add up to the gap between the difference and
the bound, exact for the linear measures, whose bound is the sum of the swings); its *lift*
how far it moves the difference away from 0 then. Judged not relevant, a threatening pair
moves the bound by its swing; judged relevant, a pair on the other side moves the bound by its
lift (the difference moves, the bound with it); otherwise the bound stays (a threat that comes
true moves the difference toward the bound instead). With h the model's probability that the
pair is relevant (:meth:`~ragjudge.metrics.settle_family.Family.harm`), the pair's weight is,
summed over the comparisons not settled, the share of the need its judgment is expected to
bring: ((1 - h) min(swing, need) + h min(lift, need)) / need (:func:`_progress`). Pairs likely
relevant count on the side they help and pairs likely not relevant on theirs.

**The queue order** takes the heaviest tenth of the open pairs (``HEAD_SHARE``) first, by the
best rank any run gives them, every query in turn at each rank (as depth rounds go), then the
rest, heaviest first. The weight says which pairs matter to the comparisons still open; among
those, the pairs near the top of the runs are the likeliest relevant, and only a relevant
grade moves the current means. The weights alone put first the threats to an order, which
mostly turn out not relevant: they move a bound, not the means; depth rounds also judge pairs
no open comparison needs. Measured on four test collections (``tests/bench/bench_settle.py``,
``tests/bench/replay_orders.py``), this order's ranking over the first 30% of the pool was at
least as right as depth rounds' on all four and the weights alone's on two (within 0.01 on the
others), and it still makes comparisons certain sooner than depth rounds. A refresh after
labels picks the tenth again.

The current values come from the registered measure kernels on the grade matrix
:class:`~ragjudge.metrics.context.EvalContext` builds, so they equal ``ragjudge eval``'s per
query, bit for bit; the difference is the mean over the query set (every query of the qrels or
the pool: a pool query nothing is judged in yet counts 0 now, as it will be evaluated once its
pairs are judged).

What it costs (``tests/bench/bench_settle.py`` measures it beside ``evaluate_runs``): reading
the runs is one hash lookup of every ranked chunk (as an evaluation's) plus the kernels;
the bounds are a few passes over the open cells per comparison, each measure's pairs solved
together (:meth:`~ragjudge.metrics.settle_family.Family.bounds_many`: nDCG's Dinkelbach
problems of every pair and both sides at once, grouped by their number of candidate counts;
what a run alone decides, such as its open pairs' ranks, made once per run); the draws cost
draws x open cells; the weights one pass over the open pairs per comparison not settled, and
judge_more reads the queue block by block only as far as its answer. By default only
the runs adjacent in each measure's ranking are compared (R - 1 pairs a measure, what decides
a ranking; ``pairs="all"`` gives all R(R - 1)/2). :meth:`Settlement.weights` needs no draws.

Use::

    from ragjudge.metrics.settle import Pool, settle, pair_weights
    comparisons = settle(qrels, runs, Pool.from_runs(runs, 10), ["P@10", "nDCG@10", "AP"])
    for c in comparisons: print(c.measure, c.a, c.b, c.difference, c.low, c.high, c.status)
    queue = pair_weights(qrels, runs, 10, ["nDCG@10"]).ranked()   # [(query, chunk, weight)]
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics import _keys
from ragjudge.metrics.data import Qrels, Run
from ragjudge.metrics.evaluate import max_depth
from ragjudge.metrics.registry import Measure, parse_measure
from ragjudge.metrics.settle_layout import ABSENT, Layout, Pool, RunCells, occurrences
from ragjudge.metrics.settle_ap import AP_EXACT_PAIRS
from ragjudge.metrics.settle_family import Draw, Profile, RunData, narrowed
from ragjudge.metrics.settle_measures import family, supported
from ragjudge.metrics.settle_model import STRENGTH, GradeModel, LLMGrades, PriorCounts
from ragjudge.safetext import quote

__all__ = [
    "AP_EXACT_PAIRS", "CONFIDENCE", "EPS", "SAMPLES", "Comparison", "LLMGrades", "PairWeights",
    "Pool", "Settlement", "pair_weights", "settle", "supported",
]

#: a mean difference within EPS of 0 counts as 0 (float sums of exact fractions)
EPS = 1e-9
#: the default confidence of a "probable" order
CONFIDENCE = 0.95
#: the default number of Monte Carlo draws of the open pairs' grades
SAMPLES = 200
#: fewest draws when the pool is large (see ``CELL_BUDGET``)
MIN_SAMPLES = 16
#: draws x open cells of every run evaluated per call at most: a large open pool gets fewer
#: draws (never under MIN_SAMPLES), a pool mostly judged the full number
CELL_BUDGET = 12_000_000
#: draws evaluated at once (bounds the draws x queries x cells temporaries)
BLOCK = 25
#: draws x queries x runs x measures of sampled values kept at once (a block of draws)
BLOCK_VALUES = 8_000_000
#: queries drawn at once (queries of about as many open cells together)
ROW_BLOCK = 2048
#: from this many queries whose difference can still move, the order's probability is read
#: from a normal law fitted to the per-query means and variances of the draws (the sum of many
#: independent queries); below, from the draws themselves
NORMAL_QUERIES = 20

#: pairs in queue order read at once for judge_more (it stops once the need is reached)
JUDGE_BLOCK = 16_384

#: the share of the open pairs, the heaviest, that the queue order takes first, shallowest
#: first (the best rank any run gives them): among the pairs that weigh most on the open
#: comparisons, the ones most likely relevant, which are what moves the current means; every
#: query in turn, as depth rounds go. Shares from 2% to 70% were replayed
#: (``tests/bench/replay_orders.py --heads``): a tenth made the ranking right soonest
HEAD_SHARE = 0.1

#: threads evaluating runs on the draws
THREADS = min(2, os.cpu_count() or 1)

CERTAIN, TIED, PROBABLE, OPEN = "certain", "tied", "probable", "open"


@dataclass(frozen=True)
class Comparison:
    """Two runs under one measure, as settled as the labels so far make them.

    ``difference`` is mean(M_a) - mean(M_b) now (open pairs not relevant); ``low``/``high``
    bound it over every grade of the open pairs; ``exact`` is False when a bound is valid but
    possibly loose (AP on queries with many open pairs); ``p_order`` is the model's probability
    that the final difference has the sign of ``difference`` (1.0 when certain or tied);
    ``judge_more`` the estimated pool pairs still to judge, in queue order, to make it certain
    (0 when certain or tied); ``n_queries`` the queries averaged over; ``samples`` the draws
    behind p_order (0 when certain, tied, or asked for none: p_order is then 1.0, 1.0 or NaN).
    With ``status == "certain"`` the final order is the sign of ``low`` (and of ``high``).
    """

    measure: str
    a: str
    b: str
    difference: float
    low: float
    high: float
    p_order: float
    status: str
    judge_more: int
    exact: bool
    n_queries: int
    samples: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PairWeights:
    """Every open pool pair with its weight, in the queue order (see the module's docstring).

    ``query_ids``/``chunk_ids`` are ``as_ids`` byte arrays (``ranked`` decodes them).
    """

    query_ids: np.ndarray
    chunk_ids: np.ndarray
    weights: np.ndarray

    def __len__(self) -> int:
        return len(self.weights)

    def ranked(self, n: int | None = None) -> list[tuple[str, str, float]]:
        """The first ``n`` pairs (all when None) as (query id, chunk id, weight)."""
        stop = len(self) if n is None else min(int(n), len(self))
        return list(zip(_keys.decode(self.query_ids[:stop]), _keys.decode(self.chunk_ids[:stop]),
                        self.weights[:stop].tolist()))


def _named_runs(runs: Mapping[str, Run] | Iterable[Run]) -> dict[str, Run]:
    if isinstance(runs, Mapping):
        return dict(runs)
    out: dict[str, Run] = {}
    for i, run in enumerate(runs, start=1):
        name = run.name or f"run{i}"
        if name in out:
            raise UsageError(f"two runs are named {quote(name)}; give them distinct names.")
        out[name] = run
    return out


def _sign(x: float) -> int:
    return 0 if abs(x) <= EPS else (1 if x > 0 else -1)


class Settlement:
    """Bounds, order probabilities, weights and the pairs still to judge, for a project's runs.

    Arguments:

    - ``qrels`` -- the grades so far (the gold: a negative grade is not a judgment);
    - ``runs`` -- ``{name: Run}`` or runs with names;
    - ``pool`` -- a :class:`Pool`, or the pool depth K (the union of every run's top K);
    - ``measures`` -- names (``"P@10"``, ``"nDCG@10"``, ``"AP"``, ``"R(rel=2)@20"`` ...); a
      measure :func:`supported` refuses is a ``UsageError``;
    - ``threshold`` -- relevant from this grade (a measure's ``rel=`` wins), as ``ragjudge eval``;
    - ``top_grade`` -- the top of the scale an open pair may get (default: the qrels' declared
      top, else their highest grade, at least 1); a judged grade above it is a ``UsageError``;
    - ``confidence`` -- p_order from which an order is ``"probable"``;
    - ``seed``, ``samples`` -- the Monte Carlo draws (0 samples: p_order is NaN where not settled);
    - ``llm`` -- an LLM annotator's grades, calibrated against the qrels on the pairs both graded;
    - ``pairs`` -- which pairs of runs to compare: ``"adjacent"`` (default: per measure, each
      run with the next in the current ranking, the higher first; an order certain between
      neighbours is certain between any two, bounds adding up along the ranking), ``"all"``
      (every pair, in the runs' order; the cost grows with the square of the runs), or a list of
      (a, b) names;
    - ``queries`` -- the query ids to average over (default: every query of the qrels or pool).

    The runs are read once (each run's cells, then dropped); :meth:`comparisons` and
    :meth:`weights` compute on demand and keep their results.
    """

    def __init__(self, qrels: Qrels, runs: Mapping[str, Run] | Iterable[Run], pool: Pool | int,
                 measures: Iterable[str | Measure], *, threshold: int = 1, top_grade: int | None = None,
                 confidence: float = CONFIDENCE, seed: int = 0, samples: int = SAMPLES,
                 llm: LLMGrades | None = None, pairs: str | Sequence[tuple[str, str]] = "adjacent",
                 queries: Iterable[str] | None = None, strength: float = STRENGTH) -> None:
        named = _named_runs(runs)
        if isinstance(pool, (int, np.integer)):
            pool = Pool.from_runs(named.values(), int(pool))
        parsed = [parse_measure(m) for m in measures]
        if not parsed:
            raise UsageError("no measures to settle.")
        if not 0.0 < confidence < 1.0:
            raise UsageError(f"the confidence is a probability between 0 and 1, not {confidence}.")
        if samples < 0:
            raise UsageError(f"the number of samples cannot be negative ({samples}).")
        top = top_grade if top_grade is not None else (
            qrels.top_grade if qrels.top_grade is not None else max(qrels.max_grade, 1))
        self.layout = Layout(qrels, pool, top_grade=int(top), threshold=threshold, queries=queries)
        self.measures = parsed
        self.families = [family(m, self.layout) for m in parsed]
        self.names = list(named)
        self._asked = self._check_pairs(pairs)
        self.confidence, self.seed, self.samples = float(confidence), int(seed), int(samples)
        prior = PriorCounts(self.layout)
        depth = max_depth(parsed)
        self.runs: list[RunData] = []
        profiles: list[list[Profile]] = [[] for _ in parsed]

        def read(item: tuple[str, Run]) -> tuple[RunData, list[Profile], RunCells]:
            name, run = item
            cells = self.layout.cells(run, depth, name)
            ctx = self.layout.context(cells)
            var, col = occurrences(cells.open, cells.open.shape[1])
            data = RunData(name, var, col, cells.rank.astype(np.int64))
            return data, [fam.profile(data, cells, m(ctx)) for m, fam in zip(parsed, self.families)], cells

        for data, mine, cells in _each_in_order(read, list(named.items())):  # runs read two at once
            self.runs.append(data)
            for j, profile in enumerate(mine):
                profiles[j].append(profile)
            prior.add(cells)
        for fam, mine in zip(self.families, profiles):
            fam.prepare(mine)
        self.index = {name: r for r, name in enumerate(self.names)}
        self.model = GradeModel.fit(prior, strength=strength, llm=llm)
        self._comparisons: list[Comparison] | None = None
        self._weights: PairWeights | None = None
        self._bounds_done: dict[tuple[int, str, str], tuple[float, float, float, bool]] | None = None
        self._order: np.ndarray | None = None
        self._expected: dict[tuple[int, str], float] = {}
        self._scales: dict[tuple[int, str, str], float] = {}
        #: the flips the weights made, kept for judge_more (each taken once)
        self._flips: dict[tuple[int, str], np.ndarray] = {}
        self._keep_flips = False
        #: the draws the last order probabilities took (``samples``, fewer on a large open pool)
        self.samples_used = 0

    def _check_pairs(self, pairs: str | Sequence[tuple[str, str]]) -> str | list[tuple[str, str]]:
        if isinstance(pairs, str):
            if pairs not in ("adjacent", "all"):
                raise UsageError(f"pairs is 'adjacent', 'all' or a list of (a, b) run names, not {quote(pairs)}.")
            return pairs
        known = set(self.names)
        for a, b in pairs:
            for name in (a, b):
                if name not in known:
                    raise UsageError(f"no run named {quote(name)} to compare (runs: {', '.join(self.names)}).")
        return [(str(a), str(b)) for a, b in pairs]

    def pairs(self, j: int) -> list[tuple[str, str]]:
        """The pairs of runs compared under measure j."""
        if self._asked == "all":
            return [(a, b) for i, a in enumerate(self.names) for b in self.names[i + 1:]]
        if self._asked == "adjacent":
            ranked = sorted(self.names, key=lambda name: -self.mean(j, name))  # stable: ties keep order
            return list(zip(ranked, ranked[1:]))
        assert not isinstance(self._asked, str)
        return list(self._asked)

    # -- the numbers ------------------------------------------------------------------------
    def profile(self, j: int, name: str) -> Profile:
        return self.families[j].profiles[self.index[name]]

    def mean(self, j: int, name: str) -> float:
        """Measure j's mean over the query set for a run now (as ``ragjudge eval``'s mean)."""
        cur = self.profile(j, name).cur
        return float(cur.sum() / len(cur)) if len(cur) else 0.0

    def expected(self, j: int, name: str) -> float:
        """Measure j's expected final mean for a run under the grade model (the mean of the
        draws), once :meth:`comparisons` has drawn; its current mean where nothing was drawn
        (the run's comparisons under j all settled, or no draws asked). Unlike the current mean,
        it does not lean toward the runs whose pairs happen to be judged first."""
        self.comparisons()
        return self._expected.get((j, name), self.mean(j, name))

    def comparisons(self) -> list[Comparison]:
        """Every measure x pair, in the order of the measures, then the pairs."""
        if self._comparisons is None:
            bounds = self._settle_bounds()
            chances = self._chances(bounds)
            drafts = [self._draft(key, *bounds[key], chances.get(key, np.nan)) for key in bounds]
            self._keep_flips = True  # the weights' flips serve judge_more's moves
            more = self._judge_more(bounds)
            self._keep_flips, self._flips = False, {}
            self._comparisons = [dataclasses.replace(d, judge_more=more.get(key, 0))
                                 for d, key in zip(drafts, bounds)]
        return self._comparisons

    def weights(self) -> PairWeights:
        """The open pool pairs in the queue order (see the module's docstring). It
        needs the bounds only, not the draws: a queue refreshed after labels pays no sampling."""
        self._queue()
        assert self._weights is not None
        return self._weights

    def _settle_bounds(self) -> dict[tuple[int, str, str], tuple[float, float, float, bool]]:
        if self._bounds_done is None:
            self._bounds_done = self._bounds()
        return self._bounds_done

    def _queue(self) -> np.ndarray:
        """The queue order: the heaviest ``HEAD_SHARE`` of the open pairs by the best rank any
        run gives them (then by query, then heaviest first), then the rest, heaviest first."""
        if self._order is None:
            weights = self._pressure(self._settle_bounds())
            by_weight = np.argsort(-weights, kind="stable")
            head = np.zeros(len(weights), dtype=bool)
            if len(weights):
                head = (weights > np.quantile(weights, 1.0 - HEAD_SHARE)) & (weights > 0)
            chosen = np.flatnonzero(head)
            best = self._best_ranks()[chosen]
            first = chosen[np.lexsort((-weights[chosen], self.layout.open_query[chosen], best))]
            self._order = np.concatenate([first, by_weight[~head[by_weight]]])
            self._weights = self._ranked(weights, self._order)
        return self._order

    def _best_ranks(self) -> np.ndarray:
        """(V,) each open pair's best 0-based rank over the runs within the cells read
        (``ABSENT`` when no run ranks it there)."""
        best = np.full(self.layout.n_vars, ABSENT, dtype=np.int64)
        for run in self.runs:
            np.minimum(best, run.rank, out=best)
        return best

    def _swings(self, bounds: Mapping[tuple[int, str, str], tuple[float, float, float, bool]]
                ) -> Iterator[tuple[tuple[int, str, str], int, np.ndarray, np.ndarray, float]]:
        """Per comparison not settled: its key, measure, each open pair's swing and lift (see
        :func:`_threat`) and what it still needs, one measure's flips in memory at a time. The
        swings are scaled to add up to the gap (the scale kept for :meth:`_moves`)."""
        for j, keys in self._unsettled(bounds).items():
            flips = {name: self._flip(j, name)
                     for name in {x for _, a, b in keys for x in (a, b)}}
            for key in keys:
                diff, low, high, _ = bounds[key]
                swing, lift, gap, need = _threat(flips[key[1]] - flips[key[2]], diff, low, high)
                total = float(swing.sum())
                self._scales[key] = scale = gap / total if total > 0 else 1.0
                yield key, j, swing * scale, lift, max(need, EPS)

    def _flip(self, j: int, name: str) -> np.ndarray:
        """Measure j's flips of a run over the query count (:meth:`Family.flip`); kept for
        :meth:`_moves` while :meth:`comparisons` works out judge_more."""
        flip = self.families[j].flip(self.profile(j, name)) / max(self.layout.n_queries, 1)
        if self._keep_flips:
            self._flips[j, name] = flip
        return flip

    def _taken_flip(self, j: int, name: str) -> np.ndarray:
        """:meth:`_flip`: the one the weights kept, if they did (then let go)."""
        kept = self._flips.pop((j, name), None)
        return kept if kept is not None else self._flip(j, name)

    def _unsettled(self, bounds: Mapping[tuple[int, str, str], tuple[float, float, float, bool]]
                   ) -> dict[int, list[tuple[int, str, str]]]:
        """The comparisons not settled, by measure."""
        by_measure: dict[int, list[tuple[int, str, str]]] = {}
        for key, (_, low, high, _) in bounds.items():
            if not _settled(low, high) and self.layout.n_vars:
                by_measure.setdefault(key[0], []).append(key)
        return by_measure

    def _bounds(self) -> dict[tuple[int, str, str], tuple[float, float, float, bool]]:
        """(measure, a, b) -> (difference, low, high, exact), the comparisons shared out over
        two threads."""
        keys = [(j, a, b) for j in range(len(self.families)) for a, b in self.pairs(j)]
        found: dict[int, tuple[float, float, float, bool]] = {}
        n = max(self.layout.n_queries, 1)
        # each measure's pairs solved together (Family.bounds_many), in as many parts as threads
        parts: list[list[int]] = []
        for j in range(len(self.families)):
            mine = [i for i, key in enumerate(keys) if key[0] == j]
            size = -(-len(mine) // THREADS)
            parts.extend(mine[lo:lo + size] for lo in range(0, len(mine), max(size, 1)))

        def some(part: int) -> None:
            items = parts[part]
            fam = self.families[keys[items[0]][0]]
            got = fam.bounds_many([(self.index[keys[i][1]], self.index[keys[i][2]]) for i in items])
            for i, (low_q, high_q, exact) in zip(items, got):
                j, a, b = keys[i]
                diff = self.mean(j, a) - self.mean(j, b)
                low, high = float(low_q.sum() / n), float(high_q.sum() / n)
                if fam.free:  # "now" is one of the assignments: float sums must not leave it out
                    low, high = min(low, diff), max(high, diff)
                found[i] = (diff, low, high, exact)

        _each(some, list(range(len(parts))))
        return {key: found[i] for i, key in enumerate(keys)}

    def _chances(self, bounds: Mapping[tuple[int, str, str], tuple[float, float, float, bool]]
                 ) -> dict[tuple[int, str, str], float]:
        """p_order of every comparison not settled, by Monte Carlo (see :func:`_order_chance`).

        Only queries with open pairs are drawn (the others add their current difference), in
        blocks of queries of about as many open cells, so that a pool mostly judged costs its
        few open pairs, not the width of its most open query."""
        unsettled = [key for key, (_, low, high, _) in bounds.items() if not _settled(low, high)]
        if not unsettled or self.samples == 0:
            return {}
        wanted = sorted({j for j, _, _ in unsettled})
        involved = sorted({self.index[name] for _, a, b in unsettled for name in (a, b)})
        blocks, runs = self._row_blocks(involved)
        volume = sum(len(rows) * runs[b, r].var.shape[1] for b, rows in enumerate(blocks) for r in involved) or 1
        count = max(min(self.samples, CELL_BUDGET // volume), min(MIN_SAMPLES, self.samples))
        self.samples_used = count
        nq = max(self.layout.n_queries, 1)
        touched = np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.int64)
        rest = np.ones(self.layout.n_queries, dtype=bool)
        rest[touched] = False
        fixed = {key: float((self.profile(key[0], key[1]).cur - self.profile(key[0], key[2]).cur)[rest].sum())
                 for key in unsettled}
        profiles = {(j, b, r): narrowed(self.families[j].profiles[r], runs[b, r], rows)
                    for j in wanted for b, rows in enumerate(blocks) for r in involved}
        sums = {key: np.zeros((2, len(touched))) for key in unsettled}  # per query: sum d, sum d^2
        finals: dict[tuple[int, str, str], list[np.ndarray]] = {key: [] for key in unsettled}
        drawn: dict[tuple[int, int], float] = {}  # per measure and run: the draws' sum over queries
        rng = np.random.default_rng(self.seed)
        step = max(1, min(BLOCK, BLOCK_VALUES // max(1, len(involved) * len(wanted) * ROW_BLOCK)))
        for start in range(0, count, step):
            draw = Draw(self.model.draw(rng, min(step, count - start)), self.layout)
            total = {key: np.zeros(draw.n) for key in unsettled}
            at = 0
            for b, rows in enumerate(blocks):
                values: dict[tuple[int, int], np.ndarray] = {}

                def evaluate(r: int, b: int = b, rows: np.ndarray = rows, draw: Draw = draw,
                             values: dict = values) -> None:
                    on = draw.on(runs[b, r], rows)  # the run's cells, gathered once for its measures
                    for j in wanted:
                        values[j, r] = self.families[j].values(profiles[j, b, r], on)

                _each(evaluate, involved)
                for (j, r), got in values.items():
                    drawn[j, r] = drawn.get((j, r), 0.0) + float(got.sum())
                span = slice(at, at + len(rows))
                for key in unsettled:
                    j, a, c = key
                    d = values[j, self.index[a]] - values[j, self.index[c]]
                    sums[key][0, span] += d.sum(axis=0)
                    sums[key][1, span] += (d * d).sum(axis=0)
                    total[key] += d.sum(axis=1)
                at += len(rows)
            for key in unsettled:
                finals[key].append((total[key] + fixed[key]) / nq)
        for (j, r), summed in drawn.items():
            rest_sum = float(self.families[j].profiles[r].cur[rest].sum())
            self._expected[j, self.names[r]] = (summed / count + rest_sum) / nq
        return {key: _order_chance(bounds[key][0], count, sums[key], fixed[key], nq, np.concatenate(finals[key]))
                for key in unsettled}

    def _row_blocks(self, involved: list[int]) -> tuple[list[np.ndarray], dict[tuple[int, int], RunData]]:
        """The queries with open pairs, in blocks of ``ROW_BLOCK`` ordered by their open cells,
        and each involved run's data on each block."""
        touched = np.flatnonzero(self.layout.n_open > 0)
        if len(touched) == 0:
            return [], {}
        cells = np.max([(self.runs[r].var[touched] >= 0).sum(axis=1) for r in involved], axis=0)
        order = touched[np.argsort(cells, kind="stable")]
        blocks = [order[i:i + ROW_BLOCK] for i in range(0, len(order), ROW_BLOCK)]
        runs = {(b, r): self.runs[r].rows(rows) for b, rows in enumerate(blocks) for r in involved}
        return blocks, runs

    def _draft(self, key: tuple[int, str, str], diff: float, low: float, high: float, exact: bool,
               chance: float) -> Comparison:
        j, a, b = key
        if _settled(low, high):
            status = TIED if abs(low) <= EPS and abs(high) <= EPS else CERTAIN
            chance = 1.0 if _sign(low) == _sign(diff) or status == TIED else 0.0
        else:
            status = PROBABLE if chance >= self.confidence else OPEN
        drawn = 0 if status in (CERTAIN, TIED) or math.isnan(chance) else self.samples_used
        return Comparison(str(self.measures[j]), a, b, diff, low, high, chance, status, 0, exact,
                          self.layout.n_queries, drawn)

    # -- weights and what is left to judge -----------------------------------------------------
    def _pressure(self, bounds: Mapping[tuple[int, str, str], tuple[float, float, float, bool]]) -> np.ndarray:
        """Each open pair's weight: over the comparisons not settled, the share of what each
        still needs that its judgment is expected to bring (see :func:`_progress`)."""
        weights = np.zeros(self.layout.n_vars)
        harms: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for _, j, swing, lift, need in self._swings(bounds):
            if j not in harms:
                harm = self.families[j].harm(self.model.probs)
                harms[j] = harm, 1.0 - harm
            weights += _progress(swing, lift, *harms[j], need)
        return weights

    def _judge_more(self, bounds: Mapping[tuple[int, str, str], tuple[float, float, float, bool]]
                    ) -> dict[tuple[int, str, str], int]:
        """judge_more of every comparison not settled, its moves read in queue order."""
        order = self._queue()
        harms: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        out: dict[tuple[int, str, str], int] = {}
        # one measure's comparisons at a time (its flips in memory), shared out over two threads
        by_measure: dict[int, list[tuple[tuple[int, str, str], Callable[[int, int], tuple[np.ndarray, np.ndarray]], float]]] = {}
        for key, j, moves, need in self._moves(bounds, order):
            if j not in harms:
                if by_measure:
                    self._judge_more_of(by_measure.popitem()[1], len(order), harms, out)
                harm = np.take(self.families[j].harm(self.model.probs), order)
                harms[j] = harm, 1.0 - harm
            by_measure.setdefault(j, []).append((key, moves, need))
        for items in by_measure.values():
            self._judge_more_of(items, len(order), harms, out)
        return out

    @staticmethod
    def _judge_more_of(items: list[tuple[tuple[int, str, str], Callable[[int, int], tuple[np.ndarray, np.ndarray]], float]],
                       n: int, harms: Mapping[int, tuple[np.ndarray, np.ndarray]],
                       out: dict[tuple[int, str, str], int]) -> None:
        def one(i: int) -> None:
            key, moves, need = items[i]
            out[key] = _judge_more_by_blocks(moves, n, *harms[key[0]], need)

        _each(one, list(range(len(items))))

    def _moves(self, bounds: Mapping[tuple[int, str, str], tuple[float, float, float, bool]],
               order: np.ndarray) -> Iterator[tuple[tuple[int, str, str], int,
                                                    Callable[[int, int], tuple[np.ndarray, np.ndarray]], float]]:
        """Per comparison not settled: its key, measure, its moves in ``order`` (the swings and
        lifts of :meth:`_swings`, made for a slice of the pairs when asked) and its need."""
        for j, keys in self._unsettled(bounds).items():
            flips = {name: np.take(self._taken_flip(j, name), order)
                     for name in {x for _, a, b in keys for x in (a, b)}}
            for key in keys:
                diff, low, high, _ = bounds[key]
                if key not in self._scales:
                    back = np.empty(len(order))
                    back[order] = flips[key[1]] - flips[key[2]]
                    threat, _, gap, _ = _threat(back, diff, low, high)
                    total = float(threat.sum())
                    self._scales[key] = gap / total if total > 0 else 1.0

                def moves(lo: int, hi: int, a: np.ndarray = flips[key[1]], b: np.ndarray = flips[key[2]],
                          diff: float = diff, low: float = low, high: float = high,
                          scale: float = self._scales[key]) -> tuple[np.ndarray, np.ndarray]:
                    swing, lift, _, _ = _threat(a[lo:hi] - b[lo:hi], diff, low, high)
                    return swing * scale, lift

                yield key, j, moves, max(_threat(np.zeros(0), diff, low, high)[3], EPS)

    def _ranked(self, weights: np.ndarray, order: np.ndarray) -> PairWeights:
        lay = self.layout
        return PairWeights(lay.query_ids[lay.open_query[order]], lay.open_chunk[order], weights[order])

def _each(work: Callable[[int], None], items: Sequence[int]) -> None:
    """``work(item)`` for every item, on two threads when there are several (numpy lets go of
    the interpreter in its array loops, so the second core takes half)."""
    if len(items) < 2 or THREADS < 2:
        for item in items:
            work(item)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        list(pool.map(work, items))


def _each_in_order(work: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
    """``work(item)`` of every item, in order, two computed at once as for :func:`_each` (each
    result is taken as soon as it is ready, so only a few are held at a time)."""
    if len(items) < 2 or THREADS < 2:
        yield from map(work, items)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        ahead = deque(pool.submit(work, item) for item in items[:THREADS])
        for item in items[THREADS:]:
            done = ahead.popleft().result()
            ahead.append(pool.submit(work, item))
            yield done
        while ahead:
            yield ahead.popleft().result()


def _order_chance(now: float, draws: int, sums: np.ndarray, fixed: float, n_queries: int,
                  finals: np.ndarray) -> float:
    """P(the final difference has the sign of ``now``) from ``draws`` draws: ``sums`` holds, for
    each query drawn, the sums over the draws of its difference d and of d^2; ``fixed`` the
    summed difference of the queries with nothing open; ``finals`` each draw's final mean.

    With at least ``NORMAL_QUERIES`` queries whose d varies, the final difference is a sum of
    many independent per-query terms, close to normal (Lyapunov's central limit theorem): the
    probability is Phi(sign(now) mu / sigma), mu the sum of the per-query means and sigma^2 of
    the per-query variances (unbiased, n - 1), both over the number of queries. Its error comes
    from mu's (sigma / sqrt(draws)), not from a count of draws on either side. With fewer such
    queries, or a current tie, it is the share of draws with that sign."""
    side = _sign(now)
    total, squares = sums
    spread = squares * draws - total * total
    moving = int(np.count_nonzero(spread > EPS * EPS * draws * draws))
    if side == 0 or moving < NORMAL_QUERIES or draws < 2:
        signs = np.where(np.abs(finals) <= EPS, 0, np.sign(finals))
        return float(np.mean(signs == side)) if len(finals) else 0.0
    mu = (total.sum() / draws + fixed) / n_queries
    var = np.maximum(spread, 0.0).sum() / draws / (draws - 1) / (n_queries * n_queries)
    if var <= 0:
        return 1.0 if _sign(mu) == side else 0.0
    return float(0.5 * math.erfc(-side * mu / math.sqrt(2.0 * var)))


def _settled(low: float, high: float) -> bool:
    """No grade of the open pairs can change the order: [low, high] excludes 0 or is {0}."""
    return low > EPS or high < -EPS or (abs(low) <= EPS and abs(high) <= EPS)


def _threat(delta: np.ndarray, diff: float, low: float, high: float
            ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Each pair's swing (how far the difference moves toward 0, the threatened side, if the
    pair alone gets the top grade), its lift (how far the difference moves away from 0 then:
    the bound on the threatened side moves as far), the bound on that side (the gap the swings
    add up to) and what the bound must still move to exclude 0. A current tie is threatened
    from both sides: every pair's move is a swing, none a lift."""
    side = _sign(diff)
    if side > 0:
        return np.maximum(-delta, 0.0), np.maximum(delta, 0.0), diff - low, -low
    if side < 0:
        return np.maximum(delta, 0.0), np.maximum(-delta, 0.0), high - diff, high
    return np.abs(delta), np.zeros_like(delta), high - low, min(-low, high)


def _progress(swing: np.ndarray, lift: np.ndarray, harm: np.ndarray, keep: np.ndarray, need: float) -> np.ndarray:
    """The share of ``need`` each pair's judgment is expected to bring the threatened bound.

    A pair that threatens the order (swing > 0) moves that bound by its swing when judged not
    relevant (probability 1 - harm); judged relevant it moves the difference toward 0 instead,
    and the bound stays. A pair on the other side (lift > 0) moves the bound by its lift when
    judged relevant (probability harm), the difference moving away from 0 with it. Each outcome
    brings at most the whole need: ((1 - harm) min(swing, need) + harm min(lift, need)) / need."""
    return (keep * np.minimum(swing, need) + harm * np.minimum(lift, need)) / need


def _judge_more(swing: np.ndarray, lift: np.ndarray, harm: np.ndarray, keep: np.ndarray, need: float) -> int:
    """How many pairs, in queue order, until the comparison is expected to be certain.

    Judging a threatening pair closes its swing of the gap between the difference and the
    threatened bound whatever its grade, but moves the bound only when the grade does not carry
    the threat (probability 1 - harm: binary, not relevant); a pair on the other side moves the
    bound by its lift when judged relevant (probability harm). So after the first n pairs the
    bound is expected to have moved by the sum of swing x (1 - harm) + lift x harm over them;
    the answer is the first n where that reaches what is needed, and never more than the
    position of the last threatening pair (once it is judged the threatened bound has reached
    the difference: the order is certain, or the difference has crossed 0).
    """
    movable = np.flatnonzero(swing > 0)
    if len(movable) == 0:
        return len(swing)
    last = int(movable[-1]) + 1
    expected = np.cumsum(swing[:last] * keep[:last] + lift[:last] * harm[:last])
    reached = int(np.searchsorted(expected, need + EPS, side="left"))
    return min(reached + 1, last)


def _judge_more_by_blocks(moves: Callable[[int, int], tuple[np.ndarray, np.ndarray]], n: int,
                          harm: np.ndarray, keep: np.ndarray, need: float, block: int = JUDGE_BLOCK) -> int:
    """:func:`_judge_more` of the ``n`` pairs whose swings and lifts ``moves(lo, hi)`` makes
    a block at a time, the same answer: the expected movement summed block after block (each
    block's running sum started from the last one's, so every partial sum is the same number),
    stopping once it reaches the need with a threatening pair at or after that point."""
    threshold = need + EPS
    carry: float | None = None
    reached = -1  # the first pair where the expected movement reaches the need
    last = -1  # the last threatening pair seen
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        swing, lift = moves(lo, hi)
        movable = np.flatnonzero(swing > 0)
        if len(movable):
            last = lo + int(movable[-1])
        if reached < 0:
            step = swing * keep[lo:hi] + lift * harm[lo:hi]
            expected = np.cumsum(step if carry is None else np.concatenate(([carry], step)))
            expected = expected if carry is None else expected[1:]
            if len(expected) and expected[-1] >= threshold:
                reached = lo + int(np.searchsorted(expected, threshold, side="left"))
            carry = float(expected[-1]) if len(expected) else carry
        if 0 <= reached <= last:
            return reached + 1
    if last < 0:
        return n
    return last + 1 if reached < 0 or reached > last else reached + 1


def settle(qrels: Qrels, runs: Mapping[str, Run] | Iterable[Run], pool: Pool | int,
           measures: Iterable[str | Measure], **options: Any) -> list[Comparison]:
    """Every comparison of the runs under every measure, as settled as the labels make it:
    measure, a, b, difference, low, high, p_order, status, judge_more (see :class:`Settlement`
    for the options and the module's docstring for what each number means)."""
    return Settlement(qrels, runs, pool, measures, **options).comparisons()


def pair_weights(qrels: Qrels, runs: Mapping[str, Run] | Iterable[Run], pool: Pool | int,
                 measures: Iterable[str | Measure], **options: Any) -> PairWeights:
    """The open pool pairs in the queue order (the heaviest tenth shallowest first, then the
    rest heaviest first): judge from the top to settle the open comparisons, and to get the
    current ranking right, soonest (``options`` as :class:`Settlement`'s). A pair whose judgment can move no
    open comparison has weight 0. Refresh after labels arrive by calling it again (on a project
    of 10,000 queries and 10 runs it takes about as long as evaluating the runs once)."""
    return Settlement(qrels, runs, pool, measures, **options).weights()

