"""first schema

Revision ID: 0001
Revises:
Create Date: 2026-11-22 01:18:33.759272
"""
from alembic import op
import sqlalchemy as sa


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('annotators',
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('seen_guidelines', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_annotators'))
    )
    op.create_table('chunks',
    sa.Column('id', sa.String(length=255), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('doc_id', sa.String(length=255), nullable=True),
    sa.Column('meta', sa.JSON(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_chunks'))
    )
    op.create_table('queries',
    sa.Column('id', sa.String(length=255), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('category', sa.String(length=255), nullable=True),
    sa.Column('meta', sa.JSON(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_queries'))
    )
    with op.batch_alter_table('queries', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_queries_category'), ['category'], unique=False)

    op.create_table('runs',
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('meta', sa.JSON(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_runs'))
    )
    op.create_table('settings',
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('value', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_settings'))
    )
    op.create_table('adjudications',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('query_id', sa.String(length=255), nullable=False),
    sa.Column('chunk_id', sa.String(length=255), nullable=False),
    sa.Column('grade', sa.Integer(), nullable=False),
    sa.Column('by', sa.String(length=255), nullable=False),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['chunk_id'], ['chunks.id'], name=op.f('fk_adjudications_chunk_id_chunks')),
    sa.ForeignKeyConstraint(['query_id'], ['queries.id'], name=op.f('fk_adjudications_query_id_queries')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_adjudications'))
    )
    with op.batch_alter_table('adjudications', schema=None) as batch_op:
        batch_op.create_index('ix_adjudications_pair', ['query_id', 'chunk_id'], unique=False)

    op.create_table('answers',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('query_id', sa.String(length=255), nullable=False),
    sa.Column('run', sa.String(length=255), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['query_id'], ['queries.id'], name=op.f('fk_answers_query_id_queries')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_answers')),
    sa.UniqueConstraint('query_id', 'run', name='uq_answers_query_run')
    )
    op.create_table('facets',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('query_id', sa.String(length=255), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('removed', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['query_id'], ['queries.id'], name=op.f('fk_facets_query_id_queries')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_facets'))
    )
    with op.batch_alter_table('facets', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_facets_query_id'), ['query_id'], unique=False)

    op.create_table('labels',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('query_id', sa.String(length=255), nullable=False),
    sa.Column('chunk_id', sa.String(length=255), nullable=False),
    sa.Column('annotator', sa.String(length=255), nullable=False),
    sa.Column('grade', sa.Integer(), nullable=True),
    sa.Column('skipped', sa.Boolean(), nullable=False),
    sa.Column('flagged', sa.Boolean(), nullable=False),
    sa.Column('note', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('duration_ms', sa.Integer(), nullable=True),
    sa.Column('undoes', sa.Integer(), nullable=True),
    sa.Column('source', sa.String(length=32), nullable=True),
    sa.ForeignKeyConstraint(['annotator'], ['annotators.name'], name=op.f('fk_labels_annotator_annotators')),
    sa.ForeignKeyConstraint(['chunk_id'], ['chunks.id'], name=op.f('fk_labels_chunk_id_chunks')),
    sa.ForeignKeyConstraint(['query_id'], ['queries.id'], name=op.f('fk_labels_query_id_queries')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_labels'))
    )
    with op.batch_alter_table('labels', schema=None) as batch_op:
        batch_op.create_index('ix_labels_annotator_pair', ['annotator', 'query_id', 'chunk_id', 'id'], unique=False)
        batch_op.create_index('ix_labels_pair', ['query_id', 'chunk_id'], unique=False)

    op.create_table('nuggets',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('query_id', sa.String(length=255), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('importance', sa.String(length=8), nullable=False),
    sa.Column('kind', sa.String(length=8), nullable=False),
    sa.Column('weight', sa.Float(), nullable=False),
    sa.Column('removed', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['query_id'], ['queries.id'], name=op.f('fk_nuggets_query_id_queries')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_nuggets'))
    )
    with op.batch_alter_table('nuggets', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_nuggets_query_id'), ['query_id'], unique=False)

    op.create_table('run_entries',
    sa.Column('run', sa.String(length=255), nullable=False),
    sa.Column('query_id', sa.String(length=255), nullable=False),
    sa.Column('chunk_id', sa.String(length=255), nullable=False),
    sa.Column('rank', sa.Integer(), nullable=False),
    sa.Column('score', sa.Float(), nullable=True),
    sa.ForeignKeyConstraint(['chunk_id'], ['chunks.id'], name=op.f('fk_run_entries_chunk_id_chunks')),
    sa.ForeignKeyConstraint(['query_id'], ['queries.id'], name=op.f('fk_run_entries_query_id_queries')),
    sa.ForeignKeyConstraint(['run'], ['runs.name'], name=op.f('fk_run_entries_run_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run', 'query_id', 'chunk_id', name=op.f('pk_run_entries'))
    )
    with op.batch_alter_table('run_entries', schema=None) as batch_op:
        batch_op.create_index('ix_run_entries_query_rank', ['query_id', 'rank'], unique=False)

    op.create_table('citations',
    sa.Column('answer_id', sa.Integer(), nullable=False),
    sa.Column('chunk_id', sa.String(length=255), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['answer_id'], ['answers.id'], name=op.f('fk_citations_answer_id_answers'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['chunk_id'], ['chunks.id'], name=op.f('fk_citations_chunk_id_chunks')),
    sa.PrimaryKeyConstraint('answer_id', 'chunk_id', name=op.f('pk_citations'))
    )
    op.create_table('facet_links',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('facet_id', sa.Integer(), nullable=False),
    sa.Column('chunk_id', sa.String(length=255), nullable=False),
    sa.Column('annotator', sa.String(length=255), nullable=False),
    sa.Column('covered', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['annotator'], ['annotators.name'], name=op.f('fk_facet_links_annotator_annotators')),
    sa.ForeignKeyConstraint(['chunk_id'], ['chunks.id'], name=op.f('fk_facet_links_chunk_id_chunks')),
    sa.ForeignKeyConstraint(['facet_id'], ['facets.id'], name=op.f('fk_facet_links_facet_id_facets')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_facet_links'))
    )
    with op.batch_alter_table('facet_links', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_facet_links_facet_id'), ['facet_id'], unique=False)

    op.create_table('nugget_support',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('nugget_id', sa.Integer(), nullable=False),
    sa.Column('chunk_id', sa.String(length=255), nullable=False),
    sa.Column('annotator', sa.String(length=255), nullable=False),
    sa.Column('support', sa.String(length=8), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['annotator'], ['annotators.name'], name=op.f('fk_nugget_support_annotator_annotators')),
    sa.ForeignKeyConstraint(['chunk_id'], ['chunks.id'], name=op.f('fk_nugget_support_chunk_id_chunks')),
    sa.ForeignKeyConstraint(['nugget_id'], ['nuggets.id'], name=op.f('fk_nugget_support_nugget_id_nuggets')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_nugget_support'))
    )
    with op.batch_alter_table('nugget_support', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_nugget_support_nugget_id'), ['nugget_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('nugget_support', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_nugget_support_nugget_id'))

    op.drop_table('nugget_support')
    with op.batch_alter_table('facet_links', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_facet_links_facet_id'))

    op.drop_table('facet_links')
    op.drop_table('citations')
    with op.batch_alter_table('run_entries', schema=None) as batch_op:
        batch_op.drop_index('ix_run_entries_query_rank')

    op.drop_table('run_entries')
    with op.batch_alter_table('nuggets', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_nuggets_query_id'))

    op.drop_table('nuggets')
    with op.batch_alter_table('labels', schema=None) as batch_op:
        batch_op.drop_index('ix_labels_pair')
        batch_op.drop_index('ix_labels_annotator_pair')

    op.drop_table('labels')
    with op.batch_alter_table('facets', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_facets_query_id'))

    op.drop_table('facets')
    op.drop_table('answers')
    with op.batch_alter_table('adjudications', schema=None) as batch_op:
        batch_op.drop_index('ix_adjudications_pair')

    op.drop_table('adjudications')
    op.drop_table('settings')
    op.drop_table('runs')
    with op.batch_alter_table('queries', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_queries_category'))

    op.drop_table('queries')
    op.drop_table('chunks')
    op.drop_table('annotators')
