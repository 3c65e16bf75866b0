"""Text from data, made safe for a terminal and for Rich: the one place that does it.

A project file is data from other people: a query, a chunk, a note, the guidelines, a run or
annotator name, a file name or a line quoted in an error message. None of it may reach a
terminal as control (an OSC 52 sequence writes the clipboard, OSC 0 the window title, ``ESC c``
resets the screen) or be read by Rich as markup (``[/]`` raises, ``[link=...]`` makes a link).

- :func:`visible` turns every control character and every invisible character into a visible
  stand-in: C0 controls become their Unicode control pictures (ESC is ``␛``, BEL ``␇``, CR
  ``␍``), DEL ``␡``; C1 controls, the bidirectional overrides and isolates (which reorder what
  follows them on screen), every format character (Unicode category Cf: the zero-width space,
  joiners and no-break, the byte order mark, the soft hyphen, the invisible tag characters an
  LLM reads and a person does not...) and the other characters that show as nothing (variation
  selectors, the Hangul fillers, the blank Braille pattern, see :data:`INVISIBLE`) a
  ``⟨U+200B⟩`` tag, so that two ids that differ only by them never look the same. Newlines and
  tabs stay where the text is multi-line, else show as ``␊``/``␉``.

  In multi-line text (the prose of a chunk, a query, a note) the characters writing needs are
  kept where they do their work: a zero-width non-joiner or joiner between two letters, digits
  or pictographs one of which is not ASCII (Persian and the Indic scripts need the non-joiner
  in nearly every sentence, emoji sequences are joined by the joiner; between two ASCII
  characters a joiner changes nothing on screen), a soft hyphen between two of them (a
  hyphenation point), and a variation selector right after a visible character that is not
  ASCII, or after a keycap's digit, ``#`` or ``*`` (the emoji and the CJK variants it selects).
  Anywhere else they are marked too: always in one-line text (ids, names, table cells,
  messages), and in a text without whitespace even when it is shown as multi-line, since an id
  is such a text (``q‍1``, with a joiner, must not look like ``q1`` on any screen).
- :func:`quote` is a value echoed in a message: :func:`visible`, with the spaces other than
  the ASCII space marked as well, between single quotes and shortened.
- :func:`markup` is :func:`visible` escaped for Rich markup, for text put into a markup string.
- :func:`mask_secrets` replaces the password of every URL in a text with ``***``.
- :func:`for_terminal` is what every message to a terminal goes through: both of the above.
- :func:`spreadsheet_safe` is a CSV cell a spreadsheet shows and never runs as a formula (a
  ``'`` before ``=HYPERLINK(...)``, OWASP's advice against CSV injection), and
  :func:`spreadsheet_text` its inverse; every CSV ragjudge writes goes through it unless
  ``--raw`` (:mod:`ragjudge.formats.csvfile`, the CSV outputs of the commands).

This module imports only the standard library and :mod:`ragjudge.numeric` (which imports
nothing else), so every layer may use it.
"""

from __future__ import annotations

import math
import re
import unicodedata

from ragjudge.numeric import parse_number

__all__ = ["FORMULA_STARTS", "INVISIBLE", "visible", "quote", "markup", "mask_secrets", "mask_url", "for_terminal",
           "is_clean", "natural_key", "spreadsheet_safe", "spreadsheet_text"]

# Bidirectional formatting characters: embeddings and overrides (U+202A-U+202E), isolates
# (U+2066-U+2069), marks (U+200E, U+200F, U+061C). An override reverses what follows it on
# screen ("Trojan Source"). They are format characters (Cf) like those below.
_FORMAT = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f"
)
# Every format character (Unicode category Cf) of Unicode 14, and U+13439-U+1343F, which
# Unicode 15 made format characters too: written out, so that importing this module costs
# nothing (a test checks it against the running Python's unicodedata).

INVISIBLE = (
    "\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u180f\u2800\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0100-\U000e01ef"
)
"""Characters of other categories that show as nothing or as a blank: the combining grapheme
joiner, the Hangul fillers (a "blank" name's favourite), the Khmer inherent vowels, the
Mongolian and the other variation selectors, the blank Braille pattern."""

# Line and paragraph separators end a line in some terminals and editors.
_SEPARATORS = "\u2028\u2029\x85"

_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{_FORMAT}{INVISIBLE}{_SEPARATORS}\ud800-\udfff]")
_INVISIBLE = re.compile(f"[{INVISIBLE}]")
# the spaces that look like the ASCII space: marked in a quoted value (see quote)
_SPACES = "\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000"
_UNSAFE_OR_SPACE = re.compile(f"[\x00-\x1f\x7f-\x9f{_FORMAT}{INVISIBLE}{_SEPARATORS}{_SPACES}\ud800-\udfff]")

