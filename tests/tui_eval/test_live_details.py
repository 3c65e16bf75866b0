"""The evaluation screen's details pass reads what the engine holds instead of the database: its
agreement figures equal those of a fresh reading of the ratings (``load_ratings``), its gold
composition that of ``gold()``, and its intervals those of a bootstrap per run and measure --
through label events that number new pairs, new annotators, an LLM annotator, a complete
reference and adjudications, under every rule."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from projectkit import rights

from ragjudge.metrics.agreement import krippendorff_alpha
from ragjudge.metrics.agreement_report import disputed_units
from ragjudge.metrics.significance import bootstrap_ci
from ragjudge.services.access import roster
from ragjudge.services.agreement.ratings import load_ratings
from ragjudge.services.agreement.views import mean_pairwise_kappa
from ragjudge.services.gold.adjudication import adjudicate
from ragjudge.services.gold.gold import gold
from ragjudge.services.labels import events as judging
from ragjudge.services.runs import stored as ev_stored
from ragjudge.services.scoring import live
from ragjudge.services.scoring.livedetails import MIN_INTERVAL_QUERIES, intervals

MEASURES = ["P@5", "nDCG@10", "AP", "RR", "ContextPrecision@5"]
LLM = "llm:m"


def fresh_agreement(project) -> dict:
    """The screen's agreement figures as they were computed before: the ratings read from the
    database, every disputed unit listed, then counted per query in that order."""
    ratings = load_ratings(project)
    if ratings.matrix.size == 0:
        return {"alpha_ordinal": None, "alpha_nominal": None, "mean_kappa": None, "disputed": 0,
                "disputed_by_query": []}
    counts: dict[str, int] = {}
    disputed = disputed_units(ratings)
    for d in disputed:
        counts[d.unit[0]] = counts.get(d.unit[0], 0) + 1
    kappa, units, pairs = mean_pairwise_kappa(ratings)
    return {"alpha_ordinal": krippendorff_alpha(ratings, "ordinal").value,
            "alpha_nominal": krippendorff_alpha(ratings, "nominal").value,
            "mean_kappa": kappa, "kappa_units": units, "kappa_pairs": pairs,
            "disputed": len(disputed), "disputed_by_query": list(counts.items())}


def shown_agreement(details: live.LiveDetails) -> dict:
    out = {"alpha_ordinal": details.alpha_ordinal, "alpha_nominal": details.alpha_nominal,
           "mean_kappa": details.mean_kappa, "disputed": details.disputed,
           "disputed_by_query": list(details.disputed_by_query.items())}
    if details.mean_kappa is not None or details.kappa_pairs:
        out.update(kappa_units=details.kappa_units, kappa_pairs=details.kappa_pairs)
    return out


def label_at_random(project, rnd: random.Random, annotators: list[str], n: int) -> None:
    """``n`` labels on pairs of the runs (and some on chunks no run ranks for the query)."""
    ranked = {name: ev_stored.project_run(project, name).to_ranked()
              for name in ev_stored.project_run_names(project)}
    for _ in range(n):
        run = rnd.choice(sorted(ranked))
        query = rnd.choice(sorted(ranked[run]))
        chunks = ranked[run][query]
        chunk = rnd.choice(chunks if rnd.random() < 0.8 else ranked[rnd.choice(sorted(ranked))][query] or chunks)
        judging.record_label(project, annotator=rnd.choice(annotators), query_id=query, chunk_id=chunk,
                             grade=rnd.randint(0, 3))


def test_agreement_at_load_equals_a_fresh_reading(demo):
    engine = live.LiveEvaluation(demo, measures=MEASURES)
    engine.load()
    assert shown_agreement(engine.details()) == fresh_agreement(demo)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_agreement_follows_labels_exactly(demo, seed):
    """New pairs (numbered after the load, so out of the order of the ids), a new annotator,
    an LLM annotator left out, a complete reference's implied grades: equal to the last bit."""
    rnd = random.Random(seed)
    engine = live.LiveEvaluation(demo, measures=MEASURES)
    engine.load()
    roster.add(demo, LLM, kind="llm", access=rights(demo, "lead"))
    for step in range(4):
        label_at_random(demo, rnd, ["ana", "ben", "chen", "zoe", LLM], 30)
        if step == 2:
            roster.set_reference(demo, "ben", complete=True, access=rights(demo, "lead"))
        engine.poll()
        assert shown_agreement(engine.details()) == fresh_agreement(demo), step


def test_agreement_with_no_label_is_undefined(tmp_path):
    from projectkit import make_small_project

    project = make_small_project(str(tmp_path / "p.db"))
    try:
        engine = live.LiveEvaluation(project, measures=["P@5"])
        engine.load()
        details = engine.details()
        assert (details.alpha_ordinal, details.mean_kappa, details.disputed) == (None, None, 0)
        assert shown_agreement(details) == fresh_agreement(project)
    finally:
        project.close()


RULES = ["median", "majority", "max", "reference", "adjudicated", "annotator:ana", "annotator:nist"]


