"""The shape of the house, checked on every import statement of ragjudge/ (top level, inside
functions and under TYPE_CHECKING alike): layers import downward only, services' packages by
their floors, no import cycle, no import of another module's private name, and migrations
that carry their own code."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "ragjudge"

BASE = {"errors", "safetext", "numeric", "files", "retry", "models", "inputs", "terms", "hosts", "__init__"}
LAYERS: dict[str, set[str]] = {
    # layer -> the layers it may import (itself always)
    "safetext": {"numeric"},
    "errors": {"safetext"},
    "numeric": set(),
    "retry": set(),
    "files": {"errors", "safetext"},
    "inputs": {"errors", "safetext"},
    "terms": set(),
    "hosts": set(),
    "models": {"numeric", "errors"},
    "metrics": {"errors", "numeric", "inputs", "safetext"},
    "formats": BASE | {"metrics"},
    "store": BASE,
    "services": BASE | {"metrics", "formats", "store"},
    "tui": BASE | {"metrics", "services"},
    "serve": BASE | {"metrics", "services", "store", "tui"},
    "report": BASE | {"metrics", "formats", "services"},
    "web": BASE | {"metrics", "formats", "services", "serve", "report"},
    "cli": BASE | {"metrics", "formats", "store", "services", "tui", "serve", "web", "report"},
    "__main__": {"cli"},
    "__init__": set(),
}
"""``import ragjudge.metrics`` is a library for notebooks: numpy (and pyarrow where present) and
nothing of the app; the TUI reaches the database only through the services; the web page
beside the TUI calls the same services and imports neither the TUI nor the command line."""

FLOORS = ["project", "runs", "events", "access", "gold", "labels", "transfer", "agreement",
          "scoring", "llm", "maintenance", "overview"]
"""The services' packages, lowest first: each imports only those below it."""


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _owner(name: str) -> str | None:
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports() -> dict[str, list[tuple[str, str, int]]]:
    """module -> (imported module, imported name or '', line) for every import of ragjudge."""
    out: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
    for module, path in MODULES.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "sqlalchemy":
                        out[module].append(("sqlalchemy", "", node.lineno))
                    owner = _owner(alias.name)
                    if owner and owner != module:
                        out[module].append((owner, "", node.lineno))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module.split(".") if is_package else module.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] == "sqlalchemy":
                    out[module].append(("sqlalchemy", "", node.lineno))
                if not target.startswith("ragjudge"):
                    continue
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    owner = _owner(full) if full in MODULES else _owner(target)
                    if owner and owner != module:
                        name = "" if full in MODULES else alias.name
                        out[module].append((owner, name, node.lineno))
    return out


IMPORTS = _imports()


def _layer(module: str) -> str:
    if module == "sqlalchemy":
        return "store"  # the database library: the store's, and below it nothing's
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


ALLOWED = {
    ("ragjudge.web.backend.database", "store"):
        "the web's batched label writer commits the labels of many requests in one transaction "
        "with statements built once (SQLAlchemy Core); the services' record_label writes one "
        "label per transaction",
}
"""Imports across layers that one module alone makes, each with its reason."""


def test_layers_import_downward_only():
    wrong = sorted(f"{m} imports {o} (line {line})" for m, edges in IMPORTS.items()
                   for o, _, line in edges
                   if _layer(o) != _layer(m) and _layer(o) not in LAYERS[_layer(m)]
                   and (m, _layer(o)) not in ALLOWED)
    assert not wrong, "\n".join(wrong)


def test_every_layer_is_declared():
    assert {_layer(m) for m in MODULES} <= set(LAYERS), "a new top-level module needs a layer here"


def _floor(module: str) -> int | None:
    parts = module.split(".")
    if parts[:2] != ["ragjudge", "services"] or len(parts) < 3:
        return None
    return FLOORS.index(parts[2])


def test_services_packages_import_lower_floors_only():
    assert {m.split(".")[2] for m in MODULES if _floor(m) is not None} <= set(FLOORS)
    wrong = sorted(f"{m} imports {o} (line {line})" for m, edges in IMPORTS.items()
                   for o, _, line in edges
                   if _floor(m) is not None and _floor(o) is not None and _floor(o) > _floor(m))
    assert not wrong, "\n".join(wrong)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_counting_imports_inside_functions():
    edges = {m: {o for o, _, _ in found} for m, found in IMPORTS.items()}
    assert _cycles(edges) == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"ragjudge.a": {"ragjudge.b"}, "ragjudge.b": {"ragjudge.a"}}) == [["ragjudge.a", "ragjudge.b"]]


def test_no_module_imports_another_modules_private_name():
    private = sorted(f"{m} takes {o}.{name} (line {line})" for m, edges in IMPORTS.items()
                     for o, name, line in edges
                     if name.startswith("_") and not name.startswith("__"))
    assert not private, "\n".join(private)


@pytest.mark.parametrize("path", sorted((PACKAGE / "store" / "migrations" / "versions").glob("*.py")),
                         ids=lambda p: p.name)
def test_migrations_import_no_live_code(path):
    """A migration is history: it carries the code it ran with, so that a change to ragjudge
    never changes what an old upgrade does."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    assert [o for o, _, _ in IMPORTS.get(module, []) if o != "sqlalchemy"] == []


BACKEND = "ragjudge.web.backend"
"""The web layer's package that calls services."""


def _in_backend(module: str) -> bool:
    return module == BACKEND or module.startswith(BACKEND + ".")


def test_the_web_layer_reaches_services_and_the_database_through_its_backend_alone():
    """Only the package web/backend/ calls services (and only its module database.py, for the
    batched label writer, the store and SQLAlchemy: see ALLOWED); only web/terminal.py starts
    the terminal relay; nothing in web/ imports the app or the command line."""
    wrong = []
    for module, edges in IMPORTS.items():
        if _layer(module) != "web":
            continue
        for other, _, line in edges:
            layer = _layer(other)
            if layer in ("tui", "cli") \
                    or (layer in ("services", "store") and not _in_backend(module)) \
                    or (layer == "serve" and module != "ragjudge.web.terminal"):
                wrong.append(f"{module} imports {other} (line {line})")
    assert not wrong, "\n".join(wrong)
    assert any(_layer(o) == "services" for m, edges in IMPORTS.items() if _in_backend(m) for o, _, _ in edges)
    assert [m for m, layer in ALLOWED if _layer(m) == "web" and layer == "store"] == [f"{BACKEND}.database"]
