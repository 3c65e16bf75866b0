"""``ragjudge eval``, ``compare``, ``gate`` and ``explain``: scoring runs against qrels.

Qrels come from a file (``--qrels``) or from the project's gold labels (``--db``, under the
project's aggregation rule or ``--rule``); runs are files or runs stored in the project.
"""

from __future__ import annotations

import csv
import math
import re
import sys
from typing import Annotated, Any

import typer
from rich.table import Table

from ragjudge.cli.app import app
from ragjudge.cli.common import (
    MAX_DRAWS,
    MAX_SEED,
    check_int,
    console,
    db_given,
    open_project,
    print_json,
    safe,
)
from ragjudge.cli.progress import progress_bar
from ragjudge.errors import CheckFailed, UsageError
from ragjudge.numeric import MAX_GRADE, short_int

FORMATS = ("table", "json", "csv")

QrelsOption = Annotated[
    str | None,
    typer.Option("--qrels", help="A qrels file (TREC 'qid 0 chunk grade', or JSONL). Without it "
                 "the project's gold labels are the qrels.", show_default=False),
]
RuleOption = Annotated[
    str | None,
    typer.Option("--rule", help="How the project's annotators' grades become one gold grade: "
                 "median, majority, mean, min, max, adjudicated or annotator:NAME (default: the "
                 "project's rule).", show_default=False),
]
MeasureOption = Annotated[
    list[str] | None,
    typer.Option("--measure", "-m", help="A measure in ir_measures syntax (P@5, P(rel=2)@5, "
                 "nDCG@10, RR, AP, ...); repeat it or separate with commas.", show_default=False),
]
ThresholdOption = Annotated[
    int | None,
    typer.Option("--threshold", help="Lowest grade that counts as relevant for binary measures "
                 "(default: the project's, or 1 with --qrels).", show_default=False),
]
QuietOption = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress bar (it is drawn on standard error "
                       "only when that is a terminal)."),
]
AveragingOption = Annotated[
    str,
    typer.Option("--averaging", help="judged: mean over every judged query, a query the run "
                 "misses counts 0 (trec_eval -c); run: only the queries the run answers."),
]


# -- inputs ------------------------------------------------------------------------------------


class Inputs:
    """Qrels, runs and settings of one command, from files and/or the project."""

    def __init__(self, qrels_file: str | None, rule: str | None, threshold: int | None) -> None:
        self.project = None
        try:
            self._load(qrels_file, rule, threshold)
        except BaseException:
            self.__exit__()
            raise

    def _load(self, qrels_file: str | None, rule: str | None, threshold: int | None) -> None:
        from ragjudge.services import evaluation as svc

        if qrels_file == "-":
            raise UsageError("--qrels -: eval, compare, gate and explain read qrels from a file, not "
                             "from standard input; save it to a file first.")
        if qrels_file is not None:
            if rule is not None:
                raise UsageError("--rule chooses how a project's labels become qrels; it does not "
                                 "apply to a --qrels file.")
            self.qrels = svc.load_qrels_file(qrels_file)
            self.rule = None
            self.source = qrels_file
            self.threshold = 1 if threshold is None else threshold
            if db_given():
                self.project = open_project()
        else:
            self.project = open_project()
            self.qrels, self.rule = svc.project_qrels(self.project, rule)
            self.source = f"project {self.project.shown_db}"
            self.threshold = self.project.scale.threshold if threshold is None else threshold
        if not 0 <= self.threshold <= MAX_GRADE:
            raise UsageError(f"--threshold {short_int(self.threshold)}: a grade threshold is a "
                             f"grade from 0 to {MAX_GRADE:,}.")
        self.max_grade = self.project.scale.max if self.project is not None and qrels_file is None else None
        if self.max_grade is not None and self.threshold > self.max_grade:
            raise UsageError(
                f"--threshold {self.threshold} is above the project's top grade "
                f"({self.project.scale.describe()}): nothing could count as relevant."
            )

    def check_measures(self, measures: list[str]) -> None:
        """A relevance threshold (``P(rel=9)@5``) above the project's scale is a mistake."""
        if self.max_grade is None:
            return
        from ragjudge.metrics.registry import parse_measure

        for name in measures:
            rel = dict(parse_measure(name).params).get("rel")
            if rel is not None and rel > self.max_grade:
                raise UsageError(
                    f"-m {name}: rel={rel} is above the project's top grade "
                    f"({self.project.scale.describe()}): nothing could count as relevant."
                )

    def __enter__(self) -> Inputs:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.project is not None:
            self.project.close()

    def runs(self, texts: list[str] | None, names: list[str] | None = None,
             progress: Any = None) -> dict[str, Any]:
        """``{name: Run}`` for the runs named (all of the project's when none is); ``progress``
        hears of each run read."""
        from ragjudge.services import evaluation as svc

        stored = svc.project_run_names(self.project) if self.project is not None else None
        if not texts:
            if self.project is None:
                raise UsageError("name a run file with --run (or evaluate a project's runs with "
                                 "--db).")
            if not stored:
                raise UsageError("the project has no runs yet: import one with "
                                 "'ragjudge import run FILE', or name a run file with --run.")
            if names:
                raise UsageError("--name renames a --run; name the runs to rename.")
            texts = list(stored)
        if "-" in texts:
            raise UsageError("--run -: runs are read from files or from the project, not from "
                             "standard input; save it to a file first.")
        specs = svc.resolve_runs(texts, names, project_runs=stored)
        runs = {}
        for done, spec in enumerate(specs):
            if progress is not None:
                progress(done, len(specs), "reading runs", "runs")
            if spec.from_project:
                run = svc.project_run(self.project, spec.text)
                run.name = spec.name
            else:
                run = svc.load_run_file(spec.path, spec.name)
            runs[spec.name] = run
        if progress is not None:
            progress(len(specs), len(specs), "reading runs", "runs")
        return runs


