"""Importing a run: read as columns, checked as arrays, stored whole as arrays with its head as
rows, published in one short transaction.

Nothing here loads SQLAlchemy: on SQLite a run is written through the standard library's
:mod:`sqlite3` (:class:`~ragjudge.services.project.litewrite.LiteImportSession`), so that
``ragjudge import run`` can open the project without it (:mod:`ragjudge.cli.lean`); on
PostgreSQL through :class:`~ragjudge.services.project.staging.ImportSession`.
"""

from __future__ import annotations

import os
from contextlib import suppress
from itertools import repeat
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from ragjudge.errors import InputError, UsageError, check_typed
from ragjudge.formats.source import Source, is_inline
from ragjudge.inputs import source_name
from ragjudge.services.project.litewrite import RUN_ENTRIES_SQL
from ragjudge.services.project import columns as bulk
from ragjudge.services.runs import head as runhead
from ragjudge.services.transfer.idcheck import IdCheck, check_long_ids
from ragjudge.services.transfer.result import ImportResult, Progress
from ragjudge.store.sqltext import scalar


def _run_columns(source: Source, fmt: str, file: str, progress: Progress | None) -> bulk.RunColumns:
    """The run's lines as columns: a TREC run read by the TREC reader (which words any bad
    line), a run of another format through the record readers."""
    if fmt == "trec":
        size = _size_of(source)
        description = f"run {file}: reading"
        if progress is not None:
            progress(0, size, description)
        columns = bulk.trec_run(source, file)
        if progress is not None:
            progress(size or 0, size, description)
        return columns
    from ragjudge.services.transfer.common import numbered

    with numbered("run", source, fmt, file, progress) as records:
        return bulk.record_run(records)  # type: ignore[arg-type]  # runs come as plain tuples


def _size_of(source: Source) -> int | None:
    """The bytes of a file source (as stored: compressed for ``.gz``), for progress."""
    if isinstance(source, (bytes, bytearray)):
        return len(source)
    if isinstance(source, (str, os.PathLike)) and not is_inline(source) and str(source) != "-":
        try:
            return os.stat(source).st_size
        except OSError:
            return None
    return None


def import_run_named(project: Any, source: Source, fmt: str, name: str | None, create_missing: bool,
                     replace: bool, progress: Progress | None) -> ImportResult:
    """:func:`import_run` under ``name``, by default the file's (:func:`run_name_for`), as
    ``import run`` takes it (``fmt`` decided)."""
    if name is None:
        name = run_name_for(source)
    elif not name.strip():  # was imported silently as a run named 'run'
        raise UsageError("--name is empty: a run name must be 1 to 255 characters. Nothing was imported.")
    check_typed(name, "--name")
    return import_run(project, source, fmt, source_name(source), name or "run", create_missing,
                      replace, progress)


