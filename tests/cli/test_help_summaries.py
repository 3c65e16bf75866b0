"""``ragjudge --help`` lists each command with its summary as one
flowing line: a docstring's first paragraph wrapped in the source is joined, not printed with
its line breaks (which left ragged half lines under import, agree, quality and verify)."""

from __future__ import annotations

import re

import typer.main

from ragjudge.cli import _register, main
from ragjudge.cli.app import app

from clikit import no_project  # noqa: F401 - autouse: no project named by the environment


def test_each_command_of_the_list_has_its_whole_summary_on_one_line(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # wide enough that no summary needs wrapping
    _register()
    group = typer.main.get_command(app)
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("│ ")]
    checked = 0
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        summary = " ".join((command.help or "").split("\n\n")[0].split())
        row = next((r for r in rows if re.match(rf"│ {re.escape(name)}\s", r)), None)
        assert row is not None, f"{name} is not listed"
        assert summary in " ".join(row.split()), f"{name}: {row!r}"
        checked += 1
    assert checked == len(group.commands) >= 20  # type: ignore[attr-defined]
