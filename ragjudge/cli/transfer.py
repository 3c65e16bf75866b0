"""``ragjudge import`` and ``ragjudge export``: files in and out of a project."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragjudge.cli.app import app
from ragjudge.cli.common import BY_LEAD_HELP, BY_VIEWER_HELP, access_of, check_raw, err_console, open_project, reads_only, safe
from ragjudge.cli.options import RawOption
from ragjudge.cli.progress import QUIET_HELP, progress_bar
from ragjudge.errors import UsageError

IMPORT_EPILOG = (
    "KIND is one of: queries, chunks, run, qrels, labels, facets, nuggets, entities, answers, "
    "answer-labels, guidelines, beir, ir-datasets. FILE may be gzipped (.gz); '-' reads standard input. An import is all "
    "or nothing: a bad line changes nothing, and importing the same file twice changes nothing "
    "the second time. Annotators may keep labelling meanwhile: a big run is written in short "
    "transactions and appears at once when complete. On a terminal a progress bar shows the "
    "rate and the time left (--quiet: none).\n\n"
    "Examples:\n\n"
    "  ragjudge import queries queries.jsonl\n\n"
    "  ragjudge import chunks chunks.csv\n\n"
    "  ragjudge import queries queries.tsv               # MS MARCO style: id<TAB>text\n\n"
    "  ragjudge import run bm25.trec.gz                  # run named 'bm25'\n\n"
    "  ragjudge import run dense.jsonl --name dense-v2 --replace\n\n"
    "  ragjudge import qrels trec-dl.qrels --annotator nist\n\n"
    "  ragjudge import qrels vaswani.qrels --annotator nist --reference --complete\n\n"
    "  ragjudge import labels labels.jsonl               # annotator from each line, else 'imported'\n\n"
    "  ragjudge import run other.trec --create-missing   # add unknown ids as empty placeholders\n\n"
    "  ragjudge import nuggets nuggets.jsonl --annotator alice\n\n"
    "  ragjudge import answers answers.jsonl             # {\"query_id\", \"run\", \"sentences\": [...]}\n\n"
    "  ragjudge import answer-labels judged.jsonl        # nugget and citation support of answers\n\n"
    "  ragjudge import guidelines guidelines.md\n\n"
    "  zcat run.trec.gz | ragjudge import run - --name bm25\n\n"
    "  ragjudge import beir datasets/scifact --split test\n\n"
    "  ragjudge import chunks fbis/fb396001.gz           # TREC SGML documents <DOC><DOCNO>\n\n"
    "  ragjudge import queries topics.301-350            # TREC topics <top><num><title>\n\n"
    "  ragjudge import ir-datasets beir/scifact --split test   # through your ir_datasets"
)

EXPORT_EPILOG = (
    "KIND is one of: qrels (the gold qrels; a complete reference's closed world, every chunk "
    "any of the project's runs retrieves on its queries, written as 0 lines unless "
    "--listed-only), labels (every annotator's current labels with "
    "annotator, time and note, and their flags and comments; grade_name, last, the grade's "
    "name on the project's scale, for people: an import reads the grade), run NAME, facets, nuggets, "
    "answer-labels (every annotator's current nugget and citation support of the generated "
    "answers). In a blind project an annotator who is not a lead exports their own labels, "
    "facet links, nugget support and answer labels, their own grades as qrels (--rule "
    "annotator:THEIR NAME), and no run; --by names who exports (default: $RAGJUDGE_USER, else "
    "the login name). Output goes to standard output unless -o names a file (a .gz name is compressed). "
    "The file is written whole or not at all, and never over a ragjudge project or its -wal, "
    "-shm, -journal, .writelock or .importlock files.\n\n"
    "Examples:\n\n"
    "  ragjudge export qrels -o gold.qrels               # TREC, project's rule (median)\n\n"
    "  ragjudge export qrels --rule majority --format jsonl\n\n"
    "  ragjudge export qrels --rule annotator:alice -o alice.qrels\n\n"
    "  ragjudge export qrels --rule reference --listed-only -o official.qrels\n\n"
    "  ragjudge export labels --format csv -o labels.csv --by dora   # a lead: everyone's\n\n"
    "  ragjudge export labels --by ana                  # ana's own labels\n\n"
    "  ragjudge export run bm25 -o bm25.trec\n\n"
    "  ragjudge export nuggets -o nuggets.jsonl\n\n"
    "  ragjudge export answer-labels --format csv -o answer-labels.csv"
)


@app.command("import", epilog=IMPORT_EPILOG)
def import_command(
    kind: Annotated[str, typer.Argument(help="What the file holds (see below).", show_default=False)],
    file: Annotated[str, typer.Argument(help="The file (a folder for beir, a dataset name for ir-datasets; '-' for stdin).", show_default=False)],
    name: Annotated[str | None, typer.Option("--name", help="The run's name (default: the file's stem).")] = None,
    format: Annotated[str, typer.Option("--format", help="auto, trec, jsonl, csv, beir, trec-sgml (TREC documents) or trec-topics.")] = "auto",
    annotator: Annotated[str | None, typer.Option("--annotator", help="Annotator of qrels/labels/facet, nugget and answer-label lines that name none (default: imported; for ir-datasets the dataset's name).")] = None,
    create_missing: Annotated[bool, typer.Option("--create-missing", help="Add unknown query and chunk ids as placeholders with empty text instead of refusing the file.")] = False,
    replace: Annotated[bool, typer.Option("--replace", help="Replace a run of the same name, and queries, chunks or answers whose fields differ.")] = False,
    split: Annotated[str | None, typer.Option("--split", help="beir: the qrels split (qrels/SPLIT.tsv; default: every split); ir-datasets: the dataset NAME/SPLIT.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help=QUIET_HELP)] = False,
    reference: Annotated[bool, typer.Option("--reference", help="qrels, labels, beir, ir-datasets: the annotator's grades are the official qrels -- the gold on their pairs, whatever others label.")] = False,
    complete: Annotated[bool, typer.Option("--complete", help="With --reference: every pair of the reference's queries it does not list is not relevant (qrels that list only relevant chunks); its closed world is every chunk any of the project's runs retrieves on its queries.")] = False,
    by: Annotated[str | None, typer.Option("--by", help="Who imports; guidelines and --reference change the project's settings and roster: " + BY_LEAD_HELP)] = None,
) -> None:
    """Import queries, chunks, a run, qrels, labels, facets, nuggets, entities, answers,
    answer labels, guidelines, a BEIR folder or an ir_datasets dataset into the project."""
    from ragjudge.formats import FORMATS
    from ragjudge.services.transfer import common as importing_common
    from ragjudge.services.transfer import importing as importing_importing

    kind = kind.strip().lower()
    kinds = (*importing_importing.IMPORT_KINDS, "beir", "ir-datasets")
    if kind not in kinds:
        raise UsageError(f"'ragjudge import {kind}': KIND is one of {', '.join(kinds)}.")
    if format not in ("auto", *FORMATS):
        raise UsageError(f"--format {format}: use auto, {', '.join(FORMATS)}.")
    if name is not None and kind != "run":
        raise UsageError("--name names a run; it applies to 'ragjudge import run' only.")
    if split is not None and kind not in ("beir", "ir-datasets") and format != "beir":
        raise UsageError("--split applies to BEIR folders and ir_datasets datasets only.")
    if complete and not reference:
        raise UsageError("--complete says the reference's qrels list every relevant chunk; it "
                         "goes with --reference. Nothing was imported.")
    if reference and kind not in ("qrels", "labels", "beir", "ir-datasets"):
        raise UsageError(f"--reference marks the annotator of qrels; it does not apply to "
                         f"'ragjudge import {kind}'. Nothing was imported.")
    marks = {"reference": reference, "complete": complete}
    if kind == "ir-datasets" and format != "auto":
        raise UsageError("--format does not apply to ir-datasets: ir_datasets reads the dataset.")
    if kind == "ir-datasets":
        with open_project() as project, progress_bar(quiet) as progress:
            results = importing_importing.import_ir_datasets(project, file, split=split, annotator=annotator,
                                                   create_missing=create_missing, replace=replace,
                                                   progress=progress, access=access_of(project, by),
                                                   **marks)
        for result in results:
            err_console.print(safe(result.summary()))
        return
    annotator = importing_common.DEFAULT_ANNOTATOR if annotator is None else annotator
    with open_project() as project, progress_bar(quiet) as progress:
        access = access_of(project, by)
        if kind == "beir":
            results = importing_importing.import_beir(project, file, split=split, annotator=annotator,
                                            create_missing=create_missing, replace=replace,
                                            progress=progress, access=access, **marks)
        else:
            source = file if file != "-" else "-"
            if kind == "guidelines":
                results = [importing_importing.import_guidelines(project, source, access=access)]
            else:
                results = [importing_importing.import_file(
                    project, kind, source, fmt=format, name=name, annotator=annotator,
                    create_missing=create_missing, replace=replace, progress=progress,
                    access=access, **marks)]
    for result in results:
        err_console.print(safe(result.summary()))


@app.command("export", epilog=EXPORT_EPILOG)
def export_command(
    kind: Annotated[str, typer.Argument(help="qrels, labels, run, facets, nuggets or answer-labels.", show_default=False)],
    name: Annotated[str | None, typer.Argument(help="The run to export (export run NAME).", show_default=False)] = None,
    rule: Annotated[str | None, typer.Option("--rule", help="qrels only: median (default: the project's rule), majority, mean, min, max, reference (the reference qrels alone), adjudicated or annotator:NAME.")] = None,
    format: Annotated[str | None, typer.Option("--format", help="trec, jsonl or csv (default: trec for qrels and runs, jsonl otherwise).")] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="The file to write (default: standard output).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help=QUIET_HELP)] = False,
    by: Annotated[str | None, typer.Option("--by", help=BY_VIEWER_HELP)] = None,
    llm_audit: Annotated[bool, typer.Option("--llm-audit", help="labels only: every request of the LLM annotators instead (model, prompt SHA-256, answer, outcome, tokens, latency).")] = False,
    listed_only: Annotated[bool, typer.Option("--listed-only", help="qrels only: leave out a complete reference's implied 0 lines (every chunk any of the project's runs retrieves on its queries that it does not list); without them trec_eval counts those chunks as unjudged.")] = False,
    raw: RawOption = False,
) -> None:
    """Export the gold qrels, the labels, a run, facets, nuggets or answer labels."""
    reads_only()  # of the project: a refused export leaves -o's file as it was too
    from ragjudge.services.transfer import exporting

    kind = kind.strip().lower()
    if kind not in exporting.EXPORT_KINDS:
        raise UsageError(f"'ragjudge export {kind}': KIND is one of {', '.join(exporting.EXPORT_KINDS)}.")
    check_raw(raw, format)
    if llm_audit:
        _export_llm_audit(kind, format, output, by, raw)
        return
    if rule is not None:
        from ragjudge.services.gold.rules import check_rule

        check_rule(rule)
    if listed_only and kind != "qrels":
        raise UsageError("--listed-only applies to 'export qrels' only.")
    dest = str(output) if output is not None else "-"
    notes: list[str] = []
    with open_project() as project, progress_bar(quiet) as progress:
        count = exporting.export(project, kind, dest, access=access_of(project, by), name=name,
                                 rule=rule, fmt=format, progress=progress,
                                 listed_only=listed_only, notes=notes, raw=raw)
    if output is not None:
        err_console.print(f"Wrote {count:,} {kind} lines to {safe(output)}.")
    for note in notes:
        err_console.print(safe(note))


def _export_llm_audit(kind: str, format: str | None, output: Path | None, by: str | None,
                      raw: bool) -> None:
    """``export labels --llm-audit``: the LLM annotators' requests, one line each."""
    from ragjudge.services.llm.judge import export_audit

    if kind != "labels":
        raise UsageError("--llm-audit goes with 'export labels' (the LLM annotators' requests).")
    with open_project() as project:
        count = export_audit(project, str(output) if output is not None else "-",
                             access=access_of(project, by), fmt=format or "jsonl", raw=raw)
    if output is not None:
        err_console.print(f"Wrote {count:,} LLM calls to {safe(output)}.")
