"""SMART's test collections (CACM, CISI, MED, Cranfield, NPL) read as chunks and queries, found
by their content, and refused with the file, line and field where they are broken.

The files under ``data/smart`` are small hand-made samples that copy each collection's layout:
CACM's fields and its end marker ``.I 0``, CISI's blanks after field letters and repeated
``.A``, MED's padded lines, Cranfield's CR-LF, zero-padded query ids, empty and doubled
fields, NPL's ``/``-separated records.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragjudge.errors import InputError, UsageError
from ragjudge.formats import detect_format, read_records
from ragjudge.models import Chunk, Query

DATA = Path(__file__).parent / "data" / "smart"


def chunks(name: str) -> list[Chunk]:
    return list(read_records("chunks", DATA / name))


def queries(name: str) -> list[Query]:
    return list(read_records("queries", DATA / name))


def test_cacm_documents_become_chunks_shaped_as_beir_documents():
    first, second, third = chunks("cacm-like.all")
    # no .W: the title is the text (so no chunk is empty), and is not repeated in meta
    assert first == Chunk(id="1", text="Rounding Errors in Recursive Sums", doc_id="1", meta={
        "bibliography": "CACM March, 1961", "authors": "Lind, E. Q.\nHarrow, P.",
        "notes": "CA610301 JB March 20, 1978  9:14 AM", "references": "1\t5\t1\n7\t5\t1\n1\t6\t1"})
    # .W is the text, its leading blank and line breaks as written; the title goes to meta
    assert second.text == ("A lookup table of fixed size is searched by halving\nthe interval at each "
                           "probe; timings on two machines\nare reported.")
    assert second.meta == {"title": "A Table Lookup Procedure for Small Machines",
                           "bibliography": "CACM April, 1961", "authors": "Oduya, T.",
                           "keywords": "table lookup, binary search", "categories": "3.74 4.22",
                           "notes": "CA610402 JB March 20, 1978  9:20 AM", "references": "2\t5\t2"}
    assert third.text == "Notes on Queue Disciplines"


def test_cacm_queries_end_with_an_empty_record_that_is_skipped():
    assert queries("cacm-like-query.text") == [
        Query(id="1", text="Which papers describe searching a table by repeated halving\nof its interval?",
              meta={"notes": "1. A. Reader, Math Dept (halving search)"}),
        Query(id="2", text="Rounding in long sums.",
              meta={"authors": "Lind, E. Q.", "notes": "2. B. Asker, Physics (rounding)"}),
    ]


def test_cisi_blanks_after_field_letters_and_repeated_fields():
    first, second = chunks("cisi-like.all")
    assert first.meta["title"] == "Catalogue Rules for Small Libraries"  # ".T " with a blank
    assert first.meta["authors"] == ["Marsh, K.L.", "Beale, R."]  # one .A per author: a list
    assert first.text == ("A survey of the catalogue rules used by forty small\nlibraries, with the "
                          "rules they share.")
    assert second.id == "2"  # ".I   2"
    assert [q.id for q in queries("cisi-like.qry")] == ["1", "2"]
    assert queries("cisi-like.qry")[1].meta == {"title": "Indexing cost", "authors": "Owen, J.",
                                                "bibliography": "(Report 12)"}


def test_med_padding_is_dropped():
    first, second = chunks("med-like.all")
    assert first.text == ("plasma levels of two sugars in mothers and infants at birth .\n  levels were "
                          "measured in forty pairs and compared .")
    assert first.meta is None and second.text == "changes in liver weight during growth ."


def test_cranfield_crlf_zero_padded_ids_empty_and_doubled_fields():
    first, empty, doubled = chunks("cran-like.all.1400")
    assert "\r" not in first.text and first.meta["bibliography"] == "j. flow 3, 1957, 12."
    # a document whose fields are all empty: a chunk with empty text (the relevance may name it)
    assert empty == Chunk(id="2", text="", doc_id="2")
    # two .W: both texts, a blank line between
    assert doubled.text == "lift of a thin wing .\n\na second abstract was filed under the same number ."
    assert [q.id for q in queries("cran-like.qry")] == ["1", "2", "4"]  # .I 001, 002, 004


def test_npl_records_are_separated_by_slash_lines():
    assert chunks("npl-like-doc-text") == [
        Chunk(id="1", text="thin wing lift  a short note on the lift of\nthin wings at low speed", doc_id="1"),
        Chunk(id="2", text="flat plate heat transfer", doc_id="2")]


@pytest.mark.parametrize(("name", "kind"), [
    ("cacm-like.all", "chunks"), ("cacm-like-query.text", "queries"), ("cisi-like.all", "chunks"),
    ("cisi-like.qry", "queries"), ("med-like.all", "chunks"), ("cran-like.all.1400", "chunks"),
    ("cran-like.qry", "queries"), ("npl-like-doc-text", "chunks")])
def test_smart_files_are_found_by_their_content(tmp_path, name, kind):
    assert detect_format(DATA / name, kind) == "smart"
    assert detect_format(DATA / name) == "smart"
    named_txt = tmp_path / "collection.txt"  # a .txt is TREC by its name; its content says SMART
    named_txt.write_bytes((DATA / name).read_bytes())
    assert detect_format(named_txt, kind) == "smart"
    assert detect_format((DATA / name).read_text(), kind) == "smart"  # inline text too
    # the same records with --format smart, and as JSONL of the same fields
    records = list(read_records(kind, DATA / name, "smart"))
    assert records == list(read_records(kind, DATA / name))
    jsonl = "".join(json.dumps(r.model_dump(exclude_none=True)) + "\n" for r in records)
    assert list(read_records(kind, jsonl, "jsonl")) == records


def test_numbered_records_start_at_their_id_line():
    assert [line for line, _ in read_records("chunks", DATA / "cacm-like.all", numbered=True)] == [1, 15, 34]
    assert [line for line, _ in read_records("chunks", DATA / "npl-like-doc-text", numbered=True)] == [1, 5]


def test_other_files_are_not_taken_for_smart(tmp_path):
    for text, kind in (('{"id": "q1", "text": "t"}\n', "queries"), ("q1\twhat?\n", "queries"),
                       ("1\n2\n3\n", "chunks"), (".I\n.W\nx\n", "chunks"), ("q1 0 c1 1\n", "qrels")):
        assert detect_format(text, kind) != "smart"


def refusal(text: str, kind: str = "chunks") -> InputError:
    with pytest.raises(InputError) as caught:
        list(read_records(kind, text, "smart", name="c.all"))
    assert caught.value.file == "c.all"
    return caught.value


@pytest.mark.parametrize(("text", "line", "field", "words"), [
    ("\nsome text\n.I 1\n.W\nx\n", 2, None, "text before the first .I line"),
    (".W\nx\n.I 1\n.W\ny\n", 1, None, "text before the first .I line"),
    (".I 1\n.W\nx\n.I\n.W\ny\n", 4, ".I", "has no id"),
    (".I 1 2\n.W\nx\n", 1, ".I", "more than an id"),
    (".I 1\n.Z\nx\n", 2, ".Z", "unknown SMART field .Z"),
    (".I 1\n.w\nx\n", 2, ".w", "upper case"),
    (".I 1\n.T Rounding Errors\n.W\nx\n", 2, ".T", "text on the line of field .T"),
    (".I 1\nloose text\n.W\nx\n", 2, None, "before any field line"),
    (".I 1\n.I 2\n.W\nx\n", 1, ".I", "has no field"),
    (".I 1\n.W\nx\n.I 1\n.W\ny\n", 4, "text", "contradicts line 1"),
    ("1\nsome text\n/\n2\ncut short\n", 4, None, "ends inside this record"),
    ("1\nsome text\n/\nnot a number\n/\n", 4, None, "number on a line of its own"),
])
def test_broken_files_are_refused_with_file_line_and_field(text, line, field, words):
    error = refusal(text)
    assert (error.line, error.field) == (line, field)
    assert words in error.message


def test_a_query_without_text_is_refused_and_a_repeat_is_read_once():
    error = refusal(".I 1\n.A\nLind, E. Q.\n", "queries")
    assert (error.line, error.field) == (1, ".W")
    assert [q.id for q in read_records("queries", ".I 1\n.W\nx\n.I 01\n.W\nx\n", "smart")] == ["1"]


def test_a_smart_file_holds_no_runs():
    with pytest.raises(UsageError):
        list(read_records("run", DATA / "cacm-like.all", "smart"))
