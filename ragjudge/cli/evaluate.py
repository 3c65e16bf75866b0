"""``ragjudge eval``, ``compare``, ``gate`` and ``explain``: scoring runs against qrels.

Qrels come from a file (``--qrels``) or from the project's gold labels (``--db``, under the
project's aggregation rule or ``--rule``); runs are files or runs stored in the project.
"""

from __future__ import annotations

import math
from decimal import Decimal
import re
from typing import Annotated, Any

import typer
from rich.table import Table

from ragjudge.cli.app import app
from ragjudge.cli.common import (
    BY_VIEWER_HELP,
    MAX_DRAWS,
    MAX_SEED,
    RUNS_AS_NOTE,
    access_of,
    console,
    open_project,
    print_json,
    reads_only,
    safe,
    wide_console,
)
from ragjudge.cli.options import RAW_HELP, RawOption, eval_option, int_option
from ragjudge.cli.progress import progress_bar
from ragjudge.cli.scoring import (  # noqa: F401 - FORMATS and parse_k: this module's names too
    FORMATS,
    Inputs,
    check_format,
    check_raw,
    csv_text,
    csv_value,
    csv_writer,
    fmt_value,
    queries_mode,
    evaluate_and_print,
    parse_k,
    qrels_line,
)
from ragjudge.errors import CheckFailed, UsageError
from ragjudge.numeric import p_value_text
from ragjudge.services.scoring.jsonview import closed_json, gold_json
from ragjudge.safetext import quote

QrelsOption = Annotated[
    str | None,
    eval_option("qrels", help="A qrels file (TREC 'qid 0 chunk grade', or JSONL). Without it "
                 "the project's gold labels are the qrels.", show_default=False),
]
RuleOption = Annotated[
    str | None,
    eval_option("rule", help="How the project's annotators' grades become one gold grade: "
                 "median, majority, mean, min, max, reference (the reference qrels alone, as "
                 "--qrels reads the official file), adjudicated or annotator:NAME (default: the "
                 "project's rule).", show_default=False),
]
CompleteOption = Annotated[
    bool,
    eval_option("complete", help="With --qrels: the file lists every relevant chunk of its "
                 "queries (a complete reference), so every other chunk of those queries that any "
                 "of the runs you evaluate together retrieves is judged not relevant (grade 0): "
                 "Judged@k and bpref count it. A project's complete reference closes its world "
                 "over all its runs."),
]
MeasureOption = Annotated[
    list[str] | None,
    eval_option("measure", help="A measure in ir_measures syntax (P@5, P(rel=2)@5, "
                 "nDCG@10, RR, AP, ...); repeat it or separate with commas.", show_default=False),
]
ThresholdOption = Annotated[
    int | None,
    eval_option("threshold", help="Lowest grade that counts as relevant for binary measures "
                 "(default: the project's, or 1 with --qrels).", show_default=False),
]
QuietOption = Annotated[
    bool, eval_option("quiet", help="No progress bar (it is drawn on standard error "
                       "only when that is a terminal)."),
]
AveragingOption = Annotated[
    str,
    eval_option("averaging", help="judged: mean over every judged query, a query the run "
                 "misses counts 0 (trec_eval -c); run: only the queries the run answers."),
]


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
    "  ragjudge eval --qrels official.qrels --complete --run bm25.trec --run dense.trec\n\n"
    "  ragjudge eval --prels web.prels --prels-form strata --run bm25.trec   # a sampled pool\n"
    "  ragjudge eval --db project.db --tui             # the live evaluation screen\n\n"
    + RUNS_AS_NOTE
)


