"""Step-by-step computation of one measure on one query, laid out as a worked example in a textbook.

The final value always comes from the measure's own kernel (so an explanation can never disagree
with ``evaluate``); the steps re-derive it rank by rank for a reader: rank, chunk, grade,
relevant?, P@k at each hit, the term each rank adds, the running sum, and for DCG-family
measures the ideal ranking.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ragjudge.errors import UsageError
from ragjudge.metrics.data import Qrels, Run
from ragjudge.metrics.evaluate import evaluate
from ragjudge.metrics.explanation import HIDDEN_VALUE
from ragjudge.metrics.registry import Measure, parse_measure
from ragjudge.safetext import quote

_AP_LIKE = {"AP", "ContextPrecisionAP", "ContextPrecision"}
_DCG_LIKE = {"DCG", "nDCG", "nDCG_exp"}
_ERR_LIKE = {"ERR", "ERR_linear"}


HIDDEN = "not shown: you have not judged this pair"
"""What a blind reader sees in place of the grade of a pair they have not judged."""


@dataclass
class ExplainStep:
    """One rank of the query's ranking. A step hidden from a blind reader (:meth:`Explanation.blind`)
    has no chunk id, grade, relevance, score or running numbers."""

    rank: int
    chunk_id: str | None
    score: float | None
    grade: int | None  # None: unjudged (or a negative grade), or hidden
    relevant: bool | None
    hits: int | None  # relevant chunks in ranks 1..rank
    precision: float | None  # P@rank
    term: float | None = None  # what this rank adds to the sum (None: nothing)
    running: float | None = None  # the sum so far
    hidden: bool = False


@dataclass
class Explanation:
    """The computation of ``measure`` for ``query_id``: steps, totals and the final value."""

    query_id: str
    measure: str
    value: float
    formula: str
    steps: list[ExplainStep]
    numerator: float | None = None
    denominator: float | None = None
    denominator_label: str = ""
    ideal: list[tuple[int, int, float]] = field(default_factory=list)  # (rank, grade, term)
    ideal_total: float | None = None
    notes: list[str] = field(default_factory=list)
    cutoff: int | None = None
    working: list[str] = field(default_factory=list)
    """lines of working per rank (bpref's counts), left out for a blind reader"""
    facts: list[str] = field(default_factory=list)
    """notes made of the query's grades (R and N, the first relevant rank, RBP's residual),
    shown after :attr:`notes` and left out for a blind reader; :attr:`notes` say what the
    measure does"""
    blinded: bool = False
    """Made for a blind reader (:meth:`blind`): hidden steps, no ideal ranking, no totals."""
    value_hidden: bool = False
    """The value is not shown either (:meth:`blind`, ``value_shown=False``); :attr:`value` is NaN."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def blind(self, visible: Callable[[str], bool], *, value_shown: bool) -> Explanation:
        """This explanation as a blind reader may see it: a step whose chunk ``visible`` refuses
        keeps only its rank (no chunk id, score, grade or relevance), and what would let the
        hidden grades be worked out -- P@k, each rank's term, the running sum, the ideal
        ranking (every judged grade of the query), the numerator and denominator, the
        :attr:`facts` -- is left out. So is the value unless ``value_shown`` (the reader has
        judged every pair of the query's gold: a query's value is made of those grades, and
        P@1 is one of them)."""
        steps = [s if visible(s.chunk_id or "") else
                 ExplainStep(s.rank, None, None, None, None, None, None, hidden=True)
                 for s in self.steps]
        steps = [ExplainStep(s.rank, s.chunk_id, s.score, s.grade, s.relevant, None, None,
                             hidden=s.hidden) for s in steps]
        return Explanation(self.query_id, self.measure, self.value if value_shown else math.nan,
                           self.formula, steps,
                           notes=[*self.notes, "blind: the grades of pairs you have not judged "
                                  "are not shown, nor the sums they would give away"],
                           cutoff=self.cutoff, blinded=True, value_hidden=not value_shown)

    def render(self, max_rows: int = 30) -> str:
        """Plain text, as the seeds print their worked examples (for a blind reader, as
        :meth:`blind` made it)."""
        lines = [f"{self.measure} for query {self.query_id}", f"  {self.formula}"]
        lines += [f"  {n}" for n in (*self.notes, *self.facts)]
        lines.append("")
        header = f"{'rank':>5}  {'chunk':<20} {'grade':>5}  {'rel':<3}  {'P@k':>6}  {'term':>7}  {'sum':>7}"
        lines.append(header)
        shown = _rows_to_show(self.steps, self.cutoff, max_rows)
        last = 0
        for step in self.steps:
            if step.rank not in shown:
                continue
            if step.rank != last + 1:
                lines.append(f"{'...':>5}")
            last = step.rank
            if step.hidden or step.chunk_id is None:
                lines.append(f"{step.rank:>5}  {HIDDEN}")
                continue
            grade = "-" if step.grade is None else str(step.grade)
            term = "" if step.term is None else f"{step.term:.4f}"
            run = "" if step.running is None else f"{step.running:.4f}"
            prec = f"{step.precision:.3f}" if step.relevant and step.precision is not None else ""
            chunk = step.chunk_id if len(step.chunk_id) <= 20 else step.chunk_id[:19] + "…"
            rel = "yes" if step.relevant else "no"
            lines.append(f"{step.rank:>5}  {chunk:<20} {grade:>5}  {rel:<3}"
                         f"  {prec:>6}  {term:>7}  {run:>7}")
        if self.steps and last != self.steps[-1].rank:
            lines.append(f"{'...':>5}")
        if not self.steps:
            lines.append("  (the run ranks no chunk for this query)")
        if self.blinded:
            lines.append("")
            lines.append("Ideal ranking: not shown (it lists the grades of every judged pair of "
                         "the query).")
        elif self.ideal:
            lines.append("")
            lines.append("Ideal ranking (every judged grade of the query, best first):")
            for rank, ideal_grade, ideal_term in self.ideal[:max_rows]:
                lines.append(f"{rank:>5}  grade {ideal_grade:>3}  {ideal_term:.4f}")
            if self.ideal_total is not None:
                lines.append(f"  ideal total = {self.ideal_total:.4f}")
        if self.working:
            lines.append("")
            lines += [f"  {w}" for w in self.working]
        lines.append("")
        if self.value_hidden:
            lines.append(f"{self.measure} = {HIDDEN_VALUE}")
        elif self.numerator is not None and self.denominator is not None:
            lines.append(f"{self.measure} = {self.numerator:.4f} / {self.denominator:.4f}"
                         f"{' (' + self.denominator_label + ')' if self.denominator_label else ''}"
                         f" = {self.value:.4f}")
        else:
            lines.append(f"{self.measure} = {self.value:.4f}")
        return "\n".join(lines)


def _rows_to_show(steps: list[ExplainStep], cutoff: int | None, max_rows: int) -> set[int]:
    limit = cutoff if cutoff is not None else max_rows
    show = {s.rank for s in steps if s.rank <= min(limit, max_rows)}
    show |= {s.rank for s in steps if s.relevant and (cutoff is None or s.rank <= cutoff)}
    return show


def _explain_rbp(explanation: Explanation, m: Measure, top: list[ExplainStep], ranked: int,
                 top_grade: int) -> None:
    """RBP: each rank adds (1 - p) p^(rank-1) times its gain; RBP_residual: each unjudged rank
    adds its weight, and the tail past the ranking p^d."""
    p = float(m.get("p", 0.8))
    residual = m.definition.name == "RBP_residual"
    graded = bool(m.get("graded"))
    scale = float(m.get("max_grade", top_grade) or 0)
    total = 0.0
    for s in top:
        weight = (1.0 - p) * p ** (s.rank - 1)
        if residual:
            gain = 1.0 if s.grade is None else 0.0
        elif graded:
            gain = (s.grade or 0) / scale if scale > 0 else 0.0
        else:
            gain = 1.0 if s.relevant else 0.0
        s.term = weight * gain if gain else None
        total += weight * gain
        s.running = total
    depth = len(top) if m.cutoff is None else min(int(m.cutoff), ranked)
    explanation.notes.append(f"p = {p:g}; rank i weighs (1 - p) p^(i-1)")
    if residual:
        explanation.notes.append(f"term = the weight of an unjudged rank; then the tail past "
                                 f"rank {depth}: p^{depth} = {p ** depth:.4f}")
        explanation.facts.append(f"residual = {total:.4f} (unjudged ranks) + {p ** depth:.4f} "
                                 f"(tail) = {total + p ** depth:.4f}")
        total += p ** depth
    elif graded:
        explanation.notes.append(f"gain = grade / {scale:g}")
    if not np.isclose(total, explanation.value, atol=1e-9):  # pragma: no cover - a bug
        explanation.facts.append(f"(kernel value {explanation.value:.6f} differs from the "
                                 f"steps' {total:.6f})")


def _explain_bpref(explanation: Explanation, steps: list[ExplainStep], n_rel: int,
                   n_nonrel: int) -> None:
    """bpref as trec_eval computes it: each relevant retrieved chunk adds
    ``1 - min(n, R) / min(R, N)`` (1 when n = 0), n the judged non-relevant chunks ranked above
    it; unjudged chunks are skipped; the sum over R."""
    above, total = 0, 0.0
    explanation.notes.append("a relevant chunk adds 1 - min(n, R) / min(R, N), n = the judged "
                             "non-relevant chunks ranked above it (1 when n = 0); unjudged chunks "
                             "are skipped")
    explanation.facts.append(f"N = {n_nonrel} judged non-relevant chunk(s) in the qrels")
    for s in steps:
        if s.relevant:
            s.term = 1.0 - min(above, n_rel) / min(n_rel, n_nonrel) if above else 1.0
            total += s.term
            explanation.working.append(f"rank {s.rank}: n = {above}, term " + (
                f"1 - min({above}, {n_rel}) / min({n_rel}, {n_nonrel}) = {s.term:.4f}" if above
                else "1"))
        elif s.grade is not None:
            above += 1
        s.running = total
    explanation.numerator, explanation.denominator = total, float(n_rel)
    explanation.denominator_label = "R"


def explain(
    qrels: Qrels,
    run: Run,
    query_id: str,
    measure: str | Measure,
    *,
    threshold: int = 1,
    extras: Mapping[str, Any] | None = None,
) -> Explanation:
    """Explain ``measure`` on one query (``UsageError`` if the query is not in the qrels)."""
    m = parse_measure(measure)
    grades = qrels.for_query(query_id)
    if not grades and query_id not in set(qrels.query_ids):
        raise UsageError(f"query {quote(query_id)} has no judgments in the qrels, so no measure "
                         "is defined for it.")
    result = evaluate(qrels, run, [m], threshold=threshold, queries=[query_id], extras=extras)
    value = float(result.values[0, 0])
    name = m.definition.name
    level = threshold if m.rel is None else m.rel
    k = m.cutoff if m.definition.cutoff_kind is int else None
    steps: list[ExplainStep] = []
    hits = 0
    for rank, (chunk, score) in enumerate(run.ranking(query_id), start=1):
        g = grades.get(chunk)
        if g is not None and g < 0:
            g = None
        rel = g is not None and g >= level
        hits += rel
        steps.append(ExplainStep(rank, chunk, score, g, rel, hits, hits / rank))
    n_rel = sum(1 for g in grades.values() if g >= level)
    label = str(m)
    formula = (m.definition.doc.splitlines() or [""])[0].replace("``", "")
    explanation = Explanation(query_id, label, value, formula,
                              steps, cutoff=k)
    explanation.notes.append(f"relevant = grade >= {level}; {len(steps)} chunk(s) ranked")
    explanation.facts.append(f"R = {n_rel} relevant chunk(s) in the qrels")
    top = [s for s in steps if k is None or s.rank <= k]
    if name in _AP_LIKE:
        total = 0.0
        for s in top:
            if s.relevant and s.precision is not None:
                s.term = s.precision
                total += s.precision
            s.running = total
        found = sum(bool(s.relevant) for s in top)
        explanation.numerator = total
        if name == "ContextPrecision":
            explanation.denominator, explanation.denominator_label = found, "relevant found in top k"
        else:
            explanation.denominator, explanation.denominator_label = n_rel, "R"
    elif name in _DCG_LIKE:
        exp = name == "nDCG_exp"
        gain = (lambda g: 2.0 ** g - 1.0) if exp else (lambda g: float(g))
        total = 0.0
        for s in top:
            g = 0 if s.grade is None else s.grade
            s.term = gain(g) / math.log2(s.rank + 1) if g > 0 else 0.0
            total += s.term
            s.running = total
        if name != "DCG":
            explanation.numerator = total
            ideal = sorted((g for g in grades.values() if g >= 0), reverse=True)
            if k is not None:
                ideal = ideal[:k]
            itotal = 0.0
            for rank, g in enumerate(ideal, start=1):
                term = gain(g) / math.log2(rank + 1) if g > 0 else 0.0
                itotal += term
                explanation.ideal.append((rank, g, term))
            explanation.ideal_total = itotal
            explanation.denominator, explanation.denominator_label = itotal, "ideal DCG"
        explanation.notes.append("gain = 2^grade - 1" if exp else
                                 "gain = grade (the relevance threshold does not apply)")
    elif name in _ERR_LIKE:
        top_grade = m.get("max_grade", qrels.max_grade)
        reach, total = 1.0, 0.0
        for s in top:
            g = 0 if s.grade is None else s.grade
            if name == "ERR":
                p = (2.0 ** g - 1.0) / 2.0 ** top_grade
            else:
                p = min(g / top_grade, 1.0) if top_grade > 0 else 0.0
            s.term = reach * p / s.rank
            total += s.term
            s.running = total
            reach *= 1.0 - p
        explanation.notes.append(f"max grade = {top_grade}")
    elif name == "bpref":
        n_nonrel = sum(1 for g in grades.values() if 0 <= g < level)
        _explain_bpref(explanation, steps, n_rel, n_nonrel)
    elif name in {"RBP", "RBP_residual"}:
        _explain_rbp(explanation, m, top, len(steps), qrels.max_grade)
    elif name == "RR":
        first = next((s for s in top if s.relevant), None)
        if first is not None:
            first.term = first.running = 1.0 / first.rank
            explanation.facts.append(f"first relevant chunk at rank {first.rank}")
    elif name in {"P", "R", "Success", "Rprec", "F1", "F", "Judged"}:
        cut = n_rel if name == "Rprec" else k
        count = 0
        for s in steps:
            if cut is not None and s.rank > cut:
                break
            if (s.grade is not None) if name == "Judged" else s.relevant:
                count += 1
                s.term = 1.0
            s.running = float(count)
        explanation.cutoff = cut
        if name == "P":
            assert k is not None  # the measure requires a cutoff
            explanation.numerator, explanation.denominator = count, float(k)
            explanation.denominator_label = "k"
        elif name == "Judged":
            assert k is not None  # the measure requires a cutoff
            explanation.numerator = count
            explanation.denominator = float(min(k, len(steps)))
            explanation.denominator_label = "chunks in the top k"
        elif name == "R":
            explanation.numerator, explanation.denominator = count, float(n_rel)
            explanation.denominator_label = "R"
        elif name == "Rprec":
            explanation.numerator, explanation.denominator = count, float(n_rel)
            explanation.denominator_label = "R (and the cutoff)"
    if explanation.numerator is not None and explanation.denominator is not None:
        check = explanation.numerator / explanation.denominator if explanation.denominator else 0.0
        if not np.isclose(check, value, atol=1e-9):  # pragma: no cover - a bug, not an input
            explanation.facts.append(f"(kernel value {value:.6f} differs from the steps' {check:.6f})")
    return explanation
