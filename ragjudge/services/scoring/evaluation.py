"""Evaluation use cases: qrels and runs from a project or from files, into ``ragjudge.metrics``.

- Qrels: a project's gold qrels (:func:`ragjudge.services.gold.qrels.gold_qrels`, the rule named) or a
  file (TREC ``qid 0 chunk grade`` through the metrics library's bulk parser, or JSONL qrels).
- Runs: a run stored in the project (``run_entries``, read with one Core select per run straight
  into arrays, in the stored rank order) or a file (TREC through the bulk parser; JSONL through
  :func:`ragjudge.formats.jsonl.read_jsonl`).
- Strata (``--by FIELD``): a query's ``category`` or any key of its ``meta``; every stratum gets
  its own block of results, the overall block stays.
- Comparisons: each run against the baseline on the queries both means are over
  (:func:`pairing`), into :func:`ragjudge.metrics.significance.compare_runs`, Holm over the
  comparisons (:func:`compare`).
- Why a measure is undefined on a query, where it can say (:func:`left_out_reasons`).

Nothing here prints: the CLI and the TUI render what these functions return.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
import numpy as np
from ragjudge.errors import InputError, UsageError
from ragjudge.metrics.data import Qrels, Run
from ragjudge.metrics.evaluate import EvalResult, evaluate
from ragjudge.metrics.registry import Measure, parse_measure
from ragjudge.services.scoring.files import check_file, run_name_of
from ragjudge.safetext import quote

# What an evaluation of files with the measures of a ranking does not need is imported where
# it is needed: the sampled estimators (their measures' module, ragjudge.metrics.sampled, is
# loaded by the first of them parsed), the labels of RAG and answer measures, the bootstrap
# and the paired tests. ``ragjudge eval --qrels --run`` starts without them
# (tests/house/test_startup_imports.py).

if TYPE_CHECKING:
    from ragjudge.metrics.sampled import PoolSample
    from ragjudge.metrics.significance import PairedComparison
    from ragjudge.services.access.rights import Access
    from ragjudge.services.gold.gold import Composition, Gold
    from ragjudge.services.labels.sampling import StoredSample
    from ragjudge.services.project.database import Project


NO_STRATUM = "(none)"
"""The stratum of a query that has no value for the ``--by`` field."""


def project_qrels(project: Project, rule: str | None = None) -> tuple[Qrels, str]:
    """The project's gold qrels under ``rule`` (default: the project's rule), and the rule
    (:func:`ragjudge.services.gold.gold.gold`; :func:`project_gold` keeps its composition).

    The qrels carry the top of the project's scale (ERR's g_max), so that a query's ERR does not
    depend on the grades other queries happen to have."""
    found = project_gold(project, rule)
    return found.qrels(), found.composition.rule


def project_gold(project: Project, rule: str | None = None, *,
                 runs: Mapping[str, Run] | None = None) -> Gold:
    """:func:`ragjudge.services.gold.gold.gold` (``runs``: the project's runs when already read)."""
    from ragjudge.services.gold.gold import gold

    return gold(project, rule, runs=runs)


def stratum_of(value: Any) -> str:
    if value is None or value == "" or value == [] or value == {}:
        return NO_STRATUM
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def project_strata(project: Project, by: str) -> dict[str, str]:
    """``{query id: stratum}`` from the queries' ``category`` (``by="category"``) or
    ``meta[by]``. Raises a UsageError when no query has the field."""
    from ragjudge.store.sqltext import fetch, json_value

    with project.connect() as connection:
        rows = [(qid, cat, json_value(connection, meta))
                for qid, cat, meta in fetch(connection, "SELECT id, category, meta FROM queries")]
    return _strata_of(rows, by, "the project's queries")


def file_strata(path: str | os.PathLike, by: str) -> dict[str, str]:
    """``{query id: stratum}`` from a queries file (JSONL or CSV, ragjudge's query fields)."""
    check_file(path, "queries")
    name = Path(path).name.lower()
    if name.endswith(".csv") or name.endswith(".csv.gz"):
        from ragjudge.formats.csvfile import read_csv

        records = read_csv("queries", str(path))
    else:
        from ragjudge.formats.jsonl import read_jsonl

        records = read_jsonl("queries", str(path))
    return _strata_of(((r.id, r.category, r.meta) for r in records), by, str(path))


def _strata_of(rows: Iterable[tuple[str, Any, Any]], by: str, where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    seen_field = False
    fields: dict[str, None] = {}  # the fields the queries do have, for the message
    for qid, category, meta in rows:
        if category is not None:
            fields.setdefault("category")
        if isinstance(meta, dict):
            fields.update(dict.fromkeys(str(k) for k in meta))
        if by == "category":
            value = category
        else:
            value = meta.get(by) if isinstance(meta, dict) else None
        if value is not None:
            seen_field = True
        out[str(qid)] = stratum_of(value)
    if not seen_field:
        what = "value" if by == "category" else "key in its meta"
        if not out:
            raise UsageError(f"--by {by}: {where} holds no queries.")
        if fields:
            names = sorted(fields, key=lambda f: (f != "category", f))
            listed = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
            advice = f"The queries have: {listed}; give one of them to --by."
        else:
            advice = ("The queries have no category and nothing in their meta to stratify by; "
                      "give them a 'category' or a meta field and import them again.")
        raise UsageError(f"--by {by}: no query in {where} has a {quote(by)} {what}. {advice}")
    return out


@dataclass(frozen=True)
class RunSpec:
    """A run as named on the command line: a file, or a run stored in the project."""

    text: str
    name: str
    path: str | None = None

    @property
    def from_project(self) -> bool:
        return self.path is None


def resolve_runs(texts: Sequence[str], names: Sequence[str] | None = None, *,
                 project_runs: Sequence[str] | None = None) -> list[RunSpec]:
    """Decide for each ``--run`` whether it is a file or a project run.

    An existing file wins; otherwise, with a project, a stored run of that name; otherwise the
    file is missing (InputError). ``names`` (``--name``) rename the runs in order. Two runs may
    not end up with one name.
    """
    from ragjudge.formats.source import path_kind

    names = list(names or [])
    if len(names) > len(texts):
        raise UsageError(f"{len(names)} --name for {len(texts)} --run: give one name per run.")
    if any(not n.strip() for n in names):
        raise UsageError("--name is empty or only spaces: a run's name needs a visible character.")
    specs: list[RunSpec] = []
    for i, text in enumerate(texts):
        given = names[i] if i < len(names) else None
        try:
            is_file = path_kind(text) == "file"
        except InputError:  # no file can have this name; a stored run still may
            if project_runs is None or text not in project_runs:
                raise
            is_file = False
        if is_file:
            specs.append(RunSpec(text, given or run_name_of(text), str(text)))
        elif project_runs is not None and text in project_runs:
            specs.append(RunSpec(text, given or text, None))
        elif path_kind(text) == "folder":
            raise InputError("is a folder, not a run file.", file=text)
        elif project_runs is not None and not _looks_like_path(text):
            listed = ", ".join(project_runs) if project_runs else "none yet"
            raise UsageError(
                f"--run {text}: no such file, and the project has no run of that name. "
                f"Its runs: {listed}."
            )
        else:
            raise InputError("no such run file.", file=text)
    seen: dict[str, str] = {}
    for spec in specs:
        if spec.name in seen:
            raise UsageError(
                f"two runs are both named {quote(spec.name)} ({seen[spec.name]} and {spec.text}); "
                "name them apart with --name."
            )
        seen[spec.name] = spec.text
    return specs


def _looks_like_path(text: str) -> bool:
    return os.sep in text or "/" in text or Path(text).suffix.lower() in (
        ".trec", ".txt", ".run", ".gz", ".jsonl", ".json", ".tsv", ".csv")


@dataclass
class Evaluation:
    """Every run evaluated on the same queries, and (with ``--by``) the strata of the queries."""

    measures: list[str]
    results: dict[str, EvalResult]
    query_ids: list[str]
    averaging: str
    queries_mode: str
    threshold: int
    rule: str | None = None
    qrels_source: str = ""
    by: str | None = None
    strata: dict[str, list[str]] = field(default_factory=dict)
    """stratum -> its query ids (in evaluation order); empty without ``by``"""
    composition: Composition | None = None
    """what the project's gold is made of (:class:`ragjudge.services.gold.gold.Composition`);
    None for qrels from a file"""
    left_out: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    """run -> measure -> query -> why the measure is undefined there (for the measures that can
    say: the answer measures, Attribution, and every measure of a ranking on a run of answers
    only; :func:`left_out_reasons`)"""
    sample: dict[str, Any] | None = None
    """the project's sample the sampled estimators read
    (:func:`ragjudge.services.scoring.sampled.sample_summary`); None without one"""
    hidden: frozenset[str] = frozenset()
    """the queries whose own values the reader may not see (:func:`hide_for`): left out of
    :meth:`per_query`; the means stay over every query"""
    hidden_strata: list[str] = field(default_factory=list)
    """strata of one hidden query (a stratum of one query shows its values): taken out of
    :attr:`strata` by :func:`hide_for`"""

    @property
    def run_names(self) -> list[str]:
        return list(self.results)

    def aggregate(self, run: str, stratum: str | None = None) -> dict[str, float]:
        result = self.results[run]
        if stratum is not None:
            result = result.subset(self.strata[stratum])
        return result.aggregate()

    def per_query(self, run: str, stratum: str | None = None) -> dict[str, dict[str, float]]:
        """Each query's values of ``run``, queries in natural order (q2 before q10): the order
        every table, CSV, JSON and page lists them in."""
        from ragjudge.safetext import natural_key

        result = self.results[run]
        if stratum is not None:
            result = result.subset(self.strata[stratum])
        values = result.per_query()
        return {query: values[query] for query in sorted(values, key=natural_key)
                if query not in self.hidden}

    def hidden_in(self, stratum: str | None = None) -> list[str]:
        """The queries (of ``stratum``) :meth:`per_query` leaves out for this reader, in natural
        order."""
        from ragjudge.safetext import natural_key

        if not self.hidden:
            return []
        queries = self.query_ids if stratum is None else self.strata[stratum]
        return sorted((q for q in queries if q in self.hidden), key=natural_key)

    def n_queries(self, stratum: str | None = None, *, run: str | None = None) -> int:
        """Queries evaluated (of ``run``: with averaging over answered queries they differ)."""
        if run is not None:
            result = self.results[run]
            if stratum is not None:
                result = result.subset(self.strata[stratum])
            return result.n_queries
        return len(self.query_ids) if stratum is None else len(self.strata[stratum])

    def intervals(self, run: str, *, resamples: int = 2_000, seed: int = 0,
                  stratum: str | None = None) -> dict[str, tuple[float, float, float]]:
        """``{measure: (mean, low, high)}``: the 95 % bootstrap interval of each mean over the
        queries where the measure is defined."""
        from ragjudge.metrics.significance import bootstrap_ci

        result = self.results[run]
        if stratum is not None:
            result = result.subset(self.strata[stratum])
        out = {}
        for j, label in enumerate(result.labels):
            column = result.values[:, j]
            column = column[~np.isnan(column)]
            out[label] = bootstrap_ci(column, resamples=resamples, seed=seed)
        return out


def evaluate_all(
    qrels: Qrels,
    runs: Mapping[str, Run],
    measures: Sequence[str],
    *,
    threshold: int = 1,
    queries: Any = "judged",
    project: Project | None = None,
    rule: str | None = None,
    qrels_source: str = "",
    strata: Mapping[str, str] | None = None,
    by: str | None = None,
    progress: Any = None,
    composition: Composition | None = None,
    sample: PoolSample | None = None,
    reader: Access | None = None,
) -> Evaluation:
    """Evaluate every run on the same queries. With a ``project``, the RAG measures that need
    labelled facets, nuggets, claims, entities or citations get them from it; a query with such
    labels and no relevance grade is evaluated too (its RAG measures are defined there), and so
    is a query whose generated answers somebody judged (its answer measures are).

    A run without a single ranked chunk (a run of generated answers only) has every measure of
    a ranking undefined (:func:`without_ranking`). Why a measure is undefined on a query is kept
    in :attr:`Evaluation.left_out` for the measures that can say (:func:`left_out_reasons`). ``composition``: what the project's gold is made of, kept for
    the output. ``sample``: the pool sample of a sampled judgment file; without it the
    sampled estimators read the project's current sample (:mod:`ragjudge.services.scoring.sampled`).
    ``reader``: who reads it when ``qrels`` are the project's gold: a blind reader's
    evaluation keeps the queries whose own values they may not see out of its per-query values
    (:func:`hide_for`)."""
    parsed = [parse_measure(m) for m in measures]
    # qrels from a file have no rule; the project's gold labels always have one
    from_file = rule is None and qrels_source and not qrels_source.startswith("project ")
    answers = any("answers" in m.needs for m in parsed)
    nothing = UsageError(
        "there are no judged queries to evaluate against"
        + (f" (the qrels file {qrels_source} holds no judgments)." if from_file
           else " (the project has no relevance labels and no judged answers yet; judge pairs "
                "with 'ragjudge annotate', answers with 'ragjudge annotate --answers')."
           if project is not None and answers
           else f" ({_empty_gold(project, rule, composition)})." if project is not None else ".")
    )
    if qrels.n_queries == 0 and not any(m.needs for m in parsed):
        raise nothing
    if queries == "run" and runs and not any(len(run) for run in runs.values()):
        raise UsageError(
            "--averaging run averages each run over the queries it ranks, and these runs rank no "
            "chunk (they have generated answers only): use --averaging judged, where each answer "
            "measure is averaged over the queries the run's answer can be scored on.")
    results: dict[str, EvalResult] = {}
    left_out: dict[str, dict[str, dict[str, str]]] = {}
    ahead = _evaluate_ahead(qrels, runs, parsed, threshold, queries)
    own_sample = _project_sample(project, parsed, rule) if sample is None else None
    for done, (name, run) in enumerate(runs.items()):
        if progress is not None:  # progress(done, total, description, unit), now and then
            progress(done, len(runs), "evaluating", "runs")
        extras = None
        if name in ahead:
            result = ahead[name].result()
        else:
            extras = project_extras(project, name, qrels, run, parsed, threshold, queries, rule,
                                    sample=sample if sample is not None else
                                    own_sample.pool if own_sample is not None else None)
            result = evaluate(qrels, run, parsed, threshold=threshold, queries=queries, extras=extras)
        if own_sample is not None:  # infAP from the sample's qrels, not the gold's judged pairs
            from ragjudge.services.scoring.sampled import infap_on_sample

            infap_on_sample(result, qrels, run, own_sample.pool, threshold)
        if len(run) == 0:
            without_ranking(result)
        result.run_name = name
        results[name] = result
        left_out[name] = left_out_reasons(result, extras, run)
    if progress is not None:
        progress(len(runs), len(runs), "evaluating", "runs")
    first = next(iter(results.values()))
    if qrels.n_queries == 0 and first.n_queries == 0:
        raise nothing
    summary = None
    if own_sample is not None:
        from ragjudge.services.scoring.sampled import sample_summary

        summary = sample_summary(own_sample, qrels)
    evaluation = Evaluation(
        measures=list(measures), results=results, query_ids=list(first.query_ids),
        averaging=first.averaging, queries_mode=first.queries, threshold=threshold, rule=rule,
        qrels_source=qrels_source, by=by, composition=composition, left_out=left_out,
        sample=summary,
    )
    if strata is not None:
        groups: dict[str, list[str]] = {}
        every = dict.fromkeys(q for r in results.values() for q in r.query_ids)
        for qid in every:
            groups.setdefault(strata.get(qid, NO_STRATUM), []).append(qid)
        evaluation.strata = dict(sorted(groups.items(), key=lambda kv: (kv[0] == NO_STRATUM, kv[0])))
    return evaluation if reader is None else hide_for(evaluation, qrels, reader)


def _empty_gold(project: Project, rule: str | None, composition: Composition | None = None) -> str:
    """Why the project's gold under ``rule`` judges nothing: no labels at all, or none that
    this rule reads (no adjudication yet, no reference, an annotator without grades)."""
    from ragjudge.services.events.labels import read_labels

    with project.connect() as connection:
        labels = read_labels(connection)
    if not len(labels.grade):
        return "the project has no labels yet; judge some pairs with 'ragjudge annotate'"
    n, who = len(labels.grade), len(set(labels.annotator.tolist()))
    have = (f"the project has {n:,} label{'s' * (n != 1)} by {who:,} "
            f"annotator{'s' * (who != 1)}")
    if rule == "adjudicated":
        return (f"no pair is adjudicated yet, and the rule 'adjudicated' reads adjudications only; "
                f"{have}: adjudicate disputed pairs with 'ragjudge adjudicate', or choose another --rule")
    if rule == "reference":
        return (f"the project has no reference annotator, and the rule 'reference' reads the "
                f"reference's grades only; {have}: import official qrels with 'ragjudge import "
                "qrels FILE --annotator NAME --reference', or choose another --rule")
    if rule is not None and rule.startswith("annotator:"):
        return f"{rule.split(':', 1)[1]} has graded no pair; {have}"
    if composition is not None and composition.llm_left_out:
        return (f"{have}, and the LLM annotators' ({', '.join(composition.llm_left_out)}) count only "
                "when named, as --rule annotator:NAME")
    return f"no label gives a grade under the rule {rule}; {have}"


NO_RANKING = "the run ranks no chunk (it has generated answers only)"


def without_ranking(result: EvalResult) -> None:
    """A run that ranks no chunk at all is a run of generated answers: every measure that reads
    a ranking is undefined for it (NaN, left out and counted), not 0 on every query; its answer
    measures stand."""
    for j, m in enumerate(result.measures):
        if "answers" not in m.needs:
            result.values[:, j] = np.nan


def left_out_reasons(result: EvalResult, extras: Mapping[str, Any] | None,
                     run: Run) -> dict[str, dict[str, str]]:
    """``{measure: {query: why it is undefined there}}`` for the queries ``result`` leaves out
    of a measure's mean, where the measure can say why: the answer measures
    (:func:`ragjudge.metrics.answers.undefined_reasons`: "the run has no answer", "the answer is
    not judged yet", "no nugget to count", ...), Attribution (no answer, no ranked chunk), and
    every measure of a ranking on a run of answers only (:data:`NO_RANKING`), and the sampled
    estimators (a query outside the sample, statAP with no relevant sampled chunk)."""
    out: dict[str, dict[str, str]] = {}
    qids = result.query_ids
    for j, m in enumerate(result.measures):
        undefined = np.isnan(result.values[:, j])
        if not undefined.any():
            continue
        given = (extras or {}).get(next(iter(m.needs), ""))
        if given is not None:
            reasons = _reasons_from_extras(m, given, qids, run)
        else:
            reasons = [NO_RANKING if len(run) == 0 else None] * len(qids)
        found = {q: why for q, why, nan in zip(qids, reasons, undefined.tolist()) if nan and why}
        if found:
            out[str(m)] = found
    return out


def _reasons_from_extras(m: Measure, given: Any, qids: Sequence[str],
                         run: Run) -> Sequence[str | None]:
    """Why ``m`` is undefined on each of ``qids``, from the extras it read (``given``: the
    labels or the sample of its first need, whose module its own import loaded)."""
    from ragjudge.metrics.answers import AnswerLabels, undefined_reasons
    from ragjudge.metrics.rag import CitationLabels, Citations, attribution_reasons
    from ragjudge.metrics.sampled import SAMPLE_KEY, PoolSample

    if "answers" in m.needs and isinstance(given, AnswerLabels):
        return undefined_reasons(m, given.align(qids))
    if "citations" in m.needs and isinstance(given, CitationLabels):
        answered = set(map(str, given.answered))
        ranked = set(run.query_ids)
        return attribution_reasons(Citations(
            np.array([q in answered for q in qids], dtype=bool),
            np.array([int(q in ranked) for q in qids], dtype=np.int64)))
    if len(run) == 0:
        return [NO_RANKING] * len(qids)
    if SAMPLE_KEY in m.needs and isinstance(given, PoolSample):
        from ragjudge.services.scoring.sampled import sample_reasons

        return sample_reasons(m, qids, given)
    return [None] * len(qids)


PARALLEL_ENTRIES = 500_000
"""From this many run entries in all, runs whose measures need nothing but the qrels and the run
are evaluated two at a time (numpy lets go of the interpreter in its array loops)."""


def _evaluate_ahead(qrels: Qrels, runs: Mapping[str, Run], parsed: Sequence[Measure],
                    threshold: int, queries: Any) -> dict[str, Any]:
    """run name -> a future of its :func:`evaluate`, started on two worker threads, when the
    runs are many and large enough and no measure needs the project's extras (else empty)."""
    if len(runs) < 2 or any(m.needs for m in parsed) or \
            sum(len(run) for run in runs.values()) < PARALLEL_ENTRIES:
        return {}
    from concurrent.futures import ThreadPoolExecutor

    qrels.index  # noqa: B018 - the pair index, built once before the threads read it
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="ragjudge-eval")
    ahead = {name: pool.submit(evaluate, qrels, run, parsed, threshold=threshold, queries=queries)
             for name, run in runs.items()}
    pool.shutdown(wait=False)  # the threads end when the last run is evaluated
    return ahead


def _project_sample(project: Project | None, measures: Sequence[Measure],
                    rule: str | None) -> StoredSample | None:
    """:func:`ragjudge.services.scoring.sampled.project_sample`: a project's gold only (``rule``
    given) is estimated from the project's sample, and only then is that module loaded."""
    if project is None or rule is None:
        return None
    from ragjudge.services.scoring.sampled import project_sample

    return project_sample(project, measures, rule)


def project_extras(project: Project | None, name: str, qrels: Qrels, run: Run, parsed: Sequence[Measure],
                    threshold: int | None, queries: Any, rule: str | None, *,
                    sample: PoolSample | None = None) -> dict[str, Any] | None:
    """The extras of RAG measures (facets, nuggets, ...) from the project, when any is asked,
    and the pool sample of the sampled estimators: ``sample`` (a prels file's), else the
    project's current one when the qrels are its gold (``rule`` given)."""
    needs = {key for m in parsed for key in m.needs}
    if not needs:
        return None
    from ragjudge.metrics.sampled import SAMPLE_KEY
    from ragjudge.services.scoring.sampled import missing_sample

    extras: dict[str, Any] = {}
    if SAMPLE_KEY in needs:
        stored = _project_sample(project, parsed, rule) if sample is None else None
        found = sample if sample is not None else None if stored is None else stored.pool
        if found is None:
            raise missing_sample(parsed, project is not None and rule is not None)
        extras[SAMPLE_KEY] = found
        needs.discard(SAMPLE_KEY)
        if not needs:
            return extras
    if project is None:
        raise UsageError(
            f"{', '.join(str(m) for m in parsed if set(m.needs) - {SAMPLE_KEY})} need labelled "
            "facets, nuggets or citations, which only a project has: evaluate with --db instead "
            "of --qrels."
        )
    from ragjudge.services.scoring.rag import rag_extras

    # the labels come keyed by query and chunk ids; the measures align them with the run
    only = None if isinstance(queries, str) else list(queries)
    return {**extras, **rag_extras(project, name, measures=parsed, rule=rule, only_queries=only)}


def hide_for(evaluation: Evaluation, qrels: Qrels, access: Access) -> Evaluation:
    """``evaluation`` as ``access`` may read it: the queries with a pair of the gold ``qrels``
    the reader has not judged keep out of its per-query values (:attr:`Evaluation.hidden`,
    :meth:`ragjudge.services.access.rights.Access.hidden_queries`)."""
    hidden = access.hidden_queries(qrels.to_dict())
    evaluation.hidden = hidden
    if hidden:
        single = [s for s, queries in evaluation.strata.items()
                  if len(queries) == 1 and queries[0] in hidden]
        evaluation.hidden_strata = single
        evaluation.strata = {s: q for s, q in evaluation.strata.items() if s not in single}
    return evaluation


def hidden_sentence(evaluation: Evaluation) -> str | None:
    """One sentence for a footer: how many queries' own values (and strata of one query) are
    not shown to this reader, and why; None when nothing is hidden."""
    n = len(evaluation.hidden.intersection(evaluation.query_ids))
    if not n and not evaluation.hidden_strata:
        return None
    text = (f"blind: {n:,} of {len(evaluation.query_ids):,} queries' own values are not shown "
            "(you have not judged every pair of their gold, and a query's value can give a "
            "grade away: P@1 is the top chunk's)")
    if evaluation.hidden_strata:
        k = len(evaluation.hidden_strata)
        text += f", nor {k:,} strat{'um' if k == 1 else 'a'} of one such query"
    return text + "; the means are over every query."


def explain_query(project: Project | None, run_name: str, qrels: Qrels, run: Run, query_id: str,
                  measure: str, *, threshold: int, access: Access | None,
                  rule: str | None = None) -> Any:
    """The step-by-step computation of ``measure`` for one query (``ragjudge explain`` and the
    evaluation screen). RAG measures get the project's facets, nuggets, entities or citations;
    the two Context Precision definitions are explained side by side.

    ``access``: who reads it, when the project's grades or runs are in it (None only for files
    alone). A reader who may not see every pair's grade gets it blind
    (:meth:`~ragjudge.metrics.explain.Explanation.blind`): the grades and ranks of the pairs
    they have not judged are not shown, nor the value unless they judged every pair of the
    query's gold (:meth:`ragjudge.services.access.rights.Access.hidden_queries`)."""
    from ragjudge.metrics.explain import explain

    if project is not None and access is None:
        raise UsageError("explaining a project's scores needs who reads them (an Access).")
    parsed = parse_measure(measure)
    explanation: Any = None
    extras = None
    if parsed.needs or parsed.definition.name.startswith("ContextPrecision"):
        from ragjudge.metrics.ragexplain import explain_rag

        extras = project_extras(project, run_name, qrels, run, [parsed], threshold, [query_id], rule)
        explanation = explain_rag(qrels, run, query_id, parsed, extras=extras, threshold=threshold)
    if explanation is None:
        stored = _project_sample(project, [parsed], rule) if not parsed.needs else None
        if stored is not None:  # infAP from the project's sample, as eval computes it
            from ragjudge.services.scoring.sampled import sample_qrels

            qrels = sample_qrels(qrels, stored.pool)
        explanation = explain(qrels, run, query_id, parsed, threshold=threshold, extras=extras)
    visible = None if access is None else access.grade_filter(query_id)
    if access is None or visible is None:
        return explanation
    hidden = access.hidden_queries({query_id: qrels.for_query(query_id)})
    return explanation.blind(visible, value_shown=query_id not in hidden)


@dataclass(frozen=True)
class Pairing:
    """The queries a paired comparison of run A (the baseline) with run B is over.

    Paired queries are those both runs' means are over: under ``--averaging judged`` (trec_eval
    ``-c``) every evaluated query, a query a run ranks nothing for counting 0 for it, as it does
    in that run's mean; under ``--averaging run`` each mean is over the run's own queries, and a
    paired test needs both values, so the queries only one run answers are left out.
    A measure undefined on some paired queries is compared where both values are defined."""

    run_a: str
    run_b: str
    mode: str
    """the evaluation's averaging: ``judged``, ``run`` or ``list``"""
    queries: list[str]
    """the paired queries, in evaluation order"""
    only_a: list[str] = field(default_factory=list)
    """queries only A answers: left out (``run``), or 0 for B (``judged``, ``list``)"""
    only_b: list[str] = field(default_factory=list)

    @property
    def zero_filled(self) -> bool:
        return self.mode != "run"

    def describe(self) -> str:
        """One sentence: how many queries are paired and what became of the others."""
        n = len(self.queries)
        if not self.zero_filled:
            text = f"paired on {n:,} quer{'y' if n == 1 else 'ies'} both runs answer"
            dropped = [f"{len(qs):,} quer{'y' if len(qs) == 1 else 'ies'} only {name} answers"
                       for name, qs in ((self.run_a, self.only_a), (self.run_b, self.only_b)) if qs]
            if dropped:
                text += "; " + " and ".join(dropped) + (" were" if sum(map(len, (self.only_a, self.only_b))) > 1
                                                        else " was") + " left out"
            return text
        text = (f"paired on {n:,} judged quer{'y' if n == 1 else 'ies'}, a query a run ranks "
                "nothing for counting 0 for it, as in its mean (trec_eval -c)")
        missing = [f"{name} ranks nothing for {len(qs):,}"
                   for name, qs in ((self.run_a, self.only_b), (self.run_b, self.only_a)) if qs]
        if missing:
            text += ": " + " and ".join(missing)
        return text

    def as_dict(self) -> dict[str, Any]:
        """JSON: ``queries`` paired, whether a query a run misses counts 0 (``missing_count_0``,
        else it is left out), and the queries only A / only B answers."""
        return {"run_a": self.run_a, "run_b": self.run_b, "queries": len(self.queries),
                "missing_count_0": self.zero_filled, "sentence": self.describe(),
                "only_a": list(self.only_a), "only_b": list(self.only_b)}


def pairing(evaluation: Evaluation, run_a: str, run_b: str) -> Pairing:
    """The queries :func:`compare` pairs run A with run B on (:class:`Pairing`)."""
    a, b = evaluation.results[run_a], evaluation.results[run_b]
    in_b = set(b.query_ids)
    in_a = set(a.query_ids)
    if evaluation.queries_mode == "run":
        return Pairing(run_a, run_b, "run", [q for q in a.query_ids if q in in_b],
                       [q for q in a.query_ids if q not in in_b],
                       [q for q in b.query_ids if q not in in_a])
    # every run is evaluated on the same queries; a run of answers only ranks nothing anywhere,
    # and its measures of a ranking are undefined, not 0: it is not said to miss queries
    ranks_a, ranks_b = bool(a.answered.any()), bool(b.answered.any())
    answered_a = {q for q, yes in zip(a.query_ids, a.answered.tolist()) if yes}
    answered_b = {q for q, yes in zip(b.query_ids, b.answered.tolist()) if yes}
    paired = [q for q in a.query_ids if q in in_b]
    return Pairing(run_a, run_b, evaluation.queries_mode, paired,
                   [q for q in paired if ranks_b and q in answered_a and q not in answered_b],
                   [q for q in paired if ranks_a and q in answered_b and q not in answered_a])


def compare(
    evaluation: Evaluation,
    *,
    baseline: str | None = None,
    alpha: float = 0.05,
    resamples: int = 10_000,
    permutations: int = 10_000,
    seed: int = 0,
    correction: str = "holm",
) -> list[PairedComparison]:
    """Paired comparison of the baseline (default: the first run) with each other run.

    Each pair of runs is compared on the queries their means are over (:func:`pairing`): under
    ``judged`` averaging every evaluated query, a query a run ranks nothing for counting 0 (as
    trec_eval -c counts it in the run's mean); under ``run`` averaging the queries both runs
    answer. A measure undefined (NaN) on some of them is compared where both runs have it.
    ``mean_a`` and ``mean_b`` are each run's mean as ``evaluate_all`` gives it (what ``ragjudge
    eval`` prints under the same averaging); the difference, its 95 % paired bootstrap interval
    and the tests are over the paired queries. With more than one run compared, the p-values
    of each measure are adjusted over the comparisons with the baseline (``correction``: Holm's
    by default, or bonferroni, bh, none) and the verdict follows the adjusted randomization
    p-value; the interval is not adjusted (Holm's step-down has no matching interval;
    Bonferroni's would answer another question): the two are labelled apart wherever they are
    shown. :func:`ragjudge.services.scoring.comparisons.compare_baseline` adds the other tests.
    """
    from ragjudge.metrics.corrections import correct
    from ragjudge.metrics.significance import verdict

    names = evaluation.run_names
    if len(names) < 2:
        raise UsageError("compare needs at least two runs.")
    base = baseline if baseline is not None else names[0]
    others = [name for name in names if name != base]
    options: dict[str, Any] = dict(alpha=alpha, resamples=resamples, permutations=permutations,
                                   seed=seed)
    by_run = {other: _compare_pair(evaluation, pairing(evaluation, base, other), options)
              for other in others}
    if len(others) > 1:  # corrected over the comparisons with the baseline, per measure
        for j in range(len(evaluation.measures)):
            rows = [by_run[o][j] for o in others]
            p_rand = correct([r.p_randomization for r in rows], correction)
            p_t = correct([r.p_t_test for r in rows], correction)
            for k, o in enumerate(others):
                by_run[o][j] = replace(rows[k], p_randomization_adjusted=float(p_rand[k]),
                                       p_t_test_adjusted=float(p_t[k]),
                                       verdict=verdict(rows[k].difference, float(p_rand[k]), alpha))
    return [_with_run_means(by_run[o][j], evaluation)
            for j in range(len(evaluation.measures)) for o in others]


def _compare_pair(evaluation: Evaluation, pair: Pairing, options: dict[str, Any]
                  ) -> list[PairedComparison]:
    """Run A against run B on the paired queries, one row per measure (in the evaluation's
    order); a measure undefined on some of them, on the queries where both runs have it."""
    from ragjudge.metrics.significance import compare_runs

    labels = evaluation.measures
    values = {}
    for name in (pair.run_a, pair.run_b):
        result = evaluation.results[name]
        position = {q: i for i, q in enumerate(result.query_ids)}
        rows = np.array([position[q] for q in pair.queries], dtype=np.int64)
        values[name] = result.values[rows].T  # (measures, queries)
    defined = ~np.isnan(values[pair.run_a]) & ~np.isnan(values[pair.run_b])
    complete = defined.all(axis=1)
    by_label: dict[str, PairedComparison] = {}
    whole = [j for j in range(len(labels)) if complete[j]]
    if whole:
        for row in compare_runs({n: v[whole] for n, v in values.items()},
                                [labels[j] for j in whole], baseline=pair.run_a, **options):
            by_label[row.measure] = row
    for j in range(len(labels)):
        if not complete[j]:
            keep = defined[j]
            by_label[labels[j]], = compare_runs({n: v[j:j + 1, keep] for n, v in values.items()},
                                                [labels[j]], baseline=pair.run_a, **options)
    return [by_label[label] for label in labels]


def _with_run_means(row: PairedComparison, evaluation: Evaluation) -> PairedComparison:
    """``row`` with each run's own mean (the one ``eval`` gives) instead of the mean over the
    paired queries, which differs when the runs do not share every query."""
    means = {side: evaluation.aggregate(name)[row.measure]
             for side, name in (("mean_a", row.run_a), ("mean_b", row.run_b))}
    undefined = {k: v for k, v in row.undefined.items() if k not in means}
    for side, value in means.items():
        if math.isnan(value):
            undefined[side] = "the measure is undefined on every query of the run"
    return replace(row, mean_a=means["mean_a"], mean_b=means["mean_b"], undefined=undefined)
