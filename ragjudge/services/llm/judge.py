"""An LLM as one more annotator: it grades pool pairs through a chat-completions API.

The model is an annotator of kind ``llm`` (``llm:<model>`` unless named): its grades are label
events like anyone's (``source='llm'``), and each request leaves a row in ``llm_calls`` -- the
model, the SHA-256 of the exact prompt, the answer, token counts, latency and the outcome -- so
every machine label can be traced to what was asked and what came back. Its grades stay out of
the gold qrels unless asked (:func:`ragjudge.services.gold.qrels.gold_qrels`).

The prompt follows the structure of the TREC 2024 RAG track's UMBRELA judge (Upadhyay et al.
2024, after Thomas et al. 2023): the scale's meanings, the instruction to weigh the searcher's
intent (M) and the passage's trustworthiness (T) before a final score, and an answer ending in
``##final score: N``; worded here, with the project's own scale and guidelines.

Pairs go in judging order (:meth:`ragjudge.services.labels.queue.JudgingQueue.open_pairs`); a pair
the model already graded is never sent again, so a second run continues where the first
stopped, and every grade is committed the moment it arrives. The API key is read from the
environment and goes into the Authorization header only: it is never printed, logged or
stored, and any text from the server is cleaned of it before it is shown or kept.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any
from sqlalchemy import select
from sqlalchemy.orm import Session
from ragjudge.errors import UsageError
from ragjudge.services.access.rights import Access
from ragjudge.services.llm.client import Answer, Client, ClientSettings, StopJudging
from ragjudge.services.llm.prompt import DEFAULT_TEMPLATE, pair_prompt, parse_grade, prompt_digest, prompt_values
from ragjudge.services.llm.client import ProgressFn, Summary
from ragjudge.safetext import quote


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


LLM_SOURCE = "llm"
"""``labels.source`` of a grade given by an LLM annotator."""


OUTCOMES = ("graded", "unparsed", "failed")


def default_annotator(model: str) -> str:
    return f"llm:{model}"


def check_llm_annotator(project: Project, name: str) -> None:
    """The name an LLM labels under must not be a person's: their labels would mix."""
    from ragjudge.services.access import roster

    found = roster.member(project, name)
    if found is not None and found.kind != "llm":
        raise UsageError(f"{quote(name)} is a human annotator of this project; an LLM labels under its "
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
               progress: Callable[..., None] | None = None,
               order: str = "depth") -> list[tuple[str, str]]:
    """The pool pairs the model has still to grade, in judging order (``order``: depth, query,
    or settle: the pairs that most move the comparisons not settled yet first; the model's
    grades stay out of the gold, so the order need not be weighed again as they come): never
    one it graded, and one whose answer it could not be read from only with
    ``retry_unparsed``. ``progress``: of writing the runs' deeper ranks, when the pool goes
    deeper than their rows."""
    from ragjudge.services.scoring.settled import judging_queue

    queue = judging_queue(project, annotator, order=order, runs=runs, depth=depth, queries=queries,
                          category=category, use_assignment=False, progress=progress, wait=None)
    skip = set() if retry_unparsed else unparsed_pairs(project, annotator)
    out: list[tuple[str, str]] = []
    for pair in queue.open_pairs():
        if pair in skip:
            continue
        out.append(pair)
        if limit is not None and len(out) >= limit:
            break
    return out


def dry_plan(project: Project, annotator: str, *, runs: list[str] | None = None, depth: int = 10,
             queries: list[str] | None = None, category: str | None = None,
             limit: int | None = None, retry_unparsed: bool = False,
             progress: Callable[..., None] | None = None,
             order: str = "depth") -> tuple[tuple[str, str] | None, int]:
    """What :func:`plan_pairs` would give, told without listing it: its first pair (None when
    there is none) and its length (``llm-judge --dry-run``).

    The pool is counted by two grouped selects (:meth:`JudgingQueue.count_totals`: its pairs
    less those the model has graded, less those whose answer it could not be read from),
    instead of being walked query by query and round by round of the depth order, which on a
    pool of thousands of queries reloads each query's pool in every round."""
    from ragjudge.services.scoring.settled import judging_queue

    queue = judging_queue(project, annotator, order=order, runs=runs, depth=depth, queries=queries,
                          category=category, use_assignment=False, progress=progress, wait=None)
    skip = set() if retry_unparsed else unparsed_pairs(project, annotator)
    first = next((pair for pair in queue.open_pairs() if pair not in skip), None)
    if first is None:
        return None, 0
    totals = queue.count_totals()
    count = totals["pairs"] - totals["handled"] - sum(_still_open(queue, q, c) for q, c in skip)
    return first, count if limit is None else min(count, limit)


