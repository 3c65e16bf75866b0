"""``ragjudge agree``, ``assign``, ``disputes``, ``adjudicate`` and ``quality``: checking labels
made by several annotators."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from ragjudge.cli.app import app
from ragjudge.cli.common import (
    BY_LEAD_HELP,
    BY_VIEWER_HELP,
    MAX_DEPTH,
    RUNS_AS_NOTE,
    access_of,
    MAX_LIMIT,
    MAX_SEED,
    console,
    err_console,
    open_project,
    print_json,
    reads_only,
    safe,
)
from ragjudge.cli.options import int_option
from ragjudge.cli.progress import progress_bar
from ragjudge.errors import UsageError
from ragjudge.numeric import MAX_GRADE

AGREE_EPILOG = (
    "Units are (query, chunk) pairs; each annotator's current grade counts. Statistics that "
    "cannot be computed (e.g. every grade the same: 0/0) are shown as undefined with the reason, "
    "and are null in JSON with the reason under \"undefined\".\n\n"
    "Examples:\n\n"
    "  ragjudge agree                                   # the project's annotators\n\n"
    "  ragjudge agree --by annotator\n\n"
    "  ragjudge agree --labels labels.jsonl --scale 0-3 --format json\n\n"
    "  ragjudge agree --verdict                         # does disagreement change which run wins?\n\n"
    "  ragjudge agree --answers                         # on judgments of generated answers\n\n"
    "  ragjudge agree --answers --labels answer-labels.jsonl\n\n"
    "With --answers the units are (query, run, nugget) for nugget support and (query, run, "
    "sentence, chunk) for citation support, on the scale 0 none, 1 partial, 2 full.\n\n"
    + RUNS_AS_NOTE + " The disputed pairs list each annotator's grade: in a blind project an "
    "annotator who is not a lead sees those of the pairs they judged."
)


def _scale_option(scale: str | None) -> tuple[int, int] | None:
    if scale is None:
        return None
    from ragjudge.models import Scale

    try:
        parsed = Scale.parse(scale)
    except ValueError as exc:
        raise UsageError(f"--scale {scale}: {str(exc).splitlines()[-1]}") from None
    return parsed.min, parsed.max


def _check_choice(option: str, value: str | None, choices: tuple[str, ...]) -> None:
    if value is not None and value not in choices:
        raise UsageError(f"{option} {value}: use {' or '.join(choices)}.")


@app.command(epilog=AGREE_EPILOG)
def agree(
    labels: Annotated[str | None, typer.Option("--labels", help="A labels JSONL/CSV file (query_id, chunk_id, annotator, grade) to check without a project.")] = None,
    scale: Annotated[str | None, typer.Option("--scale", help="The declared scale: binary or MIN-MAX (default: the project's; for --labels the lowest to highest grade seen).")] = None,
    by: Annotated[str | None, typer.Option("--by", help="Also break down by query or annotator.")] = None,
    format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    verdict: Annotated[bool, typer.Option("--verdict", help="Score every run with each annotator's labels as qrels and compare the rankings (project only).")] = False,
    measures: Annotated[str | None, typer.Option("--measures", help="With --verdict: comma-separated measures (default: AP,nDCG@10,P@5,RR).")] = None,
    limit: Annotated[int, int_option("--limit", low=0, high=MAX_LIMIT, what="the number of pairs to list", help="Disputed pairs to list in the table.")] = 10,
    answers: Annotated[bool, typer.Option("--answers", help="Agreement on the judgments of generated answers (nugget support and citation support) instead of the labels; --labels then reads an answer-labels file.")] = False,
) -> None:
    """Agreement between annotators: percent agreement, Cohen's and Fleiss' kappa,
    Krippendorff's alpha, Gwet's AC1, binarised agreement and disputed pairs."""
    reads_only(runs_as_user=True)
    from ragjudge.services.agreement import ratings as svc_ratings
    from ragjudge.services.agreement import views as svc_views

    _check_choice("--format", format, ("table", "json"))
    _check_choice("--by", by, ("query", "annotator"))
    if answers:
        _agree_on_answers(labels, scale=scale, by=by, format=format, verdict=verdict, limit=limit)
        return
    declared = _scale_option(scale)
    notes: list[str] = []
    verdict_data = None
    llm_data = None
    if labels is not None:
        if verdict:
            raise UsageError("--verdict needs a project (runs to score); it does not apply to --labels.")
        from ragjudge.formats import read_records, source_name

        name = source_name(labels) if labels != "-" else "standard input"
        records = read_records("labels", labels)
        ratings, inferred = svc_ratings.ratings_from_records(records, declared, source=name)
        if inferred:
            notes.append(
                f"Scale {ratings.scale[0]}-{ratings.scale[1]} taken from the grades seen; give "
                "--scale to declare the full scale (weights depend on it)."
            )
        view = svc_views.agreement_view(ratings)
    else:
        with open_project() as project:
            ratings = people = svc_ratings.load_ratings(project)
            if declared is not None and declared != ratings.scale:
                from ragjudge.metrics.agreement import Ratings

                try:
                    ratings = Ratings.from_matrix(ratings.matrix, declared, annotators=ratings.annotators,
                                                  units=ratings.units)
                except ValueError as exc:  # InputError too: a grade off the declared scale
                    detail = getattr(exc, "message", None) or str(exc)
                    raise UsageError(
                        f"--scale {scale}: {detail} Give a scale that holds every grade of the "
                        f"project, such as its own {ratings.scale[0]}-{ratings.scale[1]}.") from None
            access = access_of(project, None)
            view = svc_views.visible_to(
                svc_views.with_reference(project, svc_views.agreement_view(ratings)), access)
            llm_data = svc_views.human_vs_llm(project, people)
            if not llm_data["llm"]:
                llm_data = None
            if verdict:
                from ragjudge.services.agreement.verdict import verdict_stability

                verdict_data = verdict_stability(
                    project, measures=None if measures is None else
                    [m.strip() for m in measures.split(",") if m.strip()])
    if format == "json":
        data = view.to_dict()
        if by != "query":
            data.pop("by_query")
        if by != "annotator":
            data.pop("by_annotator")
        if verdict_data is not None:
            data["verdict"] = verdict_data
        if llm_data is not None:
            data["human_vs_llm"] = llm_data
        if notes:
            data["notes"] = notes
        print_json(data)
        return
    for note in notes:
        err_console.print(note)
    _print_report(view, by=by, limit=limit)
    if view.reference is not None:
        _print_reference(view.reference, view.ratings.scale)
    _print_warnings(view.warnings)
    if view.warnings and view.reference is not None and not view.reference["complete"]:
        err_console.print("If the reference lists only relevant chunks, import it again with "
                          "--reference --complete: an unlisted pair of its queries then counts as "
                          "not relevant.")
    if llm_data is not None:
        _print_llm(llm_data)
    if verdict_data is not None:
        _print_verdict(verdict_data)


# --------------------------------------------------------------------------- table output


def fmt_value(value: float | None, reason: str | None = None) -> str:
    if value is None:
        return f"[dim]undefined: {safe(reason)}[/]" if reason else "[dim]-[/]"
    return f"{value:.3f}"


def _agree_on_answers(labels: str | None, *, scale: str | None, by: str | None, format: str,
                      verdict: bool, limit: int) -> None:
    """``agree --answers``: the same statistics on nugget support and on citation support."""
    from ragjudge.services.agreement.answers import answer_agreement, answer_views, ratings_of

    if verdict:
        raise UsageError("--verdict compares runs scored with each annotator's labels; it does "
                         "not apply to --answers.")
    if scale is not None:
        raise UsageError("--scale does not apply to --answers: support is none, partial or full "
                         "(0-2).")
    if labels is not None:
        from ragjudge.formats import read_records

        views = answer_views(*ratings_of(read_records("answer-labels", labels)))
    else:
        with open_project() as project:
            views = answer_agreement(project, access=access_of(project, None))
    if format == "json":
        data = {}
        for key, view in views.items():
            data[key] = view.to_dict()
            for part in ("query", "annotator"):
                if by != part:
                    data[key].pop(f"by_{part}")
        print_json(data)
        return
    titles = {"nugget_support": ("nugget support: how fully an answer supports a nugget",
                                 "(query, run, nugget) units"),
              "citation_support": ("citation support: how fully a cited chunk supports a sentence",
                                   "(query, run, sentence, chunk) units")}
    for key, view in views.items():
        title, noun = titles[key]
        console.print(f"[bold]{title}[/] — scale 0 none, 1 partial, 2 full")
        _print_report(view, by=by, limit=limit, noun=noun)


_UNIT_COLUMNS = {"query_id": "query", "chunk_id": "chunk"}


def _print_report(view, *, by: str | None, limit: int, noun: str = "pairs") -> None:  # noqa: ANN001
    r = view.report
    console.print(
        f"[bold]{r.units}[/] {noun} judged, {r.pairable_units} by two or more annotators; "
        f"annotators: {safe(', '.join(map(str, r.annotators))) or '-'}; scale {r.scale[0]}-{r.scale[1]}"
    )
    summary = Table(title="agreement", title_justify="left", show_header=False)
    summary.add_column(style="bold")
    summary.add_column()
    from ragjudge.services.agreement import views as svc_views
    from ragjudge.services.agreement.views import summary_statistics

    for label, stat in summary_statistics(r):
        summary.add_row(label, fmt_value(stat.value, stat.reason))
    console.print(summary)
    if r.pairwise:
        pairs = Table(title="pairs of annotators (Cohen's κ over the pairs both judged)", title_justify="left")
        for col in ("a", "b", "n", "agree", "±1", "κ", "κ linear", "κ quadratic"):
            pairs.add_column(col, justify="left" if col in ("a", "b") else "right")
        degenerate = {(a, b) for a, b, _ in svc_views.degenerate_pairs(view.ratings)}
        for p in r.pairwise:
            bad = (str(p.a), str(p.b)) in degenerate
            pairs.add_row(
                safe(p.a), safe(p.b), str(p.n), fmt_value(p.percent_agreement.value),
                fmt_value(p.percent_agreement_within_1.value),
                *(("[yellow]degenerate[/]",) * 3 if bad else (
                    fmt_value(p.cohen_kappa.value), fmt_value(p.cohen_kappa_linear.value),
                    fmt_value(p.cohen_kappa_quadratic.value))),
            )
        console.print(pairs)
        # a few pairs get their confusion matrices here; many only with --by annotator
        if len(r.pairwise) <= 3 or by == "annotator":
            for p in r.pairwise:
                if p.n:
                    console.print(_confusion_table(p, r.scale))
    if r.binarised:
        binary = Table(title="binarised (relevant = grade ≥ t)" if noun == "pairs"
                       else "binarised (supported = support ≥ t)", title_justify="left")
        for col in ("t", "agree", "α", "Fleiss' κ", "AC1", "mean overlap |A∩B|/|A∪B|"):
            binary.add_column(col, justify="right")
        for t in r.binarised:
            overlaps = [p["overlap"].value for p in t.pairwise if p["overlap"].value is not None]
            binary.add_row(
                str(t.threshold), fmt_value(t.percent_agreement.value), fmt_value(t.krippendorff_alpha.value),
                fmt_value(t.fleiss_kappa.value), fmt_value(t.gwet_ac1.value),
                fmt_value(sum(overlaps) / len(overlaps)) if overlaps else fmt_value(None),
            )
        console.print(binary)
    if by == "query":
        _print_rows("by query", view.by_query, "query_id")
    if by == "annotator":
        _print_annotators(view.by_annotator)
    disputed = r.disputed[:limit]
    if disputed:
        what = "pairs" if noun == "pairs" else "units"
        shown = f"{len(r.disputed)}; largest spread first"
        if view.hidden_disputed:
            shown += f"; {view.hidden_disputed} more you have not judged, not shown"
        table = Table(title=f"disputed {what} ({shown})", title_justify="left")
        for col in (*(_UNIT_COLUMNS.get(f, f) for f in view.unit_fields), "spread", "grades"):
            table.add_column(col)
        for d in disputed:
            grades = ", ".join(f"{safe(a)}={g}" for a, g in d.grades.items())
            table.add_row(*(safe(part) for part in d.unit), str(d.spread), grades)
        console.print(table)


def _print_reference(data: dict, scale: tuple[int, int]) -> None:
    """Each annotator against the reference: shared pairs, accuracy, κ, confusion."""
    closed = " (complete: unlisted pairs of its queries count as not relevant)" if data["complete"] else ""
    table = Table(title=f"against the reference {safe(data['name'])}{closed}", title_justify="left")
    for col in ("annotator", "n", "accuracy", "κ"):
        table.add_column(col, justify="left" if col == "annotator" else "right")
    for row in data["annotators"]:
        why = row.get("undefined", {})
        table.add_row(safe(row["name"]), str(row["n"]), fmt_value(row["accuracy"], why.get("accuracy")),
                      fmt_value(row["kappa"], "degenerate, see the warning" if "one grade only" in
                           (why.get("kappa") or "") else why.get("kappa")))
    console.print(table)
    grades = list(range(scale[0], scale[1] + 1))
    for row in data["annotators"]:
        if not row["n"]:
            continue
        matrix = Table(title=f"{safe(data['name'])} (rows) × {safe(row['name'])} (columns)",
                       title_justify="left")
        matrix.add_column("")
        for g in grades:
            matrix.add_column(str(g), justify="right")
        for g, counts in zip(grades, row["confusion"]):
            matrix.add_row(str(g), *(str(int(v)) for v in counts))
        console.print(matrix)


def _print_warnings(warnings: tuple[str, ...] | list[str]) -> None:
    for text in warnings:
        err_console.print(f"[yellow]Warning:[/] κ is degenerate for {safe(text)}.")


def _confusion_table(p, scale: tuple[int, int]) -> Table:  # noqa: ANN001
    grades = list(range(scale[0], scale[1] + 1))
    table = Table(title=f"{safe(p.a)} (rows) × {safe(p.b)} (columns)", title_justify="left")
    table.add_column("")
    for g in grades:
        table.add_column(str(g), justify="right")
    for g, row in zip(grades, p.confusion):
        table.add_row(str(g), *(str(int(v)) for v in row))
    return table


def _print_rows(title: str, rows: list[dict], key: str) -> None:
    table = Table(title=title, title_justify="left")
    cols = ("units", "pairable_units", "disputed", "percent_agreement",
            "krippendorff_alpha_ordinal", "gwet_ac1")
    table.add_column(key.replace("_id", ""))
    for col in ("units", "pairable", "disputed", "agree", "α ordinal", "AC1"):
        table.add_column(col, justify="right")
    for row in rows:
        table.add_row(safe(row[key]), *(
            str(row[c]) if isinstance(row[c], int) else fmt_value(row[c]) for c in cols))
    console.print(table)


def _print_annotators(rows: list[dict]) -> None:
    table = Table(title="by annotator", title_justify="left")
    for col in ("annotator", "labels", "grades", "mean", "agree w/ others", "mean κ", "α without"):
        table.add_column(col, justify="left" if col in ("annotator", "grades") else "right")
    for row in rows:
        dist = " ".join(f"{g}:{n}" for g, n in row["grade_distribution"].items())
        table.add_row(
            safe(row["annotator"]), str(row["labels"]), dist, fmt_value(row["mean_grade"]),
            fmt_value(row["percent_agreement_with_others"]), fmt_value(row["mean_cohen_kappa"]),
            fmt_value(row["krippendorff_alpha_ordinal_without"]),
        )
    console.print(table)


def _print_llm(data: dict) -> None:
    """Each LLM annotator against each person and against the people's gold, beside the
    people's agreement with each other."""
    console.print(f"[bold]People and LLM annotators[/] (LLM: {safe(', '.join(data['llm']))}; "
                  "the statistics above are the people's alone)")
    table = Table(title="person × LLM, over the pairs both graded (Δ = LLM − person: above 0, "
                  "the model is more lenient)", title_justify="left")
    for col in ("person", "LLM", "n", "agree", "κ", "κ linear", "α ordinal", "mean Δ"):
        table.add_column(col, justify="left" if col in ("person", "LLM") else "right")
    for p in [*data["pairs"], *data["against_gold"]]:
        table.add_row(safe(p["a"]) if p["a"] != "gold" else "[italic]gold (people)[/]", safe(p["b"]),
                      str(p["n"]), fmt_value(p["percent_agreement"]),
                      fmt_value(p["cohen_kappa"], p["undefined"].get("cohen_kappa")),
                      fmt_value(p["cohen_kappa_linear"]),
                      fmt_value(p["krippendorff_alpha_ordinal"], p["undefined"].get("krippendorff_alpha_ordinal")),
                      fmt_value(p["mean_difference"]))
    console.print(table)
    console.print(f"people with each other: mean Cohen's κ {fmt_value(data['human_mean_kappa'])} over "
                  f"{len(data['human_pairs'])} pairs of people")
    grades = list(range(data["scale"][0], data["scale"][1] + 1))
    for p in data["against_gold"]:
        if not p["n"]:
            continue
        matrix = Table(title=f"gold of the people (rows) × {safe(p['b'])} (columns)", title_justify="left")
        matrix.add_column("")
        for g in grades:
            matrix.add_column(str(g), justify="right")
        for g, counts in zip(grades, p["confusion"]):
            matrix.add_row(str(g), *(str(v) for v in counts))
        console.print(matrix)


