"""The project database: SQLAlchemy 2.0 typed models of the data model in ragjudge/ARCHITECTURE.md.

Labels, facet links, nugget support, answer judgments and adjudications are append-only event
tables: rows are inserted, never updated or deleted. The current state of a pair for an annotator
is its newest event (highest ``id``). Definitions (queries, chunks, runs, facets, nuggets,
answers with their sentences and citations) are ordinary tables.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    LargeBinary,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    and_,
    exists,
    false,
    select,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from ragjudge.store.sqltext import PUBLISHED  # noqa: F401 - re-exported: the readers of rows use it

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


KEY = String()
"""Ids and names (queries, chunks, runs, annotators, categories): unbounded text, so that the
same input is accepted alike on SQLite and PostgreSQL (:data:`MAX_KEY_BYTES` is the one limit).
Revisions before 0003 declared VARCHAR(255), which PostgreSQL enforced and SQLite did not;
0003 drops the length on PostgreSQL, and SQLite projects keep the declaration, which SQLite
ignores (rewriting it would mean copying every table)."""

from ragjudge.store.keys import MAX_KEY_BYTES, key_bytes, utcnow  # noqa: E402,F401 - the schema's names


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    if TYPE_CHECKING:
        # every model maps one Table (SQLAlchemy types it as any FromClause)
        __table__: ClassVar[Table]


class Setting(Base):
    """Project settings: ``scale``, ``threshold``, ``rule``, ``name``, ``guidelines``, ..."""

    __tablename__ = "settings"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[Any] = mapped_column(JSON)


class Query(Base):
    __tablename__ = "queries"
    id: Mapped[str] = mapped_column(KEY, primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    description: Mapped[str | None] = mapped_column(Text)
    category: Mapped[str | None] = mapped_column(KEY, index=True)
    meta: Mapped[dict | None] = mapped_column(JSON)


class Chunk(Base):
    __tablename__ = "chunks"
    id: Mapped[str] = mapped_column(KEY, primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    doc_id: Mapped[str | None] = mapped_column(String())
    meta: Mapped[dict | None] = mapped_column(JSON)


class Run(Base):
    """A run. ``generation`` names which of the run's entries are its own: an import writes a
    run's entries under a new generation in short transactions, then publishes them by setting
    this column in one small one (see :data:`PUBLISHED`)."""

    __tablename__ = "runs"
    name: Mapped[str] = mapped_column(KEY, primary_key=True)
    meta: Mapped[dict | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    generation: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class RunEntry(Base):
    """One retrieved chunk. ``rank`` is the 1-based position after trec_eval's ordering.

    An entry belongs to its run only while ``generation`` is the run's (a published run);
    entries of another generation are an import not yet published, or the entries a replaced
    run had, being removed: every reader selects through :data:`PUBLISHED`. ``run`` is no
    foreign key for that reason (an import's entries exist before its run does).
    """

    __tablename__ = "run_entries"
    run: Mapped[str] = mapped_column(KEY, primary_key=True)
    query_id: Mapped[str] = mapped_column(ForeignKey("queries.id"), primary_key=True)
    chunk_id: Mapped[str] = mapped_column(ForeignKey("chunks.id"), primary_key=True)
    rank: Mapped[int] = mapped_column(Integer)
    score: Mapped[float | None] = mapped_column(Float)
    generation: Mapped[int] = mapped_column(Integer, primary_key=True, default=0, server_default="0")

    __table_args__ = (PrimaryKeyConstraint("run", "generation", "query_id", "chunk_id"),
                      Index("ix_run_entries_query_rank", "query_id", "rank"))


def published(entries=None):  # noqa: ANN001, ANN201
    """:data:`PUBLISHED` as a Core clause over ``entries`` (the table or an alias of it)."""
    entries = RunEntry.__table__ if entries is None else entries
    runs = Run.__table__.alias("published")
    return exists(select(runs.c.name).where(and_(runs.c.name == entries.c.run,
                                                 runs.c.generation == entries.c.generation)))


class RunArray(Base):
    """A run's entries as numpy arrays (raw bytes in parts), written by the import with the
    entries of the same generation, so that evaluating reads arrays instead of rows. Arrays:
    ``query_ids`` (the sorted distinct query ids), ``offsets`` (each query's rows), ``chunk_ids``
    and ``scores`` in rank order; ids as UTF-8 bytes with their lengths."""

    __tablename__ = "run_arrays"
    run: Mapped[str] = mapped_column(KEY, primary_key=True)
    generation: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    part: Mapped[int] = mapped_column(Integer, primary_key=True)
    dtype: Mapped[str] = mapped_column(String(16))
    data: Mapped[bytes] = mapped_column(LargeBinary)


class RunImport(Base):
    """A run import under way (or killed): its ``generation`` of entries, and the generation of
    the run it replaces. The import deletes its row when done; a row left behind tells the next
    import (or the next opening of the project) which entries to remove."""

    __tablename__ = "run_imports"
    generation: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    run: Mapped[str] = mapped_column(KEY)
    replaces: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Annotator(Base):
    """A person (or a model) who labels.

    ``role`` is ``annotator`` or ``lead``: once a project has a lead, only leads adjudicate,
    assign, resolve flags and see other annotators' labels. ``kind`` is ``human`` or ``llm``
    (an LLM's labels stay out of the gold unless asked). ``status`` is ``active`` or ``retired``
    (a retired annotator's labels stay; the name cannot open a session). ``reference`` marks an
    annotator whose grades are the gold for its pairs (a collection's official qrels);
    ``complete`` declares that every unlisted pair of a reference's queries is not relevant.
    ``token_hash`` is the SHA-256 of the annotator's personal login token (the token itself is
    never stored).
    """

    __tablename__ = "annotators"
    name: Mapped[str] = mapped_column(KEY, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    seen_guidelines: Mapped[bool] = mapped_column(Boolean, default=False)
    role: Mapped[str] = mapped_column(String(16), default="annotator", server_default="annotator")
    kind: Mapped[str] = mapped_column(String(16), default="human", server_default="human")
    status: Mapped[str] = mapped_column(String(16), default="active", server_default="active")
    reference: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    complete: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    token_hash: Mapped[str | None] = mapped_column(String(64))

    # No CHECK constraints on role, kind and status (services/roster.py checks them): adding one
    # on SQLite rebuilds the table, which the labels' foreign keys to it forbid in a migration.
    __table_args__ = (Index("ix_annotators_token_hash", "token_hash", unique=True),)


class Label(Base):
    """An append-only label event. ``grade`` NULL means "no grade" (skipped, or undone).

    ``undoes`` names the event an undo reverted; the undo event carries the state from before it.
    ``note`` is the grade's note (the ``note`` field of an imported labels line, or given with a
    grade through the API). Flags and comments are :class:`PairMark` events; ``flagged`` and the
    notes of flag and comment events written before revision 0003 are kept as history only (0003
    copied them into ``pair_marks``), and new events leave ``flagged`` false.
    """

    __tablename__ = "labels"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    query_id: Mapped[str] = mapped_column(ForeignKey("queries.id"))
    chunk_id: Mapped[str] = mapped_column(ForeignKey("chunks.id"))
    annotator: Mapped[str] = mapped_column(ForeignKey("annotators.name"))
    grade: Mapped[int | None] = mapped_column(Integer)
    skipped: Mapped[bool] = mapped_column(Boolean, default=False)
    flagged: Mapped[bool] = mapped_column(Boolean, default=False)
    note: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    duration_ms: Mapped[int | None] = mapped_column(Integer)
    undoes: Mapped[int | None] = mapped_column(Integer)
    source: Mapped[str | None] = mapped_column(String(32))
    """``tui``, ``import``, ``cli``, ``recheck`` ... where the event came from."""

    __table_args__ = (
        Index("ix_labels_annotator_pair", "annotator", "query_id", "chunk_id", "id"),
        Index("ix_labels_pair", "query_id", "chunk_id"),
    )


class PairMark(Base):
    """Append-only: an annotator's flag or comment on a pair, set or cleared.

    ``kind`` is ``flag`` (for review; ``text`` is its optional note) or ``comment`` (``text`` is
    the comment). ``action`` is ``set`` or ``clear``. An annotator's current flag and current
    comment on a pair are the newest event of each kind; label events (grades, skips, undos)
    never touch them.

    A lead's review of a mark is an event of kind ``review``: ``annotator`` is the lead,
    ``action`` ``resolve`` (the mark is settled; ``text`` is the note its author sees next time)
    or ``send-back`` (the author is asked to look at the pair again), and ``resolves`` the id of
    the mark event it answers.
    """

    __tablename__ = "pair_marks"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    query_id: Mapped[str] = mapped_column(ForeignKey("queries.id"))
    chunk_id: Mapped[str] = mapped_column(ForeignKey("chunks.id"))
    annotator: Mapped[str] = mapped_column(ForeignKey("annotators.name"))
    kind: Mapped[str] = mapped_column(String(16))
    action: Mapped[str] = mapped_column(String(16))
    text: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    source: Mapped[str | None] = mapped_column(String(32))
    """``tui``, ``import``, ``cli``, ``migration`` ... where the event came from."""
    resolves: Mapped[int | None] = mapped_column(Integer)

    __table_args__ = (
        CheckConstraint("kind IN ('flag', 'comment', 'review')", name="kind"),
        CheckConstraint("action IN ('set', 'clear', 'resolve', 'send-back')", name="action"),
        Index("ix_pair_marks_annotator_pair", "annotator", "query_id", "chunk_id", "id"),
        Index("ix_pair_marks_pair", "query_id", "chunk_id"),
    )


class Facet(Base):
    __tablename__ = "facets"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    query_id: Mapped[str] = mapped_column(ForeignKey("queries.id"), index=True)
    name: Mapped[str] = mapped_column(Text)
    removed: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class FacetLink(Base):
    """Append-only: annotator says chunk covers (or no longer covers) facet."""

    __tablename__ = "facet_links"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    facet_id: Mapped[int] = mapped_column(ForeignKey("facets.id"), index=True)
    chunk_id: Mapped[str] = mapped_column(ForeignKey("chunks.id"))
    annotator: Mapped[str] = mapped_column(ForeignKey("annotators.name"))
    covered: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Nugget(Base):
    """An atomic fact a good answer needs (``kind='nugget'``) or a claim of the reference answer
    (``kind='claim'``, for Context Recall)."""

    __tablename__ = "nuggets"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    query_id: Mapped[str] = mapped_column(ForeignKey("queries.id"), index=True)
    text: Mapped[str] = mapped_column(Text)
    importance: Mapped[str] = mapped_column(String(8), default="okay")
    kind: Mapped[str] = mapped_column(String(8), default="nugget")
    weight: Mapped[float | None] = mapped_column(Float, nullable=True, default=None)
    """The nugget's own weight in a weighted score; None: by its importance (vital 1, okay 0.5)."""
    removed: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class NuggetSupport(Base):
    """Append-only: how fully a chunk supports a nugget, per annotator (full/partial/none)."""

    __tablename__ = "nugget_support"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    nugget_id: Mapped[int] = mapped_column(ForeignKey("nuggets.id"), index=True)
    chunk_id: Mapped[str] = mapped_column(ForeignKey("chunks.id"))
    annotator: Mapped[str] = mapped_column(ForeignKey("annotators.name"))
    support: Mapped[str] = mapped_column(String(8))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Answer(Base):
    """A generated answer of one run for one query, for chunk attribution."""

    __tablename__ = "answers"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    query_id: Mapped[str] = mapped_column(ForeignKey("queries.id"))
    run: Mapped[str] = mapped_column(KEY)
    text: Mapped[str] = mapped_column(Text)

    __table_args__ = (UniqueConstraint("query_id", "run", name="uq_answers_query_run"),)


class Citation(Base):
    __tablename__ = "citations"
    answer_id: Mapped[int] = mapped_column(ForeignKey("answers.id", ondelete="CASCADE"), primary_key=True)
    chunk_id: Mapped[str] = mapped_column(ForeignKey("chunks.id"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, default=0)


class AnswerSentence(Base):
    """One sentence of a generated answer, ``position`` counted from 0 (what ``sentence`` means
    in answer judgments). An answer imported as plain text is split into sentences on import."""

    __tablename__ = "answer_sentences"
    answer_id: Mapped[int] = mapped_column(ForeignKey("answers.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    text: Mapped[str] = mapped_column(Text)


class AnswerCitation(Base):
    """A chunk cited by one sentence of a generated answer (``position``: its order there)."""

    __tablename__ = "answer_citations"
    answer_id: Mapped[int] = mapped_column(ForeignKey("answers.id", ondelete="CASCADE"), primary_key=True)
    sentence: Mapped[int] = mapped_column(Integer, primary_key=True)
    chunk_id: Mapped[str] = mapped_column(ForeignKey("chunks.id"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, default=0)


class AnswerJudgment(Base):
    """Append-only: an annotator's judgment of a generated answer, full/partial/none.

    Either how fully the whole answer supports a nugget of its query (``nugget_id``), or how
    fully a cited chunk supports one sentence of it (``sentence``, ``chunk_id``). ``support``
    NULL means "no judgment" (an undo back to before the first one). As with labels, the current
    judgment of a key for an annotator is its newest event, and ``undoes`` names the event an
    undo reverted (the undo event carries the state from before it).
    """

    __tablename__ = "answer_judgments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    answer_id: Mapped[int] = mapped_column(ForeignKey("answers.id"))
    annotator: Mapped[str] = mapped_column(ForeignKey("annotators.name"))
    nugget_id: Mapped[int | None] = mapped_column(ForeignKey("nuggets.id"))
    sentence: Mapped[int | None] = mapped_column(Integer)
    chunk_id: Mapped[str | None] = mapped_column(ForeignKey("chunks.id"))
    support: Mapped[str | None] = mapped_column(String(8))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    duration_ms: Mapped[int | None] = mapped_column(Integer)
    undoes: Mapped[int | None] = mapped_column(Integer)
    source: Mapped[str | None] = mapped_column(String(32))
    """``tui``, ``import`` ... where the event came from."""

    __table_args__ = (
        Index("ix_answer_judgments_answer", "answer_id", "annotator", "id"),
        Index("ix_answer_judgments_annotator", "annotator", "id"),
    )


class Adjudication(Base):
    """Append-only: the lead's final grade for a pair; the newest wins and gold qrels use it first."""

    __tablename__ = "adjudications"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    query_id: Mapped[str] = mapped_column(ForeignKey("queries.id"))
    chunk_id: Mapped[str] = mapped_column(ForeignKey("chunks.id"))
    grade: Mapped[int] = mapped_column(Integer)
    by: Mapped[str] = mapped_column(String())
    reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    __table_args__ = (Index("ix_adjudications_pair", "query_id", "chunk_id"),)


class Entity(Base):
    """An entity of a query's reference answer, for Context Entities Recall (RAGAS)."""

    __tablename__ = "entities"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    query_id: Mapped[str] = mapped_column(ForeignKey("queries.id"), index=True)
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Assignment(Base):
    """Which annotator is to judge which pair (``ragjudge assign``)."""

    __tablename__ = "assignments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    annotator: Mapped[str] = mapped_column(ForeignKey("annotators.name"))
    query_id: Mapped[str] = mapped_column(ForeignKey("queries.id"))
    chunk_id: Mapped[str] = mapped_column(ForeignKey("chunks.id"))
    overlap: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    __table_args__ = (
        UniqueConstraint("annotator", "query_id", "chunk_id", name="uq_assignments_pair"),
        Index("ix_assignments_pair", "query_id", "chunk_id"),
    )


class LlmCall(Base):
    """Append-only: one request of an LLM annotator (``ragjudge llm-judge``) about one pair.

    The audit trail of a model's label: the model named in the request, the SHA-256 of the exact
    prompt sent, the answer's text, the token counts the server reported and the time it took.
    ``outcome`` is ``graded`` (``grade`` parsed and ``label_id`` the label event written with it),
    ``unparsed`` (the answer named no grade of the scale: no label) or ``failed`` (no answer after
    the retries; ``error`` says why). The API key is never stored.
    """

    __tablename__ = "llm_calls"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    query_id: Mapped[str] = mapped_column(ForeignKey("queries.id"))
    chunk_id: Mapped[str] = mapped_column(ForeignKey("chunks.id"))
    annotator: Mapped[str] = mapped_column(ForeignKey("annotators.name"))
    model: Mapped[str] = mapped_column(Text)
    prompt_sha256: Mapped[str] = mapped_column(String(64))
    outcome: Mapped[str] = mapped_column(String(16))
    grade: Mapped[int | None] = mapped_column(Integer)
    label_id: Mapped[int | None] = mapped_column(Integer)
    answer: Mapped[str | None] = mapped_column(Text)
    prompt_tokens: Mapped[int | None] = mapped_column(Integer)
    completion_tokens: Mapped[int | None] = mapped_column(Integer)
    latency_ms: Mapped[int | None] = mapped_column(Integer)
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    __table_args__ = (
        CheckConstraint("outcome IN ('graded', 'unparsed', 'failed')", name="outcome"),
        Index("ix_llm_calls_annotator_pair", "annotator", "query_id", "chunk_id", "id"),
    )


class PoolSampleDraw(Base):
    """Append-only: one sample drawn from the judging pool (``ragjudge assign --sample``).

    ``id`` numbers the samples in the order they were drawn; the newest is the project's
    current sample, the one scoring reads, and an older one stays as it was (its pairs keep
    their ``sample_id``). ``strategy`` is ``uniform`` or ``stratified``; ``size`` the pairs
    drawn per query; ``depth`` and ``runs`` (null: every run) the pool it was drawn from;
    ``bands`` the upper ranks of the stratified design's rank bands (empty for uniform);
    ``seed`` the random generator's seed, so the same pool and seed draw the same sample.
    """

    __tablename__ = "pool_samples"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    strategy: Mapped[str] = mapped_column(String(16))
    size: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(BigInteger)
    depth: Mapped[int] = mapped_column(Integer)
    bands: Mapped[list] = mapped_column(JSON)
    runs: Mapped[list | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    __table_args__ = (CheckConstraint("strategy IN ('uniform', 'stratified')", name="strategy"),)


class PoolSamplePair(Base):
    """Append-only: one pooled pair of a sample, drawn for judging or not.

    ``rank`` is the pair's best rank over the pooled runs, ``stratum`` the rank band it was
    drawn from (0 for a uniform sample), ``inclusion`` the probability that the design draws it
    (what ``statAP`` weighs a judged relevant chunk by), ``drawn`` whether it was drawn. Every
    pair of the pool is kept, drawn or not: the estimators need the pool's size per stratum."""

    __tablename__ = "pool_sample_pairs"
    sample_id: Mapped[int] = mapped_column(ForeignKey("pool_samples.id"), primary_key=True)
    query_id: Mapped[str] = mapped_column(ForeignKey("queries.id"), primary_key=True)
    chunk_id: Mapped[str] = mapped_column(ForeignKey("chunks.id"), primary_key=True)
    rank: Mapped[int] = mapped_column(Integer)
    stratum: Mapped[int] = mapped_column(Integer)
    inclusion: Mapped[float] = mapped_column(Float)
    drawn: Mapped[bool] = mapped_column(Boolean)
