"""What every judging screen (pairs, answers) does alike: the ways out to the guidelines, the
evaluation and agreement screens, help, home and quit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragjudge.tui.host import host
from ragjudge.tui.screens.help import HelpRow


class SessionActions:
    """Mixed into a judging :class:`~textual.screen.Screen` that has ``project`` and
    ``from_home``; ``HELP_TITLE`` and :meth:`help_rows` fill its help screen."""

    HELP_TITLE = "Keys"
    project: Any
    from_home: bool
    app: Any

    def help_rows(self) -> Sequence[HelpRow]:
        return []

    def action_guidelines(self) -> None:
        from ragjudge.tui.screens.guidelines import GuidelinesScreen

        self.app.push_screen(GuidelinesScreen(self.project.get_setting("guidelines")))

    def action_evaluation(self) -> None:
        host(self.app, self.project).open_evaluation()

    def action_agreement(self) -> None:
        host(self.app, self.project).open_agreement()

    def action_help(self) -> None:
        from ragjudge.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(self.HELP_TITLE, self.help_rows()))

    def action_home(self) -> None:
        if self.from_home:
            self.app.pop_screen()

    async def action_quit(self) -> None:
        self.app.exit()