def _print_verdict(data: dict) -> None:
    console.print(f"[bold]Does disagreement change the verdict?[/] ({len(data['runs'])} runs)")
    table = Table(title="per measure: rankings of runs under each annotator's qrels", title_justify="left")
    for col in ("measure", "min Kendall τ", "mean τ", "largest change", "run", "qrels", "winner"):
        table.add_column(col, justify="left" if col in ("measure", "run", "qrels", "winner") else "right")
    for m in data["measures"]:
        change = m["largest_change"]
        table.add_row(
            safe(m["measure"]), fmt_value(m["min_tau"], m.get("tau_reason")), fmt_value(m["mean_tau"]),
            fmt_value(change["delta"]) if change else "-", safe(change["run"]) if change else "-",
            safe(change["qrels"]) if change else "-",
            safe(m["winner"].get("gold") or "-") + (" [bold red](changes)[/]" if m["winner_changes"] else ""),
        )
    console.print(table)
    for entry in data.get("llm", []):
        llm = Table(title=f"{safe(entry['annotator'])}: its qrels alone against the people's gold, on the "
                    f"{entry['queries']} queries it judged ({entry['pairs']} pairs)", title_justify="left")
        for col in ("measure", "Kendall τ", "winner (people)", "winner (LLM)"):
            llm.add_column(col, justify="right" if col == "Kendall τ" else "left")
        for m in entry["measures"]:
            same = m["winner_human"] == m["winner_llm"]
            llm.add_row(safe(m["measure"]), fmt_value(m["tau"], m["tau_reason"]), safe(m["winner_human"] or "-"),
                        safe(m["winner_llm"] or "-") + ("" if same else " [bold red](differs)[/]"))
        console.print(llm)
    if data.get("reference"):
        _print_reference_verdict(data["reference"])


