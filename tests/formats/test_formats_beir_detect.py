"""BEIR folders and --format auto detection."""

from __future__ import annotations

import gzip
import json

import pytest

from ragjudge.errors import InputError
from ragjudge.formats import (
    detect_format, read_beir_corpus, read_beir_qrels, read_beir_queries, read_records, write_beir,
)
from ragjudge.models import Chunk, Judgment, Query


def make_beir(folder, *, gz=False):
    (folder / "qrels").mkdir(parents=True)
    corpus = "".join(json.dumps(d) + "\n" for d in [
        {"_id": "d1", "title": "Refunds", "text": "Refunds take 5 days."},
        {"_id": 2, "title": "", "text": "Carriers.", "metadata": {"url": "u"}},
    ])
    if gz:
        (folder / "corpus.jsonl.gz").write_bytes(gzip.compress(corpus.encode()))
    else:
        (folder / "corpus.jsonl").write_text(corpus)
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "refund time?"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\t2\t0\n")
    (folder / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\n")


@pytest.mark.parametrize("gz", [False, True])
def test_beir_folder_reads(tmp_path, gz):
    make_beir(tmp_path, gz=gz)
    assert list(read_beir_corpus(tmp_path)) == [
        Chunk(id="d1", text="Refunds take 5 days.", meta={"title": "Refunds"}),
        Chunk(id="2", text="Carriers.", meta={"url": "u"}),
    ]
    assert list(read_beir_queries(tmp_path)) == [Query(id="q1", text="refund time?")]
    assert list(read_beir_qrels(tmp_path, split="test")) == [
        Judgment(query_id="q1", chunk_id="d1", grade=2), Judgment(query_id="q1", chunk_id="2", grade=0)]
    # every split: the identical pair of dev.tsv is read once
    assert len(list(read_beir_qrels(tmp_path))) == 2
    assert detect_format(tmp_path) == "beir"
    assert len(list(read_records("chunks", tmp_path))) == 2


def test_beir_errors_name_file_and_line(tmp_path):
    make_beir(tmp_path)
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\thigh\n")
    with pytest.raises(InputError) as caught:
        list(read_beir_qrels(tmp_path, split="test"))
    assert (caught.value.line, caught.value.field) == (2, "score")
    assert caught.value.file.endswith("test.tsv")
    (tmp_path / "queries.jsonl").write_text('{"text": "no id"}\n')
    with pytest.raises(InputError) as caught:
        list(read_beir_queries(tmp_path))
    assert (caught.value.line, caught.value.field) == (1, "_id")
    with pytest.raises(InputError, match="corpus.jsonl"):
        list(read_beir_corpus(tmp_path / "qrels"))


def test_beir_round_trip(tmp_path):
    chunks = [Chunk(id="c1", text="a", doc_id="d1", meta={"title": "T", "k": 1}), Chunk(id="c2", text="b")]
    queries = [Query(id="q1", text="x", category="policy"), Query(id="q2", text="y", meta={"m": 2})]
    qrels = [Judgment(query_id="q1", chunk_id="c1", grade=1)]
    write_beir(tmp_path / "b", chunks=chunks, queries=queries, qrels=qrels)
    assert list(read_beir_corpus(tmp_path / "b")) == chunks
    assert list(read_beir_queries(tmp_path / "b")) == queries
    assert list(read_beir_qrels(tmp_path / "b")) == qrels


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("a.trec", "trec"), ("a.qrels", "trec"), ("a.txt", "trec"), ("a.run", "trec"),
     ("a.jsonl", "jsonl"), ("a.json", "jsonl"), ("a.csv", "csv"), ("a.jsonl.gz", "jsonl"),
     ("a.run.gz", "trec"), ("a.CSV.GZ", "csv")],
)
def test_detect_by_extension(tmp_path, name, fmt):
    assert detect_format(tmp_path / name) == fmt


def test_detect_by_content(tmp_path):
    path = tmp_path / "data"
    path.write_text('{"query_id": "q"}\n')
    assert detect_format(path) == "jsonl"
    path.write_text("query_id,chunk_id,grade\nq,c,1\n")
    assert detect_format(path) == "csv"
    path.write_text("q1 0 c1 1\n")
    assert detect_format(path, "qrels") == "trec"
    path.write_bytes(gzip.compress(b'\n{"id": "q"}\n'))
    assert detect_format(path) == "jsonl"
    assert detect_format("q1 Q0 c 1 1.0 r\n", "run") == "trec"
