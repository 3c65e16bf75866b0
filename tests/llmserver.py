"""A small OpenAI-compatible chat-completions server on loopback, for tests and benchmarks.

It answers deterministically: the grade of a prompt is :func:`expected_grade` of its text, and a
prompt whose :func:`unparseable` is true gets an answer without a grade. Faults are injected by
a queue of :attr:`FakeLLM.faults` consumed one per request (``"429"``, ``"500"``, ``"timeout"``,
``"malformed"``, ``"401"``) or by :attr:`FakeLLM.fault_every` (every N-th request fails with a
fault chosen from the list, round-robin). A required key is checked like OpenAI does, and a
refused key is echoed in the error message (as some servers do), so tests can prove that
ragjudge never shows it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def expected_grade(prompt: str, top: int = 3) -> int:
    return int(hashlib.sha256(prompt.encode()).hexdigest()[:8], 16) % (top + 1)


def unparseable(prompt: str) -> bool:
    return int(hashlib.sha256(prompt.encode()).hexdigest()[8:16], 16) % 6 == 0


class FakeLLM:
    def __init__(self, *, key: str | None = None, delay: float = 0.0, timeout_sleep: float = 1.0,
                 top: int = 3, unparsed: bool = True) -> None:
        self.key = key
        self.delay = delay
        self.timeout_sleep = timeout_sleep
        self.top = top
        self.unparsed = unparsed
        self.faults: list[str] = []
        self.fault_every = 0
        self.fault_kinds = ("429", "500", "timeout", "malformed")
        self.requests: list[dict] = []
        self.answered: list[tuple[str, str]] = []  # (prompt, answer text) of each 200 answer
        self.lock = threading.Lock()
        self.trickle_seconds = 0.5
        self.stopped = threading.Event()
        #: with ``hold_after`` set, answers past that many wait until ``release`` is set (or the
        #: server stops): a test can signal a client mid-run without racing it
        self.hold_after: int | None = None
        self.release = threading.Event()
        self._count = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.handle(self, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def start(self) -> FakeLLM:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def _send(self, handler: BaseHTTPRequestHandler, status: int, payload: bytes,
              headers: dict[str, str] | None = None) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        for k, v in (headers or {}).items():
            handler.send_header(k, v)
        handler.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            handler.wfile.write(payload)

    def _next_fault(self) -> str | None:
        with self.lock:
            self._count += 1
            if self.faults:
                return self.faults.pop(0)
            if self.fault_every and self._count % self.fault_every == 0:
                return self.fault_kinds[(self._count // self.fault_every) % len(self.fault_kinds)]
        return None

    def handle(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        auth = handler.headers.get("Authorization")
        with self.lock:
            self.requests.append({"body": body, "authorization": auth, "path": handler.path})
        if not handler.path.endswith("/chat/completions"):
            self._send(handler, 404, b'{"error": {"message": "no such route"}}')
            return
        if self.key is not None and auth != f"Bearer {self.key}":
            given = (auth or "").removeprefix("Bearer ")
            message = json.dumps({"error": {"message": f"Incorrect API key provided: {given}"}})
            self._send(handler, 401, message.encode())
            return
        fault = self._next_fault()
        if fault == "429":
            self._send(handler, 429, b'{"error": {"message": "rate limited"}}', {"Retry-After": "0"})
            return
        if fault == "500":
            self._send(handler, 500, b'{"error": {"message": "internal error"}}')
            return
        if fault == "timeout":
            time.sleep(self.timeout_sleep)
            self._send(handler, 500, b'{"error": {"message": "too late"}}')
            return
        if fault == "trickle":  # headers at once, then one byte of the body every half second
            payload = b" " * 400 + b'{"error": {"message": "too late"}}'
            handler.send_response(500)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
                for i in range(len(payload)):
                    if self.stopped.is_set():
                        return
                    handler.wfile.write(payload[i:i + 1])
                    handler.wfile.flush()
                    time.sleep(self.trickle_seconds)
            return
        if fault == "malformed":
            self._send(handler, 200, b'{"choices": [{"message": ')
            return
        if fault == "401":
            self._send(handler, 401, b'{"error": {"message": "key revoked"}}')
            return
        if self.delay:
            time.sleep(self.delay)
        if self.hold_after is not None:
            with self.lock:
                held = len(self.answered) >= self.hold_after
            while held and not (self.release.is_set() or self.stopped.is_set()):
                self.release.wait(0.05)
        prompt = body["messages"][-1]["content"]
        if self.unparsed and unparseable(prompt):
            text = "M: hard to say.\nT: the passage is ambiguous.\nI cannot decide on a score."
        else:
            text = (f"M: the searcher wants an answer.\nT: the passage is fine.\n"
                    f"##final score: {expected_grade(prompt, self.top)}")
        with self.lock:
            self.answered.append((prompt, text))
        payload = {"id": "x", "object": "chat.completion", "model": body.get("model"),
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split()),
                             "total_tokens": len(prompt.split()) + len(text.split())}}
        self._send(handler, 200, json.dumps(payload).encode())