@app.command("eval", epilog=EVAL_EPILOG)
def eval_command(
    run: Annotated[list[str] | None, eval_option("run", help="A run file (TREC or JSONL) or the name of a run stored in the project; repeat for several. Default with a project: all its runs.", show_default=False)] = None,
    qrels: QrelsOption = None,
    rule: RuleOption = None,
    name: Annotated[list[str] | None, eval_option("name", help="Name of the run(s) in the output, in --run order.", show_default=False)] = None,
    measure: MeasureOption = None,
    per_query: Annotated[bool, eval_option("per_query", help="Also give every query's values.")] = False,
    by: Annotated[str | None, eval_option("by", help="Stratify: one block per value of a query field ('category' or a key of the queries' meta), plus the overall.", show_default=False)] = None,
    queries: Annotated[str | None, eval_option("queries", help="With --qrels and --by: a queries file (JSONL or CSV) giving the field.", show_default=False)] = None,
    format: Annotated[str, eval_option("format", help="table, json or csv.")] = "table",
    curve: Annotated[str | None, eval_option("curve", help="Print Metric@K for K in --k instead (P, R, nDCG, any @k measure), or PR for the 11-point interpolated precision-recall curve.", show_default=False)] = None,
    k: Annotated[str, eval_option("k", help="With --curve: the cutoffs, e.g. 1-20, 1,3,5,10 or 20 (= 1-20).")] = "1-20",
    threshold: ThresholdOption = None,
    averaging: AveragingOption = "judged",
    ci: Annotated[bool, eval_option("ci", help="Add each mean's 95 % bootstrap interval (over queries).")] = False,
    raw: Annotated[bool, eval_option("raw", help=RAW_HELP)] = False,
    tui: Annotated[bool, typer.Option("--tui", help="Open the live evaluation screen of the project (--rule, -m and --threshold apply).")] = False,
    quiet: QuietOption = False,
    complete: CompleteOption = False,
    prels: Annotated[str | None, eval_option("prels", help="A sampled judgment file instead of --qrels: the pool, which pairs were judged and how likely each was to be drawn, for the estimates infAP, statAP, xinfAP, infNDCG and infP@k (their default with --prels). Say its form with --prels-form.", show_default=False)] = None,
    prels_form: Annotated[str | None, eval_option("prels_form", help="strata: sample_eval.pl's 'query iteration chunk stratum grade' (grade -1: pooled, not sampled); probability: the Million Query track's 'query chunk grade method probability'.", show_default=False)] = None,
) -> None:
    """Score runs against qrels: every measure per run, the best per column marked."""
    from ragjudge.services.scoring import files as svc_files

    if tui:
        from ragjudge.tui.evalapp import run_evaluation_app

        if qrels is not None or run or curve is not None or by or per_query or ci or complete \
                or prels is not None or prels_form is not None:
            raise UsageError("--tui shows every run of the project against its gold labels; "
                             "it combines with --rule, -m and --threshold only.")
        with open_project() as project:
            run_evaluation_app(project, rule=rule, measures=svc_files.parse_measure_list(measure) if measure else None,
                               threshold=threshold)
        return
    evaluate_and_print(run=run, qrels=qrels, rule=rule, name=name, measure=measure,
                       per_query=per_query, by=by, queries=queries, format=format, curve=curve,
                       k=k, threshold=threshold, averaging=averaging, ci=ci, quiet=quiet,
                       complete=complete, prels=prels, prels_form=prels_form, raw=raw)


# -- compare -----------------------------------------------------------------------------------

