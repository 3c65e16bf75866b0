"""The progress bar of every long command (imports, exports, evaluations): what is being done,
how far, how fast and how long it will still take.

Services report through a plain callback, ``progress(done, total, description)``, with an
optional ``unit`` (``bytes``, the default, or a noun such as ``entries``, ``lines`` or
``runs``) and an optional ``detail`` shown after the rate (e.g. tokens and failures);
``total`` may be None while unknown. The bar is drawn on standard error only when
standard error is a terminal (a pipe or a file gets nothing, so output stays clean for scripts),
and ``--quiet`` turns it off. Rich is imported only when a bar is drawn.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

ProgressFn = Callable[..., None]

QUIET_HELP = "No progress bar (it is drawn on standard error only when that is a terminal)."


def _shown(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress_bar(quiet: bool = False) -> Iterator[ProgressFn | None]:
    """A progress callback drawing one bar per description on standard error, or None (when
    ``quiet``, or standard error is not a terminal)."""
    if quiet or not _shown(sys.stderr):
        yield None
        return
    from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeRemainingColumn
    from rich.text import Text

    from ragjudge.cli.common import err_console, safe

    class Amount(ProgressColumn):
        """Done of total, in the task's unit (bytes as kB/MB/GB)."""

        def render(self, task: Any) -> Text:
            unit = task.fields.get("unit", "bytes")
            done = _amount(task.completed, unit)
            total = "?" if task.total is None else _amount(task.total, unit)
            return Text(f"{done}/{total}" + ("" if unit == "bytes" else f" {unit}"), style="progress.download")

    class Rate(ProgressColumn):
        """How fast: bytes or items a second."""

        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            if not speed:
                return Text("", style="progress.data.speed")
            unit = task.fields.get("unit", "bytes")
            shown = _amount(speed, unit) + ("/s" if unit == "bytes" else f" {unit}/s")
            return Text(shown, style="progress.data.speed")

    bar = Progress(TextColumn("{task.description}"), BarColumn(), Amount(), Rate(),
                   TimeRemainingColumn(), TextColumn("{task.fields[detail]}"),
                   console=err_console, transient=True)
    tasks: dict[str, Any] = {}

    def update(done: int, total: int | None, description: str, unit: str = "bytes",
               detail: str | None = None) -> None:
        if description not in tasks:
            tasks[description] = bar.add_task(safe(description), total=total, unit=unit, detail="")
        if detail is None:
            bar.update(tasks[description], completed=done, total=total)
        else:
            bar.update(tasks[description], completed=done, total=total, detail=safe(detail))

    with bar:
        yield update


def _amount(value: float, unit: str) -> str:
    if unit != "bytes":
        return f"{value:,.0f}"
    for size, suffix in ((1 << 30, "GB"), (1 << 20, "MB"), (1 << 10, "kB")):
        if value >= size:
            return f"{value / size:.1f} {suffix}"
    return f"{value:.0f} B"


__all__ = ["QUIET_HELP", "ProgressFn", "progress_bar"]