#: order changes listed per measure under the table (all of them are in the JSON)
CHANGES_SHOWN = 10


def _print_reference_verdict(found: dict) -> None:
    """The reference alone against the gold with the team's labels: per measure τ and the
    winners, then each order of two runs that changes, named."""
    gold = found["gold"]
    added = f"+{gold['other_pairs']:,} pairs from other annotators" + (
        f", {gold['adjudicated']:,} adjudicated" if gold["adjudicated"] else "")
    table = Table(title=f"The reference alone ({safe(found['reference'])}) against the gold with the "
                  f"team's labels ({safe(found['rule'])}: {added})", title_justify="left")
    for col in ("measure", "Kendall τ", "winner (reference)", "winner (with the team)", "orders changed"):
        table.add_column(col, justify="right" if col in ("Kendall τ", "orders changed") else "left")
    for m in found["measures"]:
        same = m["winner_reference"] == m["winner_team"]
        table.add_row(safe(m["measure"]), fmt_value(m["tau"], m["tau_reason"]), safe(m["winner_reference"] or "-"),
                      safe(m["winner_team"] or "-") + ("" if same else " [bold red](changes)[/]"),
                      str(len(m["changes"])))
    console.print(table)
    for m in found["measures"]:
        for change in m["changes"][:CHANGES_SHOWN]:
            console.print(f"[bold red]•[/] {safe(change['text'])}")
        if len(m["changes"]) > CHANGES_SHOWN:
            console.print(f"  … and {len(m['changes']) - CHANGES_SHOWN:,} more for {safe(m['measure'])} "
                          "(--format json lists them all)")


