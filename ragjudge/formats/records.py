"""The records of ragjudge's file formats, and turning raw fields into them strictly.

Queries, chunks, run entries, qrels and answers are the shared :mod:`ragjudge.models`; the other
kinds of line have their own records here (facets, nuggets and labels carry optional
annotator-specific parts: a coverage link, a support judgment, a time).

Field names are a contract users script against (the README's "Formats" section):

=========  ==================================================================================
kind       JSONL object / CSV header fields (``?`` optional)
=========  ==================================================================================
queries    ``id, text, description?, category?, meta?``
chunks     ``id, text, doc_id?, meta?``
run        ``query_id, chunk_id, score?, rank?`` or ``query_id, chunks`` (ids in rank order)
qrels      ``query_id, chunk_id, grade, annotator?, note?``
labels     ``query_id, chunk_id, grade, annotator?, note?, created_at?``
facets     ``query_id, facet`` (+ ``chunk_id, annotator?, covered?`` for a coverage link)
nuggets    ``query_id, nugget, importance?, kind?, weight?``
           (+ ``chunk_id, annotator?, support`` for a support judgment)
entities   ``query_id, entity``
answers    ``query_id, run, text, cited`` or ``query_id, run, sentences`` (each ``text,
           citations``)
answer-    ``query_id, run, nugget, support, annotator?`` (how fully the answer supports a
labels     nugget) or ``query_id, run, sentence, chunk_id, support, annotator?`` (how fully a
           cited chunk supports sentence ``sentence``, counted from 0)
=========  ==================================================================================

**Unknown fields are refused** (with the field named), in every kind: a misspelt optional field
(``"socre"``) would otherwise be dropped without a word and the import would silently mean
something else. Extra data about a query or chunk belongs under ``meta``.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ragjudge.errors import InputError
from ragjudge.models import Answer, Chunk, Judgment, Query, RunEntry

KINDS = ("queries", "chunks", "run", "qrels", "labels", "facets", "nuggets", "entities", "answers",
         "answer-labels")


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RankedList(_Record):
    """A run line giving a query's chunks in rank order (``{"query_id", "chunks": [...]}``)."""

    query_id: str = Field(min_length=1)
    chunks: list[str]


class FacetRecord(_Record):
    """Defines facet ``facet`` of a query; with ``chunk_id`` also says that chunk covers it."""

    query_id: str = Field(min_length=1)
    facet: str = Field(min_length=1)
    chunk_id: str | None = Field(default=None, min_length=1)
    annotator: str | None = Field(default=None, min_length=1)
    covered: bool = True


class NuggetRecord(_Record):
    """Defines a nugget (or claim) of a query; with ``chunk_id`` also how a chunk supports it."""

    query_id: str = Field(min_length=1)
    nugget: str = Field(min_length=1)
    importance: Literal["vital", "okay"] = "okay"
    kind: Literal["nugget", "claim"] = "nugget"
    weight: float = Field(default=1.0, gt=0)
    chunk_id: str | None = Field(default=None, min_length=1)
    annotator: str | None = Field(default=None, min_length=1)
    support: Literal["full", "partial", "none"] | None = None

    @model_validator(mode="after")
    def _support_needs_chunk(self) -> "NuggetRecord":
        if self.support is not None and self.chunk_id is None:
            raise ValueError("'support' needs a 'chunk_id' (the chunk that supports the nugget)")
        if self.chunk_id is not None and self.support is None:
            raise ValueError("a 'chunk_id' needs a 'support' (full, partial or none)")
        return self


class EntityRecord(_Record):
    query_id: str = Field(min_length=1)
    entity: str = Field(min_length=1)


class LabelRecord(_Record):
    """A label line: a judgment plus, when exported from a project, the time it was made."""

    query_id: str = Field(min_length=1)
    chunk_id: str = Field(min_length=1)
    grade: int
    annotator: str | None = Field(default=None, min_length=1)
    note: str | None = None
    created_at: datetime | None = None


class AnswerLabelRecord(_Record):
    """A judgment of a run's generated answer: how fully the whole answer supports a nugget of
    the query (``nugget``), or how fully a chunk cited by sentence ``sentence`` (from 0)
    supports that sentence (``sentence`` and ``chunk_id``)."""

    query_id: str = Field(min_length=1)
    run: str = Field(min_length=1)
    nugget: str | None = Field(default=None, min_length=1)
    sentence: int | None = Field(default=None, ge=0)
    chunk_id: str | None = Field(default=None, min_length=1)
    support: Literal["full", "partial", "none"]
    annotator: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_target(self) -> "AnswerLabelRecord":
        cites = self.sentence is not None or self.chunk_id is not None
        if self.nugget is not None and cites:
            raise ValueError("a line judges either a 'nugget' or a citation ('sentence' and "
                             "'chunk_id'), not both")
        if self.nugget is None and not cites:
            raise ValueError("say what the support is of: a 'nugget', or a citation "
                             "('sentence' and 'chunk_id')")
        if cites and (self.sentence is None or self.chunk_id is None):
            raise ValueError("a citation judgment needs both 'sentence' (from 0) and 'chunk_id'")
        return self


