"""An annotator's name as every event records it: checked once, here (no database needed)."""

from __future__ import annotations

from ragjudge.errors import UsageError
from ragjudge.safetext import quote


def check_annotator(name: str) -> str:
    """An annotator name, stripped; empty or control characters are a :class:`UsageError`."""
    cleaned = (name or "").strip()
    if not cleaned:
        raise UsageError("The annotator name is empty. Give a name such as --annotator alice.")
    if any(not ch.isprintable() for ch in cleaned) or len(cleaned) > 255:
        raise UsageError(f"The annotator name {quote(cleaned)} must be printable and under 256 characters.")
    return cleaned
