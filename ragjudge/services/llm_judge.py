"""An LLM as one more annotator: it grades pool pairs through a chat-completions API.

The model is an annotator of kind ``llm`` (``llm:<model>`` unless named): its grades are label
events like anyone's (``source='llm'``), and each request leaves a row in ``llm_calls`` -- the
model, the SHA-256 of the exact prompt, the answer, token counts, latency and the outcome -- so
every machine label can be traced to what was asked and what came back. Its grades stay out of
the gold qrels unless asked (:func:`ragjudge.services.qrels.gold_qrels`).

The prompt follows the structure of the TREC 2024 RAG track's UMBRELA judge (Upadhyay et al.
2024, after Thomas et al. 2023): the scale's meanings, the instruction to weigh the searcher's
intent (M) and the passage's trustworthiness (T) before a final score, and an answer ending in
``##final score: N``; worded here, with the project's own scale and guidelines.

Pairs go in judging order (:meth:`ragjudge.services.judging.JudgingQueue.open_pairs`); a pair
the model already graded is never sent again, so a second run continues where the first
stopped, and every grade is committed the moment it arrives. The API key is read from the
environment and goes into the Authorization header only: it is never printed, logged or
stored, and any text from the server is cleaned of it before it is shown or kept.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ragjudge.errors import InputError, UsageError, why_unusable
from ragjudge.safetext import mask_secrets, visible

if TYPE_CHECKING:
    from ragjudge.models import Scale
    from ragjudge.services.project import Project

LLM_SOURCE = "llm"
"""``labels.source`` of a grade given by an LLM annotator."""
PLACEHOLDERS = ("query", "description", "chunk", "scale", "guidelines")
OUTCOMES = ("graded", "unparsed", "failed")
QUEUE_ORDER_SETTING = "llm_queue_order"
QUEUE_ORDERS = ("off", "hardest", "disagreement")
REVEAL_SETTING = "llm_reveal_after_grading"

DEFAULT_TEMPLATE = """\
You are grading search results for a relevance test collection. Read a search query and one \
passage, and decide how useful the passage is to someone who typed that query.

The grades:
{scale}
{guidelines}
Query: {query}
What the searcher is after: {description}

Passage:
{chunk}

Work it out in two short steps before you grade:
M: what the searcher most likely wants to learn, given the query and what they are after;
T: how well the passage meets that need, and how far its content can be trusted.
Then choose one grade from the list above. Finish your answer with a line of exactly this form, \
N being the grade:
##final score: N
"""

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}\s]*)\}")
_FINAL = re.compile(r"#+\s*final\s*score\s*[:=]\s*\**\s*(-?\d+)", re.IGNORECASE)
_BARE = re.compile(r"\s*(-?\d+)\s*\.?\s*")


# -- the prompt ------------------------------------------------------------------------------


def load_template(spec: str) -> str:
    """The prompt template: ``umbrela`` (the default) or a UTF-8 file with ``{query}``,
    ``{description}``, ``{chunk}``, ``{scale}`` and ``{guidelines}`` (``{{``/``}}`` for
    braces). An unknown placeholder is refused, naming the file."""
    if spec == "umbrela":
        return DEFAULT_TEMPLATE
    path = Path(spec)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start}).", file=spec) from None
    except OSError as exc:
        raise InputError(why_unusable(exc, path), file=spec,
                         hint="--prompt takes 'umbrela' or a template file.") from None
    unknown = sorted({m.group(1) for m in _PLACEHOLDER.finditer(text)
                      if m.group(1) is not None and m.group(1) not in PLACEHOLDERS})
    if unknown:
        raise InputError(
            f"the prompt template has the unknown placeholder{'s' if len(unknown) > 1 else ''} "
            f"{', '.join('{' + u + '}' for u in unknown)}; a template may use "
            f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)} (write {{{{ and }}}} for literal "
            "braces).", file=spec, field="prompt")
    if "{chunk}" not in text:
        raise InputError("the prompt template has no {chunk} placeholder: the model would never "
                         "see the passage it grades.", file=spec, field="prompt")
    return text


def render(template: str, values: dict[str, str]) -> str:
    """The template with its placeholders filled (``{{`` and ``}}`` become braces)."""
    def fill(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole in ("{{", "}}"):
            return whole[0]
        return values.get(match.group(1), whole)

    return _PLACEHOLDER.sub(fill, template)


def scale_text(scale: Scale) -> str:
    """The scale as the prompt lists it: one line per grade, with its name and meaning."""
    lines = []
    for level in scale.levels:
        meaning = f": {level.description}" if level.description else ""
        lines.append(f"{level.grade} = {level.name}{meaning}")
    return "\n".join(lines)


def prompt_values(project: Project) -> dict[str, str]:
    """The parts of the prompt that are the same for every pair of the project."""
    guidelines = (project.get_setting("guidelines") or "").strip()
    return {
        "scale": scale_text(project.scale),
        "guidelines": f"\nThe project's guidelines for judging:\n{guidelines}\n" if guidelines else "",
    }


def parse_grade(answer: str | None, scale: Scale) -> int | None:
    """The grade an answer gives: its last ``##final score: N`` line, or the whole answer when
    it is a bare integer; None when it names no grade of ``scale`` (the answer is unparsed)."""
    if not answer:
        return None
    found = _FINAL.findall(answer)
    text = found[-1] if found else None
    if text is None:
        bare = _BARE.fullmatch(answer)
        text = bare.group(1) if bare else None
    if text is None or len(text.lstrip("-")) > 4:
        return None
    grade = int(text)
    return grade if scale.contains(grade) else None


def prompt_digest(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()


# -- which pairs -----------------------------------------------------------------------------


def default_annotator(model: str) -> str:
    return f"llm:{model}"


def check_llm_annotator(project: Project, name: str) -> None:
    """The name an LLM labels under must not be a person's: their labels would mix."""
    from ragjudge.services import roster

    found = roster.member(project, name)
    if found is not None and found.kind != "llm":
        raise UsageError(f"{name!r} is a human annotator of this project; an LLM labels under its "
                         "own name (--annotator, default llm:MODEL). Nothing was changed.")


