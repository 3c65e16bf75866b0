"""The RAG measures by name through ``ragjudge.metrics.evaluate`` (registry, extras, NaN)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
import pytest

from ragjudge.errors import UsageError
from ragjudge.metrics.data import Qrels, Run
from ragjudge.metrics.evaluate import evaluate
from ragjudge.metrics.rag import FULL, PARTIAL, CitationLabels, EntityLabels, ItemLabels, ItemSupport
from ragjudge.metrics.registry import parse_measure

SEED_RUN = [f"c{i}" for i in range(1, 11)]
SEED_GRADES = {"c1": 2, "c2": 0, "c3": 1, "c4": 0, "c5": 2, "c6": 0, "c7": 0, "c8": 1, "c9": 0,
               "c10": 0}


def seed_inputs(extra_queries=()):
    grades = {"eiffel": SEED_GRADES}
    ranked = {"eiffel": SEED_RUN}
    for q in extra_queries:
        grades[q] = {"c1": 1}
        ranked[q] = ["c1", "c2"]
    return Qrels.from_dict(grades), Run.from_ranked(ranked, name="seed")


def eiffel_facets() -> ItemLabels:
    names = ["construction", "design", "renovation", "tourism"]
    chunks = [["c1", "c2"], ["c3", "c5"], ["c8", "c9"], ["c6", "c7"]]
    items = [i for i, cs in enumerate(chunks) for _ in cs]
    return ItemLabels(["eiffel"] * 4, names, support_items=items,
                      support_chunks=[c for cs in chunks for c in cs],
                      support_levels=[FULL] * len(items))


def test_names_parse_and_declare_their_extras():
    for name, key in [("Coverage@5", "facets"), ("NuggetRecall(strict,vital)@10", "nuggets"),
                      ("NuggetRecall(strict,all)@10", "nuggets"), ("NuggetRecall(vital)@10", "nuggets"),
                      ("NuggetRecall(all)@10", "nuggets"), ("NuggetRecall(weighted)@10", "nuggets"),
                      ("ContextRecall@5", "claims"), ("EntityRecall@5", "entities"),
                      ("Attribution@10", "citations")]:
        m = parse_measure(name)
        assert str(m) == name  # results are labelled as asked
        assert m.needs == (key,)
    # the canonical name lists flags in order: (strict,all) and (all,strict) are one measure
    assert parse_measure("NuggetRecall(strict,all)@10").name == \
        parse_measure("NuggetRecall(all,strict)@10").name
    assert parse_measure("CoverageRecall@5").name == "Coverage@5"
    assert parse_measure("ContextEntitiesRecall@3").name == "EntityRecall@3"
    with pytest.raises(UsageError):
        parse_measure("NuggetRecall(sloppy)@5")


def test_coverage_by_name():
    qrels, run = seed_inputs()
    result = evaluate(qrels, run, ["Coverage@5", "Coverage@7", "Coverage"],
                      extras={"facets": eiffel_facets()})
    # by the ranks of the example: 2 of 4 facets at K = 5, 3 of 4 at K = 6-7 (a guide that prints 0.750 for @5 miscounts)
    assert result["Coverage@5"] == pytest.approx(0.5)
    assert result["Coverage@7"] == pytest.approx(0.750)
    assert result["Coverage"] == pytest.approx(1.0)


def test_depth_limited_context_still_right():
    # alone, Coverage@5 makes the evaluation read 5 ranks only
    qrels, run = seed_inputs()
    assert evaluate(qrels, run, ["Coverage@5"], extras={"facets": eiffel_facets()})["Coverage@5"] == \
        pytest.approx(0.5)


def test_nugget_recall_by_name():
    qrels, run = seed_inputs()
    nuggets = ItemLabels(["eiffel"] * 4, ["height", "year", "architect", "visitors"],
                         vital=[True, True, False, False], weight=[2, 1, 1, 1],
                         support_items=[0, 0, 1, 2, 3], support_chunks=["c1", "c2", "c3", "c8", "c11"],
                         support_levels=[FULL, FULL, FULL, FULL, FULL])
    names = ["NuggetRecall(all)@10", "NuggetRecall(strict,all)@10", "NuggetRecall(vital)@10",
             "NuggetRecall(strict,vital)@10", "NuggetRecall(weighted)@10", "NuggetRecall@5"]
    agg = evaluate(qrels, run, names, extras={"nuggets": nuggets}).aggregate()
    assert agg["NuggetRecall(all)@10"] == pytest.approx(0.750)  # 3 of the 4 nuggets have a supporting chunk in the top 10
    assert agg["NuggetRecall(strict,all)@10"] == pytest.approx(0.750)
    assert agg["NuggetRecall(vital)@10"] == pytest.approx(1.0)
    assert agg["NuggetRecall(strict,vital)@10"] == pytest.approx(1.0)
    assert agg["NuggetRecall(weighted)@10"] == pytest.approx(4 / 5)
    assert agg["NuggetRecall@5"] == pytest.approx(0.5)


def test_partial_support_by_name():
    qrels, run = seed_inputs()
    claims = ItemLabels(["eiffel"] * 2, support_items=[0, 1], support_chunks=["c2", "c4"],
                        support_levels=[PARTIAL, FULL])
    agg = evaluate(qrels, run, ["ContextRecall@5", "ContextRecall(partial)@5", "ContextRecall@3"],
                   extras={"claims": claims}).aggregate()
    assert agg["ContextRecall@5"] == pytest.approx(0.5)
    assert agg["ContextRecall(partial)@5"] == pytest.approx(0.75)
    assert agg["ContextRecall@3"] == 0.0


def test_undefined_queries_are_left_out_and_counted():
    qrels, run = seed_inputs(extra_queries=("nofacets", "alsonone"))
    result = evaluate(qrels, run, ["Coverage@7", "P@1"], extras={"facets": eiffel_facets()})
    assert result.n_queries == 3
    assert result["Coverage@7"] == pytest.approx(0.750)  # the mean of the one defined query
    assert result.undefined() == {"Coverage@7": 2, "P@1": 0}
    per_query = result.per_query()
    assert math.isnan(per_query["nofacets"]["Coverage@7"])


def test_entity_and_attribution_by_name():
    qrels = Qrels.from_dict({"brazil": {"a": 1}, "other": {"x": 1}})
    run = Run.from_ranked({"brazil": ["a", "b"], "other": ["x"]})
    texts = {"a": "Nothing here.", "b": "Brasília is a city in Brazil, designed as the capital.",
             "x": "x"}
    entities = EntityLabels(["brazil"] * 3, ["Brazil", "Brasília", "April 21, 1960"], texts)
    citations = CitationLabels(answered=["brazil"], query_ids=["brazil", "brazil"],
                               chunk_ids=["b", "zzz"])
    result = evaluate(qrels, run, ["EntityRecall@1", "EntityRecall@2", "Attribution@1",
                                   "Attribution@10"],
                      extras={"entities": entities, "citations": citations})
    pq = result.per_query()
    assert pq["brazil"]["EntityRecall@1"] == 0.0
    assert pq["brazil"]["EntityRecall@2"] == pytest.approx(2 / 3)  # the Brasília example: 2 of 3 entities found
    assert pq["brazil"]["Attribution@1"] == 0.0
    assert pq["brazil"]["Attribution@10"] == pytest.approx(1 / 2)  # 2 retrieved, 1 cited
    assert math.isnan(pq["other"]["EntityRecall@2"])
    assert math.isnan(pq["other"]["Attribution@10"])  # no answer


def test_context_precision_variants_side_by_side():
    # the "bad order" [c2, c4, c1, c3, c5]: 0.3583 as AP (÷ 4 relevant), 0.4778 as RAGAS CP@5 (÷ 3 found)
    qrels = Qrels.from_dict({"q": SEED_GRADES})
    run = Run.from_ranked({"q": ["c2", "c4", "c1", "c3", "c5"]})
    agg = evaluate(qrels, run, ["ContextPrecisionAP@5", "ContextPrecision@5"]).aggregate()
    assert agg["ContextPrecisionAP@5"] == pytest.approx(0.3583, abs=5e-5)
    assert agg["ContextPrecision@5"] == pytest.approx(0.4778, abs=5e-5)


def test_missing_or_misaligned_extras_are_usage_errors():
    qrels, run = seed_inputs()
    with pytest.raises(UsageError, match="facets"):
        evaluate(qrels, run, ["Coverage@5"])
    wrong_rows = ItemSupport(np.ones((3, 1), dtype=bool))
    with pytest.raises(UsageError, match="query rows"):
        evaluate(qrels, run, ["Coverage@5"], extras={"facets": wrong_rows})
    with pytest.raises(UsageError, match="ItemLabels"):
        evaluate(qrels, run, ["Coverage@5"], extras={"facets": {"c1": 1}})
    with pytest.raises(UsageError, match="vital or all"):
        evaluate(qrels, run, ["NuggetRecall(vital,all)@5"], extras={"nuggets": eiffel_facets()})


def test_aligned_item_support_is_accepted():
    qrels, run = seed_inputs()
    support = ItemSupport(np.ones((1, 2), dtype=bool), rows=[0], ranks=[4], items=[1], levels=[FULL])
    agg = evaluate(qrels, run, ["Coverage@3", "Coverage@4"], extras={"facets": support}).aggregate()
    assert agg == {"Coverage@3": 0.0, "Coverage@4": 0.5}


def test_label_chunk_ids_wider_than_the_runs():
    # the labels name a chunk whose id is longer than any id of the run: the others must still
    # be found (ids are matched on fixed-width bytes)
    qrels, run = seed_inputs()
    facets = ItemLabels(["eiffel"] * 2, support_items=[0, 1],
                        support_chunks=["c3", "a-chunk-id-longer-than-any-in-the-run"],
                        support_levels=[FULL, FULL])
    assert evaluate(qrels, run, ["Coverage@3"], extras={"facets": facets})["Coverage@3"] == 0.5
    wide = Run.from_ranked({"eiffel": ["a-chunk-id-longer-than-any-in-the-run", "c3"]})
    short = ItemLabels(["eiffel"], support_items=[0], support_chunks=["c3"], support_levels=[FULL])
    assert evaluate(qrels, wide, ["Coverage@2"], extras={"facets": short})["Coverage@2"] == 1.0


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(st.data())
def test_labels_through_evaluate_match_a_plain_computation(data):
    """Random runs and gold labels: evaluate's Coverage / NuggetRecall equal the formulas
    computed query by query from the pairs."""
    chunks = ["a", "b", "c", "dd", "a-longer-chunk-id", "f"]
    queries = ["q1", "q2", "q3"]
    ranked = {q: data.draw(st.lists(st.sampled_from(chunks), unique=True, max_size=5)) for q in queries}
    ranked = {q: r for q, r in ranked.items() if r}
    qrels = Qrels.from_dict({q: {"a": 1} for q in queries})
    run = Run.from_ranked(ranked) if ranked else Run.from_ranked({"zz": ["a"]})
    item_q = data.draw(st.lists(st.sampled_from(queries), max_size=6))
    pairs = data.draw(st.lists(st.tuples(st.integers(0, max(len(item_q) - 1, 0)),
                                         st.sampled_from(chunks + ["nowhere"]), st.integers(1, 2)),
                               max_size=10)) if item_q else []
    labels = ItemLabels(item_q, support_items=[p[0] for p in pairs],
                        support_chunks=[p[1] for p in pairs], support_levels=[p[2] for p in pairs])
    k = data.draw(st.integers(1, 6))
    result = evaluate(qrels, run, [f"Coverage@{k}", f"NuggetRecall@{k}"],
                      extras={"facets": labels, "nuggets": labels}).per_query()
    for q in queries:
        items = [i for i, iq in enumerate(item_q) if iq == q]
        top = ranked.get(q, [])[:k]
        if not items:
            assert math.isnan(result[q][f"Coverage@{k}"])
            continue
        best = [max([lvl for i2, c, lvl in pairs if i2 == i and c in top], default=0) for i in items]
        assert result[q][f"Coverage@{k}"] == pytest.approx(sum(b == 2 for b in best) / len(items))
        assert result[q][f"NuggetRecall@{k}"] == pytest.approx(
            sum({2: 1.0, 1: 0.5, 0: 0.0}[b] for b in best) / len(items))


def test_shared_entity_matches_follow_changed_texts():
    qrels = Qrels.from_dict({"q": {"a": 1}})
    run = Run.from_ranked({"q": ["a"]})
    shared: dict = {}
    before = EntityLabels(["q"], ["Oslo"], {"a": "Flights to Oslo."}, shared)
    assert evaluate(qrels, run, ["EntityRecall@1"], extras={"entities": before})["EntityRecall@1"] == 1.0
    after = EntityLabels(["q"], ["Oslo"], {"a": "Flights to Bergen."}, shared)  # the chunk was edited
    assert evaluate(qrels, run, ["EntityRecall@1"], extras={"entities": after})["EntityRecall@1"] == 0.0
    assert len(shared) == 2