MODELS: dict[str, type[BaseModel]] = {
    "queries": Query,
    "chunks": Chunk,
    "run": RunEntry,
    "qrels": Judgment,
    "labels": LabelRecord,
    "facets": FacetRecord,
    "nuggets": NuggetRecord,
    "entities": EntityRecord,
    "answers": Answer,
    "answer-labels": AnswerLabelRecord,
}

FIELDS: dict[str, tuple[str, ...]] = {kind: tuple(model.model_fields) for kind, model in MODELS.items()}
"""Field names per kind, in the order writers put them."""

REQUIRED: dict[str, tuple[str, ...]] = {
    kind: tuple(name for name, info in model.model_fields.items() if info.is_required())
    for kind, model in MODELS.items()
}

_JSON_TYPES = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
               dict: "an object", list: "a list", type(None): "null"}


def json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def build(kind: str, data: dict[str, Any], *, file: str, line: int, strict: bool = True,
          model: type[BaseModel] | None = None) -> BaseModel:
    """Validate ``data`` as a record of ``kind``; any problem is an :class:`InputError` naming
    the file, line and field. ``strict`` refuses type coercion (JSON); CSV passes ``False``."""
    model = model or MODELS[kind]
    if "created_at" in data and isinstance(data["created_at"], str):
        try:
            data = {**data, "created_at": datetime.fromisoformat(data["created_at"])}
        except ValueError:
            raise InputError(f"{short(data['created_at'])} is not an ISO 8601 time such as "
                             "2026-01-31T12:00:00.", file=file, line=line, field="created_at") from None
    try:
        record = model.model_validate(data, strict=strict)
    except ValidationError as exc:
        raise _input_error(exc, kind, file=file, line=line) from None
    meta = getattr(record, "meta", None)
    if meta:
        try:
            json.dumps(meta, allow_nan=False)
        except ValueError:
            raise InputError("meta holds NaN or an infinity, which JSON cannot store.",
                             file=file, line=line, field="meta") from None
    score = getattr(record, "score", None)
    if score is not None and not math.isfinite(score):
        raise InputError(f"the score is {score}; scores must be finite numbers.",
                         file=file, line=line, field="score")
    weight = getattr(record, "weight", None)
    if isinstance(weight, float) and not math.isfinite(weight):
        raise InputError(f"the weight is {weight}; weights must be finite numbers.",
                         file=file, line=line, field="weight")
    return record


def _input_error(exc: ValidationError, kind: str, *, file: str, line: int) -> InputError:
    error = exc.errors(include_url=False)[0]
    loc = [str(part) for part in error.get("loc", ())]
    field = loc[0] if loc else None
    value = error.get("input")
    kind_of_error = error.get("type", "")
    if kind_of_error == "missing":
        message = (f"the required field is missing (a {kind} line needs "
                   f"{', '.join(repr(f) for f in REQUIRED[kind])}).")
        unknown = [str(e["loc"][0]) for e in exc.errors(include_url=False)
                   if e.get("type") == "extra_forbidden" and len(e.get("loc", ())) == 1]
        if len(unknown) == 1:  # e.g. "socre" for "score": name the typo, not only the missing field
            message += f" The line has the unknown field {unknown[0]!r}; is it a misspelling?"
        elif unknown:
            message += (f" The line has the unknown fields {', '.join(repr(u) for u in unknown)}; "
                        f"is this a {kind} file?")
    elif kind_of_error == "extra_forbidden":
        hint = " Put extra data under \"meta\"." if kind in ("queries", "chunks") else ""
        message = (f"unknown field (a {kind} line has the fields "
                   f"{', '.join(FIELDS[kind])}).{hint}")
    elif kind_of_error in ("int_type", "int_parsing", "int_from_float"):
        message = f"{short(value)} is not an integer."
    elif kind_of_error in ("float_type", "float_parsing"):
        message = f"{short(value)} is not a number."
    elif kind_of_error in ("string_type",):
        message = f"{short(value)} is {json_type(value)}, not a string."
    elif kind_of_error in ("bool_type", "bool_parsing"):
        message = f"{short(value)} is not true or false."
    elif kind_of_error == "string_too_short":
        message = "the field is empty."
    elif kind_of_error in ("model_type", "model_attributes_type", "dict_type"):
        message = f"expected an object, got {json_type(value)}."
    elif kind_of_error == "list_type":
        message = f"expected a list, got {json_type(value)}."
    elif kind_of_error == "value_error":
        message = str(error.get("msg", "")).removeprefix("Value error, ") + "."
        field = field if field else None
    else:
        message = f"{error.get('msg', 'invalid value')} (got {short(value)})."
    if len(loc) > 1:
        field = loc[0] + "".join(f"[{part}]" if part.isdigit() else f".{part}" for part in loc[1:])
    return InputError(message, file=file, line=line, field=field)


