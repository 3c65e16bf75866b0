"""The import and export services on every database (SQLite always; PostgreSQL when
RAGJUDGE_TEST_PG names a server): rollback, byte-order ties, duplicates, idempotence."""

from __future__ import annotations

import io
import json

import pytest
from projectkit import make_small_project, rights
from sqlalchemy import select

from ragjudge.errors import InputError
from ragjudge.services.transfer.exporting import export
from ragjudge.services.transfer.importing import import_file
from ragjudge.store.schema import Base


def rows(project) -> dict:
    with project.connect() as connection:
        return {table.name: sorted(map(repr, connection.execute(select(table))))
                for table in Base.metadata.sorted_tables}


@pytest.fixture
def small(any_db):
    project = make_small_project(any_db)
    yield project
    project.close()


def test_ties_are_broken_by_chunk_id_bytes_descending(small):
    text = io.StringIO("q1 Q0 c02 1 0.5 r\nq1 Q0 c10 2 0.5 r\nq1 Q0 c03 3 0.9 r\nq1 Q0 c01 4 0.5 r\n")
    import_file(small, "run", text, name="tied", fmt="trec")
    out = io.StringIO()
    export(small, "run", out, name="tied", access=rights(small))
    assert [line.split()[2] for line in out.getvalue().splitlines()] == ["c03", "c10", "c02", "c01"]


def test_failed_imports_leave_every_table_as_it_was(small):
    before = rows(small)
    bad = [
        ("run", "q1 Q0 c01 1 1 r\nq1 Q0 c01 2 0.5 r\n", {"name": "dup"}, "appears twice"),
        ("run", "q1 Q0 c01 1 1 r\nq7 Q0 c02 1 1 r\n", {"name": "unknown"}, "not in the project"),
        ("run", "q1 Q0 c01 1 1 r\nq1 Q0 zz 1 1 r\nq1 Q0 c01 3 1 r\n", {"name": "x", "create_missing": True}, "twice"),
        ("qrels", "q1 0 c01 1\nq1 0 c02 9\n", {}, "off the project's scale"),
        ("run", "q1 Q0 c01 1 1 r\n", {"name": "bm25"}, "already has a run"),
    ]
    for kind, text, options, words in bad:
        with pytest.raises(InputError, match=words):
            import_file(small, kind, io.StringIO(text), fmt="trec", **options)
        assert rows(small) == before, (kind, words)


@pytest.mark.slow
def test_reimports_change_nothing_and_a_changed_label_is_an_event(small):
    labels = "".join(json.dumps(x) + "\n" for x in [
        {"query_id": "q1", "chunk_id": "c01", "grade": 2, "annotator": "a", "note": "ok"},
        {"query_id": "q2", "chunk_id": "c02", "grade": 0}])
    first = import_file(small, "labels", io.StringIO(labels), fmt="jsonl")
    assert (first.added, first.unchanged) == (2, 0)
    snapshot = rows(small)
    again = import_file(small, "labels", io.StringIO(labels), fmt="jsonl")
    assert (again.added, again.unchanged) == (0, 2)
    assert rows(small) == snapshot
    run = "q1 Q0 c05 1 2.0 r\nq1 Q0 c06 2 1.0 r\n"
    import_file(small, "run", io.StringIO(run), name="new", fmt="trec")
    snapshot = rows(small)
    assert import_file(small, "run", io.StringIO(run), name="new", fmt="trec").unchanged == 2
    assert rows(small) == snapshot
    changed = import_file(small, "labels", io.StringIO(labels.replace('"grade": 2', '"grade": 3')), fmt="jsonl")
    assert (changed.added, changed.unchanged) == (1, 1)
    out = io.StringIO()
    export(small, "qrels", out, rule="max", access=rights(small))
    assert "q1 0 c01 3" in out.getvalue().splitlines()
