"""The forms of a qrels file, read alike by the line reader (``import qrels``) and the bulk reader
(``eval --qrels``): TREC's 4 fields, 3 fields (Cranfield's ``cranqrel``), SMART's ``query doc 0
0`` (CACM's ``qrels.text``, CISI's ``CISI.REL``), decided by the whole file and never line by
line; and negative grades, counted alike in every format."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragjudge.errors import InputError
from ragjudge.formats import QrelsTally, read_records, unjudged_note
from ragjudge.metrics.trec import read_qrels_arrays

DATA = Path(__file__).parent / "data" / "smart"


def both(source, form: str = "auto", same_line: bool = True):
    """(judgments, form) from each reader, or ("refused", line): the same from both (the
    refused line may differ when ``same_line`` is False: with two problems in a file, the bulk
    reader finds a line with a wrong number of fields before a wrong number)."""
    results = []
    tally = QrelsTally()
    try:
        fmt = "smart" if form == "smart" else "trec"
        judgments = [(j.query_id, j.chunk_id, j.grade)
                     for j in read_records("qrels", source, fmt, tally=tally, check_duplicates=False)]
        results.append((judgments, tally.form))
    except InputError as error:
        results.append(("refused", error.line))
    try:
        arrays = read_qrels_arrays(source, form=form)
        judgments = [(q.decode(), c.decode(), int(g)) for q, c, g in
                     zip(arrays.query_ids.tolist(), arrays.chunk_ids.tolist(), arrays.grades.tolist())]
        results.append((judgments, arrays.form))
    except InputError as error:
        results.append(("refused", error.line))
    if not same_line and results[0][0] == "refused":
        assert results[1][0] == "refused", results
    else:
        assert results[0] == results[1], results
    return results[0]


def test_cacm_relevance_is_smart_with_leading_zeros_dropped():
    # "01 2  0 0": read as TREC this would judge chunk "0" four times over
    assert both(DATA / "cacm-like-qrels.text") == (
        [("1", "2", 1), ("1", "3", 1), ("2", "1", 1), ("2", "3", 1)], "smart")


def test_cisi_relevance_is_smart_though_its_last_field_is_a_decimal():
    assert both(DATA / "cisi-like.rel") == ([("1", "1", 1), ("1", "2", 1), ("2", "2", 1)], "smart")


def test_three_fields_are_query_chunk_grade_with_crlf_and_trailing_blanks():
    assert both(DATA / "cran-like.qrel") == (
        [("1", "1", 2), ("1", "3", -1), ("2", "3", 1), ("2", "1", 4), ("3", "2", -1)], "three")


def test_four_fields_are_trec_and_ids_are_kept_as_written():
    assert both("q1 0 c1 2\n01 Q0 007 0\n") == ([("q1", "c1", 2), ("01", "007", 0)], "trec")


def test_a_file_whose_first_lines_look_smart_is_trec_when_a_later_line_is_not():
    # chunk "0" with grade 0 is a TREC judgment like any other once the file shows it is TREC
    assert both("1 0 0 0\n1 0 0 0\n2 0 c9 1\n") == ([("1", "0", 0), ("1", "0", 0), ("2", "c9", 1)], "trec")


@pytest.mark.parametrize(("text", "line"), [
    ("q1 0 c1 1\nq1 c2 1\n", 2),          # 4 fields, then 3: never a mix
    ("q1 c1 1\nq1 0 c2 1\n", 2),          # 3 fields, then 4
    ("q1 0 c1 1 x\n", 1),                 # 5 fields
    ("q1 c1\n", 1),                       # 2 fields
    ("1 28 0 0\n2 28 0 0\n", 1),          # every line 'query X 0 0' with one X: both readings fit
    ("7 3 0 0.000000\n", 1),              # one line of that shape
])
def test_mixed_unknown_and_ambiguous_forms_are_refused_at_the_line(text, line):
    assert both(text) == ("refused", line)


def test_the_ambiguous_file_is_read_as_smart_when_said_so_and_its_message_says_how():
    assert both("1 28 0 0\n2 28 0 0\n", "smart") == ([("1", "28", 1), ("2", "28", 1)], "smart")
    with pytest.raises(InputError) as caught:
        list(read_records("qrels", "1 28 0 0\n", "trec", name="q.rel"))
    assert "--format smart" in caught.value.message and "3 fields" in caught.value.message


def test_smart_said_of_a_graded_file_is_refused():
    assert both("1 28 0 0\n1 29 0 2\n", "smart") == ("refused", 2)
    assert both("1 28 1\n", "smart") == ("refused", 1)


def test_negative_grades_are_counted_in_every_format(tmp_path):
    inputs = {
        "trec": "q1 0 c1 -1\nq1 0 c2 1\nq2 0 c3 -2\n",
        "jsonl": ('{"query_id": "q1", "chunk_id": "c1", "grade": -1}\n'
                  '{"query_id": "q1", "chunk_id": "c2", "grade": 1}\n'
                  '{"query_id": "q2", "chunk_id": "c3", "grade": -2}\n'),
        "csv": "query_id,chunk_id,grade\nq1,c1,-1\nq1,c2,1\nq2,c3,-2\n",
    }
    for fmt, text in inputs.items():
        for kind in ("qrels", "labels"):
            tally = QrelsTally()
            read = list(read_records(kind, text, fmt, tally=tally, numbered=True))
            assert len(read) == 3  # the readers yield them: what to do with them is the caller's
            assert (tally.negative, tally.first_negative) == (2, 1 if fmt != "csv" else 2), fmt
            assert tally.notes()[-1] == unjudged_note(2)
    assert read_qrels_arrays(inputs["trec"]).negative == 2
    assert unjudged_note(1) == ("1 line with a negative grade was read as unjudged (trec_eval's "
                                "convention: in the pool, not judged).")
    tally = QrelsTally()
    list(read_records("qrels", DATA / "cacm-like-qrels.text", tally=tally))
    assert tally.notes() == ["Read as a SMART relevance file ('query doc 0 0', as CACM's and CISI's): every "
                             "pair listed is relevant, grade 1."]


ID = st.sampled_from(["q1", "q2", "7", "007", "0", "c-1", "é"])
GRADE = st.sampled_from(["0", "1", "2", "-1", "0.000000", "00", "1.5", "x"])


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(width=st.sampled_from([3, 4]), rows=st.lists(st.tuples(ID, ID, GRADE, st.sampled_from(["0", "Q0", "5"])),
                                                      min_size=1, max_size=6, unique_by=lambda r: (r[0], r[1])),
       extra=st.sampled_from(["", "q9 c9\n", "q9 0 c9 1 1\n"]), gaps=st.sampled_from([" ", "\t", "  "]),
       form=st.sampled_from(["auto", "smart"]))
def test_both_readers_read_any_file_alike(width, rows, extra, gaps, form):
    lines = [gaps.join((q, c, g) if width == 3 else (q, it, c, g)) for q, c, g, it in rows]
    both("\n".join(lines) + "\n" + extra, form, same_line=not extra)
