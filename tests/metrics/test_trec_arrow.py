"""The TREC reader's three paths give exactly the same arrays, and the same refusal word for
word: pyarrow (forced on for small inputs), numpy, and the line path that defines the language.

Every case is read three times: with the pyarrow path tried first (``ARROW_MIN_BYTES = 0``),
with numpy alone, and by the line path alone. Arrays (dtype and bytes), line numbers and errors
must be identical; for each case the test also says whether the pyarrow path itself must take
the input (plain files) or hand it on (tabs, repeated or trailing blanks, blank lines, bad
numbers ...).
"""

from __future__ import annotations

import gzip
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pyarrow")

from ragjudge.errors import InputError
from ragjudge.metrics import trec
from ragjudge.metrics.trec import arrow, reader, tokens
from ragjudge.metrics.trec.source import read_bytes

KINDS = {
    "run": (trec.read_run_arrays, tokens.RUN_LAYOUT),
    "qrels": (trec.read_qrels_arrays, tokens.QRELS_LAYOUT),
}
#: each path: the fast paths the reader may take, and the size from which it tries pyarrow
PATHS = {"pyarrow": (("arrow", "numpy"), 0), "numpy": (("numpy",), 1 << 62), "lines": ((), 1 << 62)}


def _parse(kind, source, path: str, monkeypatch):
    read = KINDS[kind][0]
    paths, arrow_from = PATHS[path]
    monkeypatch.setattr(reader, "FAST_PATHS", paths)
    monkeypatch.setattr(reader, "ARROW_MIN_BYTES", arrow_from)
    try:
        arrays = read(source)
    except InputError as error:
        return ("error", str(error))
    cols = [getattr(arrays, name) for name in arrays.__dataclass_fields__ if name not in ("file", "form")]
    return tuple(None if c is None else (c.dtype.str, c.tobytes()) for c in cols) + (
        getattr(arrays, "form", None), arrays.file)


def _arrow_accepts(kind, data: bytes) -> bool:
    """Whether the pyarrow path itself takes the input (else numpy or the line path reads it)."""
    _, layout = KINDS[kind]
    buf, size, _ = read_bytes(data)
    return arrow.read([buf], size, layout) is not None


def _same(kind, data, monkeypatch):
    results = {path: _parse(kind, data, path, monkeypatch) for path in PATHS}
    assert results["pyarrow"] == results["lines"]
    assert results["numpy"] == results["lines"]
    return results["lines"]


RUN_PLAIN = [
    # ties on score (order is the Run's business, the arrays keep file order)
    b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 2.5 t\nq1 Q0 d3 3 1e-3 t\nq2 Q0 d1 1 -0 t\n",
    # unicode and long ids of different widths, numbers in every float syntax numpy reads
    ("q\u00e9 Q0 \u6587\u6863-\u4e00\u4e8c\u4e09\u56db\u4e94\u516d 1 +1.5 run\n"
     "a-much-longer-query-identifier-of-40-bytes Q0 x 2 .5 run\n"
     "q\u00e9 Q0 d 3 1.E5 r\n").encode(),
    # CRLF line ends, and no final newline
    b"q1 Q0 d1 1 3 t\r\nq1 Q0 d2 2 2 t\r\nq2 Q0 d9 1 7.25 t",
    # one line; ids of exactly 8 and 16 bytes
    b"abcdefgh Q0 0123456789abcdef 1 1 t\n",
]

