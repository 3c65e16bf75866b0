"""Text from data, made safe for a terminal and for Rich: the one place that does it.

A project file is data from other people: a query, a chunk, a note, the guidelines, a run or
annotator name, a file name or a line quoted in an error message. None of it may reach a
terminal as control (an OSC 52 sequence writes the clipboard, OSC 0 the window title, ``ESC c``
resets the screen) or be read by Rich as markup (``[/]`` raises, ``[link=...]`` makes a link).

- :func:`visible` turns every control character into a visible stand-in: C0 controls become
  their Unicode control pictures (ESC is ``␛``, BEL ``␇``, CR ``␍``), DEL ``␡``, C1 controls and
  the bidirectional overrides and isolates (which reorder what follows them on screen) a
  ``⟨U+202E⟩`` tag. Newlines and tabs stay where the text is multi-line, else show as ``␊``/``␉``.
- :func:`markup` is :func:`visible` escaped for Rich markup, for text put into a markup string.
- :func:`mask_secrets` replaces the password of every URL in a text with ``***``.
- :func:`for_terminal` is what every message to a terminal goes through: both of the above.

This module imports only the standard library, so every layer may use it.
"""

from __future__ import annotations

import re

__all__ = ["visible", "markup", "mask_secrets", "mask_url", "for_terminal", "is_clean"]

# Bidirectional formatting characters: embeddings and overrides (U+202A-U+202E), isolates
# (U+2066-U+2069), marks (U+200E, U+200F, U+061C). An override reverses what follows it on
# screen ("Trojan Source"); each is shown by name instead.
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
# Line and paragraph separators end a line in some terminals and editors.
_SEPARATORS = frozenset("\u2028\u2029\x85")


def _stand_in(ch: str) -> str:
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟: ESC is ␛, BEL ␇, CR ␍
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"\u27e8U+{code:04X}\u27e9"  # ⟨U+202E⟩


def _needs_stand_in(ch: str) -> bool:
    code = ord(ch)
    return code < 0x20 or 0x7F <= code <= 0x9F or ch in _BIDI or ch in _SEPARATORS or 0xD800 <= code <= 0xDFFF


_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u2028\u2029\ud800-\udfff]")


def visible(text: object, *, multiline: bool = False) -> str:
    """The text with every control character shown as a visible stand-in.

    With ``multiline`` a newline and a tab are kept (a CR-LF pair reads as one newline); without
    it they are shown too (``␊``, ``␉``), so that the text stays on one line.
    """
    value = str(text)
    if not _UNSAFE.search(value):
        return value
    if multiline:
        value = value.replace("\r\n", "\n")
    out = []
    for ch in value:
        if multiline and ch in "\n\t":
            out.append(ch)
        elif _needs_stand_in(ch):
            out.append(_stand_in(ch))
        else:
            out.append(ch)
    return "".join(out)


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
