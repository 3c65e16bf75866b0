"""Digests that tie a number to what it was computed from: each run's entries and the label
snapshot, as SHA-256 of a canonical form stated here (so anyone can recompute them).

**A run** (:func:`run_digest`): the run as stored, whole (its arrays, see
:mod:`ragjudge.store.run_arrays`; a run stored before arrays were kept is made into the same
arrays from its rows). For each array in the order ``query_ids``, ``query_ids_lengths``,
``offsets``, ``chunk_ids``, ``chunk_ids_lengths``, ``scores``: the line
``NAME DTYPE COUNT\\n`` (DTYPE one of ``|u1``, ``<u2``, ``<i8``, ``<f8``), then the array's
COUNT values as little-endian bytes of that type. The query ids are the run's distinct query
ids in byte order, their UTF-8 bytes one after another, with their lengths; query ``i`` owns
entries ``offsets[i]`` to ``offsets[i + 1]``; the chunk ids (UTF-8, with lengths) and scores
are in rank order, a missing score being the NaN ``0x7ff8000000000000``. The name of the run is
not part of it: the same entries under another name have the same digest.

**The label snapshot** (:func:`label_snapshot`): the append-only events that scores are made
of — ``labels``, ``adjudications``, ``nugget_support``, ``facet_links`` and
``answer_judgments`` — up to the newest id of each when the snapshot is taken. For each table
in that order: the line ``# TABLE COLUMN,COLUMN,...\\n`` (every column, in the schema's order),
then one line per event in id order: the JSON array of its values (``json.dumps`` with ASCII
escapes and no spaces: ``[12,"q1","c7","ana",2,false,...]``), times as
``YYYY-MM-DDTHH:MM:SS.ffffff`` (UTC), then ``\\n``. The whole text, UTF-8, is hashed.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import func, select

from ragjudge.errors import UsageError
from ragjudge.services.runs.stored import stored_arrays
from ragjudge.store.schema import Adjudication, AnswerJudgment, FacetLink, Label, NuggetSupport
from ragjudge.store.schema import Run as RunRow
from ragjudge.safetext import quote

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from ragjudge.services.project.database import Project

RUN_ARRAYS = (("query_ids", "|u1"), ("query_ids_lengths", "<u2"), ("offsets", "<i8"),
              ("chunk_ids", "|u1"), ("chunk_ids_lengths", "<u2"), ("scores", "<f8"))
"""The arrays of a run's digest, in order, each with the type its values are hashed as."""

LABEL_TABLES = (Label, Adjudication, NuggetSupport, FacetLink, AnswerJudgment)
"""The event tables of the label snapshot, in the order they are hashed."""

RUN_FORM = ("SHA-256 over each of the run's arrays in the order query_ids, query_ids_lengths, "
            "offsets, chunk_ids, chunk_ids_lengths, scores: a line 'NAME DTYPE COUNT', then "
            "the values as little-endian bytes (ids as UTF-8 bytes with their lengths, query ids "
            "in byte order, chunks and scores in rank order, a missing score as the NaN "
            "0x7ff8000000000000); the run's name is not part of it.")
LABEL_FORM = ("SHA-256 over the tables labels, adjudications, nugget_support, facet_links and "
              "answer_judgments, each as a line '# TABLE COLUMNS' (comma-separated, the schema's "
              "order), then one line per event up to the newest id, in id order: the JSON array "
              "of its values (ASCII escapes, no spaces; times as YYYY-MM-DDTHH:MM:SS.ffffff UTC).")

_BATCH = 50_000
_NAN = np.array([0x7FF8000000000000], dtype="<u8").view("<f8")[0]


def _hash_arrays(arrays: dict[str, np.ndarray]) -> str:
    digest = hashlib.sha256()
    for name, dtype in RUN_ARRAYS:
        values = np.ascontiguousarray(np.asarray(arrays[name]).astype(dtype, copy=False))
        if name == "scores":
            values = np.where(np.isnan(values), _NAN, values).astype("<f8")
        digest.update(f"{name} {dtype} {len(values)}\n".encode("ascii"))
        digest.update(values.tobytes())
    return digest.hexdigest()


