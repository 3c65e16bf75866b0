"""Datasets of the user's ``ir_datasets`` (the optional extra ``ragjudge[ir-datasets]``) read as
ragjudge records: documents as chunks, queries, and qrels.

ir_datasets gives each dataset its own record types (named tuples); they become ragjudge's as the
BEIR reader does it:

- a **document** is one chunk whose id and ``doc_id`` are its ``doc_id``, whose text is its
  ``text`` field (``body`` when it has none; else what ir_datasets calls its default text), and
  whose other fields go into ``meta`` (``title``, ``url``, …). Raw bytes and ``marked_up_doc`` (a
  second copy of the document with its markup) are left out.
- a **query** takes its text from ``title`` (TREC topics), else ``text``, else ``query``; a
  ``description`` becomes the query's description; ``narrative`` and every other field go into
  ``meta``.
- a **qrel** is a judgment ``(query_id, doc_id, relevance)``; its iteration is ignored, as
  trec_eval does.

Every record goes through the same validation as a JSONL line; an error names
``ir_datasets:NAME docs`` (or ``queries``, ``qrels``) and the record's position (1-based) as its
line. Whatever ir_datasets itself raises while reading (a download that fails, a dependency it
lacks) becomes an :class:`~ragjudge.errors.InputError` with its message.
"""

from __future__ import annotations

import datetime
import difflib
import math
from collections.abc import Callable, Iterator
from enum import Enum
from typing import Any, SupportsIndex

from ragjudge.errors import InputError, RagjudgeError, UsageError
from ragjudge.formats.records import Duplicates, build, plain_record
from ragjudge.safetext import quote

INSTALL_HINT = "pip install 'ragjudge[ir-datasets]' (or pip install ir_datasets)"

_SKIPPED_FIELDS = ("marked_up_doc",)


def load_dataset(name: str, split: str | None = None) -> tuple[Any, str]:
    """The ir_datasets dataset ``name`` (``name/split`` with a split) and its full name.

    ir_datasets is imported here, not at ragjudge's start: it is optional, and importing it
    creates its data folder (``IR_DATASETS_HOME``, default ``~/.ir_datasets``), which fails when
    that folder cannot be created."""
    full = name.strip().strip("/")
    if split is not None and split.strip().strip("/"):
        full = f"{full}/{split.strip().strip('/')}"
    if not full:
        raise UsageError("name an ir_datasets dataset, e.g. 'ragjudge import ir-datasets "
                         "beir/scifact --split test'.")
    try:
        import ir_datasets
    except ImportError:
        raise UsageError(f"importing an ir_datasets dataset needs the ir_datasets package: "
                         f"{INSTALL_HINT}.") from None
    except Exception as exc:  # noqa: BLE001 - any failure of a third-party import is reported
        raise UsageError(
            f"ir_datasets is installed but could not be loaded ({type(exc).__name__}: {exc}). "
            "It creates its data folder when loaded: set IR_DATASETS_HOME to a folder that can be "
            "written.") from None
    try:
        return ir_datasets.load(full), full
    except KeyError:
        pass
    close = difflib.get_close_matches(full, list(ir_datasets.registry), n=3, cutoff=0.6)
    suggestion = f" Did you mean {', '.join(quote(c) for c in close)}?" if close else ""
    raise UsageError(f"ir_datasets has no dataset '{full}'.{suggestion} 'ir_datasets list' lists "
                     "them; a split is part of the name (NAME --split test reads NAME/test).")


def dataset_parts(dataset: Any) -> list[str]:
    """Which of ``chunks``, ``queries``, ``qrels`` the dataset provides, in import order."""
    parts = []
    for kind, entity in (("chunks", "docs"), ("queries", "queries"), ("qrels", "qrels")):
        has = getattr(dataset, f"has_{entity}", None)
        if callable(has) and has():
            parts.append(kind)
    return parts


def dataset_count(dataset: Any, kind: str) -> int | None:
    """How many records of ``kind`` the dataset says it has (None when it does not know)."""
    entity = {"chunks": "docs", "queries": "queries", "qrels": "qrels"}[kind]
    try:
        count = getattr(dataset, f"{entity}_count")()
    except Exception:  # noqa: BLE001 - a count is only for a progress bar
        return None
    return count if isinstance(count, int) and not isinstance(count, bool) else None