# --------------------------------------------------------------------------- assign


@app.command(
    epilog=(
        "The overlap share is judged blind by --judges-per-overlap annotators each (agreement is "
        "measured there); every other pair by one. Workloads differ by at most one pair. Running "
        "it again assigns only pairs not yet assigned (e.g. after importing a new run), unless "
        "--replace.\n\n"
        "Examples:\n\n"
        "  ragjudge assign --annotators ann,bob,cy\n\n"
        "  ragjudge assign --annotators ann,bob,cy --overlap 0.3 --judges-per-overlap 3 --depth 5\n\n"
        "  ragjudge assign --annotators ann,bob --runs bm25,dense --replace\n\n"
        "  ragjudge assign --annotators ann,bob --depth 100 --sample 20 --strategy stratified\n\n"
        "With --sample N only N pairs of each query's pool are drawn (at random, --seed) and "
        "assigned; the sample is kept, and eval estimates infAP, statAP, xinfAP, infNDCG and "
        "infP@k from it once the drawn pairs are judged. Drawing again makes a new sample the "
        "current one; the older ones stay in the project."
    )
)
def assign(
    annotators: Annotated[str, typer.Option("--annotators", help="Comma-separated annotator names.", show_default=False)],
    overlap: Annotated[float, typer.Option("--overlap", help="Share of the pool judged by several annotators.")] = 0.2,
    judges_per_overlap: Annotated[int, int_option("--judges-per-overlap", low=2, high=MAX_LIMIT, what="the number of annotators of an overlap pair", help="Annotators per overlap pair.")] = 2,
    depth: Annotated[int, int_option("--depth", low=1, high=MAX_DEPTH, what="the pool depth", help="Pool depth: the top K chunks of each run.")] = 10,
    runs: Annotated[str | None, typer.Option("--runs", help="Comma-separated runs to pool (default: all).")] = None,
    seed: Annotated[int, int_option("--seed", low=0, high=MAX_SEED, what="a seed", help="Seed of the random choices: the overlap pairs, and the pairs --sample draws.")] = 0,
    replace: Annotated[bool, typer.Option("--replace", help="Drop the existing assignment first.")] = False,
    by: Annotated[str | None, typer.Option("--by", help=BY_LEAD_HELP)] = None,
    format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    sample: Annotated[int | None, int_option("--sample", low=1, high=MAX_DEPTH, what="the pairs drawn per query", help="Judge a random sample: N pairs of each query's pool, kept for the sampled estimates (infAP, statAP, xinfAP, infNDCG, infP@k).", show_default=False)] = None,
    strategy: Annotated[str | None, typer.Option("--strategy", help="With --sample: uniform (each pair of a query's pool alike; the default) or stratified (rank bands 1-10, 11-30, 31-100, 101-, the top drawn densest).", show_default=False)] = None,
) -> None:
    """Split the judging pool among annotators, with a blind overlap for agreement."""
    from ragjudge.services.labels.assignment import assign as assign_pool
    from ragjudge.services.labels.assignment import assignment_progress

    _check_choice("--format", format, ("table", "json"))
    if strategy is not None and sample is None:
        from ragjudge.safetext import quote

        raise UsageError(f"--strategy {quote(strategy)} says how --sample draws: give the pairs per "
                         "query too, e.g. --sample 20 --strategy stratified.")
    if sample is not None:
        from ragjudge.services.labels.sampling import check_sample

        check_sample(sample, strategy or "uniform")
    names = [n for n in annotators.split(",") if n.strip()]
    run_names = None if runs is None else [r.strip() for r in runs.split(",") if r.strip()]
    with open_project() as project, progress_bar() as bar:
        plan = assign_pool(project, names, overlap=overlap, judges_per_overlap=judges_per_overlap,
                           depth=depth, runs=run_names, seed=seed, replace=replace,
                           access=access_of(project, by), progress=bar, sample=sample,
                           strategy=strategy or "uniform")
        progress = assignment_progress(project)
    new = plan.workloads()
    if format == "json":
        print_json({
            "new_pairs": len({(q, c) for items in plan.pairs.values() for q, c, _ in items}),
            "new_overlap_pairs": len(plan.overlap_pairs()),
            "annotators": {name: {"new": new.get(name, 0), **counts} for name, counts in progress.items()},
            **({"sample": plan.sample.as_json()} if plan.sample is not None else {}),
        })
        return
    table = Table(title="assignment", title_justify="left")
    for col in ("annotator", "new", "assigned", "overlap", "done"):
        table.add_column(col, justify="left" if col == "annotator" else "right")
    for name, counts in progress.items():
        table.add_row(safe(name), str(new.get(name, 0)), str(counts["assigned"]),
                      str(counts["overlap"]), str(counts["done"]))
    console.print(table)
    console.print(f"{len(plan.overlap_pairs())} new pairs go to {judges_per_overlap} annotators each, blind.")
    if plan.sample is not None:
        _print_sample(plan.sample)


