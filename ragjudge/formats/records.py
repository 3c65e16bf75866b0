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
labels     ``query_id, chunk_id, grade, annotator?, note?, created_at?, flagged?, flag_note?,
           comment?`` (``grade`` left out on a pair flagged or commented on without a grade)
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

**Text is checked alike for every kind and format** (:func:`check_text`): no field, ``meta``
included, may hold a NUL character (PostgreSQL cannot store one and SQLite would, so a project
would hold different things on the two backends), an id or name (:data:`NAME_FIELDS`) of
only spaces names nothing anyone can see or type, and an id (:data:`ID_FIELDS`) holding a
control character (C0, DEL or C1: ESC, BEL, a lone CR, a tab...) would be an id a terminal
moves its cursor for, or that no one can type, and that TREC files cannot carry.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ragjudge.errors import InputError, UsageError, check_typed, has_control, text_problem  # noqa: F401 - has_control, check_typed: imported from here
from ragjudge.models import Answer, Chunk, Judgment, Query, RunEntry
from ragjudge.numeric import grade_problem, parse_integer, rank_problem
from ragjudge.safetext import quote, visible

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
    weight: float | None = Field(default=None, gt=0)
    chunk_id: str | None = Field(default=None, min_length=1)
    annotator: str | None = Field(default=None, min_length=1)
    support: Literal["full", "partial", "none"] | None = None

    @model_validator(mode="after")
    def _support_needs_chunk(self) -> NuggetRecord:
        if self.support is not None and self.chunk_id is None:
            raise ValueError("'support' needs a 'chunk_id' (the chunk that supports the nugget)")
        if self.chunk_id is not None and self.support is None:
            raise ValueError("a 'chunk_id' needs a 'support' (full, partial or none)")
        return self


class EntityRecord(_Record):
    query_id: str = Field(min_length=1)
    entity: str = Field(min_length=1)


class LabelRecord(_Record):
    """A label line: a judgment plus, when exported from a project, the time it was made and
    the annotator's flag (with its note) and comment on the pair.

    ``note`` is the grade's note. ``flagged`` true sets the annotator's flag (``flag_note`` its
    note), false takes it off; left out, the flag is left as it is; likewise a ``comment``. A
    pair flagged or commented on without a grade has no ``grade``.
    """

    query_id: str = Field(min_length=1)
    chunk_id: str = Field(min_length=1)
    grade: int | None = None
    annotator: str | None = Field(default=None, min_length=1)
    note: str | None = None
    created_at: datetime | None = None
    flagged: bool | None = None
    flag_note: str | None = Field(default=None, min_length=1)
    comment: str | None = Field(default=None, min_length=1)
    grade_name: str | None = None
    """The project's name of the grade, written by ``export labels`` for people to read; an
    import reads the grade and leaves the name (the importing project has its own)."""

    def problem(self) -> tuple[str, str] | None:
        """What is wrong with the line as a whole (field, message), beyond each field's type."""
        if self.flag_note is not None and self.flagged is not True:
            return "flag_note", "a 'flag_note' needs \"flagged\": true (it is the note of the flag)."
        if self.grade is None and not self.flagged and self.comment is None:
            return "grade", ("the line has no grade (a labels line needs one, unless the annotator "
                             "only flagged or commented on the pair: then \"flagged\": true or a "
                             "\"comment\").")
        return None


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
    def _one_target(self) -> AnswerLabelRecord:
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

NAME_FIELDS = frozenset({"id", "query_id", "chunk_id", "doc_id", "annotator", "run", "chunks",
                         "cited", "facet", "nugget", "entity"})
"""Fields that name or point at something: refused when they are only spaces."""

ID_FIELDS = frozenset({"id", "query_id", "chunk_id", "doc_id", "annotator", "run", "chunks", "cited",
                       "citations", "query-id", "corpus-id"})
"""Fields holding ids (of a query, a chunk, a document, an annotator, a run): refused when they
hold a control character."""