def _check_format(value: str, choices: tuple[str, ...] = FORMATS) -> str:
    if value not in choices:
        raise UsageError(f"--format {value}: use {', '.join(choices[:-1])} or {choices[-1]}.")
    return value


def _queries_mode(averaging: str) -> str:
    if averaging not in ("judged", "run"):
        raise UsageError(f"--averaging {averaging}: use judged or run.")
    return averaging


def _fmt(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def _fmt_p(value: float) -> str:
    if value is None or math.isnan(value):
        return "-"
    if value < 0.0001:
        return "<0.0001"
    return f"{value:.4f}"


def _wide_console() -> Any:
    """The console, or for piped output one wide enough that no cell is cut to 80 columns."""
    if console.is_terminal:
        return console
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False, emoji=False, width=max(console.width, 160))


def _csv_writer() -> Any:
    return csv.writer(sys.stdout, lineterminator="\n")


def _csv_value(value: float | None) -> str:
    if value is None or (isinstance(value, float) and (math.isnan(value) or math.isinf(value))):
        return ""
    return repr(float(value))


# -- eval --------------------------------------------------------------------------------------

EVAL_EPILOG = (
    "Default measures: P@1, P@3, P@5, P@10, R@5, R@10, R@20, Success@5, RR, AP, nDCG@5, "
    "nDCG@10, Rprec, ContextPrecision@5. A run's name is its file name without extension unless "
    "--name is given.\n\n"
    "Examples:\n\n"
    "  ragjudge eval --qrels qrels.trec --run bm25.trec --run hybrid.trec\n\n"
    "  ragjudge eval --qrels qrels.trec --run bm25.trec -m nDCG@10 --per-query --format json\n\n"
    "  ragjudge eval --db project.db                  # every run of the project, gold labels\n\n"
    "  ragjudge eval --db project.db --run bm25 --rule majority --by category\n\n"
    "  ragjudge eval --qrels qrels.trec --run bm25.trec --curve nDCG --k 1-20 --format csv\n\n"
    "  ragjudge eval --qrels qrels.trec --run bm25.trec --curve PR\n\n"
    "  ragjudge eval --db project.db --tui             # the live evaluation screen"
)


@app.command("eval", epilog=EVAL_EPILOG)
def eval_command(
    run: Annotated[list[str] | None, typer.Option("--run", "-r", help="A run file (TREC or JSONL) or the name of a run stored in the project; repeat for several. Default with a project: all its runs.", show_default=False)] = None,
    qrels: QrelsOption = None,
    rule: RuleOption = None,
    name: Annotated[list[str] | None, typer.Option("--name", help="Name of the run(s) in the output, in --run order.", show_default=False)] = None,
    measure: MeasureOption = None,
    per_query: Annotated[bool, typer.Option("--per-query", help="Also give every query's values.")] = False,
    by: Annotated[str | None, typer.Option("--by", help="Stratify: one block per value of a query field ('category' or a key of the queries' meta), plus the overall.", show_default=False)] = None,
    queries: Annotated[str | None, typer.Option("--queries", help="With --qrels and --by: a queries file (JSONL or CSV) giving the field.", show_default=False)] = None,
    format: Annotated[str, typer.Option("--format", help="table, json or csv.")] = "table",
    curve: Annotated[str | None, typer.Option("--curve", help="Print Metric@K for K in --k instead (P, R, nDCG, any @k measure), or PR for the 11-point interpolated precision-recall curve.", show_default=False)] = None,
    k: Annotated[str, typer.Option("--k", help="With --curve: the cutoffs, e.g. 1-20, 1,3,5,10 or 20 (= 1-20).")] = "1-20",
    threshold: ThresholdOption = None,
    averaging: AveragingOption = "judged",
    ci: Annotated[bool, typer.Option("--ci", help="Add each mean's 95 % bootstrap interval (over queries).")] = False,
    tui: Annotated[bool, typer.Option("--tui", help="Open the live evaluation screen of the project (--rule, -m and --threshold apply).")] = False,
    quiet: QuietOption = False,
) -> None:
    """Score runs against qrels: every measure per run, the best per column marked."""
    from ragjudge.services import evaluation as svc

    if tui:
        from ragjudge.tui.screens.evaluation import run_evaluation_app

        if qrels is not None or run or curve is not None or by or per_query or ci:
            raise UsageError("--tui shows every run of the project against its gold labels; "
                             "it combines with --rule, -m and --threshold only.")
        with open_project() as project:
            run_evaluation_app(project, rule=rule, measures=svc.parse_measure_list(measure) if measure else None,
                               threshold=threshold)
        return
    _check_format(format)
    mode = _queries_mode(averaging)
    if curve is not None:
        if by or per_query or ci or measure:
            raise UsageError("--curve draws one measure over K; it does not combine with -m, "
                             "--by, --per-query or --ci.")
        with Inputs(qrels, rule, threshold) as inputs:
            runs = inputs.runs(run, name)
            _curve(inputs, runs, curve, k, format, mode)
        return
    measures = svc.parse_measure_list(measure)
    if queries is not None and by is None:
        raise UsageError("--queries gives the field for --by; name the field with --by.")
    with Inputs(qrels, rule, threshold) as inputs, progress_bar(quiet) as progress:
        inputs.check_measures(measures)
        runs = inputs.runs(run, name, progress)
        strata = None
        if by is not None:
            if queries is not None:
                strata = svc.file_strata(queries, by)
            elif inputs.project is not None:
                strata = svc.project_strata(inputs.project, by)
            else:
                raise UsageError(f"--by {by} needs the queries' fields: use a project (--db) or "
                                 "give a queries file with --queries.")
        evaluation = svc.evaluate_all(
            inputs.qrels, runs, measures, threshold=inputs.threshold, queries=mode,
            project=inputs.project, rule=inputs.rule, qrels_source=inputs.source,
            strata=strata, by=by, progress=progress,
        )
    if format == "json":
        print_json(_eval_json(evaluation, per_query, ci))
    elif format == "csv":
        _eval_csv(evaluation, per_query, ci)
    else:
        _eval_tables(evaluation, per_query, ci)


