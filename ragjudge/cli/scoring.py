"""What ``ragjudge eval`` does once its options are known: read the qrels and runs (files or
the project), evaluate, and print the result as a table, JSON or CSV, or draw a curve.

Neither typer nor Rich is imported here until they are needed: the typer command
(:mod:`ragjudge.cli.evaluate`) and the lean path for files (:mod:`ragjudge.cli.lean`) both call
:func:`evaluate_and_print`, so that both print the same bytes; Rich loads only to draw a table.
``compare``, ``gate`` and ``explain`` share :class:`Inputs` and the number formats.
"""

from __future__ import annotations

import csv
import math
import re
import sys
from typing import TYPE_CHECKING, Any, Literal, cast

from ragjudge.cli.base import access_of, check_raw, db_given, open_project, print_json, reads_only, safe
from ragjudge.cli.progress import progress_bar
from ragjudge.errors import UsageError
from ragjudge.numeric import MAX_GRADE, short_int
from ragjudge.safetext import for_terminal, natural_key, quote, spreadsheet_safe
from ragjudge.services.scoring.jsonview import closed_json, evaluation_json, gold_json, undefined_counts

if TYPE_CHECKING:
    from ragjudge.metrics.sampled import PoolSample
    from ragjudge.services.access.rights import Access
    from ragjudge.services.gold.gold import Composition
    from ragjudge.services.project.database import Project

FORMATS = ("table", "json", "csv")


# -- inputs ------------------------------------------------------------------------------------


class Inputs:
    """Qrels, runs and settings of one command, from files and/or the project."""

    def __init__(self, qrels_file: str | None, rule: str | None, threshold: int | None,
                 *, complete: bool = False, by: str | None = None, prels: str | None = None,
                 prels_form: str | None = None, opened: Any = None) -> None:
        self.project: Project | None = None
        self.opened = opened
        """the project of ``--db`` already opened (the lean path's
        :class:`~ragjudge.services.project.lite.LiteProject`), else None: opened here"""
        self.by = by
        """who runs the command (``--by``; None: $RAGJUDGE_USER, else the login name)"""
        self.composition: Composition | None = None
        """what the project's gold is made of (None for a qrels file)"""
        self.complete = complete
        """``--complete``: the file's queries closed over the runs read (:meth:`runs`)"""
        self.closed: tuple[int, int] | None = None
        """with ``complete``, once the runs are read: (queries closed, implied pairs added)"""
        self.sample: PoolSample | None = None
        """the pool sample of a ``--prels`` file (the sampled estimators read it)"""
        self.prels_form = prels_form
        self.access: Access | None = None
        """who reads the project's gold (None for a qrels file)"""
        try:
            self._load(_prels_as_qrels(qrels_file, prels, prels_form, rule, complete), rule,
                       threshold, prels_form)
        except BaseException:
            self.__exit__()
            raise

    def _load(self, qrels_file: str | None, rule: str | None, threshold: int | None,
              prels_form: str | None = None) -> None:
        from ragjudge.services.scoring import evaluation as svc_evaluation
        from ragjudge.services.scoring import files as svc_files

        if qrels_file == "-":
            raise UsageError(f"--{'prels' if prels_form else 'qrels'} -: eval, compare, gate and "
                             "explain read qrels from a file, not from standard input; save it "
                             "to a file first.")
        if qrels_file is not None:
            if rule is not None:
                raise UsageError("--rule chooses how a project's labels become qrels; it does not "
                                 "apply to a --qrels file.")
            if prels_form is not None:
                from ragjudge.metrics.prels import read_prels

                svc_files.check_file(qrels_file, "prels")
                form = cast(Literal["strata", "probability"], prels_form)  # one of PRELS_FORMS, checked
                self.qrels, self.sample = read_prels(qrels_file, form)
            else:
                notes: list[str] = []
                self.qrels = svc_files.load_qrels_file(qrels_file, notes=notes)
                for note in notes:  # on stderr: the JSON or CSV on stdout stays the data alone
                    print(for_terminal(f"{qrels_file}: {note}"), file=sys.stderr)
            self.rule = None
            self.source = qrels_file
            self.threshold = 1 if threshold is None else threshold
            if db_given():
                self.project = open_project()
        else:
            if self.complete:
                raise UsageError("--complete closes the world of a --qrels file; a project's "
                                 "reference says itself whether it is complete ('ragjudge import "
                                 "qrels FILE --reference --complete').")
            self.project = open_project() if self.opened is None else self.opened
            self.access = access_of(self.project, self.by)
            self.access.require_readable_rule(rule)
            found = svc_evaluation.project_gold(self.project, rule)
            self.qrels, self.rule = found.qrels(), found.composition.rule
            self.composition = found.composition
            self.source = f"project {self.project.shown_db}"
            self.threshold = self.project.scale.threshold if threshold is None else threshold
        if not 0 <= self.threshold <= MAX_GRADE:
            raise UsageError(f"--threshold {short_int(self.threshold)}: a grade threshold is a "
                             f"grade from 0 to {MAX_GRADE:,}.")
        scale = self.project.scale if self.project is not None and qrels_file is None else None
        self.max_grade = scale.max if scale is not None else None
        if scale is not None and self.threshold > scale.max:
            raise UsageError(
                f"--threshold {self.threshold} is above the project's top grade "
                f"({scale.describe()}): nothing could count as relevant."
            )

    def default_measures(self, measures: list[str], asked: list[str] | None) -> list[str]:
        """``measures``, or when none was asked the project's scorecard (with its answer
        measures once answers are judged: :func:`ragjudge.services.scoring.answers.default_measures`),
        or a prels file's estimates (:data:`ragjudge.services.scoring.sampled.PRELS_MEASURES`)."""
        if not asked and self.prels_form is not None:
            from ragjudge.services.scoring.sampled import PRELS_MEASURES

            return list(PRELS_MEASURES[self.prels_form])
        if asked or self.project is None:
            return measures
        from ragjudge.services.scoring.answers import default_measures

        return default_measures(self.project)

    def check_measures(self, measures: list[str]) -> None:
        """A relevance threshold (``P(rel=9)@5``) above the project's scale is a mistake."""
        if self.max_grade is None or self.project is None:
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
        from ragjudge.services.scoring import evaluation as svc_evaluation
        from ragjudge.services.scoring import files as svc_files

        stored = None
        if self.project is not None:  # runs from files alone never load the database layer
            from ragjudge.services.scoring.answers import scored_run, scored_run_names

            stored = scored_run_names(self.project)  # rankings, and runs of answers only
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
        specs = svc_evaluation.resolve_runs(texts, names, project_runs=stored)
        runs = {}
        for done, spec in enumerate(specs):
            if progress is not None:
                progress(done, len(specs), "reading runs", "runs")
            if spec.path is None:  # a stored run: resolve_runs names one only from a project's runs
                assert self.project is not None
                run = scored_run(self.project, spec.text)
                run.name = spec.name
            else:
                run = svc_files.load_run_file(spec.path, spec.name)
            runs[spec.name] = run
        if progress is not None:
            progress(len(specs), len(specs), "reading runs", "runs")
        if self.complete and self.closed is None:
            self.qrels, implied = svc_files.close_qrels(self.qrels, runs.values())
            self.closed = (self.qrels.n_queries, implied)
        return runs