# kept in multi-line text between two characters of these categories (letters, marks, digits,
# symbols: emoji are So)
_JOINERS = frozenset("\u00ad\u200c\u200d")
_WORD_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "So"})
_SELECTORS = re.compile("[\u180b-\u180d\u180f\ufe00-\ufe0f\U000e0100-\U000e01ef]")
_KEYCAP_BASES = frozenset("0123456789#*")
_KEYCAP = "\u20e3"


def _stand_in(ch: str) -> str:
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟: ESC is ␛, BEL ␇, CR ␍
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"\u27e8U+{code:04X}\u27e9"  # ⟨U+202E⟩


def _is_word(text: str, at: int) -> bool:
    if not 0 <= at < len(text):
        return False
    ch = text[at]
    return not _UNSAFE.match(ch) and unicodedata.category(ch) in _WORD_CATEGORIES


def _kept_in_prose(text: str, at: int) -> bool:
    """Whether the character at ``at`` of multi-line text is writing, not hiding: a joiner
    between two word characters one of which is not ASCII (the one before may be a kept
    variation selector: ``🏳️‍🌈``), a soft hyphen between two word characters, a variation
    selector right after a visible character that is not ASCII or before a keycap."""
    ch = text[at]
    if ch in _JOINERS:
        before = at - 1
        if before > 0 and _SELECTORS.match(text[before]):
            return _kept_in_prose(text, before) and _is_word(text, at + 1)
        if not (_is_word(text, before) and _is_word(text, at + 1)):
            return False
        return ch == "\u00ad" or not (text[before].isascii() and text[at + 1].isascii())
    if _SELECTORS.match(ch):
        if at == 0 or _UNSAFE_OR_SPACE.match(text[at - 1]) or text[at - 1].isspace():
            return False
        if text[at - 1].isascii():
            return text[at - 1] in _KEYCAP_BASES and text[at + 1:at + 2] == _KEYCAP
        return True
    return False


def visible(text: object, *, multiline: bool = False) -> str:
    """The text with every control and invisible character shown as a visible stand-in.

    With ``multiline`` a newline and a tab are kept (a CR-LF pair reads as one newline), and so
    are the joiners and selectors of prose (see the module's docstring); without it they are
    shown too (``␊``, ``␉``, ``⟨U+200D⟩``), so that the text stays on one line and every
    character of an id can be seen. A text without whitespace is not prose: it is shown as
    one-line text even with ``multiline`` (every screen shows ids that way).
    """
    value = str(text)
    if value.isprintable():  # no control, format or separator character: quick to tell
        if value.isascii() or not _INVISIBLE.search(value):
            return value
    elif not _UNSAFE.search(value):
        return value
    return _replace(_UNSAFE, value, multiline)


def _replace(pattern: re.Pattern[str], value: str, multiline: bool) -> str:
    if multiline and not _has_space(value):
        multiline = False
    if multiline:
        value = value.replace("\r\n", "\n")

        def stand_in(match: re.Match[str]) -> str:
            ch = match.group(0)
            if ch in "\n\t" or _kept_in_prose(value, match.start()):
                return ch
            return _stand_in(ch)
    else:
        def stand_in(match: re.Match[str]) -> str:
            return _stand_in(match.group(0))
    return pattern.sub(stand_in, value)


def _has_space(value: str) -> bool:
    return any(ch.isspace() for ch in value)


def quote(value: object, limit: int = 60) -> str:
    """``value`` as a message echoes it: in single quotes, every character :func:`visible`
    marks shown by its stand-in and so are the spaces other than U+0020 (``'c1⟨U+00A0⟩2'``:
    a no-break space is why that id is not found), shortened to about ``limit`` characters."""
    text = str(value)
    cut = len(text) > limit - 2
    if cut:
        text = text[: limit - 5]
    shown = _replace(_UNSAFE_OR_SPACE, text, False) if _UNSAFE_OR_SPACE.search(text) else text
    return f"'{shown}{'...' if cut else ''}'"


def is_clean(text: str, *, multiline: bool = False) -> bool:
    """True when the text holds nothing :func:`visible` would replace."""
    value = text.replace("\r\n", "\n") if multiline else text
    return visible(value, multiline=multiline) == value


# A '[' and the backslashes before it; with what would make it a Rich tag ("[bold]", "[/]").
_BRACKET = re.compile(r"(?<!\\)(\\*)\[((?:[a-z#/@][^\[]*?\])?)")


def _escape_bracket(match: re.Match[str]) -> str:
    slashes, tag = match.group(1), match.group(2)
    if tag:  # Rich reads 2k+1 backslashes before a tag as k backslashes and a literal tag
        return slashes * 2 + "\\[" + tag
    return slashes + "\\["  # before a lone '[' Rich drops one backslash


