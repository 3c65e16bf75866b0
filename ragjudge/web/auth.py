"""Who a request comes from: server-side sessions, and the rate limits of logging in.

A person logs in once with their personal token; the server keeps a session (a random id, the
annotator's name and the SHA-256 digest of the token it was made from) in memory and gives the
browser only the id, in an HttpOnly, SameSite=Strict cookie. Every request with the cookie looks
the annotator up again (one primary-key read): a token issued anew (``ragjudge annotators token
NAME``) or an annotator retired refuses the session's next request. The token itself is never
kept, logged or sent back. A script sends the token itself as ``Authorization: Bearer TOKEN``.

Sessions live in this server's memory: a server restarted asks everyone to log in again (the
page keeps an action it could not send and sends it once the person is back).

Rate limits are token buckets in memory (:data:`LIMITS`): logging in per client address and
server-wide for failures, new sessions per annotator across all their connections, and
requests per annotator. A token that opens nothing, sent by a script, counts as a login
attempt of its address; once the address has none left, even a good token waits (else the limit
would not slow down guessing).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

COOKIE = "ragjudge_session"
SESSION_IDLE_SECONDS = 12 * 3600
"""A session nobody used for this long is gone (a working day and the night after it)."""
SESSION_MAX_SECONDS = 7 * 24 * 3600
"""A session is gone a week after it was made, used or not."""
SESSIONS_PER_NAME = 20
"""One annotator's sessions at once (tabs, browsers, devices); a new one ends the oldest."""


@dataclass(frozen=True)
class Limit:
    """A token bucket: ``burst`` at once, then one more every ``1 / per_second`` seconds."""

    burst: float
    per_second: float

    def describe(self) -> str:
        every = 1 / self.per_second
        return f"{self.burst:g} at once, then one every {every:g} s"


LIMITS = {
    # login attempts (the form, or a request whose token opens nothing) per client address:
    # 10 at once, then one every 6 s (10 a minute)
    "login_address": Limit(10, 1 / 6),
    # new sessions per annotator across every connection: 10, then one a minute
    "session_name": Limit(10, 1 / 60),
    # requests per annotator across every connection and session: 120 at once, then 20 a second
    # (a person labels a pair every few seconds; a script gets room, not the whole server)
    "request_name": Limit(120, 20),
}


class Buckets:
    """Token buckets by key, the least recently used dropped past ``size`` (a full bucket is
    what a new one is, so dropping an old one changes nothing)."""

    def __init__(self, limit: Limit, size: int = 20_000) -> None:
        self.limit = limit
        self.size = size
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, key: str, now: float | None = None) -> float:
        """Take one token for ``key``: 0.0 when there was one, else the seconds to wait."""
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, at = self._buckets.get(key, (self.limit.burst, now))
            tokens = min(self.limit.burst, tokens + (now - at) * self.limit.per_second)
            if tokens >= 1:
                self._buckets[key] = (tokens - 1, now)
                wait = 0.0
            else:
                self._buckets[key] = (tokens, now)
                wait = (1 - tokens) / self.limit.per_second
            self._buckets.move_to_end(key)
            while len(self._buckets) > self.size:
                self._buckets.popitem(last=False)
            return wait

    def blocked(self, key: str, now: float | None = None) -> float:
        """The seconds until ``key`` has a token again (0.0: it has one); takes nothing."""
        now = time.monotonic() if now is None else now
        with self._lock:
            found = self._buckets.get(key)
            if found is None:
                return 0.0
            tokens = min(self.limit.burst, found[0] + (now - found[1]) * self.limit.per_second)
            return 0.0 if tokens >= 1 else (1 - tokens) / self.limit.per_second


@dataclass
class WebSession:
    id: str
    name: str
    digest: str
    """SHA-256 of the token the session was made from; compared with the roster's on every
    request."""
    created: float
    used: float


class Full(Exception):
    """No room for another session on this server."""


class Sessions:
    """Logged-in sessions by id, in memory."""

    ENDED = 10_000
    """Ended sessions whose reason is remembered (the page says why, not just "ended")."""

    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self._by_id: dict[str, WebSession] = {}
        self._ended: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._by_id)

    def create(self, name: str, digest: str) -> WebSession:
        now = time.monotonic()
        with self._lock:
            self._expire(now)
            mine = sorted((s for s in self._by_id.values() if s.name == name), key=lambda s: s.used)
            for old in mine[: max(0, len(mine) - SESSIONS_PER_NAME + 1)]:
                del self._by_id[old.id]
            if len(self._by_id) >= self.max_sessions:
                raise Full()
            session = WebSession(secrets.token_urlsafe(32), name, digest, now, now)
            self._by_id[session.id] = session
            return session

    def get(self, session_id: str) -> WebSession | None:
        if not session_id or len(session_id) > 128:
            return None
        now = time.monotonic()
        with self._lock:
            found = self._by_id.get(session_id)
            if found is None:
                return None
            if now - found.used > SESSION_IDLE_SECONDS or now - found.created > SESSION_MAX_SECONDS:
                del self._by_id[session_id]
                return None
            found.used = now
            return found

    def drop(self, session_id: str, reason: str | None = None) -> None:
        """End a session; with ``reason`` (``revoked``, ``retired``...) its cookie is answered
        with that reason from now on."""
        with self._lock:
            self._by_id.pop(session_id, None)
            if reason is not None:
                self._ended[session_id] = reason
                while len(self._ended) > self.ENDED:
                    self._ended.popitem(last=False)

    def why_ended(self, session_id: str) -> str | None:
        with self._lock:
            return self._ended.get(session_id)

    def _expire(self, now: float) -> None:
        gone = [s.id for s in self._by_id.values()
                if now - s.used > SESSION_IDLE_SECONDS or now - s.created > SESSION_MAX_SECONDS]
        for session_id in gone:
            del self._by_id[session_id]


class Limits:
    """The server's buckets, one per kind of :data:`LIMITS` (``override`` changes some)."""

    def __init__(self, override: dict[str, Limit] | None = None) -> None:
        limits = {**LIMITS, **(override or {})}
        self.buckets = {kind: Buckets(limit) for kind, limit in limits.items()}

    def take(self, kind: str, key: str) -> float:
        return self.buckets[kind].take(key)

    def blocked(self, kind: str, key: str) -> float:
        return self.buckets[kind].blocked(key)
