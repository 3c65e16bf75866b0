"""Bulk reads of the evaluation services (driver cursor into numpy arrays) give exactly what the
plain SQL reads give: runs in rank order, and the current labels."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from sqlalchemy import select

from ragjudge.services.runs import stored as ev_stored
from ragjudge.services.scoring import evaluation as ev_evaluation
from ragjudge.services.runs.head import rows_depth
from ragjudge.store.schema import Run


def _reference_run(db: str, name: str) -> dict[str, list[str]]:
    """{query: [chunk, ...]} straight from SQLite, ordered by rank (ties: none in these runs)."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT query_id, chunk_id FROM run_entries WHERE run = ? "
                           "ORDER BY query_id, rank", (name,)).fetchall()
    finally:
        con.close()
    out: dict[str, list[str]] = {}
    for q, c in rows:
        out.setdefault(q, []).append(c)
    return out


def test_project_runs_equal_the_rank_ordered_rows(demo, demo_db):
    names = ev_stored.project_run_names(demo)
    assert len(names) >= 2
    deeper = 0
    for name in names:
        # the whole run (its arrays), down to the ranks the import kept as rows (its head)
        with demo.connect() as connection:
            head = rows_depth(connection.scalar(select(Run.meta).where(Run.name == name)))
        assert head is not None
        whole = ev_stored.project_run(demo, name).to_ranked()
        deeper += sum(len(cs) > head for cs in whole.values())
        assert {q: cs[:head] for q, cs in whole.items()} == _reference_run(demo_db, name)
        with demo.connect() as connection:
            generic = ev_stored._read_run_rows(connection, name, batch=7)  # the non-SQLite path
        assert list(generic[0]) == [q for q, cs in _reference_run(demo_db, name).items() for _ in cs]
        assert list(generic[1]) == [c for cs in _reference_run(demo_db, name).values() for c in cs]
    assert deeper, "no demo run goes deeper than its rows: the head is not exercised"


def test_ranks_not_in_row_order_and_a_separator_in_a_chunk_id(demo, demo_db):
    """Rows inserted out of rank order come back in rank order; a chunk id holding the byte
    the bulk read splits on makes it fall back to the row-by-row read, with the same result."""
    con = sqlite3.connect(demo_db)
    try:
        query = con.execute("SELECT id FROM queries ORDER BY id LIMIT 1").fetchone()[0]
        chunks = [r[0] for r in con.execute("SELECT id FROM chunks ORDER BY id DESC LIMIT 4")]
        con.execute("INSERT INTO runs (name, created_at) VALUES ('odd', '2026-01-01 00:00:00')")
        for rank, chunk in zip((3, 1, 4, 2), chunks):
            con.execute("INSERT INTO run_entries (run, query_id, chunk_id, rank) VALUES "
                        "('odd', ?, ?, ?)", (query, chunk, rank))
        con.commit()
        run = ev_stored.project_run(demo, "odd")
        assert run.to_ranked() == {query: [chunks[1], chunks[3], chunks[0], chunks[2]]}
        with demo.connect() as connection:
            assert ev_stored._read_run_sqlite(connection, "odd") is not None
        con.execute("INSERT INTO chunks (id, text) VALUES ('x\x1fy', 'odd id')")
        con.execute("INSERT INTO run_entries (run, query_id, chunk_id, rank) VALUES "
                    "('odd', ?, 'x\x1fy', 5)", (query,))
        con.commit()
    finally:
        con.close()
    with demo.connect() as connection:
        assert ev_stored._read_run_sqlite(connection, "odd") is None
        # the driver's connection is given back as it was: text read as str again
        assert isinstance(connection.exec_driver_sql("SELECT id FROM queries LIMIT 1").scalar(), str)
    run = ev_stored.project_run(demo, "odd")
    assert run.to_ranked() == {query: [chunks[1], chunks[3], chunks[0], chunks[2], "x\x1fy"]}
    assert np.array_equal(run.offsets, [0, 5])


