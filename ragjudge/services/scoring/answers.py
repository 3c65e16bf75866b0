"""The judgments of generated answers as the answer measures take them (one rule-combined
judgment per thing judged), and what a project that judges answers scores by default.

- :func:`answer_labels`: one run's answers and their combined judgments, with the queries whose
  answers (of any run) are judged (:func:`judged_answer_queries`): the answer measures are
  computed on those queries for every run, graded or not.
- :func:`scored_run_names`, :func:`scored_run`: the stored rankings and the runs of generated
  answers only (a project may judge answers it holds no ranking of).
- :func:`default_measures`: the scorecard, with :data:`ANSWER_MEASURES` once answers are judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from ragjudge.services.events.answers import BATCH, LEVELS, current_judgments, judgments_stamp
from ragjudge.store.sqltext import fetch, listed


if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from ragjudge.metrics.answers import AnswerLabels
    from ragjudge.metrics.data import Run
    from ragjudge.services.project.database import Project


def judged_answer_queries(connection: Connection, rule: str,
                          query_ids: Sequence[str] | None = None,
                          cache: dict | None = None) -> list[str]:
    """The queries (of ``query_ids``, or all) whose answers, of any run, somebody judged: under
    ``annotator:NAME`` that annotator, else anyone. Every run's answer measures are computed on
    these queries (a run without an answer there is left out, and counted).

    ``cache`` (a dict kept with the open project) keeps the answer for as long as no judgment
    is written (the table is append-only: its newest id says so)."""
    who = rule.split(":", 1)[1] if rule.startswith("annotator:") else None
    stamp = judgments_stamp(connection)
    key = ("judged answers", who)
    if cache is not None and key in cache and cache[key][0] == stamp:
        judged = cache[key][1]
    else:
        judged = frozenset(c.query_id for c in current_judgments(
            connection, annotators=None if who is None else [who]))
        if cache is not None:
            cache[key] = (stamp, judged)
    if query_ids is None:
        return sorted(judged)
    return sorted(q for q in set(query_ids) if q in judged)


def answer_labels(connection: Connection, run_name: str | None, rule: str,
                  query_ids: Sequence[str] | None = None, *,
                  cache: dict | None = None) -> AnswerLabels:
    """:class:`ragjudge.metrics.answers.AnswerLabels` of ``run_name``'s answers (of some
    queries): their sentences and citations, the nuggets of their queries, and each nugget's and
    each citation's support with the annotators combined under ``rule``; and the queries whose
    answers (of any run) are judged (:func:`judged_answer_queries`; ``cache`` as there).

    As for chunk support (``ragjudge.services.scoring.rag``): an annotator's current judgment is their
    newest event; those who never judged a thing have no opinion about it; the opinions are
    combined with the gold rule on 0 none, 1 partial, 2 full (``median`` the lower median,
    ``annotator:NAME`` that annotator only; ``adjudicated`` falls back to ``median``)."""
    from ragjudge.metrics.answers import AnswerLabels
    from ragjudge.services.gold.support import combine_support, support_rule

    rule = support_rule(rule)
    judged_queries = judged_answer_queries(connection, rule, query_ids, cache)
    if run_name is None:
        return AnswerLabels([], judged_query_ids=judged_queries)
    stmt = "SELECT id, query_id FROM answers WHERE run = :run"
    answers: list[Any] = []
    if query_ids is None:
        answers = fetch(connection, stmt + " ORDER BY query_id", {"run": run_name})
    else:
        wanted = list(dict.fromkeys(query_ids))
        for at in range(0, len(wanted), BATCH):
            among, named = listed("query", wanted[at:at + BATCH])
            answers += fetch(connection, stmt + f" AND query_id IN ({among}) ORDER BY query_id",
                             {"run": run_name, **named})
        answers.sort(key=lambda a: a[1])
    query_of = {int(a): q for a, q in answers}
    ids = list(query_of)
    sentences: list[Any] = []
    citations: list[Any] = []
    nuggets: list[Any] = []
    for at in range(0, len(ids), BATCH):
        among, named = listed("answer", ids[at:at + BATCH])
        sentences += fetch(connection, "SELECT answer_id, position, text FROM answer_sentences "
                                       f"WHERE answer_id IN ({among})", named)
        citations += fetch(connection, "SELECT answer_id, sentence, chunk_id, position FROM "
                                       f"answer_citations WHERE answer_id IN ({among})", named)
    placed = {int(c[0]) for c in citations}
    unplaced: list[str] = []
    for at in range(0, len(ids), BATCH):
        among, named = listed("answer", [a for a in ids[at:at + BATCH] if a not in placed])
        unplaced += [query_of[int(a)] for (a,) in fetch(
            connection, f"SELECT DISTINCT answer_id FROM citations WHERE answer_id IN ({among})", named)]
    queries = sorted(set(query_of.values()))
    for at in range(0, len(queries), BATCH):
        among, named = listed("query", queries[at:at + BATCH])
        nuggets += fetch(connection, "SELECT id, query_id, text, importance, weight FROM nuggets "
                                     f"WHERE query_id IN ({among}) AND removed = :no "
                                     "AND kind = 'nugget'", {**named, "no": False})
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
        nugget_weights=[None if n[4] is None else float(n[4]) for n in nuggets],
        nugget_levels=[combined_nuggets.get((int(n[0]), int(answer_of_query[n[1]])), -1)
                       for n in nuggets],
        sentence_query_ids=[query_of[int(s[0])] for s in sentences],
        sentence_texts=[s[2] for s in sentences],
        citation_query_ids=[query_of[int(c[0])] for c in citations],
        citation_sentences=[int(c[1]) for c in citations],
        citation_chunk_ids=[c[2] for c in citations],
        citation_levels=[combined_cites.get((int(c[0]), int(c[1]), c[2]), -1) for c in citations],
        unplaced=sorted(unplaced),
        judged_query_ids=judged_queries,
    )


# -- the runs and measures of a project that judges answers ---------------------------------

ANSWER_MEASURES = ("AnswerNuggets(strict,vital)", "AnswerNuggets(all)", "CitationPrecision",
                   "CitationRecall")
"""The answer measures of the default scorecard once the project has judged answers: the TREC
2024 RAG track's primary nugget score (vital nuggets, full support only), its all-nuggets score,
and citation precision and recall."""


def answer_run_names(project: Project) -> list[str]:
    """The runs that have generated answers in the project, sorted (a run of answers only has
    no ranking: it is not among ``ragjudge.services.runs.stored.project_run_names``)."""
    with project.connect() as connection:
        return [run for (run,) in fetch(connection, "SELECT DISTINCT run FROM answers ORDER BY run")]


def scored_run_names(project: Project) -> list[str]:
    """Every run ``ragjudge eval`` scores by default: the stored rankings and the runs of
    generated answers, sorted."""
    from ragjudge.services.runs.stored import project_run_names

    return sorted(set(project_run_names(project)) | set(answer_run_names(project)))


def scored_run(project: Project, name: str) -> Run:
    """The run stored under ``name``, or for a run of generated answers only an empty ranking
    of that name (its answer measures come from its answers; measures of a ranking are
    undefined for it)."""
    from ragjudge.metrics.data import Run
    from ragjudge.services.runs.stored import project_run, project_run_names

    if name not in project_run_names(project) and name in answer_run_names(project):
        return Run([], [], None, ordered=True, name=name)
    return project_run(project, name)


def has_judged_answers(project: Project) -> bool:
    """Whether some answer judgment is current (not undone to nothing)."""
    with project.connect() as connection:
        return bool(judged_answer_queries(connection, "median",
                                          cache=project.__dict__.setdefault("_rag_support_cache", {})))


def has_grades(project: Project) -> bool:
    """Whether the project holds a relevance grade or an adjudication (one event is enough)."""
    with project.connect() as connection:
        return bool(fetch(connection, "SELECT id FROM labels WHERE grade IS NOT NULL LIMIT 1")
                    or fetch(connection, "SELECT id FROM adjudications LIMIT 1"))


def default_measures(project: Project) -> list[str]:
    """The scorecard of a project when no measure is named (``eval``, ``compare``, the
    evaluation screen): the ranking measures (``ragjudge.services.scoring.files.DEFAULT_MEASURES``),
    and once answers are judged the answer measures (:data:`ANSWER_MEASURES`) after them — alone
    when the project has no relevance grade at all (a project that judges answers only)."""
    from ragjudge.services.scoring.files import DEFAULT_MEASURES

    if not has_judged_answers(project):
        return list(DEFAULT_MEASURES)
    if not has_grades(project):
        return list(ANSWER_MEASURES)
    return [*DEFAULT_MEASURES, *ANSWER_MEASURES]
