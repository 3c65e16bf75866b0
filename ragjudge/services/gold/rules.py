"""The gold rule: one grade per (query, chunk) pair from the annotators' current grades.

A pair's gold grade is its newest adjudication if any (:mod:`ragjudge.services.gold.gold`
adds those), else, under the rule:

- ``median`` (default) — the lower median: with grades [1, 2] it is 1;
- ``majority`` — the most frequent grade, ties going to the lower grade (a conservative choice);
- ``mean`` — the arithmetic mean rounded half up to a whole grade;
- ``min`` / ``max``;
- ``reference`` — the reference's grades alone (a collection's official qrels), as
  ``eval --qrels`` on the official file reads them; nobody else's label counts;
- ``annotator:NAME`` — that annotator's grades only;
- ``adjudicated`` — adjudicated pairs only.

A *reference* annotator (``ragjudge import qrels --reference``) is not one more opinion: under
the aggregation rules, on the pairs it graded its grade is the gold and the rule decides only
the other pairs. A *complete* reference declares every pair of its queries that it does not
list not relevant, as trec_eval reads such qrels: on a pair of its queries that others graded
and it does not list, its implied grade (the bottom of the scale) decides. A pair it lists with
a negative grade (trec_eval: in the pool, not judged) is imported as its skip and is *unjudged*
(``unjudged`` below, :func:`ragjudge.services.gold.gold.skipped_pairs`): listed, so no implied
grade, and not graded, so the rule decides it.

Everything here works on coded rows (:class:`~ragjudge.services.events.labels.GradeRows`:
pair numbers, annotator codes, grades), for every pair at once; :func:`decide_labels` and the
functions after it are the same code for :class:`LabelArrays` (the few pairs a label touches,
the support judgments of the RAG measures).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
import numpy as np
from ragjudge.errors import UsageError
from ragjudge.safetext import quote
from ragjudge.numeric import AGGREGATION_RULES
from ragjudge.store.sqltext import fetch
from ragjudge.services.events.labels import GradeRows, LabelArrays


if TYPE_CHECKING:
    pass


REFERENCE_RULE = "reference"
RULES = (*AGGREGATION_RULES, REFERENCE_RULE, "annotator:NAME", "adjudicated")

FROM_RULE, FROM_REFERENCE, FROM_IMPLIED, FROM_ADJUDICATION = 0, 1, 2, 3
"""What decided a gold pair's grade: the rule over the annotators' grades, the reference's
grade, a complete reference's implied "not relevant", or an adjudication."""


@dataclass(frozen=True)
class GoldPolicy:
    """Which annotators' grades decide the gold before the rule: the reference annotators, and
    those of them that are complete (an unlisted pair of their queries is not relevant)."""

    reference: frozenset[str] = frozenset()
    complete: frozenset[str] = frozenset()
    lowest: int = 0
    """the bottom of the scale: the grade of a pair a complete reference does not list"""

    def applies(self, rule: str) -> bool:
        """The reference decides under the aggregation rules and ``reference``;
        ``annotator:NAME`` and ``adjudicated`` ask for something else."""
        return bool(self.reference) and (rule in AGGREGATION_RULES or rule == REFERENCE_RULE)

    def completes(self, rule: str) -> bool:
        """Whether unlisted pairs of a complete reference's queries count as judged under
        ``rule`` (the aggregation rules, and the complete reference's own labels)."""
        if not self.complete:
            return False
        return rule in AGGREGATION_RULES or rule == REFERENCE_RULE or (
            rule.startswith("annotator:") and rule.split(":", 1)[1] in self.complete)

    def complete_queries(self, labels: LabelArrays, rule: str | None = None) -> set[str]:
        """The queries a complete reference has graded (its world is closed there); under
        ``annotator:NAME``, those of that reference only."""
        if len(labels) == 0 or (rule is not None and not self.completes(rule)):
            return set()
        names = self.complete
        if rule is not None and rule.startswith("annotator:"):
            names = frozenset([rule.split(":", 1)[1]])
        mine = np.isin(labels.annotators, list(names))
        return set(labels.query_ids[mine].tolist())


