"""The app as a browser tab of ``ragjudge serve`` runs it.

``ragjudge serve`` starts one app process per tab with :data:`SERVED_ENV` set. Such a process
trusts nothing the person at the browser types about who they are: it opens on the login
screen, and identity and role come from the personal token alone (``roster.by_token``). After
login, an annotator reaches judging, their own labels and the aggregate scores; every other
screen (agreement, adjudication, review, assignment, whatever is added later) is for leads: the
screens an annotator may open are listed here, and any other is refused (deny by default).

A served session has no way to the server's files or shell, whatever the role: no screenshots
saved or delivered, no files delivered to the browser, no URLs opened, no suspend, no palette
entry that does any of these.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from textual.app import SystemCommand
from textual.screen import Screen

from ragjudge.tui.app import RagjudgeApp

SERVED_ENV = "RAGJUDGE_SERVED"
"""Set to ``1`` by ``ragjudge serve`` in the environment of every app process it starts."""

ANNOTATOR_SCREENS = frozenset({
    "ragjudge.tui.screens.login.LoginScreen",
    "ragjudge.tui.screens.home.HomeScreen",
    "ragjudge.tui.screens.judge.JudgeScreen",
    "ragjudge.tui.screens.answers.AnswerJudgeScreen",
    "ragjudge.tui.screens.facets.FacetsScreen",
    "ragjudge.tui.screens.guidelines.GuidelinesScreen",
    "ragjudge.tui.screens.help.HelpScreen",
    "ragjudge.tui.screens.prompts.TextPrompt",
    "ragjudge.tui.screens.prompts.ConfirmPrompt",
    "ragjudge.tui.screens.prompts.FindQuery",
    "ragjudge.tui.screens.evaluation.EvaluationScreen",
    "ragjudge.tui.widgets.evalpane.ExplainModal",
    "textual.command.CommandPalette",
})
"""The screens an annotator who is not a lead may open in a served session."""

BEFORE_LOGIN = frozenset({"ragjudge.tui.screens.login.LoginScreen", "textual.command.CommandPalette"})
"""The screens anyone may see before a token was accepted."""

HIDDEN_SYSTEM_COMMANDS = frozenset({"Screenshot"})
"""Textual's own palette entries that write a file (a screenshot) or hand one to the browser."""


SERVER_CHECK_SECONDS = 1.0
"""How often a session looks whether its server is still there."""
TOKEN_CHECK_SECONDS = 5.0
"""How often a session looks whether its token still opens the project."""


def is_served() -> bool:
    """Whether this process is an app process of ``ragjudge serve``."""
    return os.environ.get(SERVED_ENV) == "1"


def screen_name(screen: Screen) -> str:
    kind = type(screen)
    return f"{kind.__module__}.{kind.__qualname__}"


class ServedApp(RagjudgeApp):
    """One browser tab: the login screen first, then the app under the token's identity."""

    def __init__(self, project, **queue_options: Any) -> None:  # noqa: ANN001
        self.member = None
        """The roster member the token belongs to (None until a token was accepted)."""
        self._token: str | None = None
        self.server_pid = os.getppid()
        super().__init__(project, annotator=None, start="login", **queue_options)

    def on_mount(self) -> None:
        self.set_interval(SERVER_CHECK_SECONDS, self._server_gone)
        self.set_interval(TOKEN_CHECK_SECONDS, self._check_token)

    def _check_token(self) -> None:
        """A token revoked (a new one issued) or its annotator retired ends the session; a
        changed role applies from now on."""
        if self.member is None or self._token is None or self.closing:
            return
        from ragjudge.services.access import roster

        found = roster.by_token(self.project, self._token)
        if found is None or found.name != self.member.name:
            self.exit(message="Your token no longer opens this project; nothing after this was recorded.")
            return
        self.member = found

    def _server_gone(self) -> None:
        """A server killed outright cannot tell its sessions to quit: a session whose server
        is gone (it was adopted by another process) ends. Every label is already on disk."""
        if os.getppid() != self.server_pid:
            self.exit()

    # -- identity: from the token only -----------------------------------------------------

    @property
    def annotator(self) -> str | None:
        """The logged-in annotator's name; labels are recorded under it and nothing else."""
        return None if self.member is None else self.member.name

    @annotator.setter
    def annotator(self, value: str | None) -> None:
        """Names assigned by the terminal app's code paths (which trust a typed name) are
        ignored: a served session's name is the token's."""

    @property
    def is_lead(self) -> bool:
        """Whether the logged-in member is an active lead (a project without leads has none
        here: in a browser, lead work needs the role)."""
        return self.member is not None and self.member.is_lead and self.member.active

    @is_lead.setter
    def is_lead(self, value: bool) -> None:
        """The role is the token's, as for :attr:`annotator`."""

    def logged_in(self, member: Any, token: str) -> None:
        """The login screen accepted ``member``'s ``token``: open the home screen as them. The
        token stays in this process (as the project's credentials do) to be checked again."""
        from ragjudge.tui.screens.home import HomeScreen

        self.member = member
        self._token = token
        self.title = f"ragjudge — {member.name}"
        self.switch_screen(HomeScreen(self.project))

    # -- screens: annotators open only theirs ----------------------------------------------

    def _allowed(self, screen: Any) -> bool:
        if not isinstance(screen, Screen):  # a name of an installed screen: none are installed
            return False
        name = screen_name(screen)
        if self.member is None:
            return name in BEFORE_LOGIN
        return self.is_lead or name in ANNOTATOR_SCREENS

    def _refuse(self, screen: Any) -> None:
        what = getattr(screen, "TITLE", None) or type(screen).__name__.removesuffix("Screen").lower()
        self.notify(f"The {what} screen is for leads of this project; ask a lead.",
                    severity="warning", timeout=6)

    def push_screen(self, screen: Any, *args: Any, **kwargs: Any) -> Any:
        if not self._allowed(screen):
            self._refuse(screen)
            return None
        return super().push_screen(screen, *args, **kwargs)

    def switch_screen(self, screen: Any) -> Any:
        if not self._allowed(screen):
            self._refuse(screen)
            return None
        return super().switch_screen(screen)

    # -- nothing that reaches the server's files or shell, or the internet -----------------

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        for command in super().get_system_commands(screen):
            if command.title not in HIDDEN_SYSTEM_COMMANDS:
                yield command

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        self._not_served("Saving screenshots")

    def save_screenshot(self, *args: Any, **kwargs: Any) -> str:  # type: ignore[override]
        self._not_served("Saving screenshots")
        return ""

    def deliver_screenshot(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        self._not_served("Saving screenshots")

    def deliver_text(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        self._not_served("Downloading files")

    def deliver_binary(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        self._not_served("Downloading files")

    def open_url(self, url: str, *, new_tab: bool = True) -> None:
        self._not_served("Opening links")

    def action_suspend_process(self) -> None:
        self._not_served("Suspending the app")

    def _not_served(self, what: str) -> None:
        self.notify(f"{what} is not available in a browser session.", severity="warning")
