"""JSONL and CSV records: the field-name contract, strict types, every error located."""

from __future__ import annotations

import io
import json
from datetime import datetime

import pytest

from ragjudge.errors import InputError
from ragjudge.formats import (
    FIELDS, EntityRecord, FacetRecord, LabelRecord, NuggetRecord, read_csv, read_jsonl,
    read_records, write_csv, write_jsonl, write_records,
)
from ragjudge.models import Answer, Chunk, Judgment, Query, RunEntry


def jl(*objects) -> str:
    return "".join(json.dumps(o) + "\n" for o in objects)


def test_contract_field_names():
    assert FIELDS["queries"] == ("id", "text", "description", "category", "meta")
    assert FIELDS["chunks"] == ("id", "text", "doc_id", "meta")
    assert FIELDS["run"] == ("query_id", "chunk_id", "score", "rank")
    assert FIELDS["qrels"] == ("query_id", "chunk_id", "grade", "annotator", "note")
    assert set(FIELDS["facets"]) == {"query_id", "facet", "chunk_id", "annotator", "covered"}
    assert set(FIELDS["nuggets"]) == {"query_id", "nugget", "importance", "kind", "weight",
                                      "chunk_id", "annotator", "support"}
    assert FIELDS["entities"] == ("query_id", "entity")
    assert FIELDS["answers"] == ("query_id", "run", "text", "cited", "sentences")
    assert FIELDS["answer-labels"] == ("query_id", "run", "nugget", "sentence", "chunk_id",
                                       "support", "annotator")


def test_every_kind_reads_from_jsonl():
    assert list(read_jsonl("queries", jl({"id": "q1", "text": "refund?", "category": "policy",
                                          "meta": {"lang": "en"}}))) == [
        Query(id="q1", text="refund?", category="policy", meta={"lang": "en"})]
    assert list(read_jsonl("chunks", jl({"id": "c1", "text": "t", "doc_id": "d"}))) == [
        Chunk(id="c1", text="t", doc_id="d")]
    assert list(read_jsonl("qrels", jl({"query_id": "q", "chunk_id": "c", "grade": 2, "note": "x"}))) == [
        Judgment(query_id="q", chunk_id="c", grade=2, note="x")]
    (label,) = read_jsonl("labels", jl({"query_id": "q", "chunk_id": "c", "grade": 1, "annotator": "al",
                                        "created_at": "2026-01-02T03:04:05"}))
    assert label == LabelRecord(query_id="q", chunk_id="c", grade=1, annotator="al",
                                created_at=datetime(2026, 1, 2, 3, 4, 5))
    (facet,) = read_jsonl("facets", jl({"query_id": "q", "facet": "cost", "chunk_id": "c"}))
    assert facet == FacetRecord(query_id="q", facet="cost", chunk_id="c", covered=True)
    (nugget,) = read_jsonl("nuggets", jl({"query_id": "q", "nugget": "30 days", "importance": "vital"}))
    assert nugget == NuggetRecord(query_id="q", nugget="30 days", importance="vital")
    assert list(read_jsonl("entities", jl({"query_id": "q", "entity": "DHL"}))) == [
        EntityRecord(query_id="q", entity="DHL")]
    assert list(read_jsonl("answers", jl({"query_id": "q", "run": "r", "text": "a", "cited": ["c1"]}))) == [
        Answer(query_id="q", run="r", text="a", cited=["c1"])]


def test_run_lines_entry_form_and_ranked_list_form():
    entries = list(read_jsonl("run", jl({"query_id": "q1", "chunk_id": "a", "score": 2, "rank": 1},
                                        {"query_id": "q1", "chunk_id": "b", "score": 1.5})))
    assert entries == [RunEntry(query_id="q1", chunk_id="a", score=2.0, rank=1),
                       RunEntry(query_id="q1", chunk_id="b", score=1.5)]
    ranked = list(read_jsonl("run", jl({"query_id": "q2", "chunks": ["x", "y", "z"]}), numbered=True))
    assert ranked == [(1, RunEntry(query_id="q2", chunk_id=c, rank=i)) for i, c in enumerate("xyz", 1)]


