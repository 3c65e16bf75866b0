"""``ragjudge queue``: the next pairs an annotator would be given, in order, with nothing recorded
(checked against the judging queue walked for real), and the settle order worked out by hand on
the P@1 project of ``settledkit``."""

from __future__ import annotations

import json

import pytest
from settledkit import P1_GRADES, P1_OPEN, P3_GRADES, P3_OPEN, cli, label_count, one_paragraph

from ragjudge.services.events.state import LabelState
from ragjudge.services.labels.events import record_label
from ragjudge.services.project.database import Project
from ragjudge.services.scoring.settled import judging_queue, queue_order


def listed(db: str, annotator: str, *options: str) -> list[tuple[str, str]]:
    code, out, err = cli("--db", db, "queue", "--annotator", annotator, "--format", "json", *options)
    assert code == 0, err
    data = json.loads(out)
    assert set(data) >= {"pairs"} and all(set(p) == {"query_id", "chunk_id"} for p in data["pairs"])
    return [(p["query_id"], p["chunk_id"]) for p in data["pairs"]]


def judged_walk(db: str, annotator: str, order: str, limit: int) -> list[tuple[str, str]]:
    """The pairs the judging queue gives ``annotator`` as they judge each in turn (grade 0),
    labels recorded for real."""
    seen: list[tuple[str, str]] = []
    with Project.open(db) as project:
        queue = judging_queue(project, annotator, order=order, wait=None)
        view = queue.first()
        while view is not None and len(seen) < limit:
            seen.append((view.query_id, view.chunk_id))
            event = record_label(project, annotator=annotator, query_id=view.query_id,
                                 chunk_id=view.chunk_id, grade=0)
            queue.note_event(view.query_id, view.chunk_id,
                             LabelState(event, 0, False, None, None, None, "tui"))
            view = queue.after(view.position)
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("order", ["depth", "query"])
def test_listing_records_nothing_and_is_what_judging_gives(p3_db, order):
    before = label_count(p3_db)
    first = listed(p3_db, "ana", "--order", order, "--limit", "7")
    assert len(first) == 7 and len(set(first)) == 7
    assert label_count(p3_db) == before
    assert listed(p3_db, "ana", "--order", order, "--limit", "7") == first  # the same again
    # every pool pair, once, when the limit is larger than the pool (12 pairs)
    every = listed(p3_db, "ana", "--order", order, "--limit", "50")
    assert every[:7] == first and len(every) == len(set(every)) == 12
    assert set(every) == set(P3_GRADES) | P3_OPEN
    assert judged_walk(p3_db, "ana", order, 12) == every
    assert label_count(p3_db) == before + 12


def test_listing_starts_after_the_pairs_the_annotator_has_judged(p3_db):
    every = listed(p3_db, "ana", "--order", "depth", "--limit", "50")
    assert judged_walk(p3_db, "ana", "depth", 5) == every[:5]
    assert listed(p3_db, "ana", "--order", "depth", "--limit", "50") == every[5:]
    # ref judged 9 pairs: ref's queue holds the 3 open ones
    assert set(listed(p3_db, "ref", "--order", "depth", "--limit", "50")) == P3_OPEN


def test_depth_order_goes_by_rounds(p3_db):
    """Round 1 takes the pairs some run ranks first (a, d, e, h, k, m), each query in turn."""
    first = listed(p3_db, "ana", "--order", "depth", "--limit", "6")
    assert set(first) == {("q1", "a"), ("q2", "d"), ("q2", "e"), ("q2", "h"), ("q3", "k"), ("q3", "m")}
    assert [q for q, _ in first] == sorted(q for q, _ in first)


#: the prior's chance that an open pair ranked first by A, B or C is relevant (settle_model), from
#: the judged pairs the runs rank first: A a1=1 a3=1 a4=0, B a1=1 b2=0 a4=0, C c3=0 (3 of 7
#: relevant). p0 = (3 + 1) / (7 + 2) = 4/9; the rank-1 bucket (3 + 10 p0) / (7 + 10) = 67/153;
#: each run's (its relevant + 10 x 67/153) / (its judged + 10)
P_A, P_B, P_C = (2 + 670 / 153) / 13, (1 + 670 / 153) / 13, (0 + 670 / 153) / 11


