"""The review queue as a service: items, resolutions and send-backs are events."""

from __future__ import annotations

import sqlite3

import pytest

from projectkit import rights

from ragjudge.errors import UsageError
from ragjudge.services.labels import review
from ragjudge.services.access import roster
from ragjudge.services.gold.pairs import pair_detail
from ragjudge.services.labels.queue import JudgingQueue
from ragjudge.services.labels.events import comment_pair, flag_pair, record_label, unflag_pair
from ragjudge.services.events.marks import current_marks


def rows(tmp_path, sql: str) -> list[tuple]:
    return sqlite3.connect(tmp_path / "p.db").execute(sql).fetchall()


def keys(found) -> list[tuple[str, str, str]]:
    return [(i.query_id, i.chunk_id, i.annotator) for i in found]


def test_open_items_are_current_flags_and_comments(project):
    found = review.items(project, access=rights(project))
    assert keys(found) == [("q1", "c05", "ana"), ("q2", "c08", "ana"), ("q3", "c11", "ben")]
    first = found[0]
    assert (first.flagged, first.note, first.comment) == (True, "is this about refunds?", None)
    assert (found[1].flagged, found[1].comment) == (False, "see the FAQ")
    assert all(i.open and i.resolved is None for i in found)


def test_a_cleared_flag_is_no_item(project):
    unflag_pair(project, annotator="ben", query_id="q3", chunk_id="c11")
    assert ("q3", "c11", "ben") not in keys(review.items(project, include_resolved=True, access=rights(project)))


def test_filters_and_typos(project):
    assert keys(review.items(project, annotator="ben", access=rights(project))) == [("q3", "c11", "ben")]
    assert keys(review.items(project, query_id="q2", access=rights(project))) == [("q2", "c08", "ana")]
    with pytest.raises(UsageError, match="no annotator 'Ana'.*Did you mean 'ana'"):
        review.items(project, annotator="Ana", access=rights(project))
    with pytest.raises(UsageError, match="no query 'q99'"):
        review.items(project, query_id="q99", access=rights(project))


def test_resolve_is_a_review_event_answering_the_newest_mark(project, tmp_path):
    found = review.resolve(project, query_id="q1", chunk_id="c05", annotator="ana", access=rights(project, "dora"),
                           note="yes: refunds count")
    assert not found.open and found.resolved.by == "dora" and found.resolved.action == "resolve"
    flag_id = rows(tmp_path, "SELECT max(id) FROM pair_marks WHERE annotator = 'ana' "
                             "AND query_id = 'q1' AND kind = 'flag'")[0][0]
    assert rows(tmp_path, "SELECT query_id, chunk_id, annotator, kind, action, text, resolves, source "
                          "FROM pair_marks WHERE kind = 'review'") == [
        ("q1", "c05", "dora", "review", "resolve", "yes: refunds count", flag_id, "cli")]
    assert keys(review.items(project, access=rights(project))) == [("q2", "c08", "ana"), ("q3", "c11", "ben")]
    everything = review.items(project, include_resolved=True, access=rights(project))
    assert keys(everything)[0] == ("q1", "c05", "ana")
    assert everything[0].to_json()["resolved"]["note"] == "yes: refunds count"
    # the same answer again writes nothing
    review.resolve(project, query_id="q1", chunk_id="c05", annotator="ana", access=rights(project, "dora"),
                   note="yes: refunds count")
    assert rows(tmp_path, "SELECT count(*) FROM pair_marks WHERE kind = 'review'") == [(1,)]


def test_a_new_note_after_the_resolution_opens_the_item_again(project):
    review.resolve(project, query_id="q1", chunk_id="c05", annotator="ana", access=rights(project, "dora"))
    flag_pair(project, annotator="ana", query_id="q1", chunk_id="c05", note="still unsure")
    found = review.items(project, annotator="ana", query_id="q1", access=rights(project))
    assert [(i.note, i.open) for i in found] == [("still unsure", True)]
    assert found[0].answer is None and len(found[0].reviews) == 1