@pytest.mark.parametrize(
    ("kind", "text", "line", "field", "words"),
    [
        ("qrels", '{"query_id": "q", "chunk_id": "c", "grade": 1}\n{"query_id": "q", "chunk_id"\n',
         2, None, "not valid JSON"),
        ("qrels", '[1, 2]\n', 1, None, "JSON object"),
        ("qrels", jl({"query_id": "q", "grade": 1}), 1, "chunk_id", "missing"),
        ("qrels", jl({"query_id": "q", "chunk_id": "c", "grade": 1.5}), 1, "grade", "not an integer"),
        ("qrels", jl({"query_id": "q", "chunk_id": "c", "grade": "2"}), 1, "grade", "not an integer"),
        ("qrels", jl({"query_id": "q", "chunk_id": "c", "grade": True}), 1, "grade", "not an integer"),
        ("qrels", jl({"query_id": 7, "chunk_id": "c", "grade": 1}), 1, "query_id", "not a string"),
        ("qrels", jl({"query_id": "q", "chunk_id": "c", "grade": 1, "grdae": 2}), 1, "grdae", "unknown field"),
        ("qrels", jl({"query_id": "q", "chunk_id": "c", "grade": 1}, {"query_id": "q", "chunk_id": "c", "grade": 0}),
         2, "grade", "contradicts line 1"),
        ("run", '{"query_id": "q", "chunk_id": "c", "score": NaN}\n', 1, "score", "finite"),
        ("run", '{"query_id": "q", "chunk_id": "c", "score": Infinity}\n', 1, "score", "finite"),
        ("run", jl({"query_id": "q", "chunk_id": "c", "score": "1.0"}), 1, "score", "not a number"),
        ("run", jl({"query_id": "q", "chunk_id": "c", "score": 1}, {"query_id": "q", "chunk_id": "c", "score": 0.5}),
         2, "chunk_id", "twice"),
        ("run", jl({"query_id": "q", "chunk_id": "a", "score": 1}, {"query_id": "q", "chunk_id": "b"}),
         2, "score", "some lines"),
        ("run", jl({"query_id": "q", "chunks": ["a", 3]}), 1, "chunks[1]", "not a string"),
        ("queries", jl({"id": "q", "text": "a"}, {"id": "q", "text": "b"}), 2, "text", "contradicts"),
        ("queries", jl({"id": "q", "text": "a", "lang": "en"}), 1, "lang", "meta"),
        ("queries", jl({"id": "", "text": "a"}), 1, "id", "empty"),
        ("chunks", jl({"id": "c", "text": "a", "meta": [1]}), 1, "meta", "object"),
        ("nuggets", jl({"query_id": "q", "nugget": "n", "importance": "huge"}), 1, "importance", "vital"),
        ("nuggets", jl({"query_id": "q", "nugget": "n", "support": "full"}), 1, None, "chunk_id"),
        ("nuggets", jl({"query_id": "q", "nugget": "n", "importance": "vital"},
                       {"query_id": "q", "nugget": "n", "importance": "okay"}), 2, "importance", "contradicts"),
        ("facets", jl({"query_id": "q", "facet": "f", "chunk_id": "c", "covered": "yes"}), 1, "covered", "true or false"),
        ("labels", jl({"query_id": "q", "chunk_id": "c", "grade": 1, "created_at": "yesterday"}), 1, "created_at", "ISO"),
        ("answers", jl({"query_id": "q", "run": "r", "text": "t", "cited": "c1"}), 1, "cited", "list"),
        ("queries", '{"id": "q", "text": "\\ud800"}\n', 1, None, "surrogate"),
        ("chunks", '{"id": "c", "text": "t", "meta": {"x": NaN}}\n', 1, "meta", "NaN"),
        ("qrels", '{"query_id": "q", "chunk_id": "c", "grade": NaN}\n', 1, "grade", "not an integer"),
        ("run", '[' * 100_000 + '\n', 1, None, "nested too deeply"),
    ],
)
def test_bad_jsonl_lines(kind, text, line, field, words):
    with pytest.raises(InputError) as caught:
        list(read_jsonl(kind, text, name="f.jsonl"))
    error = caught.value
    assert (error.file, error.line, error.field) == ("f.jsonl", line, field), str(error)
    assert words in str(error)
    assert "\n" not in str(error)


