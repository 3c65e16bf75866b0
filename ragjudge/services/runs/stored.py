"""Reading a project's runs: their names, sizes, and each run whole from its stored arrays."""

from __future__ import annotations

from typing import Any
from typing import TYPE_CHECKING
import numpy as np
from ragjudge.errors import UsageError
from ragjudge.metrics.data import Run
from ragjudge.store.sqltext import PUBLISHED, fetch, json_value, listed
from ragjudge.safetext import quote


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


def run_sizes(connection: Any) -> list[tuple[str, int, int, int]]:
    """Each run's ``(name, entries, queries, deepest rank)``: from its ``meta``, where the
    import recorded them (its rows are only its head, see :mod:`ragjudge.services.runs.head`),
    else counted over its rows. ``connection``: SQLAlchemy's or :mod:`ragjudge.store.sqltext`'s."""
    sizes: dict[str, tuple[str, int, int, int]] = {}
    for name, meta in fetch(connection, "SELECT name, meta FROM runs"):
        meta = json_value(connection, meta)
        if isinstance(meta, dict) and all(isinstance(meta.get(k), int) for k in ("entries", "queries", "depth")):
            sizes[name] = (name, meta["entries"], meta["queries"], meta["depth"])
    sql = ("SELECT re.run, count(*), count(DISTINCT re.query_id), max(re.rank) FROM run_entries re "
           f"WHERE {PUBLISHED.format(alias='re')}")
    params: dict[str, Any] = {}
    if sizes:
        names, params = listed("sized", list(sizes))
        sql += f" AND re.run NOT IN ({names})"
    for name, n, q, d in fetch(connection, sql + " GROUP BY re.run", params):
        sizes[name] = (name, n, q, d)
    return [sizes[name] for name in sorted(sizes)]


def project_run_names(project: Project) -> list[str]:
    """The names of the runs stored in the project, sorted."""
    with project.connect() as connection:
        return [n for (n,) in fetch(connection, "SELECT name FROM runs ORDER BY name")]


def project_run(project: Project, name: str, *, batch: int = 200_000) -> Run:
    """The run stored under ``name``, in its stored rank order (trec_eval's, set at import).

    Read from the arrays the import stored with the run (:mod:`ragjudge.store.run_arrays`),
    those of its ranking only (not its scores: the ranks are stored, see :meth:`Run.from_grouped`):
    no row of ``run_entries`` is read. A run without arrays (written before they were kept,
    or by other means than an import) is read with the database driver's own cursor straight
    into numpy arrays of id bytes (no SQLAlchemy row object, no Python string per row): on
    SQLite one row per query, its chunks and ranks concatenated by the database
    (:func:`_read_run_sqlite`); elsewhere the ``(query, chunk)`` rows in rank order, fetched
    ``batch`` at a time.
    """
    with project.connect() as connection:
        found = fetch(connection, "SELECT generation FROM runs WHERE name = :name", {"name": name})
        generation = found[0] if found else None
        if generation is None:
            known = [n for (n,) in fetch(connection, "SELECT name FROM runs ORDER BY name")]
            listed = ", ".join(known) if known else "none yet ('ragjudge import run FILE' adds one)"
            raise UsageError(f"the project has no run named {quote(name)}. Its runs: {listed}.")
        from ragjudge.store.run_arrays import RANKING, read_arrays

        arrays = read_arrays(connection, name, generation[0], RANKING)
        if arrays is not None:
            return run_from_arrays(arrays, name)
        rows = None
        if connection.dialect.name == "sqlite":
            rows = _read_run_sqlite(connection, name)
        if rows is None:
            rows = _read_run_rows(connection, name, batch)
    qids, cids = rows
    return Run(qids, cids, None, name=name, ordered=True)


def run_from_arrays(arrays: dict[str, np.ndarray], name: str) -> Run:
    """A :class:`Run` from stored run arrays (already grouped by query and ranked)."""
    queries = _unpack(arrays["query_ids"], arrays["query_ids_lengths"])
    chunks = _unpack(arrays["chunk_ids"], arrays["chunk_ids_lengths"])
    counts = np.diff(arrays["offsets"])
    return Run.from_grouped(queries, counts, chunks, name=name)