def read_dataset(dataset: Any, full: str, kind: str, *, check_duplicates: bool = True,
                 numbered: bool = False, progress: Callable[[int], None] | None = None,
                 ) -> Iterator[Any]:
    """Records of ``kind`` (``chunks``, ``queries`` or ``qrels``) of an ir_datasets dataset.

    ``numbered`` yields ``(position, record)``; ``progress(done)`` is called every 10,000 records
    and at the end."""
    entity = {"chunks": "docs", "queries": "queries", "qrels": "qrels"}[kind]
    file = f"ir_datasets:{full} {entity}"
    convert = {"chunks": _chunk, "queries": _query, "qrels": _qrel}[kind]
    duplicates = Duplicates(kind, file) if check_duplicates else None
    number = 0
    for item in _guarded(lambda: getattr(dataset, f"{entity}_iter")(), file, entity):
        number += 1
        record = convert(item, file, number)
        if progress is not None and number % 10_000 == 0:
            progress(number)
        if duplicates is not None and duplicates.seen(record, number):
            continue
        yield (number, record) if numbered else record
    if progress is not None:
        progress(number)


def _guarded(start: Callable[[], Any], file: str, entity: str) -> Iterator[Any]:
    """The items of ir_datasets' iterator; its own failures as one-paragraph errors."""
    try:
        iterator = iter(start())
        while True:
            try:
                item = next(iterator)
            except StopIteration:
                return
            yield item
    except RagjudgeError:
        raise
    except Exception as exc:  # noqa: BLE001 - a third party's failure, reported with its message
        message = " ".join(str(exc).split()) or type(exc).__name__
        raise InputError(f"ir_datasets could not read the {entity} ({type(exc).__name__}: "
                         f"{message}). Nothing was imported.", file=file) from None


def _fields(item: Any, file: str, number: int) -> dict[str, Any]:
    asdict = getattr(item, "_asdict", None)
    if not callable(asdict):
        raise InputError(f"ir_datasets gave a {type(item).__name__}, not a record with named "
                         "fields.", file=file, line=number)
    return dict(asdict())


def _text_of(item: Any, values: dict[str, Any], names: tuple[str, ...]) -> str | None:
    for name in names:
        if isinstance(values.get(name), str):
            return values.pop(name)
    default = getattr(item, "default_text", None)
    if callable(default):
        text = default()
        if isinstance(text, str):
            return text
    return None


def _chunk(item: Any, file: str, number: int) -> Any:
    values = _fields(item, file, number)
    doc_id = values.pop("doc_id", None)
    text = _text_of(item, values, ("text", "body"))
    for name in _SKIPPED_FIELDS:
        values.pop(name, None)
    fields = {"id": doc_id, "text": "" if text is None else text,
              "doc_id": doc_id if isinstance(doc_id, str) else None, "meta": _meta(values)}
    return plain_record("chunks", fields) or build("chunks", fields, file=file, line=number)


def _query(item: Any, file: str, number: int) -> Any:
    values = _fields(item, file, number)
    query_id = values.pop("query_id", None)
    text = _text_of(item, values, ("title", "text", "query"))
    description = values.pop("description", None)
    meta = _meta(values)
    fields = {"id": query_id, "text": "" if text is None else text, "meta": meta}
    if isinstance(description, str) and description:
        fields["description"] = description
    elif description not in (None, ""):
        fields["meta"] = {**(meta or {}), "description": _plain(description)}
    return plain_record("queries", fields) or build("queries", fields, file=file, line=number)


def _qrel(item: Any, file: str, number: int) -> Any:
    values = _fields(item, file, number)
    grade = values.get("relevance")
    if isinstance(grade, SupportsIndex) and not isinstance(grade, bool):
        grade = int(grade)  # numpy integers too; anything else is refused as not an integer
    fields = {"query_id": values.get("query_id"), "chunk_id": values.get("doc_id"), "grade": grade}
    return plain_record("qrels", fields) or build("qrels", fields, file=file, line=number)


def _meta(values: dict[str, Any]) -> dict[str, Any] | None:
    meta = {}
    for key, value in values.items():
        plain = _plain(value)
        if plain not in (None, "", [], {}):
            meta[str(key)] = plain
    return meta or None


def _plain(value: Any) -> Any:
    """``value`` as JSON can store it; None for what a project does not keep (raw bytes)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return None
    if isinstance(value, Enum):
        return _plain(value.value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if hasattr(value, "_asdict"):
        return {k: p for k, v in value._asdict().items() if (p := _plain(v)) is not None}
    if isinstance(value, dict):
        return {str(k): p for k, v in value.items() if (p := _plain(v)) is not None}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [p for v in value if (p := _plain(v)) is not None]
    if hasattr(value, "item"):  # a numpy scalar
        return _plain(value.item())
    return str(value)
