"""The chat-completions client of ``llm-judge``: requests with retries and a time limit."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from ragjudge.errors import UsageError
from ragjudge.retry import Backoff
from ragjudge.safetext import mask_secrets, visible
from ragjudge.safetext import quote
from collections.abc import Callable


@dataclass(frozen=True)
class ClientSettings:
    """How to reach the model. ``api_key`` is kept out of ``repr`` (a traceback or a log of this
    object never shows it)."""

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    temperature: float = 0.0
    max_tokens: int = 512
    concurrency: int = 4
    timeout: float = 60.0
    retries: int = 5
    backoff: float = 0.5
    """Seconds before the first retry; doubled each time, with jitter, at most 60 s."""
    key_env: str = "OPENAI_API_KEY"
    """Where the key came from (named in messages; the key itself never is)."""

    @property
    def endpoint(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


class StopJudging(UsageError):
    """The server refused the key, cannot be reached, or does not serve the model: every
    further request would fail alike, so judging stops at once."""


@dataclass
class Answer:
    text: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: int
    attempts: int
    error: str | None = None


class _Transient(Exception):
    """A failure worth another try: 429, 5xx, a timeout, a garbled response."""

    def __init__(self, reason: str, wait: float | None = None) -> None:
        super().__init__(reason)
        self.wait = wait


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (seconds or an HTTP date), at most 120."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), 120.0)


class Client:
    def __init__(self, settings: ClientSettings, http: Any) -> None:
        self.settings = settings
        self.http = http
        self.answered = False
        """True once the server has answered anything (a later connection failure is a blip)."""

    def scrub(self, text: str) -> str:
        """The text without the API key (an answer is kept as it came, less that)."""
        key = self.settings.api_key
        text = text.replace(key, "***") if key else text
        # no database stores NUL alike, and a lone surrogate is no UTF-8: both shown as U+FFFD
        return text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")

    def clean(self, text: object, limit: int = 300) -> str:
        """Server text made fit for a message: no key, no URL password, one line, bounded."""
        value = visible(mask_secrets(self.scrub(str(text))))
        return value if len(value) <= limit else value[: limit - 1] + "…"

    def _fatal(self, what: str) -> StopJudging:
        return StopJudging(f"{what} Judging stopped; any grade received before this is kept, "
                           "and running the same command again continues from there.")

    async def ask(self, prompt: str, summary: Summary) -> Answer:
        """The model's answer to ``prompt``, retrying transient failures with exponential
        backoff and jitter (Retry-After honoured); an answer with ``error`` after the last try."""
        import httpx

        s = self.settings
        body = {"model": s.model, "messages": [{"role": "user", "content": prompt}],
                "temperature": s.temperature, "max_tokens": s.max_tokens}
        headers = {"Authorization": f"Bearer {s.api_key}"} if s.api_key else {}
        attempt = 0
        while True:
            attempt += 1
            started = time.perf_counter()
            try:
                try:
                    # one deadline for the whole request (httpx's timeout is per read: a server
                    # sending one byte at a time would hold a request for as long as it likes)
                    response = await asyncio.wait_for(
                        self.http.post(s.endpoint, json=body, headers=headers), s.timeout)
                except (httpx.TimeoutException, TimeoutError):
                    raise _Transient(f"no answer within {s.timeout:g} s") from None
                except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as exc:
                    if not self.answered:
                        raise self._fatal(
                            f"The server at {self.clean(s.base_url)} cannot be reached "
                            f"({self.clean(type(exc).__name__)}: {self.clean(exc) or 'no detail'}). "
                            "Check --base-url (an OpenAI-compatible server, e.g. "
                            "http://127.0.0.1:8000/v1) and that the server is running.") from None
                    raise _Transient(f"connection lost ({type(exc).__name__})") from None
                latency = int((time.perf_counter() - started) * 1000)
                return self._read(response, latency, attempt)
            except _Transient as exc:
                if attempt > s.retries:
                    return Answer(None, None, None, int((time.perf_counter() - started) * 1000),
                                   attempt, error=self.clean(exc))
                summary.retries += 1
                await asyncio.sleep(Backoff(s.backoff, 60.0).wait(attempt, exc.wait))

    def _read(self, response: Any, latency: int, attempt: int) -> Answer:
        s = self.settings
        status = response.status_code
        if status in (401, 403):
            raise self._fatal(
                f"The server refused the API key (HTTP {status}: {self._detail(response)}). "
                + (f"Check the key in the environment variable {self.clean(s.key_env)} (its value is "
                   "never shown), or name another with --api-key-env." if s.api_key else
                   f"No key was sent: the environment variable {self.clean(s.key_env)} is not set "
                   "(name another with --api-key-env)."))
        if status == 429 or status >= 500 or status == 408:
            raise _Transient(f"HTTP {status}: {self._detail(response)}",
                             _retry_after(response.headers.get("retry-after")))
        self.answered = True
        if status == 404:
            raise self._fatal(
                f"The server has no {self.clean(s.endpoint)} or no model {quote(self.clean(s.model))} "
                f"(HTTP 404: {self._detail(response)}). Check --base-url and --model.")
        if status >= 400:
            return Answer(None, None, None, latency, attempt,
                           error=f"HTTP {status}: {self._detail(response)}")
        try:
            data = response.json()
            message = data["choices"][0]["message"]
            text = message.get("content")
            if text is not None and not isinstance(text, str):
                raise TypeError("content is not text")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise _Transient("the response is not a chat completion (malformed JSON)") from None
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return Answer(self.scrub(text or ""), _int(usage.get("prompt_tokens")),
                       _int(usage.get("completion_tokens")), latency, attempt)

    def _detail(self, response: Any) -> str:
        try:
            data = response.json()
            error = data.get("error") if isinstance(data, dict) else None
            text = error.get("message") if isinstance(error, dict) else (error or data)
        except ValueError:
            text = response.text
        return self.clean(text or "no detail", 200)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


@dataclass
class Summary:
    """What a run of ``llm-judge`` did."""

    pairs: int = 0
    graded: int = 0
    unparsed: int = 0
    failed: int = 0
    already: int = 0
    """Pairs graded by another process while this one waited for the answer (not written again)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_seconds: float = 0.0
    overhead_seconds: float = 0.0
    """Time spent in ragjudge itself (prompts, parsing, committing), not waiting for the server."""
    retries: int = 0
    stopped: str | None = None

    @property
    def done(self) -> int:
        return self.graded + self.unparsed + self.failed + self.already

    def to_json(self) -> dict[str, Any]:
        return {"pairs": self.pairs, "graded": self.graded, "unparsed": self.unparsed,
                "failed": self.failed, "already_graded": self.already,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "retries": self.retries, "wall_seconds": round(self.wall_seconds, 3),
                "overhead_ms_per_pair": round(1000 * self.overhead_seconds / self.done, 3)
                if self.done else None, "stopped": self.stopped}


ProgressFn = Callable[[Summary], None]
