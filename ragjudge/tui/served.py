"""The app as a browser tab of ``ragjudge serve`` runs it.

``ragjudge serve`` starts one app process per tab with :data:`SERVED_ENV` set. Such a process
trusts nothing the person at the browser types about who they are: it opens on the login
screen, and identity and role come from the personal token alone
(:func:`ragjudge.services.access.identity.from_token`). After login, an annotator reaches
judging, their own labels and the aggregate scores; every other screen (agreement,
adjudication, review, assignment, whatever is added later) is for leads: the screens an
annotator may open are listed here, and any other is refused (deny by default).

From the login on, the tab's project is guarded by the token
(:func:`~ragjudge.services.access.identity.token_guard`): every write transaction checks, inside
the transaction, that the token still opens the project, so a token revoked (a new one issued,
the annotator retired) records nothing after the revocation -- not only from the next periodic
check, which then ends the session.

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

from ragjudge.services.access.identity import UNKNOWN, Identity, still_valid, token_guard
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
    "ragjudge.tui.screens.prompts.Refused",
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
        self._identity: Identity | None = None
        """The token's identity (None until a token was accepted)."""
        self.server_pid = os.getppid()
        super().__init__(project, annotator=None, start="login", **queue_options)

    def served_as(self, identity: Identity) -> None:
        """Open as ``identity`` with no login screen: the server vouched for them (a lead's
        terminal behind the web login); writes are guarded by their token as after a login."""
        self._identity = identity
        self.project = self.project.guarded(token_guard(identity))
        self.title = f"ragjudge — {identity.name}"

    def on_mount(self) -> None:
        from ragjudge.tui.screens.home import HomeScreen
        from ragjudge.tui.screens.login import LoginScreen

        if self._identity is not None:
            self.push_screen(HomeScreen(self.project))
        else:
            self.push_screen(LoginScreen(self.project), self.logged_in)
        self.set_interval(SERVER_CHECK_SECONDS, self._server_gone)
        self.set_interval(TOKEN_CHECK_SECONDS, self._check_token)

    def _check_token(self) -> None:
        """A token revoked (a new one issued) or its annotator retired ends the session (its
        writes were refused from the revocation on: the project is guarded); a changed role
        applies at once, since rights are asked of the roster each time."""
        if self._identity is None or self.closing:
            return
        with self.project.read() as session:
            valid = still_valid(session, self._identity)
        if not valid:
            self.exit(message="Your token no longer opens this project; nothing after this was recorded.")

    def _server_gone(self) -> None:
        """A server killed outright cannot tell its sessions to quit: a session whose server
        is gone (it was adopted by another process) ends. Every label is already on disk."""
        if os.getppid() != self.server_pid:
            self.exit()

    # -- identity: from the token only -----------------------------------------------------

    @property
    def identity(self) -> Identity:
        """The token's identity; nobody (the least rights) before login."""
        return self._identity or UNKNOWN

    @property
    def annotator(self) -> str | None:
        """The logged-in annotator's name; labels are recorded under it and nothing else."""
        return self.identity.name

    @annotator.setter
    def annotator(self, value: str | None) -> None:
        """Names assigned by the terminal app's code paths (which trust a typed name) are
        ignored: a served session's name is the token's."""

    def logged_in(self, identity: Identity | None) -> None:
        """The login screen accepted a token of ``identity``: open the home screen as them,
        on the project guarded by the token from now on."""
        from ragjudge.tui.screens.home import HomeScreen

        if identity is None:
            return
        self._identity = identity
        self.project = self.project.guarded(token_guard(identity))
        self.title = f"ragjudge — {identity.name}"
        self.push_screen(HomeScreen(self.project))

    # -- screens: annotators open only theirs ----------------------------------------------

    def _allowed(self, screen: Any) -> bool:
        if not isinstance(screen, Screen):  # a name of an installed screen: none are installed
            return False
        name = screen_name(screen)
        if self._identity is None:
            return name in BEFORE_LOGIN
        return name in ANNOTATOR_SCREENS or self.access().lead

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

    def save_screenshot(self, *args: Any, **kwargs: Any) -> str:
        self._not_served("Saving screenshots")
        return ""

    def deliver_screenshot(self, *args: Any, **kwargs: Any) -> None:
        self._not_served("Saving screenshots")

    def deliver_text(self, *args: Any, **kwargs: Any) -> None:
        self._not_served("Downloading files")

    def deliver_binary(self, *args: Any, **kwargs: Any) -> None:
        self._not_served("Downloading files")

    def open_url(self, url: str, *, new_tab: bool = True) -> None:
        self._not_served("Opening links")

    def action_suspend_process(self) -> None:
        self._not_served("Suspending the app")

    def _not_served(self, what: str) -> None:
        self.notify(f"{what} is not available in a browser session.", severity="warning")
