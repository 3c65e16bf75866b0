"""answer sentences, their citations, and answer judgments

Revision ID: 0004
Revises: 0002
Create Date: 2026-11-24 09:12:40.118254

The answers a project already holds are split into sentences here (they were imported as plain
text; their answer-level citations stay in ``citations``), so that every answer can be judged
sentence by sentence.

A column referencing an id (a chunk, an annotator) takes the type that id has in the database
being upgraded, as a foreign key must.
"""
import re
from typing import Any

from alembic import op

import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def _key_type(table: str, column: str) -> Any:
    """The type of ``table.column`` as the database being upgraded holds it."""
    for reflected in sa.inspect(op.get_bind()).get_columns(table):
        if reflected['name'] == column:
            return reflected['type']
    raise LookupError(f'{table}.{column}')


def upgrade() -> None:
    chunk_key = _key_type('chunks', 'id')
    annotator_key = _key_type('annotators', 'name')
    op.create_table('answer_sentences',
    sa.Column('answer_id', sa.Integer(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['answer_id'], ['answers.id'], name=op.f('fk_answer_sentences_answer_id_answers'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('answer_id', 'position', name=op.f('pk_answer_sentences'))
    )
    op.create_table('answer_citations',
    sa.Column('answer_id', sa.Integer(), nullable=False),
    sa.Column('sentence', sa.Integer(), nullable=False),
    sa.Column('chunk_id', chunk_key, nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['answer_id'], ['answers.id'], name=op.f('fk_answer_citations_answer_id_answers'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['chunk_id'], ['chunks.id'], name=op.f('fk_answer_citations_chunk_id_chunks')),
    sa.PrimaryKeyConstraint('answer_id', 'sentence', 'chunk_id', name=op.f('pk_answer_citations'))
    )
    op.create_table('answer_judgments',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('answer_id', sa.Integer(), nullable=False),
    sa.Column('annotator', annotator_key, nullable=False),
    sa.Column('nugget_id', sa.Integer(), nullable=True),
    sa.Column('sentence', sa.Integer(), nullable=True),
    sa.Column('chunk_id', chunk_key, nullable=True),
    sa.Column('support', sa.String(length=8), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('duration_ms', sa.Integer(), nullable=True),
    sa.Column('undoes', sa.Integer(), nullable=True),
    sa.Column('source', sa.String(length=32), nullable=True),
    sa.ForeignKeyConstraint(['annotator'], ['annotators.name'], name=op.f('fk_answer_judgments_annotator_annotators')),
    sa.ForeignKeyConstraint(['answer_id'], ['answers.id'], name=op.f('fk_answer_judgments_answer_id_answers')),
    sa.ForeignKeyConstraint(['chunk_id'], ['chunks.id'], name=op.f('fk_answer_judgments_chunk_id_chunks')),
    sa.ForeignKeyConstraint(['nugget_id'], ['nuggets.id'], name=op.f('fk_answer_judgments_nugget_id_nuggets')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_answer_judgments'))
    )
    with op.batch_alter_table('answer_judgments', schema=None) as batch_op:
        batch_op.create_index('ix_answer_judgments_annotator', ['annotator', 'id'], unique=False)
        batch_op.create_index('ix_answer_judgments_answer', ['answer_id', 'annotator', 'id'], unique=False)

    _split_existing_answers()


# The sentence splitter as this revision ran it (a migration is history: it carries its own code,
# so that a later change to ragjudge's splitter never changes what an old upgrade does).
_END = re.compile(
    r"(?:[.!?…]+[\"'”’»)\]]*(?:[ \t]*\[[^\[\]\n]{1,40}\])*(?=[ \t]+(?P<next>\S)|[ \t]*$)"
    r"|[。！？]+[」』”’）]*)"
)
_OPENERS = "\"'“‘«(¿¡"


def _starts_sentence(ch: str) -> bool:
    if ch.isupper() or ch.isdigit() or ch in _OPENERS:
        return True
    return ch.isalpha() and ch.lower() == ch.upper()  # a letter of a script without case


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped, in order; empty ones are dropped."""
    out: list[str] = []
    for line in text.splitlines():
        start = 0
        for match in _END.finditer(line):
            following = match.group("next")
            if following is not None and not _starts_sentence(following):
                continue
            out.append(line[start:match.end()])
            start = match.end()
        out.append(line[start:])
    return [s for s in (part.strip() for part in out) if s]


def _split_existing_answers() -> None:
    connection = op.get_bind()
    answers = sa.table('answers', sa.column('id', sa.Integer()), sa.column('text', sa.Text()))
    sentences = sa.table('answer_sentences', sa.column('answer_id', sa.Integer()),
                         sa.column('position', sa.Integer()), sa.column('text', sa.Text()))
    rows = []
    for answer_id, text in connection.execute(sa.select(answers.c.id, answers.c.text)):
        rows += [{'answer_id': answer_id, 'position': i, 'text': s}
                 for i, s in enumerate(split_sentences(text or ''))]
    if rows:
        connection.execute(sa.insert(sentences), rows)


def downgrade() -> None:
    with op.batch_alter_table('answer_judgments', schema=None) as batch_op:
        batch_op.drop_index('ix_answer_judgments_answer')
        batch_op.drop_index('ix_answer_judgments_annotator')

    op.drop_table('answer_judgments')
    op.drop_table('answer_citations')
    op.drop_table('answer_sentences')
