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
    with op.batch_alter_table('annotators', schema=None) as batch_op:
        batch_op.add_column(sa.Column('role', sa.String(length=16), server_default='annotator', nullable=False))
        batch_op.add_column(sa.Column('kind', sa.String(length=16), server_default='human', nullable=False))
        batch_op.add_column(sa.Column('status', sa.String(length=16), server_default='active', nullable=False))
        batch_op.add_column(sa.Column('reference', sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.add_column(sa.Column('complete', sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.add_column(sa.Column('token_hash', sa.String(length=64), nullable=True))
        batch_op.create_unique_constraint(batch_op.f('uq_annotators_token_hash'), ['token_hash'])
        batch_op.create_check_constraint('role', "role IN ('annotator', 'lead')")
        batch_op.create_check_constraint('kind', "kind IN ('human', 'llm')")
        batch_op.create_check_constraint('status', "status IN ('active', 'retired')")
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
    with op.batch_alter_table('annotators', schema=None) as batch_op:
        batch_op.drop_constraint(op.f('ck_annotators_status'), type_='check')
        batch_op.drop_constraint(op.f('ck_annotators_kind'), type_='check')
        batch_op.drop_constraint(op.f('ck_annotators_role'), type_='check')
        batch_op.drop_constraint(batch_op.f('uq_annotators_token_hash'), type_='unique')
        batch_op.drop_column('token_hash')
        batch_op.drop_column('complete')
        batch_op.drop_column('reference')
        batch_op.drop_column('status')
        batch_op.drop_column('kind')
        batch_op.drop_column('role')
