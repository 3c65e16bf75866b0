"""The app process of one browser terminal: ``python -m ragjudge.serve.session``, started by
the server with the project in ``RAGJUDGE_DB`` and ``RAGJUDGE_SERVED=1``.

It takes no arguments at all: nothing typed in a browser reaches its command line. Who works in
it is decided either by its login screen (a token typed into the terminal), or, for the lead's
terminal of ``ragjudge serve`` (``/lead/terminal``), by the server: ``RAGJUDGE_SERVED_AS`` names
the lead whose session cookie opened the terminal, checked by the server before the process
starts and again while it runs (the server closes the terminal once the session no longer
holds); the app then opens on the home screen as that lead, with no login screen.
"""

from __future__ import annotations

import os
import sys

SERVED_AS = "RAGJUDGE_SERVED_AS"
SERVED_DIGEST = "RAGJUDGE_SERVED_DIGEST"
"""The SHA-256 of the token the lead's web session logged in with: the terminal's writes are
checked against it (a new token or a retirement refuses them), as a tab's are."""


def main() -> int:
    from ragjudge.errors import RagjudgeError
    from ragjudge.safetext import for_terminal
    from ragjudge.store.engine import env_db
    from ragjudge.tui.served import SERVED_ENV, ServedApp, is_served

    if not is_served():
        print(f"ragjudge: this is the app process of 'ragjudge serve' ({SERVED_ENV} is not set); "
              "run 'ragjudge serve' instead.", file=sys.stderr)
        return 2
    from ragjudge.services.access import roster
    from ragjudge.services.access.identity import Identity
    from ragjudge.services.project.database import Project

    try:
        project = Project.open(env_db())
    except RagjudgeError as exc:
        print(f"ragjudge: {for_terminal(exc)}", file=sys.stderr)
        return 2
    with project:
        app = ServedApp(project)
        name = os.environ.get(SERVED_AS)
        if name:
            member = roster.member(project, name)
            if member is None or not member.is_lead or not member.active:
                print(f"ragjudge: {for_terminal(name)} is not an active lead of this project.",
                      file=sys.stderr)
                return 2
            # the server vouches for the lead: the app opens as them, on the home screen (the
            # server, not this process, checks their session from now on)
            digest = os.environ.get(SERVED_DIGEST) or None
            app.served_as(Identity(member.name, "token" if digest else "named", digest))
        app.run()
    return app.return_code or 0


if __name__ == "__main__":
    sys.exit(main())