COMPARE_EPILOG = (
    "The first run is the baseline A; every other run is B in turn. Per measure: each run's mean "
    "(as eval gives it under the same --averaging), the mean difference B - A over the paired "
    "queries, its 95 % paired bootstrap interval, the p-value of the test, its effect size and "
    "the verdict ('B better', 'A better', 'within noise') at --alpha.\n\n"
    "Tests (--test): fisher, the paired randomization test (10,000 sign flips; the default); t, "
    "the paired t-test; wilcoxon, the Wilcoxon signed-rank test (effect size: the rank-biserial "
    "correlation, else Cohen's d_z); tukey, Tukey's HSD over all the runs at once, whose p-values "
    "and intervals hold for every pair together (no further correction).\n\n"
    "Paired queries: those both means are over. With --averaging judged (the default) every "
    "judged query, a query a run ranks nothing for counting 0 for it (trec_eval -c), as it "
    "does in its mean: dropping the queries a run fails on would compare it on its easy "
    "queries only, and B - A would no longer be the difference of the means shown. With "
    "--averaging run each mean is over the run's own queries, so the queries both runs answer "
    "are paired and the others left out. A measure undefined on a query (an answer measure "
    "where an answer is missing or not judged) is compared where both runs have it. The output "
    "says how many queries were paired and what became of the others.\n\n"
    "With more than two runs the p-values and the verdict are corrected over the runs "
    "compared with A, per measure (--correction: holm, the default, bonferroni, bh for "
    "Benjamini-Hochberg, or none): the table shows 'p rand' and 'p rand (Holm)'. The bootstrap "
    "interval is not ('95% CI (unadjusted)'), so an interval that excludes 0 may sit beside "
    "'within noise'. Holm's step-down has no matching interval, and Bonferroni-widened "
    "intervals would answer another question.\n\n"
    "Examples:\n\n"
    "  ragjudge compare bm25.trec hybrid.trec --qrels qrels.trec -m R@5 -m RR\n\n"
    "  ragjudge compare bm25 hybrid dense --db project.db     # runs stored in the project\n\n"
    "  ragjudge compare bm25 hybrid dense --test wilcoxon --correction bh\n\n"
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
    test: Annotated[str, typer.Option("--test", help="fisher (randomization), t, wilcoxon or tukey (Tukey's HSD over all the runs).")] = "fisher",
    correction: Annotated[str | None, typer.Option("--correction", help="Over the runs compared with A, per measure: holm (default), bonferroni, bh or none (Tukey's HSD takes none).", show_default=False)] = None,
    alpha: Annotated[float, typer.Option("--alpha", help="Significance level of the verdict.")] = 0.05,
    permutations: Annotated[int, int_option("--permutations", low=1, high=MAX_DRAWS, what="the number of sign flips", help="Sign flips of the randomization test.")] = 10_000,
    resamples: Annotated[int, int_option("--resamples", low=1, high=MAX_DRAWS, what="the number of bootstrap resamples", help="Bootstrap resamples of the interval.")] = 10_000,
    seed: Annotated[int, int_option("--seed", low=0, high=MAX_SEED, what="a seed", help="Random seed (results repeat exactly).")] = 0,
    threshold: ThresholdOption = None,
    averaging: AveragingOption = "judged",
    quiet: QuietOption = False,
    raw: RawOption = False,
) -> None:
    """Is B really better than A? Paired significance tests per measure."""
    reads_only(runs_as_user=True)
    from ragjudge.services.scoring import comparisons as svc_comparisons
    from ragjudge.services.scoring import evaluation as svc_evaluation
    from ragjudge.services.scoring import files as svc_files

    check_format(format)
    check_raw(raw, format)
    mode = queries_mode(averaging)
    if len(runs) < 2:
        raise UsageError("compare needs at least two runs: RUN_A RUN_B [RUN_C ...].")
    if not 0 < alpha < 1:
        raise UsageError(f"--alpha {alpha}: a significance level is between 0 and 1.")
    svc_comparisons.check_options(test, correction, alpha, resamples, permutations, seed)
    measures = svc_files.parse_measure_list(measure)
    with Inputs(qrels, rule, threshold) as inputs, progress_bar(quiet) as progress:
        measures = inputs.default_measures(measures, measure)
        inputs.check_measures(measures)
        loaded = inputs.runs(list(runs), name, progress)
        evaluation = svc_evaluation.evaluate_all(
            inputs.qrels, loaded, measures, threshold=inputs.threshold, queries=mode,
            project=inputs.project, rule=inputs.rule, qrels_source=inputs.source,
            progress=progress, composition=inputs.composition,
        )
    compared = svc_comparisons.compare_baseline(
        evaluation, test=test, correction=correction, alpha=alpha, resamples=resamples,
        permutations=permutations, seed=seed)
    base = evaluation.run_names[0]
    pairings = [svc_evaluation.pairing(evaluation, base, other) for other in evaluation.run_names[1:]]
    if format == "json":
        print_json(_compare_json(evaluation, compared, pairings))
        return
    if format == "csv":
        writer = csv_writer()
        fields = ["measure", "run_a", "run_b", "queries", "mean_a", "mean_b", "difference",
                  "ci_low", "ci_high", "p_randomization", "p_t_test", "p_randomization_adjusted",
                  "p_t_test_adjusted", "verdict", "winner", "test", "correction", "p_value",
                  "p_adjusted", "effect", "effect_size"]
        writer.writerow(fields)
        for row in compared.pairs:
            record = row.as_dict()
            writer.writerow([csv_text(record[f], raw) if isinstance(record[f], str)
                             else record[f] if isinstance(record[f], int) or record[f] is None
                             else csv_value(record[f]) for f in fields])
        return
    _compare_table(evaluation, compared, pairings)