def _block(evaluation, per_query: bool, ci: bool, stratum: str | None) -> dict[str, Any]:  # noqa: ANN001
    runs: dict[str, Any] = {}
    for name in evaluation.run_names:
        entry: dict[str, Any] = {"aggregate": evaluation.aggregate(name, stratum)}
        if evaluation.queries_mode == "run":  # each run is averaged over its own queries
            entry["queries"] = evaluation.n_queries(stratum, run=name)
        left_out = _undefined(evaluation, name, stratum)
        if left_out:
            entry["undefined"] = left_out
        if ci:
            entry["ci95"] = {m: [low, high] for m, (_, low, high)
                             in evaluation.intervals(name, stratum=stratum).items()}
        if per_query:
            entry["per_query"] = evaluation.per_query(name, stratum)
        runs[name] = entry
    return {"queries": evaluation.n_queries(stratum), "runs": runs}


def _undefined(evaluation, run: str, stratum: str | None) -> dict[str, int]:  # noqa: ANN001
    """Per measure, the queries left out of the mean because it is undefined there (a query
    with no facets for Coverage, no nuggets for NuggetRecall, ...)."""
    result = evaluation.results[run]
    if stratum is not None:
        result = result.subset(evaluation.strata[stratum])
    return {m: n for m, n in result.undefined().items() if n}


def _eval_json(evaluation, per_query: bool, ci: bool) -> dict[str, Any]:  # noqa: ANN001
    overall = _block(evaluation, per_query, ci, None)
    data: dict[str, Any] = {
        "measures": evaluation.measures,
        "queries": overall["queries"],
        "runs": overall["runs"],
        "averaging": evaluation.averaging,
        "threshold": evaluation.threshold,
        "rule": evaluation.rule,
        "qrels": evaluation.qrels_source,
    }
    if evaluation.by is not None:
        data["by"] = evaluation.by
        data["strata"] = {s: _block(evaluation, per_query, ci, s) for s in evaluation.strata}
    return data


def _eval_csv(evaluation, per_query: bool, ci: bool) -> None:  # noqa: ANN001
    writer = _csv_writer()
    stratified = evaluation.by is not None
    header = ["run"] + (["stratum"] if stratified else []) + ["query"] + list(evaluation.measures)
    writer.writerow(header)
    blocks: list[str | None] = [None] + (list(evaluation.strata) if stratified else [])
    for stratum in blocks:
        lead = [] if not stratified else ["all" if stratum is None else stratum]
        for name in evaluation.run_names:
            aggregate = evaluation.aggregate(name, stratum)
            writer.writerow([name, *lead, "all"] + [_csv_value(aggregate[m]) for m in evaluation.measures])
            if ci:
                intervals = evaluation.intervals(name, stratum=stratum)
                writer.writerow([name, *lead, "ci95_low"] + [_csv_value(intervals[m][1]) for m in evaluation.measures])
                writer.writerow([name, *lead, "ci95_high"] + [_csv_value(intervals[m][2]) for m in evaluation.measures])
            if per_query and stratum is None:
                for qid, values in evaluation.per_query(name).items():
                    writer.writerow([name, *lead, qid] + [_csv_value(values[m]) for m in evaluation.measures])


