"""Measures of generated answers, from people's judgments of them (the TREC 2024 RAG track).

The other RAG measures (:mod:`ragjudge.metrics.rag`) ask whether the retrieved chunks hold what
an answer needs; these ask what the run's generated answer itself delivers:

=====================================  ============================================================
name                                   value for one query (the run's answer to it)
=====================================  ============================================================
``AnswerNuggets(all)``                 mean over the query's nuggets of their support by the
                                       answer: full 1, partial 0.5, none 0
``AnswerNuggets(vital)``               the same over the vital nuggets only
``AnswerNuggets(strict,all)``          nuggets the answer fully supports / nuggets
``AnswerNuggets(strict,vital)``        the same over the vital nuggets only
``AnswerNuggets(weighted)``            sum of weight x score / sum of weights, vital nuggets
                                       weighing 1 and okay ones 0.5 (a nugget's own weight first)
``AnswerNuggets(strict,weighted)``     the same, counting full support only
``CitationPrecision``                  mean over the answer's (sentence, cited chunk) pairs of the
                                       chunk's support of the sentence: full 1, partial 0.5, none 0
``CitationRecall``                     mean over the answer's sentences of the best support among
                                       the sentence's citations (a sentence citing nothing: 0)
``CitationPrecision(strict)``,         the same, counting full support only
``CitationRecall(strict)``
=====================================  ============================================================

Sources: the nugget scores are those of the TREC 2024 RAG track (Pradeep et al. 2024, "Initial
Nugget Evaluation Results for the TREC 2024 RAG Track with the AutoNuggetizer Framework"; A =
all, V = vital, W = weighted, strict = full support only); citation precision and recall are the weighted
support precision and recall of Thakur et al. 2025 ("Support Evaluation for the TREC 2024 RAG
Track: Comparing Human versus LLM Judges").

Each query is scored on its own, then the mean is taken over the queries where the value is
defined. Undefined (NaN: left out of the mean and counted, never a silent 0): the run has no
answer to the query; the query has no nugget to count (AnswerNuggets); the answer has no sentence
(CitationRecall) or no citation (CitationPrecision), or its citations are not tied to sentences
(imported as plain text with ``cited``); or nobody has judged that side of the answer yet (no
nugget judged; no citation judged — an answer citing nothing needs no citation judgment).
Within an answer somebody judged, a thing nobody judged counts as no support, as an unjudged
chunk counts as not relevant.

The data is ``extras["answers"]``: :class:`AnswerLabels` (one run's answers with the annotators'
combined judgments, from ``ragjudge.services.scoring.answers.answer_labels``), aligned here with the
evaluated queries as :class:`AnswerSupport`. Numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ragjudge.safetext import quote

if TYPE_CHECKING:
    from ragjudge.metrics.context import EvalContext
    from ragjudge.metrics.explanation import RagExplanation

__all__ = [
    "UNJUDGED", "AnswerLabels", "AnswerSupport", "answer_nuggets", "citation_precision",
    "citation_recall", "support_scores", "explain_answer", "EXPLAINED", "undefined_reasons",
]

UNJUDGED = -1
"""The level of a nugget or citation nobody has judged (levels: 0 none, 1 partial, 2 full)."""

_NONE, _PARTIAL, _FULL = 0, 1, 2
_WORDS = {UNJUDGED: "not judged", _NONE: "none", _PARTIAL: "partial", _FULL: "full"}


def _ints(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.int64).ravel()


@dataclass(frozen=True, eq=False)
class AnswerLabels:
    """One run's generated answers and their combined judgments, independent of any ranking.

    - ``answered``: the queries the run has an answer to;
    - nuggets of those queries: ``nugget_query_ids``, ``nugget_names``, ``nugget_vital`` and
      ``nugget_levels`` (the answer's support of the nugget: 0 none, 1 partial, 2 full, -1 not
      judged); ``nugget_weights``, the weights set for nuggets (None or NaN: not set; the whole
      list None: none set), for the weighted score (:func:`ragjudge.metrics.rag.item_weights`);
    - sentences in reading order: ``sentence_query_ids`` (and ``sentence_texts``);
    - citations: ``citation_query_ids``, ``citation_sentences`` (the citing sentence, counted
      from 0 within its answer), ``citation_chunk_ids`` and ``citation_levels`` (the chunk's
      support of the sentence, -1 not judged);
    - ``unplaced``: queries whose answer cites chunks, but not sentence by sentence;
    - ``judged_query_ids``: the queries whose answers (of any run) somebody judged: every run is
      evaluated on them, with or without a relevance grade (:attr:`labelled_query_ids`).
    """

    answered: Sequence[str]
    nugget_query_ids: Sequence[str] = ()
    nugget_names: Sequence[str] = ()
    nugget_vital: Sequence[bool] = ()
    nugget_levels: Sequence[int] = ()
    nugget_weights: Sequence[float | None] | None = None
    sentence_query_ids: Sequence[str] = ()
    sentence_texts: Sequence[str] | None = None
    citation_query_ids: Sequence[str] = ()
    citation_sentences: Sequence[int] = ()
    citation_chunk_ids: Sequence[str] = ()
    citation_levels: Sequence[int] = ()
    unplaced: Sequence[str] = ()
    """Queries whose answer cites chunks without saying which sentence cites which (an answer
    imported as plain text with ``cited``): their citation measures are undefined."""
    judged_query_ids: Sequence[str] = ()
    """Queries whose answers somebody judged, of this run or another: the answer measures are
    computed there for every run (a run without an answer there is left out, and counted)."""

    @property
    def labelled_query_ids(self) -> list[str]:
        """The queries evaluated for the answer measures even without a relevance grade: those
        whose answers somebody judged (:func:`ragjudge.metrics.evaluate.evaluate`)."""
        return [str(q) for q in self.judged_query_ids]

    def align(self, query_ids: Sequence[str]) -> AnswerSupport:
        """The same data with one row per evaluated query (``query_ids``, in that order)."""
        row_of = {str(q): i for i, q in enumerate(query_ids)}
        n = len(query_ids)
        answered = np.zeros(n, dtype=bool)
        for q in self.answered:
            if str(q) in row_of:
                answered[row_of[str(q)]] = True

        def rows(ids: Sequence[str]) -> np.ndarray:
            return np.array([row_of.get(str(q), -1) for q in ids], dtype=np.int64)

        nugget_rows = rows(self.nugget_query_ids)
        keep = nugget_rows >= 0
        names: list[list[str]] = [[] for _ in range(n)]
        for r, name in zip(nugget_rows[keep], np.asarray(self.nugget_names, dtype=object)[keep]):
            names[r].append(str(name))
        width = max((len(x) for x in names), default=0)
        valid = np.zeros((n, width), dtype=bool)
        vital = np.zeros((n, width), dtype=bool)
        levels = np.full((n, width), UNJUDGED, dtype=np.int64)
        weight = None if self.nugget_weights is None else np.full((n, width), np.nan)
        if keep.any():
            order = np.argsort(nugget_rows[keep], kind="stable")
            r = nugget_rows[keep][order]
            col = np.arange(len(r)) - np.searchsorted(r, r)
            valid[r, col] = True
            vital[r, col] = np.asarray(self.nugget_vital, dtype=bool)[keep][order]
            levels[r, col] = _ints(self.nugget_levels)[keep][order]
            if weight is not None:
                weight[r, col] = np.asarray(self.nugget_weights, dtype=np.float64)[keep][order]
        sentence_rows = rows(self.sentence_query_ids)
        n_sentences = np.bincount(sentence_rows[sentence_rows >= 0], minlength=n)
        texts: list[list[str]] | None = None
        if self.sentence_texts is not None:
            texts = [[] for _ in range(n)]
            for r, text in zip(sentence_rows, self.sentence_texts):
                if r >= 0:
                    texts[r].append(str(text))
        cite_rows = rows(self.citation_query_ids)
        ok = cite_rows >= 0
        unplaced = np.zeros(n, dtype=bool)
        unplaced_rows = rows(self.unplaced)
        unplaced[unplaced_rows[unplaced_rows >= 0]] = True
        return AnswerSupport(
            answered=answered, unplaced=unplaced, valid=valid, vital=vital, nugget_levels=levels,
            nugget_weights=weight, n_sentences=n_sentences, rows=cite_rows[ok],
            sentences=_ints(self.citation_sentences)[ok] if len(cite_rows) else np.zeros(0, np.int64),
            levels=_ints(self.citation_levels)[ok] if len(cite_rows) else np.zeros(0, np.int64),
            chunk_ids=[str(c) for c, k in zip(self.citation_chunk_ids, ok) if k],
            nugget_names=names, sentence_texts=texts)


@dataclass(frozen=True, eq=False)
class AnswerSupport:
    """:class:`AnswerLabels` aligned with the rows of an evaluation (row q = query q).

    - ``answered`` bool (Q,);
    - ``valid``, ``vital`` bool and ``nugget_levels`` int (Q, M): the nuggets of each row's query
      (padded columns not valid) and the answer's support of each (-1 not judged);
      ``nugget_weights`` float (Q, M) or None: the weights set for them (NaN: not set);
    - ``n_sentences`` int (Q,);
    - ``rows``, ``sentences``, ``levels``: one entry per citation — its row, the citing sentence
      (from 0 within the answer) and the chunk's support of the sentence (-1 not judged);
      ``chunk_ids`` the cited chunks (for explanations);
    - ``unplaced`` bool (Q,): the answer cites chunks, but not sentence by sentence.
    """

    answered: np.ndarray
    unplaced: np.ndarray
    valid: np.ndarray
    vital: np.ndarray
    nugget_levels: np.ndarray
    n_sentences: np.ndarray
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sentences: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    levels: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    chunk_ids: Sequence[str] | None = None
    nugget_names: Sequence[Sequence[str]] | None = None
    sentence_texts: Sequence[Sequence[str]] | None = None
    nugget_weights: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name, kind in (("answered", bool), ("unplaced", bool), ("valid", bool), ("vital", bool),
                           ("nugget_levels", np.int64), ("n_sentences", np.int64),
                           ("rows", np.int64), ("sentences", np.int64), ("levels", np.int64)):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=kind))
        q = len(self.answered)
        if self.valid.ndim != 2 or self.valid.shape[0] != q or self.vital.shape != self.valid.shape \
                or self.unplaced.shape != (q,) \
                or self.nugget_levels.shape != self.valid.shape or self.n_sentences.shape != (q,):
            raise ValueError("AnswerSupport: the per-query arrays differ in shape")
        if not (len(self.rows) == len(self.sentences) == len(self.levels)):
            raise ValueError("AnswerSupport: rows, sentences and levels differ in length")
        if len(self.rows) and (self.rows.min() < 0 or self.rows.max() >= q or self.sentences.min() < 0
                               or np.any(self.sentences >= self.n_sentences[self.rows])):
            raise ValueError("AnswerSupport: a citation points outside its answer's sentences")
        for levels in (self.levels, self.nugget_levels):
            if levels.size and (levels.min() < UNJUDGED or levels.max() > _FULL):
                raise ValueError("AnswerSupport: levels are -1 (not judged), 0, 1 or 2")
        if self.nugget_weights is not None:
            weights = np.asarray(self.nugget_weights, dtype=np.float64)
            if weights.shape != self.valid.shape or np.any(weights < 0) or np.any(np.isinf(weights)):
                raise ValueError("AnswerSupport: nugget weights are one per nugget cell, finite "
                                 "and >= 0 (NaN: not set)")
            object.__setattr__(self, "nugget_weights", weights)

    @property
    def n_queries(self) -> int:
        return len(self.answered)


def support_scores(levels: np.ndarray, *, strict: bool) -> np.ndarray:
    """Each support level as a score: full 1, partial 0.5 (0 with ``strict``), none and not
    judged 0."""
    levels = np.asarray(levels)
    partial = 0.0 if strict else 0.5
    return np.where(levels == _FULL, 1.0, np.where(levels == _PARTIAL, partial, 0.0))


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1), np.nan)


def answer_nuggets(support: AnswerSupport, *, strict: bool, vital_only: bool,
                   weighted: bool = False) -> np.ndarray:
    """The TREC 2024 RAG track's nugget score of each row's answer (Pradeep et al. 2024).

    ``score_n`` = 1 when the answer fully supports nugget n, 0.5 when partially (0 with
    ``strict``), else 0; ``AnswerNuggets = sum_n w_n score_n / sum_n w_n`` over the query's
    nuggets (``vital_only``: its vital nuggets), w_n = 1, or with ``weighted`` the nugget's own
    weight where one is set, else vital 1 and okay 0.5 (the track's weighted score W;
    :func:`ragjudge.metrics.rag.item_weights`). NaN without an answer, without a nugget to
    count (or zero total weight), or when none of the query's nuggets has been judged for this
    answer."""
    weight = _weights(support, vital_only=vital_only, weighted=weighted)
    scores = support_scores(support.nugget_levels, strict=strict) * weight
    value = _ratio(scores.sum(axis=1), weight.sum(axis=1))
    judged = (support.valid & (support.nugget_levels != UNJUDGED)).any(axis=1)
    return np.where(support.answered & judged, value, np.nan)


def _weights(support: AnswerSupport, *, vital_only: bool, weighted: bool) -> np.ndarray:
    """float (Q, M): each counted nugget's weight (1, or :func:`item_weights` when weighted),
    0 for nuggets not counted."""
    from ragjudge.metrics.rag import item_weights

    counted = support.valid & support.vital if vital_only else support.valid
    if not weighted:
        return counted.astype(np.float64)
    return item_weights(counted, support.vital, support.nugget_weights)


def _citation_counts(support: AnswerSupport) -> tuple[np.ndarray, np.ndarray]:
    q = support.n_queries
    pairs = np.bincount(support.rows, minlength=q)
    judged = np.bincount(support.rows[support.levels != UNJUDGED], minlength=q)
    return pairs, judged


def citation_precision(support: AnswerSupport, *, strict: bool) -> np.ndarray:
    """Weighted citation precision of each row's answer (Thakur et al. 2025).

    ``CitationPrecision = sum over (sentence s, cited chunk c) of support(c, s) / |pairs|``,
    support full 1, partial 0.5 (0 with ``strict``), none 0. NaN without an answer, for an
    answer citing nothing, or when none of its citations has been judged."""
    pairs, judged = _citation_counts(support)
    total = np.bincount(support.rows, weights=support_scores(support.levels, strict=strict),
                        minlength=support.n_queries)
    value = _ratio(total, pairs.astype(np.float64))
    return np.where(support.answered & (judged > 0), value, np.nan)


def citation_recall(support: AnswerSupport, *, strict: bool) -> np.ndarray:
    """Weighted citation recall of each row's answer (Thakur et al. 2025).

    ``CitationRecall = sum over sentences s of max over s's citations c of support(c, s) /
    |sentences|``; a sentence citing nothing counts 0. NaN without an answer, for an answer
    without sentences, when it has citations and none of them has been judged, or when its
    citations are not tied to sentences (``unplaced``). An answer citing nothing at all scores 0:
    nothing in it is supported by a citation."""
    q = support.n_queries
    offsets = np.concatenate([[0], np.cumsum(support.n_sentences)])
    best = np.zeros(int(offsets[-1]), dtype=np.float64)
    np.maximum.at(best, offsets[support.rows] + support.sentences,
                  support_scores(support.levels, strict=strict))
    owner = np.repeat(np.arange(q), support.n_sentences)
    value = _ratio(np.bincount(owner, weights=best, minlength=q),
                   support.n_sentences.astype(np.float64))
    pairs, judged = _citation_counts(support)
    placed = (pairs == 0) & ~support.unplaced
    return np.where(support.answered & (placed | (judged > 0)), value, np.nan)


# -- why a value is undefined -------------------------------------------------------------------

NO_ANSWER = "the run has no answer"
NOT_JUDGED = "the answer is not judged yet"
CITATIONS_NOT_JUDGED = "the answer's citations are not judged yet"
NOT_PLACED = "the answer's citations are not tied to its sentences"


def undefined_reasons(measure: Any, support: AnswerSupport) -> list[str | None]:
    """Why an answer measure is undefined (NaN) on each row, None where it is defined: the
    words ``ragjudge eval`` prints beside each query left out of the mean.

    In the order the kernels test them: the run has no answer; then for ``AnswerNuggets`` no
    nugget to count (no vital nugget, for ``vital``; nuggets whose weights sum to 0), or the
    answer is not judged yet (none of its nuggets); for ``CitationPrecision`` the answer cites no
    chunk, or its citations are not tied to its sentences, or none of them is judged yet; for
    ``CitationRecall`` the answer has no sentence, its citations are not tied to its sentences,
    or none of them is judged yet."""
    name = measure.definition.name
    strict = bool(measure.get("strict"))
    q = support.n_queries
    reasons: list[str | None] = [None] * q
    if name == "AnswerNuggets":
        vital_only = bool(measure.get("vital"))
        value = answer_nuggets(support, strict=strict, vital_only=vital_only,
                               weighted=bool(measure.get("weighted")))
        counted = (support.valid & support.vital if vital_only else support.valid).any(axis=1)
        weight = _weights(support, vital_only=vital_only,
                          weighted=bool(measure.get("weighted"))).sum(axis=1)
        judged = (support.valid & (support.nugget_levels != UNJUDGED)).any(axis=1)
        checks = [(~counted, "no vital nugget to count" if vital_only else "no nugget to count"),
                  (weight <= 0, "the nuggets to count weigh 0"), (~judged, NOT_JUDGED)]
    else:
        pairs, judged_pairs = _citation_counts(support)
        if name == "CitationPrecision":
            value = citation_precision(support, strict=strict)
            checks = [((pairs == 0) & support.unplaced, NOT_PLACED),
                      (pairs == 0, "the answer cites no chunk"),
                      (judged_pairs == 0, CITATIONS_NOT_JUDGED)]
        elif name == "CitationRecall":
            value = citation_recall(support, strict=strict)
            checks = [(support.n_sentences == 0, "the answer has no sentence"),
                      ((pairs == 0) & support.unplaced, NOT_PLACED),
                      ((pairs > 0) & (judged_pairs == 0), CITATIONS_NOT_JUDGED)]
        else:
            raise UsageError(f"{measure} is not an answer measure.")
    checks.insert(0, (~support.answered, NO_ANSWER))
    for row in np.flatnonzero(np.isnan(value)).tolist():
        reasons[row] = next((why for failed, why in checks if failed[row]), "undefined")
    return reasons


# -- registered measures -----------------------------------------------------------------------

from ragjudge.errors import UsageError  # noqa: E402
from ragjudge.metrics.registry import Measure, Param, measure  # noqa: E402

_FLAG = lambda doc: Param(bool, False, flag=True, doc=doc)  # noqa: E731


def aligned_answers(ctx: Any) -> AnswerSupport:
    """``ctx.extras["answers"]`` aligned with the context's rows (once per context)."""
    cache = ctx.__dict__.setdefault("_rag_aligned", {})
    if "answers" in cache:
        return cache["answers"]
    value = ctx.extras["answers"]
    if isinstance(value, AnswerLabels):
        value = value.align(ctx.query_ids)
    if not isinstance(value, AnswerSupport):
        raise UsageError("extras['answers'] must be an AnswerLabels or an AnswerSupport, not "
                         f"{type(value).__name__}.")
    if value.n_queries != ctx.n_queries:
        raise UsageError(f"extras['answers'] has {value.n_queries} query rows but the evaluation "
                         f"has {ctx.n_queries}; align it with the evaluated queries.")
    cache["answers"] = value
    return value


