"""The JSON API, ``/api/v1``: what the pages use, and what scripts may use the same way.

A script authenticates with its personal token (``Authorization: Bearer TOKEN``); a page with
its session cookie. Every write carries an ``Idempotency-Key`` (a UUID per action): a retry of
the same action gets the first answer again and changes nothing (:mod:`ragjudge.web.idempotency`).
A label carries ``seen``, the id of the annotator's newest label event for the pair that the
page showed (null: none): when another tab or process recorded one since, the answer is 409 with
that event (``current``), and nothing is written.

Refusals: 401 (no session, an unknown or replaced token), 403 (a lead's route), 404 (a pair
outside the annotator's queue, an unknown answer), 409 (a conflict), 413 (a body too large), 422
(bad input: one paragraph naming the field), 429 (rate limit, with ``Retry-After``), 503 (the
database is not reachable). Each is ``{"error": CODE, "message": PARAGRAPH}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.security import HTTPBearer
from fastapi import Path as InPath
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from ragjudge.errors import ProjectError, RagjudgeError
from ragjudge.safetext import mask_secrets
from ragjudge.web import backend
from ragjudge.web.backend import answers, facets, labels, leads, pairs
from ragjudge.web.context import Refusal
from ragjudge.web.identity import Identity, context, identify_now, lead_now, present
from ragjudge.web.idempotency import KEY, KeyReused, Replays

BEARER = HTTPBearer(auto_error=False, description="Your personal token (a page sends its session "
                                                  "cookie instead).")


async def credentials(request: Request, _token: Annotated[Any, Depends(BEARER)]) -> None:
    """Before anything else (the body's checks among it): 401 for a request without a token or
    a session this server knows. Nothing is read from the project here; every route then asks
    the roster on its worker thread (:func:`identify_now`), so that a request takes one trip to
    the thread pool."""
    if not request.headers.get("authorization"):
        present(request)


router = APIRouter(prefix="/api/v1", dependencies=[Depends(credentials)])

ID_MAX = 4096


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("holds a NUL character, which no id or text of a project can")
    return value


Id = Annotated[str, Field(min_length=1, max_length=ID_MAX), AfterValidator(_no_nul)]
Text = Annotated[str, Field(max_length=20_000), AfterValidator(_no_nul)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LabelIn(Strict):
    """A grade (or a skip) of one pair of the annotator's queue."""

    query_id: Id
    chunk_id: Id
    grade: StrictInt | None = Field(None, ge=-1_000_000, le=1_000_000, description="A grade on the project's scale (or null with skip).")
    skip: StrictBool = Field(False, description="Pass over the pair (it comes back when the rest is done).")
    seen: StrictInt | None = Field(None, ge=1, description="The id of your newest label event of this pair that you saw (null: none); 409 when it is not the newest any more.")
    duration_ms: StrictInt | None = Field(None, ge=0, le=86_400_000)
    advance: StrictBool = Field(True, description="Answer with the next pair still to judge.")


class UndoIn(Strict):
    expect: StrictInt | None = Field(None, ge=1, description="The id of the label event to undo (409 when your newest label is another one); null: the newest.")


class MarkIn(Strict):
    query_id: Id
    chunk_id: Id
    kind: Literal["flag", "comment"]
    text: Text | None = None
    clear: StrictBool = False


class FacetIn(Strict):
    query_id: Id
    chunk_id: Id
    name: Annotated[str, Field(min_length=1, max_length=500), AfterValidator(_no_nul)]


class FacetLinkIn(Strict):
    query_id: Id
    chunk_id: Id
    covered: StrictBool


class NuggetIn(Strict):
    query_id: Id
    chunk_id: Id
    text: Annotated[str, Field(min_length=1, max_length=5000), AfterValidator(_no_nul)]
    importance: Literal["vital", "okay"] = "okay"


class NuggetSupportIn(Strict):
    query_id: Id
    chunk_id: Id
    support: Literal["full", "partial", "none"]


class JudgmentIn(Strict):
    """How fully the answer supports a nugget, or how fully a cited chunk supports a sentence."""

    support: Literal["full", "partial", "none"]
    nugget_id: StrictInt | None = Field(None, ge=1)
    sentence: StrictInt | None = Field(None, ge=0, le=1_000_000)
    chunk_id: Id | None = None
    duration_ms: StrictInt | None = Field(None, ge=0, le=86_400_000)


IdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key", description="A UUID per action (8 to 100 letters, digits, - or _); a repeat gets the first answer.")]


# -- answering -------------------------------------------------------------------------------


def _refusal_body(status: int, reason: str, message: str, **extra: Any) -> tuple[int, dict[str, Any]]:
    return status, {"error": reason, "message": message, **extra}


def _outcome(action: Callable[[], Any], created: int = 200) -> tuple[int, Any]:
    """Run ``action``; its result, or the refusal it ran into, as (status, body)."""
    try:
        return created, action()
    except backend.LabelConflict as exc:
        return _refusal_body(409, "conflict", str(exc), current=exc.current)
    except backend.NotFound as exc:
        return _refusal_body(404, "not-found", str(exc))
    except Refusal as exc:
        return _refusal_body(exc.status, exc.reason, exc.message, **exc.extra)
    except ProjectError as exc:
        return _refusal_body(503, "error", mask_secrets(str(exc)))
    except RagjudgeError as exc:
        return _refusal_body(422, "invalid", mask_secrets(str(exc)))


def _once(request: Request, key: str | None, body: BaseModel | None,
          action: Callable[[Identity], Any], created: int = 200) -> Response:
    """Run a write once per ``Idempotency-Key`` (see :mod:`ragjudge.web.idempotency`); the
    request's identity first (a retry after a logout is answered 401, not replayed)."""
    ident = identify_now(request)
    if key is None or not KEY.match(key):
        shown = "missing" if key is None else f"{key[:40]!r} is not one"
        raise Refusal(422, "invalid", f"The header 'Idempotency-Key' is {shown}: every write "
                      "carries one, 8 to 100 letters, digits, '-' or '_' (a new UUID per action, "
                      "the same one for each retry of it). Nothing was changed.")
    text = b"" if body is None else body.model_dump_json().encode()
    fingerprint = Replays.fingerprint(request.method, request.url.path, text)

    def run() -> tuple[int, bytes]:
        status, payload = _outcome(lambda: action(ident), created)
        return status, _encoded(payload)

    try:
        status, encoded, replay = context(request).replays.run(ident.scope, key, fingerprint, run)
    except KeyReused:
        raise Refusal(422, "invalid", "This Idempotency-Key came with a different request "
                      "before: make a new key for each action. Nothing was changed.") from None
    headers = {"Idempotent-Replayed": "true"} if replay else {}
    return Response(encoded, status_code=status, headers=headers, media_type="application/json")


def _read(action: Callable[[], Any]) -> Any:
    status, body = _outcome(action)
    if status != 200:
        raise Refusal(status, body["error"], body["message"],
                      extra={k: v for k, v in body.items() if k not in ("error", "message")})
    return body


def _encoded(data: Any) -> bytes:
    """JSON as Starlette's JSONResponse writes it."""
    return json.dumps(data, ensure_ascii=False, allow_nan=False, indent=None,
                      separators=(",", ":")).encode("utf-8")


def _json(data: Any) -> JSONResponse:
    """The answer as JSON as it is (the data is JSON already: nothing to convert)."""
    return JSONResponse(data)


# -- who and what ----------------------------------------------------------------------------


@router.get("/me", summary="Who you are, the project and its scale")
def me(request: Request) -> Response:
    ident = identify_now(request)
    ctx = context(request)
    return _json({"name": ident.name, "role": ident.who.role, "lead": ident.who.is_lead,
            "project": ctx.title, "scale": backend.scale_json(ctx.project)})


# -- pairs -----------------------------------------------------------------------------------


@router.get("/pairs/next", summary="The next pairs still to judge")
async def next_pairs(request: Request,
                     n: Annotated[int, Query(ge=1, le=pairs.NEXT_LIMIT)] = 1,
                     after_query_id: Annotated[Id | None, Query()] = None,
                     after_chunk_id: Annotated[Id | None, Query()] = None) -> Response:
    """From where judging resumes, or after the pair (after_query_id, after_chunk_id) in queue
    order; nothing moves. An empty list: every pair of your queue is judged."""
    ctx = context(request)

    def work() -> Response:
        ident = identify_now(request)
        if (after_query_id is None) != (after_chunk_id is None):
            raise Refusal(422, "invalid", "Give both after_query_id and after_chunk_id, or neither. "
                          "Nothing was changed.")
        after = None if after_query_id is None or after_chunk_id is None else (after_query_id, after_chunk_id)
        return _json(_read(lambda: pairs.next_pairs(ctx.project, ctx.queues, ident.who, n, after=after)))

    if n == 1:
        return await run_in_threadpool(work)
    async with ctx.batches:  # several pairs: in turns (see BATCHES_AT_ONCE)
        return await run_in_threadpool(work)


@router.get("/pairs/at", summary="One pair of your queue, or its neighbour")
def pair_at(request: Request, query_id: Annotated[Id, Query()],
            chunk_id: Annotated[Id, Query()], step: Annotated[int, Query(ge=-1, le=1)] = 0) -> Response:
    """The pair (step 0) or the one before (-1) or after (+1) it in queue order, judged or not
    (null past either end). 404 for a pair outside your queue."""
    ident = identify_now(request)
    ctx = context(request)
    return _json({"pair": _read(lambda: pairs.pair_at(ctx.project, ctx.queues, ident.who, query_id,
                                                       chunk_id, step))})


# -- labels ----------------------------------------------------------------------------------


@router.post("/labels", status_code=201, summary="Record a grade or a skip")
def post_label(request: Request, body: LabelIn,
               idempotency_key: IdempotencyKey = None) -> Response:
    """Committed before the answer comes; with advance, the answer holds the next pair."""
    ctx = context(request)
    return _once(request, idempotency_key, body, lambda ident: labels.post_label(
        ctx.project, ctx.queues, ident.who, body.query_id, body.chunk_id, grade=body.grade,
        skip=body.skip, seen=body.seen, duration_ms=body.duration_ms, advance=body.advance), 201)


@router.post("/labels/undo", summary="Undo your newest label")
def undo_label(request: Request, body: UndoIn,
               idempotency_key: IdempotencyKey = None) -> Response:
    """A new event brings the pair's state from before back; {"undone": null} when nothing is
    left to undo."""
    ctx = context(request)
    return _once(request, idempotency_key, body, lambda ident: {
        "undone": labels.undo_label(ctx.project, ctx.queues, ident.who, body.expect)})


@router.get("/labels/history", summary="Your own labelled pairs, newest first")
def label_history(request: Request, limit: Annotated[int, Query(ge=1, le=500)] = 50,
                  offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0) -> Response:
    ident = identify_now(request)
    ctx = context(request)
    return _json({"history": labels.history(ctx.project, ident.who, limit=limit, offset=offset)})


@router.get("/news", summary="Your flags and comments a lead answered since you last labelled")
def news(request: Request) -> Response:
    ident = identify_now(request)
    ctx = context(request)
    return _json({"news": labels.news(ctx.project, ident.who)})


@router.post("/marks", summary="Flag (with a note) or unflag a pair; set or clear a comment")
def post_mark(request: Request, body: MarkIn,
              idempotency_key: IdempotencyKey = None) -> Response:
    ctx = context(request)
    return _once(request, idempotency_key, body, lambda ident: {"marks": facets.set_mark(
        ctx.project, ctx.queues, ident.who, body.query_id, body.chunk_id, kind=body.kind,
        text=body.text, clear=body.clear)})


@router.post("/facets", summary="Add a facet to the pair's query")
def post_facet(request: Request, body: FacetIn,
               idempotency_key: IdempotencyKey = None) -> Response:
    ctx = context(request)
    return _once(request, idempotency_key, body, lambda ident: facets.add_facet(
        ctx.project, ctx.queues, ident.who, body.query_id, body.chunk_id, body.name))


@router.post("/facets/{facet_id}/link", summary="Say whether the chunk covers a facet")
def post_facet_link(request: Request, facet_id: Annotated[int, InPath(ge=1, le=2**62)],
                    body: FacetLinkIn,
                    idempotency_key: IdempotencyKey = None) -> Response:
    ctx = context(request)
    return _once(request, idempotency_key, body, lambda ident: facets.link_facet(
        ctx.project, ctx.queues, ident.who, body.query_id, body.chunk_id, facet_id, body.covered))


@router.post("/nuggets", summary="Add a nugget to the pair's query")
def post_nugget(request: Request, body: NuggetIn,
                idempotency_key: IdempotencyKey = None) -> Response:
    ctx = context(request)
    return _once(request, idempotency_key, body, lambda ident: facets.add_nugget(
        ctx.project, ctx.queues, ident.who, body.query_id, body.chunk_id, body.text, body.importance))


@router.post("/nuggets/{nugget_id}/support", summary="How fully the chunk supports a nugget")
def post_nugget_support(request: Request, nugget_id: Annotated[int, InPath(ge=1, le=2**62)],
                        body: NuggetSupportIn,
                        idempotency_key: IdempotencyKey = None) -> Response:
    ctx = context(request)
    return _once(request, idempotency_key, body, lambda ident: facets.support_nugget(
        ctx.project, ctx.queues, ident.who, body.query_id, body.chunk_id, nugget_id, body.support))


# -- answers ---------------------------------------------------------------------------------


@router.get("/answers/next", summary="The first answer with something left to judge")
def next_answer(request: Request) -> Response:
    ident = identify_now(request)
    ctx = context(request)
    return _json({"answer": _read(lambda: answers.answer_at(ctx.project, ctx.queues, ident.who))})


@router.get("/answers/at", summary="An answer of your queue by position or id")
def answer_at(request: Request, position: Annotated[int | None, Query(ge=0, le=10_000_000)] = None,
              answer_id: Annotated[int | None, Query(ge=1, le=2**62)] = None) -> Response:
    ident = identify_now(request)
    if (position is None) == (answer_id is None):
        raise Refusal(422, "invalid", "Give either position or answer_id. Nothing was changed.")
    ctx = context(request)
    return _json({"answer": _read(lambda: answers.answer_at(ctx.project, ctx.queues, ident.who,
                                                             position=position, answer_id=answer_id))})


@router.post("/answers/{answer_id}/judgments", status_code=201, summary="Judge a nugget or citation of an answer")
def post_judgment(request: Request, answer_id: Annotated[int, InPath(ge=1, le=2**62)],
                  body: JudgmentIn,
                  idempotency_key: IdempotencyKey = None) -> Response:
    ctx = context(request)
    return _once(request, idempotency_key, body, lambda ident: answers.judge_answer(
        ctx.project, ctx.queues, ident.who, answer_id, support=body.support,
        nugget_id=body.nugget_id, sentence=body.sentence, chunk_id=body.chunk_id,
        duration_ms=body.duration_ms), 201)


@router.post("/answers/undo", summary="Undo your newest judgment of an answer")
def undo_judgment(request: Request, idempotency_key: IdempotencyKey = None) -> Response:
    ctx = context(request)
    return _once(request, idempotency_key, None, lambda ident: {
        "undone": answers.undo_answer_judgment(ctx.project, ctx.queues, ident.who)})


# -- for leads -------------------------------------------------------------------------------


@router.get("/eval", summary="Every run against the gold qrels (leads)")
def evaluation(request: Request, rule: Annotated[str | None, Query(max_length=300)] = None,
               measure: Annotated[list[str] | None, Query(max_length=50)] = None,
               per_query: bool = False,
               averaging: Literal["judged", "run"] = "judged",
               by: Annotated[str | None, Query(max_length=300)] = None) -> Any:
    """The JSON of ragjudge eval --format json for the same options."""
    ident = lead_now(request)
    ctx = context(request)
    return _json(_read(lambda: leads.evaluation_json(ctx.project, ident.who, rule=rule, measures=measure,
                                                     per_query=per_query, averaging=averaging, by=by)))


@router.get("/qrels", summary="The gold qrels (leads)", response_class=PlainTextResponse)
def qrels(request: Request, rule: Annotated[str | None, Query(max_length=300)] = None,
          format: Literal["trec", "jsonl", "csv"] = "trec") -> Response:
    """As ragjudge export qrels writes them."""
    ident = lead_now(request)
    ctx = context(request)
    text = _read(lambda: leads.qrels_text(ctx.project, ident.who, rule=rule, fmt=format))
    media = {"trec": "text/plain", "jsonl": "application/x-ndjson", "csv": "text/csv"}[format]
    return Response(text, media_type=f"{media}; charset=utf-8")


@router.get("/annotators", summary="The roster (leads)")
def annotators(request: Request) -> Response:
    lead_now(request)
    ctx = context(request)
    return _json({"annotators": backend.members_json(ctx.project)})