def _print_sample(sample: Any) -> None:
    """The sample ``assign --sample`` drew: pairs drawn of pooled per band, how to score it."""
    from ragjudge.services.labels.sampling import SAMPLED_MEASURES

    console.print(safe(sample.describe()))
    table = Table()
    for col in ("ranks", "pooled", "drawn", "share"):
        table.add_column(col, justify="left" if col == "ranks" else "right")
    for band in sample.strata():
        table.add_row(band.ranks, f"{band.pooled:,}", f"{band.drawn:,}",
                      f"{band.drawn / band.pooled:.0%}" if band.pooled else "-")
    drawn = sum(b.drawn for b in sample.strata())
    table.add_row("all", f"{len(sample.pool):,}", f"{drawn:,}",
                  f"{drawn / len(sample.pool):.0%}" if len(sample.pool) else "-")
    console.print(table)
    console.print(f"{drawn:,} of {len(sample.pool):,} pooled pairs drawn over "
                  f"{sample.n_queries:,} queries. Once they are judged, score the runs from the "
                  "sample with")
    console.print(f"  ragjudge eval -m {','.join(SAMPLED_MEASURES)}", soft_wrap=True)


# --------------------------------------------------------------------------- disputes, adjudicate


@app.command(epilog="Examples:\n\n  ragjudge disputes\n\n  ragjudge disputes --limit 50 --format json")
def disputes(
    limit: Annotated[int, int_option("--limit", low=0, high=MAX_LIMIT, what="the number of pairs to list", help="How many pairs to list (0: all).")] = 20,
    by: Annotated[str | None, typer.Option("--by", help=BY_VIEWER_HELP)] = None,
    format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
) -> None:
    """Pairs whose annotators disagree, largest spread of grades first, with any adjudication."""
    reads_only()
    from ragjudge.services.agreement.views import disputed_pairs

    _check_choice("--format", format, ("table", "json"))
    with open_project() as project:
        rows = disputed_pairs(project, access=access_of(project, by), limit=limit or None)
    if format == "json":
        print_json(rows)
        return
    if not rows:
        console.print("No disputed pairs: every pair judged twice or more has one grade.")
        return
    table = Table(title="disputed pairs (largest spread first)", title_justify="left")
    for col in ("query", "chunk", "spread", "ratings", "grades", "adjudicated"):
        table.add_column(col, justify="right" if col in ("spread", "ratings", "adjudicated") else "left")
    for row in rows:
        grades = ", ".join(f"{safe(a)}={g}" for a, g in row["grades"].items())
        adjudicated = "-" if row["adjudicated"] is None else str(row["adjudicated"])
        table.add_row(safe(row["query_id"]), safe(row["chunk_id"]), str(row["spread"]),
                      str(row["n_ratings"]), grades, adjudicated)
    console.print(table)


