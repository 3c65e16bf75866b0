"""``ragjudge settled`` (is each comparison of the runs settled, while the pool is being judged?)
and ``ragjudge queue`` (the next pairs an annotator would be given, in order)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ragjudge.cli.app import app
from ragjudge.cli.common import (
    MAX_DEPTH,
    MAX_DRAWS,
    MAX_LIMIT,
    MAX_SEED,
    access_of,
    console,
    open_project,
    print_json,
    reads_only,
    safe,
    wide_console,
)
from ragjudge.cli.options import int_option
from ragjudge.cli.scoring import check_format
from ragjudge.errors import CheckFailed, UsageError
from ragjudge.numeric import probability_text
from ragjudge.safetext import quote

SETTLED_EPILOG = (
    "For every pair of runs (--pairs adjacent: each run with the next in each measure's "
    "ranking, for many runs) and every measure shown by 'ragjudge eval' (or -m), on the "
    "project's gold and its judging pool (every run's top --depth per query, as 'annotate' "
    "pools it): the mean difference A - B now (unjudged pairs not relevant), the range it can "
    "still end in over every grade the unjudged pool pairs may get, p_order (the probability "
    "that the current order holds, under a model of those grades: a prior by rank and run "
    "learned from the judged pairs, and an LLM annotator's grades calibrated against the "
    "people's when the project has one), the status and about how many more pool pairs, judged "
    "in the settle order, make the order certain.\n\n"
    "certain: the range excludes 0, no judgment can change the order; tied: no judgment can "
    "separate the runs; probable: p_order >= --confidence; open: neither. This is about the "
    "unjudged pairs of these queries only: whether the queries stand for others is the "
    "bootstrap interval over queries (eval --ci, compare), a separate question. Measures "
    "without bounds (Rprec, bpref, ERR, F, ContextPrecision, the answer measures) are left out "
    "and listed with why.\n\n"
    "Exit code: 0 when every comparison listed is settled (certain, probable or tied), 1 when "
    "one is open, 2 for a mistake on the command line.\n\n"
    "Examples:\n\n"
    "  ragjudge settled --db demo.db\n\n"
    "  ragjudge settled --runs bm25,hybrid -m nDCG@10 -m AP --format json\n\n"
    "  ragjudge settled --pairs adjacent --confidence 0.99\n\n"
    "  ragjudge settled --quiet && echo 'stop judging: the ranking will not change'\n\n"
    "It runs as $RAGJUDGE_USER, else your login name; what it prints is aggregates, which "
    "everyone sees."
)

QUEUE_EPILOG = (
    "The pairs come from the same queue the app judges from (sent-back pairs first, then the "
    "order), listed as if each were judged in turn; nothing is recorded. A script, a replay or "
    "an outside judge that takes them in this order follows the product's order. In the settle "
    "order the list is the order as weighed now; judging weighs it again every "
    "20 labels.\n\n"
    "Orders: depth (rounds of growing depth: 1, 2, 3, 5, 10 ... the pool depth), query (a "
    "query's whole pool at a time), settle (first the tenth of the pairs that most move the "
    "comparisons of adjacent runs not settled yet, the top ranks first; then the rest by their "
    "weight; then the pairs no open comparison needs, in the depth order).\n\n"
    "Examples:\n\n"
    "  ragjudge queue --annotator ana --limit 5\n\n"
    "  ragjudge queue --annotator ana --order settle --limit 100 --format json\n\n"
    "Anyone may list their own queue; another annotator's (it shows which pairs they have "
    "judged) is for who sees every annotator's labels: in a blind project, a lead (--by)."
)

ORDER_HELP = ("depth (rounds of growing depth), query (a query's whole pool at a time) or settle "
              "(the pairs that most move the unsettled comparisons of the runs first).")


def run_list(text: str | None) -> list[str] | None:
    """``--runs A,B``: the names, or None for all."""
    if text is None:
        return None
    names = [r.strip() for r in text.split(",") if r.strip()]
    if not names:
        raise UsageError(f"--runs {quote(text)}: give run names as A,B.")
    return names


@app.command("settled", epilog=SETTLED_EPILOG)
def settled(
    runs: Annotated[str | None, typer.Option("--runs", help="Compare these runs only (A,B,...); default all.", show_default=False)] = None,
    measure: Annotated[list[str] | None, typer.Option("--measure", "-m", help="A measure (P@5, nDCG@10, AP, ...); repeat it or separate with commas. Default: the measures 'ragjudge eval' shows that can be settled.", show_default=False)] = None,
    confidence: Annotated[float, typer.Option("--confidence", help="p_order from which an order is probable.")] = 0.95,
    pairs: Annotated[str, typer.Option("--pairs", help="all (every pair of runs) or adjacent (each run with the next in each measure's ranking).")] = "all",
    depth: Annotated[int, int_option("--depth", low=1, high=MAX_DEPTH, what="the pool depth", help="The judging pool's depth: every run's top K per query.")] = 10,
    rule: Annotated[str | None, typer.Option("--rule", help="The gold rule (default: the project's).", show_default=False)] = None,
    llm: Annotated[str, typer.Option("--llm", help="The LLM annotator whose grades, calibrated against the gold, sharpen p_order: a name, auto (the one with most grades) or none.")] = "auto",
    samples: Annotated[int, int_option("--samples", low=0, high=MAX_DRAWS, what="the number of draws", help="Monte Carlo draws of the unjudged grades behind p_order.")] = 200,
    seed: Annotated[int, int_option("--seed", low=0, high=MAX_SEED, what="a seed", help="Random seed of the draws (results repeat exactly).")] = 0,
    format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing; the exit code says it.")] = False,
) -> None:
    """Is each comparison of the runs settled, or can judging more pairs still change it?"""
    reads_only(runs_as_user=True)
    from ragjudge.services.scoring import files as svc_files
    from ragjudge.services.scoring import settled as svc

    check_format(format, ("table", "json"))
    if not 0.0 < confidence < 1.0:
        raise UsageError(f"--confidence {confidence}: a probability between 0 and 1, such as 0.95.")
    if pairs not in svc.PAIRS:
        raise UsageError(f"--pairs {pairs}: use all or adjacent.")
    measures = svc_files.parse_measure_list(measure) if measure else None
    with open_project() as project:
        report = svc.settle_project(project, access=access_of(project, None), runs=run_list(runs),
                                    measures=measures, depth=depth, confidence=confidence,
                                    pairs=pairs, rule=rule,
                                    llm=None if llm == "none" else llm, seed=seed, samples=samples)
    if not quiet:
        if format == "json":
            print_json(report.to_json())
        else:
            _settled_table(report)
    if not report.settled:
        raise CheckFailed("")


def _bounds(c: Any) -> str:
    mark = "" if c.exact else "≈"
    return f"{mark}[{c.low:+.4f}, {c.high:+.4f}]"


def _status(c: Any) -> str:
    style = {"certain": "bold green", "probable": "green", "tied": "dim", "open": "yellow"}[c.status]
    return f"[{style}]{c.status}[/]"


def _settled_table(report: Any) -> None:
    from rich.table import Table

    table = Table(title=f"Settled? {len(report.comparisons):,} comparisons of "
                        f"{len(report.runs)} runs ({report.pairs} pairs)")
    for label, justify in (("measure", "left"), ("A", "left"), ("B", "left"), ("A - B", "right"),
                           ("can end in", "right"), ("p_order", "right"), ("status", "left"),
                           ("judge more", "right")):
        table.add_column(label, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for c in report.comparisons:
        p = probability_text(c.p_order, sure=c.status in ("certain", "tied"))
        more = f"~{c.judge_more:,}" if c.status in ("open", "probable") else ""
        table.add_row(safe(c.measure), safe(c.a), safe(c.b), f"{c.difference:+.4f}", _bounds(c),
                      p, _status(c), more)
    out = wide_console()
    out.print(table)
    judged = report.judged_pairs / report.pool_pairs if report.pool_pairs else 0.0
    lines = [f"pool (top {report.depth}): {report.pool_pairs:,} pairs, {report.judged_pairs:,} "
             f"judged ({judged:.0%}) · {safe(report.composition.describe())}"]
    if report.llm is not None:
        lines.append(f"LLM grades: {safe(report.llm.annotator)} on {report.llm.open_pairs:,} "
                     f"unjudged pairs, calibrated on {report.llm.calibration_pairs:,} judged ones.")
    if any(not c.exact for c in report.comparisons):
        lines.append("≈ a valid range, possibly wider than the exact one (AP on queries with many "
                     "unjudged pairs).")
    for s in report.skipped:
        lines.append(f"left out: {safe(s.measure)} ({safe(s.why)}).")
    lines.append(f"[dim]{safe(report.note())}[/]")
    lines.append(_verdict(report))
    out.print("\n".join(lines), soft_wrap=True)


def _verdict(report: Any) -> str:
    counts = report.counts()
    done = len(report.comparisons) - counts["open"]
    parts = ", ".join(f"{counts[s]:,} {s}" for s in ("certain", "probable", "tied") if counts[s])
    if report.settled:
        return f"[bold green]Every comparison is settled[/] ({parts or 'none listed'})."
    most = max(c.judge_more for c in report.open)
    return (f"[bold yellow]{counts['open']:,} open[/] of {len(report.comparisons):,} "
            f"({done:,} settled{': ' + parts if parts else ''}); the open ones need about "
            f"{most:,} more pool pairs judged in the settle order (the most any one needs): "
            "ragjudge annotate --queue-order settle.")


@app.command("queue", epilog=QUEUE_EPILOG)
def queue(
    annotator: Annotated[str, typer.Option("--annotator", help="Whose queue.", show_default=False)],
    order: Annotated[str, typer.Option("--order", "--queue-order", help=ORDER_HELP)] = "depth",
    limit: Annotated[int, int_option("--limit", low=1, high=MAX_LIMIT, what="the number of pairs", help="How many pairs to list.")] = 20,
    runs: Annotated[str | None, typer.Option("--runs", help="Pool from these runs only (A,B); default all.", show_default=False)] = None,
    depth: Annotated[int, int_option("--depth", low=1, high=MAX_DEPTH, what="the pool depth", help="Pool depth K: the top K of each run per query.")] = 10,
    queries: Annotated[str | None, typer.Option("--queries", help="Only these queries: a file of ids or ID,ID,...", show_default=False)] = None,
    category: Annotated[str | None, typer.Option("--category", help="Only queries of this category.", show_default=False)] = None,
    format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    by: Annotated[str | None, typer.Option("--by", help="Who asks (default: $RAGJUDGE_USER, else your login name); another annotator's queue is for who sees every label.", show_default=False)] = None,
) -> None:
    """The next pairs an annotator would be given, in order (nothing is recorded)."""
    reads_only()
    from ragjudge.cli.judging import parse_queries
    from ragjudge.services.events.annotators import annotator_names, check_annotator
    from ragjudge.services.labels.queue import ORDERS
    from ragjudge.services.scoring import settled as svc

    check_format(format, ("table", "json"))
    if order not in ORDERS:
        raise UsageError(f"--order {order}: use {', '.join(ORDERS[:-1])} or {ORDERS[-1]}.")
    name = check_annotator(annotator)
    with open_project() as project:
        access = access_of(project, by)
        if not access.may_read_labels_of(name):
            access.require_sees_all(f"list {name}'s queue (it shows which pairs they have judged)")
        options: dict[str, Any] = {k: v for k, v in dict(runs=run_list(runs), queries=parse_queries(queries),
                                         category=category).items() if v is not None}
        judging = svc.judging_queue(project, name, order=order, depth=depth, wait=None,
                                    use_assignment=True, **options)
        pairs = judging.upcoming(limit)
        new = name not in annotator_names(project)
    if format == "json":
        print_json({"annotator": name, "order": order, "depth": depth,
                    "pairs": [{"query_id": q, "chunk_id": c} for q, c in pairs]})
        return
    from rich.table import Table

    title = (f"{safe(name)}'s next {len(pairs):,} pair{'' if len(pairs) == 1 else 's'} "
             f"({order} order)")
    table = Table(title=title, min_width=min(len(title), 100))  # the title on one line
    for label in ("#", "query", "chunk"):
        table.add_column(label, justify="right" if label == "#" else "left", no_wrap=True)
    for i, (q, c) in enumerate(pairs, start=1):
        table.add_row(str(i), safe(q), safe(c))
    console.print(table)
    if new:
        console.print(f"{safe(name)} has no labels in this project yet: this is the queue a new "
                      "annotator starts with (check the name's spelling if that is not you).")
    if not pairs:
        console.print("Nothing left to judge in this queue.")
