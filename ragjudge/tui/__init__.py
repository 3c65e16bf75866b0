"""The Textual app. ``run_app(project)`` opens the home screen; with ``start='judge'`` it goes
straight to judging (``ragjudge annotate``)."""

from __future__ import annotations

from typing import Any

__all__ = ["make_app", "require_terminal", "run_app"]


def make_app(project, *, annotator: str | None = None, start: str = "home", **queue_options: Any):  # noqa: ANN001, ANN201
    """The app object (what the CLI runs and what tests and screenshots drive). In an app
    process of ``ragjudge serve`` it is the served app, which asks for a login token and takes
    no name from anyone."""
    from ragjudge.tui.served import ServedApp, is_served

    if is_served():
        if annotator is not None:
            from ragjudge.errors import UsageError

            raise UsageError("a browser session of 'ragjudge serve' takes no --annotator: "
                             "who labels is the login token's annotator.")
        return ServedApp(project, **queue_options)
    from ragjudge.tui.app import RagjudgeApp

    return RagjudgeApp(project, annotator=annotator, start=start, **queue_options)


def require_terminal() -> None:
    """A :class:`~ragjudge.errors.UsageError` unless standard input and output are a terminal
    (checked before a command does anything it would do only to open the app)."""
    import sys

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        from ragjudge.errors import UsageError

        raise UsageError(
            "the ragjudge app needs a terminal (standard input and output are not one here). "
            "Run it in a terminal, or use the commands: 'ragjudge status', 'ragjudge eval', "
            "'ragjudge agree', 'ragjudge demo --no-tui'."
        )


def run_app(project, *, annotator: str | None = None, start: str = "home", **queue_options: Any) -> None:  # noqa: ANN001
    """Run the app in the terminal until the user quits.

    ``queue_options`` go to :class:`ragjudge.services.labels.queue.JudgingQueue`: ``runs``, ``depth``,
    ``order``, ``queries``, ``category``, ``show_source``, ``recheck``.
    """
    require_terminal()
    app = make_app(project, annotator=annotator, start=start, **queue_options)
    app.run()
    if app.return_code not in (None, 0):
        raise SystemExit(app.return_code)
