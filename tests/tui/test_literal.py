"""User text on screen: literal (no markup, no escape sequences) and query terms highlighted."""

from __future__ import annotations

from ragjudge.tui.widgets.literal import clean, highlighted, literal, query_terms


def test_markup_is_not_parsed_and_control_characters_are_shown():
    text = literal("[bold red]x[/] \x1b[31mred\x1b[0m\x07 tab\tok\nline")
    assert text.plain == "[bold red]x[/] ␛[31mred␛[0m␇ tab\tok\nline"
    assert text.spans == []
    assert clean("\x9b2J") == "⟨U+009B⟩2J"  # the 8-bit CSI too
    assert clean("db postgresql://ann:pw@h/x") == "db postgresql://ann:***@h/x"


def test_style_stays_with_its_characters_when_appended():
    out = literal("plain ")
    out.append_text(literal("[b]bold[/b]", "bold"))
    assert out.plain == "plain [b]bold[/b]"
    assert [(s.start, s.end, str(s.style)) for s in out.spans] == [(6, 17, "bold")]


def test_query_terms_drop_stopwords_and_match_word_starts():
    assert query_terms("How long does a refund take?") == ["long", "refund", "take"]
    text = highlighted("Refunds take longer; damage and damaged. Partake.", query_terms("damaged refund take"))
    marked = [text.plain[s.start:s.end] for s in text.spans]
    assert marked == ["Refunds", "take", "damage", "damaged"]
