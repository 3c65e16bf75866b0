"""The query's words in a chunk: which words of a query are worth marking and where they stand
in a text. One rule for the judging screen (:func:`ragjudge.tui.widgets.literal.highlighted`)
and the judging page (:func:`segments`).

The words are the query's words of two letters or more that are not stopwords; each is cut to a
crude root (``damaged`` also marks ``damage``, ``parcels`` marks ``parcel``), and a word of the
text is marked when it starts with a root (case-insensitive).
"""

from __future__ import annotations

import functools
import re

_WORD = re.compile(r"\w+")
_STOPWORDS = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "could", "do", "does", "for",
    "from", "has", "have", "how", "i", "if", "in", "is", "it", "me", "my", "of", "on", "or",
    "should", "that", "the", "this", "to", "was", "what", "when", "where", "which", "who", "why",
    "will", "with", "would", "you", "your",
])


def query_terms(query: str) -> list[str]:
    """The words of a query worth marking in a chunk (no stopwords, two letters or more)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        if len(word) >= 2 and word not in _STOPWORDS:
            seen.setdefault(word, None)
    return list(seen)


def root(word: str) -> str:
    """A crude stem, so that "damaged" also marks "damage" and "parcels" marks "parcel"."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


@functools.lru_cache(maxsize=1024)
def terms_pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    """The pattern of the words to mark for ``terms`` (None: nothing to mark), longest root
    first."""
    roots = sorted({root(t) for t in terms}, key=len, reverse=True)
    if not roots:
        return None
    return re.compile(r"(?i)\b(?:" + "|".join(re.escape(r) for r in roots) + r")\w*")


def segments(text: str, query: str) -> list[str]:
    """``text`` cut where the query's words start and end: ``[plain, marked, plain, ...]``
    (the first piece is plain, possibly empty); joined again they are ``text``. Pieces, never
    HTML: the page puts each into the document as a text node (a marked one inside
    ``<mark>``), so nothing from the data is read as markup."""
    pattern = terms_pattern(tuple(query_terms(query)))
    if pattern is None or not text:
        return [text]
    out: list[str] = []
    at = 0
    for match in pattern.finditer(text):
        out.append(text[at:match.start()])
        out.append(match.group(0))
        at = match.end()
    out.append(text[at:])
    return out
