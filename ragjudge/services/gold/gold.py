"""The gold of a project, decided once: each pair's grade, and what it is made of.

Every path that scores asks :func:`gold` (``eval``, ``compare``, ``gate``, ``explain``,
``export qrels``, ``agree --verdict``, the RAG and answer measures) or, for the evaluation
screen's few touched pairs, :func:`labels_gold` — the same rule code
(:func:`ragjudge.services.gold.rules.decide`), the same adjudications, the same closed world.

Precedence for a pair: its newest adjudication; else, under an aggregation rule, a reference
annotator's grade (a complete reference's implied "not relevant" on the pairs of its queries it
does not list); else the rule over the other people's grades. LLM annotators count only when
named (``annotator:NAME``) or let in. ``reference`` is the reference alone, as ``eval --qrels``
reads the official file (no adjudication, nobody else).

**The closed world of a complete reference.** A complete reference says that every chunk of its
queries it does not list is not relevant. ragjudge makes that world one stated set of pairs,
the same for every run: on each of the reference's queries, every chunk that any of the
project's runs retrieves (at any depth) is judged, at the bottom of the scale unless graded.
So Judged@k and bpref count the same judged non-relevant chunks whichever run is scored and
whichever runs are scored together, and ``export qrels`` writes those pairs as 0 lines, so that
trec_eval on the exported file gives the project's numbers. ``eval --qrels FILE --complete``
closes a file's world the same way over the runs it is given.

:class:`Composition` says what a gold is made of; every output shows it (``eval``'s footer and
``"gold"`` in JSON, the evaluation screen, ``gate``, ``compare``, ``export qrels``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics._keys import as_ids, lookup, pair_keys
from ragjudge.services.events.labels import (
    CodedLabels,
    LabelArrays,
    adjudications,
    llm_annotators,
    NOT_RECHECK,
    read_labels,
)
from ragjudge.services.gold.rules import (
    FROM_ADJUDICATION,
    FROM_IMPLIED,
    FROM_REFERENCE,
    FROM_RULE,
    REFERENCE_RULE,
    GoldPolicy,
    check_rule,
    decide,
    decide_labels,
    gold_policy,
)
from ragjudge.store.sqltext import fetch, listed
from ragjudge.safetext import quote

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from ragjudge.metrics.data import Qrels, Run
    from ragjudge.services.project.database import Project


@dataclass(frozen=True)
class Composition:
    """What a gold is made of: the rule, the reference, and how many pairs each part decided."""

    rule: str
    reference: tuple[str, ...] = ()
    complete: bool = False
    reference_pairs: int = 0
    """pairs whose grade is the reference's"""
    implied_pairs: int = 0
    """pairs a complete reference does not list, judged not relevant (its closed world)"""
    other_pairs: int = 0
    """pairs the reference does not list, graded by the rule over the other annotators"""
    adjudicated: int = 0
    annotators: tuple[str, ...] = ()
    """whose grades entered the gold (the reference included)"""
    llm_left_out: tuple[str, ...] = ()

    @property
    def pairs(self) -> int:
        return self.reference_pairs + self.implied_pairs + self.other_pairs + self.adjudicated

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "reference": ", ".join(self.reference) or None,
                "complete": self.complete, "pairs": self.pairs,
                "reference_pairs": self.reference_pairs, "implied_pairs": self.implied_pairs,
                "other_pairs": self.other_pairs, "adjudicated": self.adjudicated,
                "annotators": list(self.annotators), "llm_left_out": list(self.llm_left_out)}

    def describe(self) -> str:
        """One line for a footer: ``gold: median · reference trec (complete): 1,204 pairs,
        35 pairs from other annotators · 3 adjudicated``."""
        parts = [f"gold: {self.rule}"]
        if self.reference:
            ref = ", ".join(self.reference) + (" (complete)" if self.complete else "")
            counted = f"reference {ref}: {self.reference_pairs:,} pairs"
            if self.implied_pairs:
                counted += f" + {self.implied_pairs:,} unlisted judged not relevant"
            if self.rule != REFERENCE_RULE:
                counted += f", {self.other_pairs:,} pairs from other annotators"
            parts.append(counted)
        elif self.rule == REFERENCE_RULE:
            parts.append("the project has no reference qrels, so no pair is judged")
        elif self.rule != "adjudicated":
            who = ", ".join(self.annotators) if 0 < len(self.annotators) <= 4 else f"{len(self.annotators)} annotators"
            parts.append(f"{self.other_pairs:,} pairs from {who if self.annotators else 'no one yet'}")
        if self.adjudicated:
            parts.append(f"{self.adjudicated:,} adjudicated")
        elif self.rule == "adjudicated":
            parts.append("no pair is adjudicated yet, so no pair is judged")
        if self.llm_left_out:
            parts.append(f"LLM {', '.join(self.llm_left_out)} left out")
        return " · ".join(parts)


