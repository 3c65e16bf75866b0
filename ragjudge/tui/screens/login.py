"""The login screen of a browser session (``ragjudge serve``): a personal token, nothing else.

The token is typed or pasted into a masked field; who the person is and what they may do come
from the roster entry the token belongs to (:func:`~ragjudge.services.access.identity.from_token`),
never from a typed name. A
token that opens nothing gets this screen back with a short message that says no more than
that (not whether a name exists or was retired), and after repeated failures the field stays
closed a little longer each time.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Input, Label

from ragjudge.services.access.identity import Identity, from_token
from ragjudge.tui.widgets.literal import literal

FREE_ATTEMPTS = 2
"""Failed attempts answered at once; from the next one on the field waits before it reopens."""
MAX_WAIT_SECONDS = 30.0
TOKEN_MAX_LENGTH = 256
"""Longer than any token ragjudge issues (``rj_`` and 32 characters); a longer paste is cut."""


def wait_after(failures: int) -> float:
    """Seconds the field stays closed after ``failures`` failed attempts: none for the first
    few, then 1, 2, 4, ... up to :data:`MAX_WAIT_SECONDS`."""
    if failures <= FREE_ATTEMPTS - 1:
        return 0.0
    return min(MAX_WAIT_SECONDS, 2.0 ** (failures - FREE_ATTEMPTS))


class LoginScreen(Screen[Identity]):
    """Ask for the annotator's personal token; dismissed with the token's identity (whoever
    pushed it continues as that annotator)."""

    DEFAULT_CSS = """
    LoginScreen { align: center middle; }
    LoginScreen #login-status { color: $warning; margin-top: 1; }
    """

    def __init__(self, project) -> None:  # noqa: ANN001
        super().__init__()
        self.project = project
        self.failures = 0

    def compose(self) -> ComposeResult:
        title = Text("ragjudge  ", style="bold")
        title.append_text(literal(self.project.name, "bold cyan"))
        with Vertical(classes="prompt", id="login-box"):
            yield Label(title, classes="prompt-title")
            yield Label(literal("Your personal token (your lead gave it to you; it starts with rj_):"))
            yield Input(password=True, placeholder="rj_…", max_length=TOKEN_MAX_LENGTH, id="login-token")
            yield Label("", id="login-status")
            yield Label(literal("Enter to log in · labels are recorded under the token's name"),
                        classes="prompt-hint")

    def on_mount(self) -> None:
        self.query_one("#login-token", Input).focus()

    @on(Input.Submitted, "#login-token")
    def submitted(self, event: Input.Submitted) -> None:
        event.stop()
        field = event.input
        token = event.value.strip()
        field.value = ""
        if not token:
            self._status("Type or paste your token, then press Enter.")
            return
        identity = from_token(self.project, token)
        if identity is None:
            self.failures += 1
            self._refused(field)
            return
        self.dismiss(identity)

    def _refused(self, field: Input) -> None:
        wait = wait_after(self.failures)
        if not wait:
            self._status("That token does not open this project. Check it and try again.")
            return
        field.disabled = True
        self._status(f"That token does not open this project. Try again in {wait:g} s.")

        def reopen() -> None:
            field.disabled = False
            field.focus()
            self._status("That token does not open this project. Check it and try again.")

        self.set_timer(wait, reopen)

    def _status(self, message: str) -> None:
        self.query_one("#login-status", Label).update(literal(message))
