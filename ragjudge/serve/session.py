"""The app process of one browser tab: ``python -m ragjudge.serve.session``, started by
``ragjudge serve`` with the project in ``RAGJUDGE_DB`` and ``RAGJUDGE_SERVED=1``.

It takes no arguments at all: nothing typed in a browser reaches its command line, and who
labels is decided by the login screen.
"""

from __future__ import annotations

import sys


def main() -> int:
    from ragjudge.errors import RagjudgeError
    from ragjudge.safetext import for_terminal
    from ragjudge.store.engine import env_db
    from ragjudge.tui.served import SERVED_ENV, ServedApp, is_served

    if not is_served():
        print(f"ragjudge: this is the app process of 'ragjudge serve' ({SERVED_ENV} is not set); "
              "run 'ragjudge serve' instead.", file=sys.stderr)
        return 2
    from ragjudge.services.project.database import Project

    try:
        project = Project.open(env_db())
    except RagjudgeError as exc:
        print(f"ragjudge: {for_terminal(exc)}", file=sys.stderr)
        return 2
    with project:
        app = ServedApp(project)
        app.run()
    return app.return_code or 0


if __name__ == "__main__":
    sys.exit(main())
