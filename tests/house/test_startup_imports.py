"""A command's help starts in a blink: ``ragjudge --help`` and every ``ragjudge COMMAND --help``
load neither the database layer (SQLAlchemy, ``ragjudge.store``) nor numpy, pyarrow or the app
(Textual). Each command module imports what a command needs inside the command, so a service
imported at a module's top would load for every help and every other command of that module;
these tests catch it, and ``tests/bench/bench_startup.py`` says what it costs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

HEAVY = ("sqlalchemy", "numpy", "pyarrow", "textual", "ragjudge.store")
"""What no help needs: the database layer, the arrays and the app."""

ENV = {k: v for k, v in os.environ.items() if k != "RAGJUDGE_DB"}

EVERY_HELP = """
import contextlib, io, sys
from ragjudge.cli import COMMANDS, main

heavy = {heavy!r}
for args in [["--help"]] + [[name, "--help"] for name in COMMANDS]:
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(args)
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in heavy or m.startswith(heavy))
    print(" ".join(args), code, ",".join(loaded))
"""


def loaded_by_every_help() -> list[tuple[str, str, str]]:
    """(command line, exit code, heavy modules loaded so far) after each help, in one process:
    modules only accumulate, so the first line naming a module is the help that loaded it."""
    out = subprocess.run([sys.executable, "-c", EVERY_HELP.format(heavy=HEAVY)], env=ENV,
                         capture_output=True, text=True, check=True)
    rows = []
    for line in out.stdout.splitlines():
        *words, code, loaded = line.split(" ")
        rows.append((" ".join(words), code, loaded))
    return rows


@pytest.mark.slow
def test_no_help_loads_the_database_layer_numpy_or_the_app():
    rows = loaded_by_every_help()
    assert len(rows) > 20, rows  # the top-level help and every command's
    codes = {line: code for line, code, _ in rows}
    assert set(codes.values()) == {"0"}, codes
    first = next(((line, loaded) for line, _, loaded in rows if loaded), None)
    assert first is None, f"'ragjudge {first[0]}' loaded {first[1]}"


@pytest.mark.parametrize("args", [["--help"], ["status", "--help"], ["eval", "--help"]])
def test_the_command_as_typed_imports_no_heavy_module(args):
    # the real entry point (python -m ragjudge), its imports as the interpreter reports them
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "ragjudge", *args], env=ENV,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Usage" in out.stdout
    imported = {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines()
                if line.startswith("import time:") and "cumulative" not in line}
    assert "ragjudge.cli" in imported  # the report is read right
    heavy = sorted(m for m in imported if m.split(".")[0] in HEAVY or m.startswith(HEAVY))
    assert heavy == []
