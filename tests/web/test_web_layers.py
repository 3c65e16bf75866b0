"""The web layer's imports: services, the store and SQLAlchemy only from web/backend.py; neither
the app (ragjudge.tui) nor the command line (ragjudge.cli) anywhere; the terminal relay
(ragjudge.serve) only from web/terminal.py."""

from __future__ import annotations

import ast
from pathlib import Path

WEB = Path(__file__).resolve().parents[2] / "ragjudge" / "web"


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_only_the_backend_calls_services_and_nothing_imports_the_app_or_the_command_line():
    modules = sorted(WEB.glob("*.py"))
    assert len(modules) >= 10
    for path in modules:
        names = imported(path)
        for name in names:
            assert not name.startswith(("ragjudge.tui", "ragjudge.cli")), (path.name, name)
            if path.name != "backend.py":
                assert not name.startswith(("ragjudge.services", "ragjudge.store", "sqlalchemy")), (path.name, name)
            if path.name != "terminal.py":
                assert not name.startswith("ragjudge.serve"), (path.name, name)
    assert any(n.startswith("ragjudge.services") for n in imported(WEB / "backend.py"))
