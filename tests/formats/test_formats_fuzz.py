"""Hostile input: every reader, fed random bytes, truncations, very long lines, wrong types, NaN
scores and duplicate ids, either reads records or raises InputError naming the file — never
anything else."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import pytest

from ragjudge.errors import InputError
from ragjudge.formats import KINDS, read_beir_corpus, read_beir_qrels, read_beir_queries, read_records

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

READERS = [(kind, fmt) for kind in KINDS for fmt in ("jsonl", "csv")] + [
    ("run", "trec"), ("qrels", "trec"), ("labels", "trec"), ("queries", "trec"), ("chunks", "trec"),
    ("queries", "smart"), ("chunks", "smart"), ("qrels", "smart")]


def consume(kind: str, fmt: str, data: bytes | str) -> None:
    try:
        for _ in read_records(kind, data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"),
                              fmt, name="fuzz.in"):
            pass
    except InputError as error:
        assert error.file == "fuzz.in"
        assert "\n" not in str(error)
        if error.line is not None:
            assert error.line >= 1


VALID = {
    "smart": {"chunks": ".I 1\n.T\nA title\n.A\nLind, E.\n.W\nSome text,\non two lines.\n.X\n1\t5\t1\n",
              "queries": "1\nwhich papers\nare about sums?\n   /\n", "qrels": "01 1410  0 0\n01 1572  0 0\n"},
    "trec": {"run": "q1 Q0 c1 1 2.5 tag\nq1 Q0 c2 2 1.5 tag\nq2 Q0 c1 1 0.1 tag\n",
             "qrels": "q1 0 c1 2\nq1 0 c2 0\nq2 0 c1 1\n", "labels": "q1 0 c1 2\n",
             "queries": "q1\twhere?\nq2\twhen?\n", "chunks": "c1\ttext\n"},
    "jsonl": {
        "queries": '{"id": "q1", "text": "a"}\n{"id": "q2", "text": "b", "meta": {"x": 1}}\n',
        "chunks": '{"id": "c1", "text": "a", "doc_id": "d"}\n',
        "run": '{"query_id": "q1", "chunk_id": "c1", "score": 1.0}\n{"query_id": "q1", "chunk_id": "c2", "score": 0.5}\n',
        "qrels": '{"query_id": "q1", "chunk_id": "c1", "grade": 1}\n',
        "labels": '{"query_id": "q1", "chunk_id": "c1", "grade": 1, "created_at": "2026-01-01T00:00:00"}\n',
        "facets": '{"query_id": "q1", "facet": "f", "chunk_id": "c1"}\n',
        "nuggets": '{"query_id": "q1", "nugget": "n", "chunk_id": "c1", "support": "full"}\n',
        "entities": '{"query_id": "q1", "entity": "e"}\n',
        "answers": '{"query_id": "q1", "run": "r", "text": "t", "cited": ["c1"]}\n',
    },
    "csv": {
        "queries": 'id,text,meta\nq1,a,"{""x"": 1}"\n', "chunks": "id,text,doc_id\nc1,a,d\n",
        "run": "query_id,chunk_id,score,rank\nq1,c1,1.0,1\nq1,c2,0.5,2\n",
        "qrels": "query_id,chunk_id,grade\nq1,c1,1\n", "labels": "query_id,chunk_id,grade,annotator\nq1,c1,1,a\n",
        "facets": "query_id,facet,chunk_id,covered\nq1,f,c1,true\n",
        "nuggets": "query_id,nugget,chunk_id,support\nq1,n,c1,full\n",
        "entities": "query_id,entity\nq1,e\n", "answers": "query_id,run,text,cited\nq1,r,t,c1\n",
    },
}


def valid(kind: str, fmt: str) -> str:
    return VALID[fmt].get(kind, VALID[fmt].get("qrels"))


@FUZZ
@given(reader=st.sampled_from(READERS), data=st.binary(max_size=300))
def test_random_bytes(reader, data):
    consume(*reader, data)


@FUZZ
@given(reader=st.sampled_from(READERS), cut=st.integers(min_value=0, max_value=400),
       junk=st.binary(max_size=8), gz=st.booleans())
def test_truncated_and_spliced_valid_files(reader, cut, junk, gz):
    kind, fmt = reader
    data = valid(kind, fmt).encode() * 3
    if gz:
        packed = gzip.compress(data)
        consume(kind, fmt, packed[: cut % (len(packed) + 1)] + junk)
    else:
        consume(kind, fmt, data[:cut] + junk + data[cut:])


@pytest.mark.slow
@FUZZ
@given(reader=st.sampled_from(READERS), length=st.integers(min_value=1, max_value=200_000),
       char=st.sampled_from(["x", " ", ",", '"', "{", "é", "\t"]))
def test_very_long_lines(reader, length, char):
    kind, fmt = reader
    consume(kind, fmt, valid(kind, fmt) + char * length + "\n" + valid(kind, fmt))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
FIELD_NAMES = st.sampled_from(["id", "text", "query_id", "chunk_id", "grade", "score", "rank", "chunks",
                               "facet", "nugget", "support", "importance", "kind", "weight", "covered",
                               "annotator", "note", "created_at", "meta", "cited", "run", "entity", "doc_id",
                               "description", "category", "extra"])


@pytest.mark.slow
@FUZZ
@given(kind=st.sampled_from(KINDS),
       objects=st.lists(st.dictionaries(FIELD_NAMES, JSON_VALUES, max_size=7), min_size=1, max_size=5))
def test_jsonl_wrong_types_nan_and_duplicates(kind, objects):
    text = "".join(json.dumps(o, allow_nan=True) + "\n" for o in objects + objects[:1])
    consume(kind, "jsonl", text)


CELLS = st.one_of(st.sampled_from(["", "q1", "c1", "1", "-3", "2.5", "nan", "inf", "NaN", "true", "x",
                                   "[1]", '["a"]', "{}", '{"a": 1}', "2026-01-01", "vital", "full"]),
                  st.text(max_size=6))


@pytest.mark.slow
@FUZZ
@given(kind=st.sampled_from(KINDS), data=st.data())
def test_csv_wrong_types_nan_and_duplicates(kind, data):
    from ragjudge.formats import FIELDS

    header = data.draw(st.lists(st.sampled_from(FIELDS[kind] + ("bogus",)), min_size=1, max_size=6, unique=True))
    rows = data.draw(st.lists(st.lists(CELLS, min_size=len(header), max_size=len(header)), max_size=4))
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows + rows[:1])
    consume(kind, "csv", out.getvalue())


@pytest.mark.slow
@FUZZ
@given(qids=st.lists(st.sampled_from(["q1", "q2", "q 3", ""]), min_size=1, max_size=6),
       scores=st.lists(st.sampled_from(["1", "0.5", "nan", "-inf", "1e999", "x", "", "1e-400"]),
                       min_size=1, max_size=6))
def test_trec_run_nan_and_duplicate_ids(qids, scores):
    lines = [f"{q} Q0 c{i % 2} {i} {s} tag" for i, (q, s) in enumerate(zip(qids, scores))]
    consume("run", "trec", "\n".join(lines) + "\n")


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(corpus=st.binary(max_size=200), queries=st.binary(max_size=200), qrels=st.binary(max_size=200))
def test_beir_folders_of_random_bytes(corpus, queries, qrels):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "qrels").mkdir()
        (root / "corpus.jsonl").write_bytes(corpus)
        (root / "queries.jsonl").write_bytes(queries)
        (root / "qrels" / "test.tsv").write_bytes(qrels)
        for reader in (read_beir_corpus, read_beir_queries, read_beir_qrels):
            try:
                list(reader(root))
            except InputError as error:
                assert error.file is not None and error.file.startswith(folder)