def _compare_json(evaluation, compared, pairings) -> dict[str, Any]:  # noqa: ANN001
    return {
        "baseline": compared.baseline,
        "runs": evaluation.run_names,
        "measures": evaluation.measures,
        "queries": len(pairings[0].queries),
        "pairings": [p.as_dict() for p in pairings],
        "averaging": evaluation.averaging,
        "rule": evaluation.rule,
        "threshold": evaluation.threshold,
        "alpha": compared.alpha,
        "test": compared.test,
        "correction": compared.correction,
        "family": "runs compared with the baseline, per measure",
        "holm": compared.applied == "holm",
        "p_adjustment": compared.applied,
        "interval": {"level": 0.95, "adjusted": compared.test == "tukey",
                     "method": ("Tukey simultaneous" if compared.test == "tukey"
                                else "paired bootstrap percentile")},
        "description": compared.describe(),
        "permutations": compared.permutations,
        "resamples": compared.resamples,
        "seed": compared.seed,
        "comparisons": [row.as_dict() for row in compared.pairs],
        "gold": gold_json(evaluation.composition),
    }


def _compare_headers(compared) -> tuple[str, ...]:  # noqa: ANN001
    """The columns after the measure (and B): which figures are adjusted for the several
    comparisons, and which are not, said in the headers."""
    from ragjudge.services.scoring.comparisons import SHORT_CORRECTIONS, SHORT_TESTS

    short = f"p {SHORT_TESTS[compared.test]}"
    effect = "r (rank-biserial)" if compared.test == "wilcoxon" else "d_z"
    if compared.test == "tukey":
        return ("A", "B", "B - A", "95% CI (Tukey, all pairs)", f"{short} (all pairs)", effect, "verdict")
    if compared.adjusted:
        return ("A", "B", "B - A", "95% CI (unadjusted)", short,
                f"{short} ({SHORT_CORRECTIONS[compared.correction]})", effect, "verdict")
    return ("A", "B", "B - A", "95% CI", short, effect, "verdict")


def _compare_table(evaluation, compared, pairings) -> None:  # noqa: ANN001
    multi = len(evaluation.run_names) > 2
    a_name = evaluation.run_names[0]
    table = Table(title=f"A = {safe(a_name)}" + ("" if multi else f", B = {safe(evaluation.run_names[1])}"),
                  title_justify="left")
    table.add_column("measure", no_wrap=True)
    if multi:
        table.add_column("B", no_wrap=True)
    columns = _compare_headers(compared)
    for col in columns:
        table.add_column(col, justify="left" if col == "verdict" else "right", no_wrap=True)
    paired = {p.run_b: len(p.queries) for p in pairings}
    raw_column = len(columns) == 8
    for row in compared.pairs:
        verdict = row.verdict
        if row.winner is not None:
            style = "bold green" if row.verdict == "B better" else "bold red"
            verdict = f"[{style}]{verdict}[/] ({safe(row.winner)})"
        cells = [safe(row.measure)] + ([safe(row.run_b)] if multi else [])
        cells += [fmt_value(row.mean_a), fmt_value(row.mean_b), f"{row.difference:+.4f}"
                  if not math.isnan(row.difference) else "-",
                  f"[{row.ci_low:+.4f}, {row.ci_high:+.4f}]" if not math.isnan(row.ci_low) else "-"]
        cells += [p_value_text(row.p_value)] + ([p_value_text(row.p_adjusted)] if raw_column else [])
        cells += [_fmt_effect(row.effect_size), verdict]
        table.add_row(*cells)
    wide_console().print(table)
    notes = [f"A and B: each run's mean as eval gives it (averaging: {evaluation.averaging})."]
    for p in pairings:
        notes.append(("B - A, its interval and the tests: " if not multi else f"{p.run_b}: ")
                     + p.describe() + ".")
    notes += list(dict.fromkeys(
        f"{row.measure}" + (f" ({row.run_b})" if multi else "") + f": paired on the {row.queries:,} "
        f"of them where both runs' values are defined." for row in compared.pairs
        if row.queries != paired[row.run_b]))
    for row in compared.pairs:  # each figure that is undefined, grouped by why
        why: dict[str, list[str]] = {}
        for name, reason in row.as_dict().get("undefined", {}).items():
            why.setdefault(reason, []).append(name)
        notes += [f"{row.measure}" + (f" ({row.run_b})" if multi else "") + f": {', '.join(names)} "
                  f"{'is' if len(names) == 1 else 'are'} undefined: {reason}."
                  for reason, names in why.items()]
    notes.append(_verdict_note(compared))
    lines = [safe(n) for n in notes]
    if evaluation.composition is not None:
        lines.append(qrels_line(evaluation))
    console.print("[dim]" + "\n".join(lines) + "[/]")


