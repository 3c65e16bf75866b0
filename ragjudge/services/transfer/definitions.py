"""Importing definitions (queries, chunks, facets, nuggets, entities) and checking the ids
imported labels refer to.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any
from sqlalchemy import (
    Column, String, Table, Text, and_, exists, func, insert, literal, select, update,
)
from sqlalchemy.engine import Connection, CursorResult
from ragjudge.errors import InputError
from ragjudge.services.project.staging import ImportSession
from ragjudge.store.annotators import ensure_annotators
from ragjudge.store.schema import (
    Chunk, Entity,
    Facet, FacetLink, Nugget, NuggetSupport, Query, key_bytes, utcnow,
)
from ragjudge.services.transfer.idcheck import MAX_ID, IdCheck, check_long_ids, too_long, too_long_key  # noqa: F401 - re-exported
from ragjudge.services.transfer.common import FIRST_FEW, ImportResult, batches, check_annotator, json_text, temp_table


queries_table = Query.__table__


chunks_table = Chunk.__table__


class ReferenceCheck(IdCheck):
    """Checks that the query and chunk ids a file names exist; collects the missing ones (or
    creates empty placeholders for them with ``create_missing``)."""

    def __init__(self, connection: Connection, create_missing: bool, result: ImportResult) -> None:
        super().__init__(connection, create_missing, result)
        self._known_queries: set[str] = set()
        self.staged: list[tuple[str, Table, Any, Any]] = []

    def check(self, queries: dict[str, int], chunks: dict[str, int]) -> None:
        """``queries``/``chunks`` map the ids of a batch to the first line naming them."""
        for what, ids in (("query", queries), ("chunk", chunks)):
            for ident, line in ids.items():
                if too_long_key(ident):
                    raise InputError(f"the {what} id is {key_bytes(ident):,} bytes long (in UTF-8); "
                                     f"ids have at most {MAX_ID}.", file=self.result.file,
                                     line=line, field=f"{what}_id")
        unknown = {q: line for q, line in queries.items() if q not in self._known_queries}
        self._check("query", queries_table, unknown)
        self._known_queries.update(q for q in unknown if q not in self.missing["query"])
        self._check("chunk", chunks_table, chunks)

    def _check(self, what: str, table: Table, ids: dict[str, int]) -> None:
        if not ids:
            return
        wanted = [i for i in ids if i not in self.missing[what]]
        found: set[str] = set()
        for part in batches(wanted):
            found.update(self.connection.scalars(select(table.c.id).where(table.c.id.in_(part))))
        lacking = [i for i in wanted if i not in found]
        if not lacking:
            return
        if self.create_missing:
            self.connection.execute(insert(table), [{"id": i, "text": ""} for i in lacking])
            if what == "query":
                self.result.created_queries += len(lacking)
            else:
                self.result.created_chunks += len(lacking)
            return
        for i in lacking:
            self.missing[what][i] = ids[i]
        self.count[what] += len(lacking)

    def check_staged(self, stage: Table, pending: dict[str, Table] | None = None) -> None:
        """The same check, in SQL, over a staging table with ``line, query_id, chunk_id``
        (reads only: with ``create_missing`` the placeholders are made by
        :meth:`create_staged`, in the publishing transaction). ``pending``: the staged new
        queries and chunks of the same import, which count as in the project."""
        for what, table, column in (("query", queries_table, stage.c.query_id), ("chunk", chunks_table, stage.c.chunk_id)):
            absent = self._absent(what, table, column, pending)
            if self.connection.execute(select(column).where(absent).limit(1)).first() is None:
                continue  # the common case, found without grouping every line
            if self.create_missing:
                self.staged.append((what, table, column, absent))
                continue
            grouped = select(column.label("id"), func.min(stage.c.line).label("line")).where(absent).group_by(column)
            count = self.connection.scalar(select(func.count()).select_from(grouped.subquery()))
            if count:
                self.count[what] = count
                first = grouped.subquery()
                for row in self.connection.execute(select(first.c.id, first.c.line).order_by(first.c.line).limit(FIRST_FEW)):
                    self.missing[what][row.id] = row.line

    @staticmethod
    def _absent(what: str, table: Table, column: Any, pending: dict[str, Table] | None) -> Any:
        absent = ~exists().where(table.c.id == column)
        staged = (pending or {}).get("queries" if what == "query" else "chunks")
        if staged is not None:
            absent = and_(absent, ~exists().where(staged.c.id == column))
        return absent

    def create_staged(self, connection: Connection) -> None:
        """The placeholders :meth:`check_staged` found missing (in the publishing transaction)."""
        for what, table, column, absent in self.staged:
            missing = select(column).where(absent).distinct()
            count = connection.scalar(select(func.count()).select_from(missing.subquery()))
            if count:
                connection.execute(insert(table).from_select(
                    ["id", "text"], select(column, literal("")).where(absent).distinct()))
                if what == "query":
                    self.result.created_queries += count
                else:
                    self.result.created_chunks += count


_DEFINITION_COLUMNS = {"queries": ("text", "description", "category", "meta"),
                       "chunks": ("text", "doc_id", "meta")}


class DefinitionImport:
    """A queries or chunks file: compared with the project batch by batch (reads only), the new
    and the changed rows staged in temporary tables, then published in one transaction."""

    def __init__(self, session: ImportSession, kind: str, file: str, replace: bool,
                 result: ImportResult) -> None:
        self.session = session
        self.kind = kind
        self.file = file
        self.replace = replace
        self.result = result
        self.table = queries_table if kind == "queries" else chunks_table
        self.columns = _DEFINITION_COLUMNS[kind]
        types = {"text": Text, "description": Text, "category": String, "doc_id": String, "meta": Text}
        with session.stage() as connection:
            self.new = temp_table(connection, Column("id", String()),
                                   *(Column(c, types[c]) for c in self.columns))
            self.changed = temp_table(connection, Column("id", String()),
                                       *(Column(c, types[c]) for c in self.columns))
        self._sql = {}
        for name, table in (("new", self.new), ("changed", self.changed)):
            names = ("id", *self.columns)
            mark = "?" if session.sqlite else "%s"
            self._sql[name] = (table.name, names, f"INSERT INTO {table.name} ({', '.join(names)}) "
                                                  f"VALUES ({', '.join([mark] * len(names))})")

    def stage(self, records: Iterable[tuple[int, Any]]) -> None:
        kind, columns, result, file = self.kind, self.columns, self.result, self.file
        conflicts: list[tuple[int, str, str]] = []
        conflict_count = 0
        for batch in batches(records):
            result.read += len(batch)
            ids = [record.id for _, record in batch]
            new: list[tuple] = []
            changed: list[tuple] = []
            with self.session.read() as connection:
                existing = {row.id: row for row in connection.execute(
                    select(self.table.c.id, *(self.table.c[c] for c in columns))
                    .where(self.table.c.id.in_(ids)))}
            for line, record in batch:
                if too_long_key(record.id):
                    raise InputError(f"the id is {key_bytes(record.id):,} bytes long (in UTF-8); ids have "
                                     f"at most {MAX_ID}.", file=file, line=line, field="id")
                category = getattr(record, "category", None)
                if category is not None and too_long_key(category):
                    raise InputError(f"the category is {key_bytes(category):,} bytes long (in UTF-8); "
                                     f"a category has at most {MAX_ID}.", file=file, line=line,
                                     field="category")
                values = {c: getattr(record, c) for c in columns}
                row = existing.get(record.id)
                if row is None:
                    new.append(self._row(record.id, values))
                    continue
                differing = [c for c in columns if getattr(row, c) != values[c]]
                if not differing:
                    result.unchanged += 1
                elif self.replace or _is_placeholder(row, columns):
                    changed.append(self._row(record.id, values))
                else:
                    conflict_count += 1
                    if len(conflicts) < FIRST_FEW:
                        conflicts.append((line, record.id, differing[0]))
            with self.session.stage() as connection:
                for name, rows in (("new", new), ("changed", changed)):
                    if rows:
                        table, names, sql = self._sql[name]
                        self.session.write_rows(connection, sql, rows, table, names)
            result.added += len(new)
            result.updated += len(changed)
        if conflict_count:
            line, first_id, column = conflicts[0]
            listed = ", ".join(f"'{i}' (line {n}, {c})" for n, i, c in conflicts)
            raise InputError(
                f"{conflict_count:,} {kind} of the file differ from the project's under the same id "
                f"(first: {listed}). Pass --replace to update them. Nothing was imported.",
                file=file, line=line, field=column)
        if result.read == 0:
            result.notes.append("The file holds no records.")

    def _row(self, ident: str, values: dict[str, Any]) -> tuple:
        # meta as the JSON text the project's JSON column holds (SQL NULL when there is none)
        return (ident, *(None if c == "meta" and values[c] is None
                         else json.dumps(values[c]) if c == "meta" else values[c]
                         for c in self.columns))

    def publish(self, connection: Connection) -> None:
        """The staged rows into the project, from the temporary tables in SQL."""
        table, columns = self.table, self.columns
        meta = json_text(self.new.c.meta, connection)
        connection.execute(insert(table).from_select(
            ["id", *columns], select(self.new.c.id, *(self.new.c[c] if c != "meta" else meta
                                                     for c in columns))))
        if self.result.updated:
            values = {c: select(self.changed.c[c] if c != "meta" else json_text(self.changed.c.meta, connection))
                      .where(self.changed.c.id == table.c.id).scalar_subquery() for c in columns}
            connection.execute(update(table).where(table.c.id.in_(select(self.changed.c.id)))
                               .values(values))


def _is_placeholder(row: Any, columns: tuple[str, ...]) -> bool:
    return row.text == "" and all(getattr(row, c) is None for c in columns if c != "text")


def refs_of(refs: ReferenceCheck, records: list[tuple[int, Any]], chunk_fields: Callable[[Any], Iterable[str]]) -> None:
    queries: dict[str, int] = {}
    chunks: dict[str, int] = {}
    for line, record in records:
        queries.setdefault(record.query_id, line)
        for chunk_id in chunk_fields(record):
            chunks.setdefault(chunk_id, line)
    refs.check(queries, chunks)


def _judgment_lines(connection: Connection, records: Iterable[tuple[int, Any]], file: str,
                    annotator: str, refs: ReferenceCheck, result: ImportResult,
                    ) -> tuple[list[tuple[int, Any]], dict[int, str]]:
    """Facet and nugget lines: checked references, and each line's annotator (its own, else
    ``annotator``), who exist afterwards when the line judges a chunk."""
    items = list(records)
    result.read = len(items)
    refs_of(refs, items, lambda r: [r.chunk_id] if r.chunk_id else [])
    refs.raise_if_missing(file)
    who_of = {line: check_annotator(r.annotator, file=file, line=line) if r.annotator else annotator
              for line, r in items}
    ensure_annotators(connection, {who_of[line] for line, r in items if r.chunk_id})
    return items, who_of


def import_facets(connection: Connection, records: Iterable[tuple[int, Any]], file: str,
                   annotator: str, refs: ReferenceCheck, result: ImportResult) -> None:
    facets_t, links_t = Facet.__table__, FacetLink.__table__
    items, who_of = _judgment_lines(connection, records, file, annotator, refs, result)
    query_ids = sorted({r.query_id for _, r in items})
    facet_ids: dict[tuple[str, str], int] = {}
    for part in batches(query_ids):
        for row in connection.execute(select(facets_t.c.id, facets_t.c.query_id, facets_t.c.name)
                                      .where(facets_t.c.query_id.in_(part), facets_t.c.removed.is_(False))
                                      .order_by(facets_t.c.id)):
            facet_ids.setdefault((row.query_id, row.name), row.id)
    for line, record in items:
        key = (record.query_id, record.facet)
        created = False
        if key not in facet_ids:
            facet_ids[key] = new_id(connection.execute(insert(facets_t).values(
                query_id=record.query_id, name=record.facet, removed=False, created_at=utcnow())))
            created = True
        if record.chunk_id is None:
            if created:
                result.added += 1
            else:
                result.unchanged += 1
            continue
        who = who_of[line]
        current = connection.scalar(
            select(links_t.c.covered).where(links_t.c.facet_id == facet_ids[key],
                                            links_t.c.chunk_id == record.chunk_id,
                                            links_t.c.annotator == who)
            .order_by(links_t.c.id.desc()).limit(1))
        if current is not None and bool(current) == record.covered:
            result.unchanged += 1
            continue
        connection.execute(insert(links_t).values(facet_id=facet_ids[key], chunk_id=record.chunk_id,
                                                  annotator=who, covered=record.covered,
                                                  created_at=utcnow()))
        result.added += 1


def import_nuggets(connection: Connection, records: Iterable[tuple[int, Any]], file: str,
                    annotator: str, refs: ReferenceCheck, result: ImportResult) -> None:
    nuggets_t, support_t = Nugget.__table__, NuggetSupport.__table__
    items, who_of = _judgment_lines(connection, records, file, annotator, refs, result)
    known: dict[tuple[str, str], Any] = {}
    for part in batches(sorted({r.query_id for _, r in items})):
        for found in connection.execute(select(nuggets_t).where(nuggets_t.c.query_id.in_(part),
                                                                nuggets_t.c.removed.is_(False))
                                        .order_by(nuggets_t.c.id)):
            known.setdefault((found.query_id, found.text), found)
    attributes = ("importance", "kind", "weight")
    updated: set[int] = set()
    for line, record in items:
        key = (record.query_id, record.nugget)
        given = {a: getattr(record, a) for a in attributes if a in record.model_fields_set}
        row = known.get(key)
        changed = False
        if row is None:
            values = {a: getattr(record, a) for a in attributes}
            nugget_id = new_id(connection.execute(insert(nuggets_t).values(
                query_id=record.query_id, text=record.nugget, removed=False, created_at=utcnow(),
                **values)))
            known[key] = row = _Row(id=nugget_id, **values)
            changed = True
        else:
            different = {a: v for a, v in given.items() if getattr(row, a) != v}
            if different:
                connection.execute(update(nuggets_t).where(nuggets_t.c.id == row.id).values(**different))
                known[key] = row = _Row(id=row.id, **{a: different.get(a, getattr(row, a)) for a in attributes})
                if row.id not in updated:
                    updated.add(row.id)
                    result.updated += 1
        if record.chunk_id is not None:
            who = who_of[line]
            current = connection.scalar(
                select(support_t.c.support).where(support_t.c.nugget_id == row.id,
                                                  support_t.c.chunk_id == record.chunk_id,
                                                  support_t.c.annotator == who)
                .order_by(support_t.c.id.desc()).limit(1))
            if current != record.support:
                connection.execute(insert(support_t).values(
                    nugget_id=row.id, chunk_id=record.chunk_id, annotator=who,
                    support=record.support, created_at=utcnow()))
                changed = True
        if changed:
            result.added += 1
        else:
            result.unchanged += 1


class _Row:
    id: int

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)


def new_id(result: CursorResult[Any]) -> int:
    """The id of the one row an INSERT added."""
    key = result.inserted_primary_key
    if key is None:  # pragma: no cover - a one-row INSERT always reports its key
        raise RuntimeError("the database reported no id for an inserted row")
    return key[0]


def import_entities(connection: Connection, records: Iterable[tuple[int, Any]], file: str,
                     refs: ReferenceCheck, result: ImportResult) -> None:
    entities_t = Entity.__table__
    items = list(records)
    result.read = len(items)
    refs_of(refs, items, lambda r: [])
    refs.raise_if_missing(file)
    have: set[tuple[str, str]] = set()
    for part in batches(sorted({r.query_id for _, r in items})):
        have.update((q, t) for q, t in connection.execute(
            select(entities_t.c.query_id, entities_t.c.text).where(entities_t.c.query_id.in_(part))))
    new = []
    for _, record in items:
        key = (record.query_id, record.entity)
        if key in have:
            result.unchanged += 1
            continue
        have.add(key)
        new.append({"query_id": record.query_id, "text": record.entity, "created_at": utcnow()})
    if new:
        connection.execute(insert(entities_t), new)
    result.added = len(new)