def test_csv_reads_typed_cells_and_quoted_multiline_text():
    text = ('id,text,meta,category\n'
            'q1,"two\nlines",,policy\n'
            'q2,plain,"{""k"": 1}",\n')
    assert list(read_csv("queries", text, numbered=True)) == [
        (2, Query(id="q1", text="two\nlines", category="policy")),
        (4, Query(id="q2", text="plain", meta={"k": 1})),
    ]
    run = list(read_csv("run", "query_id,chunk_id,score,rank\nq,c,1.5,1\nq,d,0.5,2\n"))
    assert run[0] == RunEntry(query_id="q", chunk_id="c", score=1.5, rank=1)
    (facet,) = read_csv("facets", "query_id,facet,chunk_id,covered\nq,f,c,false\n")
    assert facet.covered is False
    (answer,) = read_csv("answers", "query_id,run,text,cited\nq,r,t,c1 c2\n")
    assert answer.cited == ["c1", "c2"]


@pytest.mark.parametrize(
    ("kind", "text", "line", "field", "words"),
    [
        ("qrels", "query_id,chunk_id,grade\nq,c,two\n", 2, "grade", "not an integer"),
        ("qrels", "query_id,chunk_id,grade\nq,c,2.0\n", 2, "grade", "not an integer"),
        ("qrels", "query_id,chunk_id,grade\nq,c\n", 2, None, "cells"),
        ("qrels", "query_id,chunk_id,grade\nq,,1\n", 2, "chunk_id", "empty"),
        ("qrels", "query_id,grade\nq,1\n", 2, "chunk_id", "missing"),
        ("qrels", "query_id,chunk_id,grde\n", 1, "grde", "unknown column"),
        ("run", "query_id,chunk_id,score\nq,c,nan\n", 2, "score", "finite"),
        ("run", "query_id,chunk_id,score\nq,c,1\nq,c,2\n", 3, "chunk_id", "twice"),
        ("queries", 'id,text\nq,"unterminated\n', 2, None, "CSV"),
        ("queries", "id,text,meta\nq,t,{bad\n", 2, "meta", "JSON object"),
    ],
)
def test_bad_csv_rows(kind, text, line, field, words):
    with pytest.raises(InputError) as caught:
        list(read_csv(kind, text, name="f.csv"))
    error = caught.value
    assert (error.file, error.line, error.field) == ("f.csv", line, field), str(error)
    assert words in str(error)


RECORDS = {
    "queries": [Query(id="q1", text="Où est mon colis?", description="d", category="c", meta={"a": [1, 2]}),
                Query(id="q2", text="line\nbreak, \"quoted\"")],
    "chunks": [Chunk(id="c1", text="t", doc_id="d1", meta={"x": None}), Chunk(id="c2", text="")],
    "run": [RunEntry(query_id="q1", chunk_id="c1", score=0.25, rank=1),
            RunEntry(query_id="q1", chunk_id="c2", score=0.125, rank=2)],
    "qrels": [Judgment(query_id="q1", chunk_id="c1", grade=2, annotator="a", note="n, with comma"),
              Judgment(query_id="q1", chunk_id="c2", grade=0)],
    "labels": [LabelRecord(query_id="q1", chunk_id="c1", grade=1, annotator="al",
                           created_at=datetime(2026, 5, 1, 12, 30, 1, 250000))],
    "facets": [FacetRecord(query_id="q1", facet="cost"),
               FacetRecord(query_id="q1", facet="cost", chunk_id="c1", annotator="b", covered=False)],
    "nuggets": [NuggetRecord(query_id="q1", nugget="n1", importance="vital", kind="claim", weight=2.5),
                NuggetRecord(query_id="q1", nugget="n1", importance="vital", kind="claim", weight=2.5,
                             chunk_id="c1", annotator="a", support="partial")],
    "entities": [EntityRecord(query_id="q1", entity="DHL")],
    "answers": [Answer(query_id="q1", run="r", text="It ships.", cited=["c1", "c2"]), Answer(query_id="q2", run="r", text="")],
}


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_round_trip_every_kind(tmp_path, kind, fmt):
    path = tmp_path / f"out.{fmt}"
    assert write_records(kind, RECORDS[kind], path, fmt) == len(RECORDS[kind])
    assert list(read_records(kind, path)) == RECORDS[kind]


def test_writers_accept_text_streams():
    out = io.StringIO()
    write_jsonl(RECORDS["qrels"], out, kind="qrels")
    assert out.getvalue().splitlines()[1] == '{"query_id": "q1", "chunk_id": "c2", "grade": 0}'
    out = io.StringIO()
    write_csv(RECORDS["qrels"], out, kind="qrels")
    assert out.getvalue().splitlines()[0] == "query_id,chunk_id,grade,annotator,note"