def _best_rows(values: list[list[float]]) -> list[set[int]]:
    """For each column, the rows holding its best (highest) value; none when all are equal."""
    best: list[set[int]] = []
    for j in range(len(values[0]) if values else 0):
        column = [row[j] for row in values]
        finite = [v for v in column if v is not None and not math.isnan(v)]
        if len(values) < 2 or not finite or max(finite) == min(finite):
            best.append(set())
            continue
        top = max(finite)
        best.append({i for i, v in enumerate(column) if v is not None and not math.isnan(v)
                     and math.isclose(v, top, rel_tol=0, abs_tol=1e-12)})
    return best


def _column_groups(labels: list[str], first_width: int, cell_width: int) -> list[list[str]]:
    """Split measure columns into groups whose tables fit the console width (the run or query
    column repeats in each), so that no value is ever cut short."""
    available = max(console.width, 40) - first_width - 4
    groups: list[list[str]] = [[]]
    used = 0
    for label in labels:
        width = max(len(label), cell_width) + 3
        if groups[-1] and used + width > available:
            groups.append([])
            used = 0
        groups[-1].append(label)
        used += width
    return groups


def _aggregate_tables(evaluation, stratum: str | None, ci: bool, title: str | None) -> list[Any]:  # noqa: ANN001
    names = evaluation.run_names
    rows = {n: evaluation.aggregate(n, stratum) for n in names}
    intervals = {n: evaluation.intervals(n, stratum=stratum) for n in names} if ci else {}
    first_width = max([len(n) for n in names] + [3]) + 3
    tables = []
    for group in _column_groups(evaluation.measures, first_width, 16 if ci else 7):
        table = Table()
        table.add_column("run", no_wrap=True)
        for m in group:
            table.add_column(safe(m), justify="right", no_wrap=True)
        best = _best_rows([[rows[n][m] for m in group] for n in names])
        for i, name in enumerate(names):
            cells = [safe(name)]
            for j, m in enumerate(group):
                value = rows[name][m]
                text = _fmt(value)
                if ci and value is not None and not math.isnan(value):
                    _, low, high = intervals[name][m]
                    text += f"\n[dim][{low:.3f}, {high:.3f}][/]"
                if i in best[j]:
                    text = f"[bold green]*{text}[/]"
                cells.append(text)
            table.add_row(*cells)
        tables.append(table)
    if title:
        tables.insert(0, f"[bold]{title}[/]")
    return tables




def _footer(evaluation, n_runs: int) -> str:  # noqa: ANN001
    lines = [f"{evaluation.n_queries():,} queries; averaging: {evaluation.averaging}."]
    left_out: dict[str, set[int]] = {}
    for name in evaluation.run_names:
        for measure, n in _undefined(evaluation, name, None).items():
            left_out.setdefault(measure, set()).add(n)
    for measure, counts in left_out.items():
        n = "/".join(str(c) for c in sorted(counts))
        lines.append(f"{measure}: left out of the mean for {n} of {evaluation.n_queries():,} queries, "
                     f"where it is undefined ({_nothing_to_count(measure)}).")
    source = f"qrels: {evaluation.qrels_source}"
    if evaluation.rule is not None:
        source += f", gold rule: {evaluation.rule}"
    source += f"; relevant from grade {evaluation.threshold} (nDCG uses every grade)."
    lines.append(source)
    if n_runs > 1:
        lines.append("* best value in its column.")
    return "\n".join(safe(line) for line in lines)


_NOTHING = {"facets": "no facets", "nuggets": "no nuggets to count", "claims": "no claims",
            "entities": "no entities", "citations": "no answer of the run, or nothing retrieved",
            "answers": "no answer of the run, nothing to count, or not judged yet"}


def _nothing_to_count(measure: str) -> str:
    """Why a measure can be undefined on a query: what the query lacks."""
    from ragjudge.metrics.registry import parse_measure

    needs = parse_measure(measure).needs
    if "answers" in needs:
        return _NOTHING["answers"]
    lacks = [_NOTHING[k] for k in needs if k in _NOTHING]
    if lacks:
        return "the query has " + " or ".join(lacks)
    return "the query has no relevance grade; it is evaluated for its facets or nuggets"


def _eval_tables(evaluation, per_query: bool, ci: bool) -> None:  # noqa: ANN001
    if evaluation.by is not None:
        for stratum, qids in evaluation.strata.items():
            title = f"{evaluation.by} = {stratum} ({len(qids)} queries)"
            console.print(*_aggregate_tables(evaluation, stratum, ci, safe(title)))
        console.print(*_aggregate_tables(evaluation, None, ci,
                                         f"all queries ({evaluation.n_queries()})"))
    else:
        console.print(*_aggregate_tables(evaluation, None, ci, None))
    console.print(f"[dim]{_footer(evaluation, len(evaluation.run_names))}[/]")
    if per_query:
        for name in evaluation.run_names:
            per_query_values = evaluation.per_query(name)
            first_width = max([len(q) for q in per_query_values] + [5]) + 3
            for g, group in enumerate(_column_groups(evaluation.measures, first_width, 7)):
                if g == 0:
                    console.print(f"[bold]{safe(name)}: per query[/]")
                table = Table()
                table.add_column("query", no_wrap=True)
                for m in group:
                    table.add_column(safe(m), justify="right", no_wrap=True)
                for qid, values in per_query_values.items():
                    table.add_row(safe(qid), *[_fmt(values[m]) for m in group])
                console.print(table)


