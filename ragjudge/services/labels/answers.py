"""Judging generated answers, as the TREC 2024 RAG track's assessors did.

An answer of a run to a query is read sentence by sentence with the chunks each sentence cites.
Two kinds of judgment are made of it, each ``full``, ``partial`` or ``none``:

- **nugget support** — per nugget of the query, how fully the whole answer supports it
  (Pradeep et al. 2024, the AutoNuggetizer's assignment step done by people);
- **citation support** — per (sentence, cited chunk), how fully that chunk supports the sentence
  (Thakur et al. 2025, support evaluation).

Judgments are append-only events (``answer_judgments``), like labels: the current judgment of a
thing for an annotator is their newest event for it, and undo writes a new event carrying the
state from before the undone one. Every write is one committed transaction through
:meth:`Project.write`.

This module also reads the judgments for the measures (:func:`answer_labels`, the annotators
combined under the gold rule, as ``ragjudge.services.scoring.rag`` does for chunk support), for
agreement (:func:`answer_ratings`) and for export (:func:`current_judgments`), and walks an
annotator through the answers blind to the run (:class:`AnswerQueue`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING
from sqlalchemy import func, select
from sqlalchemy.orm import Session
from ragjudge.errors import UsageError
from ragjudge.store.schema import (
    Answer,
    AnswerCitation,
    AnswerJudgment,
    AnswerSentence,
    Nugget,
    Query,
    Run,
    utcnow,
)
from ragjudge.services.events.answers import BATCH, SUPPORTS, current_judgments
from ragjudge.safetext import quote


if TYPE_CHECKING:
    pass


def _check_support(support: str | None) -> str:
    if support not in SUPPORTS:
        raise UsageError(f"Support {quote(support)} must be full, partial or none.")
    return support


def _check_target(session: Session, answer_id: int, nugget_id: int | None, sentence: int | None,
                  chunk_id: str | None) -> Answer:
    answer = session.get(Answer, answer_id)
    if answer is None:
        raise UsageError(f"There is no answer {answer_id}.")
    if (nugget_id is None) == (sentence is None and chunk_id is None):
        raise UsageError("Judge either a nugget or a citation (a sentence and a chunk).")
    if nugget_id is not None:
        nugget = session.get(Nugget, nugget_id)
        if nugget is None or nugget.removed or nugget.kind != "nugget" or nugget.query_id != answer.query_id:
            raise UsageError(f"Nugget {nugget_id} is not a nugget of query {answer.query_id}.")
    else:
        cited = session.get(AnswerCitation, (answer_id, sentence, chunk_id))
        if cited is None:
            raise UsageError(f"Sentence {sentence} of the answer does not cite chunk {quote(chunk_id)}.")
    return answer


def record_answer_judgment(project, *, annotator: str, answer_id: int, support: str,  # noqa: ANN001
                           nugget_id: int | None = None, sentence: int | None = None,
                           chunk_id: str | None = None, duration_ms: int | None = None,
                           source: str = "tui") -> int:
    """Record one judgment of an answer as one committed event; returns its id.

    With ``nugget_id``: how fully the whole answer supports that nugget of its query. With
    ``sentence`` and ``chunk_id``: how fully that cited chunk supports that sentence."""
    from ragjudge.services.events.annotators import ensure_annotator_in, check_annotator

    annotator = check_annotator(annotator)
    support = _check_support(support)
    duration = None if duration_ms is None else max(0, int(duration_ms))

    def work(session: Session) -> int:
        ensure_annotator_in(session, annotator)
        _check_target(session, answer_id, nugget_id, sentence, chunk_id)
        event = AnswerJudgment(answer_id=answer_id, annotator=annotator, nugget_id=nugget_id,
                               sentence=sentence, chunk_id=chunk_id, support=support,
                               created_at=utcnow(), duration_ms=duration, source=source)
        session.add(event)
        session.flush()
        return int(event.id)

    return project.write(work)


@dataclass(frozen=True)
class AnswerUndo:
    """What :func:`undo_last_answer_judgment` did: the new event and what came back."""

    event_id: int
    undone_id: int
    answer_id: int
    nugget_id: int | None
    sentence: int | None
    chunk_id: str | None
    support: str | None
    """The judgment in force again (None: none)."""


def undo_last_answer_judgment(project, annotator: str) -> AnswerUndo | None:  # noqa: ANN001
    """Undo the annotator's newest answer judgment that is neither an undo nor already undone:
    a new event carrying the judgment from before it (``undoes`` = its id). Calling again walks
    further back; None when nothing is left to undo."""
    from ragjudge.services.events.annotators import check_annotator

    annotator = check_annotator(annotator)
    j = AnswerJudgment

    def work(session: Session) -> AnswerUndo | None:
        undone = select(j.undoes).where(j.annotator == annotator, j.undoes.is_not(None))
        target = session.scalars(
            select(j).where(j.annotator == annotator, j.undoes.is_(None), j.id.not_in(undone))
            .order_by(j.id.desc()).limit(1)).first()
        if target is None:
            return None
        same = [j.answer_id == target.answer_id, j.annotator == annotator, j.id < target.id]
        for column, value in ((j.nugget_id, target.nugget_id), (j.sentence, target.sentence),
                              (j.chunk_id, target.chunk_id)):
            same.append(column.is_(None) if value is None else column == value)
        before = session.scalar(select(j.support).where(*same).order_by(j.id.desc()).limit(1))
        event = AnswerJudgment(answer_id=target.answer_id, annotator=annotator,
                               nugget_id=target.nugget_id, sentence=target.sentence,
                               chunk_id=target.chunk_id, support=before, created_at=utcnow(),
                               undoes=target.id, source=target.source)
        session.add(event)
        session.flush()
        return AnswerUndo(int(event.id), int(target.id), int(target.answer_id), target.nugget_id,
                          target.sentence, target.chunk_id, before)

    return project.write(work)


@dataclass(frozen=True)
class AnswerItem:
    """One thing to judge about an answer: a nugget of the query, or a (sentence, cited chunk)."""

    nugget_id: int | None = None
    nugget: str | None = None
    vital: bool = False
    sentence: int | None = None
    chunk_id: str | None = None
    support: str | None = None
    """The annotator's current judgment (None: not judged yet)."""

    @property
    def is_nugget(self) -> bool:
        return self.nugget_id is not None

    @property
    def key(self) -> tuple:
        return (self.nugget_id, self.sentence, self.chunk_id)


