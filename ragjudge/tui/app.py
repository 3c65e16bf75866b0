"""The ragjudge Textual app: home, judging, and the evaluation and agreement screens."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

from rich.text import Text
from textual.app import App, SystemCommand
from textual.notifications import SeverityLevel
from textual.screen import Screen

from ragjudge.errors import RagjudgeError
from ragjudge.safetext import for_terminal
from ragjudge.services.access.identity import UNKNOWN, Identity, resolve
from ragjudge.services.access.rights import Access
from ragjudge.services.access.visibility import access_for


class RagjudgeApp(App):
    """One project open in the terminal.

    ``start='judge'`` goes straight to judging (``ragjudge annotate``), asking the annotator's
    name first when none was given, and asking again when the project does not know the name
    (:meth:`confirm_annotator`; ``new_annotator=True`` skips that question); ``start='answers'`` to judging generated answers
    (``ragjudge annotate --answers``); ``start='home'`` opens the home screen; ``start=None``
    nothing (a program that opens its own screen on the app).
    """

    CSS_PATH = "app.tcss"
    TITLE = "ragjudge"
    ENABLE_COMMAND_PALETTE = True

    def __init__(self, project, *, annotator: str | None = None, start: str | None = "home",  # noqa: ANN001
                 new_annotator: bool = False, **queue_options: Any) -> None:
        super().__init__()
        self.project = project
        self.annotator = annotator
        """Who works in this app: the name judging goes under (``ragjudge serve`` sets it from
        a login token). :attr:`identity` follows it."""
        self.evaluation_options: dict[str, Any] = {}
        """Options of the evaluation screen (``ragjudge eval --tui``: rule, measures, threshold)."""
        self.new_annotator = new_annotator
        """the name given on the command line is new on purpose (``--new-annotator``)"""
        self.start = start
        self.queue_options = queue_options
        self.judge_screen = None
        self.closing = False
        """True once the app is exiting: no action starts any more (see :meth:`run_action`)."""
        self.opening_on_top = False
        """True while a screen is about to open on top of the home screen as the app starts
        (``ragjudge eval --tui``): the home screen then counts only when it is shown."""

    # -- who is looking: every screen asks here, through ragjudge.tui.host ----------------

    @property
    def identity(self) -> Identity:
        """The annotator named (``--annotator``, or typed when judging starts), else
        ``$RAGJUDGE_USER``, else the login name (:func:`~ragjudge.services.access.identity.resolve`);
        a name that is not one is nobody, with the least rights."""
        try:
            return resolve(self.annotator)
        except RagjudgeError:
            return UNKNOWN

    def access(self) -> Access:
        """What :attr:`identity` may see and change now."""
        return access_for(self.project, self.identity)

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
        elif self.start in ("login", None):  # a browser tab of `ragjudge serve` (tui/served.py
            return                            # logs in), or a host that opens its own screen
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

        def refuse(message: str) -> None:
            if from_home:
                self.notify(message, severity="error", timeout=10)
            else:
                self.exit(return_code=2, message=f"ragjudge: {message}")

        def cancelled() -> None:
            if not from_home:
                self.exit(message="No annotator chosen; nothing was recorded.")

        def named(name: str | None) -> None:
            if not name:
                if not from_home:
                    self.exit(message="No annotator name given; nothing was recorded.")
                return
            self.confirm_annotator(name, lambda chosen: opener(chosen, from_home=from_home),
                                   cancelled=cancelled, refuse=refuse)

        if self.annotator:
            named(self.annotator)
            return
        from ragjudge.tui.screens.prompts import TextPrompt

        from ragjudge.services.events.annotators import annotator_names

        known = annotator_names(self.project)
        note = None
        if known:
            note = "Annotators of this project: " + ", ".join(known[:12]) + (", …" if len(known) > 12 else "")
        self.push_screen(TextPrompt("Your name (every label you give is recorded under it):",
                                    placeholder="e.g. alice", note=note), named)

    def confirm_annotator(self, name: str, proceed: Callable[[str], None], *,
                          cancelled: Callable[[], None], refuse: Callable[[str], None]) -> None:
        """Start a session under ``name`` only when it is meant: a retired name, or an unknown
        one in a closed roster, is refused; an unknown name where annotators exist asks first,
        offering the known name it most likely means (``Ana`` for ``ana``), so that a slip of
        the keyboard does not start a second annotator with an empty queue."""
        from ragjudge.services.events import annotators as judging_annotators
        from ragjudge.services.access import roster
        from ragjudge.tui.screens.prompts import NameChoice

        try:
            name = judging_annotators.check_annotator(name)
            roster.check_can_label(self.project, name)
            known = [m.name for m in roster.members(self.project, counts=False)]
        except RagjudgeError as exc:
            refuse(str(exc))
            return
        if name in known or not known or (self.new_annotator and name == self.annotator):
            proceed(name)
            return

        def chosen(answer: str | None) -> None:
            if answer is None:
                cancelled()
            else:
                proceed(answer)

        self.push_screen(NameChoice(name, roster.nearest_name(self.project, name), known), chosen)

    def _open_judging(self, name: str, *, from_home: bool) -> None:
        from ragjudge.services.events import annotators as judging_annotators
        from ragjudge.services.labels import queue as judging_queue
        from ragjudge.services.scoring import settled
        from ragjudge.tui.screens.judge import JudgeScreen

        try:
            name = judging_annotators.check_annotator(name)
            opts = {k: v for k, v in self.queue_options.items() if v is not None}
            access = access_for(self.project, self._judge_identity(name))
            if opts.get("show_source"):
                try:  # the queue's own refusal, asked first: judging goes on without sources
                    judging_queue.check_sees_sources(access)
                except RagjudgeError as exc:
                    self.notify(f"{exc} Judging goes on without them.", severity="warning",
                                timeout=8)
                    opts["show_source"] = False
            queue = settled.judging_queue(self.project, name, access=access, **opts)
            judging_annotators.ensure_annotator(self.project, name)
        except RagjudgeError as exc:
            if from_home:
                self.notify(str(exc), severity="error", timeout=10)
            else:
                self.exit(return_code=2, message=f"ragjudge: {exc}")
            return
        self.annotator = name
        self.push_screen(JudgeScreen(self.project, queue, from_home=from_home))
        self._guidelines_once(name)

    def _judge_identity(self, name: str) -> Identity:
        """Who judges under ``name``: the app's identity when it is theirs (a login token's),
        else the name as typed."""
        identity = self.identity
        return identity if identity.name == name else Identity(name, "named")

    def _open_answer_judging(self, name: str, *, from_home: bool) -> None:
        from ragjudge.services.events import annotators as judging_annotators
        from ragjudge.services.labels.answers import AnswerQueue
        from ragjudge.tui.screens.answers import AnswerJudgeScreen

        try:
            name = judging_annotators.check_annotator(name)
            opts = {k: v for k, v in self.queue_options.items()
                    if k in ("runs", "queries", "category", "show_source") and v is not None}
            queue = AnswerQueue(self.project, name, **opts)
            judging_annotators.ensure_annotator(self.project, name)
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
        from ragjudge.services.events import annotators as judging_annotators
        from ragjudge.tui.screens.guidelines import GuidelinesScreen

        if judging_annotators.is_new_to_judging(self.project, name):
            markdown = self.project.get_setting("guidelines")
            if markdown:
                self.push_screen(GuidelinesScreen(markdown, first_time=True),
                                 lambda _: judging_annotators.mark_guidelines_seen(self.project, name))

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

    def open_review(self) -> None:
        self._open_optional("ragjudge.tui.screens.review", "ReviewScreen", "review")

    # -- the command palette lists every action of the screen ------------------------------

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every action of the screen once, then Textual's own commands that the screen does
        not already offer. A screen's ``offers(action)`` leaves out what does not apply (the
        grades off the project's scale); ``ACTION_NAMES`` and ``ACTION_KEYS`` name an action
        and its key where the footer's short forms would mislead."""
        seen: set[str] = set()
        titles: set[str] = set()
        names = getattr(screen, "ACTION_NAMES", {})
        shown_keys = getattr(screen, "ACTION_KEYS", {})
        offers = getattr(screen, "offers", None)
        for binding in getattr(screen, "BINDINGS", []):
            action = getattr(binding, "action", None)
            if action is None or action in seen or (offers is not None and not offers(action)):
                continue
            seen.add(action)
            keys = shown_keys.get(action) or binding.key_display or binding.key.split(",")[0]
            title = (names.get(action) or binding.description or action).capitalize()
            titles.add(title.lower())
            yield SystemCommand(f"{title}  ({keys})", binding.tooltip or title,
                                _runner(screen, action))
        # Textual's Quit and Keys where the screen has its own quit and list of keys
        own = {"quit": "quit" in seen, "keys": "help" in seen}
        for command in super().get_system_commands(screen):
            word = command.title.lower()
            if own.get(word) or word in titles:
                continue
            yield command


def _runner(screen: Screen, action: str):  # noqa: ANN202
    async def run() -> None:
        await screen.run_action(action)

    return run
