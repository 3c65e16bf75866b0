"""The ``annotate`` command: straight into judging."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ragjudge.cli.app import app
from ragjudge.cli.common import MAX_DEPTH, access_of, open_project
from ragjudge.cli.options import int_option
from ragjudge.cli.progress import progress_bar
from ragjudge.errors import InputError, UsageError, why_unusable
from ragjudge.safetext import quote


def parse_queries(value: str | None) -> list[str] | None:
    """``--queries``: a file of query ids (one a line, ``#`` comments) or ``ID,ID,...``."""
    if value is None:
        return None
    from ragjudge.formats.source import path_kind

    path = Path(value)
    try:
        is_file = path_kind(path) == "file"
    except InputError:  # no file can have this name (e.g. too long): ids still may
        if "/" in value:
            raise
        is_file = False
    if is_file:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text (byte {exc.start}).", file=value) from None
        except OSError as exc:
            raise InputError(why_unusable(exc, path), file=value) from None
        from ragjudge.formats.records import check_text

        ids = []
        for number, line in enumerate(lines, start=1):
            ident = line.split("#", 1)[0].strip()
            if ident:
                check_text([("query_id", ident)], file=value, line=number)
                ids.append(ident)
        if not ids:
            raise InputError("holds no query ids (one a line).", file=value)
        return ids
    ids = [part.strip() for part in value.split(",") if part.strip()]
    if not ids:
        raise UsageError(f"--queries {quote(value)}: give a file of query ids or ID,ID,...")
    return ids


@app.command(
    epilog=(
        "Examples:\n\n"
        "  ragjudge annotate --annotator alice\n\n"
        "  ragjudge annotate --runs bm25,dense --depth 20 --order query\n\n"
        "  ragjudge annotate --queue-order settle --until-settled   # the pairs that decide the "
        "ranking first; stop once it is settled\n\n"
        "  ragjudge annotate --queries q1,q7 --show-source\n\n"
        "  ragjudge annotate --category billing --recheck 0.05\n\n"
        "  ragjudge annotate --answers --annotator alice     # judge the runs' generated answers\n\n"
        "Keys: 0-9 grade (y/n on a binary scale; the judging screen and ? name each grade as "
        "the project does, see 'ragjudge scale'), s skip, f flag, u undo, ←/→ previous/next, "
        "[ ] previous/next query, c comment, / find, g facets & nuggets, h guidelines, "
        "e evaluation, a agreement, ? help, q quit.\n\n"
        "With --answers: 2/f full, 1/p partial, 0/x none for the nugget or citation in focus, "
        "↑/↓ without judging, c the next cited chunk, [ ] previous/next answer, u undo, "
        "g nuggets, ? help, q quit. Answers are shown blind to the run (--show-source names it)."
    )
)
def annotate(
    annotator: Annotated[str | None, typer.Option(help="Your name: who judges, and whose rights the app has (default: asked for; the app's other screens run as $RAGJUDGE_USER, else your login name, until you name yourself).")] = None,
    runs: Annotated[str | None, typer.Option(help="Pool from these runs only (A,B); default all.")] = None,
    depth: Annotated[int, int_option("--depth", low=1, high=MAX_DEPTH, what="the pool depth", help="Pool depth K: the top K of each run per query.")] = 10,
    order: Annotated[str, typer.Option("--order", "--queue-order", help="depth (rounds of growing depth), query (a query's whole pool at a time) or settle (the pairs that most move the comparisons of the runs not settled yet first, weighed again as labels arrive; then the rest by depth).")] = "depth",
    show_source: Annotated[bool, typer.Option("--show-source", help="Show which runs retrieved the chunk and at which rank (judging is blind otherwise).")] = False,
    queries: Annotated[str | None, typer.Option(help="Judge only these queries: a file of ids or ID,ID,...")] = None,
    category: Annotated[str | None, typer.Option(help="Judge only queries of this category.")] = None,
    recheck: Annotated[float, typer.Option(help="Share of your own earlier pairs shown again unannounced, to measure consistency (e.g. 0.05).")] = 0.0,
    answers: Annotated[bool, typer.Option("--answers", help="Judge the runs' generated answers instead of pairs: how fully each answer supports the query's nuggets, and each cited chunk its sentence.")] = False,
    new_annotator: Annotated[bool, typer.Option("--new-annotator", help="--annotator is a new name on purpose: do not ask whether a known one was meant.")] = False,
    until_settled: Annotated[bool, typer.Option("--until-settled", help="Stop once every comparison of adjacent runs on the evaluation screen is settled (see 'ragjudge settled'), and say so.")] = False,
) -> None:
    """Judge query-chunk pairs in the terminal, starting at your first unjudged pair."""
    from ragjudge.services.labels.queue import ORDERS
    from ragjudge.services.scoring.settled import judging_queue
    from ragjudge.tui import run_app

    if answers:
        _annotate_answers(annotator, runs=runs, queries=queries, category=category,
                          show_source=show_source, pair_options=(depth != 10 or order != "depth"
                                                                 or recheck != 0.0 or until_settled),
                          new_annotator=new_annotator)
        return

    if order not in ORDERS:
        raise UsageError(f"--order {order}: use depth, query or settle.")
    run_list = [r.strip() for r in runs.split(",") if r.strip()] if runs else None
    options: dict[str, Any] = dict(runs=run_list, depth=depth, order=order, show_source=show_source,
                   queries=parse_queries(queries), category=category, recheck=recheck,
                   until_settled=until_settled or None)
    with open_project() as project:
        if annotator is not None:
            annotator = check_name(project, annotator, new_annotator)
        # check the options before the screen opens, so that mistakes are one line on stderr
        # (and write the runs' deeper ranks, with a bar, when the pool goes deeper than their rows)
        with progress_bar() as bar:
            judging_queue(project, annotator or "-", progress=bar,
                          access=access_of(project, annotator),
                          **{k: v for k, v in options.items() if v is not None})
        run_app(project, annotator=annotator, start="judge", new_annotator=new_annotator, **options)


def _annotate_answers(annotator: str | None, *, runs: str | None, queries: str | None,
                      category: str | None, show_source: bool, pair_options: bool,
                      new_annotator: bool = False) -> None:
    """``annotate --answers``: judge generated answers (nugget and citation support)."""
    from ragjudge.services.labels.answers import AnswerQueue
    from ragjudge.tui import run_app

    if pair_options:
        raise UsageError("--depth, --order, --recheck and --until-settled choose pairs to judge; "
                         "they do not apply to --answers.")
    run_list = [r.strip() for r in runs.split(",") if r.strip()] if runs else None
    options: dict[str, Any] = dict(runs=run_list, queries=parse_queries(queries), category=category,
                                   show_source=show_source)
    with open_project() as project:
        if annotator is not None:
            annotator = check_name(project, annotator, new_annotator)
        # check the options before the screen opens, so that mistakes are one line on stderr
        AnswerQueue(project, annotator or "-", **{k: v for k, v in options.items() if v is not None})
        run_app(project, annotator=annotator, start="answers", new_annotator=new_annotator, **options)


def check_name(project, name: str, new_annotator: bool) -> str:  # noqa: ANN001 - Project
    """``--annotator``, checked before the app opens: a retired name, or an unknown one in a
    closed roster, is refused; an unknown name where annotators exist is asked about in the
    app, and without a terminal to ask in it is refused (with the known name it most likely
    means) unless ``--new-annotator`` says it is new on purpose."""
    import sys

    from ragjudge.services.access import roster
    from ragjudge.services.events.annotators import check_annotator

    name = check_annotator(name)
    roster.check_can_label(project, name)
    if new_annotator or roster.member(project, name) is not None:
        return name
    known = [m.name for m in roster.members(project, counts=False)]
    if not known or (sys.stdin.isatty() and sys.stdout.isatty()):
        return name  # nobody to confuse it with, or the app asks
    nearest = roster.nearest_name(project, name)
    meant = f"Did you mean {quote(nearest)}? " if nearest else ""
    raise UsageError(
        f"No annotator {quote(name)} in this project. {meant}Labelling under it would start a new "
        f"annotator with an empty history (annotators: {', '.join(known[:12])}"
        f"{', …' if len(known) > 12 else ''}). Give a known name, or add --new-annotator if "
        f"{quote(name)} is new on purpose. Nothing was recorded.")
