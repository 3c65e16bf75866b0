"""Project commands: init, status, demo, scale."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ragjudge.cli.app import app
from ragjudge.cli.common import (
    BY_LEAD_HELP,
    access_of,
    console,
    err_console,
    open_project,
    print_json,
    project_db,
    reads_only,
    safe,
)
from ragjudge.cli.options import int_option
from ragjudge.errors import UsageError
from ragjudge.numeric import MAX_GRADE
from ragjudge.safetext import quote


@app.command(
    epilog=(
        "Examples:\n\n"
        "  ragjudge init --db qrels.db                      # graded 0-3 (TREC DL names)\n\n"
        "  ragjudge init --db yesno.db --scale binary\n\n"
        "  ragjudge init --db stars.db --scale 1-5 --threshold 4 --name 'support bot'\n\n"
        "  ragjudge init --scale 0-4 --grade-names 'Not relevant,Marginal,Partly,Mostly,Perfect'\n\n"
        "  ragjudge init --guidelines guidelines.md\n\n"
        "Grade names: 0-3 is named after TREC DL (Irrelevant, Related, Highly relevant, "
        "Perfectly relevant), binary Not relevant / Relevant, 0-2 and 1-5 have names too; any "
        "other scale's grades are 'Grade 0', 'Grade 1'... until named with --grade-names (here or "
        "later with 'ragjudge scale names'). The names are what the judging keys, the help, the "
        "web page, the labels export and the LLM judge's prompt call each grade."
    )
)
def init(
    scale: Annotated[str, typer.Option(help="'binary', or graded MIN-MAX such as 0-3 or 1-5.")] = "0-3",
    name: Annotated[str | None, typer.Option(help="The project's name (default: the file name).")] = None,
    description: Annotated[str | None, typer.Option(help="One line on what is being judged.")] = None,
    threshold: Annotated[
        int | None, int_option("--threshold", low=0, high=MAX_GRADE, what="the lowest grade that counts as relevant",
                               help="Lowest grade that counts as relevant for binary measures.")
    ] = None,
    guidelines: Annotated[
        Path | None, typer.Option(help="A Markdown file of judging guidelines, shown on 'h'.")
    ] = None,
    grade_names: Annotated[
        str | None, typer.Option("--grade-names", help="The grades' names, lowest first, separated by commas: one per grade of the scale (default: the scale's own names, see below).", show_default=False)
    ] = None,
) -> None:
    """Create a new project with its relevance scale."""
    from ragjudge.models import Scale
    from ragjudge.services.project.database import Project

    try:
        parsed = Scale.parse(scale, threshold)
    except ValueError as exc:
        errors = getattr(exc, "errors", None)  # pydantic's ValidationError: its first message
        msg = str(errors()[0]["msg"]).removeprefix("Value error, ") if callable(errors) else str(exc)
        option = f"--threshold {threshold}" if "threshold" in msg and threshold is not None else f"--scale {scale}"
        raise UsageError(f"{option}: {msg}. Nothing was created.") from None
    if grade_names is not None:
        try:
            parsed = parsed.with_names(Scale.split_names(grade_names))
        except ValueError as exc:
            raise UsageError(f"--grade-names: {exc}. Nothing was created.") from None
    text = None
    if guidelines is not None:
        text = _read_text(guidelines)
    project = Project.init(project_db(), scale=parsed, name=name, description=description, guidelines=text)
    with project:
        console.print(
            f"Created project [bold]{safe(project.name)}[/] at {safe(project.shown_db)} "
            f"(scale {parsed.describe()}, relevant from grade {parsed.threshold})."
        )
        console.print(f"Grades: {safe(parsed.names())}.")
        console.print("Next: ragjudge import queries FILE, ragjudge import chunks FILE, "
                      "ragjudge import run FILE, then ragjudge annotate.")


def _read_text(path: Path) -> str:
    from ragjudge.errors import InputError
    from ragjudge.formats.records import check_text

    try:
        text = path.read_text(encoding="utf-8")
        check_text([("guidelines", text)], file=str(path), line=1)
        return text
    except FileNotFoundError:
        raise InputError("no such file.", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start}).", file=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror}.", file=str(path)) from None


@app.command(
    epilog="Examples:\n\n  ragjudge status\n\n  ragjudge status --db team.db --format json"
)
def status(
    format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
) -> None:
    """Counts of queries, chunks, runs, annotators and labels, and how much of the pool is judged."""
    from ragjudge.cli.overview import show_status

    show_status(format)


@app.command(
    epilog=(
        "Examples:\n\n"
        "  ragjudge demo                     # build ./ragjudge-demo.db and open the app\n\n"
        "  ragjudge demo --no-tui --db /tmp/demo.db && ragjudge status --db /tmp/demo.db"
    )
)
def demo(
    no_tui: Annotated[bool, typer.Option("--no-tui", help="Build the project only; do not open the app.")] = False,
    fresh: Annotated[bool, typer.Option("--fresh", help="Rebuild the demo project even if it exists (only a project 'ragjudge demo' built; anything else is refused).")] = False,
) -> None:
    """Build the bundled demo project (a parcel-delivery support knowledge base) and open the app."""
    from ragjudge.cli.common import db_given, set_db
    from ragjudge.safetext import mask_url
    from ragjudge.services.transfer.demo import build_demo

    if not no_tui:  # without a terminal, refuse before building anything
        from ragjudge.tui import require_terminal

        require_terminal()
    if not db_given():
        set_db("ragjudge-demo.db")
    db = project_db()
    built = build_demo(db, fresh=fresh, progress=err_console if err_console.is_terminal else None)
    shown = safe(mask_url(db))
    if built:
        err_console.print(f"Built the demo project at {shown}.")
    else:
        err_console.print(f"Using the demo project already at {shown} (--fresh rebuilds it).")
    if no_tui:
        # every later command needs to be told where the project is (the default is ragjudge.db)
        err_console.print(f"Next: ragjudge --db {shown} status, or export RAGJUDGE_DB={shown}.",
                          soft_wrap=True)
        return
    from ragjudge.tui import run_app

    with open_project() as project:
        run_app(project)


SCALE_ACTIONS = ("show", "names")


@app.command(
    epilog=(
        "Examples:\n\n"
        "  ragjudge scale                                   # each grade, its name and meaning\n\n"
        "  ragjudge scale names 'Not relevant,Marginal,Partly,Mostly,Perfect'\n\n"
        "  ragjudge scale --format json\n\n"
        "'names' gives every grade a new name, lowest first, one per grade (a lead's change once "
        "the project has a lead). Labels keep their grades: only what the judging keys, the help, "
        "the web page, the labels export and the LLM judge's prompt call each grade changes. The "
        "descriptions and the threshold stay."
    )
)
def scale(
    action: Annotated[str, typer.Argument(help="show (the default) or names.", show_default=False)] = "show",
    names: Annotated[str | None, typer.Argument(help="With 'names': the grades' names, lowest first, separated by commas.", show_default=False)] = None,
    format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    by: Annotated[str | None, typer.Option("--by", help=BY_LEAD_HELP, show_default=False)] = None,
) -> None:
    """The relevance scale: each grade's name and meaning; rename the grades."""
    from ragjudge.models import Scale

    if action not in SCALE_ACTIONS:
        raise UsageError(f"The action is show or names, not {quote(action)}. See 'ragjudge scale --help'.")
    if format not in ("table", "json"):
        raise UsageError(f"--format {format}: use table or json.")
    if (action == "names") != (names is not None):
        raise UsageError("'scale names' takes the grades' names, lowest first, separated by commas "
                         "('ragjudge scale names \"Not relevant,Relevant\"'); 'scale show' takes "
                         "nothing. Nothing was changed.")
    if action == "show":
        reads_only()
    with open_project() as project:
        if names is not None:
            from ragjudge.services.labels.scale import set_grade_names

            found = set_grade_names(project, Scale.split_names(names), access=access_of(project, by))
        else:
            found = project.scale
    if format == "json":
        print_json(found.model_dump(mode="json"))
        return
    _print_scale(found, renamed=names is not None)


def _print_scale(found, *, renamed: bool) -> None:  # noqa: ANN001 - Scale
    table = Table()
    for col in ("grade", "name", "meaning"):
        table.add_column(col, justify="right" if col == "grade" else "left")
    for level in found.levels:
        table.add_row(str(level.grade), safe(level.name), safe(level.description) or "-")
    if renamed:
        console.print("The grades are renamed; labels keep their grades.")
    console.print(f"scale {found.describe()}, relevant from grade {found.threshold}")
    console.print(table)
