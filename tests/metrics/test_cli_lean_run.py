"""A big run is hashed on a thread beside its ordering (``data.CONCURRENT_ROWS``); the Run
built so must be the one built in sequence: same rows, order, hashes, lines and errors."""

from __future__ import annotations

import numpy as np
import pytest

from ragjudge.errors import InputError
from ragjudge.metrics import data
from ragjudge.metrics.data import Run


def _fields(run: Run) -> tuple:
    return tuple(None if a is None else (a.dtype.str, a.tobytes()) for a in (
        run.query_id_bytes, run.qidx, run.chunk_ids, run.scores, run.lines, run.pair_hashes,
        run.offsets))


def _both(monkeypatch, *args, **kwargs):
    out = []
    for rows in (0, 1 << 62):  # concurrent, then in sequence
        monkeypatch.setattr(data, "CONCURRENT_ROWS", rows)
        try:
            out.append(_fields(Run(*args, **kwargs)))
        except InputError as error:
            out.append(("error", str(error)))
    assert out[0] == out[1]
    return out[0]


def _random(rng, n_queries: int, grouped: bool, ties: bool):
    q, c, s = [], [], []
    for i in range(n_queries):
        k = int(rng.integers(1, 40))
        q += [f"q{i}"] * k
        c += [f"d{j}" for j in rng.permutation(60)[:k]]
        s += (rng.integers(0, 3, k) if ties else rng.random(k)).tolist()
    q, c, s = np.array(q), np.array(c), np.array(s, dtype=float)
    if not grouped:
        perm = rng.permutation(len(q))
        q, c, s = q[perm], c[perm], s[perm]
    return q, c, s


@pytest.mark.parametrize("grouped", [True, False])
@pytest.mark.parametrize("ties", [True, False])
def test_concurrent_and_sequential_runs_are_the_same(monkeypatch, grouped, ties):
    rng = np.random.default_rng(5)
    q, c, s = _random(rng, 50, grouped, ties)
    result = _both(monkeypatch, q, c, s, name="r", file="run.trec", from_file=True)
    assert result[0] != "error"
    _both(monkeypatch, q, c, s)  # no file: no lines
    lines = np.arange(10, 10 + len(q))
    _both(monkeypatch, q, c, s, file="run.trec", lines=lines)
    _both(monkeypatch, q, c, None, ordered=True)


def test_a_chunk_listed_twice_is_told_alike(monkeypatch):
    rng = np.random.default_rng(9)
    q, c, s = _random(rng, 20, True, True)
    q2, c2, s2 = np.append(q, q[3]), np.append(c, c[3]), np.append(s, 0.5)
    error = _both(monkeypatch, q2, c2, s2, file="run.trec", from_file=True)
    assert error[0] == "error" and "twice" in error[1] and "line" in error[1]