def import_run(project, source: Source, fmt: str, file: str, name: str,  # noqa: ANN001
                create_missing: bool, replace: bool, progress: Progress | None) -> ImportResult:
    """A run: read and checked as columns, staged under a new generation in short
    transactions, published in one small one (:mod:`ragjudge.services.project.staging`)."""
    name = name.strip()
    if not name or len(name) > 255:
        raise UsageError("--name: a run name must be 1 to 255 characters.")
    result = ImportResult(kind="run", file=file, run=name)
    source = bulk.materialize(source)
    columns = _run_columns(source, fmt, file, progress)
    result.read = len(columns)
    if result.read == 0:
        raise InputError("the file holds no run lines.", file=file)
    check_long_ids(columns.query_ids, columns.chunk_ids, columns.lines, file)
    ranked, repeat = _ranked(columns)
    head = runhead.head_depth(project)
    with _session(project) as session:
        with session.read() as connection:
            refs = IdCheck(connection, create_missing, result)
            if create_missing and ranked is not None:  # nothing refused: the ranked run's distinct queries
                missing_queries = refs.check_columns("query", ranked.query_ids,
                                                     columns.lines[ranked.order[ranked.offsets[:-1]]])
            else:
                missing_queries = refs.check_columns("query", columns.query_ids, columns.lines)
            if not create_missing:  # every chunk must be there
                missing_chunks = refs.check_columns("chunk", columns.chunk_ids, columns.lines)
                refs.raise_if_missing(file)
            if repeat is not None:
                _duplicate(columns, repeat, file)
            assert ranked is not None  # ranked whenever no chunk repeats
            in_head = runhead.head_rows(ranked.offsets, ranked.qidx, 0, head)
            if create_missing:  # placeholders for the head's chunks only (see runhead)
                missing_chunks = refs.check_columns("chunk", ranked.chunk_ids[in_head],
                                                    columns.lines[ranked.order[in_head]])
                if len(in_head) < len(ranked):
                    result.notes.append(
                        f"Chunks ranked below {head} that the project lacks get their placeholders "
                        "when a judging pool first reaches that deep.")
            current = scalar(connection, "SELECT generation FROM runs WHERE name = :name", {"name": name})
            if current is not None and _same_run_or_refuse(connection, name, current, ranked,
                                                           file, result, replace):
                return result
        arrays = ranked.arrays()
        del columns
        generation, replaces = session.begin_run(name)

        def placeholders(connection: Any) -> None:  # PostgreSQL: COPY
            for table, ids in (("queries", missing_queries), ("chunks", missing_chunks)):
                session.write_rows(connection, "", [(i, "") for i in sorted(ids)], table, ("id", "text"))
            result.created_queries = len(missing_queries)
            result.created_chunks = len(missing_chunks)

        try:
            if not session.sqlite:  # one transaction: the entries' references come first
                with session.write() as connection:
                    placeholders(connection)
            else:  # before the publish, in short transactions, removed if the import dies
                session.stage_placeholders(name, generation, missing_queries, missing_chunks)
                result.created_queries = len(missing_queries)
                result.created_chunks = len(missing_chunks)
            _stage_entries(session, name, generation, ranked, in_head, progress)
            session.store_arrays(name, generation, arrays)
            meta = runhead.run_meta(file, head, arrays)
            with session.write(durable=True) as connection:
                session.publish_run(connection, name, generation, meta, replaces is not None)
        except BaseException:
            with suppress(Exception):  # the next import or opening removes what is left
                session.abandon_run(name, generation)
            raise
        session.finish_run(name, generation, replaces)
    result.added = result.read
    if replaces is not None:
        result.updated = 1
        result.notes.append(f"Replaced the earlier run '{name}'.")
    return result


def _session(project: Any) -> Any:
    """The import session of ``project``: on SQLite (opened either way) the standard library's
    (:func:`~ragjudge.services.project.litewrite.import_session_of`)."""
    if getattr(project, "lite", False) or project.engine.dialect.name == "sqlite":
        from ragjudge.services.project.litewrite import import_session_of

        return import_session_of(project)
    from ragjudge.services.project.staging import ImportSession

    return ImportSession(project)


def run_name_for(source: Source) -> str:
    """The default name of a run: its file's name without extensions (``bm25.trec.gz`` → bm25)."""
    if is_inline(source) or not isinstance(source, (str, os.PathLike)) or str(source) == "-":
        name = getattr(source, "name", None)
        if not isinstance(name, str) or name.startswith("<"):
            raise UsageError("Name the run with --name (it does not come from a file name).")
        source = name
    stem = Path(source).name
    if stem.endswith(".gz"):
        stem = stem[:-3]
    return Path(stem).stem or stem