# -- curves ------------------------------------------------------------------------------------



def parse_k(text: str) -> list[int]:
    """``1-20`` -> 1..20; ``1,3,5,10``; ``20`` -> 1..20. Every K is checked against
    ``MAX_CUTOFF`` before the list of cutoffs is built."""
    from ragjudge.numeric import MAX_CUTOFF, parse_integer

    text = text.strip()
    if re.fullmatch(r"[0-9]+", text):
        parts, span = [text], True
    elif re.fullmatch(r"[0-9]+\s*-\s*[0-9]+", text):
        parts, span = [x.strip() for x in text.split("-")], True
    else:
        parts, span = [x.strip() for x in text.split(",") if x.strip()], False
    numbers = [parse_integer(x) for x in parts]
    if (not numbers or any(k is None or k < 1 or k > MAX_CUTOFF for k in numbers)
            or (len(numbers) == 2 and span and numbers[0] > numbers[1])):
        raise UsageError(f"--k {_short(text)}: give cutoffs as a range 1-20, a list 1,3,5,10 or "
                         f"a largest K such as 20, each from 1 to {MAX_CUTOFF:,}.")
    if span:
        lo, hi = (1, numbers[0]) if len(numbers) == 1 else numbers
        return list(range(lo, hi + 1))
    return sorted(set(numbers))  # type: ignore[arg-type]


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _curve(inputs: Inputs, runs: dict[str, Any], curve: str, k_text: str, format: str, mode: str) -> None:
    from ragjudge.metrics.curves import metric_at_k, pr_curve
    from ragjudge.metrics.registry import parse_measure
    from ragjudge.services.evaluation import _project_extras

    base = curve.strip()
    is_pr = base.upper() in ("PR", "P-R", "PRC")
    curves = {}
    if is_pr:
        for name, run in runs.items():
            curves[name] = pr_curve(inputs.qrels, run, threshold=inputs.threshold, queries=mode)
        x_label, y_label, label = "recall", "precision", "PR"
    else:
        base = base.split("@", 1)[0]
        ks = parse_k(k_text)
        probe = parse_measure(f"{base}@{ks[0]}")
        if probe.definition.cutoff_kind is not int:
            raise UsageError(f"--curve {curve}: {probe.definition.name} takes no @k cutoff; "
                             "curves are drawn for @k measures (P, R, nDCG, Success, ...) or PR.")
        for name, run in runs.items():
            extras = _project_extras(inputs.project, name, inputs.qrels, run, [probe],
                                     inputs.threshold, mode, inputs.rule)
            curves[name] = metric_at_k(inputs.qrels, run, probe, ks, threshold=inputs.threshold,
                                       queries=mode, extras=extras)
        x_label, y_label, label = "k", "value", base
    first = next(iter(curves.values()))
    xs = [int(x) if x_label == "k" else float(x) for x in first.x.tolist()]
    values = {name: c.y.tolist() for name, c in curves.items()}
    if format == "json":
        data = {
            "curve": label, "x": x_label, x_label: xs, "queries": len(first.query_ids),
            "averaging": first.averaging, "threshold": inputs.threshold, "rule": inputs.rule,
            "runs": {name: {y_label: v} for name, v in values.items()},
        }
        if is_pr:  # the trapezoidal area of the mean curve: the mean AUC_PR
            for name, c in curves.items():
                data["runs"][name]["area"] = c.area
        print_json(data)
        return
    if format == "csv":
        writer = _csv_writer()
        writer.writerow([x_label, *values])
        for i, x in enumerate(xs):
            writer.writerow([x, *[_csv_value(v[i]) for v in values.values()]])
        return
    title = "interpolated precision at recall" if is_pr else f"{base}@K"
    console.print(f"[bold]{safe(title)}[/]")
    table = Table()
    table.add_column("at" if is_pr else x_label, justify="left" if is_pr else "right")
    for name in values:
        table.add_column(safe(name), justify="right")
    for i, x in enumerate(xs):
        # every row of the PR table says what it is: a recall level, then the area
        table.add_row(f"recall {x:.1f}" if is_pr else f"{x:g}", *[_fmt(v[i]) for v in values.values()])
    if is_pr:
        table.add_row("area under the curve (AUC_PR)", *[_fmt(c.area) for c in curves.values()],
                      style="dim")
    console.print(table)
    if is_pr:
        console.print("[dim]recall r: the precision interpolated at recall r (the highest precision "
                      "at any recall ≥ r), averaged over the queries; area under the curve: the "
                      "trapezoidal area under that mean curve over the 11 levels, the mean "
                      "AUC_PR.[/]")
    console.print(f"[dim]{len(first.query_ids):,} queries; averaging: {safe(first.averaging)}[/]")


# -- compare -----------------------------------------------------------------------------------

