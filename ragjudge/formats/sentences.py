"""Splitting a generated answer's text into sentences.

Answers judged sentence by sentence (citation support) need their sentences; an answer given as
plain text (``{"text", "cited"}``) is split here once, on import, and the sentences are stored,
so that a judgment's ``sentence`` index never depends on a later change of this function.

A sentence ends at ``.``, ``!``, ``?`` or ``…`` — with any closing quotes or brackets and any
citation markers right after it (``[1]``, ``[c12][c13]``) kept on the sentence they follow — when
white space and the start of a new sentence follow (an upper-case letter, a digit, an opening
quote or bracket, or a letter without case). So "e.g. the", "€7.50" and "v2.1" do not end one.
A line break always ends a sentence; ``。``, ``！`` and ``？`` end one without white space.
"""

from __future__ import annotations

import re

__all__ = ["split_sentences"]

_END = re.compile(
    r"(?:[.!?…]+[\"'”’»)\]]*(?:[ \t]*\[[^\[\]\n]{1,40}\])*(?=[ \t]+(?P<next>\S)|[ \t]*$)"
    r"|[。！？]+[」』”’）]*)"
)
_OPENERS = "\"'“‘«(¿¡"


def _starts_sentence(ch: str) -> bool:
    if ch.isupper() or ch.isdigit() or ch in _OPENERS:
        return True
    return ch.isalpha() and ch.lower() == ch.upper()  # a letter of a script without case


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped, in order; empty ones are dropped.

    >>> split_sentences("Report damage within 48 hours. [1] Hidden damage: 7 days, e.g. when "
    ...                 "unpacking! [2]\\nCall us.")
    ['Report damage within 48 hours. [1]', 'Hidden damage: 7 days, e.g. when unpacking! [2]', 'Call us.']
    """
    out: list[str] = []
    for line in text.splitlines():
        start = 0
        for match in _END.finditer(line):
            following = match.group("next")
            if following is not None and not _starts_sentence(following):
                continue
            out.append(line[start:match.end()])
            start = match.end()
        out.append(line[start:])
    return [s for s in (part.strip() for part in out) if s]