@app.command(
    epilog=(
        "The decision is stored with who made it and why; gold qrels (ragjudge export qrels) use "
        "the newest adjudication of a pair before any aggregation rule.\n\n"
        "Examples:\n\n"
        "  ragjudge adjudicate --query q7 --chunk c123 --grade 2 --reason 'answers the refund part'\n\n"
        "  ragjudge adjudicate --query q7 --chunk c123 --show"
    )
)
def adjudicate(
    query: Annotated[str, typer.Option("--query", help="The query id.", show_default=False)],
    chunk: Annotated[str, typer.Option("--chunk", help="The chunk id.", show_default=False)],
    grade: Annotated[int | None, int_option("--grade", low=-MAX_GRADE, high=MAX_GRADE, what="a grade", help="The final grade.")] = None,
    reason: Annotated[str | None, typer.Option("--reason", help="Why (shown with the decision).")] = None,
    by: Annotated[str | None, typer.Option("--by", help="Who decides, or with --show who looks (default: $RAGJUDGE_USER, else your login name); once the project has a lead, a lead.")] = None,
    show: Annotated[bool, typer.Option("--show", help="Only show the pair's labels and adjudications.")] = False,
    format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
) -> None:
    """Set the final grade of a disputed pair, or show every annotator's label for it."""
    from ragjudge.services.gold.adjudication import adjudicate as decide
    from ragjudge.services.gold.pairs import pair_detail

    _check_choice("--format", format, ("table", "json"))
    if show and (grade is not None or reason is not None):
        given = [o for o, v in (("--grade", grade), ("--reason", reason)) if v is not None]
        raise UsageError(f"--show only shows the pair; it does not go with {', '.join(given)}. "
                         "Leave out --show to adjudicate. Nothing was changed.")
    if not show and (grade is None or reason is None):
        raise UsageError("give --grade and --reason to adjudicate, or --show to see the pair.")
    if show:
        reads_only()
    with open_project() as project:
        access = access_of(project, by)
        if not show and grade is not None and reason is not None:  # both given: checked above
            decide(project, query_id=query, chunk_id=chunk, grade=grade, reason=reason,
                   access=access)
        detail = pair_detail(project, query, chunk, access=access)
    if format == "json":
        print_json(_detail_json(detail))
        return
    console.print(f"[bold]{safe(detail.query_id)}[/] {safe(detail.query_text, prose=True)}")
    console.print(f"[bold]{safe(detail.chunk_id)}[/] {safe(_clip(detail.chunk_text), prose=True)}")
    table = Table(title="labels", title_justify="left")
    for col in ("annotator", "grade", "seconds", "note"):
        table.add_column(col, justify="right" if col in ("grade", "seconds") else "left")
    for lab in detail.labels:
        grade_text = "skipped" if lab.grade is None and lab.skipped else ("-" if lab.grade is None else str(lab.grade))
        seconds = "-" if lab.duration_ms is None else f"{lab.duration_ms / 1000:.1f}"
        table.add_row(safe(lab.annotator), grade_text, seconds, safe(lab.remarks, prose=True))
    console.print(table)
    for a in detail.adjudications:
        console.print(f"adjudicated {a['grade']} by {safe(a['by'])}: {safe(a['reason'] or '', prose=True)}")


