"""What a reader says about an input that is not what it expects says what the input is: a
folder that holds no dataset, a UTF-16 or UTF-32 file (with the command that converts it), a
device or binary data; both the line readers and the bulk TREC reader of ``eval``."""

from __future__ import annotations

import json
import os
import threading

import pytest

from ragjudge.errors import InputError
from ragjudge.formats import read_records
from ragjudge.metrics.trec import read_qrels_arrays, read_run_arrays

QRELS = "q1 0 c1 1\nq1 0 c2 0\n"


def refusal(read, *args) -> InputError:
    with pytest.raises(InputError) as caught:
        result = read(*args)
        if not hasattr(result, "query_ids"):
            list(result)
    return caught.value


def test_a_plain_folder_is_said_to_be_a_folder_holding_no_dataset(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    for kind in ("queries", "chunks", "qrels"):
        error = refusal(read_records, kind, tmp_path)
        assert error.file == str(tmp_path)
        assert "is a folder, not a file, and holds no BEIR dataset" in error.message
        assert "queries.jsonl" in error.message  # what a dataset folder would hold


def test_a_beir_folder_lacking_one_file_is_told_so(tmp_path):
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "text": "t"}) + "\n")
    error = refusal(read_records, "queries", tmp_path)
    assert error.message.startswith("this BEIR folder has no queries.jsonl")
    error = refusal(read_records, "qrels", tmp_path)
    assert error.message.startswith("this BEIR folder has no qrels/<split>.tsv")


ENCODINGS = [("utf-16", "UTF-16 (little-endian, with a byte order mark)", "-f UTF-16 "),
             ("utf-16-le", "UTF-16 (little-endian, no byte order mark)", "-f UTF-16LE "),
             ("utf-16-be", "UTF-16 (big-endian, no byte order mark)", "-f UTF-16BE "),
             ("utf-32", "UTF-32 (little-endian, with a byte order mark)", "-f UTF-32 "),
             ("utf-32-le", "UTF-32 (little-endian, no byte order mark)", "-f UTF-32LE "),
             ("utf-32-be", "UTF-32 (big-endian, no byte order mark)", "-f UTF-32BE ")]


@pytest.mark.parametrize(("codec", "named", "command"), ENCODINGS, ids=[e[0] for e in ENCODINGS])
def test_utf16_and_utf32_are_named_with_the_command_that_converts_them(tmp_path, codec, named, command):
    path = tmp_path / "in.qrels"
    path.write_bytes(QRELS.encode(codec))
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_bytes('{"id": "q1", "text": "Où est mon colis ?"}\n'.encode(codec))
    for error in (refusal(read_records, "qrels", path), refusal(read_qrels_arrays, str(path)),
                  refusal(read_records, "queries", jsonl)):
        assert error.line == 1
        assert named in error.message
        stem, extension = error.file.rsplit(".", 1)
        # the copy keeps its extension, so that its format is still told by it
        assert f"iconv {command}-t UTF-8 {error.file} > {stem}.utf8.{extension}" in error.message
        assert "0xff" not in error.message


def test_a_gzipped_utf16_file_is_decompressed_before_iconv(tmp_path):
    # iconv on the file itself would convert the compressed bytes: garbage
    import gzip

    path = tmp_path / "in.qrels.gz"
    path.write_bytes(gzip.compress(QRELS.encode("utf-16")))
    for error in (refusal(read_records, "qrels", path), refusal(read_qrels_arrays, str(path))):
        assert error.message.endswith(f"Convert it first: gzip -dc {path} | iconv -f UTF-16 -t UTF-8 > "
                                      f"{tmp_path / 'in.utf8.qrels'}")


def test_a_file_name_the_shell_would_split_is_quoted_in_the_command(tmp_path):
    path = tmp_path / "my qrels"
    path.write_bytes(QRELS.encode("utf-16"))
    error = refusal(read_records, "qrels", path)
    assert f"iconv -f UTF-16 -t UTF-8 '{path}' > '{path}.utf8'" in error.message


def test_utf16_given_inline_or_on_standard_input_names_no_file():
    error = refusal(read_records, "qrels", QRELS.encode("utf-16"), "trec")
    assert "iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8" in error.message


def test_a_device_is_said_to_be_a_device(tmp_path):
    for read, args in ((read_records, ("qrels", "/dev/zero", "trec")), (read_qrels_arrays, ("/dev/zero",)),
                       (read_run_arrays, ("/dev/null",)), (read_records, ("queries", "/dev/null", "jsonl"))):
        error = refusal(read, *args)
        assert error.message.startswith("is a device (character special file)")
        assert error.file == args[-2 if read is read_records and len(args) == 3 else 0]


def test_binary_data_is_not_read_as_text(tmp_path):
    path = tmp_path / "data.qrels"
    path.write_bytes(b"\x00" * 10_000 + b"\n")
    for error in (refusal(read_records, "qrels", path), refusal(read_qrels_arrays, str(path))):
        assert error.message.startswith("is not a text file: 4,096 of its first 4,096 bytes are NUL")


def test_a_stray_nul_is_still_named_by_its_field():
    error = refusal(read_records, "qrels", "q1 0 c\x001 1\n", "trec")
    assert (error.line, error.field) == (1, "chunk_id")


def test_a_pipe_is_read_whole_by_the_bulk_reader(tmp_path):
    fifo = tmp_path / "qrels.fifo"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "w") as out:
            out.write(QRELS)

    writer = threading.Thread(target=write)
    writer.start()
    arrays = read_qrels_arrays(str(fifo))
    writer.join()
    assert arrays.grades.tolist() == [1, 0]
