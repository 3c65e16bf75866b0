"""The hostile-input suite runs ``ragjudge`` in-process hundreds of times per test module."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _build_the_command_once(monkeypatch):
    """Build the click command of ragjudge's Typer app once, not on every run.

    Typer builds it from the command functions' signatures at every call of the app, which is
    half of the time of a short in-process run; the result depends only on the app, so every run
    of the suite can share it. Each run still goes through ``ragjudge.cli.main`` and the same
    command objects a user's process builds for itself.
    """
    import typer.main

    from ragjudge.cli import _register
    from ragjudge.cli.app import app

    _register()
    build = typer.main.get_command
    built = build(app)
    monkeypatch.setattr(typer.main, "get_command", lambda instance: built if instance is app else build(instance))


@pytest.fixture(autouse=True)
def _serve_returns_where_it_would_listen(monkeypatch):
    """``ragjudge serve`` runs until it is stopped: here it goes as far as listening (options
    checked, project opened, warnings printed) and returns as if stopped at once."""
    try:
        import ragjudge.web.server as server
    except ModuleNotFoundError:  # without the serve extra, serve refuses before it would listen
        return
    monkeypatch.setattr(server, "serve", lambda *args, **kwargs: None)
