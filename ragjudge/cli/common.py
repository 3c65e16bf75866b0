"""What every command shares: the project named by ``--db``, consoles and output helpers.

The helpers that need neither typer nor Rich live in :mod:`ragjudge.cli.base` and are
re-exported here.
"""

from __future__ import annotations

from rich.console import Console

from ragjudge.cli.base import (  # noqa: F401 - re-exported: every command imports them from here
    MAX_DEPTH,
    MAX_DRAWS,
    MAX_LIMIT,
    MAX_SEED,
    json_default,
    CLI_STATE,
    access_of,
    check_int,
    check_raw,
    clean_floats,
    db_given,
    open_project,
    print_json,
    project_db,
    reads_only,
    safe,
    set_db,
)

# no emoji codes: a run named ":a:" is shown as typed (markup is escaped by safe())
console = Console(highlight=False, soft_wrap=False, emoji=False)
err_console = Console(stderr=True, highlight=False, emoji=False)



def wide_console() -> Console:
    """The console, or for piped output one wide enough that no cell is cut to 80 columns."""
    if console.is_terminal:
        return console
    return Console(highlight=False, soft_wrap=False, emoji=False, width=max(console.width, 160))


BY_LEAD_HELP = ("Who does this (default: $RAGJUDGE_USER, else your login name); once the "
                "project has a lead, it must be a lead.")
BY_VIEWER_HELP = ("Who looks (default: $RAGJUDGE_USER, else your login name); in a blind "
                  "project, only a lead sees other annotators' grades of pairs you have not judged.")
RUNS_AS_NOTE = ("It runs as $RAGJUDGE_USER, else your login name (its --by is a breakdown, not "
                "who runs it); what it prints is aggregates, which everyone sees.")

