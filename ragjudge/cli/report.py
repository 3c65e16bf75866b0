"""``ragjudge report``: the evaluation of a project as one file to hand on — a self-contained HTML
page or a Markdown summary (:mod:`ragjudge.report`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragjudge.cli.app import app
from ragjudge.cli.base import grade_threshold
from ragjudge.cli.common import MAX_DRAWS, MAX_LIMIT, MAX_SEED, err_console, open_project, reads_only, safe
from ragjudge.cli.options import int_option
from ragjudge.cli.progress import QUIET_HELP, progress_bar
from ragjudge.errors import UsageError

FORMATS = ("html", "md")

REPORT_EPILOG = (
    "The HTML page is one file that opens offline: inline CSS, inline SVG plots, a small inline "
    "script that sorts the tables, nothing fetched from anywhere. Every number equals 'ragjudge "
    "eval --format json' on the same project and options (intervals: eval --ci; curves: eval "
    "--curve), and each carries its exact value in the page. The Markdown summary (GitHub "
    "tables) is for a pull request's or CI job's comment; it leaves out the plots (their values "
    "come as tables) and the sorting.\n\n"
    "Sections: the scorecard (every run x measure, 95 % bootstrap intervals, the range over "
    "annotators of the evaluation screen, significance letters), the gold's composition, "
    "every pair of runs compared (Fisher's randomization test and Holm's correction unless "
    "--test and --correction say otherwise) with how settled each comparison is while the pool "
    "is being judged ('ragjudge settled': certain, probable or open; --no-settled leaves it "
    "out), strata, Metric@K and precision-recall curves, "
    "per-query tables, agreement (κ, α, AC1, confusion matrices, disputed pairs) and the "
    "provenance: SHA-256 of every run and of the label snapshot, ragjudge's version, the "
    "command line, the time.\n\n"
    "In a blind project an annotator who is not a lead gets the aggregates only: no per-query "
    "tables and no disputed pairs; the report says what it leaves out.\n\n"
    "Examples:\n\n"
    "  ragjudge report -o report.html\n\n"
    "  ragjudge report --format md > summary.md           # for a CI comment\n\n"
    "  ragjudge report -o report.md -m nDCG@10 -m RR --run bm25 --run hybrid\n\n"
    "  ragjudge report -o report.html --test tukey --strata difficulty --per-query both\n\n"
    "  ragjudge report -o report.html --curve nDCG --k 1-50 --by ana"
)


@app.command("report", epilog=REPORT_EPILOG)
def report_command(
    output: Annotated[Path | None, typer.Option("-o", "--output", help="The file to write (default: standard output). Written whole or not at all; never over a project.", show_default=False)] = None,
    format: Annotated[str | None, typer.Option("--format", help="html or md (default: md when --output ends in .md, else html).", show_default=False)] = None,
    run: Annotated[list[str] | None, typer.Option("--run", "-r", help="A run of the project to report; repeat for several (default: all, in name order).", show_default=False)] = None,
    measure: Annotated[list[str] | None, typer.Option("--measure", "-m", help="A measure (P@5, nDCG@10, RR, ...); repeat or separate with commas (default: eval's measures).", show_default=False)] = None,
    rule: Annotated[str | None, typer.Option("--rule", help="The gold rule: median, majority, mean, min, max, adjudicated, reference or annotator:NAME (default: the project's).", show_default=False)] = None,
    threshold: Annotated[int | None, typer.Option("--threshold", parser=grade_threshold(), help="Lowest relevant grade for binary measures (default: the project's).", show_default=False)] = None,
    averaging: Annotated[str, typer.Option("--averaging", help="judged (a query a run misses counts 0) or run (only the queries the run answers).")] = "judged",
    strata: Annotated[str, typer.Option("--strata", help="Means per value of a query field, as 'eval --by': category, a key of the queries' meta, or none (default: category when queries have one).")] = "category",
    per_query: Annotated[str | None, typer.Option("--per-query", help="Per-query tables: measure (queries x runs, one per measure), run (queries x measures, one per run), both or none (default: measure in HTML, none in Markdown).", show_default=False)] = None,
    curve: Annotated[list[str] | None, typer.Option("--curve", help="A Metric@K curve to draw (an @k measure's family: P, R, nDCG, Success, ...); repeat for several (default: P, R and nDCG).", show_default=False)] = None,
    k: Annotated[str, typer.Option("--k", help="The cutoffs of the curves: 1-20, 1,3,5,10 or 20 (= 1-20).")] = "1-20",
    no_pr: Annotated[bool, typer.Option("--no-pr", help="Leave out the interpolated precision-recall curve.")] = False,
    test: Annotated[str, typer.Option("--test", help="The test of every pair of runs: fisher (randomization), t, wilcoxon or tukey.")] = "fisher",
    correction: Annotated[str | None, typer.Option("--correction", help="Over each measure's pairs: holm (default), bonferroni, bh or none (Tukey's HSD needs none).", show_default=False)] = None,
    alpha: Annotated[float, typer.Option("--alpha", help="Significance level of a verdict.")] = 0.05,
    permutations: Annotated[int, int_option("--permutations", low=1, high=MAX_DRAWS, what="the number of sign patterns", help="Sign patterns of the randomization test.")] = 10_000,
    resamples: Annotated[int, int_option("--resamples", low=1, high=MAX_DRAWS, what="the number of bootstrap resamples", help="Bootstrap resamples of a difference's interval.")] = 10_000,
    seed: Annotated[int, int_option("--seed", low=0, high=MAX_SEED, what="a seed", help="Random seed of the tests (results repeat exactly).")] = 0,
    settled: Annotated[bool, typer.Option("--settled/--no-settled", help="Work out how settled each comparison is while the pool is being judged (as 'ragjudge settled').")] = True,
    disputes: Annotated[int | None, int_option("--disputes", low=0, high=MAX_LIMIT, what="the number of disputed pairs to list", help="Disputed pairs to list (default: 50 in HTML, 10 in Markdown; 0: none).", show_default=False)] = None,
    by: Annotated[str | None, typer.Option("--by", help="Who the report is for (default: $RAGJUDGE_USER, else your login name): in a blind project only a lead's report has per-query tables and disputed pairs.", show_default=False)] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help=QUIET_HELP)] = False,
) -> None:
    """Write the evaluation as one self-contained HTML page or a Markdown summary."""
    reads_only()
    from ragjudge import files
    from ragjudge.cli.scoring import parse_k
    from ragjudge.report.build import DEFAULT_CURVES, ReportOptions, build_report
    from ragjudge.services.access.identity import resolve
    from ragjudge.services.access.visibility import access_for

    dest = "-" if output is None else str(output)
    kind = _format(format, dest)
    options = ReportOptions(
        runs=tuple(run or ()), measures=tuple(measure or ()), rule=rule, threshold=threshold,
        averaging=averaging, strata=strata,
        per_query=per_query or ("measure" if kind == "html" else "none"),
        curves=tuple(curve) if curve else DEFAULT_CURVES, k=tuple(parse_k(k)), pr=not no_pr,
        test=test, correction=correction, alpha=alpha, resamples=resamples,
        permutations=permutations, seed=seed, settled=settled,
        disputes=disputes if disputes is not None else (50 if kind == "html" else 10))
    _check_destination(dest, kind)
    identity = resolve(by)
    with open_project() as project:
        access = access_for(project, identity)
        with progress_bar(quiet) as progress:
            report = build_report(project, options, access=access, command=command_line(),
                                  progress=progress)
    text = _render(report, kind)
    with files.writing(dest, compress=False) as stream:
        stream.write(text)
    if dest != "-":
        size = len(text.encode("utf-8"))
        err_console.print(f"Wrote the {'HTML report' if kind == 'html' else 'Markdown summary'} "
                          f"({size / 1024:,.0f} kB) to {safe(dest)}.", soft_wrap=True)


def _format(format: str | None, dest: str) -> str:
    if format is not None:
        if format not in FORMATS:
            raise UsageError(f"--format {format}: use html (one self-contained page) or md "
                             "(a Markdown summary).")
        return format
    return "md" if dest.lower().endswith((".md", ".markdown")) else "html"


def _check_destination(dest: str, kind: str) -> None:
    """Refuse, before any work, HTML onto a terminal and a file ragjudge never writes over."""
    from ragjudge import files

    if kind == "html" and files.is_terminal(dest):
        raise UsageError("the HTML report is a whole page, not for a terminal: give a file with "
                         "-o report.html (or --format md for a summary to read here).")
    if dest != "-":
        files.check_target(dest)


def _render(report, kind: str) -> str:  # noqa: ANN001 - Report
    if kind == "md":
        from ragjudge.report.markdown import render_markdown

        return render_markdown(report)
    from ragjudge.report.html import render_html

    return render_html(report)


def command_line() -> str:
    """The command line that made the report, shell-quoted, a database URL's password masked."""
    import shlex

    from ragjudge.cli import invoked
    from ragjudge.safetext import mask_secrets, mask_url

    args = list(invoked())
    shown = []
    for i, arg in enumerate(args):
        if i and args[i - 1] == "--db":
            arg = mask_url(arg)
        elif arg.startswith("--db="):
            arg = "--db=" + mask_url(arg[5:])
        shown.append(mask_secrets(arg))
    return shlex.join(["ragjudge", *shown])