@dataclass(frozen=True)
class SentenceView:
    text: str
    citations: tuple[str, ...]


@dataclass(frozen=True)
class AnswerView:
    """An answer as the judging screen shows it, with the annotator's current judgments."""

    answer_id: int
    query_id: str
    run: str
    sentences: tuple[SentenceView, ...]
    items: tuple[AnswerItem, ...]
    """The query's nuggets (in order), then every (sentence, cited chunk) in reading order."""

    @property
    def open(self) -> int:
        return sum(1 for item in self.items if item.support is None)

    def index(self, key: tuple) -> int | None:
        for i, item in enumerate(self.items):
            if item.key == key:
                return i
        return None


def answer_view(project, answer_id: int, annotator: str | None) -> AnswerView:  # noqa: ANN001
    """The answer's sentences, citations, the query's nuggets and the annotator's judgments."""
    with project.read() as session:
        answer = session.get(Answer, answer_id)
        if answer is None:
            raise UsageError(f"There is no answer {answer_id}.")
        texts = session.execute(select(AnswerSentence.position, AnswerSentence.text)
                                .where(AnswerSentence.answer_id == answer_id)
                                .order_by(AnswerSentence.position)).all()
        cites = session.execute(select(AnswerCitation.sentence, AnswerCitation.chunk_id)
                                .where(AnswerCitation.answer_id == answer_id)
                                .order_by(AnswerCitation.sentence, AnswerCitation.position)).all()
        nuggets = session.execute(select(Nugget.id, Nugget.text, Nugget.importance).where(
            Nugget.query_id == answer.query_id, Nugget.removed.is_(False), Nugget.kind == "nugget")
            .order_by(Nugget.id)).all()
        mine: dict[tuple, str | None] = {}
        if annotator:
            j = AnswerJudgment
            for nugget_id, sentence, chunk_id, support in session.execute(
                    select(j.nugget_id, j.sentence, j.chunk_id, j.support)
                    .where(j.answer_id == answer_id, j.annotator == annotator).order_by(j.id)):
                mine[(nugget_id, sentence, chunk_id)] = support
        query_id, run = answer.query_id, answer.run
    by_sentence: dict[int, list[str]] = {}
    for sentence, chunk_id in cites:
        by_sentence.setdefault(int(sentence), []).append(chunk_id)
    sentences = tuple(SentenceView(text, tuple(by_sentence.get(int(pos), ()))) for pos, text in texts)
    items = [AnswerItem(nugget_id=int(n), nugget=text, vital=importance == "vital",
                        support=mine.get((int(n), None, None))) for n, text, importance in nuggets]
    items += [AnswerItem(sentence=i, chunk_id=c, support=mine.get((None, i, c)))
              for i, s in enumerate(sentences) for c in s.citations]
    return AnswerView(int(answer_id), query_id, run, sentences, tuple(items))


def _blind_key(seed: bytes, query_id: str, run: str) -> bytes:
    return hashlib.blake2b(f"{query_id}\x00{run}".encode(), digest_size=8, key=seed).digest()