def test_current_labels_through_the_driver_equal_the_core_select(demo):
    from sqlalchemy import select

    from ragjudge.services.labels import events as judging
    from ragjudge.services.events import labels as Q
    from ragjudge.store.schema import Label

    # a newer grade, a blind re-check (ignored) and a pair whose newest event has no grade
    judging.record_label(demo, annotator="ana", query_id="q03", chunk_id="lost-04", grade=3)
    judging.record_label(demo, annotator="ben", query_id="q03", chunk_id="lost-04", grade=0,
                         source="recheck")
    with demo.connect() as connection:
        annotators = sorted({a for a in Q.current_labels(connection).annotators.tolist()})
        assert len(annotators) >= 2
        for who in (None, *annotators, "nobody"):
            newest = Q.newest_label_ids()
            stmt = (select(Label.query_id, Label.chunk_id, Label.annotator, Label.grade)
                    .join(newest, Label.id == newest.c.id).where(Label.grade.is_not(None))
                    .order_by(Label.query_id, Label.chunk_id, Label.annotator))
            if who is not None:
                stmt = stmt.where(Label.annotator == who)
            expected = [tuple(r) for r in connection.execute(stmt).all()]
            got = Q.current_labels(connection, annotator=who)
            assert list(zip(got.query_ids.tolist(), got.chunk_ids.tolist(), got.annotators.tolist(),
                            got.grades.tolist())) == expected
            assert Q.raw_rows(connection, stmt) == expected
            assert got.query_ids.dtype == object and got.grades.dtype == np.int64
        assert ("q03", "lost-04", "ana", 3) in Q.raw_rows(
            connection, select(Label.query_id, Label.chunk_id, Label.annotator, Label.grade)
            .where(Label.annotator == "ana", Label.query_id == "q03"))


def test_ids_encoded_in_bulk_equal_the_metrics_encoding():
    from ragjudge.metrics import _keys
    from ragjudge.services.scoring.livecore import encode_id_runs as _encode_runs, encode_ids as _encode

    for values in (["q1", "bb", "c" * 15], ["é-1", "x"], ["abcdefgh"], ["a" * 9, "b"], [],
                   ["q1", "q1", "q2", "q1", "é", "é", "é"]):
        expected = _keys.as_ids(values)
        for encode in (_encode, _encode_runs):
            got = encode(np.array(values, dtype=object))
            assert got.dtype == expected.dtype and got.tolist() == expected.tolist(), values


@pytest.mark.slow
def test_driver_reads_on_every_database(any_db):
    """The cursor-level reads (runs, current labels, the live engine's per-label reads) on
    SQLite and on PostgreSQL (``%s`` parameters), against ``ragjudge eval``'s numbers."""
    import math
    import random

    from projectkit import make_small_project

    from ragjudge.services.labels import events as judging
    from ragjudge.services.scoring import live

    project = make_small_project(any_db)
    try:
        run = ev_stored.project_run(project, "bm25")
        assert sorted(run.to_ranked()) == [f"q{i}" for i in range(1, 6)]
        assert all(len(v) == 10 for v in run.to_ranked().values())
        with project.connect() as connection:
            rows = ev_stored._read_run_rows(connection, "bm25", 3)
        assert list(rows[1]) == [c for q in sorted(run.to_ranked()) for c in run.to_ranked()[q]]
        rnd = random.Random(2)
        ranked = run.to_ranked()
        for _ in range(12):
            q = rnd.choice(sorted(ranked))
            judging.record_label(project, annotator=rnd.choice(["ana", "ben"]), query_id=q,
                                 chunk_id=rnd.choice(ranked[q]), grade=rnd.randint(0, 3))
        engine = live.LiveEvaluation(project, measures=["P@5", "nDCG@10", "AP"])
        engine.load()
        for _ in range(5):
            q = rnd.choice(sorted(ranked))
            judging.record_label(project, annotator="ana", query_id=q, chunk_id=ranked[q][0],
                                 grade=rnd.randint(0, 3))
            assert engine.poll()
        qrels, rule = ev_evaluation.project_qrels(project)
        expected = ev_evaluation.evaluate_all(qrels, {"bm25": ev_stored.project_run(project, "bm25")},
                                   ["P@5", "nDCG@10", "AP"], threshold=engine.threshold,
                                   project=project, rule=rule)
        for m, value in expected.aggregate("bm25").items():
            got = engine.snapshot().means["bm25"][m]
            assert got == value or (math.isnan(got) and math.isnan(value)), m
    finally:
        project.close()