def _still_open(queue: Any, query_id: str, chunk_id: str) -> bool:
    """Whether the pair is in the queue's pool and not yet graded (or skipped) by its annotator."""
    if query_id not in queue.query_ids:
        return False
    pool = queue.pool(query_id)
    at = pool.index(chunk_id)
    return at is not None and (pool.states[at] is None or not pool.states[at].handled)


class _Recorder:
    """Writes each answer as it arrives, one transaction each; registers the LLM annotator
    (kind ``llm``) with the first write, so that a run stopped before any answer leaves the
    project as it was."""

    def __init__(self, project: Project, annotator: str, model: str, access: Access) -> None:
        self.project = project
        self.annotator = annotator
        self.model = model
        self.access = access
        self.registered = False

    def register(self) -> None:
        if not self.registered:
            from ragjudge.services.access import roster

            found = roster.member(self.project, self.annotator)
            if found is None or found.kind != "llm":
                roster.add(self.project, self.annotator, kind="llm", reinstate=False,
                           access=self.access)
            self.registered = True

    def record(self, query_id: str, chunk_id: str, digest: str, answer: Answer,
               grade: int | None) -> str:
        """Store the call (and the grade as a label event); returns the outcome."""
        from ragjudge.services.events.state import newest_event
        from ragjudge.store.schema import Label, LlmCall, utcnow

        self.register()

        def work(session: Session) -> str:
            outcome = "failed" if answer.error else ("unparsed" if grade is None else "graded")
            label_id = None
            if outcome == "graded":
                current = newest_event(session, self.annotator, query_id, chunk_id)
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
                      annotator: str, access: Access, template: str = DEFAULT_TEMPLATE,
                      progress: ProgressFn | None = None, http: Any = None) -> Summary:
    """Grade ``pairs`` with the model, ``settings.concurrency`` requests at a time, committing
    each answer as it arrives. Raises :class:`StopJudging` (after keeping what came in) when
    the key is refused or the server cannot be reached. An LLM annotator joins the roster:
    only who may lead (``access``) starts one."""
    import httpx

    access.require_lead("grade the pool with an LLM annotator (it joins the roster)")
    summary = Summary(pairs=len(pairs))
    started = time.perf_counter()
    fixed = prompt_values(project)
    scale = project.scale
    recorder = _Recorder(project, annotator, settings.model, access)
    limits = asyncio.Semaphore(max(1, settings.concurrency))
    own = http is None
    if own:
        http = httpx.AsyncClient(timeout=settings.timeout, trust_env=False,
                                 limits=httpx.Limits(max_connections=max(1, settings.concurrency)))
    client = Client(settings, http)

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
          annotator: str, access: Access, template: str = DEFAULT_TEMPLATE,
          progress: ProgressFn | None = None) -> Summary:
    """:func:`judge_async` from synchronous code."""
    return asyncio.run(judge_async(project, pairs, settings, annotator=annotator, access=access,
                                   template=template, progress=progress))


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


def export_audit(project: Project, dest: Any, *, access: Access, fmt: str = "jsonl",
                 raw: bool = False) -> int:
    """Write every LLM call (``audit_rows``) as JSONL or CSV; text fields are made visible on a
    terminal, as every export's are, and in CSV a text cell that would start a spreadsheet
    formula (a model's answer ``=1+1``) gets a ``'`` before it unless ``raw``. The calls carry
    the models' grades of every pair: for who sees every grade."""
    access.require_sees_all("export the LLM annotators' calls (their grades of every pair)")
    from ragjudge.formats import visible_fields, is_terminal
    from ragjudge.formats.csvfile import write_csv
    from ragjudge.formats.jsonl import write_jsonl

    if fmt not in ("jsonl", "csv"):
        raise UsageError(f"--format {fmt}: the LLM audit is written as jsonl or csv.")
    rows: Iterable[dict[str, Any]] = audit_rows(project)
    if is_terminal(dest):
        rows = [visible_fields(row, fmt == "jsonl") for row in rows]
    if fmt == "csv":
        return write_csv(rows, dest, kind="llm-audit", fields=AUDIT_FIELDS, raw=raw)
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