def gold_policy(connection: Any, lowest: int) -> GoldPolicy:
    """The project's reference annotators (``annotators.reference``) as a :class:`GoldPolicy`
    (``connection``: SQLAlchemy's or :mod:`ragjudge.store.sqltext`'s)."""
    rows = fetch(connection, "SELECT name, complete FROM annotators WHERE reference = :yes",
                 {"yes": True})
    return GoldPolicy(frozenset(n for n, _ in rows), frozenset(n for n, c in rows if c), int(lowest))


def check_rule(rule: str) -> str:
    if rule in AGGREGATION_RULES or rule in ("adjudicated", REFERENCE_RULE):
        return rule
    if rule.startswith("annotator:") and rule[len("annotator:"):].strip():
        return rule
    shown = quote(rule) if rule.strip() else "(empty)"
    raise UsageError(
        f"--rule {shown} is not a gold rule. Use one of: median, majority, mean, min, max, "
        "reference (the reference qrels alone), adjudicated, or annotator:NAME."
    )


def aggregate_pairs(pair: np.ndarray, grade: np.ndarray, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """The rule's grade of each pair from its annotators' grades, for every pair at once:
    ``(pairs, grades)``, the pairs ascending. Rows must be grouped by pair.

    Rules (as :func:`aggregate`): the lower median ``g[(n - 1) // 2]`` of the sorted grades;
    ``min``; ``max``; ``mean`` rounded half up ``floor(mean + 0.5)``; ``majority`` the most
    frequent grade, ties to the lower."""
    if not len(grade):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    new = np.ones(len(grade), dtype=bool)
    new[1:] = pair[1:] != pair[:-1]
    gid = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    counts = np.diff(np.r_[starts, len(grade)])
    if rule == "mean":
        out = np.floor(np.bincount(gid, weights=grade) / counts + 0.5).astype(np.int64)
    elif rule == "majority":
        low = int(grade.min())
        span = int(grade.max()) - low + 1
        keys, n = np.unique(gid * span + (grade - low), return_counts=True)
        group, value = keys // span, keys % span + low
        first = np.lexsort((value, -n, group))
        take = first[np.r_[True, group[first][1:] != group[first][:-1]]]
        out = value[take]
    else:
        low = int(grade.min())
        span = int(grade.max()) - low + 1
        # each pair's grades in order: (pair, grade) in one integer, sorted
        ordered = np.sort(gid * span + (grade - low)) - gid * span + low
        if rule == "median":
            out = ordered[starts + (counts - 1) // 2]
        elif rule == "min":
            out = ordered[starts]
        else:  # max
            out = ordered[starts + counts - 1]
    return pair[starts], np.asarray(out, dtype=np.int64)


Unjudged = Mapping[str, np.ndarray]
"""Per complete reference, the pair numbers it left unjudged (listed with a negative grade)."""


def coded_gold_labels(rows: GradeRows, policy: GoldPolicy | None, rule: str,
                      unjudged: Unjudged | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rows ``(pair, annotator, grade)`` the rule aggregates, grouped by pair, and which of
    them are a complete reference's implied grades: on a pair a reference graded only the
    reference's rows (under ``reference``, only the reference's pairs); a complete reference
    adds its grade ``policy.lowest`` on the pairs of its queries others graded and it does not
    list (not under ``reference``, which reads nobody else's labels) nor left ``unjudged``."""
    pair, who, grade = rows.pair, rows.annotator, rows.grade
    implied = np.zeros(len(grade), dtype=bool)
    if policy is None or not policy.applies(rule) or not len(grade):
        if rule == REFERENCE_RULE:  # no reference: no gold
            return pair[:0], who[:0], grade[:0], implied[:0]
        return pair, who, grade, implied
    codes = [c for c in (rows.code_of(n) for n in policy.reference) if c >= 0]
    if rule == REFERENCE_RULE:
        keep = np.isin(who, codes)
        return pair[keep], who[keep], grade[keep], implied[keep]
    n_pairs = len(rows.pair_query)
    query = rows.pair_query
    n_queries = int(query.max()) + 1 if n_pairs else 0
    parts = [(pair, who, grade, implied)]
    for name in sorted(policy.complete):
        code = rows.code_of(name)
        mine = who == code
        if code < 0 or not mine.any():
            continue
        listed = np.zeros(n_pairs, dtype=bool)
        listed[pair[mine]] = True
        if unjudged is not None and name in unjudged:
            listed[unjudged[name]] = True
        scope = np.zeros(n_queries, dtype=bool)
        scope[query[pair[mine]]] = True
        missing = np.unique(pair[scope[query[pair]] & ~listed[pair]])
        if len(missing):
            parts.append((missing, np.full(len(missing), code, dtype=np.int64),
                          np.full(len(missing), policy.lowest, dtype=np.int64),
                          np.ones(len(missing), dtype=bool)))
    if len(parts) > 1:
        pair, who, grade, implied = (np.concatenate([p[i] for p in parts]) for i in range(4))
        order = np.lexsort((who, pair))
        pair, who, grade, implied = pair[order], who[order], grade[order], implied[order]
    is_reference = np.isin(who, codes)
    if not is_reference.any():
        return pair, who, grade, implied
    has_reference = np.zeros(n_pairs, dtype=bool)
    has_reference[pair[is_reference]] = True
    keep = is_reference | ~has_reference[pair]
    return pair[keep], who[keep], grade[keep], implied[keep]


def decide(rows: GradeRows, policy: GoldPolicy | None, rule: str,
           unjudged: Unjudged | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pairs, grades, sources)``: the gold grade of every pair the rule grades, ascending by
    pair, and what decided it (:data:`FROM_RULE`, :data:`FROM_REFERENCE`,
    :data:`FROM_IMPLIED`); adjudications are not included. The one implementation of the rule
    (``unjudged``: the pairs complete references left unjudged, see :func:`coded_gold_labels`)."""
    rule = check_rule(rule)
    empty = np.zeros(0, dtype=np.int64)
    if rule == "adjudicated":
        return empty, empty, empty
    pair, who, grade, implied = coded_gold_labels(rows, policy, rule, unjudged)
    codes = [] if policy is None else [c for c in (rows.code_of(n) for n in policy.reference) if c >= 0]
    if rule.startswith("annotator:"):
        me = rows.code_of(rule.split(":", 1)[1])
        keep = who == me
        source = np.full(int(keep.sum()), FROM_REFERENCE if me in codes else FROM_RULE, dtype=np.int64)
        return pair[keep], grade[keep], source
    pairs, grades = aggregate_pairs(pair, grade, rule if rule != REFERENCE_RULE else "median")
    if not len(pairs):
        return pairs, grades, empty
    source = np.full(len(pairs), FROM_RULE, dtype=np.int64)
    at = np.searchsorted(pairs, pair)
    source[at[np.isin(who, codes) & ~implied]] = FROM_REFERENCE
    source[at[implied]] = FROM_IMPLIED
    return pairs, grades, source


def coded_gold(rows: GradeRows, policy: GoldPolicy | None, rule: str,
               unjudged: Unjudged | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(pairs, grades)`` of :func:`decide`."""
    pairs, grades, _ = decide(rows, policy, rule, unjudged)
    return pairs, grades


# -- the same rule on LabelArrays (object arrays of ids) ------------------------------------


def coded_rows(labels: LabelArrays) -> tuple[GradeRows, np.ndarray, np.ndarray]:
    """``labels`` as coded rows, and the query id and chunk id of each pair number (pairs in
    order of (query id, chunk id); rows grouped by pair, by annotator code within it)."""
    q = np.asarray(labels.query_ids, dtype=object)
    c = np.asarray(labels.chunk_ids, dtype=object)
    a = np.asarray(labels.annotators, dtype=object)
    if not len(q):
        empty = np.zeros(0, dtype=np.int64)
        return GradeRows(empty, empty, empty, empty, {}), q[:0], c[:0]
    keys = sorted(set(zip(q.tolist(), c.tolist())))
    number = {k: i for i, k in enumerate(keys)}
    queries = sorted({k[0] for k in keys})
    query_code = {k: i for i, k in enumerate(queries)}
    names = sorted(set(a.tolist()))
    codes = {n: i for i, n in enumerate(names)}
    pair = np.fromiter((number[k] for k in zip(q.tolist(), c.tolist())), dtype=np.int64, count=len(q))
    who = np.fromiter((codes[x] for x in a.tolist()), dtype=np.int64, count=len(a))
    order = np.lexsort((who, pair))
    pair_query = np.fromiter((query_code[k[0]] for k in keys), dtype=np.int64, count=len(keys))
    rows = GradeRows(pair[order], who[order], np.asarray(labels.grades, dtype=np.int64)[order],
                     pair_query, codes)
    return rows, np.array([k[0] for k in keys], dtype=object), np.array([k[1] for k in keys], dtype=object)


def decide_labels(labels: LabelArrays, policy: GoldPolicy | None, rule: str,
                  unjudged: Mapping[str, set[tuple[str, str]]] | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`decide` on :class:`LabelArrays`: ``(query ids, chunk ids, grades, sources)``,
    sorted by query and chunk (``unjudged``: per complete reference, the pairs it left
    unjudged, as ids)."""
    rows, pq, pc = coded_rows(labels)
    pairs, grades, source = decide(rows, policy, rule, numbered_pairs(pq, pc, unjudged))
    return pq[pairs], pc[pairs], grades, source


def aggregate(labels: LabelArrays, rule: str) -> list[tuple[str, str, int]]:
    """``(query, chunk, grade)`` per pair under ``rule`` with no reference (adjudications not
    included): :func:`decide_labels` as triples."""
    q, c, g, _ = decide_labels(labels, None, rule)
    return list(zip(q.tolist(), c.tolist(), g.tolist()))


def numbered_pairs(query_ids: np.ndarray, chunk_ids: np.ndarray,
                   pairs: Mapping[str, set[tuple[str, str]]] | None) -> Unjudged | None:
    """Per annotator, the numbers of ``pairs`` (ids) among the pairs ``query_ids[i],
    chunk_ids[i]`` (object arrays of ids); pairs not among them are left out."""
    if not pairs:
        return None
    number = {key: i for i, key in enumerate(zip(query_ids.tolist(), chunk_ids.tolist()))}
    return {name: np.array([number[p] for p in found if p in number], dtype=np.int64)
            for name, found in pairs.items()}


def implied_labels(labels: LabelArrays, policy: GoldPolicy,
                   unjudged: Mapping[str, set[tuple[str, str]]] | None = None) -> LabelArrays:
    """``labels`` and each complete reference's implied grade on the pairs of its queries that
    others graded and it neither lists nor left ``unjudged`` (for agreement with the
    reference), grouped by pair."""
    if not policy.complete or len(labels) == 0:
        return labels
    rows, pq, pc = coded_rows(labels)
    complete = GoldPolicy(policy.complete, policy.complete, policy.lowest)
    pair, who, grade, implied = coded_gold_labels(rows, complete, AGGREGATION_RULES[0],
                                                  numbered_pairs(pq, pc, unjudged))
    names = np.array(sorted(rows.codes, key=rows.codes.__getitem__), dtype=object)
    pair = np.concatenate([rows.pair, pair[implied]])
    who = np.concatenate([rows.annotator, who[implied]])
    grade = np.concatenate([rows.grade, grade[implied]])
    order = np.lexsort((who, pair))
    pair, who, grade = pair[order], who[order], grade[order]
    return LabelArrays(pq[pair], pc[pair], names[who], grade)