def test_the_only_item_of_a_pair_needs_no_annotator_but_several_do(project, tmp_path):
    review.resolve(project, query_id="q3", chunk_id="c11", annotator=None, access=rights(project, "dora"))
    flag_pair(project, annotator="ben", query_id="q1", chunk_id="c05")
    with pytest.raises(UsageError, match=r"Several annotators.*ana, ben.*--annotator"):
        review.resolve(project, query_id="q1", chunk_id="c05", annotator=None, access=rights(project, "dora"))
    with pytest.raises(UsageError, match="'ben' has a flag or comment|nothing to review"):
        review.resolve(project, query_id="q2", chunk_id="c08", annotator="ben", access=rights(project, "dora"))
    assert rows(tmp_path, "SELECT count(*) FROM pair_marks WHERE kind = 'review'") == [(1,)]


def test_only_a_lead_answers_once_there_is_one(project, tmp_path):
    roster.add(project, "dora", role="lead", access=rights(project))
    with pytest.raises(UsageError, match="Only a lead may resolve flags"):
        review.resolve(project, query_id="q1", chunk_id="c05", annotator="ana", access=rights(project, "ben"))
    with pytest.raises(UsageError, match="Only a lead may resolve flags"):
        review.send_back(project, query_id="q1", chunk_id="c05", annotator="ana", access=rights(project, "ben"))
    assert rows(tmp_path, "SELECT count(*) FROM pair_marks WHERE kind = 'review'") == [(0,)]
    review.send_back(project, query_id="q1", chunk_id="c05", annotator="ana", access=rights(project, "dora"))
    assert rows(tmp_path, "SELECT count(*) FROM pair_marks WHERE kind = 'review'") == [(1,)]


@pytest.mark.slow
def test_anyone_but_a_lead_reads_their_own_items_and_the_answers_to_them(project):
    roster.add(project, "dora", role="lead", access=rights(project))
    review.resolve(project, query_id="q1", chunk_id="c05", annotator="ana",
                   access=rights(project, "dora"), note="refunds count")
    ana = rights(project, "ana")
    found = review.items(project, access=ana, include_resolved=True)
    assert keys(found) == [("q1", "c05", "ana"), ("q2", "c08", "ana")]
    assert found[0].resolved.note == "refunds count", "the lead's answer to her is hers to read"
    with pytest.raises(UsageError, match="Only a lead may read ben's flags"):
        review.items(project, access=ana, annotator="ben")
    bens = review.items(project, access=rights(project, "dora"), annotator="ben")[0]
    with pytest.raises(UsageError, match="Only a lead"):
        review.detail(project, bens, access=ana)
    with pytest.raises(UsageError, match="who is asking is not known"):
        review.items(project, access=rights(project, None))
    # the pair's other labels: ben's grade of q1/c05 (she judged it too), never his marks
    flag_pair(project, annotator="ben", query_id="q1", chunk_id="c05", note="ben's own doubt")
    mine = review.detail(project, found[0], access=ana)
    by_name = {lab.annotator: lab for lab in mine.pair.labels}
    assert by_name["ben"].grade == 0 and not by_name["ben"].flagged
    assert "ben's own doubt" not in repr(mine)


def test_send_back_waits_for_the_author_then_opens_again(project, tmp_path):
    found = review.send_back(project, query_id="q1", chunk_id="c05", annotator="ana", access=rights(project, "dora"),
                             note="read the second paragraph")
    assert found.resolved.action == "send-back" and not found.open
    assert rows(tmp_path, "SELECT action, text FROM pair_marks WHERE kind = 'review'") == [
        ("send-back", "read the second paragraph")]
    assert keys(review.sent_back(project, "ana")) == [("q1", "c05", "ana")]
    # the pair comes first in ana's queue, though she graded it
    assert (lambda v: (v.query_id, v.chunk_id))(JudgingQueue(project, "ana").first()) == ("q1", "c05")
    record_label(project, annotator="ana", query_id="q1", chunk_id="c05", grade=1)
    assert review.sent_back(project, "ana") == []
    again = review.item(project, "ana", "q1", "c05")
    assert again.open and again.answer.action == "send-back"
    assert (lambda v: (v.query_id, v.chunk_id))(JudgingQueue(project, "ana").first()) != ("q1", "c05")


