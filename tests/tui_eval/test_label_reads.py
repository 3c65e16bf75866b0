"""The current labels read in bulk (services.qrels.read_labels) and the gold qrels computed from
them for every pair at once (gold_qrel_arrays) give exactly what the row-by-row SQL and the
per-pair rule code give: on label histories with re-grades, undos, re-checks, adjudications,
LLM and reference annotators, odd ids, and on the paths that fall back to the row-by-row read."""

from __future__ import annotations

import math
import random
import sqlite3

import numpy as np
import pytest
from projectkit import rights

from ragjudge.services.events import labels as Q_labels
from ragjudge.services.gold import qrels as Q_qrels
from ragjudge.services.gold import rules as Q_rules
from ragjudge.services.gold.adjudication import adjudicate
from ragjudge.services.labels.events import record_label, undo_last
from ragjudge.store.schema import Annotator

pytestmark = pytest.mark.slow

RULES = ["median", "majority", "mean", "min", "max", "adjudicated"]


def _by_sql(connection, annotator=None) -> Q_labels.LabelArrays:
    """The current labels through the portable SQL, row by row (the reference)."""
    return Q_labels.label_arrays_from_rows(Q_labels.raw_rows(connection, Q_labels._current_statement(annotator)))


def _same_labels(a: Q_labels.LabelArrays, b: Q_labels.LabelArrays) -> None:
    assert a.query_ids.tolist() == b.query_ids.tolist()
    assert a.chunk_ids.tolist() == b.chunk_ids.tolist()
    assert a.annotators.tolist() == b.annotators.tolist()
    assert a.grades.tolist() == b.grades.tolist()


def _gold_by_rule_code(project, rule, include_llm=False) -> list[tuple[str, str, int]]:
    """The gold qrels as the per-pair code computes them: services.qrels.aggregate over
    gold_labels of the SQL's labels, adjudications first."""
    with project.connect() as connection:
        annotator = rule.split(":", 1)[1] if rule.startswith("annotator:") else None
        labels = _by_sql(connection, annotator)
        if annotator is None and not include_llm:
            labels = Q_labels.without(labels, Q_labels.llm_annotators(connection))
        decided = Q_labels.adjudications(connection)
        policy = Q_rules.gold_policy(connection, project.scale.min)
    gold = reference_gold(list(zip(labels.query_ids.tolist(), labels.chunk_ids.tolist(),
                                   labels.annotators.tolist(), labels.grades.tolist())),
                          decided, rule, policy.reference, policy.complete, policy.lowest)
    closing = policy.complete if rule in ("median", "majority", "mean", "min", "max", "reference") \
        else policy.complete & {rule[10:]} if rule.startswith("annotator:") else set()
    closed = {q for q, _, a, _ in zip(labels.query_ids, labels.chunk_ids, labels.annotators,
                                      labels.grades) if a in closing}
    if closed:  # a complete reference's world: every chunk any run retrieves on its queries
        from ragjudge.metrics._keys import decode
        from ragjudge.services.runs.stored import project_run, project_run_names

        for name in project_run_names(project):
            run = project_run(project, name)
            for i, q in enumerate(run.query_ids):
                if q in closed:
                    for c in decode(run.chunk_ids[run.offsets[i]:run.offsets[i + 1]]):
                        if (q, c) not in gold:
                            gold[(q, c)] = decided.get((q, c), policy.lowest) if rule != "reference" \
                                else policy.lowest
    return sorted((q, c, g) for (q, c), g in gold.items())