RUN_FALLBACK = [
    b"q1\tQ0\td1\t1\t2.5\tt\n",            # tabs
    b"q1  Q0 d1 1 2.5 t\n",                # repeated space
    b"q1 Q0 d1 1 2.5 t \nq1 Q0 d2 1 1 t\n",  # trailing blank
    b" q1 Q0 d1 1 2.5 t\n",                # leading blank
    b"q1 Q0 d1 1 2.5 t\n\nq1 Q0 d2 1 1 t\n",  # blank line: line numbers are kept
    b"q1 Q0 d1 1 2.5 t\n   \nq1 Q0 d2 1 1 t\n",
    b"q1 Q0 d1 1 2.5 t\n\n",
    b"q1 Q0 d1 1 2.5 t\x0b\n",            # other control bytes are whitespace too
    b"q1 Q0 d1 1 2.5 t\x00x\n",
    b"q1 Q0 d1 1 2.5 t\r\r\n",
    b"q1 Q0 d1 1 2.5 t\rq1 Q0 d2 1 1 t\n",  # a lone CR is not a line end
    b"q\t Q0 d1 1 2.5 t\rq1 Q0 d2 1 1 t\n",  # ... even when a tab evens out the counts
    b"q1 Q0 d1 1 2.5 t x\n",               # malformed: 7 fields
    b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 1 1\n",    # malformed: 5 fields on line 2
    b"q1 Q0 d1 1 2.5 \n",                  # malformed: 5 fields and a trailing blank
    b"q1 Q0 d1  2.5 t\n",                  # malformed: empty rank field (5 fields)
    b"q1 Q0 d1 1 abc t\n",                 # malformed numbers
    b"q1 Q0 d1 1 nan t\n",
    b"q1 Q0 d1 1 NULL t\n",
    b"q1 Q0 d1 1 inf t\n",
    b"q1 Q0 d1 1 1e400 t\n",
    b"q1 Q0 d1 1 1_0 t\n",
    b"q1 Q0 d1 1 0x10 t\n",
    b"q1 Q0 d1 1 \"2\" t\n",              # quotes are not special
    b'"q 1" Q0 d1 1 2 t\n',
    b"",
    b"\xef\xbb\xbfq1 Q0 d1 1 2.5 t\n",  # a byte order mark: dropped by the line path
    b"q\xff Q0 d\xfe\x80 1 1 t\n",     # not UTF-8: refused by the line path
    "q1 Q0 d\u00a01 1 1 t\n".encode(),  # a no-break space splits a line for Python
    "q1 Q0 d\u20031 1 1 t\n".encode(),  # an em space too
    b"q1 Q0 d\x7f1 1 1 t\n",           # DEL: an id holds no control character
    "q1 Q0 d\u00851 1 1 t\n".encode(),  # NEL, a C1 control and a space to Python
    "q1 Q0 d\u009b1 1 1 t\n".encode(),  # CSI, a C1 control
    b"q1 Q0 d\x1b1 1 1 t\n",           # ESC
    b"q1 Q0 d1 -4 1 t\n",               # a negative rank
    b"q1 Q0 d1 +3 1 t\n",               # a rank the line path reads, the fast paths leave
    b"q1 Q0 d1 1234567890 1 t\n",       # a rank of ten digits
    b"q1 Q0 d1 abc 1 t\n",              # a rank that is no number
]

QRELS_PLAIN = [
    b"q1 0 d1 3\nq1 0 d2 0\nq1 0 d3 -1\nq2 0 d1 +2\nq2 0 d2 007\n",
    "q\u00e9 0 \u6587\u6863 1\r\nq\u00e9 0 d 2\r\n".encode(),
]

QRELS_FALLBACK = [
    b"q1 0 d1 0x10\n",      # pyarrow alone would read hex; the line path does not
    b"q1 0 d1 1_0\n",       # numpy alone would read Python's digit separator (10)
    b"q1 0 d1 1.5\n",
    b"q1 0 d1 99999999999999999999\n",
    b"q1 0 d1 1\nq1 0 d1\n",
    b"q1\t0\td1\t1\n",
    b"q1 0 d1 1 \n",
    b"q1 0 d1  1\n",
    b"q1 0 d1 1001\n",     # beyond MAX_GRADE
    b"q1 0 d\x7f1 1\n",
    "q1 0 d\u00851 1\n".encode(),
]


@pytest.mark.parametrize("data", RUN_PLAIN)
def test_plain_runs_take_the_arrow_path_and_match(data, monkeypatch):
    assert _arrow_accepts("run", data)
    result = _same("run", data, monkeypatch)
    assert result[0] != "error"


@pytest.mark.parametrize("data", RUN_FALLBACK)
def test_other_runs_go_to_numpy_and_match(data, monkeypatch):
    assert not _arrow_accepts("run", data)
    _same("run", data, monkeypatch)


@pytest.mark.parametrize("data", QRELS_PLAIN)
def test_plain_qrels_take_the_arrow_path_and_match(data, monkeypatch):
    assert _arrow_accepts("qrels", data)
    assert _same("qrels", data, monkeypatch)[0] != "error"


