"""Waiting before trying again: the one backoff policy of every retry loop in ragjudge (a busy
database, an LLM server that answers 429 or 5xx)."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter: before try ``n + 1``, a wait drawn uniformly from the
    upper half of ``min(first * 2^(n-1), cap)`` ("equal jitter"), so that writers or clients
    that failed together do not try again together."""

    first: float
    cap: float

    def wait(self, attempt: int, hint: float | None = None) -> float:
        """Seconds to wait after failed try number ``attempt`` (1, 2, …); ``hint`` (a server's
        Retry-After) wins when given."""
        if hint is not None:
            return hint
        base = min(self.first * 2 ** max(attempt - 1, 0), self.cap)
        return base / 2 + random.uniform(0, base / 2)
