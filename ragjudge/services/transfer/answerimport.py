"""Importing generated answers (with their sentences and citations) and judgments of them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from sqlalchemy import (
    delete,
    func, insert, select, update,
)
from sqlalchemy.engine import Connection
from ragjudge.errors import InputError
from ragjudge.formats.sentences import split_sentences
from ragjudge.store.annotators import ensure_annotators
from ragjudge.store.schema import (
    Answer, AnswerCitation, AnswerJudgment, AnswerSentence, Citation, Nugget, Run, utcnow,
)
from ragjudge.services.transfer.common import FIRST_FEW, ImportResult, batches, check_annotator
from ragjudge.services.transfer.definitions import MAX_ID, ReferenceCheck, new_id, refs_of, too_long_key
from ragjudge.safetext import quote


def _answer_parts(record: Any) -> tuple[str, list[str], list[tuple[str, list[str]]]]:
    """An answer line as (text, the answer's cited chunks, its sentences with their citations).

    Plain ``text`` is split into sentences (:func:`ragjudge.formats.sentences.split_sentences`),
    which then cite nothing of their own; ``sentences`` give the text (joined by spaces) and the
    answer's citations (every sentence's, in order). A chunk cited twice is one citation."""
    if record.sentences is None:
        sentences: list[tuple[str, list[str]]] = [(text, []) for text in split_sentences(record.text)]
        return record.text, list(dict.fromkeys(record.cited)), sentences
    sentences = [(s.text, list(dict.fromkeys(s.citations))) for s in record.sentences]
    cited = list(dict.fromkeys(c for _, cites in sentences for c in cites))
    return " ".join(text for text, _ in sentences), cited, sentences


def _answer_chunks(record: Any) -> list[str]:
    if record.sentences is None:
        return list(record.cited)
    return [c for s in record.sentences for c in s.citations]


def _runs_without_ranking(connection: Connection, items: list[tuple[int, Any]], file: str) -> list[str]:
    """The runs named in ``items`` that have no ranking in the project (refusing a name too
    long to be a run's). Their answers are welcome: a project may judge the answers of
    generators without ever holding their rankings (the TREC 2024 RAG setting); such a run is
    scored on its answers only."""
    first_line: dict[str, int] = {}
    for line, record in items:
        if too_long_key(record.run):
            raise InputError(f"a run name has at most {MAX_ID} bytes (in UTF-8).", file=file, line=line,
                             field="run")
        first_line.setdefault(record.run, line)
    runs_t = Run.__table__
    known: set[str] = set()
    for part in batches(sorted(first_line)):
        known.update(connection.scalars(select(runs_t.c.name).where(runs_t.c.name.in_(part))))
    return sorted(name for name in first_line if name not in known)


def _stored_answer(connection: Connection, answer_id: int) -> tuple[list[str], list[tuple[str, list[str]]]]:
    citations_t, sentences_t = Citation.__table__, AnswerSentence.__table__
    cites_t = AnswerCitation.__table__
    cited = list(connection.scalars(select(citations_t.c.chunk_id).where(
        citations_t.c.answer_id == answer_id).order_by(citations_t.c.position)))
    sentences: list[tuple[str, list[str]]] = [(text, []) for text in connection.scalars(select(sentences_t.c.text).where(
        sentences_t.c.answer_id == answer_id).order_by(sentences_t.c.position))]
    for sentence, chunk_id in connection.execute(
            select(cites_t.c.sentence, cites_t.c.chunk_id).where(cites_t.c.answer_id == answer_id)
            .order_by(cites_t.c.sentence, cites_t.c.position)):
        if sentence < len(sentences):
            sentences[sentence][1].append(chunk_id)
    return cited, sentences


def import_answers(connection: Connection, records: Iterable[tuple[int, Any]], file: str,
                    refs: ReferenceCheck, replace: bool, result: ImportResult) -> None:
    answers_t, citations_t = Answer.__table__, Citation.__table__
    sentences_t, cites_t = AnswerSentence.__table__, AnswerCitation.__table__
    items = list(records)
    result.read = len(items)
    refs_of(refs, items, _answer_chunks)
    refs.raise_if_missing(file)
    unranked = _runs_without_ranking(connection, items, file)
    if unranked:
        listed = ", ".join(f"'{name}'" for name in unranked[:FIRST_FEW])
        more = f" and {len(unranked) - FIRST_FEW:,} more" if len(unranked) > FIRST_FEW else ""
        result.notes.append(
            f"{len(unranked):,} run{'s have' if len(unranked) > 1 else ' has'} no ranking in the "
            f"project ({listed}{more}): scored on {'their' if len(unranked) > 1 else 'its'} "
            "answers only (a misspelt run name would show here).")
    conflicts: list[tuple[int, Any]] = []
    judged_before = 0
    for line, record in items:
        text, cited, sentences = _answer_parts(record)
        row = connection.execute(select(answers_t.c.id, answers_t.c.text).where(
            answers_t.c.query_id == record.query_id, answers_t.c.run == record.run)).first()
        if row is not None:
            if row.text == text and _stored_answer(connection, row.id) == (cited, sentences):
                result.unchanged += 1
                continue
            if not replace:
                conflicts.append((line, record))
                continue
            connection.execute(update(answers_t).where(answers_t.c.id == row.id).values(text=text))
            for table in (citations_t, cites_t, sentences_t):
                connection.execute(delete(table).where(table.c.answer_id == row.id))
            answer_id = row.id
            result.updated += 1
            judgments = AnswerJudgment.__table__
            judged_before += bool(connection.scalar(select(func.count()).select_from(judgments)
                                                    .where(judgments.c.answer_id == row.id)))
        else:
            answer_id = new_id(connection.execute(insert(answers_t).values(
                query_id=record.query_id, run=record.run, text=text)))
            result.added += 1
        if cited:
            connection.execute(insert(citations_t), [
                {"answer_id": answer_id, "chunk_id": c, "position": i} for i, c in enumerate(cited)])
        if sentences:
            connection.execute(insert(sentences_t), [
                {"answer_id": answer_id, "position": i, "text": s} for i, (s, _) in enumerate(sentences)])
        cites = [{"answer_id": answer_id, "sentence": i, "chunk_id": c, "position": j}
                 for i, (_, chunk_ids) in enumerate(sentences) for j, c in enumerate(chunk_ids)]
        if cites:
            connection.execute(insert(cites_t), cites)
    if conflicts:
        line, record = conflicts[0]
        raise InputError(
            f"{len(conflicts):,} answers differ from the project's answer of the same run and query "
            f"(first: run '{record.run}', query '{record.query_id}'). Pass --replace to update "
            "them. Nothing was imported.", file=file, line=line,
            field="text" if record.sentences is None else "sentences")
    if judged_before:
        result.notes.append(
            f"{judged_before:,} of the replaced answers had judgments; they are kept, and a "
            "citation judgment counts where its sentence still cites its chunk.")


def import_answer_labels(connection: Connection, records: Iterable[tuple[int, Any]], file: str,
                          annotator: str, refs: ReferenceCheck, result: ImportResult) -> None:
    """Answer judgments (nugget support, citation support) as events of each line's annotator
    (else ``annotator``), source ``import``; a line equal to the annotator's current judgment of
    the same thing adds nothing. The answer, the nugget (by its text, among the query's nuggets)
    and the citation must exist: answers and nuggets are imported first."""
    answers_t, nuggets_t, cites_t = Answer.__table__, Nugget.__table__, AnswerCitation.__table__
    sentences_t, judgments_t = AnswerSentence.__table__, AnswerJudgment.__table__
    items = list(records)
    result.read = len(items)
    refs_of(refs, items, lambda r: [r.chunk_id] if r.chunk_id else [])
    refs.raise_if_missing(file)
    _runs_without_ranking(connection, items, file)  # a run without an answer is refused below
    query_ids = sorted({r.query_id for _, r in items})
    answer_of: dict[tuple[str, str], int] = {}
    nugget_of: dict[tuple[str, str], int] = {}
    for part in batches(query_ids):
        answer_of.update({(q, run): i for i, q, run in connection.execute(
            select(answers_t.c.id, answers_t.c.query_id, answers_t.c.run)
            .where(answers_t.c.query_id.in_(part)))})
        for i, q, text in connection.execute(
                select(nuggets_t.c.id, nuggets_t.c.query_id, nuggets_t.c.text)
                .where(nuggets_t.c.query_id.in_(part), nuggets_t.c.removed.is_(False),
                       nuggets_t.c.kind == "nugget").order_by(nuggets_t.c.id)):
            nugget_of.setdefault((q, text), i)
    answer_ids = sorted(set(answer_of.values()))
    sentence_count: dict[int, int] = {}
    cited: set[tuple[int, int, str]] = set()
    current: dict[tuple, str | None] = {}
    for part in batches(answer_ids):
        sentence_count.update(connection.execute(
            select(sentences_t.c.answer_id, func.count()).where(sentences_t.c.answer_id.in_(part))
            .group_by(sentences_t.c.answer_id)).all())
        cited.update(connection.execute(select(cites_t.c.answer_id, cites_t.c.sentence, cites_t.c.chunk_id)
                                        .where(cites_t.c.answer_id.in_(part))).all())
        for row in connection.execute(
                select(judgments_t.c.answer_id, judgments_t.c.annotator, judgments_t.c.nugget_id,
                       judgments_t.c.sentence, judgments_t.c.chunk_id, judgments_t.c.support)
                .where(judgments_t.c.answer_id.in_(part)).order_by(judgments_t.c.id)):
            current[(row.answer_id, row.annotator, row.nugget_id, row.sentence, row.chunk_id)] = row.support
    events = []
    annotators: set[str] = set()
    now = utcnow()
    for line, r in items:
        answer_id = answer_of.get((r.query_id, r.run))
        if answer_id is None:
            raise InputError(f"run '{r.run}' has no answer to query '{r.query_id}' in the project. "
                             "Import the answers first (ragjudge import answers FILE). Nothing "
                             "was imported.", file=file, line=line, field="run")
        nugget_id = None
        if r.nugget is not None:
            nugget_id = nugget_of.get((r.query_id, r.nugget))
            if nugget_id is None:
                raise InputError(f"query '{r.query_id}' has no nugget {quote(r.nugget)}. Import the "
                                 "nuggets first (ragjudge import nuggets FILE). Nothing was "
                                 "imported.", file=file, line=line, field="nugget")
        else:
            count = sentence_count.get(answer_id, 0)
            if r.sentence >= count:
                raise InputError(f"the answer has {count} sentence{'s' if count != 1 else ''}, "
                                 f"numbered from 0; there is no sentence {r.sentence}. Nothing was "
                                 "imported.", file=file, line=line, field="sentence")
            if (answer_id, r.sentence, r.chunk_id) not in cited:
                raise InputError(f"sentence {r.sentence} of the answer does not cite chunk "
                                 f"'{r.chunk_id}'; only a cited chunk's support is judged. Nothing "
                                 "was imported.", file=file, line=line, field="chunk_id")
        who = check_annotator(r.annotator, file=file, line=line) if r.annotator else annotator
        key = (answer_id, who, nugget_id, r.sentence, r.chunk_id)
        if current.get(key) == r.support:
            result.unchanged += 1
            continue
        current[key] = r.support
        annotators.add(who)
        events.append({"answer_id": answer_id, "annotator": who, "nugget_id": nugget_id,
                       "sentence": r.sentence, "chunk_id": r.chunk_id, "support": r.support,
                       "created_at": now, "source": "import"})
    ensure_annotators(connection, annotators)
    for batch in batches(events):
        connection.execute(insert(judgments_t), batch)
    result.added = len(events)
    if result.read == 0:
        result.notes.append("The file holds no answer judgments.")