def test_the_author_sees_the_answer_and_hears_of_it_once(project):
    assert review.news_for(project, "ana") == []
    review.resolve(project, query_id="q2", chunk_id="c08", annotator="ana", access=rights(project, "dora"), note="done")
    answer = review.answer_for(project, "ana", "q2", "c08")
    assert (answer.by, answer.action, answer.note) == ("dora", "resolve", "done")
    assert keys(review.news_for(project, "ana")) == [("q2", "c08", "ana")]
    assert review.news_for(project, "ben") == []
    record_label(project, annotator="ana", query_id="q4", chunk_id="c13", grade=1)
    assert review.news_for(project, "ana") == [], "told once: she has worked since"
    assert review.answer_for(project, "ana", "q2", "c08").note == "done", "the note stays"


def test_a_review_leaves_the_leads_own_comment_alone(project):
    comment_pair(project, annotator="dora", query_id="q1", chunk_id="c05", note="mine")
    review.resolve(project, query_id="q1", chunk_id="c05", annotator="ana", access=rights(project, "dora"), note="ok")
    assert current_marks(project, "dora", "q1", "c05").comment == "mine"
    by_name = {lab.annotator: lab for lab in pair_detail(project, "q1", "c05", access=rights(project)).labels}
    assert by_name["dora"].comment == "mine"


def test_text_is_checked_like_every_note(project, tmp_path):
    with pytest.raises(UsageError):
        review.resolve(project, query_id="q1", chunk_id="c05", annotator="ana", access=rights(project, "dora"),
                       note="a\x00b")
    with pytest.raises(UsageError, match="action|one of"):
        review._answer(project, "delete", query_id="q1", chunk_id="c05", annotator="ana",
                       access=rights(project, "dora"), note=None, source="cli")
    assert rows(tmp_path, "SELECT count(*) FROM pair_marks WHERE kind = 'review'") == [(0,)]


def test_a_new_annotators_queue_starts_without_review_items(project):
    view = JudgingQueue(project, "newcomer").first()
    assert view is not None and review.sent_back(project, "newcomer") == []


def test_export_labels_dates_a_leads_comment_by_the_comment_not_by_a_review(project, tmp_path):
    from ragjudge.services.transfer.exporting import label_lines

    comment_pair(project, annotator="dora", query_id="q1", chunk_id="c05", note="mine")
    commented = rows(tmp_path, "SELECT created_at FROM pair_marks WHERE annotator = 'dora'")[0][0]
    review.resolve(project, query_id="q1", chunk_id="c05", annotator="ana", access=rights(project, "dora"), note="ok")
    line = next(x for x in label_lines(project) if x["annotator"] == "dora")
    assert line["comment"] == "mine"
    assert line["created_at"] == commented.replace(" ", "T")


def test_the_queue_on_every_backend(any_db):
    from projectkit import make_small_project

    from reviewkit import seed_marks

    with make_small_project(any_db) as project:
        seed_marks(project)
        review.resolve(project, query_id="q1", chunk_id="c05", annotator="ana", access=rights(project, "dora"), note="ok")
        review.send_back(project, query_id="q3", chunk_id="c11", annotator="ben", access=rights(project, "dora"))
        assert keys(review.items(project, access=rights(project))) == [("q2", "c08", "ana")]
        found = {i.query_id: i for i in review.items(project, include_resolved=True, access=rights(project))}
        assert found["q1"].resolved.note == "ok" and found["q3"].resolved.sent_back
        assert (JudgingQueue(project, "ben").first().query_id) == "q3"
        record_label(project, annotator="ben", query_id="q3", chunk_id="c11", grade=2)
        assert review.item(project, "ben", "q3", "c11").open
        assert review.answer_for(project, "ana", "q1", "c05").note == "ok"
