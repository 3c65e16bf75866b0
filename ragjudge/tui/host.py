"""The app as every screen sees it: a typed host, never ``getattr`` with a default.

A screen reads who is at the keyboard and what they may do through :func:`host`: the
:class:`~ragjudge.tui.app.RagjudgeApp` it runs in, or -- pushed onto any other app (a test's
bare ``App``, an embedding program) -- :class:`LeastRights`, an unknown identity with the least
rights. A missing answer is therefore fewer rights, never a lead's. What a right allows is the
services' to decide: a screen passes :meth:`Host.access` to the service, which refuses or
filters, and shows the refusal (:func:`refuse`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ragjudge.services.access.identity import UNKNOWN, Identity
from ragjudge.services.access.rights import Access
from ragjudge.services.access.visibility import access_for

if TYPE_CHECKING:
    from textual.app import App

    from ragjudge.services.project.database import Project


@runtime_checkable
class Host(Protocol):
    """What a screen may ask of the app it runs in (:class:`~ragjudge.tui.app.RagjudgeApp` is
    one)."""

    project: Project
    annotator: str | None
    """who judges (the judging screens record under it); None until named"""
    queue_options: dict[str, Any]
    evaluation_options: dict[str, Any]
    opening_on_top: bool

    @property
    def identity(self) -> Identity:
        """Who is at the keyboard (:func:`ragjudge.services.access.identity.resolve`)."""
        ...

    def access(self) -> Access:
        """What :attr:`identity` may see and change now (asked again each time: a role or a
        setting may change while the app runs)."""
        ...

    def start_judging(self, *, from_home: bool, answers: bool = False) -> None: ...

    def confirm_annotator(self, name: str, proceed: Callable[[str], None], *,
                          cancelled: Callable[[], None], refuse: Callable[[str], None]) -> None: ...

    def open_evaluation(self) -> None: ...

    def open_agreement(self) -> None: ...

    def open_review(self) -> None: ...


class LeastRights:
    """The host of a screen pushed onto an app that is not ragjudge's: nobody known, so the
    least rights; judging goes under the name typed, as in the terminal app."""

    def __init__(self, app: App[Any], project: Project) -> None:
        self.app = app
        self.project = project
        self.annotator: str | None = None
        self.queue_options: dict[str, Any] = {}
        self.evaluation_options: dict[str, Any] = {}
        self.opening_on_top = False

    @property
    def identity(self) -> Identity:
        return UNKNOWN

    def access(self) -> Access:
        return access_for(self.project, UNKNOWN)

    def start_judging(self, *, from_home: bool, answers: bool = False) -> None:
        self._elsewhere()

    def confirm_annotator(self, name: str, proceed: Callable[[str], None], *,
                          cancelled: Callable[[], None], refuse: Callable[[str], None]) -> None:
        proceed(name)

    def open_evaluation(self) -> None:
        self._elsewhere()

    def open_agreement(self) -> None:
        self._elsewhere()

    def open_review(self) -> None:
        self._elsewhere()

    def _elsewhere(self) -> None:
        self.app.notify("That screen opens from the ragjudge app.", severity="warning")


def host(app: App[Any], project: Project) -> Host:
    """The host of a screen of ``project`` running in ``app``: the app itself when it is one
    (the ragjudge app), else :class:`LeastRights`."""
    if isinstance(app, Host):
        return app
    return LeastRights(app, project)
