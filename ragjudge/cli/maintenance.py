"""Maintenance commands: backup, verify."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ragjudge.cli.app import app
from ragjudge.cli.common import console, err_console, open_project, print_json, reads_only, safe
from ragjudge.errors import CheckFailed, UsageError


@app.command(
    epilog=(
        "Examples:\n\n"
        "  ragjudge backup                          # ./ragjudge-backup-20261122T031500Z.db\n\n"
        "  ragjudge --db team.db backup -o /mnt/backups/team-monday.db\n\n"
        "  ragjudge --db copy.db verify             # check a backup before relying on it\n\n"
        "Safe while annotators keep labelling: the copy is one consistent snapshot. For a "
        "PostgreSQL project ragjudge prints the pg_dump command to use and exits with 2, since "
        "it wrote no backup itself."
    )
)
def backup(
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="The backup file (default: <project>-backup-<UTC time>.db "
                     "next to the project).", show_default=False),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace the output file if it exists (never a ragjudge project).")] = False,
) -> None:
    """Copy the project to a backup file, safely while annotators keep working."""
    reads_only()
    from ragjudge.services.maintenance import backup as make_backup

    with open_project() as project:
        result = make_backup(project, output, overwrite=force)
    events = ", ".join(f"{n:,} {name.replace('_', ' ')}" for name, n in result.events.items() if n) or "no events yet"
    # soft_wrap: the path stays on one line for scripts that read it
    console.print(f"Backup written to {safe(result.path)} ({result.bytes / 1e6:,.1f} MB, {events}; "
                  f"{result.seconds:.2f} s).", soft_wrap=True)


@app.command(
    epilog=(
        "Examples:\n\n"
        "  ragjudge verify\n\n"
        "  ragjudge --db team.db verify --format json | jq .events\n\n"
        "  ragjudge --db backup.db verify && echo 'backup is sound'\n\n"
        "Exit code 0 when every check passes, 1 when one fails (the failures are listed), "
        "2 when the project cannot be opened."
    )
)
def verify(
    format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
) -> None:
    """Check the project: storage integrity, events per table, the newest event, labels pointing
    at missing queries or chunks, and missing events."""
    reads_only()
    from ragjudge.services.maintenance import verify as run_verify

    if format not in ("table", "json"):
        raise UsageError(f"--format {format}: use table or json.")
    with open_project() as project:
        report = run_verify(project)
    if format == "json":
        print_json(report.to_json())
    else:
        _print_report(report)
    if not report.ok:
        names = ", ".join(check.name for check in report.failures)
        raise CheckFailed(f"ragjudge verify: {len(report.failures)} check(s) failed: {names}.")


def _print_report(report) -> None:  # noqa: ANN001 - VerifyReport
    newest = report.newest_event
    console.print(f"[bold]{safe(report.db)}[/] ({report.backend}, schema {safe(report.revision)})")
    events = Table(title="event tables", title_justify="left")
    for col in ("table", "events", "newest (UTC)"):
        events.add_column(col, justify="right" if col == "events" else "left")
    for name, summary in report.tables.items():
        events.add_row(name, f"{summary.events:,}",
                       summary.newest.isoformat(sep=" ", timespec="seconds") if summary.newest else "-")
    console.print(events)
    checks = Table(title="checks", title_justify="left")
    checks.add_column("check")
    checks.add_column("result")
    checks.add_column("detail")
    style = {"ok": "green", "fail": "bold red", "warn": "yellow"}
    for check in report.checks:
        checks.add_row(check.name, f"[{style[check.status]}]{check.status}[/]", safe(check.detail))
    console.print(checks)
    if report.ok:
        when = newest.isoformat(sep=" ", timespec="seconds") + " UTC" if newest else "none yet"
        err_console.print(f"All checks passed. Newest event: {when}.")
