"""The report as GitHub-flavoured Markdown, for a pull request's or a CI job's comment.

Every text from data (run, query, annotator and chunk names, query texts) is written as an
inline code span (:func:`code`): inside one, Markdown, HTML and ``@mentions`` are not
interpreted, so a run named ``<script>`` or ``@team`` is shown, never obeyed; a ``|`` is
escaped so that it stays inside its table cell. Numbers have four decimals, as the command line
prints them.

What a Markdown table cannot carry is said where it is missing: the plots (their values come as
tables), sorting, and each number's exact value (the HTML report has them in its ``data-``
attributes).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ragjudge.report.html import run_letter, statistic
from ragjudge.report.text import UNDEFINED, fmt, fmt_order, fmt_p, shown

if TYPE_CHECKING:
    from ragjudge.report.build import Report

_TICKS = re.compile(r"`+")


def code(text: object, *, table: bool = True) -> str:
    """``text`` as an inline code span: control characters visible, ``|`` escaped in a table,
    a fence longer than any run of backticks inside."""
    body = shown(text)
    if not body:
        return ""
    if table:
        body = body.replace("|", "\\|")
    fence = "`" * (max((len(m) for m in _TICKS.findall(body)), default=0) + 1)
    pad = " " if body[0] in "` " or body[-1] in "` " else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def table(header: Sequence[str], rows: Iterable[Sequence[str]], align: Sequence[str] | None = None) -> list[str]:
    """A GitHub table; ``align`` per column: ``l`` or ``r`` (default: first left, others right)."""
    align = align or ["l"] + ["r"] * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if a == "r" else ":---" for a in align) + "|"]
    lines += ["| " + " | ".join(cell or " " for cell in row) + " |" for row in rows]
    return lines + [""]


def _signed(value: float, digits: int = 4) -> str:
    if value is None or math.isnan(value):
        return UNDEFINED
    return f"{value:+.{digits}f}"


def render_markdown(report: Report) -> str:
    """The whole summary as one string."""
    lines: list[str] = []
    for section in (_header, _scorecard, _gold, _comparisons, _settled, _strata, _curves,
                    _per_query, _agreement, _provenance):
        lines += section(report)
    return "\n".join(lines).rstrip("\n") + "\n"


def _header(r: Report) -> list[str]:
    ev = r.evaluation
    lines = [f"# {code(r.project_name, table=False)} — evaluation report", "",
             f"Made {r.made_at:%Y-%m-%d %H:%M:%S} UTC with ragjudge {r.version} for "
             f"{code(r.viewer, table=False)} ({r.role}{', blind project' if r.blind else ''}). "
             f"{len(r.run_names)} run{'s' if len(r.run_names) != 1 else ''} · "
             f"{ev.n_queries():,} queries · gold rule {code(r.gold.rule, table=False)} · relevant "
             f"from grade {ev.threshold}.", "",
             "_The Markdown summary of `ragjudge report`: the HTML report (`--format html`) adds "
             "the plots, sortable per-query tables and each number's exact value._", ""]
    if r.left_out:
        lines += ["> **Left out of this report**", ">"]
        lines += [f"> - {_words(t)}" for t in r.left_out] + [""]
    if r.notes:
        lines += [f"> {_words(t)}" for t in r.notes] + [""]
    return lines


def _words(text: str) -> str:
    """A sentence of ours that may quote names: its names are not code-spanned, so escape the
    characters Markdown or HTML would read."""
    out = shown(text)
    for ch in "\\`*_[]|~":
        out = out.replace(ch, "\\" + ch)
    out = out.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return out.replace("@", "`@`")  # an @ in a code span mentions nobody


def _scorecard(r: Report) -> list[str]:
    from ragjudge.services.scoring.live import MIN_INTERVAL_QUERIES

    names = r.run_names
    letters = {n: run_letter(i) for i, n in enumerate(names)}
    wins = {m: r.comparison.beats(m) for m in r.measures} if r.comparison else {}
    header = ["measure", *(f"{code(n)} ({letters[n]})" for n in names)]
    rows = []
    for m in r.measures:
        values = [r.aggregates[n][m] for n in names]
        finite = [v for v in values if not math.isnan(v)]
        top = max(finite) if len(names) > 1 and finite and max(finite) != min(finite) else None
        cells = [code(m)]
        for n, value in zip(names, values):
            text = fmt(value)
            if top is not None and not math.isnan(value) and math.isclose(value, top, abs_tol=1e-12):
                text = f"**{text}**"
            beaten = wins.get(m, {}).get(n, [])
            if beaten:
                text += "<sup>" + "".join(letters[b] for b in beaten) + "</sup>"
            low, high = r.intervals[n][m]
            if r.interval_queries[n][m] >= MIN_INTERVAL_QUERIES and not math.isnan(low):
                text += f" [{fmt(low)}, {fmt(high)}]"
            spread = r.ranges.values[n].get(m) if r.ranges else None
            if spread:
                text += f" ↕{fmt(spread[0])}–{fmt(spread[1])}"
            cells.append(text)
        rows.append(cells)
    lines = ["## Scorecard", "", f"Mean over {r.evaluation.n_queries():,} queries; "
             f"{_words(r.evaluation.averaging)}.", ""]
    lines += table(header, rows)
    notes = ["**bold**: the best value of the measure" if len(names) > 1 else None,
             "[low, high]: the 95 % bootstrap interval of the mean (2,000 resamples, seed 0: "
             "`ragjudge eval --ci`); none from fewer than 5 queries"]
    if r.ranges:
        notes.append(f"↕ the range over the annotators whose labels cover at least "
                     f"{r.ranges.min_coverage:.0%} of the pool (the evaluation screen's): "
                     + (", ".join(f"{code(a, table=False)} {r.ranges.coverage[a]:.0%}"
                                  for a in r.ranges.in_ranges) or "nobody yet")
                     + ("; too few labels: " + ", ".join(f"{code(a, table=False)} "
                                                         f"{r.ranges.coverage[a]:.0%}"
                                                         for a in r.ranges.too_few)
                        if r.ranges.too_few else ""))
    if r.comparison:
        notes.append("superscript letters: the runs this run is significantly better than "
                     f"({_words(r.comparison.describe())} alpha {r.comparison.alpha:g})")
    for n, counts in r.undefined.items():
        for m, k in counts.items():
            why = r.undefined_why.get(n, {}).get(m, "")
            notes.append(f"{code(n, table=False)}, {code(m, table=False)}: left out of the mean on "
                         f"{k} of {r.evaluation.n_queries(run=n)} queries, where it is undefined"
                         + (f" ({_words(why)})" if why else ""))
    return lines + [f"- {n}" for n in notes if n] + [""]


def _gold(r: Report) -> list[str]:
    g = r.gold
    reference = ", ".join(code(x, table=True) for x in g.reference) or "none"
    if g.reference and g.complete:
        reference += " (complete)"
    rows = [["rule", code(g.rule)], ["reference", reference], ["pairs in the gold", f"{g.pairs:,}"],
            ["from the reference", f"{g.reference_pairs:,}"],
            ["its closed world (unlisted, judged not relevant)", f"{g.implied_pairs:,}"],
            ["from the rule over the other annotators", f"{g.other_pairs:,}"],
            ["adjudicated", f"{g.adjudicated:,}"],
            ["whose labels entered", ", ".join(code(a) for a in g.annotators) or "no one"]]
    if g.llm_left_out:
        rows.append(["LLM annotators left out", ", ".join(code(a) for a in g.llm_left_out)])
    return ["## Gold", ""] + table(["", ""], rows, ["l", "l"])


def _comparisons(r: Report) -> list[str]:
    from ragjudge.report.settled import settled_index

    c = r.comparison
    if c is None:
        return []
    settled = settled_index(r.settled or [])
    rows = []
    for pair in c.pairs:
        verdict = f"{code(pair.winner)} better" if pair.winner else "within noise"
        p_adjusted = fmt_p(pair.p_adjusted)
        if pair.winner:
            p_adjusted = f"**{p_adjusted}**"
        interval = (f"[{_signed(pair.ci_low)}, {_signed(pair.ci_high)}]"
                    if not math.isnan(pair.ci_low) else UNDEFINED)
        row = [code(pair.measure), code(pair.run_a), code(pair.run_b), str(pair.queries),
               _signed(pair.difference), interval, fmt_p(pair.p_value), p_adjusted,
               _signed(pair.effect_size, 2), verdict]
        if r.settled is not None:
            status = settled.get((pair.measure, frozenset((pair.run_a, pair.run_b))))
            row.append(status.status if status else UNDEFINED)
        rows.append(row)
    headers = ["measure", "A", "B", "queries", "B − A", "interval", "p", "p corrected", "effect",
               "verdict"] + (["settled"] if r.settled is not None else [])
    said = [f"Every pair of runs on every measure: {_words(c.describe())} A verdict needs the "
            f"corrected p below alpha = {c.alpha:g}."]
    if r.settled is not None:
        said.append("Settled: whether judging the pool's open pairs could still change the order "
                    f"(certain, probable, open; {UNDEFINED}: no bounds for the measure).")
    return (["## Comparisons", "", " ".join(said), ""]
            + table(headers, rows, ["l", "l", "l", "r", "r", "r", "r", "r", "r", "l", "l"][:len(headers)]))


def _settled(r: Report) -> list[str]:
    if r.settled is None:
        return []
    rows = [[code(s.measure), code(s.a), code(s.b), _signed(s.difference),
             _signed(s.low) + ("" if s.exact else " (≤)"), _signed(s.high), fmt_order(s.p_order, s.status),
             s.status, str(s.judge_more)] for s in r.settled]
    return (["## How settled each comparison is", "",
             "While the pool is being judged: A − B now, the lowest and highest it can still "
             "reach whatever the open pairs' grades, and the chance its sign holds."
             + (f" {_words(r.settled_note)}" if r.settled_note else ""), ""]
            + table(["measure", "A", "B", "A − B", "lowest", "highest", "P(order holds)",
                     "status", "pairs to judge"], rows,
                    ["l", "l", "l", "r", "r", "r", "r", "l", "r"]))


def _strata(r: Report) -> list[str]:
    if not r.strata:
        return []
    lines = [f"## Strata by {code(r.strata_field, table=False)}", ""]
    for s in r.strata:
        lines += [f"**{code(r.strata_field, table=False)} = {code(s.name, table=False)}** "
                  f"({s.queries:,} quer{'y' if s.queries == 1 else 'ies'})", ""]
        rows = [[code(m), *(fmt(s.means[n][m]) for n in r.run_names)] for m in r.measures]
        lines += table(["measure", *(code(n) for n in r.run_names)], rows)
    return lines


def _curves(r: Report) -> list[str]:
    if not r.curves:
        return []
    lines = ["## Curves", "", "_Markdown cannot carry the plots; their values follow (the HTML "
             "report draws them)._", ""]
    for c in r.curves:
        if c.measure == "PR":
            lines += ["**Interpolated precision at recall levels**", ""]
            rows = [[f"{x:.1f}", *(fmt(c.y[n][j]) for n in c.y)] for j, x in enumerate(c.x)]
            rows.append(["area (AUC_PR)", *(fmt(c.area[n]) for n in c.y)])
            lines += table(["recall", *(code(n) for n in c.y)], rows)
        else:
            lines += [f"**{code(c.measure, table=False)}@K**", ""]
            rows = [[f"{x:g}", *(fmt(c.y[n][j]) for n in c.y)] for j, x in enumerate(c.x)]
            lines += table(["K", *(code(n) for n in c.y)], rows)
    return lines


def _per_query(r: Report) -> list[str]:
    pq = r.per_query
    if pq is None:
        return []
    lines = ["## Per query", "", "_In natural order of the query ids; a Markdown table cannot be "
             "sorted (the HTML report's can)._", ""]
    if pq.layout in ("measure", "both"):
        for m in r.measures:
            lines += [f"**{code(m, table=False)} per query**", ""]
            rows = [[code(q.id), code(q.text), *(_value(pq.values[n].get(q.id, {}).get(m))
                                                  for n in r.run_names)] for q in pq.queries]
            lines += table(["query", "text", *(code(n) for n in r.run_names)], rows,
                           ["l", "l", *("r" * len(r.run_names))])
    if pq.layout in ("run", "both"):
        for n in r.run_names:
            lines += [f"**run {code(n, table=False)}: every measure per query**", ""]
            rows = [[code(q.id), *(_value(pq.values[n].get(q.id, {}).get(m)) for m in r.measures)]
                    for q in pq.queries]
            lines += table(["query", *(code(m) for m in r.measures)], rows)
    return lines


def _value(value: float | None) -> str:
    return "not evaluated" if value is None else fmt(value)


def _agreement(r: Report) -> list[str]:
    from ragjudge.services.agreement.views import degenerate_pairs, summary_statistics

    view = r.agreement
    if view is None:
        return []
    a = view.report
    lines = ["## Agreement between annotators", "",
             f"{a.units:,} pairs judged, {a.pairable_units:,} by two or more annotators; scale "
             f"{a.scale[0]}–{a.scale[1]} (`ragjudge agree`).", ""]
    rows = []
    for label, stat in summary_statistics(a):
        value, reason = statistic(stat)
        rows.append([label, fmt(value, 3) if value is not None else f"undefined: {_words(reason)}"])
    lines += table(["statistic", "value"], rows, ["l", "l"])
    if a.pairwise:
        degenerate = {(x, y) for x, y, _ in degenerate_pairs(view.ratings)}
        rows = []
        for p in a.pairwise:
            bad = (str(p.a), str(p.b)) in degenerate
            kappas = (["degenerate"] * 3 if bad else
                      [_stat(p.cohen_kappa), _stat(p.cohen_kappa_linear), _stat(p.cohen_kappa_quadratic)])
            rows.append([code(p.a), code(p.b), str(p.n), _stat(p.percent_agreement),
                         _stat(p.percent_agreement_within_1), *kappas])
        lines += ["**Pairs of annotators** (Cohen's κ over the pairs both judged)", ""]
        lines += table(["a", "b", "n", "agree", "within ±1", "κ", "κ linear", "κ quadratic"], rows,
                       ["l", "l", "r", "r", "r", "r", "r", "r"])
        grades = [str(g) for g in range(a.scale[0], a.scale[1] + 1)]
        for p in a.pairwise:
            if p.n:
                lines += [f"{code(p.a, table=False)} (rows) × {code(p.b, table=False)} (columns)", ""]
                lines += table(["", *grades], [[g, *(str(int(v)) for v in row)]
                                                for g, row in zip(grades, p.confusion)])
    for w in view.warnings:
        lines += [f"- κ is degenerate for {_words(w)}."]
    if r.disputes:
        lines += ["", f"**Disputed pairs**: {len(r.disputes)} of {r.disputes_total:,}, the largest "
                  "spread first", ""]
        rows = [[code(d["query_id"]), code(d["chunk_id"]), str(d["spread"]), str(d["n_ratings"]),
                 ", ".join(f"{code(k)}={g}" for k, g in d["grades"].items()),
                 "–" if d["adjudicated"] is None else str(d["adjudicated"])] for d in r.disputes]
        lines += table(["query", "chunk", "spread", "ratings", "grades", "adjudicated"], rows,
                       ["l", "l", "r", "r", "l", "r"])
    return lines + [""]


def _stat(stat: object) -> str:
    value, _ = statistic(stat)
    return UNDEFINED if value is None else fmt(value, 3)


def _provenance(r: Report) -> list[str]:
    from ragjudge.services.scoring.provenance import LABEL_FORM, RUN_FORM

    snap = r.labels
    newest = "; ".join(f"{t} {'none' if n is None else n} ({snap.events.get(t, 0):,} events)"
                       for t, n in snap.newest.items())
    rows = [["project", code(r.project_name)], ["database", code(r.shown_db)],
            ["made", f"{r.made_at:%Y-%m-%d %H:%M:%S} UTC"], ["ragjudge", r.version],
            ["command", code(r.command) or "–"], ["made for", f"{code(r.viewer)} ({r.role})"],
            ["label snapshot", f"`{snap.sha256}`"], ["label events", newest]]
    rows += [[f"run {code(n)}", f"`{d}`"] for n, d in r.run_digests.items()]
    return (["## Provenance", ""] + table(["", ""], rows, ["l", "l"])
            + [f"- Runs: {_words(RUN_FORM)}", f"- Labels: {_words(LABEL_FORM)}", ""])


__all__ = ["code", "render_markdown", "table"]
