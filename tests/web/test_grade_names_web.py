"""The web page's grade buttons and the API's scale name the grades as the project now names
them: a lead's rename reaches a server that was already running, without a restart."""

from __future__ import annotations

from projectkit import rights
from webkit import bearer, logged_in

from ragjudge.services.labels.scale import set_grade_names
from ragjudge.services.project.database import Project

NAMES = ["Off topic", "Near", "Useful", "<b>Answer</b>"]


def test_a_rename_reaches_the_running_servers_pages_and_api(web, site):
    with logged_in(web, site.tokens["ana"]) as client:
        assert "Irrelevant" in client.get("/judge").text  # the 0-3 default names first
        with Project.open(site.db) as project:
            set_grade_names(project, NAMES, access=rights(project, "dora"))
        page = client.get("/judge").text
        for grade, name in enumerate(NAMES[:3]):
            assert f'<span class="grade-name">{grade} {name}</span>' in page
        assert "&lt;b&gt;Answer&lt;/b&gt;" in page and "<b>Answer</b>" not in page  # shown, not run
        assert "Irrelevant" not in page
    with bearer(web, site.tokens["ana"]) as api:
        levels = api.get("/api/v1/me").json()["scale"]["levels"]
        assert [level["name"] for level in levels] == NAMES