def markup(text: object, *, multiline: bool = False) -> str:
    """:func:`visible`, escaped so that Rich shows it literally inside a markup string.

    Every '[' is escaped (Rich's own ``escape`` leaves one that does not look like a tag, and
    drops a backslash before it); backslashes at the end are doubled so that they cannot escape
    the tag that follows the text in the markup string.
    """
    value = _BRACKET.sub(_escape_bracket, visible(text, multiline=multiline))
    return value + "\\" * (len(value) - len(value.rstrip("\\")))


# scheme://user:password@host -> scheme://user:***@host, in every whitespace-free token of a text.
# The user part stops at ':' '/' or '@'; the password runs to the last '@' of the token (a
# password may hold '@' or '/' only percent-encoded, but people type them raw; taking the last
# '@' masks all of it, and at worst a path after it too). Plain string scans, not a regex: a
# regex for the scheme is quadratic on a long run of letters, and a chunk may hold one.
_SCHEME = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")
_TOKEN = re.compile(r"\S+")
_QUERY_PASSWORD = re.compile(r"(?P<head>[?&](?:password|passwd|pwd)=)[^&\s]*", re.IGNORECASE)


def _mask_token(token: str) -> str:
    at = token.rfind("@")
    start = token.find("://")
    while 0 < start < at:
        scheme = start
        while scheme > 0 and token[scheme - 1] in _SCHEME:
            scheme -= 1
        user_end = start + 3
        while user_end < at and token[user_end] not in ":/@":
            user_end += 1
        if token[user_end] == ":" and any(ch.isalpha() for ch in token[scheme:start]):
            return token[: user_end + 1] + "***" + token[at:]
        start = token.find("://", start + 1)
    return token


def mask_secrets(text: object) -> str:
    """The text with the password of every ``scheme://user:password@host`` URL as ``***``."""
    value = str(text)
    if "://" in value and "@" in value:
        value = _TOKEN.sub(lambda m: _mask_token(m.group(0)), value)
    if "=" in value:
        value = _QUERY_PASSWORD.sub(lambda m: m.group("head") + "***", value)
    return value


_URL_HEAD = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*:")


def mask_url(url: object) -> str:
    """One database URL with its password masked (a plain file path is returned as it is).

    Unlike :func:`mask_secrets` (which reads free text, where whitespace ends a URL), the whole
    value is one URL: the password runs from the user's ':' to the last '@', spaces included.
    """
    value = str(url)
    head = _URL_HEAD.match(value)
    at = value.rfind("@")
    if head is not None and at >= head.end():
        value = head.group(0) + "***" + value[at:]
    return mask_secrets(value)


def for_terminal(text: object, *, multiline: bool = False) -> str:
    """A message for a terminal: secrets masked, control characters visible."""
    return visible(mask_secrets(text), multiline=multiline)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet cell starts with when the spreadsheet may run it as a formula (OWASP)."""


def _formula(text: str) -> bool:
    """Whether a spreadsheet may run ``text`` as a formula: it starts with one of
    :data:`FORMULA_STARTS` and is not a plain number (``-1``, ``+2.5e3``: read as numbers)."""
    if not text.startswith(FORMULA_STARTS):
        return False
    number = parse_number(text)
    return number is None or not math.isfinite(number)


def spreadsheet_safe(text: str) -> str:
    """``text`` as a CSV cell a spreadsheet shows and never runs: a ``'`` before a text that
    would start a formula, and before one whose leading quotes are followed by such a start
    (``'=x`` is written ``''=x``), so that :func:`spreadsheet_text` gives the text back."""
    return "'" + text if _formula(text.lstrip("'")) else text


def spreadsheet_text(cell: str) -> str:
    """The text of a CSV cell :func:`spreadsheet_safe` may have written: one leading ``'``
    taken away when quotes lead to a formula start (``'=x`` is the text ``=x``)."""
    return cell[1:] if cell.startswith("'") and _formula(cell.lstrip("'")) else cell


_DIGIT_RUN = re.compile(r"([0-9]+)")


def natural_key(text: object) -> tuple[object, ...]:
    """The key that sorts ids as people count: ``q2`` before ``q10``, ``1, 2, 10, 100`` rather
    than ``1, 10, 100, 2`` (Python's string order). Each run of ASCII digits compares by its
    value (its length without leading zeros, then its digits: no conversion, however long),
    the text between by code point; ``q01`` comes just before ``q1``, so that no two ids share
    a key and the order is total. Every list of ids shown to people is sorted with it."""
    parts = _DIGIT_RUN.split(str(text))
    return tuple(part if i % 2 == 0 else (len(part.lstrip("0")), part.lstrip("0"), part)
                 for i, part in enumerate(parts))