class Duplicates:
    """Finds lines that repeat an earlier one of the same file.

    A repeat that says the same thing is dropped (``seen`` returns True); one that contradicts
    the earlier line (another grade for the same pair, another text for the same id, the same
    chunk twice in one query of a run) is an :class:`InputError` naming both lines. Memory grows
    with the number of distinct keys, so the importer turns this off for runs (the database finds
    their duplicates instead).
    """

    def __init__(self, kind: str, file: str) -> None:
        self.kind = kind
        self.file = file
        self._seen: dict[Any, tuple[int, Any]] = {}
        self._defs: dict[Any, tuple[int, dict[str, Any]]] = {}

    def seen(self, record: BaseModel, line: int) -> bool:
        kind = self.kind
        if kind == "run":
            return self._pair_once(record, line)  # type: ignore[arg-type]
        if kind in ("queries", "chunks"):
            meta = json.dumps(record.meta, sort_keys=True, default=str)  # type: ignore[attr-defined]
            value = hash(tuple(v for k, v in record if k != "meta") + (meta,))
            return self._same(record.id, value, line, "id", f"{kind[:-1]} '{record.id}'")  # type: ignore[attr-defined]
        if kind in ("qrels", "labels"):
            key = (record.query_id, record.chunk_id, record.annotator)  # type: ignore[attr-defined]
            return self._same(key, record.grade, line, "grade",  # type: ignore[attr-defined]
                              f"the pair {record.query_id} / {record.chunk_id}")  # type: ignore[attr-defined]
        if kind == "facets":
            r: Any = record
            if r.chunk_id is None:
                return self._same((r.query_id, r.facet), None, line, "facet", "")
            self._seen.setdefault((r.query_id, r.facet), (line, None))
            return self._same((r.query_id, r.facet, r.chunk_id, r.annotator), r.covered, line,
                              "covered", f"facet '{r.facet}' and chunk {r.chunk_id}")
        if kind == "nuggets":
            r = record
            given = {k: getattr(r, k) for k in ("importance", "kind", "weight") if k in r.model_fields_set}
            key = (r.query_id, r.nugget)
            if key in self._defs:
                first, earlier = self._defs[key]
                for name, value in given.items():
                    if name in earlier and earlier[name] != value:
                        raise InputError(
                            f"{short(value)} contradicts line {first}, which gave this nugget "
                            f"{name} {short(earlier[name])}.", file=self.file, line=line, field=name)
                earlier.update({k: v for k, v in given.items() if k not in earlier})
            else:
                self._defs[key] = (line, dict(given))
            if r.chunk_id is None:
                return self._same(key, None, line, "nugget", "")
            return self._same((r.query_id, r.nugget, r.chunk_id, r.annotator), r.support, line,
                              "support", f"the nugget and chunk {r.chunk_id}")
        if kind == "entities":
            return self._same((record.query_id, record.entity), None, line, "entity", "")  # type: ignore[attr-defined]
        if kind == "answers":
            r = record
            sentences = None if r.sentences is None else tuple(
                (s.text, tuple(s.citations)) for s in r.sentences)
            return self._same((r.query_id, r.run), (r.text, tuple(r.cited), sentences), line,
                              "text" if r.sentences is None else "sentences",
                              f"the answer of run '{r.run}' to query {r.query_id}")
        if kind == "answer-labels":
            r = record
            target = r.nugget if r.nugget is not None else (r.sentence, r.chunk_id)
            what = (f"nugget '{r.nugget}'" if r.nugget is not None
                    else f"sentence {r.sentence} and chunk {r.chunk_id}")
            return self._same((r.query_id, r.run, r.nugget is None, target, r.annotator),
                              r.support, line, "support",
                              f"the answer of run '{r.run}' to query {r.query_id}, {what}")
        return False

    def _same(self, key: Any, value: Any, line: int, field: str, what: str) -> bool:
        earlier = self._seen.get(key)
        if earlier is None:
            self._seen[key] = (line, value)
            return False
        if earlier[1] != value:
            raise InputError(
                f"this line contradicts line {earlier[0]}: both are about {what}, with different "
                f"{field}s.", file=self.file, line=line, field=field)
        return True

    def _pair_once(self, record: RunEntry, line: int) -> bool:
        key = (record.query_id, record.chunk_id)
        earlier = self._seen.get(key)
        if earlier is not None:
            raise InputError(
                f"chunk '{record.chunk_id}' appears twice for query '{record.query_id}' (first on "
                f"line {earlier[0]}); a run lists each chunk of a query once.",
                file=self.file, line=line, field="chunk_id")
        self._seen[key] = (line, None)
        return False
