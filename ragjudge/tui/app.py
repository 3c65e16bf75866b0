"""The ragjudge Textual app: home, judging, and the evaluation and agreement screens."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

from rich.text import Text
from textual.app import App, SystemCommand
from textual.notifications import SeverityLevel
from textual.screen import Screen

from ragjudge.errors import RagjudgeError
from ragjudge.safetext import for_terminal


class RagjudgeApp(App):
    """One project open in the terminal.

    ``start='judge'`` goes straight to judging (``ragjudge annotate``), asking the annotator's
    name first when none was given; ``start='answers'`` to judging generated answers
    (``ragjudge annotate --answers``); ``start='home'`` opens the home screen.
    """

    CSS_PATH = "app.tcss"
    TITLE = "ragjudge"
    ENABLE_COMMAND_PALETTE = True

    def __init__(self, project, *, annotator: str | None = None, start: str = "home",  # noqa: ANN001
                 **queue_options: Any) -> None:
        super().__init__()
        self.project = project
        self.annotator = annotator
        self.start = start
        self.queue_options = queue_options
        self.judge_screen = None
        self.closing = False
        """True once the app is exiting: no action starts any more (see :meth:`run_action`)."""

    # -- every notification and the exit message: text, never markup or control ------------

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every notification of every screen comes here: messages quote the user's data (ids,
        names, what was typed), so they are shown as text, with control characters visible."""
        super().notify(for_terminal(message), title=for_terminal(title), severity=severity,
                       timeout=timeout, markup=False)

    def exit(self, result: Any = None, return_code: int = 0, message: Any = None) -> None:
        """Quit; a message (printed to the terminal afterwards) is shown as text, not markup.
        From here on no action runs (see :meth:`run_action`)."""
        self.closing = True
        if isinstance(message, str):
            message = Text(for_terminal(message))
        super().exit(result, return_code, message)

    def on_mount(self) -> None:
        from ragjudge.tui.screens.home import HomeScreen

        if self.start == "judge":
            self.start_judging(from_home=False)
        elif self.start == "answers":
            self.start_judging(from_home=False, answers=True)
        elif self.start == "login":  # a browser tab of `ragjudge serve` (see tui/served.py)
            from ragjudge.tui.screens.login import LoginScreen

            self.push_screen(LoginScreen(self.project))
        else:
            self.push_screen(HomeScreen(self.project))

    # -- closing ---------------------------------------------------------------------------

    async def run_action(self, action: Any, default_namespace: Any = None,
                         namespaces: Any = None) -> bool:
        """Every key, click and palette entry runs its action here. Keys already queued when
        the app began to exit (``q`` then ``e`` typed quickly) are dropped: their action would
        open or query a screen that is being torn down."""
        if self.closing:
            return True
        return await super().run_action(action, default_namespace, namespaces)

    # -- judging ---------------------------------------------------------------------------

    def start_judging(self, *, from_home: bool, answers: bool = False) -> None:
        """Judge pairs, or with ``answers`` the runs' generated answers, once the annotator is
        named."""
        opener = self._open_answer_judging if answers else self._open_judging
        if self.annotator:
            opener(self.annotator, from_home=from_home)
            return
        from ragjudge.tui.screens.prompts import TextPrompt

        def named(name: str | None) -> None:
            if not name:
                if not from_home:
                    self.exit(message="No annotator name given; nothing was recorded.")
                return
            opener(name, from_home=from_home)

        from ragjudge.services.judging import annotator_names

        known = annotator_names(self.project)
        note = None
        if known:
            note = "Annotators of this project: " + ", ".join(known[:12]) + (", …" if len(known) > 12 else "")
        self.push_screen(TextPrompt("Your name (every label you give is recorded under it):",
                                    placeholder="e.g. alice", note=note), named)

    def _open_judging(self, name: str, *, from_home: bool) -> None:
        from ragjudge.services import judging
        from ragjudge.tui.screens.judge import JudgeScreen

        try:
            name = judging.check_annotator(name)
            opts = {k: v for k, v in self.queue_options.items() if v is not None}
            queue = judging.JudgingQueue(self.project, name, **opts)
            judging.ensure_annotator(self.project, name)
        except RagjudgeError as exc:
            if from_home:
                self.notify(str(exc), severity="error", timeout=10)
            else:
                self.exit(return_code=2, message=f"ragjudge: {exc}")
            return
        self.annotator = name
        self.push_screen(JudgeScreen(self.project, queue, from_home=from_home))
        self._guidelines_once(name)

    def _open_answer_judging(self, name: str, *, from_home: bool) -> None:
        from ragjudge.services import judging
        from ragjudge.services.answers import AnswerQueue
        from ragjudge.tui.screens.answers import AnswerJudgeScreen

        try:
            name = judging.check_annotator(name)
            opts = {k: v for k, v in self.queue_options.items()
                    if k in ("runs", "queries", "category", "show_source") and v is not None}
            queue = AnswerQueue(self.project, name, **opts)
            judging.ensure_annotator(self.project, name)
        except RagjudgeError as exc:
            if from_home:
                self.notify(for_terminal(exc), severity="error", timeout=10, markup=False)
            else:
                self.exit(return_code=2, message=f"ragjudge: {for_terminal(exc)}")
            return
        self.annotator = name
        self.push_screen(AnswerJudgeScreen(self.project, queue, from_home=from_home))
        self._guidelines_once(name)

    def _guidelines_once(self, name: str) -> None:
        from ragjudge.services import judging
        from ragjudge.tui.screens.guidelines import GuidelinesScreen

        if not judging.annotator_seen_guidelines(self.project, name):
            markdown = self.project.get_setting("guidelines")
            if markdown:
                self.push_screen(GuidelinesScreen(markdown, first_time=True),
                                 lambda _: judging.mark_guidelines_seen(self.project, name))

    # -- the other engineers' screens ------------------------------------------------------

    def _open_optional(self, module: str, name: str, what: str) -> None:
        try:
            screen_cls = getattr(importlib.import_module(module), name)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            self.notify(f"The {what} screen is not available yet.", severity="warning")
            return
        self.push_screen(screen_cls(self.project))

    def open_evaluation(self) -> None:
        self._open_optional("ragjudge.tui.screens.evaluation", "EvaluationScreen", "evaluation")

    def open_agreement(self) -> None:
        self._open_optional("ragjudge.tui.screens.agreement", "AgreementScreen", "agreement")

    # -- the command palette lists every action of the screen ------------------------------

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        seen: set[str] = set()
        names = getattr(screen, "ACTION_NAMES", {})
        for binding in getattr(screen, "BINDINGS", []):
            action = getattr(binding, "action", None)
            if action is None or action in seen:
                continue
            seen.add(action)
            keys = binding.key_display or binding.key.split(",")[0]
            title = (names.get(action) or binding.description or action).capitalize()
            yield SystemCommand(f"{title}  ({keys})", binding.tooltip or title,
                                _runner(screen, action))
        yield from super().get_system_commands(screen)


def _runner(screen: Screen, action: str):  # noqa: ANN202
    async def run() -> None:
        await screen.run_action(action)

    return run
