"""ragjudge.safetext: the one place that makes data safe for a terminal and for Rich."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from rich.console import Console
from rich.text import Text

from ragjudge.safetext import for_terminal, is_clean, markup, mask_secrets, mask_url, visible

HOSTILE = [
    "\x1b]52;c;aGFja2Vk\x07",  # OSC 52: writes the clipboard
    "\x1b]0;owned\x07",  # OSC 0: window title
    "\x1bc",  # reset
    "\x9b31m",  # C1 CSI
    "abc\u202edcba",  # right-to-left override
    "a\rb",  # bare CR overwrites the line
    "\x00\x7f",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_no_control_character_survives(text: str) -> None:
    shown = visible(text)
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in shown)
    assert "\u202e" not in shown
    assert is_clean(shown)


def test_stand_ins_are_readable() -> None:
    assert visible("\x1b]52;c;x\x07") == "␛]52;c;x␇"
    assert visible("a\u202eb") == "a⟨U+202E⟩b"
    assert visible("a\x9bb") == "a⟨U+009B⟩b"
    assert visible("one\ntwo\tthree") == "one␊two␉three"
    assert visible("one\r\ntwo\tthree\rfour", multiline=True) == "one\ntwo\tthree␍four"


def test_plain_text_is_returned_unchanged() -> None:
    text = "Où est mon colis? 配送 — 📦 [not markup]"
    assert visible(text) == text


def test_markup_is_shown_literally_by_rich() -> None:
    console = Console(width=200, record=True, color_system=None)
    hostile = "[/]bogus [link=http://x]y[/link] \x1bc"
    console.print("[bold]" + markup(hostile) + "[/bold]")
    assert console.export_text().rstrip("\n") == "[/]bogus [link=http://x]y[/link] ␛c"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql+psycopg://ann:s3cr@t@db.example:5432/labels", "postgresql+psycopg://ann:***@db.example:5432/labels"),
        ("postgresql://ann@db/labels", "postgresql://ann@db/labels"),
        ("postgresql://db:5432/labels", "postgresql://db:5432/labels"),
        ("cannot reach postgresql://u:pw@h/x (refused)", "cannot reach postgresql://u:***@h/x (refused)"),
        ("labels.db", "labels.db"),
        ("postgresql://u:pa/ss@h/x", "postgresql://u:***@h/x"),
        ("db=postgresql://u:pw@h/x,", "db=postgresql://u:***@h/x,"),
        ("mailto:ann@example.com and ann:pw@host", "mailto:ann@example.com and ann:pw@host"),
        ("postgresql://u@h/x?sslmode=require&password=pw", "postgresql://u@h/x?sslmode=require&password=***"),
    ],
)
def test_passwords_are_masked(given: str, expected: str) -> None:
    assert mask_secrets(given) == expected
    assert mask_url(given) == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://u:pa ss@h/x", "postgresql://u:***@h/x"),
        ("postgresql://:pw@h/x", "postgresql://:***@h/x"),
        ("/data/a:b@c.db", "/data/a:b@c.db"),
    ],
)
def test_a_database_url_is_masked_whole(given: str, expected: str) -> None:
    assert mask_url(given) == expected


def test_for_terminal_masks_and_makes_visible() -> None:
    assert for_terminal("postgresql://u:p\x1b@h/x\x07") == "postgresql://u:***@h/x␇"


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_becomes_clean_and_rich_safe(text: str) -> None:
    shown = visible(text)
    assert is_clean(shown)
    # as every caller uses it: inside a markup string (Rich doubles a trailing backslash so
    # that it cannot escape the tag that follows)
    rendered = Text.from_markup("[bold]" + markup(text) + "[/bold]", emoji=False).plain
    assert rendered == shown


@pytest.mark.parametrize("text", ["\\", "a\\\\", "\\[", "\\\\[b]", "[[bold]", "[Bold]x[/Bold]", "x\\[/]"])
def test_backslashes_and_brackets_are_shown_as_they_are(text: str) -> None:
    for before, after, tail in (("[bold]", "[/bold]", ""), ("", "[red]!", "!")):
        rendered = Text.from_markup(before + markup(text) + after).plain
        assert rendered == text + tail


def test_long_runs_are_handled_in_one_pass() -> None:
    # a chunk may hold a long token (base64, a hash): every step is linear in the text
    long = "a" * 200_000
    assert for_terminal(long + " postgresql://u:pw@h/x") == long + " postgresql://u:***@h/x"
    assert markup("\\" * 200_000) == "\\" * 400_000
    assert Text.from_markup("[bold]" + markup("[x" * 50_000) + "[/bold]").plain == "[x" * 50_000
