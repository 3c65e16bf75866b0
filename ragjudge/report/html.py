"""The report as one self-contained HTML page.

Rendered with Jinja2 under autoescaping: every text from data goes into the template as a plain
string, made visible first (:func:`ragjudge.report.text.shown`) and escaped by Jinja; the only
markup that is not escaped is the SVG of the plots, which :mod:`ragjudge.report.svg` writes and
escapes itself. The page fetches nothing: its CSS and its one script (sorting the tables) are
inline, and a Content-Security-Policy allows exactly those two (by their SHA-256) and nothing
else — no image, font, frame, connection or other script, whatever a text might try.

Every number shown carries its exact value in a ``data-`` attribute (``repr`` of the float), so
a reader (or a test) can check it against ``ragjudge eval --format json``.
"""

from __future__ import annotations

import base64
import hashlib
import math
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from ragjudge.report.text import UNDEFINED, exact, fmt, fmt_order, fmt_p, shown

if TYPE_CHECKING:
    from ragjudge.report.build import CurveData, Report

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _asset(name: str) -> str:
    return resources.files("ragjudge.report").joinpath("templates", name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def run_letter(i: int) -> str:
    """a, b, ..., z, aa, ab, ...: the short names of the runs in the significance marks."""
    out = ""
    i += 1
    while i:
        i, rest = divmod(i - 1, len(LETTERS))
        out = LETTERS[rest] + out
    return out


# -- the view --------------------------------------------------------------------------------


@dataclass
class Cell:
    text: str
    value: str = ""
    """the exact value (``repr``), '' when undefined"""
    best: bool = False
    ci: str = ""
    low: str = ""
    high: str = ""
    range: str = ""
    range_title: str = ""
    range_low: str = ""
    range_high: str = ""
    beats: str = ""
    beats_title: str = ""
    title: str = ""


@dataclass
class Row:
    name: str
    cells: list[Cell]
    letter: str = ""
    order: int = 0


def _best(values: list[float]) -> set[int]:
    """The rows holding a column's highest value (none when all are equal), as ``eval``'s tables."""
    finite = [v for v in values if v is not None and not math.isnan(v)]
    if len(values) < 2 or not finite or max(finite) == min(finite):
        return set()
    top = max(finite)
    return {i for i, v in enumerate(values) if v is not None and not math.isnan(v)
            and math.isclose(v, top, rel_tol=0, abs_tol=1e-12)}


def scorecard(report: Report) -> list[Row]:
    from ragjudge.services.scoring.live import MIN_INTERVAL_QUERIES

    names, measures = report.run_names, report.measures
    letters = {n: run_letter(i) for i, n in enumerate(names)}
    best = {m: _best([report.aggregates[n][m] for n in names]) for m in measures}
    wins = {m: report.comparison.beats(m) for m in measures} if report.comparison else {}
    rows = []
    for i, name in enumerate(names):
        cells = []
        for m in measures:
            value = report.aggregates[name][m]
            cell = Cell(fmt(value), exact(value), i in best[m])
            low, high = report.intervals[name][m]
            if report.interval_queries[name][m] < MIN_INTERVAL_QUERIES:
                cell.ci = "too few queries"
            elif not math.isnan(low):
                cell.ci, cell.low, cell.high = f"[{fmt(low)}, {fmt(high)}]", exact(low), exact(high)
            ranges = report.ranges
            spread = ranges.values[name].get(m) if ranges else None
            if ranges and spread:
                lo_name, hi_name = ranges.ends[name][m]
                cell.range = f"↕ {fmt(spread[0])}–{fmt(spread[1])}"
                cell.range_low, cell.range_high = exact(spread[0]), exact(spread[1])
                cell.range_title = f"lowest: {shown(lo_name)}, highest: {shown(hi_name)}"
            beaten = wins.get(m, {}).get(name, [])
            if beaten:
                cell.beats = "".join(letters[b] for b in beaten)
                cell.beats_title = "significantly better than " + ", ".join(shown(b) for b in beaten)
            cells.append(cell)
        rows.append(Row(shown(name), cells, letters[name], i))
    return rows


def _curve_view(curve: CurveData, index: int) -> dict[str, Any]:
    from ragjudge.report import svg

    names = list(curve.y)
    if curve.measure == "PR":
        title = "Interpolated precision at recall levels"
        x_axis = svg.unit_axis("recall")
        y_axis = svg.value_axis("interpolated precision", [v for ys in curve.y.values() for v in ys])
        desc = (f"Lines of the interpolated precision, averaged over {curve.queries:,} queries, at "
                f"the 11 recall levels 0 to 1, one per run: {', '.join(shown(n) for n in names)}. "
                "The values are in the table that follows.")
    else:
        title = f"{curve.measure}@K for K from {curve.x[0]:g} to {curve.x[-1]:g}"
        x_axis = svg.cutoff_axis("K", curve.x)
        y_axis = svg.value_axis(f"{curve.measure}@K", [v for ys in curve.y.values() for v in ys])
        desc = (f"Lines of the mean {curve.measure}@K over {curve.queries:,} queries against the "
                f"cutoff K, one per run: {', '.join(shown(n) for n in names)}. The values are in "
                "the table that follows.")
    plot = svg.line_plot(f"plot-{index}", title=title, desc=desc, x=x_axis, y=y_axis,
                         xs=curve.x, series={shown(n): v for n, v in curve.y.items()})
    rows = []
    for j, x in enumerate(curve.x):
        label = f"{x:.1f}" if curve.measure == "PR" else f"{x:g}"
        rows.append({"x": label, "x_exact": exact(x),
                     "cells": [Cell(fmt(curve.y[n][j]), exact(curve.y[n][j])) for n in names]})
    area = [Cell(fmt(curve.area[n]), exact(curve.area[n])) for n in names] if curve.area else []
    return {"id": f"plot-{index}", "measure": curve.measure, "title": title, "svg": plot,
            "runs": [shown(n) for n in names], "run_keys": names, "x_label": curve.x_label,
            "rows": rows, "area": area, "queries": curve.queries, "averaging": curve.averaging}


def _text_ranks(texts: list[str]) -> list[int]:
    order = sorted(range(len(texts)), key=lambda i: (texts[i].casefold(), texts[i]))
    ranks = [0] * len(texts)
    for rank, i in enumerate(order):
        ranks[i] = rank
    return ranks


def per_query_tables(report: Report) -> list[dict[str, Any]]:
    """One table per measure (queries x runs) and/or per run (queries x measures)."""
    pq = report.per_query
    if pq is None:
        return []
    queries = pq.queries
    text_rank = _text_ranks([q.text for q in queries])
    category_rank = _text_ranks([q.category or "" for q in queries])
    heads = [{"query": shown(q.id), "query_key": q.id, "order": q.order,
              "text": shown(q.text, multiline=False), "text_sort": text_rank[i],
              "category": shown(q.category or ""), "category_sort": category_rank[i]}
             for i, q in enumerate(queries)]
    tables = []
    if pq.layout in ("measure", "both"):
        for m in report.measures:
            columns = [{"label": shown(n), "run": n, "measure": m} for n in report.run_names]
            rows = [[_value_cell(pq.values[n].get(q.id, {}).get(m)) for n in report.run_names]
                    for q in queries]
            tables.append({"kind": "measure", "title": f"{shown(m)} per query", "id_key": m,
                           "columns": columns, "rows": list(zip(heads, rows))})
    if pq.layout in ("run", "both"):
        for n in report.run_names:
            columns = [{"label": shown(m), "run": n, "measure": m} for m in report.measures]
            rows = [[_value_cell(pq.values[n].get(q.id, {}).get(m)) for m in report.measures]
                    for q in queries]
            tables.append({"kind": "run", "title": f"run {shown(n)}: every measure per query",
                           "id_key": n, "columns": columns, "rows": list(zip(heads, rows))})
    return tables


def _value_cell(value: float | None) -> Cell:
    if value is None:
        return Cell("not evaluated")
    return Cell(fmt(value), exact(value), title="undefined on this query" if math.isnan(value) else "")


def comparison_view(report: Report) -> dict[str, Any] | None:
    from ragjudge.report.settled import settled_index, status_words

    comparison = report.comparison
    if comparison is None:
        return None
    names = report.run_names
    settled = settled_index(report.settled or [])
    measures = []
    for m in report.measures:
        pairs = []
        for pair in comparison.for_measure(m):
            significant = pair.winner is not None
            status = settled.get((m, frozenset((pair.run_a, pair.run_b))))
            pairs.append({
                "a": shown(pair.run_a), "b": shown(pair.run_b), "a_key": pair.run_a,
                "b_key": pair.run_b, "queries": pair.queries,
                "mean_a": Cell(fmt(pair.mean_a), exact(pair.mean_a)),
                "mean_b": Cell(fmt(pair.mean_b), exact(pair.mean_b)),
                "difference": Cell(_signed(pair.difference), exact(pair.difference)),
                "ci": (f"[{_signed(pair.ci_low)}, {_signed(pair.ci_high)}]"
                       if not math.isnan(pair.ci_low) else UNDEFINED),
                "p": Cell(fmt_p(pair.p_value), exact(pair.p_value)),
                "p_adjusted": Cell(fmt_p(pair.p_adjusted), exact(pair.p_adjusted), significant),
                "effect": Cell(_signed(pair.effect_size, 2), exact(pair.effect_size)),
                "verdict": pair.verdict, "winner": shown(pair.winner) if pair.winner else "",
                "undefined": "; ".join(f"{k}: {v}" for k, v in pair.undefined.items()),
                "settled": status.status if status else UNDEFINED,
                "settled_words": (status_words(status.status) if status
                                  else "not settled: no bounds are worked out for this measure"),
            })
        matrix = comparison.matrix(m, "p_adjusted")
        grid = [[Cell(UNDEFINED if i == j else fmt_p(matrix[i, j]),
                      "" if i == j else exact(matrix[i, j]),
                      i != j and not math.isnan(matrix[i, j]) and matrix[i, j] < comparison.alpha)
                 for j in range(len(names))] for i in range(len(names))]
        measures.append({"measure": shown(m), "key": m, "pairs": pairs, "matrix": grid})
    return {"description": comparison.describe(), "alpha": comparison.alpha,
            "settled": report.settled is not None,
            "measures": measures, "runs": [shown(n) for n in names],
            "letters": [run_letter(i) for i in range(len(names))]}


def _signed(value: float, digits: int = 4) -> str:
    if value is None or math.isnan(value):
        return UNDEFINED
    if math.isinf(value):
        return "+∞" if value > 0 else "−∞"
    return f"{value:+.{digits}f}"


def statistic(stat: object) -> tuple[float | None, str]:
    """The value of an agreement :class:`~ragjudge.metrics.agreement.Statistic` (None:
    undefined) and why it is undefined."""
    return getattr(stat, "value", None), getattr(stat, "reason", None) or ""


def agreement_view(report: Report) -> dict[str, Any] | None:
    from ragjudge.services.agreement.views import degenerate_pairs, summary_statistics

    view = report.agreement
    if view is None:
        return None
    r = view.report
    grades = list(range(r.scale[0], r.scale[1] + 1))
    degenerate = {(a, b) for a, b, _ in degenerate_pairs(view.ratings)}
    summary = []
    for label, stat in summary_statistics(r):
        value, reason = statistic(stat)
        summary.append({"label": label, "value": Cell(fmt(value, 3) if value is not None
                                                      else "undefined", exact(value)),
                        "reason": reason})
    pairs = []
    for p in r.pairwise:
        bad = (str(p.a), str(p.b)) in degenerate
        stats = [p.percent_agreement, p.percent_agreement_within_1, p.cohen_kappa,
                 p.cohen_kappa_linear, p.cohen_kappa_quadratic]
        cells = [Cell(fmt(s.value, 3) if s.value is not None else UNDEFINED, exact(s.value),
                      title=s.reason or "") for s in stats]
        pairs.append({"a": shown(p.a), "b": shown(p.b), "a_key": str(p.a), "b_key": str(p.b),
                      "n": p.n, "cells": cells, "degenerate": bad,
                      "confusion": p.confusion.astype(int).tolist()})
    binarised = [{"threshold": t.threshold,
                  "cells": [Cell(fmt(s.value, 3) if s.value is not None else UNDEFINED, exact(s.value),
                                 title=s.reason or "")
                            for s in (t.percent_agreement, t.krippendorff_alpha, t.fleiss_kappa,
                                      t.gwet_ac1)]}
                 for t in r.binarised]
    reference = None
    if view.reference is not None:
        ref = view.reference
        reference = {"name": shown(ref["name"]), "complete": ref["complete"], "rows": [
            {"name": shown(row["name"]), "n": row["n"],
             "accuracy": Cell(fmt(row["accuracy"], 3), exact(row["accuracy"])),
             "kappa": Cell(fmt(row["kappa"], 3) if row["kappa"] is not None else UNDEFINED,
                           exact(row["kappa"]), title=row.get("undefined", {}).get("kappa", "")),
             "confusion": row["confusion"]} for row in ref["annotators"]]}
    return {"units": r.units, "pairable": r.pairable_units, "scale": r.scale, "grades": grades,
            "annotators": [shown(a) for a in r.annotators], "summary": summary, "pairs": pairs,
            "binarised": binarised, "reference": reference,
            "warnings": [shown(w) for w in view.warnings], "disputed": r.disputed and len(r.disputed)}


def disputes_view(report: Report) -> list[dict[str, Any]]:
    return [{"query": shown(d["query_id"]), "chunk": shown(d["chunk_id"]), "spread": d["spread"],
             "n": d["n_ratings"],
             "grades": ", ".join(f"{shown(a)}={g}" for a, g in d["grades"].items()),
             "adjudicated": "" if d["adjudicated"] is None else str(d["adjudicated"])}
            for d in report.disputes or []]


def strata_view(report: Report) -> list[dict[str, Any]]:
    out = []
    for stratum in report.strata:
        best = {m: _best([stratum.means[n][m] for n in report.run_names]) for m in report.measures}
        rows = [Row(shown(n), [Cell(fmt(stratum.means[n][m]), exact(stratum.means[n][m]),
                                    i in best[m]) for m in report.measures], order=i)
                for i, n in enumerate(report.run_names)]
        out.append({"name": shown(stratum.name), "key": stratum.name, "queries": stratum.queries,
                    "rows": rows, "run_keys": report.run_names})
    return out


def settled_view(report: Report) -> list[dict[str, Any]] | None:
    from ragjudge.report.settled import status_words

    if report.settled is None:
        return None
    return [{"measure": shown(s.measure), "a": shown(s.a), "b": shown(s.b),
             "difference": Cell(_signed(s.difference), exact(s.difference)),
             "low": Cell(_signed(s.low), exact(s.low)), "high": Cell(_signed(s.high), exact(s.high)),
             "p_order": Cell(fmt_order(s.p_order, s.status), exact(s.p_order)), "status": s.status,
             "status_words": status_words(s.status), "judge_more": s.judge_more,
             "exact": s.exact, "queries": s.n_queries} for s in report.settled]


# -- the page --------------------------------------------------------------------------------


def render_html(report: Report) -> str:
    """The whole page as one string."""
    import jinja2
    from markupsafe import Markup

    from ragjudge.services.scoring.provenance import LABEL_FORM, RUN_FORM

    css, script = _asset("report.css"), _asset("sort.js")
    policy = (f"default-src 'none'; style-src 'sha256-{_sha256(css)}'; "
              f"script-src 'sha256-{_sha256(script)}'; img-src 'none'; base-uri 'none'; "
              "form-action 'none'")
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("ragjudge.report", "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True)
    environment.filters["shown"] = shown
    environment.filters["fmt"] = fmt
    environment.filters["exact"] = exact
    curves = [_curve_view(c, i) for i, c in enumerate(report.curves)]
    for curve in curves:
        curve["svg"] = Markup(curve["svg"])  # written and escaped by ragjudge.report.svg
    template = environment.get_template("report.html")
    return template.render(
        r=report, css=Markup(css), script=Markup(script), policy=policy,
        scorecard=scorecard(report), curves=curves, per_query=per_query_tables(report),
        comparison=comparison_view(report), agreement=agreement_view(report),
        disputes=disputes_view(report), strata=strata_view(report), settled=settled_view(report),
        letters={n: run_letter(i) for i, n in enumerate(report.run_names)},
        made_at=report.made_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
        run_form=RUN_FORM, label_form=LABEL_FORM,
    )


__all__ = ["render_html", "run_letter", "statistic"]