def unparsed_pairs(project: Project, annotator: str) -> set[tuple[str, str]]:
    """Pairs whose newest call by ``annotator`` came back without a grade of the scale."""
    from sqlalchemy import func

    from ragjudge.store.schema import LlmCall

    newest = (select(func.max(LlmCall.id).label("id")).where(LlmCall.annotator == annotator,
                                                            LlmCall.outcome != "failed")
              .group_by(LlmCall.query_id, LlmCall.chunk_id).subquery())
    with project.connect() as connection:
        rows = connection.execute(select(LlmCall.query_id, LlmCall.chunk_id)
                                  .join(newest, LlmCall.id == newest.c.id)
                                  .where(LlmCall.outcome == "unparsed")).all()
    return {(q, c) for q, c in rows}


def plan_pairs(project: Project, annotator: str, *, runs: list[str] | None = None, depth: int = 10,
               queries: list[str] | None = None, category: str | None = None,
               limit: int | None = None, retry_unparsed: bool = False,
               progress: Callable[..., None] | None = None) -> list[tuple[str, str]]:
    """The pool pairs the model has still to grade, in judging order: never one it graded, and
    one whose answer it could not be read from only with ``retry_unparsed``. ``progress``: of
    writing the runs' deeper ranks, when the pool goes deeper than their rows."""
    from ragjudge.services.judging import JudgingQueue

    queue = JudgingQueue(project, annotator, runs=runs, depth=depth, queries=queries,
                         category=category, use_assignment=False, progress=progress)
    skip = set() if retry_unparsed else unparsed_pairs(project, annotator)
    out: list[tuple[str, str]] = []
    for pair in queue.open_pairs():
        if pair in skip:
            continue
        out.append(pair)
        if limit is not None and len(out) >= limit:
            break
    return out


def pair_prompt(project: Project, template: str, fixed: dict[str, str], query_id: str,
                chunk_id: str) -> str:
    from ragjudge.services.judging import chunk_text, query_text

    query = query_text(project, query_id)
    chunk = chunk_text(project, chunk_id)
    description = query.description or query.narrative or "(not given: judge by the query)"
    return render(template, {**fixed, "query": query.text, "description": description,
                             "chunk": chunk.text})


# -- the client ------------------------------------------------------------------------------


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


@dataclass
class _Answer:
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


