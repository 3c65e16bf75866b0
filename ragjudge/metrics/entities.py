"""Finding a reference answer's entities in chunk text, as EntityRecall counts them: case- and
accent-insensitive, on word boundaries.

This module imports numpy and the standard library only.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["normalize_text", "entity_pattern", "entity_hits"]

_SPACE = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """Text for entity matching: Unicode NFKD, combining marks removed, case-folded, runs of
    white space as one space. "Brasília" and "BRASILIA" both become "brasilia"; "ﬁ" becomes
    "fi"; "Straße" becomes "strasse"."""
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return _SPACE.sub(" ", stripped.casefold()).strip()


def entity_pattern(entity: str) -> re.Pattern[str] | None:
    """The regular expression finding ``entity`` in normalized text on word boundaries: the
    normalized entity, not preceded and not followed by a word character (``(?<!\\w)`` and
    ``(?!\\w)`` — regex ``\\b`` for entities that begin and end with a letter or digit, and
    still right for ones like "C++" or "U.S."). None for an entity that normalizes to ''."""
    norm = normalize_text(entity)
    if not norm:
        return None
    body = r"\s+".join(re.escape(part) for part in norm.split(" "))
    return re.compile(rf"(?<!\w){body}(?!\w)")


def entity_hits(entities: Sequence[str], texts: Iterable[str]) -> np.ndarray:
    """bool (len(texts), len(entities)): which entity occurs in which text.

    Matching is case- and accent-insensitive on word boundaries (:func:`normalize_text`,
    :func:`entity_pattern`): "Brazil" is found in "in brazil.", not in "Brazilian"; "Brasília"
    is found in "BRASILIA"; "April 21, 1960" needs that exact date."""
    patterns = [entity_pattern(e) for e in entities]
    texts = [normalize_text(t) for t in texts]
    hits = np.zeros((len(texts), len(patterns)), dtype=bool)
    for j, pattern in enumerate(patterns):
        if pattern is None:
            continue
        for i, text in enumerate(texts):
            hits[i, j] = pattern.search(text) is not None
    return hits