PRELS_FORMS = ("strata", "probability")


def _prels_as_qrels(qrels: str | None, prels: str | None, form: str | None, rule: str | None,
                    complete: bool) -> str | None:
    """The judgments file to read: ``--qrels``, or ``--prels`` once its options are checked."""
    if prels is None and form is None:
        return qrels
    if prels is None:
        raise UsageError(f"--prels-form {quote(form)} says how to read a --prels file: name the "
                         "file with --prels FILE.")
    if qrels is not None:
        raise UsageError("--qrels and --prels both give the judgments: give one (--prels for a "
                         "sampled judgment file, --qrels for plain qrels).")
    if form not in PRELS_FORMS:
        raise UsageError(
            f"--prels {quote(prels)}{' --prels-form ' + quote(form) if form else ''}: say which "
            "form the file has with --prels-form strata (sample_eval.pl's 'query iteration "
            "chunk stratum grade', grade -1 pooled but not sampled) or probability (the Million "
            "Query track's 'query chunk grade method probability').")
    if rule is not None:
        raise UsageError("--rule chooses how a project's labels become qrels; it does not apply "
                         "to a --prels file.")
    if complete:
        raise UsageError("--complete closes the world of a --qrels file; a --prels file lists its "
                         "pool itself (an unlisted chunk was never pooled).")
    return prels


def check_format(value: str, choices: tuple[str, ...] = FORMATS) -> str:
    if value not in choices:
        raise UsageError(f"--format {value}: use {', '.join(choices[:-1])} or {choices[-1]}.")
    return value


def queries_mode(averaging: str) -> str:
    if averaging not in ("judged", "run"):
        raise UsageError(f"--averaging {averaging}: use judged or run.")
    return averaging