def _stage_entries(session: Any, name: str, generation: int, ranked: bulk.RankedRun,
                   rows: np.ndarray, progress: Progress | None) -> None:
    """The run's head (its entries at positions ``rows``, see :mod:`ragjudge.services.runs.head`)
    under ``generation``, batch by batch, in storage order."""
    queries = np.array(bulk.decode(ranked.query_ids), dtype=object)
    ranks = ranked.ranks[rows]
    scores = ranked.scores[rows]
    qidx = ranked.qidx[rows]
    chunk_ids = ranked.chunk_ids[rows]
    has_none = bool(np.isnan(scores).any())
    sql = RUN_ENTRIES_SQL
    total = len(rows)
    description = f"run {name}: writing entries"

    def prepare(start: int, stop: int) -> list[tuple]:
        part = scores[start:stop]
        values = ([None if v != v else v for v in part.tolist()] if has_none else part.tolist())
        return list(zip(repeat(name), repeat(generation), queries[qidx[start:stop]].tolist(),
                        bulk.decode(chunk_ids[start:stop]), ranks[start:stop].tolist(), values))

    def write(connection: Any, rows: list[tuple]) -> None:
        session.write_rows(connection, sql, rows, "run_entries",
                           ("run", "generation", "query_id", "chunk_id", "rank", "score"))

    report = None if progress is None else (lambda done: progress(done, total, description, "entries"))
    if report is not None:
        report(0)
    session.batches(total, prepare, write, report)


def _ranked(columns: bulk.RunColumns) -> tuple[bulk.RankedRun, None] | tuple[None, tuple[int, int]]:
    """The run in storage order, or the rows of the first chunk a query lists twice (the
    ranking finds a repeat in the same pass; only then is it looked for again, to say where)."""
    try:
        return bulk.rank(columns), None
    except InputError as exc:
        repeat = bulk.first_repeat(columns.query_ids, columns.chunk_ids) if exc.field == "chunk_id" else None
        if repeat is None:
            raise
        return None, repeat


def _duplicate(columns: bulk.RunColumns, repeat: tuple[int, int], file: str) -> NoReturn:
    """The first line that lists a chunk its query listed before."""
    first, second = repeat
    query_id, chunk_id = bulk.decode(np.array([columns.query_ids[second], columns.chunk_ids[second]]))
    raise InputError(
        f"chunk '{chunk_id}' appears twice for query '{query_id}' (first on line "
        f"{int(columns.lines[first])}); a run lists each chunk of a query once. Nothing was imported.",
        file=file, line=int(columns.lines[second]), field="chunk_id")


def _same_run_or_refuse(connection: Any, name: str, generation: int,
                        ranked: bulk.RankedRun, file: str, result: ImportResult,
                        replace: bool) -> bool:
    """A run of the same name is in the project: the same entries change nothing (True), with
    ``replace`` too (a replace would rewrite the run's time); other entries are refused with how
    many differ, unless ``replace`` (False)."""
    from ragjudge.services.runs.stored import stored_arrays

    old = stored_arrays(connection, name, generation)
    new = ranked.arrays()
    same = all(len(old[key]) == len(new[key]) and np.array_equal(old[key], new[key], equal_nan=key == "scores")
               for key in new)
    if same:
        result.unchanged = result.read
        result.notes.append("The project already holds this run; nothing changed.")
        return True
    if replace:
        return False
    new_keys, old_keys = _entry_keys(new), _entry_keys(old)
    new_only = int(np.count_nonzero(~np.isin(new_keys, old_keys)))
    old_only = int(np.count_nonzero(~np.isin(old_keys, new_keys)))
    raise InputError(
        f"the project already has a run named '{name}' with other entries ({new_only:,} "
        f"of the file's entries are not in it, {old_only:,} of its entries are not in the "
        "file). Pass --replace to replace it, or --name to import under another name. "
        "Nothing was imported.", file=file)


def _entry_keys(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """One 64-bit key per entry of stored run arrays: its query, chunk, rank and score."""
    from ragjudge.metrics._keys import id_hash, mix, pair_hash

    queries = bulk.unpack_ids(arrays["query_ids"], arrays["query_ids_lengths"])
    chunks = bulk.unpack_ids(arrays["chunk_ids"], arrays["chunk_ids_lengths"])
    offsets = arrays["offsets"]
    counts = np.diff(offsets)
    qidx = np.repeat(np.arange(len(counts)), counts)
    ranks = np.arange(len(chunks)) - offsets[qidx] + 1
    keys = pair_hash(id_hash(queries)[qidx], chunks)
    keys = mix(keys, ranks.astype(np.uint64))
    scores = np.where(np.isnan(arrays["scores"]), np.inf, arrays["scores"])
    return mix(keys, scores.view(np.uint64))
