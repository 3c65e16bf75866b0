"""the audit trail of an LLM annotator's requests

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-12 09:00:00.000000

``llm_calls`` keeps, per request ``ragjudge llm-judge`` made about a pair, the model, the
SHA-256 of the prompt, the answer, token counts, latency and the outcome (graded, unparsed or
failed). A column referencing an id takes the type that id has in the database being upgraded,
as a foreign key must.
"""
from typing import Any

from alembic import op
import sqlalchemy as sa


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def _key_type(table: str, column: str) -> Any:
    """The type of ``table.column`` as the database being upgraded holds it."""
    for reflected in sa.inspect(op.get_bind()).get_columns(table):
        if reflected['name'] == column:
            return reflected['type']
    raise LookupError(f'{table}.{column}')


def upgrade() -> None:
    op.create_table('llm_calls',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('query_id', _key_type('queries', 'id'), nullable=False),
    sa.Column('chunk_id', _key_type('chunks', 'id'), nullable=False),
    sa.Column('annotator', _key_type('annotators', 'name'), nullable=False),
    sa.Column('model', sa.Text(), nullable=False),
    sa.Column('prompt_sha256', sa.String(length=64), nullable=False),
    sa.Column('outcome', sa.String(length=16), nullable=False),
    sa.Column('grade', sa.Integer(), nullable=True),
    sa.Column('label_id', sa.Integer(), nullable=True),
    sa.Column('answer', sa.Text(), nullable=True),
    sa.Column('prompt_tokens', sa.Integer(), nullable=True),
    sa.Column('completion_tokens', sa.Integer(), nullable=True),
    sa.Column('latency_ms', sa.Integer(), nullable=True),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.CheckConstraint("outcome IN ('graded', 'unparsed', 'failed')", name=op.f('ck_llm_calls_outcome')),
    sa.ForeignKeyConstraint(['annotator'], ['annotators.name'], name=op.f('fk_llm_calls_annotator_annotators')),
    sa.ForeignKeyConstraint(['chunk_id'], ['chunks.id'], name=op.f('fk_llm_calls_chunk_id_chunks')),
    sa.ForeignKeyConstraint(['query_id'], ['queries.id'], name=op.f('fk_llm_calls_query_id_queries')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_llm_calls'))
    )
    with op.batch_alter_table('llm_calls', schema=None) as batch_op:
        batch_op.create_index('ix_llm_calls_annotator_pair', ['annotator', 'query_id', 'chunk_id', 'id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('llm_calls', schema=None) as batch_op:
        batch_op.drop_index('ix_llm_calls_annotator_pair')
    op.drop_table('llm_calls')