def test_settle_order_puts_the_heaviest_pair_first(p1_db):
    """The P@1 project (settledkit), P@1 on pairs not judged counting 0:

    A = (1 + a2 + 1 + 0) / 4 = 1/2 now, B = (1 + 0 + b3 + 0) / 4 = 1/4, C = (c1 + a2 + 0 + c4) / 4
    = 0: the ranking A > B > C, so the settle order weighs the adjacent comparisons A - B and
    B - C. A pair weighs, summed over them, the share of what the comparison still needs to
    become certain that its judgment is expected to bring (its chance of each outcome: P_A, P_B,
    P_C above, a2 the mean of A's and C's).

    A - B = (a2 + 1 - b3) / 4: now 1/4, lowest 0 (a2 = 0, b3 = 1): it needs its low end to
    move off 0, and either b3 judged not relevant or a2 judged relevant does it all: b3 brings
    1 - P_B, a2 brings P_a2.
    B - C = (1 - c1 - a2 + b3 - c4) / 4: now 1/4, lowest -1/2, so it needs 1/2; c1, a2 and c4
    each raise the low end by 1/4 when judged not relevant, b3 when judged relevant:
    c1 and c4 bring (1 - P_C) / 2, a2 (1 - P_a2) / 2, b3 P_B / 2.

    So b3 weighs 1 - P_B / 2 = 0.793, a2 (1 + P_a2) / 2 = 0.722, c1 and c4 (1 - P_C) / 2 = 0.301:
    (q3, b3) comes first, though the depth order starts with q1; then a2, c1, c4; then the
    pairs ref judged, in the depth order."""
    p_a2 = (P_A + P_C) / 2
    expected = [1 - P_B / 2, (1 + p_a2) / 2, (1 - P_C) / 2, (1 - P_C) / 2]
    with Project.open(p1_db) as project:
        order = queue_order(project)
    head = [order.pair(i) for i in range(len(order))]
    assert head == [("q3", "b3"), ("q2", "a2"), ("q1", "c1"), ("q4", "c4")]
    from ragjudge.metrics.settle import pair_weights
    from ragjudge.services.gold.gold import gold
    from ragjudge.services.runs.stored import project_run, project_run_names

    with Project.open(p1_db) as project:
        runs = {n: project_run(project, n) for n in project_run_names(project)}
        ranked = pair_weights(gold(project, runs=runs).qrels(), runs, 10, ["P@1"]).ranked()
    assert [(q, c) for q, c, _ in ranked] == head
    assert [w for _, _, w in ranked] == pytest.approx(expected)

    pairs = listed(p1_db, "ana", "--order", "settle", "--limit", "20")
    assert pairs[:4] == head
    depth = listed(p1_db, "ana", "--order", "depth", "--limit", "20")
    assert depth[0][0] == "q1" and depth[0] != pairs[0]
    # after the head, the depth order of the rest
    assert pairs[4:] == [p for p in depth if p not in set(head)]
    assert set(pairs[4:]) == set(P1_GRADES)


def test_settle_order_leaves_out_what_the_annotator_judged(p1_db):
    before = label_count(p1_db)
    with Project.open(p1_db) as project:
        record_label(project, annotator="ana", query_id="q3", chunk_id="b3", grade=0)
    # ana's grade of b3 is the gold now (the only one): A - B = (a2 + 1)/4 > 0 whatever a2 is,
    # so only B - C is open, and c1, a2, c4 are what threatens it
    pairs = listed(p1_db, "ana", "--order", "settle", "--limit", "3")
    assert set(pairs) == P1_OPEN - {("q3", "b3")}
    assert label_count(p1_db) == before + 1