COMPARE_EPILOG = (
    "The first run is the baseline A; every other run is B in turn. Per measure: each run's mean "
    "(as eval gives it under the same --averaging), the mean difference B - A over the queries "
    "both runs have, its 95 % paired bootstrap interval, the p-values of "
    "a paired randomization test (10,000 sign flips) and a paired t-test, Holm-adjusted over the "
    "runs compared with A when there are more than two runs. The verdict ('B better', 'A "
    "better', 'within noise') follows the randomization test at --alpha.\n\n"
    "Examples:\n\n"
    "  ragjudge compare bm25.trec hybrid.trec --qrels qrels.trec -m R@5 -m RR\n\n"
    "  ragjudge compare bm25 hybrid dense --db project.db     # runs stored in the project\n\n"
    "  ragjudge compare old.trec new.trec --qrels qrels.trec --format json"
)


@app.command(epilog=COMPARE_EPILOG)
def compare(
    runs: Annotated[list[str], typer.Argument(help="Two or more runs (files, or names of runs stored in the project); the first is the baseline.", show_default=False)],
    qrels: QrelsOption = None,
    rule: RuleOption = None,
    name: Annotated[list[str] | None, typer.Option("--name", help="Names of the runs in the output, in order.", show_default=False)] = None,
    measure: MeasureOption = None,
    format: Annotated[str, typer.Option("--format", help="table, json or csv.")] = "table",
    alpha: Annotated[float, typer.Option("--alpha", help="Significance level of the verdict.")] = 0.05,
    permutations: Annotated[int, typer.Option("--permutations", help="Sign flips of the randomization test.")] = 10_000,
    resamples: Annotated[int, typer.Option("--resamples", help="Bootstrap resamples of the interval.")] = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="Random seed (results repeat exactly).")] = 0,
    threshold: ThresholdOption = None,
    averaging: AveragingOption = "judged",
    quiet: QuietOption = False,
) -> None:
    """Is B really better than A? Paired significance tests per measure."""
    from ragjudge.services import evaluation as svc

    _check_format(format)
    mode = _queries_mode(averaging)
    if len(runs) < 2:
        raise UsageError("compare needs at least two runs: RUN_A RUN_B [RUN_C ...].")
    if not 0 < alpha < 1:
        raise UsageError(f"--alpha {alpha}: a significance level is between 0 and 1.")
    check_int("--permutations", permutations, 1, MAX_DRAWS, "the number of sign flips")
    check_int("--resamples", resamples, 1, MAX_DRAWS, "the number of bootstrap resamples")
    check_int("--seed", seed, 0, MAX_SEED, "a seed")
    measures = svc.parse_measure_list(measure)
    with Inputs(qrels, rule, threshold) as inputs, progress_bar(quiet) as progress:
        inputs.check_measures(measures)
        loaded = inputs.runs(list(runs), name, progress)
        evaluation = svc.evaluate_all(
            inputs.qrels, loaded, measures, threshold=inputs.threshold, queries=mode,
            project=inputs.project, rule=inputs.rule, qrels_source=inputs.source,
            progress=progress,
        )
    rows = svc.compare(evaluation, alpha=alpha, resamples=resamples,
                       permutations=permutations, seed=seed)
    adjusted = len(evaluation.run_names) > 2
    if format == "json":
        print_json({
            "baseline": evaluation.run_names[0],
            "runs": evaluation.run_names,
            "measures": evaluation.measures,
            "queries": rows[0].queries if rows else 0,
            "averaging": evaluation.averaging,
            "rule": evaluation.rule,
            "threshold": evaluation.threshold,
            "alpha": alpha,
            "holm": adjusted,
            "permutations": permutations,
            "resamples": resamples,
            "seed": seed,
            "comparisons": [row.as_dict() for row in rows],
        })
        return
    if format == "csv":
        writer = _csv_writer()
        fields = ["measure", "run_a", "run_b", "queries", "mean_a", "mean_b", "difference",
                  "ci_low", "ci_high", "p_randomization", "p_t_test", "p_randomization_adjusted",
                  "p_t_test_adjusted", "verdict", "winner"]
        writer.writerow(fields)
        for row in rows:
            record = row.as_dict()
            writer.writerow([record[f] if isinstance(record[f], (str, int)) or record[f] is None
                             else _csv_value(record[f]) for f in fields])
        return
    _compare_table(evaluation, rows, adjusted, alpha)


