"""Input that was read silently and meant something else is refused with the file, the line and
the field: a key given twice in a JSON object, a negative rank in a run, a control character in
an id."""

from __future__ import annotations

import json

import pytest

from ragjudge.errors import InputError
from ragjudge.formats import read_beir_corpus, read_beir_qrels, read_records
from ragjudge.safetext import is_clean


def refusal(kind: str, text: str, fmt: str) -> InputError:
    with pytest.raises(InputError) as caught:
        list(read_records(kind, text, fmt, name="in.x"))
    return caught.value


@pytest.mark.parametrize(("kind", "line"), [
    ("queries", '{"id": "x18", "id": "x19", "text": "refunds"}'),
    ("chunks", '{"id": "c1", "text": "a", "text": "b"}'),
    ("qrels", '{"query_id": "q1", "chunk_id": "c1", "grade": 0, "grade": 3}'),
    ("run", '{"query_id": "q1", "chunks": ["c1"], "chunks": ["c2"]}'),
])
def test_a_key_given_twice_in_a_json_line_is_refused(kind, line):
    error = refusal(kind, '{"id": "x1", "text": "fine"}\n' + line + "\n" if kind == "queries" else line + "\n",
                    "jsonl")
    key = next(k for k in ("id", "text", "grade", "chunks") if line.count(f'"{k}"') == 2)
    assert (error.file, error.field) == ("in.x", key)
    assert error.line == (2 if kind == "queries" else 1)
    assert "appears twice" in str(error)


def test_a_key_given_twice_inside_meta_is_refused_in_jsonl_csv_and_beir(tmp_path):
    error = refusal("chunks", '{"id": "c1", "text": "a", "meta": {"src": "x", "src": "y"}}\n', "jsonl")
    assert (error.line, error.field) == (1, "src")
    error = refusal("chunks", 'id,text,meta\nc1,a,"{""src"": 1, ""src"": 2}"\n', "csv")
    assert (error.line, error.field) == (2, "meta.src")
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "_id": "d2", "text": "t"}\n')
    with pytest.raises(InputError) as caught:
        list(read_beir_corpus(tmp_path))
    assert (caught.value.line, caught.value.field) == (1, "_id")


def test_distinct_keys_still_read_as_before():
    (query,) = read_records("queries", '{"id": "q1", "text": "t", "meta": {"a": {"b": 1}, "c": [{"b": 2}]}}\n',
                            "jsonl")
    assert query.meta == {"a": {"b": 1}, "c": [{"b": 2}]}


def test_a_negative_rank_in_a_trec_run_is_refused_and_zero_is_still_no_rank():
    error = refusal("run", "q01 Q0 c1 1 2.0 t\nq01 Q0 c2 -1 1.0 t\n", "trec")
    assert (error.file, error.line, error.field) == ("in.x", 2, "rank")
    assert "negative" in str(error)
    (entry,) = read_records("run", "q1 Q0 c1 0 3.5 t\n", "trec")
    assert entry.rank is None


CONTROLS = ["\x1b", "\x07", "\x7f", "\x9b", "\r", "\x01"]


@pytest.mark.parametrize("ch", CONTROLS, ids=[f"U+{ord(c):04X}" for c in CONTROLS])
@pytest.mark.parametrize(("kind", "fmt", "template", "field", "line"), [
    ("qrels", "trec", "q1 0 c1 1\nq1 0 h{c}2 1\n", "chunk_id", 2),
    ("run", "trec", "q{c}1 Q0 c1 1 1.0 t\n", "query_id", 1),
    ("qrels", "jsonl", '{{"query_id": "q1", "chunk_id": "h{c}", "grade": 1}}\n', "chunk_id", 1),
    ("queries", "jsonl", '{{"id": "q{c}", "text": "t"}}\n', "id", 1),
    ("chunks", "jsonl", '{{"id": "c1", "text": "t", "doc_id": "d{c}"}}\n', "doc_id", 1),
    ("labels", "jsonl", '{{"query_id": "q1", "chunk_id": "c1", "grade": 1, "annotator": "ann{c}"}}\n',
     "annotator", 1),
    ("run", "jsonl", '{{"query_id": "q1", "chunks": ["c1", "c{c}"]}}\n', "chunks[1]", 1),
    ("answers", "jsonl", '{{"query_id": "q1", "run": "r{c}", "text": "t", "cited": []}}\n', "run", 1),
    ("answers", "jsonl", '{{"query_id": "q1", "run": "r", "sentences": [{{"text": "t", "citations": ["c{c}"]}}]}}\n',
     "sentences[0].citations[0]", 1),
    ("qrels", "csv", "query_id,chunk_id,grade\nq1,c1,1\nq{c},c1,1\n", "query_id", 3),
    ("queries", "trec", "q1\tfine\nq{c}2\twhere?\n", "id", 2),
])
def test_a_control_character_in_an_id_is_refused(kind, fmt, template, field, line, ch):
    text = template.format(c=json.dumps(ch)[1:-1] if fmt == "jsonl" else ch)
    if fmt == "csv" and ch == "\r":
        text = text.replace("q\r", '"q\r"')  # a CR in a CSV cell must be quoted to be a cell
    error = refusal(kind, text, fmt)
    assert is_clean(str(error))  # the message names the character visibly (ESC as ␛)
    if fmt == "trec" and kind != "queries" and ch.isspace():
        # a CR between fields is white space in a TREC run or qrels: the line has a field too many
        assert (error.file, error.line) == ("in.x", line)
        assert "␍" in error.message
        return
    assert (error.file, error.line, error.field) == ("in.x", line, field)
    assert "control character" in error.message


def test_a_control_character_in_a_beir_qrels_id_is_refused(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td\x1b[31m\t1\n")
    with pytest.raises(InputError) as caught:
        list(read_beir_qrels(tmp_path))
    assert (caught.value.line, caught.value.field) == (2, "corpus-id")


def test_control_characters_in_text_are_kept():
    # a chunk's text is data: a tab, a form feed or an ESC in it is shown visibly, not refused
    (chunk,) = read_records("chunks", '{"id": "c1", "text": "a\\tb\\u001b[31m\\f"}\n', "jsonl")
    assert chunk.text == "a\tb\x1b[31m\f"
    (query,) = read_records("queries", "q1\twhere\x1b?\n", "trec")
    assert query.text == "where\x1b?"