def test_settle_listing_matches_the_first_pairs_judging_gives(p1_db):
    # the settle order is weighed again after labels arrive; its first pair is the same
    pairs = listed(p1_db, "ana", "--order", "settle", "--limit", "1")
    assert judged_walk(p1_db, "ana", "settle", 1) == pairs == [("q3", "b3")]


@pytest.mark.parametrize("options, words", [
    (["--annotator", "ana", "--order", "random"], "--order random"),
    (["--annotator", "ana", "--limit", "0"], "--limit 0"),
    (["--annotator", "ana", "--depth", "0"], "--depth 0"),
    (["--annotator", "ana", "--runs", "nope"], "nope"),
    (["--annotator", " "], "annotator name is empty"),
    (["--annotator", "ana", "--queries", "zz"], "'zz'"),
    (["--annotator", "ana", "--category", "zz"], "'zz'"),
    (["--annotator", "ana", "--format", "xml"], "xml"),
    (["--annotator", "ana", "--limit", "many"], "--limit"),
])
def test_bad_options_are_one_paragraph_and_record_nothing(p3_db, options, words):
    before = label_count(p3_db)
    code, out, err = cli("--db", p3_db, "queue", *options)
    assert code == 2 and out == ""
    assert one_paragraph(err) and words in err, err
    assert label_count(p3_db) == before


def test_options_narrow_the_pool(p3_db):
    assert {q for q, _ in listed(p3_db, "ana", "--queries", "q2", "--limit", "50")} == {"q2"}
    only_a = listed(p3_db, "ana", "--runs", "A", "--limit", "50")
    assert set(only_a) == {("q1", "a"), ("q1", "b"), ("q1", "c"), ("q2", "d"), ("q2", "e"),
                           ("q2", "f"), ("q3", "k")}
    assert set(listed(p3_db, "ana", "--depth", "1", "--limit", "50")) == {
        ("q1", "a"), ("q2", "d"), ("q2", "e"), ("q2", "h"), ("q3", "k"), ("q3", "m")}


def test_table_lists_the_same_pairs(p3_db):
    code, out, _ = cli("--db", p3_db, "queue", "--annotator", "ana", "--limit", "3")
    assert code == 0
    for q, c in listed(p3_db, "ana", "--limit", "3"):
        assert any(q in line and f" {c} " in line for line in out.splitlines())


def test_help_has_examples():
    code, out, _ = cli("queue", "--help")
    assert code == 0 and "Examples:" in out and "ragjudge queue --annotator" in out
    assert "--order settle" in out and "nothing is recorded" in out.replace("\n", " ")


def test_the_settle_order_of_one_run_is_refused(p1_db):
    code, out, err = cli("--db", p1_db, "queue", "--annotator", "ana", "--order", "settle", "--runs", "A")
    assert code == 2 and out == "" and one_paragraph(err)
    assert "--runs A: settling compares runs, two at least" in err


def test_a_name_with_no_labels_is_told_it_is_a_new_annotators_queue(p3_db):
    """A name nobody has labelled under (a typo, or someone new) still gets a queue, and the table
    says whose: a new annotator's (JSON, for scripts, stays the bare list)."""
    code, out, err = cli("--db", p3_db, "queue", "--annotator", "anna", "--limit", "3")
    assert code == 0, err
    assert "anna has no labels in this project yet" in " ".join(out.split())
    code, out, _ = cli("--db", p3_db, "queue", "--annotator", "ref", "--limit", "3")
    assert code == 0 and "no labels" not in out
    # a name of markup is shown as typed, and one pair is "pair"
    code, out, _ = cli("--db", p3_db, "queue", "--annotator", "x[bold]y", "--limit", "1")
    assert code == 0 and "x[bold]y's next 1 pair (" in out and "x[bold]y has no labels" in out
    code, out, _ = cli("--db", p3_db, "queue", "--annotator", "anna", "--limit", "3", "--format", "json")
    assert code == 0 and set(json.loads(out)) == {"annotator", "order", "depth", "pairs"}