def _compare_table(evaluation, rows, adjusted: bool, alpha: float) -> None:  # noqa: ANN001
    multi = len(evaluation.run_names) > 2
    a_name = evaluation.run_names[0]
    table = Table(title=f"A = {safe(a_name)}" + ("" if multi else f", B = {safe(evaluation.run_names[1])}"),
                  title_justify="left")
    table.add_column("measure", no_wrap=True)
    if multi:
        table.add_column("B", no_wrap=True)
    for col in ("A", "B", "B - A", "95% CI", "p rand", "p t-test", "verdict"):
        table.add_column(col, justify="left" if col == "verdict" else "right", no_wrap=True)
    for row in rows:
        p_rand = row.p_randomization_adjusted if adjusted else row.p_randomization
        p_t = row.p_t_test_adjusted if adjusted else row.p_t_test
        verdict = row.verdict
        if row.winner is not None:
            style = "bold green" if row.verdict == "B better" else "bold red"
            verdict = f"[{style}]{verdict}[/] ({safe(row.winner)})"
        cells = [safe(row.measure)] + ([safe(row.run_b)] if multi else [])
        cells += [_fmt(row.mean_a), _fmt(row.mean_b), f"{row.difference:+.4f}"
                  if not math.isnan(row.difference) else "-",
                  f"[{row.ci_low:+.4f}, {row.ci_high:+.4f}]" if not math.isnan(row.ci_low) else "-",
                  _fmt_p(p_rand), _fmt_p(p_t), verdict]
        table.add_row(*cells)
    _wide_console().print(table)
    paired = rows[0].queries if rows else 0
    notes = [f"A and B: each run's mean as eval gives it (averaging: {evaluation.averaging}); "
             f"B - A, its interval and the tests: over the {paired:,} queries paired."]
    notes += list(dict.fromkeys(
        f"{row.measure}" + (f" ({row.run_b})" if multi else "") + f": {name} is undefined: "
        f"{reason}." for row in rows for name, reason in row.undefined.items()))
    notes.append(f"Verdict: randomization test at alpha = {alpha:g}"
                 + ("; p-values Holm-adjusted over the runs compared with A, per measure." if adjusted else "."))
    if evaluation.rule is not None:
        notes.append(f"qrels: {evaluation.qrels_source}, gold rule: {evaluation.rule}.")
    console.print("[dim]" + "\n".join(safe(n) for n in notes) + "[/]")


# -- gate --------------------------------------------------------------------------------------

_REQUIREMENT = re.compile(
    r"^\s*(?P<measure>\S.*?)\s*(?P<op>>=|<=|==|=|>|<)\s*(?P<value>[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*(?P<pct>%?)\s*$"
)
_OPS = {
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b,
    "<": lambda a, b: a < b,
    "==": lambda a, b: math.isclose(a, b, rel_tol=0, abs_tol=1e-12),
}


def parse_requirement(text: str) -> tuple[str, str, float]:
    """``"Success@5>=0.9"`` -> ("Success@5", ">=", 0.9); ``90%`` means 0.9. UsageError if
    malformed or the measure is unknown."""
    from ragjudge.metrics.registry import parse_measure

    match = _REQUIREMENT.match(text)
    if match is None:
        raise UsageError(
            f"--require {text!r} is not a requirement. Write MEASURE OP VALUE, e.g. "
            "--require 'Success@5>=0.9' or --require 'R@5>=85%' (OP is >=, >, <=, < or ==)."
        )
    measure = match["measure"]
    if measure[-1] in "<>=!":
        raise UsageError(
            f"--require {text!r} is not a requirement: '{measure[-1]}{match['op']}' is no operator. "
            "Write MEASURE OP VALUE with OP one of >=, >, <=, < or ==, e.g. 'RR>=0.5'."
        )
    try:
        parse_measure(measure)
    except UsageError as exc:
        raise UsageError(f"--require {text!r}: {exc}") from None
    op = "==" if match["op"] == "=" else match["op"]
    value = float(match["value"]) / (100.0 if match["pct"] else 1.0)
    return measure, op, value


GATE_EPILOG = (
    "Exit code 0 when every requirement holds for every run, 1 when one fails, 2 for a "
    "malformed requirement or bad input. A requirement is MEASURE OP VALUE with OP one of >=, "
    ">, <=, <, ==; VALUE may be a percentage.\n\n"
    "Examples:\n\n"
    "  ragjudge gate --qrels qrels.trec --run new.trec --require 'Success@5>=0.9'\n\n"
    "  ragjudge gate --db project.db --run hybrid --require 'R@5>=0.85' --require 'RR>=0.6'\n\n"
    "  ragjudge gate --qrels qrels.trec --run new.trec --require 'nDCG@10>=70%' --format json"
)


