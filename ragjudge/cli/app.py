"""The Typer application every command module registers on."""

from __future__ import annotations

from typing import Annotated

import typer

from ragjudge.cli.common import set_db

app = typer.Typer(
    name="ragjudge",
    help=(
        "Relevance labels for retrieval-augmented generation: judge query-chunk pairs in the "
        "terminal, score retrievers live from the labels, and check where annotators disagree.\n\n"
        "Run 'ragjudge' alone to open the app on ./ragjudge.db, or 'ragjudge demo' to try it "
        "on the bundled demo project."
    ),
    no_args_is_help=False,
    invoke_without_command=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=False,
)

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="The project: a SQLite file path or a SQLAlchemy URL (postgresql+psycopg://...). "
        "Also RAGJUDGE_DB; default ./ragjudge.db. Accepted before or after the command name.",
        show_default=False,
    ),
]


@app.callback()
def main_callback(ctx: typer.Context, db: DbOption = None) -> None:
    if db is not None and not db.strip():
        from ragjudge.errors import UsageError

        raise UsageError("--db is empty: give a project file such as labels.db, or a database URL.")
    set_db(db)
    if ctx.invoked_subcommand is None:
        from ragjudge.cli.common import open_project
        from ragjudge.tui import run_app

        project = open_project()
        run_app(project)
