"""a nugget's weight may be unset

Revision ID: 0009
Revises: 0008
Create Date: 2027-01-20 09:00:00.000000

``nuggets.weight`` becomes nullable: unset, a weighted nugget score weighs the nugget by its
importance as the TREC 2024 RAG track does (vital 1, okay 0.5); set, by the weight itself.
Before, every nugget was stored with weight 1.0 whether or not anyone gave one, so an okay
nugget counted as much as a vital one; the stored 1.0s are read as unset (a vital nugget keeps
weight 1, an okay one counts 0.5). Downgrading stores 1.0 again where none is set.
"""
from alembic import op
import sqlalchemy as sa


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('nuggets', schema=None) as batch_op:
        batch_op.alter_column('weight', existing_type=sa.Float(), nullable=True)
    op.execute(sa.text('UPDATE nuggets SET weight = NULL WHERE weight = 1.0'))


def downgrade() -> None:
    op.execute(sa.text('UPDATE nuggets SET weight = 1.0 WHERE weight IS NULL'))
    with op.batch_alter_table('nuggets', schema=None) as batch_op:
        batch_op.alter_column('weight', existing_type=sa.Float(), nullable=False)
