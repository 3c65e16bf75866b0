"""The command line run in this process, importable from any test folder as ``clikit``.

(A module of its own, not a conftest.py: ``from conftest import ...`` is ambiguous when several
test folders have one.)
"""

from __future__ import annotations

import pytest

from ragjudge.cli import common, main


def run_cli(capsys, *args: object) -> tuple[int, str, str]:
    """``ragjudge ARGS`` (each argument as text: paths may be given as they are): the exit
    code, standard output and standard error."""
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(autouse=True)
def no_project(monkeypatch):
    """No project named by a test before or by the environment (``RAGJUDGE_DB``): each command
    line names its own. Autouse in every module that imports it."""
    monkeypatch.setitem(common.CLI_STATE, "db", None)
    monkeypatch.delenv("RAGJUDGE_DB", raising=False)