def _clip(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _detail_json(detail: Any) -> dict:
    return {
        "query_id": detail.query_id,
        "query_text": detail.query_text,
        "chunk_id": detail.chunk_id,
        "chunk_text": detail.chunk_text,
        "labels": [lab.__dict__ for lab in detail.labels],
        "adjudications": list(detail.adjudications),
        "adjudicated": detail.adjudicated,
    }


# --------------------------------------------------------------------------- label quality


@app.command(epilog=(
    "Each too-fast label is a grade of a pair: in a blind project an annotator who is not a lead "
    "sees the counts of everyone's and the list of their own and of the pairs they judged.\n\n"
    "Examples:\n\n  ragjudge quality\n\n  ragjudge quality --format json --by dora"))
def quality(
    format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    by: Annotated[str | None, typer.Option("--by", help=BY_VIEWER_HELP)] = None,
) -> None:
    """Label-quality signals: labels made too fast for the chunk's length, grades drifting over
    a session, and self-agreement on blind re-checks."""
    reads_only()
    from ragjudge.services.agreement.quality import label_quality

    _check_choice("--format", format, ("table", "json"))
    with open_project() as project:
        data = label_quality(project, access=access_of(project, by))
    if format == "json":
        print_json(data)
        return
    per: dict[str, int] = data["fast_label_counts"]
    table = Table(title="label quality per annotator", title_justify="left")
    for col in ("annotator", "too fast", "mean 1st half", "2nd half", "drift", "rechecks",
                "self-agree"):
        table.add_column(col, justify="left" if col == "annotator" else "right")
    drift = {d["annotator"]: d for d in data["grade_drift"]}
    selfs = {s["annotator"]: s for s in data["self_agreement"]}
    for name in sorted(set(drift) | set(per) | set(selfs)):
        d, s = drift.get(name, {}), selfs.get(name)
        table.add_row(
            safe(name), str(per.get(name, 0)), fmt_value(d.get("mean_first")), fmt_value(d.get("mean_second")),
            "yes" if d.get("drifting") else "no", str(s["rechecks"]) if s else "0",
            fmt_value(s["self_agreement"]) if s else "-",
        )
    console.print(table)
    from ragjudge.services.agreement.quality import MAX_CHARS_PER_SECOND, MIN_DURATION_MS

    console.print(f"[dim]too fast: a current label quicker than reading the chunk allows "
                  f"({MAX_CHARS_PER_SECOND:g} characters a second, {MIN_DURATION_MS / 1000:g} s at "
                  f"least); {data['drift_rule']}.[/]")