@app.command(epilog=GATE_EPILOG)
def gate(
    run: Annotated[list[str], typer.Option("--run", "-r", help="The run to check (a file or a project run); repeat to check several.", show_default=False)],
    require: Annotated[list[str], typer.Option("--require", help="A requirement such as 'Success@5>=0.9'; repeat for several.", show_default=False)],
    qrels: QrelsOption = None,
    rule: RuleOption = None,
    name: Annotated[list[str] | None, typer.Option("--name", help="Name of the run(s) in the output.", show_default=False)] = None,
    format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    threshold: ThresholdOption = None,
    averaging: AveragingOption = "judged",
    quiet: QuietOption = False,
) -> None:
    """Release gate: check runs against required values; exit 1 when any requirement fails."""
    from ragjudge.services import evaluation as svc

    _check_format(format, ("table", "json"))
    mode = _queries_mode(averaging)
    requirements = [parse_requirement(text) for text in require]
    measures = list(dict.fromkeys(m for m, _, _ in requirements))
    with Inputs(qrels, rule, threshold) as inputs, progress_bar(quiet) as progress:
        inputs.check_measures(measures)
        runs = inputs.runs(run, name, progress)
        evaluation = svc.evaluate_all(
            inputs.qrels, runs, measures, threshold=inputs.threshold, queries=mode,
            project=inputs.project, rule=inputs.rule, qrels_source=inputs.source,
            progress=progress,
        )
    checks = []
    for run_name in evaluation.run_names:
        aggregate = evaluation.aggregate(run_name)
        for text, (m, op, value) in zip(require, requirements):
            actual = aggregate[m]
            passed = actual is not None and not math.isnan(actual) and _OPS[op](actual, value)
            checks.append({"run": run_name, "requirement": text.strip(), "measure": m, "op": op,
                           "required": value, "actual": actual, "passed": bool(passed)})
    failed = [c for c in checks if not c["passed"]]
    if format == "json":
        print_json({"passed": not failed, "queries": evaluation.n_queries(),
                    "averaging": evaluation.averaging, "rule": evaluation.rule,
                    "threshold": evaluation.threshold, "checks": checks})
    else:
        table = Table(title="gate", title_justify="left")
        multi = len(evaluation.run_names) > 1
        if multi:
            table.add_column("run")
        for col in ("requirement", "actual", "result"):
            table.add_column(col, justify="right" if col == "actual" else "left")
        for c in checks:
            result = "[bold green]pass[/]" if c["passed"] else "[bold red]FAIL[/]"
            table.add_row(*([safe(c["run"])] if multi else []), safe(c["requirement"]),
                          _fmt(c["actual"]), result)
        console.print(table)
        footer = f"{evaluation.n_queries():,} queries; averaging: {evaluation.averaging}"
        if evaluation.rule is not None:
            footer += f"; gold rule: {evaluation.rule}"
        console.print(f"[dim]{safe(footer)}.[/]")
    if failed:
        listed = "; ".join(f"{c['run']}: {c['measure']} = {_fmt(c['actual'])}, required "
                           f"{c['op']} {c['required']:g}" for c in failed)
        raise CheckFailed(f"gate failed: {len(failed)} of {len(checks)} requirements not met ({listed}).")


# -- explain -----------------------------------------------------------------------------------

EXPLAIN_EPILOG = (
    "Shows the computation for one query the way the seeds do: rank, chunk, grade, relevant?, "
    "the running values at each rank, the ideal ranking for nDCG, the final value.\n\n"
    "Examples:\n\n"
    "  ragjudge explain --qrels qrels.trec --run bm25.trec --query q1 -m AP\n\n"
    "  ragjudge explain --db project.db --run hybrid --query q7 -m nDCG@5\n\n"
    "  ragjudge explain --qrels qrels.trec --run bm25.trec --query q1 -m RR --format json"
)


@app.command(epilog=EXPLAIN_EPILOG)
def explain(
    run: Annotated[str, typer.Option("--run", "-r", help="A run file or a project run.", show_default=False)],
    query: Annotated[str, typer.Option("--query", "-q", help="The query id.", show_default=False)],
    measure: Annotated[list[str], typer.Option("--measure", "-m", help="The measure(s) to explain.", show_default=False)],
    qrels: QrelsOption = None,
    rule: RuleOption = None,
    format: Annotated[str, typer.Option("--format", help="text or json.")] = "text",
    threshold: ThresholdOption = None,
) -> None:
    """Step by step: how a measure's value comes about for one query."""
    from ragjudge.services import evaluation as svc

    _check_format(format, ("text", "json"))
    measures = svc.parse_measure_list(measure)
    with Inputs(qrels, rule, threshold) as inputs:
        inputs.check_measures(measures)
        runs = inputs.runs([run])
        (run_name, loaded), = runs.items()
        if not inputs.qrels.for_query(query) and query not in loaded.query_ids:
            raise UsageError(f"--query {query}: neither the qrels nor run {run_name!r} have this query.")
        explanations = [_explain_one(inputs, run_name, loaded, query, m) for m in measures]
        rule_text = inputs.rule
    if format == "json":
        print_json({"run": run_name, "query": query, "rule": rule_text,
                    "explanations": [_explanation_dict(e) for e in explanations]})
        return
    for i, explanation in enumerate(explanations):
        if i:
            console.print()
        console.print(safe(explanation.render()), soft_wrap=True)
    if rule_text is not None:
        console.print(f"[dim]gold rule: {safe(rule_text)}[/]")


def _explain_one(inputs: Inputs, run_name: str, run: Any, query: str, name: str) -> Any:
    from ragjudge.services.evaluation import explain_query

    return explain_query(inputs.project, run_name, inputs.qrels, run, query, name,
                         threshold=inputs.threshold, rule=inputs.rule)


def _explanation_dict(explanation: Any) -> dict[str, Any]:
    to_dict = getattr(explanation, "to_dict", None) or getattr(explanation, "as_dict", None)
    if to_dict is not None:
        return to_dict()
    from dataclasses import asdict, is_dataclass

    if is_dataclass(explanation):
        return asdict(explanation)
    return {"text": explanation.render(), "value": getattr(explanation, "value", None)}