def reference_gold(rows, decided, rule, reference=frozenset(), complete=frozenset(), lowest=0):
    """The gold rule written out pair by pair, independently of ragjudge's vectorised code:
    ``{(query, chunk): (grade)}`` from rows ``(query, chunk, annotator, grade)``."""
    by_pair = {}
    for q, c, a, g in rows:
        by_pair.setdefault((q, c), {})[a] = g
    aggregation = rule in ("median", "majority", "mean", "min", "max")
    if aggregation and complete:  # a complete reference's unlisted pairs of its queries: lowest
        for name in complete:
            queries = {q for (q, _), who in by_pair.items() if name in who}
            for (q, _), who in by_pair.items():
                if q in queries and name not in who:
                    who[name] = lowest
    out = {}
    for pair, who in by_pair.items():
        if rule.startswith("annotator:"):
            if rule[10:] in who:
                out[pair] = who[rule[10:]]
            continue
        if rule == "adjudicated":
            continue
        grades = sorted(g for a, g in who.items() if a in reference) if (aggregation or rule == "reference") \
            and any(a in reference for a in who) else ([] if rule == "reference" else sorted(who.values()))
        if not grades:
            continue
        if rule in ("median", "reference"):
            out[pair] = grades[(len(grades) - 1) // 2]
        elif rule == "min":
            out[pair] = grades[0]
        elif rule == "max":
            out[pair] = grades[-1]
        elif rule == "mean":
            out[pair] = int(math.floor(sum(grades) / len(grades) + 0.5))
        else:
            out[pair] = max(sorted(set(grades)), key=grades.count)  # ties to the lower grade
    if rule != "reference":
        out.update(decided)
    return out


def _history(project, seed: int, *, steps: int = 300, queries=("q1", "q2", "q3", "q4", "q5")) -> None:
    """Random label events by four people and an LLM: grades, re-grades, undos, re-checks and
    adjudications, on chunks of the run and off it."""
    rnd = random.Random(seed)
    project.write(lambda s: s.add(Annotator(name="gpt", kind="llm")))
    people = ["ana", "ben", "chen", "dora", "gpt"]
    for _ in range(steps):
        who = rnd.choice(people)
        q = rnd.choice(queries)
        c = f"c{rnd.randint(1, 20):02d}"
        roll = rnd.random()
        if roll < 0.08:
            undo_last(project, who)
        elif roll < 0.12:
            record_label(project, annotator=who, query_id=q, chunk_id=c, grade=rnd.randint(0, 3),
                         source="recheck")
        elif roll < 0.15:
            adjudicate(project, query_id=q, chunk_id=c, grade=rnd.randint(0, 3), access=rights(project, "lead"), reason="t")
        else:
            record_label(project, annotator=who, query_id=q, chunk_id=c, grade=rnd.randint(0, 3))


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bulk_read_equals_the_sql_and_gold_equals_the_rule_code(project, monkeypatch, seed, parallel):
    monkeypatch.setattr(Q_labels, "PARALLEL_LABELS", 0 if parallel else 10**12)
    _history(project, seed)
    with project.connect() as connection:
        assert Q_labels._read_sqlite(connection, None) is not None  # the bulk path, not its fallback
        _same_labels(Q_labels.read_labels(connection).arrays(), _by_sql(connection))
        for who in ("ana", "gpt", "nobody"):
            _same_labels(Q_labels.read_labels(connection, annotator=who).arrays(), _by_sql(connection, who))
    for rule in [*RULES, "annotator:ben", "annotator:gpt"]:
        assert Q_qrels.gold_qrels(project, rule) == _gold_by_rule_code(project, rule), rule
    assert Q_qrels.gold_qrels(project, include_llm=True) == _gold_by_rule_code(project, "median", True)


@pytest.mark.parametrize("complete", [False, True])
def test_a_reference_annotator_decides_its_pairs_in_the_bulk_gold_too(project, complete):
    _history(project, 4, steps=200)
    project.write(lambda s: s.add(Annotator(name="nist", reference=True, complete=complete)))
    rnd = random.Random(9)
    for q in ("q1", "q3"):
        for j in rnd.sample(range(1, 21), 6):
            record_label(project, annotator="nist", query_id=q, chunk_id=f"c{j:02d}", grade=rnd.randint(0, 3))
    for rule in [*RULES, "annotator:nist", "annotator:ana"]:
        assert Q_qrels.gold_qrels(project, rule) == _gold_by_rule_code(project, rule), rule


def _sqlite(project) -> sqlite3.Connection:
    return sqlite3.connect(project.db)


def test_odd_ids_a_separator_in_an_id_and_a_real_grade_fall_back_to_the_same_labels(project):
    """Ids of different lengths and non-ASCII ids are split in numpy; an id holding the
    separator byte, or a grade the database holds as a real number, sends the read to the
    row-by-row SQL: the labels are the same either way."""
    con = _sqlite(project)
    con.executemany("INSERT INTO chunks (id, text) VALUES (?, 'x')",
                    [("é-ü",), ("a long chunk id of forty-one characters!",), ("z",)])
    con.commit()
    for chunk, grade in (("é-ü", 2), ("a long chunk id of forty-one characters!", 1), ("z", 3), ("c01", 0)):
        record_label(project, annotator="ana", query_id="q2", chunk_id=chunk, grade=grade)
        record_label(project, annotator="bob", query_id="q1", chunk_id=chunk, grade=3 - grade)
    with project.connect() as connection:
        assert Q_labels._read_sqlite(connection, None) is not None
        _same_labels(Q_labels.read_labels(connection).arrays(), _by_sql(connection))
    con.execute("INSERT INTO chunks (id, text) VALUES ('x\x1fy', 'odd id')")
    con.commit()
    record_label(project, annotator="ana", query_id="q3", chunk_id="x\x1fy", grade=2)
    with project.connect() as connection:
        assert Q_labels._read_sqlite(connection, None) is None
        _same_labels(Q_labels.read_labels(connection).arrays(), _by_sql(connection))
    con.execute("DELETE FROM labels WHERE chunk_id = 'x\x1fy'")
    con.commit()
    record_label(project, annotator="ana", query_id="q3", chunk_id="c07", grade=1)
    con.execute("UPDATE labels SET grade = 1.5 WHERE chunk_id = 'c07'")  # a real number in the column
    con.commit()
    with project.connect() as connection:
        assert Q_labels._read_sqlite(connection, None) is None
    con.close()


def test_no_labels_and_only_ungraded_events(project):
    with project.connect() as connection:
        empty = Q_labels.read_labels(connection)
        assert len(empty) == 0 and empty.n_pairs == 0
    assert Q_qrels.gold_qrels(project) == []
    record_label(project, annotator="ana", query_id="q1", chunk_id="c01", grade=2)
    undo_last(project, "ana")
    with project.connect() as connection:
        assert len(Q_labels.read_labels(connection)) == 0
        _same_labels(Q_labels.read_labels(connection).arrays(), _by_sql(connection))
    assert Q_qrels.gold_qrels(project) == []


def test_aggregate_pairs_agrees_with_the_rule_code_on_random_grades():
    rnd = random.Random(5)
    for _ in range(200):
        rows = []
        for q in range(rnd.randint(1, 3)):
            for c in range(rnd.randint(1, 4)):
                for a in rnd.sample(["a", "b", "c", "d", "e"], rnd.randint(1, 5)):
                    rows.append((f"q{q}", f"c{c}", a, rnd.randint(-2, 5)))
        rows.sort()
        labels = Q_labels.label_arrays_from_rows(rows)
        pairs = np.cumsum(np.r_[True, [rows[i][:2] != rows[i - 1][:2] for i in range(1, len(rows))]]) - 1
        for rule in ("median", "majority", "mean", "min", "max"):
            expected = [g for _, _, g in Q_rules.aggregate(labels, rule)]
            _, got = Q_rules.aggregate_pairs(pairs, labels.grades, rule)
            assert got.tolist() == expected, (rule, rows)


def test_runs_evaluated_two_at_a_time_give_the_same_results(demo, monkeypatch):
    from ragjudge.services.runs import stored as ev_stored
    from ragjudge.metrics.registry import parse_measure
    from ragjudge.services.scoring import evaluation as ev_evaluation

    qrels, rule = ev_evaluation.project_qrels(demo)
    runs = {n: ev_stored.project_run(demo, n) for n in ev_stored.project_run_names(demo)}
    measures = ["P@5", "AP", "nDCG@10", "RR", "Rprec", "bpref"]
    monkeypatch.setattr(ev_evaluation, "PARALLEL_ENTRIES", 10**12)
    one = ev_evaluation.evaluate_all(qrels, runs, measures, project=demo, rule=rule)
    monkeypatch.setattr(ev_evaluation, "PARALLEL_ENTRIES", 0)
    assert ev_evaluation._evaluate_ahead(qrels, runs, [parse_measure(m) for m in measures], 1, "judged")
    two = ev_evaluation.evaluate_all(qrels, runs, measures, project=demo, rule=rule)
    for name in runs:
        assert np.array_equal(one.results[name].values, two.results[name].values)
        assert one.results[name].query_ids == two.results[name].query_ids