class AnswerQueue:
    """An annotator's walk through the generated answers: queries in order, and a query's
    answers (one per run) in an order shuffled with a seed fixed per annotator, so that the
    screen can hide which run wrote which answer."""

    def __init__(self, project, annotator: str, *, runs: list[str] | None = None,  # noqa: ANN001
                 queries: list[str] | None = None, category: str | None = None,
                 show_source: bool = False) -> None:
        from ragjudge.services.labels.queue import annotator_seed
        from ragjudge.services.events.annotators import check_annotator

        self.project = project
        self.annotator = check_annotator(annotator)
        self.show_source = show_source
        seed = annotator_seed(self.annotator).to_bytes(8, "little")
        with project.connect() as connection:
            known_runs = set(connection.scalars(select(Run.name)))
            if runs:
                missing = [r for r in runs if r not in known_runs]
                if missing:
                    raise UsageError(f"--runs: no run named {', '.join(missing)} in this project "
                                     f"(runs: {', '.join(sorted(known_runs)) or 'none'}).")
            stmt = select(Answer.id, Answer.query_id, Answer.run).join(Query, Query.id == Answer.query_id)
            if runs:
                stmt = stmt.where(Answer.run.in_(list(runs)))
            if category is not None:
                stmt = stmt.where(Query.category == category)
            rows = connection.execute(stmt).all()
        if queries is not None:
            keep = set(queries)
            rows = [r for r in rows if r[1] in keep]
            if not rows:
                raise UsageError(f"--queries: none of the given queries ({', '.join(queries[:5])}"
                                 f"{', ...' if len(queries) > 5 else ''}) has a generated answer "
                                 "to judge.")
        if category is not None and not rows:
            raise UsageError(f"--category {category}: no query of that category has a generated "
                             "answer to judge.")
        rows.sort(key=lambda r: (r[1], _blind_key(seed, r[1], r[2])))
        self.answer_ids = [int(r[0]) for r in rows]
        self.query_ids = [r[1] for r in rows]
        self._counts: dict[int, tuple[int, int]] | None = None

    def __len__(self) -> int:
        return len(self.answer_ids)

    def view(self, position: int) -> AnswerView:
        """The answer at ``position`` with the annotator's current judgments."""
        view = answer_view(self.project, self.answer_ids[position], self.annotator)
        self.note(view)
        return view

    def counts(self) -> dict[int, tuple[int, int]]:
        """Per answer: (things to judge, of them not judged yet by the annotator)."""
        if self._counts is None:
            self._counts = self._count()
        return self._counts

    def _count(self) -> dict[int, tuple[int, int]]:
        ids = self.answer_ids
        nuggets: dict[str, int] = {}
        cites: dict[int, int] = {}
        judged: dict[int, int] = {}
        with self.project.connect() as connection:
            for q, n in connection.execute(
                    select(Nugget.query_id, func.count()).where(
                        Nugget.removed.is_(False), Nugget.kind == "nugget").group_by(Nugget.query_id)):
                nuggets[q] = int(n)
            for at in range(0, len(ids), BATCH):
                part = ids[at:at + BATCH]
                for a, n in connection.execute(
                        select(AnswerCitation.answer_id, func.count())
                        .where(AnswerCitation.answer_id.in_(part)).group_by(AnswerCitation.answer_id)):
                    cites[int(a)] = int(n)
            for c in current_judgments(connection, annotators=[self.annotator],
                                       query_ids=sorted(set(self.query_ids))):
                judged[c.answer_id] = judged.get(c.answer_id, 0) + 1
        out = {}
        for a, q in zip(ids, self.query_ids):
            items = nuggets.get(q, 0) + cites.get(a, 0)
            out[a] = (items, items - judged.get(a, 0))
        return out

    def first_open(self, start: int = 0) -> int | None:
        """The first answer at or after ``start`` (wrapping around) with something the annotator
        has not judged yet; None when there is none."""
        counts = self.counts()
        n = len(self.answer_ids)
        for step in range(n):
            i = (start + step) % n
            if counts.get(self.answer_ids[i], (0, 0))[1] > 0:
                return i
        return None

    def note(self, view: AnswerView) -> None:
        """Keep the counts of an answer in step with what was just read or written."""
        if self._counts is not None:
            self._counts[view.answer_id] = (len(view.items), view.open)

    def progress(self) -> tuple[int, int]:
        """(answers with nothing left to judge, answers with anything to judge at all)."""
        counts = [c for c in self.counts().values() if c[0] > 0]
        return sum(1 for _, still in counts if still == 0), len(counts)

    def position_of(self, answer_id: int) -> int | None:
        try:
            return self.answer_ids.index(answer_id)
        except ValueError:
            return None
