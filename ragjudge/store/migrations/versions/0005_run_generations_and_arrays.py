"""runs published by generation; a run's arrays stored with it; run imports under way

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-08 09:00:00.000000

An import writes a run's entries in short transactions under a new ``generation`` and publishes
them by setting ``runs.generation`` in one small transaction, so that annotators labelling
meanwhile never wait for it; readers select the entries of the published generation only.
``run_entries`` gets the ``generation`` column in its primary key and loses the foreign key from
``run`` to ``runs`` (the entries of a new run exist before the run does).
``run_arrays`` holds each run's entries as numpy arrays (filled for the runs already in the
project here); ``run_imports`` lists the imports under way, so that what a killed one wrote is
found and removed.
"""
from __future__ import annotations

import numpy as np
import sqlalchemy as sa
from alembic import op


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('generation', sa.Integer(), server_default='0', nullable=False))
    if bind.dialect.name == 'sqlite':
        _rebuild_sqlite_entries()
    else:
        op.add_column('run_entries', sa.Column('generation', sa.Integer(), server_default='0', nullable=False))
        op.drop_constraint('fk_run_entries_run_runs', 'run_entries', type_='foreignkey')
        op.drop_constraint('pk_run_entries', 'run_entries', type_='primary')
        op.create_primary_key('pk_run_entries', 'run_entries', ['run', 'generation', 'query_id', 'chunk_id'])
    op.create_table('run_arrays',
    sa.Column('run', sa.String(), nullable=False),
    sa.Column('generation', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=32), nullable=False),
    sa.Column('part', sa.Integer(), nullable=False),
    sa.Column('dtype', sa.String(length=16), nullable=False),
    sa.Column('data', sa.LargeBinary(), nullable=False),
    sa.PrimaryKeyConstraint('run', 'generation', 'name', 'part', name=op.f('pk_run_arrays'))
    )
    op.create_table('run_imports',
    sa.Column('generation', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('run', sa.String(), nullable=False),
    sa.Column('replaces', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('generation', name=op.f('pk_run_imports'))
    )
    _store_arrays(bind)


def _rebuild_sqlite_entries() -> None:
    """SQLite cannot change a primary key in place: the entries move to a new table of the new
    shape, which then takes the old one's name."""
    op.execute(
        "CREATE TABLE run_entries_0005 ("
        "run VARCHAR NOT NULL, query_id VARCHAR NOT NULL, chunk_id VARCHAR NOT NULL, "
        "rank INTEGER NOT NULL, score FLOAT, generation INTEGER DEFAULT '0' NOT NULL, "
        "CONSTRAINT pk_run_entries PRIMARY KEY (run, generation, query_id, chunk_id), "
        "CONSTRAINT fk_run_entries_query_id_queries FOREIGN KEY(query_id) REFERENCES queries (id), "
        "CONSTRAINT fk_run_entries_chunk_id_chunks FOREIGN KEY(chunk_id) REFERENCES chunks (id))")
    op.execute("INSERT INTO run_entries_0005 (run, query_id, chunk_id, rank, score, generation) "
               "SELECT run, query_id, chunk_id, rank, score, 0 FROM run_entries "
               "ORDER BY run, query_id, chunk_id")
    op.execute("DROP INDEX IF EXISTS ix_run_entries_query_rank")
    op.execute("DROP TABLE run_entries")
    op.execute("ALTER TABLE run_entries_0005 RENAME TO run_entries")
    op.execute("CREATE INDEX ix_run_entries_query_rank ON run_entries (query_id, rank)")


# How this revision stored a run's arrays (a migration is history: it carries its own code, so
# that a later change to ragjudge's array storage never changes what an old upgrade wrote).
_PART_BYTES = 4 << 20


def _pack_ids(ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(bytes, lengths)``: the ids' UTF-8 bytes concatenated (uint8) and their lengths (uint16)."""
    encoded = [i.encode("utf-8", "surrogatepass") for i in ids]
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    return data, np.fromiter(map(len, encoded), dtype=np.uint16, count=len(encoded))


def arrays_from_rows(rows: list) -> dict[str, np.ndarray]:
    """The arrays of a run from its rows ``(query_id, chunk_id, rank, score)``."""
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
    q_bytes, q_lengths = _pack_ids(queries)
    c_bytes, c_lengths = _pack_ids([r[1] for r in keyed])
    scores = np.array([np.nan if r[3] is None else r[3] for r in keyed], dtype=np.float64)
    return {"query_ids": q_bytes, "query_ids_lengths": q_lengths,
            "offsets": np.array(offsets, dtype=np.int64), "chunk_ids": c_bytes,
            "chunk_ids_lengths": c_lengths, "scores": scores}


def write_arrays(bind, run: str, generation: int, arrays: dict[str, np.ndarray]) -> None:  # noqa: ANN001
    """Store each array in pieces of at most ``_PART_BYTES`` rows of ``run_arrays``."""
    table = sa.table('run_arrays', sa.column('run', sa.String()), sa.column('generation', sa.Integer()),
                     sa.column('name', sa.String()), sa.column('part', sa.Integer()),
                     sa.column('dtype', sa.String()), sa.column('data', sa.LargeBinary()))
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        raw = array.view(np.uint8).reshape(-1).data if array.size else memoryview(b"")
        step = max(array.itemsize, _PART_BYTES - _PART_BYTES % max(array.itemsize, 1))
        parts = [raw[at:at + step] for at in range(0, len(raw), step)] or [raw]
        bind.execute(sa.insert(table), [
            {"run": run, "generation": generation, "name": name, "part": i,
             "dtype": array.dtype.str, "data": bytes(part)} for i, part in enumerate(parts)])


def _store_arrays(bind) -> None:  # noqa: ANN001
    """The arrays of every run already in the project, as the import now writes them."""
    runs = [row[0] for row in bind.execute(sa.text("SELECT name FROM runs ORDER BY name"))]
    for name in runs:
        rows = bind.execute(sa.text(
            "SELECT query_id, chunk_id, rank, score FROM run_entries WHERE run = :run "
            "ORDER BY query_id, rank"), {"run": name}).all()
        write_arrays(bind, name, 0, arrays_from_rows(rows))


def downgrade() -> None:
    bind = op.get_bind()
    op.drop_table('run_imports')
    op.drop_table('run_arrays')
    if bind.dialect.name == 'sqlite':
        op.execute(
            "CREATE TABLE run_entries_0003 ("
            "run VARCHAR NOT NULL, query_id VARCHAR NOT NULL, chunk_id VARCHAR NOT NULL, "
            "rank INTEGER NOT NULL, score FLOAT, "
            "CONSTRAINT pk_run_entries PRIMARY KEY (run, query_id, chunk_id), "
            "CONSTRAINT fk_run_entries_run_runs FOREIGN KEY(run) REFERENCES runs (name) ON DELETE CASCADE, "
            "CONSTRAINT fk_run_entries_query_id_queries FOREIGN KEY(query_id) REFERENCES queries (id), "
            "CONSTRAINT fk_run_entries_chunk_id_chunks FOREIGN KEY(chunk_id) REFERENCES chunks (id))")
        op.execute("INSERT INTO run_entries_0003 SELECT e.run, e.query_id, e.chunk_id, e.rank, e.score "
                   "FROM run_entries e JOIN runs r ON r.name = e.run AND r.generation = e.generation")
        op.execute("DROP INDEX IF EXISTS ix_run_entries_query_rank")
        op.execute("DROP TABLE run_entries")
        op.execute("ALTER TABLE run_entries_0003 RENAME TO run_entries")
        op.execute("CREATE INDEX ix_run_entries_query_rank ON run_entries (query_id, rank)")
    else:
        op.execute("DELETE FROM run_entries e WHERE NOT EXISTS (SELECT 1 FROM runs r "
                   "WHERE r.name = e.run AND r.generation = e.generation)")
        op.drop_constraint('pk_run_entries', 'run_entries', type_='primary')
        op.drop_column('run_entries', 'generation')
        op.create_primary_key('pk_run_entries', 'run_entries', ['run', 'query_id', 'chunk_id'])
        op.create_foreign_key('fk_run_entries_run_runs', 'run_entries', 'runs', ['run'], ['name'],
                              ondelete='CASCADE')
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_column('generation')