def check_text(fields: Any, *, file: str | None, line: int | None) -> None:
    """Refuse the first text of ``fields`` with a :func:`text_problem`, as an :class:`InputError`
    naming the file, the line (the line the NUL is on, for text spanning lines) and the field
    (``meta.source``, ``cited[2]`` for nested values). ``fields``: a record, or ``(name, value)``
    pairs; every importer's text passes here."""
    for field, value in fields:
        if isinstance(value, str):  # the common case, inline: this runs for every line read
            if "\x00" not in value and (field not in NAME_FIELDS or value.strip()) and (
                    field not in ID_FIELDS or value.isprintable()):
                continue
        elif (not value or not isinstance(value, (dict, list, tuple))
              or (isinstance(value, dict) and not _has_nul(value))):
            continue
        _check_value(field, value, field, file, line)


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any("\x00" in str(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_nul(v) for v in value)
    if isinstance(value, BaseModel):
        return _has_nul(value.__dict__)
    return False


def _check_value(field: str, value: Any, role: str, file: str | None, line: int | None) -> None:
    """``role``: the name of the field ``value`` is (or is an item of) in its record, which
    says whether it is a name (:data:`NAME_FIELDS`) or an id (:data:`ID_FIELDS`); "" for
    ``meta``'s keys and values."""
    if isinstance(value, str):
        problem = text_problem(value, name=role in NAME_FIELDS, ident=role in ID_FIELDS)
        if problem is not None:
            if line is not None and "\x00" in value:
                line += value.count("\n", 0, value.find("\x00"))
            raise InputError(f"the value {problem}", file=file, line=line, field=field)
    elif isinstance(value, dict):
        for key, item in value.items():
            path = f"{field}.{visible(key)}"
            _check_value(path, key, "", file, line)
            _check_value(path, item, "", file, line)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_value(f"{field}[{index}]", item, role, file, line)
    elif isinstance(value, BaseModel):  # a nested record, e.g. an answer's sentence
        for key, item in value.__dict__.items():
            _check_value(f"{field}.{key}", item, key, file, line)


_JSON_TYPES = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
               dict: "an object", list: "a list", type(None): "null"}


def json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def short(value: Any, limit: int = 60) -> str:
    """A value a message echoes: text quoted by :func:`ragjudge.safetext.quote` (an ESC shows
    as ``␛``, a no-break space as ``⟨U+00A0⟩``; never Python's ``'\\x1b'``), anything else
    as JSON; about ``limit`` characters at most."""
    if isinstance(value, str):
        return quote(value, limit)
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_STR, _NONE, _INT, _DICT = str, type(None), int, dict
_PLAIN: dict[str, tuple[type[BaseModel], dict[str, tuple[type, ...]], tuple[str, ...]]] = {
    "queries": (Query, {"id": (_STR,), "text": (_STR,), "description": (_STR, _NONE),
                        "category": (_STR, _NONE), "meta": (_DICT, _NONE)}, ("id", "text")),
    "chunks": (Chunk, {"id": (_STR,), "text": (_STR,), "doc_id": (_STR, _NONE),
                       "meta": (_DICT, _NONE)}, ("id", "text")),
    "qrels": (Judgment, {"query_id": (_STR,), "chunk_id": (_STR,), "grade": (_INT,),
                         "annotator": (_STR, _NONE), "note": (_STR, _NONE)},
              ("query_id", "chunk_id", "grade")),
}
_PLAIN["labels"] = (LabelRecord, _PLAIN["qrels"][1], _PLAIN["qrels"][2])


def plain_record(kind: str, data: dict[str, Any]) -> BaseModel | None:
    """The record of a JSON line whose fields are all plainly right, made without running the
    validation of :func:`build` (a tenth of its time); None when :func:`build` must decide.

    Plainly right: only the usual fields of ``kind`` (queries, chunks, qrels and labels without
    times, flags or comments), each of its exact JSON type (a grade an integer within the
    bounds of every grade, not ``true``), no NUL anywhere, no id or name empty or only spaces,
    a ``meta`` JSON can store. Anything else, valid or not, goes to :func:`build`, which words
    every refusal: the shortcut only ever accepts what :func:`build` accepts, unchanged."""
    spec = _PLAIN.get(kind)
    if spec is None:
        return None
    model, types, required = spec
    for name in required:
        if name not in data:
            return None
    for name, value in data.items():
        allowed = types.get(name)
        kind_of = type(value)
        if allowed is None or kind_of not in allowed:
            return None
        if kind_of is _STR:
            if "\x00" in value or (name in NAME_FIELDS and not value.strip()) or (
                    name in ID_FIELDS and not value.isprintable()):
                return None
        elif kind_of is _INT:
            if grade_problem(value) is not None:
                return None
        elif kind_of is _DICT and not _storable(value):
            return None
    return _construct(model, data)


_DEFAULTS: dict[type[BaseModel], dict[str, Any]] = {}