@measure("AnswerNuggets", needs=("answers",),
         params={"strict": _FLAG("only full support counts (partial counts 0.5 otherwise)"),
                 "vital": _FLAG("vital nuggets only"),
                 "all": _FLAG("every nugget (the default)"),
                 "weighted": _FLAG("each nugget counts with its weight: its own if set, else "
                                   "vital 1, okay 0.5 (TREC 2024)")},
         aliases=("Answer_Nuggets",))
def _answer_nuggets_measure(ctx: EvalContext, m: Measure) -> np.ndarray:
    """The TREC 2024 RAG track's nugget score of the run's generated answer (Pradeep et al.
    2024, AutoNuggetizer; here the nugget assignment is made by people).

    Per nugget n of the query, how fully the whole answer supports it: ``score_n`` = 1 full,
    0.5 partial (0 with ``strict``), 0 none.
    ``AnswerNuggets = sum_n score_n / |nuggets|`` over every nugget (``all``, the default) or the
    vital ones (``vital``). ``AnswerNuggets(weighted) = sum_n w_n score_n / sum_n w_n``, w_n the
    nugget's own weight where one is set, else vital 1 and okay 0.5, as the track weighs them.
    The track's scores: ``(all)`` = All (A), ``(strict,all)`` = All strict, ``(vital)`` =
    Vital (V), ``(strict,vital)`` = Vital strict (its primary score), ``(weighted)`` =
    Weighted (W), ``(strict,weighted)`` = Weighted strict. NaN without an answer, without a
    nugget to count, or before anyone judged a nugget of this answer."""
    if m.get("vital") and m.get("all"):
        raise UsageError(f"measure {m}: choose vital or all, not both.")
    return answer_nuggets(aligned_answers(ctx), strict=bool(m.get("strict")),
                          vital_only=bool(m.get("vital")), weighted=bool(m.get("weighted")))