@pytest.mark.parametrize("include_llm", [False, True])
def test_composition_equals_the_gold_under_every_rule(tmp_path, include_llm):
    """The composition counted from the engine's pair sources is the one gold() counts: the
    reference's pairs, its closed world, the other annotators', the adjudications, who entered
    and which LLM annotator was left out."""
    import goldkit

    from ragjudge.services.project.database import Project

    db = str(tmp_path / "p.db")
    goldkit.make_project(db, tmp_path, complete=True)
    with Project.open(db) as project:
        roster.add(project, LLM, kind="llm", access=rights(project, "lead"))
        engine = live.LiveEvaluation(project, measures=MEASURES, include_llm=include_llm)
        engine.load()
        rnd = random.Random(4)
        label_at_random(project, rnd, ["ana", "ben", LLM], 25)
        adjudicate(project, query_id="q1", chunk_id=goldkit.dense(1)[0], grade=3, reason="checked", access=rights(project, "lead"))
        adjudicate(project, query_id="q5", chunk_id=goldkit.unretrieved(5), grade=2, reason="checked", access=rights(project, "lead"))  # a pair nobody ranks
        engine.poll()
        for rule in RULES:
            engine.set_rule(rule)
            # the gold's own decision, made as its view was, is what the composition counts
            people = not include_llm and not rule.startswith("annotator:")
            assert list(engine.labels.at().sources) == [(people, rule)], rule
            expected = gold(project, rule, include_llm=include_llm).composition
            assert engine.details().composition == expected, rule
            label_at_random(project, rnd, ["ana", LLM], 3)
            engine.poll()
            assert engine.labels.at().sources == {}, rule  # labels since: decided afresh
            assert engine.details().composition == gold(project, rule, include_llm=include_llm).composition, rule


def test_the_reference_rule_reads_no_adjudication(tmp_path):
    """``reference`` is the reference's grades alone, as ``eval --qrels`` reads the official
    file: the engine's full pass and its label-by-label updates leave adjudications out, as
    gold() does."""
    import goldkit

    from ragjudge.services.project.database import Project

    db = str(tmp_path / "p.db")
    goldkit.make_project(db, tmp_path)
    with Project.open(db) as project:
        adjudicate(project, query_id="q1", chunk_id=goldkit.bm25(1)[0], grade=0, reason="checked", access=rights(project, "lead"))
        adjudicate(project, query_id="q2", chunk_id=goldkit.dense(2)[3], grade=3, reason="checked", access=rights(project, "lead"))
        engine = live.LiveEvaluation(project, measures=MEASURES, rule="reference")
        engine.load()

        def same() -> None:
            q, c, g = engine.views["reference"].pairs()
            assert sorted(zip(q.tolist(), c.tolist(), g.tolist())) == sorted(gold(project, "reference").triples())

        same()
        adjudicate(project, query_id="q3", chunk_id=goldkit.bm25(3)[0], grade=3, reason="checked", access=rights(project, "lead"))
        engine.poll()
        same()


def per_measure(matrix: np.ndarray, resamples: int) -> list[tuple[float, float]]:
    """Each column's interval alone, NaN dropped (:meth:`Evaluation.intervals`)."""
    out = []
    for column in matrix.T:
        column = column[~np.isnan(column)]
        _, low, high = bootstrap_ci(column, resamples=resamples, seed=0)
        out.append((float(low), float(high)))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_intervals_of_every_run_at_once_equal_one_bootstrap_per_column(seed):
    """Columns defined on different queries (NaN elsewhere), some on too few, of several runs:
    each interval equals the bootstrap of that column alone (the same draws: same seed, same
    number of queries)."""
    rng = np.random.default_rng(seed)
    n, measures = int(rng.integers(6, 60)), ["a", "b", "c", "d"]
    matrices = {}
    for run in ("r1", "r2", "r3"):
        m = rng.random((n, len(measures)))
        m[rng.random(n) < 0.3, 1] = np.nan  # b: undefined on some queries, differently per run
        m[: n - 3, 2] = np.nan  # c: defined on 3 queries only
        m[rng.random(n) < 0.5, 3] = np.nan if run == "r2" else m[0, 3]
        matrices[run] = m
    found, too_few = intervals(matrices, measures, 300)
    for run, m in matrices.items():
        alone = per_measure(m, 300)
        for j, name in enumerate(measures):
            defined = int((~np.isnan(m[:, j])).sum())
            if defined < MIN_INTERVAL_QUERIES:
                assert name in too_few[run] and all(math.isnan(x) for x in found[run][name])
            else:
                assert name not in too_few[run]
                assert found[run][name] == pytest.approx(alone[j], abs=1e-12), (run, name)
        assert list(found[run]) == measures


def test_intervals_of_no_query_are_undefined():
    found, too_few = intervals({"r": np.zeros((0, 2))}, ["a", "b"], 100)
    assert too_few == {"r": ["a", "b"]}
    assert all(math.isnan(x) for pair in found["r"].values() for x in pair)
