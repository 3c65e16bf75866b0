"""The judgments of generated answers as the answer measures take them (one rule-combined
judgment per thing judged).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from sqlalchemy import select
from sqlalchemy.engine import Connection
from ragjudge.store.schema import (
    Answer,
    AnswerCitation,
    AnswerSentence,
    Citation,
    Nugget,
)
from ragjudge.services.events.answers import BATCH, LEVELS, current_judgments


if TYPE_CHECKING:
    from ragjudge.metrics.answers import AnswerLabels


def answer_labels(connection: Connection, run_name: str | None, rule: str,
                  query_ids: Sequence[str] | None = None) -> AnswerLabels:
    """:class:`ragjudge.metrics.answers.AnswerLabels` of ``run_name``'s answers (of some
    queries): their sentences and citations, the nuggets of their queries, and each nugget's and
    each citation's support with the annotators combined under ``rule``.

    As for chunk support (``ragjudge.services.scoring.rag``): an annotator's current judgment is their
    newest event; those who never judged a thing have no opinion about it; the opinions are
    combined with the gold rule on 0 none, 1 partial, 2 full (``median`` the lower median,
    ``annotator:NAME`` that annotator only; ``adjudicated`` falls back to ``median``)."""
    from ragjudge.metrics.answers import AnswerLabels
    from ragjudge.services.gold.support import combine_support, support_rule

    if run_name is None:
        return AnswerLabels([])
    rule = support_rule(rule)
    stmt = select(Answer.id, Answer.query_id).where(Answer.run == run_name).order_by(Answer.query_id)
    answers: list[Any] = []
    if query_ids is None:
        answers = list(connection.execute(stmt).all())
    else:
        wanted = list(dict.fromkeys(query_ids))
        for at in range(0, len(wanted), BATCH):
            answers += connection.execute(stmt.where(Answer.query_id.in_(wanted[at:at + BATCH]))).all()
        answers.sort(key=lambda a: a[1])
    query_of = {int(a): q for a, q in answers}
    ids = list(query_of)
    sentences: list[Any] = []
    citations: list[Any] = []
    nuggets: list[Any] = []
    for at in range(0, len(ids), BATCH):
        part = ids[at:at + BATCH]
        sentences += connection.execute(
            select(AnswerSentence.answer_id, AnswerSentence.position, AnswerSentence.text)
            .where(AnswerSentence.answer_id.in_(part))).all()
        citations += connection.execute(
            select(AnswerCitation.answer_id, AnswerCitation.sentence, AnswerCitation.chunk_id,
                   AnswerCitation.position).where(AnswerCitation.answer_id.in_(part))).all()
    placed = {int(c[0]) for c in citations}
    unplaced: list[str] = []
    for at in range(0, len(ids), BATCH):
        part = [a for a in ids[at:at + BATCH] if a not in placed]
        unplaced += [query_of[int(a)] for a in connection.scalars(
            select(Citation.answer_id).where(Citation.answer_id.in_(part)).distinct())]
    queries = sorted(set(query_of.values()))
    for at in range(0, len(queries), BATCH):
        nuggets += connection.execute(
            select(Nugget.id, Nugget.query_id, Nugget.text, Nugget.importance)
            .where(Nugget.query_id.in_(queries[at:at + BATCH]), Nugget.removed.is_(False),
                   Nugget.kind == "nugget")).all()
    judged = current_judgments(connection, run=run_name,
                               query_ids=None if query_ids is None else queries)
    if rule.startswith("annotator:"):
        who = rule.split(":", 1)[1]
        judged = [c for c in judged if c.annotator == who]
    nugget_keys = [c for c in judged if c.nugget_id is not None]
    cite_keys = [c for c in judged if c.nugget_id is None]
    cite_chunks = [c.chunk_id for c in cite_keys if c.chunk_id is not None]
    assert len(cite_chunks) == len(cite_keys)  # a citation judgment names its chunk
    combined_nuggets = {(int(k), int(a)): int(v) for k, a, v in combine_support(
        [str(c.nugget_id) for c in nugget_keys], [str(c.answer_id) for c in nugget_keys],
        [c.annotator for c in nugget_keys], [LEVELS[c.support] for c in nugget_keys], rule)}
    combined_cites = {}
    for key, chunk, value in combine_support(
            [f"{c.answer_id}\x1f{c.sentence}" for c in cite_keys], cite_chunks,
            [c.annotator for c in cite_keys], [LEVELS[c.support] for c in cite_keys], rule):
        answer_id, sentence = str(key).split("\x1f")
        combined_cites[(int(answer_id), int(sentence), chunk)] = int(value)

    answer_of_query = {q: a for a, q in query_of.items()}
    nuggets.sort(key=lambda n: (n[1], n[0]))
    sentences.sort(key=lambda s: (query_of[int(s[0])], s[1]))
    citations.sort(key=lambda c: (query_of[int(c[0])], c[1], c[3]))
    return AnswerLabels(
        answered=[q for _, q in answers],
        nugget_query_ids=[n[1] for n in nuggets],
        nugget_names=[n[2] for n in nuggets],
        nugget_vital=[n[3] == "vital" for n in nuggets],
        nugget_levels=[combined_nuggets.get((int(n[0]), int(answer_of_query[n[1]])), -1)
                       for n in nuggets],
        sentence_query_ids=[query_of[int(s[0])] for s in sentences],
        sentence_texts=[s[2] for s in sentences],
        citation_query_ids=[query_of[int(c[0])] for c in citations],
        citation_sentences=[int(c[1]) for c in citations],
        citation_chunk_ids=[c[2] for c in citations],
        citation_levels=[combined_cites.get((int(c[0]), int(c[1]), c[2]), -1) for c in citations],
        unplaced=sorted(unplaced),
    )