def _construct(model: type[BaseModel], data: dict[str, Any]) -> BaseModel:
    """What ``model.model_construct(**data)`` makes, in a third of its time: the models of
    :data:`_PLAIN` have plain defaults (None or False, no factory) and no post-init step."""
    defaults = _DEFAULTS.get(model)
    if defaults is None:
        defaults = _DEFAULTS[model] = {
            name: None if field.is_required() else field.get_default(call_default_factory=False)
            for name, field in model.model_fields.items()}
    record = model.__new__(model)
    setattr_ = object.__setattr__
    setattr_(record, "__dict__", {name: data.get(name, default) for name, default in defaults.items()})
    setattr_(record, "__pydantic_fields_set__", set(data))
    setattr_(record, "__pydantic_extra__", None)
    setattr_(record, "__pydantic_private__", None)
    return record


def _storable(value: Any, depth: int = 0) -> bool:
    """JSON as parsed that a project stores unchanged: no NUL, no NaN or infinity."""
    kind_of = type(value)
    if kind_of is str:
        return "\x00" not in value
    if kind_of is float:
        return math.isfinite(value)
    if depth > 100:
        return False  # build() decides about deep nesting
    if kind_of is dict:
        return all("\x00" not in key and _storable(item, depth + 1) for key, item in value.items())
    if kind_of is list:
        return all(_storable(item, depth + 1) for item in value)
    return True


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
        stamp = data["created_at"]
        try:  # times are stored in UTC, which for this one may fall outside years 1-9999
            if stamp.tzinfo is not None:
                stamp.astimezone(UTC)
        except OverflowError:
            raise InputError(f"{short(str(stamp))} in UTC is outside the years 1 to 9999.",
                             file=file, line=line, field="created_at") from None
    if model is LabelRecord:
        _check_label_grade(data, file=file, line=line)
    try:
        record = model.model_validate(data, strict=strict)
    except ValidationError as exc:
        raise _input_error(exc, kind, file=file, line=line) from None
    label_problem = record.problem() if isinstance(record, LabelRecord) else None
    if label_problem is not None:
        raise InputError(label_problem[1], file=file, line=line, field=label_problem[0])
    check_text(record.__dict__.items(), file=file, line=line)
    values = record.__dict__  # a field the model lacks is simply absent (getattr would raise inside)
    meta = values.get("meta")
    if meta:
        try:
            json.dumps(meta, allow_nan=False)
        except ValueError:
            raise InputError("meta holds NaN or an infinity, which JSON cannot store.",
                             file=file, line=line, field="meta") from None
    for name, check in (("grade", grade_problem), ("rank", rank_problem)):
        number = values.get(name)
        problem = check(number) if isinstance(number, int) else None
        if problem:
            raise InputError(problem, file=file, line=line, field=name)
    score = values.get("score")
    if score is not None and not math.isfinite(score):
        raise InputError(f"the score is {score}; scores must be finite numbers.",
                         file=file, line=line, field="score")
    weight = values.get("weight")
    if isinstance(weight, float) and not math.isfinite(weight):
        raise InputError(f"the weight is {weight}; weights must be finite numbers.",
                         file=file, line=line, field="weight")
    return record


def _check_label_grade(data: dict[str, Any], *, file: str, line: int) -> None:
    """A labels line without a grade that neither flags nor comments: the grade is missing, and
    an unknown field is named first of all as the likely misspelling (``"grde"``)."""
    if "grade" in data or "flagged" in data or "comment" in data:
        return
    message = ("the required field is missing (a labels line needs 'query_id', 'chunk_id', "
               "'grade'; only a line of a pair flagged or commented on without a grade has none, "
               "and then \"flagged\": true or a \"comment\").")
    unknown = [str(name) for name in data if name not in FIELDS["labels"]]
    if len(unknown) == 1:
        message += f" The line has the unknown field {quote(unknown[0])}; is it a misspelling?"
    elif unknown:
        message += (f" The line has the unknown fields {', '.join(quote(u) for u in unknown)}; "
                    "is this a labels file?")
    raise InputError(message, file=file, line=line, field="grade")


def read_grade(text: str, *, file: str, line: int, field: str = "grade") -> int:
    """A grade written as text (a TREC or BEIR qrels column): an ASCII integer
    (:func:`ragjudge.numeric.parse_integer`) within the bounds of every grade."""
    grade = parse_integer(text)
    if grade is None:
        raise InputError(f"{short(text)} is not an integer grade.", file=file, line=line,
                         field=field)
    problem = grade_problem(grade)
    if problem:
        raise InputError(problem, file=file, line=line, field=field)
    return grade


