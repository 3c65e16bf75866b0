"""What ``ragjudge status`` does once its options are known: read the project's counts
(:func:`ragjudge.services.overview.project_status`) and print them as a table or JSON.

Neither typer nor the project's full opening is imported here: the typer command
(:mod:`ragjudge.cli.project`) and the lean path (:mod:`ragjudge.cli.lean`, a SQLite project
opened with the standard library: :class:`ragjudge.services.project.lite.LiteProject`) both call
:func:`show_status`, so that both print the same bytes.
"""

from __future__ import annotations

from typing import Any

from ragjudge.cli.base import open_project, print_json, reads_only, safe
from ragjudge.errors import UsageError


def show_status(format: str, project: Any = None) -> None:
    """``ragjudge status --format FORMAT`` on ``project`` (default: the project of ``--db``,
    opened in full)."""
    reads_only()
    if format not in ("table", "json"):
        raise UsageError(f"--format {format}: use table or json.")
    from ragjudge.services.overview import project_status

    with (open_project() if project is None else project) as opened:
        data = project_status(opened)
        progress = _assignment_progress(opened)
    if progress is not None:
        data["assignments"] = progress
    if format == "json":
        print_json(data)
        return
    _print_status(data)


def _assignment_progress(project: Any) -> dict | None:
    from ragjudge.services.labels.progress import assignment_progress

    return assignment_progress(project) or None


def _print_status(data: dict) -> None:
    from rich.table import Table

    from ragjudge.cli.common import console

    pool = data["pool"]
    share = f"{pool['judged'] / pool['pairs']:.0%}" if pool["pairs"] else "-"
    console.print(f"[bold]{safe(data['project'])}[/]  ({safe(data['db'])})")
    console.print(f"scale {data['scale']}, relevant from grade {data['threshold']}, gold rule {safe(data['rule'])}")
    console.print(_reference_line(data["reference"]))
    summary = Table(show_header=False, box=None, pad_edge=False)
    summary.add_column(style="bold")
    summary.add_column(justify="right")
    for key in ("queries", "chunks", "runs", "annotators", "labels", "flagged"):
        summary.add_row(key, f"{data[key]:,}")
    summary.add_row(f"pool (top {pool['depth']})", f"{pool['pairs']:,} pairs, {pool['judged']:,} judged ({share})")
    console.print(summary)
    if data["run_summary"]:
        runs = Table(title="runs", title_justify="left")
        for col in ("run", "queries", "entries", "depth"):
            runs.add_column(col, justify="left" if col == "run" else "right")
        for row in data["run_summary"]:
            runs.add_row(safe(row["name"]), str(row["queries"]), f"{row['entries']:,}", str(row["depth"]))
        console.print(runs)
    if data["labels_per_annotator"]:
        table = Table(title="labels", title_justify="left")
        table.add_column("annotator")
        table.add_column("events", justify="right")
        assigned = data.get("assignments", {})
        if assigned:
            table.add_column("assignment done", justify="right")
        for name, count in sorted(data["labels_per_annotator"].items()):
            row = [safe(name), f"{count:,}"]
            if assigned:
                a = assigned.get(name)
                row.append(f"{a['done']}/{a['assigned']}" if a else "-")
            table.add_row(*row)
        console.print(table)


def _reference_line(reference: list[dict]) -> str:
    """Which annotator's grades are the official qrels (the gold on their pairs), and whether
    they are complete."""
    if not reference:
        return "reference qrels: none ('ragjudge import qrels FILE --reference' sets them)"
    names = ", ".join(safe(r["name"]) + (" (complete: an unlisted pair of its queries is not "
                                         "relevant)" if r["complete"] else " (not complete: an "
                                         "unlisted pair is unjudged)") for r in reference)
    return f"reference qrels: {names}"
