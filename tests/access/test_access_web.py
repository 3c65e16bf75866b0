"""The web pages and the JSON API of ``ragjudge serve``, as an annotator of a blind project
with a lead: the same project and secrets as the command and screen tables
(:mod:`test_access_table`), the same rule.

Every GET route the server has must have a row (:data:`ROUTES`): what ann is answered (and that
no secret is in it) and what dora is answered (and what of the secrets she sees there). A new
route fails :func:`test_every_route_has_a_row` until it is entered here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from projectkit import rights
from test_access_table import ANN, LEAD, SECRET, SECRETS, base, db  # noqa: F401 - fixtures

from ragjudge.services.access import roster
from ragjudge.services.project.database import Project

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "web"))
import webkit  # the web tests' helpers, in tests/web

ROUTES: dict[str, tuple[int, int, str | None]] = {
    # path: (ann's status, dora's status, what dora's answer holds: None for nothing to look for)
    "/": (303, 303, None),
    "/healthz": (200, 200, None),
    "/login": (303, 303, None),  # logged in already: on to the judging page
    "/judge": (200, 200, None),
    "/answers": (200, 200, None),
    "/history": (200, 200, None),
    "/guidelines": (200, 200, None),
    "/lead": (403, 200, None),
    "/lead/terminal": (403, 200, None),
    "/api/v1/me": (200, 200, None),
    "/api/v1/pairs/next": (200, 200, None),
    "/api/v1/pairs/at?query_id=q1&chunk_id=c05": (200, 200, None),
    "/api/v1/labels/history": (200, 200, None),
    "/api/v1/news": (200, 200, None),
    "/api/v1/answers/next": (200, 200, None),
    "/api/v1/answers/at?position=0": (404, 404, None),
    "/api/v1/eval?per_query=true&measure=P@2": (403, 200, None),
    "/api/v1/qrels": (403, 200, SECRET),
    "/api/v1/annotators": (403, 200, "bo"),
}
"""Each GET route with its query string (the routes without a row are found by
:func:`test_every_route_has_a_row`)."""

NOT_ROUTES = {"", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc", "/static",
              "/lead/terminal/static", "/lead/terminal/ws"}
"""FastAPI's own description of the API, the static files (no data), and the lead terminal's
websocket (an annotator's cookie is refused there: :mod:`tests.web.test_terminal`)."""


@pytest.fixture
def served(db):  # noqa: F811 - the fixture of test_access_table
    """The server on a copy of the blind project, with ann's and dora's tokens."""
    with Project.open(db) as project:
        tokens = {name: roster.issue_token(project, name, access=rights(project, LEAD))
                  for name in (ANN, LEAD)}
    running = webkit.start(db)
    try:
        yield running, tokens
    finally:
        running.stop()


@pytest.mark.slow
def test_every_route_has_a_row(served):
    running, _ = served
    app = running.server.config.app.fastapi
    paths = {getattr(r, "path", "") for r in app.routes if "GET" in (getattr(r, "methods", None) or {"GET"})}
    listed = {p.split("?")[0] for p in ROUTES}
    missing = {p for p in paths if p not in listed and p not in NOT_ROUTES and not p.startswith("/static")}
    # a route with a path parameter is a POST (they are checked by the web tests); a GET one
    # would need a row with the parameter filled in
    assert missing == set(), f"GET routes with no row in the web access table: {sorted(missing)}"


@pytest.mark.slow
@pytest.mark.parametrize("path", list(ROUTES))
def test_an_annotator_sees_no_other_grade_and_a_lead_does(served, path):
    running, tokens = served
    want_ann, want_lead, lead_sees = ROUTES[path]
    for who, want in ((ANN, want_ann), (LEAD, want_lead)):
        with webkit.logged_in(running, tokens[who]) as client:
            answer = client.get(path, follow_redirects=False)
        assert answer.status_code == want, (who, path, answer.status_code, answer.text[:300])
        if who == ANN:
            for secret in SECRETS:
                assert secret not in answer.text, (path, secret)
        elif lead_sees is not None:
            assert lead_sees in answer.text, path
    with webkit.bearer(running, tokens[ANN]) as script:  # a script with ann's token: the same
        if path.startswith("/api/"):
            answer = script.get(path)
            assert answer.status_code == want_ann and not any(s in answer.text for s in SECRETS)


def test_an_annotator_cannot_take_another_s_grades_as_the_gold_through_the_api(served):
    running, tokens = served
    with webkit.bearer(running, tokens[LEAD]) as lead:
        assert lead.get("/api/v1/eval", params={"rule": "annotator:bo"}).status_code == 200
    with Project.open(running.settings.db) as project:
        roster.set_role(project, LEAD, "annotator", access=rights(project, LEAD))
    with webkit.bearer(running, tokens[LEAD]) as former:  # a role taken away applies at once
        assert former.get("/api/v1/qrels").status_code == 403