def _input_error(exc: ValidationError, kind: str, *, file: str, line: int) -> InputError:
    error = exc.errors(include_url=False)[0]
    loc = [str(part) for part in error.get("loc", ())]
    field = loc[0] if loc else None
    value = error.get("input")
    kind_of_error = error.get("type", "")
    if kind_of_error == "missing":
        message = (f"the required field is missing (a {kind} line needs "
                   f"{', '.join(quote(f) for f in REQUIRED[kind])}).")
        unknown = [str(e["loc"][0]) for e in exc.errors(include_url=False)
                   if e.get("type") == "extra_forbidden" and len(e.get("loc", ())) == 1]
        if len(unknown) == 1:  # e.g. "socre" for "score": name the typo, not only the missing field
            message += f" The line has the unknown field {quote(unknown[0])}; is it a misspelling?"
        elif unknown:
            message += (f" The line has the unknown fields {', '.join(quote(u) for u in unknown)}; "
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
        r: Any = record  # the kind decides the model: its fields are read by name
        if kind == "run":
            return self._pair_once(r, line)
        if kind in ("queries", "chunks"):
            # a hash per field (not the texts themselves: a corpus may be large), so that a
            # contradiction names the field that differs
            fields = record.__dict__
            values = tuple(hash(json.dumps(v, sort_keys=True, default=str) if k == "meta" else v)
                           for k, v in fields.items() if k != "id")
            what = f"{'query' if kind == 'queries' else 'chunk'} {quote(r.id)}"
            return self._same(r.id, values, line, "text", what,
                              names=tuple(k for k in fields if k != "id"))
        if kind in ("qrels", "labels"):
            key: tuple[Any, ...] = (r.query_id, r.chunk_id, r.annotator)
            repeat = self._same(key, r.grade, line, "grade",
                                f"the pair {quote(r.query_id)} / {quote(r.chunk_id)}")
            if kind == "labels":  # and the same flag and comment
                for name, noun in (("flagged", "flags"), ("flag_note", "flag notes"), ("comment", "comments")):
                    repeat = self._same(key + (name,), getattr(record, name), line, name,
                                        f"the pair {quote(r.query_id)} / {quote(r.chunk_id)}", noun) and repeat
            return repeat
        if kind == "facets":
            if r.chunk_id is None:
                return self._same((r.query_id, r.facet), None, line, "facet", "")
            self._seen.setdefault((r.query_id, r.facet), (line, None))
            return self._same((r.query_id, r.facet, r.chunk_id, r.annotator), r.covered, line,
                              "covered", f"facet {quote(r.facet)} and chunk {quote(r.chunk_id)}")
        if kind == "nuggets":
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
                              "support", f"the nugget and chunk {quote(r.chunk_id)}")
        if kind == "entities":
            return self._same((r.query_id, r.entity), None, line, "entity", "")
        if kind == "answers":
            sentences = None if r.sentences is None else tuple(
                (s.text, tuple(s.citations)) for s in r.sentences)
            return self._same((r.query_id, r.run), (r.text, tuple(r.cited), sentences), line,
                              "text" if r.sentences is None else "sentences",
                              f"the answer of run {quote(r.run)} to query {quote(r.query_id)}",
                              names=("text", "cited", "sentences"))
        if kind == "answer-labels":
            target = r.nugget if r.nugget is not None else (r.sentence, r.chunk_id)
            what = (f"nugget {quote(r.nugget)}" if r.nugget is not None
                    else f"sentence {r.sentence} and chunk {quote(r.chunk_id)}")
            return self._same((r.query_id, r.run, r.nugget is None, target, r.annotator),
                              r.support, line, "support",
                              f"the answer of run {quote(r.run)} to query {quote(r.query_id)}, {what}")
        return False

    def _same(self, key: Any, value: Any, line: int, field: str, what: str,
              noun: str | None = None, names: tuple[str, ...] | None = None) -> bool:
        """``value`` is the line's value of ``field``, or with ``names`` a tuple of the values
        of those fields (the first that differs is named). ``noun`` names the field's values in
        the message where its name would read badly."""
        earlier = self._seen.get(key)
        if earlier is None:
            self._seen[key] = (line, value)
            return False
        if earlier[1] != value:
            if names is not None:
                field = next(n for n, old, new in zip(names, earlier[1], value) if old != new)
            raise InputError(
                f"this line contradicts line {earlier[0]}: both are about {what}, "
                + (f"but the {quote(field)} differs." if noun is None else f"with different {noun}."),
                file=self.file, line=line, field=field)
        return True

    def _pair_once(self, record: RunEntry, line: int) -> bool:
        key = (record.query_id, record.chunk_id)
        earlier = self._seen.get(key)
        if earlier is not None:
            raise InputError(
                f"chunk {quote(record.chunk_id)} appears twice for query {quote(record.query_id)} (first on "
                f"line {earlier[0]}); a run lists each chunk of a query once.",
                file=self.file, line=line, field="chunk_id")
        self._seen[key] = (line, None)
        return False
