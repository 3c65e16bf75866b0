"""Sources: paths, file objects and inline text; gzip, UTF-8 and line-length checks."""

from __future__ import annotations

import gzip
import io

import pytest

from ragjudge.errors import InputError
from ragjudge.formats import Lines, read_records, read_text
from ragjudge.formats.source import open_output


def test_inline_text_path_and_file_object_give_the_same_lines(tmp_path):
    text = "q1 0 c1 1\n\nq1 0 c2 0\r\n"
    path = tmp_path / "a.qrels"
    path.write_text(text, encoding="utf-8")
    expected = [(1, "q1 0 c1 1"), (2, ""), (3, "q1 0 c2 0")]
    assert list(Lines(text)) == expected
    assert list(Lines(path)) == expected
    assert list(Lines(str(path))) == expected
    with open(path, "rb") as binary:
        assert list(Lines(binary)) == expected
    with open(path, encoding="utf-8", newline="") as textfile:
        assert list(Lines(textfile)) == expected
    assert list(Lines(io.StringIO(text))) == expected
    assert list(Lines(text.encode())) == expected


def test_gzip_is_read_transparently_by_name_and_by_magic_bytes(tmp_path):
    data = "".join(f"q{i} 0 c{i} 1\n" for i in range(100))
    named = tmp_path / "a.qrels.gz"
    named.write_bytes(gzip.compress(data.encode()))
    unnamed = tmp_path / "a.qrels"
    unnamed.write_bytes(gzip.compress(data.encode()))
    assert len(list(read_records("qrels", named))) == 100
    assert len(list(read_records("qrels", unnamed))) == 100
    assert len(list(read_records("qrels", gzip.compress(data.encode()), "trec"))) == 100


def test_truncated_gzip_names_file_and_line_reached(tmp_path):
    data = "".join(f"q{i} Q0 c{i} {i} {1 / (i + 1)} tag\n" for i in range(5000)).encode()
    packed = gzip.compress(data)
    path = tmp_path / "run.trec.gz"
    path.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(InputError) as caught:
        list(read_records("run", path))
    error = caught.value
    assert error.file == str(path)
    assert error.line is not None and 1 < error.line < 5000
    assert "truncated" in str(error) and str(path) in str(error)


def test_damaged_gzip_is_an_input_error(tmp_path):
    packed = bytearray(gzip.compress(b"q1 0 c1 1\n" * 1000))
    packed[20:40] = b"\x00" * 20
    path = tmp_path / "x.qrels.gz"
    path.write_bytes(bytes(packed))
    with pytest.raises(InputError) as caught:
        list(read_records("qrels", path))
    assert caught.value.file == str(path)


def test_non_utf8_names_line_and_byte_offset(tmp_path):
    path = tmp_path / "q.qrels"
    path.write_bytes(b"q1 0 c1 1\nq1 0 c\xe92 1\n")
    with pytest.raises(InputError) as caught:
        list(read_records("qrels", path))
    message = str(caught.value)
    assert caught.value.line == 2
    # line 1 is 10 bytes, and the bad byte is the 7th of line 2 (offset 6): 10 + 6 = 16
    assert "byte offset 16" in message and "0xe9" in message


def test_a_line_longer_than_the_limit_is_refused():
    with pytest.raises(InputError) as caught:
        list(Lines("short\n" + "x" * 100 + "\nok\n", max_line_bytes=50))
    assert caught.value.line == 2
    assert list(Lines("x" * 50 + "\n", max_line_bytes=50)) == [(1, "x" * 50)]


def test_utf8_bom_is_dropped_and_missing_file_is_an_input_error(tmp_path):
    assert list(Lines("\ufeffq1 0 c1 1\n".encode())) == [(1, "q1 0 c1 1")]
    with pytest.raises(InputError, match="does not exist"):
        list(Lines(tmp_path / "nope.trec"))


def test_read_text_and_open_output_gzip_round_trip(tmp_path):
    path = tmp_path / "out.txt.gz"
    with open_output(path) as out:
        out.write("héllo\nwörld\n")
    assert read_text(path) == "héllo\nwörld\n"