def test_smart_files_are_read_alike_by_every_path(monkeypatch):
    result = _same("qrels", b"01 2 0 0\n01 3 0 0\n2 1 0 0.000000\n", monkeypatch)
    assert result[-2] == "smart"
    # SMART's shape with one second field reads both ways: refused, with the way out
    refused = _same("qrels", b"1 28 0 0\n2 28 0 0\n", monkeypatch)
    assert refused[0] == "error" and "--format smart" in refused[1]
    # a later line with a grade shows the file is TREC: chunk '0', judged twice
    trec_after_all = _same("qrels", b"1 28 0 0\n1 29 0 2\n", monkeypatch)
    assert trec_after_all[-2] == "trec"


@pytest.mark.parametrize("data", QRELS_FALLBACK)
def test_other_qrels_go_to_numpy_and_match(data, monkeypatch):
    assert not _arrow_accepts("qrels", data)
    _same("qrels", data, monkeypatch)


def test_fallback_keeps_the_located_error(monkeypatch, tmp_path):
    path = tmp_path / "bad.run"
    path.write_bytes(b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 abc t\n")
    monkeypatch.setattr(reader, "ARROW_MIN_BYTES", 0)
    with pytest.raises(InputError) as info:
        trec.read_run_arrays(str(path))
    assert (info.value.file, info.value.line, info.value.field) == (str(path), 2, "score")
    assert "'abc' is not a number" in str(info.value)


def test_blank_lines_keep_their_line_numbers(monkeypatch):
    monkeypatch.setattr(reader, "ARROW_MIN_BYTES", 0)
    arrays = trec.read_run_arrays("q1 Q0 d1 1 2.5 t\n\nq1 Q0 d2 1 1 t\n")
    assert arrays.lines.tolist() == [1, 3]


def test_gzip_path_and_bytes(monkeypatch, tmp_path):
    data = RUN_PLAIN[1] + RUN_PLAIN[0]
    path = tmp_path / "run.trec.gz"
    path.write_bytes(gzip.compress(data))
    assert _arrow_accepts("run", gzip.compress(data))
    fast = _parse("run", str(path), "pyarrow", monkeypatch)
    assert fast == _parse("run", str(path), "lines", monkeypatch)
    assert fast[:-1] == _parse("run", data, "numpy", monkeypatch)[:-1]


def _random_run(rng, n: int) -> bytes:
    alphabet = list("abcxyz0123456789-_.:") + ["\u00e9", "\u6587"]
    lines = []
    for i in range(n):
        q = "q" + "".join(rng.choice(alphabet, rng.integers(0, 20)))
        d = "".join(rng.choice(alphabet, rng.integers(1, 40)))
        score = rng.choice([f"{rng.normal():.6f}", repr(float(rng.normal() * 1e10)), "1", "-3e-7"])
        lines.append(f"{q} Q0 {d} {i + 1} {score} tag{i % 3}\n")
    return "".join(lines).encode()


@pytest.mark.slow
def test_many_reader_blocks_and_scan_chunks(monkeypatch):
    # small blocks: many arrow chunks, gathered on threads into one array, and whitespace
    # counts split across scan chunks (pairs across a chunk boundary are still seen)
    monkeypatch.setattr(arrow, "READ_BLOCK", 1 << 12)
    monkeypatch.setattr(arrow, "_SCAN", 1 << 10)
    data = _random_run(np.random.default_rng(7), 3000)
    assert _arrow_accepts("run", data)
    fast = _same("run", data, monkeypatch)
    assert len(fast[0][1]) > 0
    # a blank pair exactly across two scan chunks is found: a 1023-byte id ends at byte 1023
    long = b"q" + b"x" * 1022 + b" Q0 d 1 1 t\n" + data
    assert long[1023:1024] == b" " and _arrow_accepts("run", long)
    doubled = long[:1024] + b" " + long[1024:]
    assert not _arrow_accepts("run", doubled)
    _same("run", doubled, monkeypatch)


@pytest.mark.parametrize("insert", [b"\xef\xbb\xbf", b"\n", b" ", b"\t"])
def test_what_starts_a_line_deep_in_a_big_input_is_seen(insert, monkeypatch):
    # a big input is read in blocks by the reader's threads: a blank line, a leading blank or
    # a tab at the start of a line in the middle sends it to numpy; a byte order mark there is
    # part of an id on every path (only the input's first bytes can be a mark)
    monkeypatch.setattr(arrow, "READ_BLOCK", 1 << 12)
    data = _random_run(np.random.default_rng(11), 1000)
    middle = data.index(b"\n", len(data) // 2) + 1
    assert _arrow_accepts("run", data)
    changed = data[:middle] + insert + data[middle:]
    assert _arrow_accepts("run", changed) == (insert == b"\xef\xbb\xbf")
    _same("run", changed, monkeypatch)


_TOKEN = st.sampled_from(["q1", "q2", "d1", "d\u00e9", "Q0", "0", "1", "-2", "2.5", "1e3", "x",
                          "abcdefghijklmnopq", "nan", "0x1", ""])
_SEP = st.sampled_from([" ", " ", " ", "  ", "\t", "\r", " \r"])
_END = st.sampled_from(["\n", "\n", "\r\n", " \n", "\n\n", ""])


@pytest.mark.slow
@settings(max_examples=250, deadline=None)
@given(st.lists(st.tuples(st.lists(_TOKEN, min_size=3, max_size=7), _SEP, _END),
                min_size=1, max_size=6),
       st.sampled_from(["run", "qrels"]))
def test_random_inputs_parse_the_same_on_both_paths(rows, kind):
    text = "".join(sep.join(tokens) + end for tokens, sep, end in rows)
    with pytest.MonkeyPatch.context() as monkeypatch:
        _same(kind, text.encode(), monkeypatch)


@pytest.mark.slow
def test_metrics_work_without_pyarrow():
    code = ("import sys\n"
            "sys.modules['pyarrow'] = None\n"  # import pyarrow now raises ImportError
            "from ragjudge.metrics import trec\n"
            "from ragjudge.metrics.trec import reader\n"
            "reader.ARROW_MIN_BYTES = 0\n"
            "a = trec.read_run_arrays('q1 Q0 d1 1 2.5 t\\nq1 Q0 d2 2 1 t\\n')\n"
            "print(a.chunk_ids.tolist(), a.scores.tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[b'd1', b'd2'] [2.5, 1.0]"


def test_small_inputs_do_not_import_pyarrow():
    code = ("import sys\n"
            "from ragjudge.metrics import Run\n"
            "Run.from_trec('q1 Q0 d1 1 2.5 t\\n')\n"
            "print('pyarrow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- the proof of plain text: what the fast paths leave to the line path ----------------------

def _line_path_reads_alike(data: bytes) -> bool:
    """Python's strict UTF-8 decoder reads it, and no character is DEL, a C1 control or a
    space Python splits at above ASCII (the line path splits there; the tokenizers do not)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return not any(c == "\x7f" or "\x80" <= c <= "\x9f" or (c > "\x7f" and c.isspace()) for c in text)


@pytest.mark.slow
def test_plain_unicode_knows_the_characters_python_splits_at_or_refuses():
    from ragjudge.metrics.trec.source import plain_unicode

    # every character up to U+3100 (the C1 controls and every Unicode space lie below), then a
    # sample of the rest of the planes
    points = list(range(0x7F, 0x3100)) + [cp for cp in range(0x3100, 0x110000, 331)
                                          if not 0xD800 <= cp < 0xE000] + [0xFEFF, 0xFFFF, 0x10FFFF]
    for cp in points:
        data = ("id" + chr(cp) + "x\n").encode()
        assert plain_unicode(np.frombuffer(data, dtype=np.uint8)) == _line_path_reads_alike(data), hex(cp)


_PIECES = st.sampled_from([b"a", b" ", b"\n", b"\x7f", b"\x80", b"\x8f", b"\x90", b"\x9f", b"\xa0",
                           b"\xbf", b"\xc0", b"\xc1", b"\xc2", b"\xc3", b"\xdf", b"\xe0", b"\xe1",
                           b"\xe2", b"\xe3", b"\xed", b"\xef", b"\xf0", b"\xf4", b"\xf5", b"\xff",
                           "é".encode(), "€".encode(), "😀".encode(), b"\xe2\x80", b"\xed\xa0\x80"])


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(st.lists(_PIECES, max_size=10), st.sampled_from([1 << 24, 3, 5]))
def test_plain_unicode_is_pythons_strict_utf8_without_controls_or_spaces(pieces, block):
    from ragjudge.metrics.trec import source

    data = b"".join(pieces) + b"\n"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(source, "_DECODE_BYTES", block)  # characters across the blocks' edges
        assert source.plain_unicode(np.frombuffer(data, dtype=np.uint8)) == _line_path_reads_alike(data)
