"""pair marks (flags and comments as their own events); ids and names of any length

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 09:00:00.000000

Until 0002 a flag or a comment was a label event carrying the pair's grade forward, so the next
grade (whose event has ``flagged`` false and no note) dropped it, and a flag's note replaced a
comment. From 0003 flags and comments are events of their own in ``pair_marks``; this revision
copies what the label events recorded into it (see :func:`copy_marks`), and leaves every label
event as it was.

On PostgreSQL every VARCHAR(255) column becomes unbounded (SQLite never enforced the length, so
the same ids were accepted there and refused on PostgreSQL).
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

KEY_COLUMNS = {
    'annotators': ('name',),
    'chunks': ('id', 'doc_id'),
    'queries': ('id', 'category'),
    'runs': ('name',),
    'adjudications': ('query_id', 'chunk_id', 'by'),
    'answers': ('query_id', 'run'),
    'facets': ('query_id',),
    'labels': ('query_id', 'chunk_id', 'annotator'),
    'nuggets': ('query_id',),
    'run_entries': ('run', 'query_id', 'chunk_id'),
    'citations': ('chunk_id',),
    'facet_links': ('chunk_id', 'annotator'),
    'nugget_support': ('chunk_id', 'annotator'),
    'assignments': ('annotator', 'query_id', 'chunk_id'),
    'entities': ('query_id',),
}
"""Every VARCHAR(255) column of revision 0002."""

IMPORT = 'import'
RECHECK = 'recheck'


def upgrade() -> None:
    op.create_table('pair_marks',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('query_id', sa.String(), nullable=False),
    sa.Column('chunk_id', sa.String(), nullable=False),
    sa.Column('annotator', sa.String(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('text', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('source', sa.String(length=32), nullable=True),
    sa.Column('resolves', sa.Integer(), nullable=True),
    sa.CheckConstraint("kind IN ('flag', 'comment')", name=op.f('ck_pair_marks_kind')),
    sa.CheckConstraint("action IN ('set', 'clear')", name=op.f('ck_pair_marks_action')),
    sa.ForeignKeyConstraint(['annotator'], ['annotators.name'], name=op.f('fk_pair_marks_annotator_annotators')),
    sa.ForeignKeyConstraint(['chunk_id'], ['chunks.id'], name=op.f('fk_pair_marks_chunk_id_chunks')),
    sa.ForeignKeyConstraint(['query_id'], ['queries.id'], name=op.f('fk_pair_marks_query_id_queries')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_pair_marks'))
    )
    with op.batch_alter_table('pair_marks', schema=None) as batch_op:
        batch_op.create_index('ix_pair_marks_annotator_pair', ['annotator', 'query_id', 'chunk_id', 'id'], unique=False)
        batch_op.create_index('ix_pair_marks_pair', ['query_id', 'chunk_id'], unique=False)

    bind = op.get_bind()
    if bind.dialect.name == 'postgresql':
        for table, columns in KEY_COLUMNS.items():
            for column in columns:
                op.alter_column(table, column, type_=sa.String(), existing_type=sa.String(length=255))
    copy_marks(bind)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == 'postgresql':
        for table, columns in KEY_COLUMNS.items():
            for column in columns:
                op.alter_column(table, column, type_=sa.String(length=255), existing_type=sa.String())
    with op.batch_alter_table('pair_marks', schema=None) as batch_op:
        batch_op.drop_index('ix_pair_marks_pair')
        batch_op.drop_index('ix_pair_marks_annotator_pair')
    op.drop_table('pair_marks')


# -- copying flags and comments out of the label events --------------------------------------


def copy_marks(bind) -> int:  # noqa: ANN001
    """Replay the label events of every pair that ever had a flag or a note (outside imports)
    and write the flag and comment events they stood for; returns how many were written.

    How the events of 0002 are read, per annotator and pair, in id order (blind re-checks left
    out; an imported line's note is its grade's note and stays on the label):

    - an event that turns ``flagged`` on sets the flag, with the event's note as the flag's note
      unless the note was only carried over from the event before;
    - a ``flagged`` event on a pair already flagged that brings a new note was a comment made on
      the flagged pair: it sets the comment;
    - an unflagged event with a new note, made without a duration (no grade was given), was a
      comment: it sets the comment;
    - an undo of an event that set a flag or a comment restores the flag and comment from before
      that event (it clears them when there were none);
    - grades and skips clear nothing: that their events dropped flags and notes was the fault
      this revision repairs, so such flags and comments are current again.
    """
    labels = sa.table('labels', sa.column('id'), sa.column('query_id'), sa.column('chunk_id'),
                      sa.column('annotator'), sa.column('grade'), sa.column('skipped'),
                      sa.column('flagged'), sa.column('note'), sa.column('created_at'),
                      sa.column('duration_ms'), sa.column('undoes'), sa.column('source'))
    marks = sa.table('pair_marks', sa.column('query_id'), sa.column('chunk_id'),
                     sa.column('annotator'), sa.column('kind'), sa.column('action'),
                     sa.column('text'), sa.column('created_at'), sa.column('source'))
    other = labels.alias('other')
    not_recheck = sa.or_(labels.c.source.is_(None), labels.c.source != RECHECK)
    marked = sa.exists().where(
        other.c.annotator == labels.c.annotator, other.c.query_id == labels.c.query_id,
        other.c.chunk_id == labels.c.chunk_id,
        sa.or_(other.c.source.is_(None), other.c.source != IMPORT),
        sa.or_(other.c.flagged == sa.true(), other.c.note.is_not(None)))
    rows = bind.execute(
        sa.select(labels.c.id, labels.c.query_id, labels.c.chunk_id, labels.c.annotator,
                  labels.c.flagged, labels.c.note, labels.c.created_at, labels.c.duration_ms,
                  labels.c.undoes, labels.c.source)
        .where(not_recheck, marked)
        .order_by(labels.c.annotator, labels.c.query_id, labels.c.chunk_id, labels.c.id))
    written = 0
    batch: list[dict] = []
    pair = None
    replay = _Replay()
    for row in rows:
        key = (row.annotator, row.query_id, row.chunk_id)
        if key != pair:
            pair, replay = key, _Replay()
        for kind, action, text in replay.event(row):
            batch.append({'query_id': row.query_id, 'chunk_id': row.chunk_id,
                          'annotator': row.annotator, 'kind': kind, 'action': action,
                          'text': text, 'created_at': row.created_at, 'source': 'migration'})
        if len(batch) >= 5000:
            bind.execute(sa.insert(marks), batch)
            written += len(batch)
            batch = []
    if batch:
        bind.execute(sa.insert(marks), batch)
        written += len(batch)
    return written


class _Replay:
    """The label events of one annotator and pair, read as flag and comment changes."""

    def __init__(self) -> None:
        self.flagged = False  # the state 0002 showed after the previous event
        self.note: str | None = None
        self.flag: tuple[bool, str | None] = (False, None)  # the marks so far
        self.comment: str | None = None
        self.before: dict[int, tuple[tuple[bool, str | None], str | None]] = {}
        """Per event that changed a mark: the flag and comment from before it."""

    def event(self, row) -> list[tuple[str, str, str | None]]:  # noqa: ANN001
        flagged, note = bool(row.flagged), row.note
        out: list[tuple[str, str, str | None]] = []
        if row.source == IMPORT:
            pass
        elif row.undoes is not None:
            if row.undoes in self.before:
                flag, comment = self.before[row.undoes]
                out = self._to(flag, comment)
        elif flagged and not self.flagged:
            out = self._to((True, None if note == self.note else note), self.comment)
        elif flagged and note is not None and note != self.note or not flagged and note is not None and note != self.note and row.duration_ms is None:
            out = self._to(self.flag, note)
        if out:
            self.before[row.id] = self._undo_point
        self.flagged, self.note = flagged, note
        return out

    def _to(self, flag: tuple[bool, str | None], comment: str | None) -> list[tuple[str, str, str | None]]:
        out = []
        self._undo_point = (self.flag, self.comment)
        if flag != self.flag:
            out.append(('flag', 'set', flag[1]) if flag[0] else ('flag', 'clear', None))
        if comment != self.comment:
            out.append(('comment', 'set', comment) if comment is not None else ('comment', 'clear', None))
        self.flag, self.comment = flag, comment
        return out