def run_digest(connection: Connection, name: str) -> str:
    """The SHA-256 of run ``name`` in the canonical form of :data:`RUN_FORM`."""
    generation = connection.execute(select(RunRow.generation).where(RunRow.name == name)).scalar()
    if generation is None:
        raise UsageError(f"the project has no run named {quote(name)}.")
    return _hash_arrays(stored_arrays(connection, name, generation))


def run_digests(project: Project, names: Sequence[str]) -> dict[str, str]:
    """``{run: SHA-256}`` for each of ``names`` (:func:`run_digest`)."""
    with project.connect() as connection:
        return {name: run_digest(connection, name) for name in names}


@dataclass(frozen=True)
class LabelSnapshot:
    """The label events a report was computed from: the newest id and the number of events of
    each table, and the SHA-256 of them all in the form of :data:`LABEL_FORM`."""

    sha256: str
    newest: dict[str, int | None]
    """table -> its newest event id (None: no event yet)"""
    events: dict[str, int]
    """table -> the events hashed"""

    def to_json(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "newest": dict(self.newest), "events": dict(self.events),
                "form": LABEL_FORM}


def newest_ids(project: Project) -> dict[str, int | None]:
    """table -> the newest event id of each table of the label snapshot (None: empty)."""
    with project.connect() as connection:
        return {model.__tablename__: connection.execute(select(func.max(model.id))).scalar()
                for model in LABEL_TABLES}


def _canonical_lines(table: Any) -> Callable[[Sequence[Any]], str]:
    """The writer of one event of ``table`` as its line of the label snapshot: times as
    ``YYYY-MM-DDTHH:MM:SS.ffffff``, a non-finite float as its ``repr``, the rest as JSON."""
    from sqlalchemy import DateTime, Float

    times = [i for i, c in enumerate(table.columns) if isinstance(c.type, DateTime)]
    floats = [i for i, c in enumerate(table.columns) if isinstance(c.type, Float)]
    encode = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode

    def line(row: Sequence[Any]) -> str:
        values = list(row)
        for i in times:
            if values[i] is not None:
                values[i] = values[i].isoformat(sep="T", timespec="microseconds")
        for i in floats:
            if isinstance(values[i], float) and not math.isfinite(values[i]):
                values[i] = repr(values[i])
        return encode(values) + "\n"

    return line


def label_snapshot(project: Project, newest: dict[str, int | None] | None = None, *,
                   progress: Callable[..., None] | None = None) -> LabelSnapshot:
    """The digest of the label events up to ``newest`` (default: the newest now), read in
    batches of ids; ``progress(done, total, description, unit)`` hears of each batch."""
    newest = newest_ids(project) if newest is None else newest
    digest = hashlib.sha256()
    counts: dict[str, int] = {}
    total = sum(n or 0 for n in newest.values())  # ids count the events, near enough for a bar
    with project.connect() as connection:
        for model in LABEL_TABLES:
            table = model.__table__
            name = table.name
            digest.update(f"# {name} {','.join(c.name for c in table.columns)}\n".encode("ascii"))
            line = _canonical_lines(table)
            counts[name] = 0
            last, top = 0, newest.get(name)
            while top is not None and last < top:
                rows = connection.execute(
                    select(table).where(table.c.id > last, table.c.id <= top)
                    .order_by(table.c.id).limit(_BATCH)).all()
                if not rows:
                    break
                lines = "".join(map(line, rows))
                digest.update(lines.encode("ascii"))
                counts[name] += len(rows)
                last = rows[-1].id
                if progress is not None:
                    done = sum(counts.values())
                    progress(done, max(total, done), "hashing the label events", "events")
    return LabelSnapshot(digest.hexdigest(), dict(newest), counts)


__all__ = ["LABEL_FORM", "LABEL_TABLES", "RUN_FORM", "LabelSnapshot", "label_snapshot",
           "newest_ids", "run_digest", "run_digests"]
