"""TREC qrels and runs: parsing, errors with file/line/field, trec_eval's order, round trips."""

from __future__ import annotations

import pytest

from ragjudge.errors import InputError
from ragjudge.formats import (
    read_trec_qrels, read_trec_run, trec_order, write_trec_qrels, write_trec_run,
)
from ragjudge.models import Judgment, RunEntry


def test_qrels_lines_become_judgments():
    text = "q1 0 c1 2\nq1 0 c2 0\n\nq2 1 c1 -1\n"
    assert list(read_trec_qrels(text)) == [
        Judgment(query_id="q1", chunk_id="c1", grade=2),
        Judgment(query_id="q1", chunk_id="c2", grade=0),
        Judgment(query_id="q2", chunk_id="c1", grade=-1),
    ]
    numbered = list(read_trec_qrels(text, numbered=True))
    assert [line for line, _ in numbered] == [1, 2, 4]


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        ("q1 0 c1 1\nq1 0 c2\n", 2, None, "4 fields"),
        ("q1 0 c1 1.5\n", 1, "grade", "not an integer"),
        ("q1 0 c1 high\n", 1, "grade", "not an integer"),
        ("q1 0 c1 1\nq1 0 c1 2\n", 2, "grade", "contradicts line 1"),
    ],
)
def test_bad_qrels_lines(text, line, field, words):
    with pytest.raises(InputError) as caught:
        list(read_trec_qrels(text, name="gold.qrels"))
    error = caught.value
    assert (error.file, error.line, error.field) == ("gold.qrels", line, field)
    assert words in str(error) and str(error).startswith("gold.qrels, line")


def test_repeated_identical_qrels_line_is_read_once():
    assert len(list(read_trec_qrels("q1 0 c1 1\nq1 0 c1 1\n"))) == 1


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        ("q1 Q0 c1 1 0.5\n", 1, None, "6 fields"),
        ("q1 Q0 c1 1 abc run\n", 1, "score", "not a number"),
        ("q1 Q0 c1 1 nan run\n", 1, "score", "finite"),
        ("q1 Q0 c1 1 -inf run\n", 1, "score", "finite"),
        ("q1 Q0 c1 one 0.5 run\n", 1, "rank", "not an integer"),
        ("q1 Q0 c1 1 0.5 run\nq1 Q0 c1 2 0.4 run\n", 2, "chunk_id", "twice"),
    ],
)
def test_bad_run_lines(text, line, field, words):
    with pytest.raises(InputError) as caught:
        list(read_trec_run(text, name="bm25.trec"))
    error = caught.value
    assert (error.file, error.line, error.field) == ("bm25.trec", line, field)
    assert words in str(error)


def test_run_keeps_file_order_and_trec_order_sorts_by_score_then_docid_descending():
    text = (
        "q2 Q0 d1 1 1.0 r\n"
        "q1 Q0 a 1 0.5 r\n"
        "q1 Q0 b 2 0.9 r\n"
        "q1 Q0 c 3 0.5 r\n"   # ties with a: trec_eval puts the larger docid ('c') first
        "q1 Q0 B 4 0.5 r\n"   # byte order: 'B' (0x42) < 'a' (0x61)
    )
    entries = list(read_trec_run(text))
    assert [e.chunk_id for e in entries] == ["d1", "a", "b", "c", "B"]
    ordered = trec_order(entries)
    assert [(e.query_id, e.chunk_id) for e in ordered] == [
        ("q1", "b"), ("q1", "c"), ("q1", "a"), ("q1", "B"), ("q2", "d1")]


def test_rank_column_below_one_is_ignored_not_refused():
    (entry,) = read_trec_run("q1 Q0 c1 0 3.5 tag\n")
    assert entry.rank is None and entry.score == 3.5


def test_round_trip_qrels_and_run(tmp_path):
    judgments = [Judgment(query_id="q1", chunk_id="c1", grade=3),
                 Judgment(query_id="q2", chunk_id="c-é", grade=0)]
    path = tmp_path / "x.qrels"
    assert write_trec_qrels(judgments, path) == 2
    assert list(read_trec_qrels(path)) == judgments
    entries = [RunEntry(query_id="q1", chunk_id="c1", score=2.5, rank=1),
               RunEntry(query_id="q1", chunk_id="c2", score=0.1 + 0.2, rank=2),
               RunEntry(query_id="q2", chunk_id="c1", score=-1e-300, rank=1)]
    path = tmp_path / "x.run.gz"
    assert write_trec_run(entries, path, tag="my run") == 3
    assert list(read_trec_run(path)) == entries
    assert path.read_bytes()[:2] == b"\x1f\x8b"


def test_run_without_scores_is_written_in_given_order():
    import io

    out = io.StringIO()
    write_trec_run([RunEntry(query_id="q", chunk_id=c) for c in ("z", "a", "m")], out)
    back = trec_order(read_trec_run(out.getvalue()))
    assert [e.chunk_id for e in back] == ["z", "a", "m"]


def test_ids_with_spaces_cannot_be_written_as_trec():
    import io

    with pytest.raises(InputError, match="JSONL or CSV"):
        write_trec_qrels([("q 1", "c1", 1)], io.StringIO())


def test_tsv_queries_and_chunks_as_ms_marco_ships_them(tmp_path):
    from ragjudge.formats import read_records
    from ragjudge.models import Chunk, Query

    path = tmp_path / "queries.tsv"
    path.write_text("1\twhere is my parcel?\n2\trefund\twith a tab\n")
    assert list(read_records("queries", path)) == [
        Query(id="1", text="where is my parcel?"), Query(id="2", text="refund\twith a tab")]
    assert list(read_records("chunks", "c1\tsome text\n", "trec")) == [Chunk(id="c1", text="some text")]
    with pytest.raises(InputError) as caught:
        list(read_records("queries", "1\tok\n2 no tab\n", "trec"))
    assert caught.value.line == 2 and "tab" in str(caught.value)
