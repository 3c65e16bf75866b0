"""The live evaluation's copy of the current labels, and what is decided from it.

:class:`CurrentLabels` keeps every current label as numbers — pair (of the
:class:`~ragjudge.services.scoring.livespace.PairSpace`), annotator code, grade —, the
adjudications and the gold policy (the reference annotators), read once in bulk and then kept
equal to the database by replacing the rows of the queries new events touch (labels and
adjudications are append-only, so the copy equals a fresh read). From it, without reading or
decoding a label again:

- each view's grade of every pair at once (:meth:`CurrentLabels.grades_of`: the gold rule with
  the adjudications and a complete reference's closed world, or an annotator's view for the
  ranges), and the gold of the few queries a label touched (:meth:`CurrentLabels.touched_gold`,
  the same rule code on :class:`LabelArrays`);
- what the gold is made of (:meth:`CurrentLabels.composition`, the
  :class:`~ragjudge.services.gold.gold.Composition` that ``gold()`` counts);
- the people's ratings for the agreement statistics (:meth:`CurrentLabels.ratings`, the
  :class:`~ragjudge.metrics.agreement.Ratings` that ``load_ratings`` reads).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ragjudge.metrics import _keys
from ragjudge.services.events.labels import NO_GRADE, GradeRows
from ragjudge.services.scoring.livecore import LiveLabels

if TYPE_CHECKING:
    from ragjudge.metrics.agreement import Ratings
    from ragjudge.services.events.labels import CodedLabels, LabelArrays
    from ragjudge.services.gold.gold import Composition
    from ragjudge.services.gold.rules import GoldPolicy
    from ragjudge.services.scoring.livespace import PairSpace

Judgments = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(query ids, chunk ids, grades) as object, object and int64 arrays"""


def people_only(rule: str, include_llm: bool) -> bool:
    """Whether ``rule``'s gold leaves the LLM annotators' labels out: unless they are let in
    or named (``annotator:NAME``), as :func:`ragjudge.services.gold.gold.gold` does."""
    return not (include_llm or rule.startswith("annotator:"))


