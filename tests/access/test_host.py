"""The app as screens see it (``ragjudge.tui.host``): the ragjudge app is a host with the
identity it was given; any other app is a host with the least rights, never a lead's."""

from __future__ import annotations

from projectkit import make_small_project, rights
from textual.app import App

from ragjudge.services.access import roster
from ragjudge.tui.host import Host, LeastRights, host


def test_the_ragjudge_app_and_a_served_tab_are_hosts(tmp_path, monkeypatch):
    from ragjudge.tui import make_app
    from ragjudge.tui.served import ServedApp

    monkeypatch.setenv("RAGJUDGE_USER", "ben")
    with make_small_project(str(tmp_path / "p.db")) as project:
        app = make_app(project, annotator="ana")
        assert isinstance(app, Host) and host(app, project) is app
        assert app.identity.name == "ana" and app.identity.how == "named"
        assert make_app(project).identity.name == "ben", "$RAGJUDGE_USER without a name"
        served = ServedApp(project)
        assert host(served, project) is served
        assert served.identity.name is None and not served.access().lead, "before login: nobody"


def test_any_other_app_is_the_least_rights_even_without_a_lead(tmp_path):
    class Bare(App):
        annotator = "dora"  # what a getattr default would once have trusted
        is_lead = True

    with make_small_project(str(tmp_path / "p.db")) as project:
        seen = host(Bare(), project)
        assert isinstance(seen, LeastRights)
        assert seen.identity.name is None and not seen.access().lead
        roster.add(project, "dora", role="lead", access=rights(project))
        assert not host(Bare(), project).access().sees_all


def test_a_bad_name_in_the_environment_is_nobody_in_the_app(tmp_path, monkeypatch):
    from ragjudge.tui import make_app

    monkeypatch.setenv("RAGJUDGE_USER", "a\x1bb")  # ESC: not a name
    with make_small_project(str(tmp_path / "p.db")) as project:
        app = make_app(project)
        assert app.identity.name is None and not app.access().lead