def _verdict_note(compared) -> str:  # noqa: ANN001
    """Which test the verdict follows, which correction it went through, and whether the
    interval beside it is adjusted too."""
    from ragjudge.metrics.allpairs import CORRECTION_NAMES

    test = f"Test: {compared.test_words()}, at alpha = {compared.alpha:g}"
    if compared.test == "tukey":
        return (f"{test}. Its 95% intervals are simultaneous too, over the "
                f"{compared.tukey_queries:,} queries every run shares: verdict and interval agree.")
    if compared.adjusted:
        from ragjudge.services.scoring.comparisons import SHORT_CORRECTIONS, SHORT_TESTS

        name = CORRECTION_NAMES[compared.correction]
        return (f"{test}; the verdict follows its p-value {name}-corrected over the runs compared "
                f"with A, per measure (p {SHORT_TESTS[compared.test]} "
                f"({SHORT_CORRECTIONS[compared.correction]})); the 95% interval is not adjusted, so "
                "it may exclude 0 beside 'within noise'.")
    if compared.correction != "none" and compared.family_size < 2:
        return f"{test}; one run compared with A: nothing to correct. The 95% interval is a paired bootstrap one."
    return (f"{test}; p-values not corrected (--correction none). The 95% interval is a paired "
            "bootstrap one.")


def _fmt_effect(value: float) -> str:
    if value is None or math.isnan(value):
        return "-"
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    return f"{value:+.2f}"


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
            f"--require {quote(text)} is not a requirement. Write MEASURE OP VALUE, e.g. "
            "--require 'Success@5>=0.9' or --require 'R@5>=85%' (OP is >=, >, <=, < or ==)."
        )
    measure = match["measure"]
    if measure[-1] in "<>=!":
        raise UsageError(
            f"--require {quote(text)} is not a requirement: '{measure[-1]}{match['op']}' is no operator. "
            "Write MEASURE OP VALUE with OP one of >=, >, <=, < or ==, e.g. 'RR>=0.5'."
        )
    try:
        parse_measure(measure)
    except UsageError as exc:
        raise UsageError(f"--require {quote(text)}: {exc}") from None
    op = "==" if match["op"] == "=" else match["op"]
    # a percentage divided in decimal: 36.83% is the number 0.3683, as written (36.83 / 100 in
    # floating point is 0.36829999999999996)
    value = float(Decimal(match["value"]) / (100 if match["pct"] else 1))
    if not math.isfinite(value):
        raise UsageError(f"--require {quote(text)}: {match['value']} is too large a number to "
                         "compare a measure with.")
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
    complete: CompleteOption = False,
) -> None:
    """Release gate: check runs against required values; exit 1 when any requirement fails."""
    reads_only(runs_as_user=True)
    from ragjudge.services.scoring import evaluation as svc_evaluation

    check_format(format, ("table", "json"))
    mode = queries_mode(averaging)
    requirements = [parse_requirement(text) for text in require]
    measures = list(dict.fromkeys(m for m, _, _ in requirements))
    with Inputs(qrels, rule, threshold, complete=complete) as inputs, progress_bar(quiet) as progress:
        inputs.check_measures(measures)
        runs = inputs.runs(run, name, progress)
        evaluation = svc_evaluation.evaluate_all(
            inputs.qrels, runs, measures, threshold=inputs.threshold, queries=mode,
            project=inputs.project, rule=inputs.rule, qrels_source=inputs.source,
            progress=progress, composition=inputs.composition,
        )
        closed = inputs.closed
    checks: list[dict[str, Any]] = []
    for run_name in evaluation.run_names:
        aggregate = evaluation.aggregate(run_name)
        for text, (m, op, value) in zip(require, requirements):
            actual = aggregate[m]
            passed = actual is not None and not math.isnan(actual) and _OPS[op](actual, value)
            checks.append({"run": run_name, "requirement": text.strip(), "measure": m, "op": op,
                           "required": value, "actual": actual, "passed": bool(passed)})
    failed = [c for c in checks if not c["passed"]]
    if format == "json":
        data = {"passed": not failed, "queries": evaluation.n_queries(),
                "averaging": evaluation.averaging, "rule": evaluation.rule,
                "threshold": evaluation.threshold, "checks": checks,
                "gold": gold_json(evaluation.composition)}
        if closed is not None:
            data["closed_world"] = closed_json(closed)
        print_json(data)
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
                          _fmt_against(c["actual"], c["required"]), result)
        console.print(table)
        footer = f"{evaluation.n_queries():,} queries; averaging: {evaluation.averaging}."
        console.print(f"[dim]{safe(footer)}\n{qrels_line(evaluation, closed)}[/]")
    if failed:
        listed = "; ".join(f"{c['run']}: {c['measure']} = {_fmt_against(c['actual'], c['required'])}, "
                           f"required {c['op']} {_fmt_required(c['required'])}" for c in failed)
        raise CheckFailed(f"gate failed: {len(failed)} of {len(checks)} requirements not met ({listed}).")