@measure("CitationPrecision", needs=("answers",),
         params={"strict": _FLAG("only full support counts (partial counts 0.5 otherwise)")},
         aliases=("Citation_Precision",))
def _citation_precision_measure(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Weighted citation precision of the run's generated answer (Thakur et al. 2025, support
    evaluation of the TREC 2024 RAG track).

    ``CitationPrecision = sum over (sentence, cited chunk) of support / |(sentence, cited chunk)|``
    where a chunk's support of the sentence citing it counts full 1, partial 0.5 (0 with
    ``strict``), none 0. NaN without an answer, for an answer citing nothing, or before anyone
    judged one of its citations."""
    return citation_precision(aligned_answers(ctx), strict=bool(m.get("strict")))


@measure("CitationRecall", needs=("answers",),
         params={"strict": _FLAG("only full support counts (partial counts 0.5 otherwise)")},
         aliases=("Citation_Recall",))
def _citation_recall_measure(ctx: EvalContext, m: Measure) -> np.ndarray:
    """Weighted citation recall of the run's generated answer (Thakur et al. 2025, support
    evaluation of the TREC 2024 RAG track).

    ``CitationRecall = sum over sentences of (best support among the sentence's citations) /
    |sentences|``, support full 1, partial 0.5 (0 with ``strict``), none 0; a sentence citing
    nothing counts 0. NaN without an answer or sentences, when the answer cites chunks and
    nobody judged any of them yet, or when its citations are not tied to sentences (an answer
    imported as plain text with ``cited``)."""
    return citation_recall(aligned_answers(ctx), strict=bool(m.get("strict")))


# -- explanations ----------------------------------------------------------------------------

EXPLAINED = ("AnswerNuggets", "CitationPrecision", "CitationRecall")
"""Measures :func:`explain_answer` explains."""


def _score_text(level: int, strict: bool) -> float:
    return float(support_scores(np.array([level]), strict=strict)[0])


def explain_answer(measure: Any, support: AnswerSupport, row: int) -> RagExplanation:
    """Why an answer measure has its value for one row: the table of nuggets (AnswerNuggets),
    of (sentence, cited chunk) pairs (CitationPrecision) or of sentences (CitationRecall), and
    the arithmetic. A :class:`ragjudge.metrics.rag.RagExplanation`."""
    from ragjudge.metrics.explanation import RagExplanation

    name = measure.definition.name
    label = str(measure)
    strict = bool(measure.get("strict"))
    rule = "full 1, anything less 0" if strict else "full 1, partial 0.5, none 0"
    steps: list[str] = []
    if not support.answered[row]:
        steps.append("The run has no generated answer for this query: undefined (left out of "
                     "the mean).")
    if name == "AnswerNuggets":
        return _explain_nuggets(measure, support, row, steps)
    texts = support.sentence_texts[row] if support.sentence_texts is not None else None
    mine = np.flatnonzero(support.rows == row)
    chunks = support.chunk_ids or [""] * len(support.rows)
    if name == "CitationPrecision":
        value = float(citation_precision(_one(support, row), strict=strict)[0])
        rows: list[tuple[Any, ...]] = []
        total = 0.0
        for i in mine:
            level = int(support.levels[i])
            score = _score_text(level, strict)
            total += score
            rows.append((int(support.sentences[i]), chunks[int(i)], _WORDS[level], score))
        steps.insert(0, f"{label}: each (sentence, cited chunk) scores by how fully the chunk "
                        f"supports the sentence: {rule}; a citation nobody judged counts 0.")
        if support.answered[row]:
            if not len(mine):
                steps.append("The answer cites no chunk sentence by sentence: undefined (left out "
                             "of the mean).")
            elif math.isnan(value):
                steps.append("Nobody has judged a citation of this answer yet: undefined.")
            else:
                steps.append(f"sum of scores / citations = {total:g} / {len(mine)} = {value:.4f}")
        return RagExplanation(label, value, ("sentence", "chunk", "support", "score"), rows, steps)
    value = float(citation_recall(_one(support, row), strict=strict)[0])
    n = int(support.n_sentences[row])
    rows = []
    total = 0.0
    for s in range(n):
        cites = [i for i in mine if int(support.sentences[i]) == s]
        best = max((int(support.levels[i]) for i in cites), default=None)
        score = max((_score_text(int(support.levels[i]), strict) for i in cites), default=0.0)
        total += score
        text = texts[s] if texts is not None and s < len(texts) else None
        rows.append((s, _short(text), ", ".join(chunks[int(i)] for i in cites) or None,
                     "no citation" if best is None else _WORDS[best], score))
    steps.insert(0, f"{label}: each sentence scores by the best support among its citations: "
                    f"{rule}; a sentence citing nothing, or whose citations nobody judged, "
                    "counts 0.")
    if support.answered[row]:
        if not n:
            steps.append("The answer has no sentence: undefined (left out of the mean).")
        elif support.unplaced[row] and not len(mine):
            steps.append("The answer cites chunks, but not sentence by sentence (it was imported "
                         "as plain text with 'cited'): undefined (left out of the mean).")
        elif math.isnan(value):
            steps.append("Nobody has judged a citation of this answer yet: undefined.")
        else:
            steps.append(f"sum of sentence scores / sentences = {total:g} / {n} = {value:.4f}")
    return RagExplanation(label, value, ("sentence", "text", "citations", "best support", "score"),
                          rows, steps)


def _explain_nuggets(measure: Any, support: AnswerSupport, row: int, steps: list[str]
                     ) -> RagExplanation:
    """The table of an AnswerNuggets value: each nugget, its support, weight and score."""
    from ragjudge.metrics.explanation import RagExplanation

    label, strict = str(measure), bool(measure.get("strict"))
    vital_only, weighted = bool(measure.get("vital")), bool(measure.get("weighted"))
    one = _one(support, row)
    value = float(answer_nuggets(one, strict=strict, vital_only=vital_only, weighted=weighted)[0])
    weights = _weights(one, vital_only=vital_only, weighted=weighted)[0]
    names = support.nugget_names[row] if support.nugget_names is not None else None
    rows: list[tuple[Any, ...]] = []
    num, den = 0.0, 0.0
    for m in np.flatnonzero(support.valid[row]):
        level = int(support.nugget_levels[row, m])
        counted = not vital_only or bool(support.vital[row, m])
        score = _score_text(level, strict)
        cells: list[Any] = [names[int(m)] if names is not None else f"#{m + 1}",
                            bool(support.vital[row, m]), _WORDS[level]]
        if weighted:
            cells.append(float(weights[m]) if counted else None)
        rows.append((*cells, score if counted else "not counted"))
        if counted:
            num += float(weights[m]) * score
            den += float(weights[m])
    rule = "full 1, anything less 0" if strict else "full 1, partial 0.5, none 0"
    steps.insert(0, f"{label}: each nugget scores by how fully the whole answer supports it: "
                    f"{rule}; a nugget nobody judged counts 0.")
    if vital_only:
        steps.append("Only vital nuggets count.")
    if weighted:
        steps.append("A nugget weighs its own weight if one is set, else vital 1, okay 0.5.")
    if support.answered[row] and den:
        what = "sum of weight x score / sum of weights" if weighted else \
            "sum of scores / nuggets counted"
        if math.isnan(value):
            steps.append("Nobody has judged a nugget of this answer yet: undefined.")
        else:
            steps.append(f"{what} = {num:g} / {den:g} = {value:.4f}")
    elif support.answered[row]:
        steps.append("No nugget to count for this query: undefined (left out of the mean).")
    columns = ("nugget", "vital", "support", *(("weight",) if weighted else ()), "score")
    return RagExplanation(label, value, columns, rows, steps)


def _short(text: str | None, limit: int = 60) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def _one(support: AnswerSupport, row: int) -> AnswerSupport:
    """The data of one row, as a one-row AnswerSupport."""
    keep = support.rows == row
    return AnswerSupport(
        support.answered[row:row + 1], support.unplaced[row:row + 1], support.valid[row:row + 1],
        support.vital[row:row + 1],
        support.nugget_levels[row:row + 1], support.n_sentences[row:row + 1],
        np.zeros(int(keep.sum()), np.int64), support.sentences[keep], support.levels[keep],
        nugget_weights=None if support.nugget_weights is None else support.nugget_weights[row:row + 1])


def explain_in_context(ctx: Any, query_id: str, measure: Any) -> RagExplanation:
    """:func:`explain_answer` for one query of an evaluation context (its extras hold the
    answers)."""
    ids = ctx.query_ids
    if query_id not in ids:
        raise UsageError(f"query {quote(query_id)} is not among the evaluated queries (is it judged?).")
    return explain_answer(measure, aligned_answers(ctx), ids.index(query_id))