def fmt_value(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def csv_writer() -> Any:
    return csv.writer(sys.stdout, lineterminator="\n")


def csv_text(value: object, raw: bool) -> str:
    """A text cell of a CSV output (a run, measure or query name): made safe for spreadsheets
    (:func:`ragjudge.safetext.spreadsheet_safe`) unless ``raw`` (``--raw``)."""
    return str(value) if raw else spreadsheet_safe(str(value))


def per_query_values(evaluation: Any, run: str, stratum: str | None = None) -> dict[str, dict[str, float]]:
    """Each query's values of ``run``, queries in natural order (q2 before q10), as the tables,
    the CSV and the JSON list them (:meth:`Evaluation.per_query` orders them)."""
    return evaluation.per_query(run, stratum)


def csv_value(value: float | None) -> str:
    if value is None or (isinstance(value, float) and (math.isnan(value) or math.isinf(value))):
        return ""
    return repr(float(value))


# -- eval --------------------------------------------------------------------------------------


def evaluate_and_print(
    *,
    run: list[str] | None = None,
    qrels: str | None = None,
    rule: str | None = None,
    name: list[str] | None = None,
    measure: list[str] | None = None,
    per_query: bool = False,
    by: str | None = None,
    queries: str | None = None,
    format: str = "table",
    curve: str | None = None,
    k: str = "1-20",
    threshold: int | None = None,
    averaging: str = "judged",
    ci: bool = False,
    quiet: bool = False,
    complete: bool = False,
    prels: str | None = None,
    prels_form: str | None = None,
    raw: bool = False,
    opened: Any = None,
) -> None:
    """``ragjudge eval`` without ``--tui``, its options as the command line gave them
    (``opened``: the project, opened by the lean path; else ``--db``'s is opened in full)."""
    reads_only(runs_as_user=True)
    from ragjudge.services.scoring import evaluation as svc_evaluation
    from ragjudge.services.scoring import files as svc_files

    check_format(format)
    check_raw(raw, format)
    mode = queries_mode(averaging)
    if curve is not None:
        if by or per_query or ci or measure:
            raise UsageError("--curve draws one measure over K; it does not combine with -m, "
                             "--by, --per-query or --ci.")
        with Inputs(qrels, rule, threshold, complete=complete, prels=prels,
                    prels_form=prels_form, opened=opened) as inputs:
            runs = inputs.runs(run, name)
            _curve(inputs, runs, curve, k, format, mode, raw)
        return
    measures = svc_files.parse_measure_list(measure)
    if queries is not None and by is None:
        raise UsageError("--queries gives the field for --by; name the field with --by.")
    with Inputs(qrels, rule, threshold, complete=complete, prels=prels,
                prels_form=prels_form, opened=opened) as inputs, progress_bar(quiet) as progress:
        measures = inputs.default_measures(measures, measure)
        inputs.check_measures(measures)
        runs = inputs.runs(run, name, progress)
        strata = None
        if by is not None:
            if queries is not None:
                strata = svc_evaluation.file_strata(queries, by)
            elif inputs.project is not None:
                strata = svc_evaluation.project_strata(inputs.project, by)
            else:
                raise UsageError(f"--by {by} needs the queries' fields: use a project (--db) or "
                                 "give a queries file with --queries.")
        evaluation = svc_evaluation.evaluate_all(
            inputs.qrels, runs, measures, threshold=inputs.threshold, queries=mode,
            project=inputs.project, rule=inputs.rule, qrels_source=inputs.source,
            strata=strata, by=by, progress=progress, composition=inputs.composition,
            sample=inputs.sample, reader=inputs.access,
        )
        closed = inputs.closed
    if format == "json":
        print_json(evaluation_json(evaluation, per_query, ci, closed))
    elif format == "csv":
        _eval_csv(evaluation, per_query, ci, raw)
        if evaluation.composition is not None or closed is not None:
            # on standard error: a CSV reader takes every line of the file as a row
            sys.stderr.write(qrels_line(evaluation, closed, plain=True) + "\n")
        hidden = svc_evaluation.hidden_sentence(evaluation)
        if hidden is not None and (per_query or evaluation.hidden_strata):
            sys.stderr.write(hidden + "\n")
    else:
        _eval_tables(evaluation, per_query, ci, closed)


def qrels_line(evaluation: Any, closed: tuple[int, int] | None = None, *, plain: bool = False) -> str:
    """Where the qrels come from, for a footer: the gold's composition for a project
    (:meth:`~ragjudge.services.gold.gold.Composition.describe`), the file otherwise (and with
    ``--complete`` the pairs its closed world added). ``plain``: for standard error, not Rich."""
    from ragjudge.safetext import visible

    composition = evaluation.composition
    if composition is not None:
        text = composition.describe()
    else:
        text = f"qrels: {evaluation.qrels_source}"
        if closed is not None:
            text += (f" (complete: {closed[1]:,} unlisted chunks the runs retrieve on its "
                     f"{closed[0]:,} queries judged not relevant)")
    return visible(text) if plain else safe(text)


def _eval_csv(evaluation, per_query: bool, ci: bool, raw: bool = False) -> None:  # noqa: ANN001
    writer = csv_writer()
    stratified = evaluation.by is not None
    header = ["run"] + (["stratum"] if stratified else []) + ["query"] + list(evaluation.measures)
    writer.writerow([csv_text(cell, raw) for cell in header])
    blocks: list[str | None] = [None] + (list(evaluation.strata) if stratified else [])
    for stratum in blocks:
        lead = [] if not stratified else [csv_text("all" if stratum is None else stratum, raw)]
        for name in evaluation.run_names:
            run = csv_text(name, raw)
            aggregate = evaluation.aggregate(name, stratum)
            writer.writerow([run, *lead, "all"] + [csv_value(aggregate[m]) for m in evaluation.measures])
            if ci:
                intervals = evaluation.intervals(name, stratum=stratum)
                writer.writerow([run, *lead, "ci95_low"] + [csv_value(intervals[m][1]) for m in evaluation.measures])
                writer.writerow([run, *lead, "ci95_high"] + [csv_value(intervals[m][2]) for m in evaluation.measures])
            if per_query and stratum is None:
                for qid, values in per_query_values(evaluation, name).items():
                    writer.writerow([run, *lead, csv_text(qid, raw)]
                                    + [csv_value(values[m]) for m in evaluation.measures])


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
    from ragjudge.cli.common import console

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
    from rich.table import Table

    names = evaluation.run_names
    rows = {n: evaluation.aggregate(n, stratum) for n in names}
    intervals = {n: evaluation.intervals(n, stratum=stratum) for n in names} if ci else {}
    first_width = max([len(n) for n in names] + [3]) + 3
    tables: list[Any] = []
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
                text = fmt_value(value)
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




def _footer(evaluation, n_runs: int, closed: tuple[int, int] | None = None) -> str:  # noqa: ANN001
    lines = [f"{evaluation.n_queries():,} queries; averaging: {evaluation.averaging}."]
    left_out: dict[str, set[int]] = {}
    for name in evaluation.run_names:
        for measure, n in undefined_counts(evaluation, name, None).items():
            left_out.setdefault(measure, set()).add(n)
    for measure, counts in left_out.items():
        counted = "/".join(str(c) for c in sorted(counts))
        lines.append(f"{measure}: left out of the mean for {counted} of {evaluation.n_queries():,} queries, "
                     f"where it is undefined ({_reasons_text(evaluation, measure) or _why_undefined(evaluation, measure)}).")
    if evaluation.sample is not None:
        lines.append(evaluation.sample["text"] + ".")
    lines = [safe(line) for line in lines]
    lines.append(qrels_line(evaluation, closed))
    lines.append(f"relevant from grade {evaluation.threshold} (nDCG uses every grade).")
    if n_runs > 1:
        lines.append("* best value in its column.")
    return "\n".join(lines)


def _why_undefined(evaluation, measure: str) -> str:  # noqa: ANN001
    """Why ``measure`` is undefined on some queries: what they lack, and for a measure of the
    relevance grades, the measures a query without grades is evaluated for."""
    import numpy as np

    from ragjudge.metrics.registry import parse_measure

    if parse_measure(measure).needs:
        return _nothing_to_count(measure)
    scored: list[str] = []  # the measures of extras defined where this one is not
    for result in evaluation.results.values():
        labels = list(result.labels)
        if measure not in labels:
            continue
        missing = np.isnan(result.values[:, labels.index(measure)])
        for j, other in enumerate(labels):
            needs = parse_measure(other).needs
            if needs and other not in scored and (~np.isnan(result.values[missing, j])).any():
                scored.append(other)
    if not scored:
        return "the query has no relevance grade"
    kinds = list(dict.fromkeys(k for m in scored for k in parse_measure(m).needs))
    return (f"the query has no relevance grade, only {' and '.join(_KIND_WORDS.get(k, k) for k in kinds)}: "
            f"it is evaluated for {', '.join(scored)}")


_KIND_WORDS = {"citations": "the run's cited chunks", "answers": "the run's judged answer",
               "facet_links": "facets"}


def _reasons_text(evaluation, measure: str, shown: int = 8) -> str:  # noqa: ANN001
    """Each left-out query of ``measure`` with why (``Evaluation.left_out``), grouped by
    reason — "q2, q3: the run has no answer; q9: the answer is not judged yet" — and by run
    when the runs differ; empty when no reason is known."""
    per_run = {name: evaluation.left_out.get(name, {}).get(measure, {})
               for name in evaluation.run_names}
    texts = {}
    for name, reasons in per_run.items():
        grouped: dict[str, list[str]] = {}
        for query, why in reasons.items():
            grouped.setdefault(why, []).append(query)
        texts[name] = "; ".join(
            ", ".join(sorted(qs, key=natural_key)[:shown]) + (f" and {len(qs) - shown:,} more" if len(qs) > shown else "")
            + f": {why}" for why, qs in grouped.items())
    if not any(texts.values()):
        return ""
    if len(set(texts.values())) == 1:
        return next(iter(texts.values()))
    return " · ".join(f"{name}: {text}" for name, text in texts.items() if text)


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
    return "the query has " + " or ".join(lacks) if lacks else "the query lacks what it counts"


def _eval_tables(evaluation, per_query: bool, ci: bool,  # noqa: ANN001
                 closed: tuple[int, int] | None = None) -> None:
    from rich.table import Table

    from ragjudge.cli.common import console

    if evaluation.by is not None:
        for stratum, qids in evaluation.strata.items():
            title = f"{evaluation.by} = {stratum} ({len(qids)} queries)"
            console.print(*_aggregate_tables(evaluation, stratum, ci, safe(title)))
        console.print(*_aggregate_tables(evaluation, None, ci,
                                         f"all queries ({evaluation.n_queries()})"))
    else:
        console.print(*_aggregate_tables(evaluation, None, ci, None))
    console.print(f"[dim]{_footer(evaluation, len(evaluation.run_names), closed)}[/]")
    if per_query:
        for name in evaluation.run_names:
            per_query_rows = per_query_values(evaluation, name)
            if not per_query_rows:  # every query hidden from a blind reader: said below
                continue
            first_width = max([len(q) for q in per_query_rows] + [5]) + 3
            for g, group in enumerate(_column_groups(evaluation.measures, first_width, 7)):
                if g == 0:
                    console.print(f"[bold]{safe(name)}: per query[/]")
                table = Table()
                table.add_column("query", no_wrap=True)
                for m in group:
                    table.add_column(safe(m), justify="right", no_wrap=True)
                for qid, values in per_query_rows.items():
                    table.add_row(safe(qid), *[fmt_value(values[m]) for m in group])
                console.print(table)
    from ragjudge.services.scoring.evaluation import hidden_sentence

    hidden = hidden_sentence(evaluation)
    if hidden is not None and (per_query or evaluation.hidden_strata):
        console.print(f"[dim]{safe(hidden)}[/]")


# -- curves ------------------------------------------------------------------------------------



MAX_CURVE_CUTOFFS = 10_000
"""The most cutoffs one Metric@K curve has. Each cutoff is a pass of the measure over every
query of every run, and a row of the table: on the demo (3 runs, 45 queries) ``--k 1-10000``
takes about 4 s of processor time as a table, 2 s as CSV; ``1-100000`` took minutes. A deep
curve is a sparse list (``1,10,100,1000,100000``): any K up to ``MAX_CUTOFF`` may be in it."""


def parse_k(text: str) -> list[int]:
    """``1-20`` -> 1..20; ``1,3,5,10``; ``20`` -> 1..20. Every K is checked against
    ``MAX_CUTOFF``, and their count against :data:`MAX_CURVE_CUTOFFS`, before the list of
    cutoffs is built."""
    from ragjudge.numeric import MAX_CUTOFF, parse_integer

    text = text.strip()
    if re.fullmatch(r"[0-9]+", text):
        parts, span = [text], True
    elif re.fullmatch(r"[0-9]+\s*-\s*[0-9]+", text):
        parts, span = [x.strip() for x in text.split("-")], True
    else:
        parts, span = [x.strip() for x in text.split(",") if x.strip()], False
    parsed = [parse_integer(x) for x in parts]
    numbers = [k for k in parsed if k is not None and 1 <= k <= MAX_CUTOFF]
    if (not numbers or len(numbers) != len(parsed)
            or (len(numbers) == 2 and span and numbers[0] > numbers[1])):
        raise UsageError(f"--k {_short(text)}: give cutoffs as a range 1-20, a list 1,3,5,10 or "
                         f"a largest K such as 20, each from 1 to {MAX_CUTOFF:,}.")
    if span:
        lo, hi = (1, numbers[0]) if len(numbers) == 1 else numbers
        _check_count(text, hi - lo + 1)
        return list(range(lo, hi + 1))
    ks = sorted(set(numbers))
    _check_count(text, len(ks))
    return ks


def _check_count(text: str, count: int) -> None:
    if count > MAX_CURVE_CUTOFFS:
        raise UsageError(f"--k {_short(text)}: that is {count:,} cutoffs, and a curve has at most "
                         f"{MAX_CURVE_CUTOFFS:,}; ask for a shorter range, or for a few deep "
                         "cutoffs as a list such as 1,10,100,1000,10000,100000.")


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _curve(inputs: Inputs, runs: dict[str, Any], curve: str, k_text: str, format: str, mode: str,
           raw: bool = False) -> None:
    from ragjudge.metrics.curves import metric_at_k, pr_curve
    from ragjudge.metrics.registry import parse_measure
    from ragjudge.services.scoring.evaluation import project_extras

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
            extras = project_extras(inputs.project, name, inputs.qrels, run, [probe],
                                     inputs.threshold, mode, inputs.rule, sample=inputs.sample)
            curves[name] = metric_at_k(inputs.qrels, run, probe, ks, threshold=inputs.threshold,
                                       queries=mode, extras=extras)
        x_label, y_label, label = "k", "value", base
    first = next(iter(curves.values()))
    xs = [int(x) if x_label == "k" else float(x) for x in first.x.tolist()]
    values = {name: c.y.tolist() for name, c in curves.items()}
    if format == "json":
        data: dict[str, Any] = {
            "curve": label, "x": x_label, x_label: xs, "queries": len(first.query_ids),
            "averaging": first.averaging, "threshold": inputs.threshold, "rule": inputs.rule,
            "runs": {name: {y_label: v} for name, v in values.items()},
            "gold": gold_json(inputs.composition),
        }
        if inputs.closed is not None:
            data["closed_world"] = closed_json(inputs.closed)
        if is_pr:  # the trapezoidal area of the mean curve: the mean AUC_PR
            for name, c in curves.items():
                data["runs"][name]["area"] = c.area
        print_json(data)
        return
    if format == "csv":
        writer = csv_writer()
        writer.writerow([x_label, *(csv_text(name, raw) for name in values)])
        for i, x in enumerate(xs):
            writer.writerow([x, *[csv_value(v[i]) for v in values.values()]])
        if inputs.composition is not None:
            from ragjudge.safetext import visible

            sys.stderr.write(visible(inputs.composition.describe()) + "\n")
        return
    from rich.table import Table

    from ragjudge.cli.common import console

    title = "interpolated precision at recall" if is_pr else f"{base}@K"
    console.print(f"[bold]{safe(title)}[/]")
    table = Table()
    table.add_column("at" if is_pr else x_label, justify="left" if is_pr else "right")
    for name in values:
        table.add_column(safe(name), justify="right")
    for i, x in enumerate(xs):
        # every row of the PR table says what it is: a recall level, then the area
        table.add_row(f"recall {x:.1f}" if is_pr else f"{x:g}", *[fmt_value(v[i]) for v in values.values()])
    if is_pr:
        table.add_row("area under the curve (AUC_PR)", *[fmt_value(c.area) for c in curves.values()],
                      style="dim")
    console.print(table)
    if is_pr:
        console.print("[dim]recall r: the precision interpolated at recall r (the highest precision "
                      "at any recall ≥ r), averaged over the queries; area under the curve: the "
                      "trapezoidal area under that mean curve over the 11 levels, the mean "
                      "AUC_PR.[/]")
    console.print(f"[dim]{len(first.query_ids):,} queries; averaging: {safe(first.averaging)}[/]")
    if inputs.composition is not None:
        console.print(f"[dim]{safe(inputs.composition.describe())}[/]")
    elif inputs.closed is not None:
        console.print(f"[dim]complete: {inputs.closed[1]:,} unlisted chunks the runs retrieve on the "
                      f"{inputs.closed[0]:,} queries of {safe(inputs.source)} judged not relevant[/]")
