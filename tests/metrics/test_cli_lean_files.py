"""A big TREC file named by its path is read by pyarrow where it lies (mapped into memory, no
copy); what comes out must be what the numpy path and the line path give for the same file,
and every file the mapping cannot serve (gzip, no final newline, empty, missing, a folder) is
read as before.
"""

from __future__ import annotations

import gzip

import pytest

pytest.importorskip("pyarrow")

from test_trec_arrow import (
    QRELS_FALLBACK,
    QRELS_PLAIN,
    RUN_FALLBACK,
    RUN_PLAIN,
    _parse,
)

from ragjudge.metrics.trec import arrow, source


@pytest.fixture
def mapped_calls(monkeypatch):
    """The inputs the pyarrow path was given straight from a mapped file."""
    calls = []
    original = source._mapped

    def spy(handle, size):
        result = original(handle, size)
        calls.append(result is not None)
        return result

    monkeypatch.setattr(source, "_mapped", spy)
    return calls


def _both(kind, path, monkeypatch):
    fast = _parse(kind, str(path), "pyarrow", monkeypatch)
    assert fast == _parse(kind, str(path), "numpy", monkeypatch)
    assert fast == _parse(kind, str(path), "lines", monkeypatch)
    return fast


@pytest.mark.parametrize("kind, data", [("run", d) for d in RUN_PLAIN + RUN_FALLBACK]
                         + [("qrels", d) for d in QRELS_PLAIN + QRELS_FALLBACK])
def test_a_file_read_where_it_lies_gives_what_numpy_gives(kind, data, tmp_path, monkeypatch, mapped_calls):
    path = tmp_path / f"input.{kind}"
    path.write_bytes(data)
    result = _both(kind, path, monkeypatch)
    if data.endswith(b"\n") and len(data) >= 2:
        assert mapped_calls[0]  # the file was mapped for the pyarrow path
    else:
        assert not any(mapped_calls)
    if data in RUN_PLAIN + QRELS_PLAIN:
        assert result[0] != "error"


def test_files_the_mapping_does_not_serve(tmp_path, monkeypatch, mapped_calls):
    plain = RUN_PLAIN[0]
    cases = {
        "run.trec.gz": gzip.compress(plain),
        "no-newline.trec": plain.rstrip(b"\n"),
        "empty.trec": b"",
        "one.trec": b"\n",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        _both("run", tmp_path / name, monkeypatch)
    _both("run", tmp_path / "missing.trec", monkeypatch)
    _both("run", tmp_path, monkeypatch)  # a folder
    assert not any(mapped_calls)


def test_a_big_mapped_file_is_read_in_blocks_on_threads(tmp_path, monkeypatch, mapped_calls):
    from test_trec_arrow import _random_run

    import numpy as np

    monkeypatch.setattr(arrow, "READ_BLOCK", 1 << 12)
    monkeypatch.setattr(arrow, "_SCAN", 1 << 10)
    data = _random_run(np.random.default_rng(3), 3000)
    path = tmp_path / "big.trec"
    path.write_bytes(data)
    assert len(data) >= 2 * arrow.READ_BLOCK
    assert _both("run", path, monkeypatch)[0] != "error"
    assert mapped_calls[0]
    middle = data.index(b"\n", len(data) // 2) + 1
    path.write_bytes(data[:middle] + b"\t" + data[middle:])  # not plain: numpy reads it
    _both("run", path, monkeypatch)