class CurrentLabels:
    """The current labels and adjudications of a project, coded against ``space`` (see the
    module's docstring)."""

    def __init__(self, space: PairSpace, labels: CodedLabels, decided: dict[tuple[str, str], int],
                 policy: GoldPolicy, unjudged: dict[str, set[tuple[str, str]]] | None = None) -> None:
        self.space = space
        self.policy = policy
        self.unjudged = unjudged or {}
        """per complete reference, the pairs it skipped: left unjudged, never closed as not
        relevant (:func:`ragjudge.services.gold.gold.skipped_pairs`)"""
        self.llm: frozenset[str] = frozenset()
        """the LLM annotators (their labels stay out of the gold unless let in)"""
        self.used = len(labels)
        """labels in use (every current label with a grade)"""
        per_query = np.bincount(labels.pair_query[labels.pair], minlength=len(labels.queries))
        names = _keys.decode(labels.queries)
        self.per_query = {names[i]: int(per_query[i]) for i in np.flatnonzero(per_query).tolist()}
        pair, who, grade = space.number_labels(labels)
        self.names = list(labels.names)
        self.code = {n: i for i, n in enumerate(self.names)}
        self.rows = LiveLabels(pair, who, grade, space.pairs.rows[pair])
        self.decided = dict(decided)
        self._sources: dict[tuple[bool, str], tuple[tuple, np.ndarray, np.ndarray]] = {}
        """(people, rule) -> what the labels were when the gold was decided (:meth:`_state`),
        and the pairs the rule decided with what decided each (:func:`decide`'s sources)"""

    def merged(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every current label ``(pair, annotator code, grade)``, sorted by pair and code."""
        return self.rows.merged()

    def llm_codes(self) -> list[int]:
        return [self.code[n] for n in self.llm if n in self.code]

    # -- new events --------------------------------------------------------------------------

    def recount(self, touched: list[str], rows: list[tuple]) -> None:
        """The labels in use, with the touched queries' current labels (``rows`` of query id,
        chunk id, annotator, grade) in place of those they had."""
        for q in touched:
            self.used -= self.per_query.pop(q, 0)
        for q, *_ in rows:
            self.per_query[q] = self.per_query.get(q, 0) + 1
            self.used += 1

    def keep(self, touched: list[str], labels: LabelArrays, decided: dict[tuple[str, str], int]) -> None:
        """The touched queries' current labels and adjudications, as just read, in place of
        theirs (pairs numbered, annotators coded), and their pool coverage counted again."""
        space = self.space
        touched_set = set(touched)
        self.decided = {k: g for k, g in self.decided.items() if k[0] not in touched_set}
        self.decided.update(decided)
        spans: dict[str, list[int]] = {}
        for i, query in enumerate(labels.query_ids.tolist()):  # rows of one query are adjacent (sorted)
            spans.setdefault(query, [i, i])[1] = i + 1
        for name in set(labels.annotators.tolist()) - set(self.code):
            self.code[name] = len(self.names)
            self.names.append(name)
        space.fit_pool()
        for query in touched:
            row = space.row.get(query)
            if row is None:
                continue
            start, end = spans.get(query, (0, 0))
            pair = space.pair_numbers(row, labels.chunk_ids[start:end].tolist())
            who = np.array([self.code[a] for a in labels.annotators[start:end].tolist()], dtype=np.int64)
            self.rows.replace(row, pair, who, labels.grades[start:end].astype(np.int64))
            space.cover_row(row, pair, who)

    # -- grades of every pair at once (a full pass) ------------------------------------------

    def grades_of(self, rule: str, gold_rule: str, include_llm: bool,
                  golds: dict[tuple[bool, str], np.ndarray]) -> np.ndarray:
        """A view's grade per pair number: the gold under ``rule``, or (``annotator:NAME``
        other than the ``gold_rule`` shown) an annotator's view for the ranges: on the queries
        they judged, the gold the screen shows with their grades in place of the gold's (as
        :meth:`touched_gold` takes it). ``golds`` keeps the golds made for other views."""
        pair, who, grade = self.merged()
        if rule != gold_rule and rule.startswith("annotator:"):
            space = self.space
            code = self.code.get(rule.split(":", 1)[1], -1)
            out = np.full(space.pairs.n, NO_GRADE, dtype=np.int64)
            mine = who == code
            if code < 0 or not mine.any():
                return out
            gold = self.gold_grades(people_only(gold_rule, include_llm), gold_rule, golds)
            out = np.full(len(gold), NO_GRADE, dtype=np.int64)
            rows = np.zeros(len(space.query_ids), dtype=bool)
            rows[space.pairs.rows[pair[mine]]] = True
            take = rows[space.pairs.rows] & (gold != NO_GRADE)
            out[take] = gold[take]
            out[pair[mine]] = grade[mine]
            return out
        return self.gold_grades(people_only(rule, include_llm), rule, golds)

    def _people_rows(self, people: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """The labels a gold reads (``people``: without the LLM annotators'), and whether they
        are the people's alone (False when there is no LLM label to leave out)."""
        pair, who, grade = self.merged()
        llm = self.llm_codes()
        if people and llm:
            keep = ~np.isin(who, llm)
            return pair[keep], who[keep], grade[keep], True
        return pair, who, grade, False

    def gold_grades(self, people: bool, rule: str, golds: dict[tuple[bool, str], np.ndarray]) -> np.ndarray:
        """The gold grade per pair number under ``rule`` (``people``: without the LLM
        annotators' labels): :func:`ragjudge.services.gold.rules.decide` for every pair at
        once, then the adjudications (not under ``reference``, the reference alone), and on a
        complete reference's queries every chunk the runs rank judged at the bottom of the
        scale (:func:`ragjudge.services.gold.gold.closure`)."""
        from ragjudge.services.gold.rules import REFERENCE_RULE, decide

        space, policy = self.space, self.policy
        pair, who, grade, people = self._people_rows(people)
        key = (people, rule)
        if key in golds:
            return golds[key]
        numbers, values, sources = decide(GradeRows(pair, who, grade, space.pairs.rows, self.code), policy, rule,
                                          self.unjudged_numbers() or None)
        self._sources[key] = (self._state(), numbers, sources)
        decided_numbers, decided_grades = self.decided_pairs() if rule != REFERENCE_RULE \
            else (np.zeros(0, dtype=np.int64), [])
        out = np.full(space.pairs.n, NO_GRADE, dtype=np.int64)
        out[numbers] = values
        out[decided_numbers] = decided_grades
        if policy.completes(rule):
            names = sorted(policy.complete)
            if rule.startswith("annotator:"):
                names = [rule.split(":", 1)[1]]
            codes = [self.code[n] for n in names if n in self.code]
            closed = np.unique(space.pairs.rows[pair[np.isin(who, codes)]]) if codes \
                else np.zeros(0, dtype=np.int64)
            if len(closed):
                ranked = space.ranked_pairs(closed)
                if len(out) < space.pairs.n:
                    out = np.concatenate([out, np.full(space.pairs.n - len(out), NO_GRADE, dtype=np.int64)])
                open_ = ranked[out[ranked] == NO_GRADE]
                if self.unjudged:  # a complete reference's skips stay unjudged (gold.closure)
                    skipped = self.unjudged_numbers()
                    left = [skipped[n] for n in names if n in skipped]
                    if left:
                        open_ = open_[~np.isin(open_, np.concatenate(left))]
                out[open_] = policy.lowest
        golds[key] = out
        return out

    def unjudged_numbers(self) -> dict[str, np.ndarray]:
        """Per complete reference, the numbers of the pairs it left unjudged; a pair not
        numbered yet is in no run's ranking and nobody's label."""
        out = {}
        space = self.space
        width = space.pairs.width
        for name, found in self.unjudged.items():
            pairs = [(space.row[q], c.encode("utf-8")) for q, c in found if q in space.row]
            pairs = [(row, c) for row, c in pairs if len(c) <= width]
            if not pairs:
                continue
            rows = np.array([row for row, _ in pairs], dtype=np.int64)
            numbers = space.pairs.find(rows, _keys.widen(_keys.as_ids([c for _, c in pairs]), width))
            out[name] = numbers[numbers >= 0]
        return out

    def decided_pairs(self) -> tuple[np.ndarray, list[int]]:
        """The pair numbers of the adjudicated pairs (numbered now if new), and their grades."""
        space = self.space
        decided = [(space.row[q], c, g) for (q, c), g in self.decided.items() if q in space.row]
        return space.numbers_of([d[0] for d in decided], [d[1] for d in decided]), [d[2] for d in decided]

    # -- the gold of the queries a label touched ---------------------------------------------

    def touched_gold(self, labels: LabelArrays, decided: dict[tuple[str, str], int], rule: str,
                     gold_rule: str, include_llm: bool) -> Judgments:
        """The judgments of a view on some queries (their ``labels`` and adjudications ``decided``
        as just read): :func:`ragjudge.services.gold.gold.labels_gold`, and on a complete
        reference's queries its closed world over every run
        (:func:`ragjudge.services.gold.gold.closure`), as
        :func:`ragjudge.services.gold.gold.gold` makes them for the whole project; for an
        annotator's view, :meth:`in_place_of_gold`."""
        from ragjudge.services.events.labels import without
        from ragjudge.services.gold.gold import closed_queries, closure, labels_gold, left_unjudged

        if rule != gold_rule and rule.startswith("annotator:"):
            return self.in_place_of_gold(labels, decided, rule.split(":", 1)[1], gold_rule, include_llm)
        if people_only(rule, include_llm):
            labels = without(labels, self.llm)
        q, c, g = labels_gold(labels, decided, rule, self.policy, self.unjudged)
        closed = closed_queries(labels, self.policy, rule)
        if not closed:
            return q, c, g
        eq, ec = closure(q, c, closed, self.space.runs.values(),
                         unjudged=left_unjudged(self.unjudged, self.policy, rule))
        return (np.concatenate([q, eq]), np.concatenate([c, ec]),
                np.concatenate([g, np.full(len(eq), self.policy.lowest, dtype=np.int64)]))

    def in_place_of_gold(self, labels: LabelArrays, decided: dict[tuple[str, str], int], name: str,
                         gold_rule: str, include_llm: bool) -> Judgments:
        """An annotator's view for the ranges: on the queries they judged, the gold with their
        grade in place of the gold's on every pair they graded (a pair they never saw keeps the
        gold's grade, so their view is not poorer than the gold for want of labels)."""
        mine = labels.annotators == name
        if not mine.any():
            empty = np.array([], dtype=object)
            return empty, empty.copy(), np.array([], dtype=np.int64)
        q, c, g = self.touched_gold(labels, decided, gold_rule, gold_rule, include_llm)
        xq, xc, xg = labels.query_ids[mine], labels.chunk_ids[mine], labels.grades[mine]
        queries = set(xq.tolist())
        own = set(zip(xq.tolist(), xc.tolist()))
        keep = np.fromiter((qid in queries and (qid, cid) not in own
                            for qid, cid in zip(q.tolist(), c.tolist())), dtype=bool, count=len(q))
        return (np.concatenate([q[keep], xq]), np.concatenate([c[keep], xc]),
                np.concatenate([np.asarray(g, dtype=np.int64)[keep], xg]))

    def _state(self) -> tuple:
        """What a gold decided from the labels depends on: the rows of labels (replaced, never
        changed in place, when events come in), the LLM annotators, the pairs numbered."""
        return (self.rows.merged()[0], tuple(sorted(self.llm_codes())), self.space.pairs.n)

    def gold_sources(self) -> dict[tuple[bool, str], tuple[np.ndarray, np.ndarray]]:
        """(people, rule) -> the pairs and sources of the golds decided from the labels as they
        are now (:meth:`gold_grades`), for :meth:`LabelsAt.composition` to count."""
        state = self._state()
        return {key: (pairs, sources) for key, (at, pairs, sources) in self._sources.items()
                if at[0] is state[0] and at[1:] == state[1:]}

    def at(self) -> LabelsAt:
        """The labels as they stand now, for the details pass to read on its own thread (the
        arrays are not changed by later events: they are replaced)."""
        decided = self.decided_pairs()[0]  # first: it may number a pair
        pair, who, grade = self.merged()
        pairs = self.space.pairs
        return LabelsAt(pair, who, grade, pairs.rows, pairs.byte_order(), dict(self.code),
                        tuple(self.names), self.llm, self.policy, decided, self.unjudged_numbers(),
                        self.gold_sources())


@dataclass(frozen=True)
class LabelsAt:
    """The current labels at one moment (:meth:`CurrentLabels.at`): rows ``(pair, who,
    grade)``, each pair's query row and its place in the order of (query id, chunk id), the
    annotators' codes, the LLM annotators, the gold policy and the adjudicated pairs."""

    pair: np.ndarray
    who: np.ndarray
    grade: np.ndarray
    pair_rows: np.ndarray
    place: np.ndarray
    code: dict[str, int]
    names: tuple[str, ...]
    llm: frozenset[str]
    policy: GoldPolicy
    decided: np.ndarray
    unjudged: dict[str, np.ndarray]
    """per complete reference, the pair numbers it left unjudged"""
    sources: dict[tuple[bool, str], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    """(people, rule) -> the pairs a gold decided from these labels and their sources
    (:meth:`CurrentLabels.gold_sources`)"""

    def composition(self, rule: str, include_llm: bool, judged: int) -> Composition:
        """What the gold of ``rule`` is made of, as :func:`ragjudge.services.gold.gold.gold`
        counts it, from the pairs' sources: :func:`ragjudge.services.gold.rules.decide`'s for
        the pairs no adjudication decided, the adjudications, and (the rest of the ``judged``
        pairs of the gold view) a complete reference's closed world."""
        from ragjudge.services.gold.gold import composition_of
        from ragjudge.services.gold.rules import FROM_ADJUDICATION, FROM_IMPLIED, REFERENCE_RULE, decide

        people = people_only(rule, include_llm)
        pair, who, grade = self.pair, self.who, self.grade
        llm = [self.code[n] for n in self.llm if n in self.code]
        if people and llm:
            keep = ~np.isin(who, llm)
            pair, who, grade = pair[keep], who[keep], grade[keep]
        found = self.sources.get((bool(people and llm), rule))
        if found is not None:  # the gold's own decision, made as its view was
            pairs, sources = found
        else:
            pairs, _, sources = decide(GradeRows(pair, who, grade, self.pair_rows, self.code), self.policy, rule,
                                       self.unjudged or None)
        decided = self.decided if rule != REFERENCE_RULE else self.decided[:0]
        sources = sources[~np.isin(pairs, decided)]
        closed_world = judged - len(sources) - len(decided)
        sources = np.concatenate([sources, np.full(len(decided), FROM_ADJUDICATION, dtype=np.int64),
                                  np.full(closed_world, FROM_IMPLIED, dtype=np.int64)])
        labelled = [self.names[c] for c in np.unique(who).tolist()]
        left_out = sorted(n for n in self.llm if n in self.code) if people else []
        return composition_of(rule, self.policy, sources, labelled, left_out)

    def ratings(self, llm: frozenset[str], policy: GoldPolicy,
                scale: tuple[int, int]) -> tuple[Ratings, np.ndarray]:
        """The people's current grades as :func:`ragjudge.services.agreement.ratings.load_ratings`
        reads them (``llm``: the annotators left out; ``policy``: whose implied grades count),
        units in the same order, and the query row of each unit."""
        from ragjudge.services.agreement.ratings import coded_ratings

        row_at = np.empty(len(self.place), dtype=np.int64)
        row_at[self.place] = self.pair_rows
        rows = GradeRows(self.place[self.pair], self.who, self.grade, row_at, self.code)
        ratings, units = coded_ratings(rows, scale, policy, leave_out=llm,
                                       unjudged={n: self.place[v] for n, v in self.unjudged.items()} or None)
        return ratings, row_at[units]