def _unpack(data: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Packed ids as an ``as_ids`` array: ids of one length are the rows of a byte matrix
    (the common case: generated ids); others go through :func:`ragjudge.services.project.columns.unpack_ids`."""
    n = len(lengths)
    if n and int(lengths.min()) == int(lengths.max()) and len(data) == n * int(lengths[0]) > 0:
        size = int(lengths[0])
        width = max(8, -(-size // 8) * 8)
        out = np.zeros((n, width), dtype=np.uint8)
        out[:, :size] = np.asarray(data, dtype=np.uint8).reshape(n, size)
        return out.view(f"S{width}").ravel()
    from ragjudge.metrics._keys import packed_ids

    return packed_ids(data, lengths)


def stored_arrays(connection, name: str, generation: int) -> dict[str, np.ndarray]:  # noqa: ANN001
    """The arrays of a stored run (:mod:`ragjudge.store.run_arrays`), read, or made from its
    rows when it has none."""
    from ragjudge.store.run_arrays import arrays_from_rows, read_arrays

    arrays = read_arrays(connection, name, generation)
    if arrays is not None:
        return arrays
    return arrays_from_rows(fetch(connection, "SELECT query_id, chunk_id, rank, score FROM run_entries "
                                              "WHERE run = :run AND generation = :generation",
                                  {"run": name, "generation": generation}))


_RUN_SEP = b"\x1f"


def _read_run_sqlite(connection, name: str):  # noqa: ANN001, ANN202
    """(query ids, chunk ids) as ``S`` arrays grouped by query in rank order, or None when a
    chunk id holds the separator byte (then :func:`_read_run_rows` reads it).

    SQLite concatenates each query's chunk ids and ranks in one (arbitrary, but the same) row
    order; the ranks then put each query's chunks in order (a stable sort: ties keep chunk id
    order, which ORDER BY rank leaves undefined anyway). Text is fetched as bytes.
    """
    raw = connection.connection.driver_connection
    before = raw.text_factory
    raw.text_factory = bytes
    try:
        cursor = raw.cursor()
        try:
            cursor.execute(
                "SELECT query_id, count(*), group_concat(chunk_id, x'1f'), group_concat(rank, ',') "
                f"FROM run_entries re WHERE run = ? AND {PUBLISHED.format(alias='re')} "
                "GROUP BY query_id ORDER BY query_id", (name,))
            rows = cursor.fetchall()
        finally:
            cursor.close()
    finally:
        raw.text_factory = before
    if not rows:
        return np.zeros(0, dtype="S8"), np.zeros(0, dtype="S8")
    queries, per_query, chunks, ranks = zip(*rows)
    counts = np.array(per_query, dtype=np.int64)
    chunk_ids = np.array(_RUN_SEP.join(chunks).split(_RUN_SEP))
    rank_text = b",".join(r if isinstance(r, bytes) else str(r).encode() for r in ranks).split(b",")
    if len(chunk_ids) != int(counts.sum()) or len(rank_text) != len(chunk_ids):
        return None
    rank = np.array(rank_text).astype(np.int64)
    group = np.repeat(np.arange(len(counts)), counts)
    order = np.lexsort((rank, group))
    query_ids = np.repeat(np.array(queries), counts)
    return query_ids, chunk_ids[order]


def _read_run_rows(connection, name: str, batch: int):  # noqa: ANN001, ANN202
    """(query ids, chunk ids) in rank order through the driver's cursor, ``batch`` rows at a
    time (any database)."""
    from ragjudge.store.schema import RunEntry

    table = RunEntry.__table__
    mark = "?" if connection.dialect.paramstyle == "qmark" else "%s"
    sql = (f"SELECT re.query_id, re.chunk_id FROM {table.name} re "
           f"WHERE re.run = {mark} AND {PUBLISHED.format(alias='re')} ORDER BY re.query_id, re.rank")
    qids: list[str] = []
    cids: list[str] = []
    cursor = connection.connection.driver_connection.cursor()
    try:
        cursor.execute(sql, (name,))
        while True:
            part = cursor.fetchmany(batch)
            if not part:
                break
            q, c = zip(*part)
            qids.extend(q)
            cids.extend(c)
    finally:
        cursor.close()
    return qids, cids
