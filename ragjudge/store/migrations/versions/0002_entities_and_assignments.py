"""entities and assignments

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 01:18:34.615321
"""
from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('assignments',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('annotator', sa.String(length=255), nullable=False),
    sa.Column('query_id', sa.String(length=255), nullable=False),
    sa.Column('chunk_id', sa.String(length=255), nullable=False),
    sa.Column('overlap', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['annotator'], ['annotators.name'], name=op.f('fk_assignments_annotator_annotators')),
    sa.ForeignKeyConstraint(['chunk_id'], ['chunks.id'], name=op.f('fk_assignments_chunk_id_chunks')),
    sa.ForeignKeyConstraint(['query_id'], ['queries.id'], name=op.f('fk_assignments_query_id_queries')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_assignments')),
    sa.UniqueConstraint('annotator', 'query_id', 'chunk_id', name='uq_assignments_pair')
    )
    with op.batch_alter_table('assignments', schema=None) as batch_op:
        batch_op.create_index('ix_assignments_pair', ['query_id', 'chunk_id'], unique=False)

    op.create_table('entities',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('query_id', sa.String(length=255), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['query_id'], ['queries.id'], name=op.f('fk_entities_query_id_queries')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_entities'))
    )
    with op.batch_alter_table('entities', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_entities_query_id'), ['query_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('entities', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_entities_query_id'))

    op.drop_table('entities')
    with op.batch_alter_table('assignments', schema=None) as batch_op:
        batch_op.drop_index('ix_assignments_pair')

    op.drop_table('assignments')
