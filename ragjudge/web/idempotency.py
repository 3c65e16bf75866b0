"""Each action once: the answers to requests that carried an ``Idempotency-Key``.

The page makes a random key (a UUID) per action -- one grade, one undo -- and sends it with every
try of that action. The server remembers, per session (per annotator for a script with a
token), each key's first answer for :data:`KEEP_SECONDS`; a repeat gets that answer again
without running the action a second time. A repeat that arrives while the first try is still
running waits for it. The same key with a different request is refused (422): that is a
client's mistake, not a retry.

Answers a retry should run again are not kept: 401, 403 and 429 (the action did not run) and
server errors (it may not have).
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

KEEP_SECONDS = 24 * 3600.0
PER_SCOPE = 2_000
"""Keys kept per session; the oldest go first."""
SCOPES = 50_000
"""Sessions (and scripts) with kept keys; the least recently used go first."""
KEY = re.compile(r"^[A-Za-z0-9_-]{8,100}$")
NOT_KEPT = frozenset({401, 403, 429})


class KeyReused(Exception):
    """The key came with another request before."""


@dataclass
class _Entry:
    fingerprint: str
    done: threading.Event = field(default_factory=threading.Event)
    answer: tuple[int, object] | None = None
    at: float = field(default_factory=time.monotonic)


class Replays:
    """The kept answers of every scope."""

    def __init__(self) -> None:
        self._scopes: OrderedDict[str, OrderedDict[str, _Entry]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def fingerprint(method: str, path: str, body: bytes) -> str:
        return hashlib.sha256(b"%s %s\n%s" % (method.encode(), path.encode(), body)).hexdigest()

    def run(self, scope: str, key: str, fingerprint: str,
            action: Callable[[], tuple[int, object]]) -> tuple[int, object, bool]:
        """``action()``'s ``(status, body)``, or the first answer kept for ``key`` in ``scope``;
        the third value says whether it is a replay."""
        entry, first = self._claim(scope, key, fingerprint)
        if not first:
            entry.done.wait()
            if entry.answer is not None:
                return entry.answer[0], entry.answer[1], True
            return self.run(scope, key, fingerprint, action)  # the first try was not kept
        try:
            status, body = action()
        except BaseException:
            self._release(scope, key, entry)
            raise
        if status in NOT_KEPT or status >= 500:
            self._release(scope, key, entry)
        else:
            entry.answer = (status, body)
            entry.done.set()
        return status, body, False

    def _claim(self, scope: str, key: str, fingerprint: str) -> tuple[_Entry, bool]:
        now = time.monotonic()
        with self._lock:
            keys = self._scopes.get(scope)
            if keys is None:
                keys = self._scopes[scope] = OrderedDict()
            self._scopes.move_to_end(scope)
            while len(self._scopes) > SCOPES:
                self._scopes.popitem(last=False)
            while keys and now - next(iter(keys.values())).at > KEEP_SECONDS:
                keys.popitem(last=False)
            found = keys.get(key)
            if found is not None:
                if found.fingerprint != fingerprint:
                    raise KeyReused()
                return found, False
            entry = keys[key] = _Entry(fingerprint)
            while len(keys) > PER_SCOPE:
                keys.popitem(last=False)
            return entry, True

    def _release(self, scope: str, key: str, entry: _Entry) -> None:
        with self._lock:
            keys = self._scopes.get(scope)
            if keys is not None and keys.get(key) is entry:
                del keys[key]
        entry.done.set()

    def forget(self, scope: str) -> None:
        with self._lock:
            self._scopes.pop(scope, None)
