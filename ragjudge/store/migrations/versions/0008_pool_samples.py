"""samples of the judging pool

Revision ID: 0008
Revises: 0007
Create Date: 2027-01-10 09:00:00.000000

``pool_samples`` keeps each sample ``ragjudge assign --sample`` drew (strategy, pairs per query,
seed, the pool's depth and runs, the rank bands), ``pool_sample_pairs`` every pooled pair of
it with its best rank, stratum, inclusion probability and whether it was drawn. Both are
append-only; the newest sample is the current one. A column referencing an id takes the type
that id has in the database being upgraded, as a foreign key must.
"""
from typing import Any

from alembic import op
import sqlalchemy as sa


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def _key_type(table: str, column: str) -> Any:
    """The type of ``table.column`` as the database being upgraded holds it."""
    for reflected in sa.inspect(op.get_bind()).get_columns(table):
        if reflected['name'] == column:
            return reflected['type']
    raise LookupError(f'{table}.{column}')


def upgrade() -> None:
    op.create_table('pool_samples',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('strategy', sa.String(length=16), nullable=False),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('seed', sa.BigInteger(), nullable=False),
    sa.Column('depth', sa.Integer(), nullable=False),
    sa.Column('bands', sa.JSON(), nullable=False),
    sa.Column('runs', sa.JSON(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.CheckConstraint("strategy IN ('uniform', 'stratified')", name=op.f('ck_pool_samples_strategy')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_pool_samples'))
    )
    op.create_table('pool_sample_pairs',
    sa.Column('sample_id', sa.Integer(), nullable=False),
    sa.Column('query_id', _key_type('queries', 'id'), nullable=False),
    sa.Column('chunk_id', _key_type('chunks', 'id'), nullable=False),
    sa.Column('rank', sa.Integer(), nullable=False),
    sa.Column('stratum', sa.Integer(), nullable=False),
    sa.Column('inclusion', sa.Float(), nullable=False),
    sa.Column('drawn', sa.Boolean(), nullable=False),
    sa.ForeignKeyConstraint(['chunk_id'], ['chunks.id'], name=op.f('fk_pool_sample_pairs_chunk_id_chunks')),
    sa.ForeignKeyConstraint(['query_id'], ['queries.id'], name=op.f('fk_pool_sample_pairs_query_id_queries')),
    sa.ForeignKeyConstraint(['sample_id'], ['pool_samples.id'], name=op.f('fk_pool_sample_pairs_sample_id_pool_samples')),
    sa.PrimaryKeyConstraint('sample_id', 'query_id', 'chunk_id', name=op.f('pk_pool_sample_pairs'))
    )


def downgrade() -> None:
    op.drop_table('pool_sample_pairs')
    op.drop_table('pool_samples')
