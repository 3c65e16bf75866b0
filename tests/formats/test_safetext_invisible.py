"""Invisible characters are shown, so that two ids never look the same: every format character
(Unicode category Cf) and the other characters that show as nothing; and a value echoed in a
message shows an ESC as safetext's ``␛``, never as Python's ``'\\x1b'``."""

from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import given, settings, strategies as st

from ragjudge.errors import InputError
from ragjudge.formats import read_records
from ragjudge.safetext import INVISIBLE, is_clean, quote, visible

FORMAT_CHARACTERS = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]


def test_every_format_character_is_marked_in_one_line_text():
    unmarked = [f"U+{ord(ch):04X}" for ch in FORMAT_CHARACTERS if visible(f"a{ch}b") == f"a{ch}b"]
    assert unmarked == []
    assert visible("q\u200b1") == "q⟨U+200B⟩1"
    assert visible("\ufeffq1") == "⟨U+FEFF⟩q1"


@pytest.mark.slow
def test_the_written_out_list_holds_format_characters_only():
    # the list is written out for a cheap import: nothing in it may be a visible character in
    # the running Python's Unicode (a character unassigned here may be Cf in a newer one)
    from ragjudge import safetext

    listed = safetext._FORMAT
    import re

    pattern = re.compile(f"[{listed}]")
    wrong = [f"U+{c:04X}" for c in range(sys.maxunicode + 1)
             if pattern.match(chr(c)) and unicodedata.category(chr(c)) not in ("Cf", "Cn")]
    assert wrong == []


@pytest.mark.parametrize("ch", ["\u115f", "\u3164", "\uffa0", "\u2800", "\u034f", "\ufe0f", "\U000e0100", "\u180b"])
def test_other_invisible_characters_are_marked(ch):
    assert visible(f"id{ch}") == f"id⟨U+{ord(ch):04X}⟩"
    assert is_clean(visible(f"id{ch}"))


def test_two_ids_that_differ_only_by_an_invisible_character_look_different():
    # what is shown holds no invisible character: the two ids differ where one can see it (a
    # comparison of the strings alone would pass with the character still hidden in one)
    for ch in ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\U000e0041", "\ufe0f"):
        for multiline in (False, True):  # the app, the web pages and the tables show ids as text
            shown = visible(f"doc{ch}1", multiline=multiline)
            assert ch not in shown and f"⟨U+{ord(ch):04X}⟩" in shown, (f"U+{ord(ch):04X}", multiline)


@pytest.mark.parametrize("ch", ["\u200b", "\u200c", "\u200d", "\ufeff", "\u00ad", "\ufe0f", "\u2060"])
def test_an_id_is_marked_on_every_screen_whatever_its_letters(ch):
    # an id has no whitespace: even a joiner between two letters that would need one in prose
    # (Persian, an emoji sequence) is shown, because the id without it looks the same
    for text in (f"q{ch}1", f"ب{ch}ت", f"\U0001f468{ch}\U0001f469"):
        assert f"⟨U+{ord(ch):04X}⟩" in visible(text, multiline=True), text


def test_in_prose_a_joiner_between_ascii_characters_is_marked():
    # between two ASCII letters or digits a joiner or a selector changes nothing on screen
    assert visible("the id q\u200d1 and q1", multiline=True) == "the id q⟨U+200D⟩1 and q1"
    assert visible("a b\u200cc", multiline=True) == "a b⟨U+200C⟩c"
    assert visible("a b\ufe0fc", multiline=True) == "a b⟨U+FE0F⟩c"
    # a keycap keeps its selector: 1, U+FE0F, U+20E3
    assert visible("press 1\ufe0f\u20e3 now", multiline=True) == "press 1\ufe0f\u20e3 now"


def test_prose_keeps_the_joiners_and_selectors_writing_needs():
    persian = "من می\u200cخواهم بروم"  # the non-joiner inside a Persian word
    family = "my \U0001f468\u200d\U0001f469\u200d\U0001f467"  # an emoji sequence
    heart = "I \u2764\ufe0f it"
    flag = "a \U0001f3f3\ufe0f\u200d\U0001f308 flag"  # a joiner after a kept selector
    for text in (persian, family, heart, flag, "die Silben\u00adtrennung"):
        assert visible(text, multiline=True) == text
        assert visible(text) != text  # one-line text (ids, names, messages) marks them
    # alone, or next to a space, they write nothing: marked
    assert visible("a \u200d b", multiline=True) == "a ⟨U+200D⟩ b"
    assert visible("\ufe0f", multiline=True) == "⟨U+FE0F⟩"
    # tag characters (hidden text an LLM reads) and the zero-width space are marked in prose too
    assert visible("ok\U000e0049\U000e0047", multiline=True) == "ok⟨U+E0049⟩⟨U+E0047⟩"
    assert visible("a\u200bb", multiline=True) == "a⟨U+200B⟩b"


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(["a", "ب", " ", "\n", "\u200c", "\u200d", "\ufe0f", "\u00ad",
                                          "\u200b", "😀", "\x1b"])))
def test_visible_is_idempotent(text):
    for multiline in (False, True):
        shown = visible(text, multiline=multiline)
        assert is_clean(shown, multiline=multiline)


def test_invisible_list_is_not_visible_text():
    assert all(unicodedata.category(ch) != "Cf" for ch in INVISIBLE if ch != "-")


def test_quote_shows_esc_as_safetext_does_never_as_python_repr():
    assert quote("h2\x1b[31m") == "'h2␛[31m'"
    assert quote("c0\u00a01") == "'c0⟨U+00A0⟩1'"  # a no-break space looks like a space
    assert quote("x" * 100) == "'" + "x" * 55 + "...'"
    assert len(quote("x" * 100)) == 60


def test_a_reader_message_quotes_a_value_with_esc_visibly():
    with pytest.raises(InputError) as caught:
        list(read_records("qrels", "query_id,chunk_id,grade\nq1,c1,h2\x1b[31m\n", "csv"))
    message = str(caught.value)
    assert "'h2␛[31m' is not an integer" in message
    assert "\\x1b" not in message
    with pytest.raises(InputError) as caught:
        list(read_records("labels", '{"query_id": "q1", "chunk_id": "c1", "x\\u001b": 2}\n', "jsonl"))
    assert "unknown field 'x␛'" in str(caught.value)
