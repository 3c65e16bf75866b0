"""CSV exports are safe to open in a spreadsheet: a text cell that would start a formula gets a
quote before it, numbers stay numbers, and ``raw`` writes every cell exactly."""

from __future__ import annotations

import csv
import io

import pytest

from ragjudge.formats import read_records, write_records
from ragjudge.formats.csvfile import spreadsheet_safe, write_csv
from ragjudge.formats.records import LabelRecord
from ragjudge.models import Query, RunEntry


def rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def written(kind: str, records, **options) -> list[list[str]]:
    out = io.StringIO()
    write_records(kind, records, out, "csv", **options)
    return rows(out.getvalue())


@pytest.mark.parametrize(("text", "cell"), [
    ("=HYPERLINK(\"http://x\",\"y\")", "'=HYPERLINK(\"http://x\",\"y\")"),
    ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
    ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
    ("@SUM(1+1)", "'@SUM(1+1)"),
    ("\t=1+1", "'\t=1+1"),
    ("\r=1+1", "'\r=1+1"),
    # plain text and plain numbers are left alone: a spreadsheet reads "-1" as the number
    ("q1", "q1"), ("-1", "-1"), ("+2.5e3", "+2.5e3"), ("a=b", "a=b"), ("", ""),
    # a word that parses as a number in Python but not in ragjudge's syntax is text: quoted
    ("-inf", "'-inf"), ("-nan", "'-nan"),
])
def test_a_text_cell_that_would_start_a_formula_is_quoted(text, cell):
    assert spreadsheet_safe(text) == cell


def test_every_text_field_of_an_export_is_neutralised_and_numbers_are_not():
    labels = [LabelRecord(query_id="=1+1", chunk_id="@c1", grade=-1, annotator="+ann",
                          note="-2+3", comment="=IMPORTXML(A1)", flagged=True, flag_note="@x")]
    header, row = written("labels", labels)
    cells = dict(zip(header, row))
    assert cells["query_id"] == "'=1+1"
    assert cells["chunk_id"] == "'@c1"
    assert cells["annotator"] == "'+ann"
    assert cells["note"] == "'-2+3"
    assert cells["comment"] == "'=IMPORTXML(A1)"
    assert cells["flag_note"] == "'@x"
    assert cells["grade"] == "-1"  # a negative grade stays a number
    assert cells["flagged"] == "true"
    run = [RunEntry(query_id="q1", chunk_id="c1", score=-0.5, rank=1)]
    header, row = written("run", run)
    assert dict(zip(header, row))["score"] == "-0.5"
    queries = [Query(id="q1", text="=cmd", meta={"src": "=x"})]
    header, row = written("queries", queries)
    cells = dict(zip(header, row))
    assert cells["text"] == "'=cmd"
    assert cells["meta"] == '{"src": "=x"}'  # a JSON cell starts with "{": no formula


def test_an_export_reads_back_exactly_and_raw_writes_every_cell_as_stored():
    labels = [LabelRecord(query_id="=1+1", chunk_id="-c1", grade=2, note="- relevant: the refund policy"),
              LabelRecord(query_id="q2", chunk_id="'=quoted", grade=0, note="''@x"),
              LabelRecord(query_id="q3", chunk_id="'plain", grade=1, note="'-1")]
    out = io.StringIO()
    write_csv(labels, out, kind="labels")
    assert [row[:2] for row in rows(out.getvalue())[1:]] == [["'=1+1", "'-c1"], ["q2", "''=quoted"],
                                                              ["q3", "'plain"]]
    assert list(read_records("labels", out.getvalue(), "csv")) == labels
    out = io.StringIO()
    write_records("labels", labels, out, "csv", raw=True)
    header, first = rows(out.getvalue())[:2]
    cells = dict(zip(header, first))
    assert [cells[f] for f in ("query_id", "chunk_id", "grade", "note")] == [
        "=1+1", "-c1", "2", "- relevant: the refund policy"]


@pytest.mark.parametrize("text", ["=x", "'=x", "''=x", "'", "''", "'abc", "-1", "'-1", "-", "'-", "@", "\t=",
                                  "'\r", "a'=b", "", "-inf", "'-inf", "'" * 5000 + "="])
def test_the_quote_is_added_and_taken_away_exactly(text):
    from ragjudge.formats.csvfile import spreadsheet_text

    cell = spreadsheet_safe(text)
    assert spreadsheet_text(cell) == text
    # what a spreadsheet sees never starts a formula (a plain number such as -1 is a number)
    assert not cell.startswith(("=", "+", "@", "\t", "\r")) and (not cell.startswith("-") or cell == "-1")


def test_a_hand_written_quote_before_a_formula_reads_as_a_spreadsheet_reads_it():
    (label,) = read_records("labels", "query_id,chunk_id,grade,note\nq1,c1,1,'=SUM(A1)\n", "csv")
    assert label.note == "=SUM(A1)"