class _Client:
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

    async def ask(self, prompt: str, summary: Summary) -> _Answer:
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
                    response = await self.http.post(s.endpoint, json=body, headers=headers)
                except httpx.TimeoutException:
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
                    return _Answer(None, None, None, int((time.perf_counter() - started) * 1000),
                                   attempt, error=self.clean(exc))
                summary.retries += 1
                wait = exc.wait
                if wait is None:
                    base = min(s.backoff * 2 ** (attempt - 1), 60.0)
                    wait = base / 2 + random.uniform(0, base / 2)
                await asyncio.sleep(wait)

    def _read(self, response: Any, latency: int, attempt: int) -> _Answer:
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
                f"The server has no {self.clean(s.endpoint)} or no model {self.clean(s.model)!r} "
                f"(HTTP 404: {self._detail(response)}). Check --base-url and --model.")
        if status >= 400:
            return _Answer(None, None, None, latency, attempt,
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
        return _Answer(self.scrub(text or ""), _int(usage.get("prompt_tokens")),
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


# -- judging ---------------------------------------------------------------------------------


ProgressFn = Callable[[Summary], None]


class _Recorder:
    """Writes each answer as it arrives, one transaction each; registers the LLM annotator
    (kind ``llm``) with the first write, so that a run stopped before any answer leaves the
    project as it was."""

    def __init__(self, project: Project, annotator: str, model: str) -> None:
        self.project = project
        self.annotator = annotator
        self.model = model
        self.registered = False

    def register(self) -> None:
        if not self.registered:
            from ragjudge.services import roster

            found = roster.member(self.project, self.annotator)
            if found is None or found.kind != "llm":
                roster.add(self.project, self.annotator, kind="llm", reinstate=False)
            self.registered = True

    def record(self, query_id: str, chunk_id: str, digest: str, answer: _Answer,
               grade: int | None) -> str:
        """Store the call (and the grade as a label event); returns the outcome."""
        from ragjudge.services.judging import _newest
        from ragjudge.store.schema import Label, LlmCall, utcnow

        self.register()

        def work(session: Session) -> str:
            outcome = "failed" if answer.error else ("unparsed" if grade is None else "graded")
            label_id = None
            if outcome == "graded":
                current = _newest(session, self.annotator, query_id, chunk_id)
                if current is not None and current.grade is not None:
                    outcome = "already"  # another process graded it meanwhile: no second grade
                else:
                    event = Label(query_id=query_id, chunk_id=chunk_id, annotator=self.annotator,
                                  grade=grade, skipped=False, flagged=False, created_at=utcnow(),
                                  duration_ms=answer.latency_ms, source=LLM_SOURCE)
                    session.add(event)
                    session.flush()
                    label_id = int(event.id)
            session.add(LlmCall(query_id=query_id, chunk_id=chunk_id, annotator=self.annotator,
                                model=self.model, prompt_sha256=digest,
                                outcome="graded" if outcome == "already" else outcome,
                                grade=grade, label_id=label_id, answer=answer.text,
                                prompt_tokens=answer.prompt_tokens,
                                completion_tokens=answer.completion_tokens,
                                latency_ms=answer.latency_ms, attempts=answer.attempts,
                                error=answer.error, created_at=utcnow()))
            return outcome

        return self.project.write(work)


async def judge_async(project: Project, pairs: list[tuple[str, str]], settings: ClientSettings, *,
                      annotator: str, template: str = DEFAULT_TEMPLATE,
                      progress: ProgressFn | None = None, http: Any = None) -> Summary:
    """Grade ``pairs`` with the model, ``settings.concurrency`` requests at a time, committing
    each answer as it arrives. Raises :class:`StopJudging` (after keeping what came in) when
    the key is refused or the server cannot be reached."""
    import httpx

    summary = Summary(pairs=len(pairs))
    started = time.perf_counter()
    fixed = prompt_values(project)
    scale = project.scale
    recorder = _Recorder(project, annotator, settings.model)
    limits = asyncio.Semaphore(max(1, settings.concurrency))
    own = http is None
    if own:
        http = httpx.AsyncClient(timeout=settings.timeout, trust_env=False,
                                 limits=httpx.Limits(max_connections=max(1, settings.concurrency)))
    client = _Client(settings, http)

    async def one(query_id: str, chunk_id: str) -> None:
        async with limits:
            t0 = time.perf_counter()
            prompt = pair_prompt(project, template, fixed, query_id, chunk_id)
            digest = prompt_digest(prompt)
            summary.overhead_seconds += time.perf_counter() - t0
            answer = await client.ask(prompt, summary)
            t1 = time.perf_counter()
            grade = None if answer.error else parse_grade(answer.text, scale)
            outcome = recorder.record(query_id, chunk_id, digest, answer, grade)
            summary.overhead_seconds += time.perf_counter() - t1
            summary.prompt_tokens += answer.prompt_tokens or 0
            summary.completion_tokens += answer.completion_tokens or 0
            if outcome == "graded":
                summary.graded += 1
            elif outcome == "unparsed":
                summary.unparsed += 1
            elif outcome == "failed":
                summary.failed += 1
            else:
                summary.already += 1
            if progress is not None:
                progress(summary)

    # at most a few batches of tasks wait at once: a pool of millions is not a million tasks
    batch = max(64, 8 * settings.concurrency)
    try:
        for start in range(0, len(pairs), batch):
            tasks = [asyncio.ensure_future(one(q, c)) for q, c in pairs[start:start + batch]]
            try:
                await asyncio.gather(*tasks)
            except BaseException as exc:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                if isinstance(exc, StopJudging):
                    summary.stopped = str(exc)
                raise
    finally:
        summary.wall_seconds = time.perf_counter() - started
        if own:
            await http.aclose()
    return summary


def judge(project: Project, pairs: list[tuple[str, str]], settings: ClientSettings, *,
          annotator: str, template: str = DEFAULT_TEMPLATE,
          progress: ProgressFn | None = None) -> Summary:
    """:func:`judge_async` from synchronous code."""
    return asyncio.run(judge_async(project, pairs, settings, annotator=annotator,
                                   template=template, progress=progress))


# -- the audit trail -------------------------------------------------------------------------


AUDIT_FIELDS = ("id", "query_id", "chunk_id", "annotator", "model", "prompt_sha256", "outcome",
                "grade", "label_id", "answer", "prompt_tokens", "completion_tokens", "latency_ms",
                "attempts", "error", "created_at")


def audit_rows(project: Project, annotators: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Every LLM call, oldest first, as plain dicts (for ``export labels --llm-audit``)."""
    from ragjudge.store.schema import LlmCall

    stmt = select(*(getattr(LlmCall, f) for f in AUDIT_FIELDS)).order_by(LlmCall.id)
    if annotators is not None:
        stmt = stmt.where(LlmCall.annotator.in_(list(annotators)))
    with project.connect() as connection:
        rows = connection.execute(stmt).all()
    out = []
    for row in rows:
        item = dict(zip(AUDIT_FIELDS, row))
        created = item["created_at"]
        item["created_at"] = None if created is None else created.isoformat()
        out.append(item)
    return out


def export_audit(project: Project, dest: Any, *, fmt: str = "jsonl") -> int:
    """Write every LLM call (``audit_rows``) as JSONL or CSV; text fields are made visible on a
    terminal, as every export's are."""
    from ragjudge.formats import _visible_fields, is_terminal
    from ragjudge.formats.csvfile import write_csv
    from ragjudge.formats.jsonl import write_jsonl

    if fmt not in ("jsonl", "csv"):
        raise UsageError(f"--format {fmt}: the LLM audit is written as jsonl or csv.")
    rows: Iterable[dict[str, Any]] = audit_rows(project)
    if is_terminal(dest):
        rows = [_visible_fields(row, fmt == "jsonl") for row in rows]
    if fmt == "csv":
        return write_csv(rows, dest, kind="llm-audit", fields=AUDIT_FIELDS)
    return write_jsonl(rows, dest)


def call_counts(project: Project) -> dict[str, dict[str, int]]:
    """Per LLM annotator: calls per outcome (failed ones included)."""
    from sqlalchemy import func

    from ragjudge.store.schema import LlmCall

    with project.connect() as connection:
        rows = connection.execute(select(LlmCall.annotator, LlmCall.outcome, func.count())
                                  .group_by(LlmCall.annotator, LlmCall.outcome)).all()
    out: dict[str, dict[str, int]] = {}
    for name, outcome, n in rows:
        out.setdefault(name, dict.fromkeys(OUTCOMES, 0))[outcome] = int(n)
    return out


# -- the LLM in human judging ----------------------------------------------------------------


def queue_order(project: Project) -> str:
    value = project.get_setting(QUEUE_ORDER_SETTING) or "off"
    return value if value in QUEUE_ORDERS else "off"


def reveal_after_grading(project: Project) -> bool:
    return bool(project.get_setting(REVEAL_SETTING, False))


def set_judging_settings(project: Project, *, order: str | None = None,
                         reveal: bool | None = None) -> None:
    """The lead's choices of how the LLM's grades shape human judging (both off by default)."""
    values: dict[str, Any] = {}
    if order is not None:
        if order not in QUEUE_ORDERS:
            raise UsageError(f"--queue-order {order}: use {', '.join(QUEUE_ORDERS)}.")
        values[QUEUE_ORDER_SETTING] = order
    if reveal is not None:
        values[REVEAL_SETTING] = bool(reveal)
    if values:
        project.set_settings(values)


def llm_names(connection: Any) -> list[str]:
    from ragjudge.store.schema import Annotator

    return sorted(connection.execute(select(Annotator.name).where(Annotator.kind == "llm")).scalars())


def llm_grades(project: Project, query_id: str, chunk_id: str) -> list[tuple[str, int | None]]:
    """Each LLM annotator's word on a pair: its current grade, or None when its newest call
    came back unparsed (LLMs that never saw the pair are left out)."""
    from ragjudge.services.qrels import newest_label_ids
    from ragjudge.store.schema import Label, LlmCall

    with project.connect() as connection:
        names = llm_names(connection)
        if not names:
            return []
        newest = newest_label_ids()
        graded = dict(connection.execute(
            select(Label.annotator, Label.grade).join(newest, Label.id == newest.c.id)
            .where(Label.query_id == query_id, Label.chunk_id == chunk_id,
                   Label.annotator.in_(names), Label.grade.is_not(None))).all())
        called = set(connection.execute(
            select(LlmCall.annotator).where(LlmCall.query_id == query_id,
                                            LlmCall.chunk_id == chunk_id,
                                            LlmCall.outcome == "unparsed")).scalars())
    return [(n, graded.get(n)) for n in names if n in graded or n in called]


def priorities(project: Project, annotator: str, query_id: str, order: str) -> dict[str, int]:
    """For ordering an annotator's queue: per chunk of the query, 0 for the pairs to see first
    (``hardest``: the LLM's answer was unparsed or a mid-scale grade; ``disagreement``: the
    LLM's grade differs from an earlier human grade), 1 for the rest."""
    if order == "off":
        return {}
    from ragjudge.services.qrels import newest_label_ids
    from ragjudge.store.schema import Annotator, Label, LlmCall

    scale = project.scale
    with project.connect() as connection:
        names = llm_names(connection)
        if not names:
            return {}
        newest = newest_label_ids()
        rows = connection.execute(
            select(Label.chunk_id, Label.annotator, Label.grade).join(newest, Label.id == newest.c.id)
            .where(Label.query_id == query_id, Label.grade.is_not(None))).all()
        unparsed = set(connection.execute(
            select(LlmCall.chunk_id).where(LlmCall.query_id == query_id,
                                           LlmCall.annotator.in_(names),
                                           LlmCall.outcome == "unparsed")).scalars())
        humans = set(connection.execute(select(Annotator.name).where(Annotator.kind != "llm")).scalars())
    if annotator in names:
        return {}  # an LLM's own queue keeps its order
    machine: dict[str, set[int]] = {}
    people: dict[str, set[int]] = {}
    for chunk_id, who, grade in rows:
        if grade is None:
            continue
        if who in names:
            machine.setdefault(chunk_id, set()).add(int(grade))
        elif who in humans and who != annotator:
            people.setdefault(chunk_id, set()).add(int(grade))
    first: set[str] = set()
    if order == "hardest":
        first = set(unparsed) | {c for c, gs in machine.items()
                                 if any(scale.min < g < scale.max for g in gs)}
    else:
        first = {c for c, gs in machine.items() if c in people and gs != people[c]}
    return {c: 0 for c in first}
