"""Each action once: the answers to requests that carried an ``Idempotency-Key``.

The page makes a random key (a UUID) per action -- one grade, one undo -- and sends it with every
try of that action. The server remembers, per session (per token for a script), each key's
first answer; a repeat gets that answer again without running the action a second time. A
repeat that arrives while the first try is still running waits for it. The same key with a
different request is refused (422): that is a client's mistake, not a retry.

An answer is kept for :data:`KEEP_SECONDS`, at most :data:`PER_SCOPE` per session, and at most
:data:`BUDGET_BYTES` in all (the oldest go first): a page sends an action again within seconds
or minutes, and a label's answer, with the next pair in it, is a few kilobytes.

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
PER_SCOPE = 500
"""Keys kept per session (or script); the oldest go first."""
BUDGET_BYTES = 64 * 1024 * 1024
"""The kept answers' bytes in all; the oldest go first."""
KEY = re.compile(r"^[A-Za-z0-9_-]{8,100}$")
NOT_KEPT = frozenset({401, 403, 429})


class KeyReused(Exception):
    """The key came with another request before."""


@dataclass
class _Entry:
    fingerprint: str
    done: threading.Event = field(default_factory=threading.Event)
    answer: tuple[int, bytes] | None = None
    at: float = field(default_factory=time.monotonic)


class Replays:
    """The kept answers of every scope, oldest first."""

    def __init__(self, budget: int = BUDGET_BYTES, per_scope: int = PER_SCOPE) -> None:
        self.budget = budget
        self.per_scope = per_scope
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._per_scope: dict[str, int] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    @staticmethod
    def fingerprint(method: str, path: str, body: bytes) -> str:
        return hashlib.sha256(b"%s %s\n%s" % (method.encode(), path.encode(), body)).hexdigest()

    def run(self, scope: str, key: str, fingerprint: str,
            action: Callable[[], tuple[int, bytes]]) -> tuple[int, bytes, bool]:
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
            self._keep(scope, key, entry, status, body)
        return status, body, False

    def _claim(self, scope: str, key: str, fingerprint: str) -> tuple[_Entry, bool]:
        with self._lock:
            self._expire(time.monotonic())
            found = self._entries.get((scope, key))
            if found is not None:
                if found.fingerprint != fingerprint:
                    raise KeyReused()
                return found, False
            entry = self._entries[(scope, key)] = _Entry(fingerprint)
            self._per_scope[scope] = self._per_scope.get(scope, 0) + 1
            if self._per_scope[scope] > self.per_scope:
                oldest = next(k for k in self._entries if k[0] == scope)
                self._drop(oldest)
            return entry, True

    def _keep(self, scope: str, key: str, entry: _Entry, status: int, body: bytes) -> None:
        with self._lock:
            entry.answer = (status, body)
            if self._entries.get((scope, key)) is not entry:
                entry.done.set()  # evicted while it ran: answered, not kept
                return
            self._bytes += len(body)
            while self._bytes > self.budget and self._entries:
                self._drop(next(iter(self._entries)))
        entry.done.set()

    def _release(self, scope: str, key: str, entry: _Entry) -> None:
        with self._lock:
            if self._entries.get((scope, key)) is entry:
                self._drop((scope, key))
        entry.done.set()

    def _drop(self, where: tuple[str, str]) -> None:
        entry = self._entries.pop(where)
        if entry.answer is not None:
            self._bytes -= len(entry.answer[1])
        count = self._per_scope.get(where[0], 1) - 1
        if count:
            self._per_scope[where[0]] = count
        else:
            self._per_scope.pop(where[0], None)

    def _expire(self, now: float) -> None:
        while self._entries:
            where, oldest = next(iter(self._entries.items()))
            if now - oldest.at <= KEEP_SECONDS or not oldest.done.is_set():
                break
            self._drop(where)

    def forget(self, scope: str) -> None:
        with self._lock:
            for where in [k for k in self._entries if k[0] == scope]:
                self._drop(where)

    @property
    def kept_bytes(self) -> int:
        return self._bytes
