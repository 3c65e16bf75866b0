"""The review command and screen are documented where users look: README, --help, ``?``."""

from __future__ import annotations

from pathlib import Path

from ragjudge.cli import main
from ragjudge.tui.screens.home import HOME_KEYS
from ragjudge.tui.screens.review import REVIEW_KEYS, key_rows

README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")


def test_readme_documents_the_command_and_every_key_of_the_screen():
    assert "### `review`" in README and "ragjudge review resolve" in README
    assert "ragjudge review send-back" in README
    table = README[README.index("**The review screen**"):]
    table = table[:table.index("\n\n", table.index("| key | does |"))]
    for keys, _, _, _ in REVIEW_KEYS:
        first = keys.split(",")[0]
        shown = {"question_mark": "?", "escape": "Escape"}.get(first, first)
        assert f"`{shown}`" in table, shown


def test_the_help_screen_rows_and_the_home_key():
    rows = key_rows()
    assert [r[1] for r in rows] == [n for _, _, n, _ in REVIEW_KEYS]
    assert rows[0][0] == "r" and rows[3][:2] == ("n / j / →", "next")
    assert any(k == "v" and a == "review" for k, a, _, _ in HOME_KEYS)


def test_help_has_examples(capsys):
    assert main(["review", "--help"]) == 0
    out = capsys.readouterr().out
    assert "Examples:" in out and "ragjudge review resolve --query q7" in out
