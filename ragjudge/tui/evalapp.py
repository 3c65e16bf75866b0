"""The app opened on the evaluation screen (``ragjudge eval --tui``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def evaluation_app(project, *, rule: str | None = None, measures: list[str] | None = None,  # noqa: ANN001, ANN201
                   threshold: int | None = None):
    """The app opened on the evaluation screen (``ragjudge eval --tui``); Escape leads to the home
    screen."""
    from ragjudge.tui.app import RagjudgeApp

    class EvaluationApp(RagjudgeApp):
        CSS_PATH = str(Path(__file__).resolve().parent / "app.tcss")

        def on_mount(self) -> None:
            # Textual calls RagjudgeApp.on_mount too (it pushes the home screen): go on top of it
            self.opening_on_top = True
            self.call_after_refresh(self._on_top)

        def _on_top(self) -> None:
            self.opening_on_top = False
            self.open_evaluation()

    app = EvaluationApp(project)
    app.evaluation_options = {k: v for k, v in
                              {"rule": rule, "measures": measures, "threshold": threshold}.items()
                              if v is not None}
    return app


def run_evaluation_app(project, **options: Any) -> None:  # noqa: ANN001
    """Run :func:`evaluation_app` in the terminal until the user quits."""
    app = evaluation_app(project, **options)
    app.run()
    if app.return_code not in (None, 0):
        raise SystemExit(app.return_code)
