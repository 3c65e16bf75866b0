"""annotators with roles, kinds, status, reference qrels and login tokens; reviews of marks

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-10 09:00:00.000000

Every annotator a project already holds becomes an active human ``annotator`` (no project has a
lead until one is named, so nothing changes for a project that never names one). ``pair_marks``
accepts a lead's review events (kind ``review``, action ``resolve`` or ``send-back``).
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ADD COLUMN: a rebuild of ``annotators`` on SQLite would trip the foreign keys of the
    # tables that name annotators
    op.add_column('annotators', sa.Column('role', sa.String(length=16), server_default='annotator', nullable=False))
    op.add_column('annotators', sa.Column('kind', sa.String(length=16), server_default='human', nullable=False))
    op.add_column('annotators', sa.Column('status', sa.String(length=16), server_default='active', nullable=False))
    op.add_column('annotators', sa.Column('reference', sa.Boolean(), server_default=sa.false(), nullable=False))
    op.add_column('annotators', sa.Column('complete', sa.Boolean(), server_default=sa.false(), nullable=False))
    op.add_column('annotators', sa.Column('token_hash', sa.String(length=64), nullable=True))
    op.create_index('ix_annotators_token_hash', 'annotators', ['token_hash'], unique=True)
    with op.batch_alter_table('pair_marks', schema=None, recreate='always') as batch_op:
        batch_op.drop_constraint(op.f('ck_pair_marks_kind'), type_='check')
        batch_op.drop_constraint(op.f('ck_pair_marks_action'), type_='check')
        batch_op.create_check_constraint('kind', "kind IN ('flag', 'comment', 'review')")
        batch_op.create_check_constraint('action', "action IN ('set', 'clear', 'resolve', 'send-back')")


def downgrade() -> None:
    with op.batch_alter_table('pair_marks', schema=None, recreate='always') as batch_op:
        batch_op.drop_constraint(op.f('ck_pair_marks_kind'), type_='check')
        batch_op.drop_constraint(op.f('ck_pair_marks_action'), type_='check')
        batch_op.create_check_constraint('kind', "kind IN ('flag', 'comment')")
        batch_op.create_check_constraint('action', "action IN ('set', 'clear')")
    op.drop_index('ix_annotators_token_hash', table_name='annotators')
    for column in ('token_hash', 'complete', 'reference', 'status', 'kind', 'role'):
        with op.batch_alter_table('annotators', schema=None) as batch_op:
            batch_op.drop_column(column)