@dataclass(frozen=True)
class Gold:
    """Gold judgments ``(query ids, chunk ids, grades)`` as ``as_ids`` arrays sorted by query and
    chunk (each pair once), with what decided each (``sources``: ``FROM_*`` of
    :mod:`ragjudge.services.gold.rules`) and the :class:`Composition`."""

    query_ids: np.ndarray
    chunk_ids: np.ndarray
    grades: np.ndarray
    sources: np.ndarray
    composition: Composition
    top_grade: int = field(default=3)

    def __len__(self) -> int:
        return len(self.grades)

    def qrels(self) -> Qrels:
        """The gold as metrics :class:`~ragjudge.metrics.data.Qrels` (carrying the top of the
        project's scale, ERR's g_max)."""
        from ragjudge.metrics.data import Qrels

        q, c, g = self.query_ids, self.chunk_ids, self.grades
        if not len(q):
            return Qrels(q, c, g, top_grade=self.top_grade)
        heads = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
        counts = np.diff(np.r_[heads, len(q)])
        return Qrels.from_grouped(q[heads], counts, c, g, top_grade=self.top_grade)

    def triples(self, *, listed_only: bool = False) -> list[tuple[str, str, int]]:
        """``(query, chunk, grade)`` per pair (``listed_only``: without a complete reference's
        implied pairs)."""
        from ragjudge.metrics._keys import decode

        keep = self.sources != FROM_IMPLIED if listed_only else slice(None)
        return list(zip(decode(self.query_ids[keep]), decode(self.chunk_ids[keep]),
                        self.grades[keep].tolist()))


def gold(project: Project, rule: str | None = None, *, include_llm: bool = False,
         runs: Mapping[str, Run] | None = None) -> Gold:
    """The gold of ``project`` under ``rule`` (default: the project's). A complete reference's
    world is closed over every chunk of the project's runs (``runs``: those already read, to
    spare reading them again; they must be all of the project's runs)."""
    rule = check_rule(project.rule if rule is None else rule)
    with project.connect() as connection:
        named = rule.split(":", 1)[1] if rule.startswith("annotator:") else None
        if named is not None:
            check_annotator_known(connection, named)
        labels = read_labels(connection, annotator=named)
        llm = llm_annotators(connection)
        left_out: tuple[str, ...] = ()
        if named is None and not include_llm:
            left_out = tuple(sorted(n for n in llm if n in labels.names))
            labels = labels.without(llm)
        decided = adjudications(connection) if rule != REFERENCE_RULE else {}
        policy = gold_policy(connection, project.scale.min)
        skipped = skipped_pairs(connection, policy.complete) if policy.completes(rule) else {}
    pairs, grades, sources = decide(labels.grade_rows(), policy, rule, _coded_pairs(labels, skipped))
    q = labels.queries[labels.pair_query[pairs]]
    c = labels.chunks[labels.pair_chunk[pairs]]
    closed = _closed_queries(labels, policy, rule)
    if closed:
        if runs is None:
            from ragjudge.services.runs.stored import project_run, project_run_names

            runs = {name: project_run(project, name) for name in project_run_names(project)}
        eq, ec = closure(q, c, closed, runs.values(), unjudged=left_unjudged(skipped, policy, rule))
        q, c = _concat_ids(q, eq), _concat_ids(c, ec)
        grades = np.concatenate([grades, np.full(len(eq), policy.lowest, dtype=np.int64)])
        sources = np.concatenate([sources, np.full(len(eq), FROM_IMPLIED, dtype=np.int64)])
    q, c, grades, sources = _with_adjudications(q, c, grades, sources, decided)
    graded = np.flatnonzero(np.bincount(labels.annotator, minlength=len(labels.names)))
    annotators = tuple(sorted({labels.names[i] for i in graded.tolist()}
                              & _counted_names(labels.names, policy, rule)))
    composition = _composition(rule, policy, sources, annotators, left_out, bool(closed))
    return Gold(q, c, grades, sources, composition, top_grade=project.scale.max)


