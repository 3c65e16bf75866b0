"""A run's entries as numpy arrays, stored beside its rows (table ``run_arrays``).

Evaluating a project's run needs its chunk ids per query in rank order; reading them back from
millions of ``run_entries`` rows costs far more than the evaluation. The import therefore writes
the same entries a second time, as arrays, under the same generation as the rows (so both are
published together, see :class:`~ragjudge.store.schema.Run`):

- ``query_ids``: the run's distinct query ids in byte order, packed (see below);
- ``offsets``: int64, query ``i`` owns entries ``offsets[i]:offsets[i + 1]``;
- ``chunk_ids``: the chunk ids of every entry, grouped by query, in rank order, packed;
- ``scores``: float64 in the same order (NaN for an entry without a score).

Ids are *packed*: their UTF-8 bytes one after another (``<name>``, uint8) and their lengths
(``<name>_lengths``, uint16: ids hold at most 800 bytes). Each array is stored as raw bytes in
parts of at most :data:`PART_BYTES`, with its numpy dtype.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

import numpy as np
from typing import TYPE_CHECKING, Any

from ragjudge.store.sqltext import execute, fetch, listed

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


PART_BYTES = 4 << 20
"""The largest piece of an array in one row (PostgreSQL's bytea and SQLite's blobs hold far
more, but pieces keep each write and each read small)."""

NAMES = ("query_ids", "query_ids_lengths", "offsets", "chunk_ids", "chunk_ids_lengths", "scores")



def pack_ids(ids: Iterable[str | bytes] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(bytes, lengths)``: ids' UTF-8 bytes concatenated (uint8) and their lengths (uint16).
    An ``S`` array is packed in numpy (its NUL padding dropped: ids hold no NUL)."""
    if isinstance(ids, np.ndarray) and ids.dtype.kind == "S":
        n, width = len(ids), ids.dtype.itemsize
        if n == 0 or width == 0:
            return np.zeros(0, dtype=np.uint8), np.zeros(n, dtype=np.uint16)
        raw = np.ascontiguousarray(ids).view(np.uint8).reshape(n, width)
        lengths = width - np.argmax(raw[:, ::-1] != 0, axis=1)
        lengths[~raw.any(axis=1)] = 0
        keep = np.arange(width) < lengths[:, None]
        return raw[keep], lengths.astype(np.uint16)
    encoded = [i.encode("utf-8", "surrogatepass") if isinstance(i, str) else bytes(i) for i in ids]
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    return data, np.fromiter(map(len, encoded), dtype=np.uint16, count=len(encoded))


def _table() -> Any:
    from ragjudge.store.schema import RunArray

    return RunArray.__table__


def write_arrays(connection: Connection, run: str, generation: int,
                 arrays: Mapping[str, np.ndarray], *, replace: bool = True) -> None:
    """Store ``arrays`` (name -> 1-D array) for the run's generation (``replace``: the arrays
    stored for it before are deleted first)."""
    from sqlalchemy import insert

    if replace:
        delete_arrays(connection, run, generation)
    for name, array in arrays.items():
        connection.execute(insert(_table()), list(array_parts(run, generation, name, array)))


def array_parts(run: str, generation: int, name: str, array: np.ndarray) -> Iterator[dict]:
    """The rows that store ``array``: pieces of at most :data:`PART_BYTES`."""
    array = np.ascontiguousarray(array)
    raw = array.view(np.uint8).reshape(-1).data if array.size else memoryview(b"")
    step = max(array.itemsize, PART_BYTES - PART_BYTES % max(array.itemsize, 1))
    parts = [raw[at:at + step] for at in range(0, len(raw), step)] or [raw]
    for i, part in enumerate(parts):
        yield {"run": run, "generation": generation, "name": name, "part": i,
               "dtype": array.dtype.str, "data": bytes(part)}


def write_part(connection: Connection, row: dict) -> None:
    """One row of :func:`array_parts`."""
    from sqlalchemy import insert

    connection.execute(insert(_table()), [row])


RANKING = ("query_ids", "query_ids_lengths", "offsets", "chunk_ids", "chunk_ids_lengths")
"""The arrays of a run's ranking: every name but ``scores`` (a stored run is read in its stored
rank order, so evaluating it needs no score: they are over half of its bytes)."""


def read_arrays(connection: Connection, run: str, generation: int,
                names: Iterable[str] = NAMES) -> dict[str, np.ndarray] | None:
    """The arrays stored for the run's generation (only ``names``, which must be among
    :data:`NAMES`), or None when it has none (a run written before arrays were kept, or by other
    means than an import)."""
    wanted = tuple(names)
    arrays = read_named(connection, run, generation, wanted)
    return arrays if set(arrays) == set(wanted) else None


def read_named(connection: Connection, run: str, generation: int,
               names: Iterable[str]) -> dict[str, np.ndarray]:
    """Those of ``names`` stored for the run's generation, each joined from its pieces."""
    among, params = listed("name", names)
    rows = fetch(connection, "SELECT name, dtype, data FROM run_arrays WHERE run = :run "
                             f"AND generation = :generation AND name IN ({among}) ORDER BY name, part",
                 {**params, "run": run, "generation": generation})
    pieces: dict[str, list[bytes]] = {}
    dtypes: dict[str, str] = {}
    for name, dtype, data in rows:
        pieces.setdefault(name, []).append(bytes(data))
        dtypes[name] = dtype
    return {name: np.frombuffer(b"".join(parts), dtype=np.dtype(dtypes[name]))
            for name, parts in pieces.items()}


def delete_arrays(connection: Any, run: str, generation: int,
                  names: Iterable[str] | None = None) -> None:
    """The arrays of the run's generation (only ``names``, when given). ``connection``:
    SQLAlchemy's or :mod:`ragjudge.store.sqltext`'s."""
    sql = "DELETE FROM run_arrays WHERE run = :run AND generation = :generation"
    params: dict[str, Any] = {"run": run, "generation": generation}
    if names is not None:
        among, listed_names = listed("name", names)
        sql += f" AND name IN ({among})"
        params.update(listed_names)
    execute(connection, sql, params)


CREATED = ("created_queries", "created_queries_lengths", "created_chunks", "created_chunks_lengths")
"""Beside an import's arrays until its run is published: the placeholders it is writing (packed
ids), so that a killed import's are removed (:mod:`ragjudge.services.project.staging`)."""


def arrays_from_rows(rows: Iterable[tuple[str, str, int, float | None]]) -> dict[str, np.ndarray]:
    """The arrays of a run from its rows ``(query_id, chunk_id, rank, score)`` in any order."""
    rows = list(rows)
    keyed = sorted(rows, key=lambda r: (r[0].encode("utf-8", "surrogatepass"), r[2]))
    queries: list[str] = []
    offsets = [0]
    for i, row in enumerate(keyed):
        if not queries or row[0] != queries[-1]:
            if queries:
                offsets.append(i)
            queries.append(row[0])
    offsets.append(len(keyed))
    if not queries:
        offsets = [0]
    q_bytes, q_lengths = pack_ids(queries)
    c_bytes, c_lengths = pack_ids([r[1] for r in keyed])
    scores = np.array([np.nan if r[3] is None else r[3] for r in keyed], dtype=np.float64)
    return {"query_ids": q_bytes, "query_ids_lengths": q_lengths,
            "offsets": np.array(offsets, dtype=np.int64), "chunk_ids": c_bytes,
            "chunk_ids_lengths": c_lengths, "scores": scores}


__all__ = ["NAMES", "PART_BYTES", "RANKING", "arrays_from_rows", "delete_arrays", "pack_ids", "read_arrays",
           "write_arrays"]
