"""What every request passes through before any route sees it, and every answer after.

One ASGI middleware (:class:`Guard`), on the way in:

- **Host**: while the server listens on loopback without a public URL, only loopback host names
  are answered (421 otherwise): a web site whose name is made to resolve to 127.0.0.1 (DNS
  rebinding) gets nothing;
- **Origin**: a request that changes something (POST and the other unsafe methods) and a
  websocket must come from this server's own pages: a browser names the page's origin
  (``Origin``, ``Sec-Fetch-Site``), and another one is refused (403). A script sends neither;
- **size**: a request body larger than :data:`MAX_BODY` is refused (413) before it is read whole.

On the way out: the security headers (a content security policy without inline scripts or
styles, no framing, no sniffing, no referrer to other sites (``same-origin``: with
``no-referrer`` a browser names a form's origin ``null``, which the Origin check refuses), nothing stored in caches but the static files) and
one line of the access log per request (:func:`access_line`: JSON with the time, method, path
without its query string, status, duration and annotator; never a token, a cookie or a query
string).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import UTC, datetime
from typing import Any, TextIO
from urllib.parse import urlsplit

from ragjudge.hosts import is_loopback

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY = 256 * 1024
"""The largest request body: a label is a few hundred bytes, a note or comment a few kB."""
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]", "::1")
UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})

POLICY = "; ".join([
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
])
"""Pages load only this server's own files; no inline script or style anywhere."""
TERMINAL_POLICY = POLICY.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'").replace(
    "connect-src 'self'", "connect-src 'self' ws: wss:")
"""The lead's terminal page: xterm.js sets styles of its own elements; the terminal is a
websocket (scripts stay 'self' only)."""


def host_name(host: str) -> str:
    """``127.0.0.1:8000`` -> ``127.0.0.1``; ``[::1]:8000`` -> ``[::1]``."""
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def access_line(method: str, path: str, status: int, seconds: float, annotator: str | None) -> str:
    return json.dumps({"time": datetime.now(UTC).isoformat(timespec="milliseconds"),
                       "method": method, "path": path, "status": status,
                       "ms": round(seconds * 1000, 1), "annotator": annotator},
                      ensure_ascii=False)


class Guard:
    """The middleware (see the module's docstring)."""

    def __init__(self, app: ASGIApp, *, bind_host: str, public_url: str | None,
                 log: TextIO | None = None, refuse: Callable[..., Awaitable[None]]) -> None:
        self.app = app
        self.loopback_only = is_loopback(bind_host) and public_url is None
        self.public = urlsplit(public_url).netloc.lower() if public_url else None
        self.log = log if log is not None else sys.stderr
        self.refuse = refuse
        """``refuse(scope, receive, send, status, reason)``: the refusal page or JSON."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = {"code": 0}
        scope.setdefault("state", {})
        host = _header(scope, b"host")
        reason, code = self._check(scope, host)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                message["headers"] = list(message.get("headers", [])) + self._headers(scope)
            elif message["type"] == "websocket.accept":
                status["code"] = 101
            elif message["type"] == "websocket.close" and not status["code"]:
                status["code"] = 403
            await send(message)

        try:
            if reason is not None:
                await self.refuse(scope, receive, sending, code, reason)
            elif scope["type"] == "http" and _too_large(scope):
                await self.refuse(scope, receive, sending, 413, "too-large")
            elif scope["type"] == "http" and _chunked(scope):
                buffered = await _buffered(receive)
                if buffered is None:
                    await self.refuse(scope, receive, sending, 413, "too-large")
                else:
                    await self.app(scope, buffered, sending)
            else:
                await self.app(scope, _limited(receive) if scope["type"] == "http" else receive,
                               sending)
        finally:
            self._log(scope, status["code"] or 500, time.perf_counter() - started)

    def _check(self, scope: Scope, host: str) -> tuple[str | None, int]:
        if self.loopback_only and host_name(host).lower() not in LOOPBACK_NAMES:
            return "host", 421
        unsafe = scope["type"] == "websocket" or scope.get("method") in UNSAFE
        if unsafe and not self._same_origin(scope, host):
            return "origin", 403
        return None, 0

    def _same_origin(self, scope: Scope, host: str) -> bool:
        if _header(scope, b"sec-fetch-site") == "cross-site":
            return False
        origin = _header(scope, b"origin")
        if not origin:
            return True  # not a browser's request: it carries no one's cookies by accident
        netloc = urlsplit(origin).netloc.lower()
        return netloc == host.lower() or (self.public is not None and netloc == self.public)

    def _headers(self, scope: Scope) -> list[tuple[bytes, bytes]]:
        path = scope.get("path", "")
        policy = TERMINAL_POLICY if path.rstrip("/").endswith("/lead/terminal") else POLICY
        cache = b"no-cache" if path.startswith("/static/") or "/terminal/static/" in path else b"no-store"
        return [(b"content-security-policy", policy.encode()), (b"x-frame-options", b"DENY"),
                (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"same-origin"),
                (b"cross-origin-opener-policy", b"same-origin"),
                (b"cross-origin-resource-policy", b"same-origin"),
                (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
                (b"cache-control", cache)]

    def _log(self, scope: Scope, status: int, seconds: float) -> None:
        method = scope.get("method", "WS") if scope["type"] == "http" else "WS"
        annotator = scope.get("state", {}).get("annotator")
        try:
            self.log.write(access_line(method, scope.get("path", ""), status, seconds, annotator) + "\n")
            self.log.flush()
        except (OSError, ValueError):
            pass  # a closed log never stops an answer


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return ""


def _too_large(scope: Scope) -> bool:
    length = _header(scope, b"content-length")
    try:
        return bool(length) and int(length) > MAX_BODY
    except ValueError:
        return True


def _chunked(scope: Scope) -> bool:
    return not _header(scope, b"content-length") and bool(_header(scope, b"transfer-encoding"))


async def _buffered(receive: Receive) -> Receive | None:
    """A body sent without a length, read here up to :data:`MAX_BODY` (None past it) and
    handed on as one message."""
    parts, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        parts.append(message.get("body", b""))
        size += len(parts[-1])
        if size > MAX_BODY:
            return None
        if not message.get("more_body", False):
            break
    sent = {"done": False}

    async def replay() -> Message:
        if not sent["done"]:
            sent["done"] = True
            return {"type": "http.request", "body": b"".join(parts), "more_body": False}
        return await receive()

    return replay


class BodyTooLarge(Exception):
    """A body sent without a length (chunked) grew past :data:`MAX_BODY`."""


def _limited(receive: Receive) -> Receive:
    seen = {"bytes": 0}

    async def limited() -> Message:
        message = await receive()
        if message["type"] == "http.request":
            seen["bytes"] += len(message.get("body", b""))
            if seen["bytes"] > MAX_BODY:
                raise BodyTooLarge()
        return message

    return limited