def labels_gold(labels: LabelArrays, decided: Mapping[tuple[str, str], int], rule: str,
                policy: GoldPolicy | None = None,
                unjudged: Mapping[str, set[tuple[str, str]]] | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The gold of some labels (object arrays of ids; the pairs a label event touched): the
    rule over them, then the adjudications ``decided`` — :func:`gold` on a few queries, without
    the closed world (the caller adds :func:`closure` with its runs)."""
    rule = check_rule(rule)
    q, c, g, _ = decide_labels(labels, policy, rule, unjudged)
    if decided and rule != REFERENCE_RULE:
        keep = np.fromiter(((qid, cid) not in decided for qid, cid in zip(q.tolist(), c.tolist())),
                           dtype=bool, count=len(q))
        dq, dc, dg = zip(*((qid, cid, grade) for (qid, cid), grade in decided.items()))
        q = np.concatenate([q[keep], np.array(dq, dtype=object)])
        c = np.concatenate([c[keep], np.array(dc, dtype=object)])
        g = np.concatenate([g[keep], np.array(dg, dtype=np.int64)])
    return q, c, g


def closure(query_ids: np.ndarray, chunk_ids: np.ndarray, queries: set[str],
            runs: Iterable[Run], *, unjudged: set[tuple[str, str]] | frozenset = frozenset()
            ) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of a complete reference's closed world that have no grade yet: on each of
    ``queries``, every chunk any of ``runs`` retrieves that is not among the judged pairs
    (``query_ids``, ``chunk_ids``: ``as_ids`` arrays or object arrays of str) nor among the
    pairs the reference left ``unjudged`` (:func:`skipped_pairs`: a negative grade in its
    qrels, trec_eval's "in the pool, not judged", is no "not relevant"). Returned as arrays of
    the same kind, sorted, each pair once.

    In numpy throughout (the rows of the closed queries gathered from each run's offsets, pairs
    as one byte key each): 10 runs of 1,000,000 entries take seconds, not a minute."""
    from ragjudge.metrics._keys import as_ids, decode, lookup

    textual = query_ids.dtype == object
    judged_q = as_ids(query_ids.tolist()) if textual else query_ids
    judged_c = as_ids(chunk_ids.tolist()) if textual else chunk_ids
    if unjudged:
        listed = sorted(unjudged)
        judged_q = _concat_all([judged_q, as_ids([p[0] for p in listed])])
        judged_c = _concat_all([judged_c, as_ids([p[1] for p in listed])])
    wanted = as_ids(sorted(queries))
    found_q, found_c = [], []
    for run in runs:
        rows = lookup(run.query_id_bytes, wanted)
        rows = rows[rows >= 0]
        if not len(rows):
            continue
        starts, counts = run.offsets[rows], run.offsets[rows + 1] - run.offsets[rows]
        taken = np.arange(int(counts.sum())) + np.repeat(starts - np.cumsum(counts) + counts, counts)
        found_q.append(np.repeat(run.query_id_bytes[rows], counts))
        found_c.append(run.chunk_ids[taken])
    empty: tuple[np.ndarray, np.ndarray] = (np.zeros(0, dtype=object), np.zeros(0, dtype=object)) \
        if textual else (as_ids([]), as_ids([]))
    if not found_q:
        return empty
    q, c = _concat_all(found_q), _concat_all(found_c)
    wq = max(q.dtype.itemsize, judged_q.dtype.itemsize)
    wc = max(c.dtype.itemsize, judged_c.dtype.itemsize)
    keys, first = np.unique(pair_keys(q, c, wq, wc), return_index=True)
    fresh = first[~np.isin(keys, pair_keys(judged_q, judged_c, wq, wc))]
    q, c = q[fresh], c[fresh]
    if textual:
        return np.array(decode(q), dtype=object), np.array(decode(c), dtype=object)
    return q, c


def _concat_all(parts: list[np.ndarray]) -> np.ndarray:
    """``as_ids`` arrays of several widths as one, at the widest."""
    from ragjudge.metrics._keys import widen

    width = max(part.dtype.itemsize for part in parts)
    return np.concatenate([widen(part, width) for part in parts])


def _coded_pairs(labels: CodedLabels, pairs: Mapping[str, set[tuple[str, str]]]) -> dict[str, np.ndarray] | None:
    """Per annotator, the numbers of ``pairs`` (ids) among the labels' pairs (a pair nobody
    graded has none)."""
    if not pairs or not labels.n_pairs:
        return None
    keys = labels.pair_query.astype(np.int64) * len(labels.chunks) + labels.pair_chunk  # ascending
    out = {}
    for name, found in pairs.items():
        listed = sorted(found)
        q = lookup(labels.queries, as_ids([p[0] for p in listed]))
        c = lookup(labels.chunks, as_ids([p[1] for p in listed]))
        wanted = np.where((q >= 0) & (c >= 0), q * len(labels.chunks) + c, -1)
        at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
        out[name] = at[(wanted >= 0) & (keys[at] == wanted)]
    return out


def skipped_pairs(connection: Connection, names: Iterable[str]) -> dict[str, set[tuple[str, str]]]:
    """Per annotator of ``names``, the pairs whose newest label event of theirs (not a blind
    re-check) is a skip without a grade. A complete reference's qrels line with a negative
    grade is imported as such a skip (:mod:`ragjudge.services.transfer.labelimport`): the pair
    is in its pool and not judged, so its closed world (:func:`closure`) leaves it unjudged."""
    names = sorted(names)
    if not names:
        return {}
    among, params = listed("name", names)
    rows = fetch(connection,
                 "SELECT l.annotator, l.query_id, l.chunk_id FROM labels l JOIN (SELECT max(id) AS id "
                 f"FROM labels WHERE annotator IN ({among}) AND {NOT_RECHECK} "
                 "GROUP BY annotator, query_id, chunk_id) newest ON l.id = newest.id "
                 "WHERE l.grade IS NULL AND l.skipped = :yes", {**params, "yes": True})
    out: dict[str, set[tuple[str, str]]] = {}
    for name, q, c in rows:
        out.setdefault(name, set()).add((q, c))
    return out


def left_unjudged(skipped: Mapping[str, set[tuple[str, str]]], policy: GoldPolicy,
                  rule: str) -> set[tuple[str, str]]:
    """The pairs the complete references whose world ``rule``'s gold closes skipped."""
    if rule.startswith("annotator:"):
        names: Iterable[str] = frozenset([rule.split(":", 1)[1]]) & policy.complete
    else:
        names = policy.complete
    return set().union(*(skipped.get(name, set()) for name in names))


def closed_queries(labels: LabelArrays | CodedLabels, policy: GoldPolicy, rule: str) -> set[str]:
    """The queries where ``rule``'s gold closes the world: those a complete reference graded
    (under ``annotator:NAME``, that complete reference's)."""
    return _closed_queries(labels, policy, rule)


def _closed_queries(labels: LabelArrays | CodedLabels, policy: GoldPolicy, rule: str) -> set[str]:
    if not policy.completes(rule):
        return set()
    names = set(policy.complete)
    if rule.startswith("annotator:"):
        names = {rule.split(":", 1)[1]}
    if isinstance(labels, CodedLabels):
        from ragjudge.metrics._keys import decode

        codes = [labels.code_of(n) for n in names]
        mine = np.isin(labels.annotator, [x for x in codes if x >= 0])
        return set(decode(labels.queries[np.unique(labels.pair_query[labels.pair[mine]])]))
    mine = np.isin(labels.annotators, list(names))
    return set(labels.query_ids[mine].tolist())


def _concat_ids(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    from ragjudge.metrics._keys import widen

    if not len(b):
        return a
    width = max(a.dtype.itemsize, b.dtype.itemsize)
    return np.concatenate([widen(a, width), widen(b, width)])


def _with_adjudications(q: np.ndarray, c: np.ndarray, g: np.ndarray, s: np.ndarray,
                        decided: Mapping[tuple[str, str], int]) -> tuple[np.ndarray, ...]:
    """The judgments with the adjudicated pairs' grades in place (adjudications come first),
    sorted by (query, chunk) bytes."""
    from ragjudge.metrics._keys import as_ids, words

    if decided:
        dq = as_ids([k[0] for k in decided])
        dc = as_ids([k[1] for k in decided])
        wq, wc = max(q.dtype.itemsize, dq.dtype.itemsize), max(c.dtype.itemsize, dc.dtype.itemsize)
        keep = ~np.isin(pair_keys(q, c, wq, wc), pair_keys(dq, dc, wq, wc))
        q, c = _concat_ids(q[keep], dq), _concat_ids(c[keep], dc)
        g = np.concatenate([g[keep], np.array(list(decided.values()), dtype=np.int64)])
        s = np.concatenate([s[keep], np.full(len(decided), FROM_ADJUDICATION, dtype=np.int64)])
    if len(q):
        order = np.lexsort([*words(c).T[::-1], *words(q).T[::-1]])
        q, c, g, s = q[order], c[order], g[order], s[order]
    return q, c, g, s


def _counted_names(names: Iterable[str], policy: GoldPolicy, rule: str) -> set[str]:
    """The annotators whose grades ``rule`` reads."""
    if rule == REFERENCE_RULE:
        return set(policy.reference)
    if rule.startswith("annotator:"):
        return {rule.split(":", 1)[1]}
    if rule == "adjudicated":
        return set()
    return set(names)


def _composition(rule: str, policy: GoldPolicy, sources: np.ndarray, annotators: tuple[str, ...],
                 left_out: tuple[str, ...], closed: bool) -> Composition:
    counts = np.bincount(sources, minlength=4) if len(sources) else np.zeros(4, dtype=np.int64)
    reference = tuple(sorted(policy.reference)) if (policy.applies(rule) or rule == REFERENCE_RULE) else ()
    complete = bool(reference) and bool(policy.complete & set(reference)) and (closed or policy.completes(rule))
    return Composition(rule=rule, reference=reference, complete=complete,
                       reference_pairs=int(counts[FROM_REFERENCE]), implied_pairs=int(counts[FROM_IMPLIED]),
                       other_pairs=int(counts[FROM_RULE]), adjudicated=int(counts[FROM_ADJUDICATION]),
                       annotators=annotators, llm_left_out=left_out)


def composition_of(rule: str, policy: GoldPolicy, sources: np.ndarray, labelled: Iterable[str],
                   left_out: Iterable[str] = ()) -> Composition:
    """The :class:`Composition` of a gold decided elsewhere with the same rule code (the
    evaluation screen's engine): ``sources`` what decided each pair (``FROM_*``), ``labelled``
    the annotators whose labels the rule read, ``left_out`` the LLM annotators left out."""
    labelled = set(labelled)
    annotators = tuple(sorted(labelled & _counted_names(labelled, policy, rule)))
    return _composition(rule, policy, sources, annotators, tuple(left_out), policy.completes(rule))


def check_annotator_known(connection: Connection, name: str) -> None:
    """``--rule annotator:NAME`` with a name the project does not know is a typo, not 0 qrels."""
    known = sorted({n for (n,) in fetch(connection, "SELECT name FROM annotators")}
                   | {n for (n,) in fetch(connection, "SELECT DISTINCT annotator FROM labels")})
    if name not in known:
        raise UsageError(
            f"--rule 'annotator:{name}': the project has no annotator named {quote(name)} "
            f"(annotators: {', '.join(known) or 'none yet'})."
        )