def _fmt_against(actual: float | None, required: float) -> str:
    """``actual`` with four decimals, or with as many more as it takes to tell it apart from
    ``required``: 0.339977 against 0.34 is ``0.339977``, not ``0.3400``; two numbers a last
    bit apart are told apart by their 17 significant digits."""
    if actual is None or math.isnan(actual) or actual == required:
        return fmt_value(actual)
    for digits in range(4, 18):
        text = f"{actual:.{digits}f}"
        if text != f"{required:.{digits}f}":
            return text
    return _fmt_required(actual)


def _fmt_required(value: float) -> str:
    """A required value as its shortest exact decimal (``0.34``, ``0.3682195510499067``), never
    rounded: the message must not show a threshold other than the one checked."""
    return repr(float(value))


# -- explain -----------------------------------------------------------------------------------

EXPLAIN_EPILOG = (
    "Shows the computation for one query as a worked example: rank, chunk, grade, relevant?, "
    "the running values at each rank, the ideal ranking for nDCG, the final value. With the "
    "project's gold or runs, in a blind project, an annotator who is not a lead sees the "
    "grades of the pairs they have judged only: every other rank says 'not shown: you have not "
    "judged this pair', and the sums and the ideal ranking are left out.\n\n"
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
    by: Annotated[str | None, typer.Option("--by", help=BY_VIEWER_HELP)] = None,
) -> None:
    """Step by step: how a measure's value comes about for one query."""
    reads_only()
    from ragjudge.services.scoring import files as svc_files

    check_format(format, ("text", "json"))
    measures = svc_files.parse_measure_list(measure)
    with Inputs(qrels, rule, threshold, by=by) as inputs:
        inputs.check_measures(measures)
        runs = inputs.runs([run])
        (run_name, loaded), = runs.items()
        if (not inputs.qrels.for_query(query) and query not in loaded.query_ids
                and not _answer_judged(inputs, query)):
            answers = ", and no answer to it is judged" if inputs.project is not None else ""
            raise UsageError(f"--query {quote(query)}: neither the qrels nor run {quote(run_name)} "
                             f"have this query{answers}.")
        access = None if inputs.project is None else access_of(inputs.project, by)
        explanations = [_explain_one(inputs, run_name, loaded, query, m, access) for m in measures]
        rule_text, composition = inputs.rule, inputs.composition
    if format == "json":
        print_json({"run": run_name, "query": query, "rule": rule_text,
                    "explanations": [_explanation_dict(e) for e in explanations],
                    "gold": gold_json(composition)})
        return
    for i, explanation in enumerate(explanations):
        if i:
            console.print()
        console.print(safe(explanation.render()), soft_wrap=True)
    if composition is not None:
        console.print(f"[dim]{safe(composition.describe())}[/]")


def _answer_judged(inputs: Inputs, query: str) -> bool:
    """Whether an answer to ``query`` (of any run) is judged in the project: its answer
    measures are explained there, in a project that judges answers and grades no chunk."""
    if inputs.project is None:
        return False
    from ragjudge.services.scoring.answers import judged_answer_queries

    with inputs.project.connect() as connection:
        return bool(judged_answer_queries(connection, inputs.rule or "", [query]))


def _explain_one(inputs: Inputs, run_name: str, run: Any, query: str, name: str,
                 access: Any) -> Any:
    from ragjudge.services.scoring.evaluation import explain_query

    return explain_query(inputs.project, run_name, inputs.qrels, run, query, name,
                         threshold=inputs.threshold, rule=inputs.rule, access=access)


def _explanation_dict(explanation: Any) -> dict[str, Any]:
    to_dict = getattr(explanation, "to_dict", None) or getattr(explanation, "as_dict", None)
    if to_dict is not None:
        return to_dict()
    from dataclasses import asdict, is_dataclass

    if is_dataclass(explanation) and not isinstance(explanation, type):
        return asdict(explanation)
    return {"text": explanation.render(), "value": getattr(explanation, "value", None)}
