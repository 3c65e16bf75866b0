"""Ids of different byte widths on the two sides still match (qrels with short ids against a
run with long ones, and the reverse)."""

from __future__ import annotations

import numpy as np

from ragjudge.metrics import Qrels, Run, evaluate
from ragjudge.metrics import _keys


def test_pair_index_finds_ids_stored_wider_or_narrower():
    stored = _keys.as_ids(["a", "b-with-a-much-longer-id"])  # stored 24 bytes wide
    index = _keys.PairIndex(np.array([0, 0]), stored)
    probe = _keys.as_ids(["a"])  # probed 8 bytes wide
    assert index.get(np.array([0]), probe).tolist() == [0]
    narrow = _keys.PairIndex(np.array([0]), _keys.as_ids(["a"]))
    wide_probe = _keys.as_ids(["a", "a-but-longer-than-eight"])
    assert narrow.get(np.array([0, 0]), wide_probe).tolist() == [0, -1]


def test_short_qrels_ids_against_long_run_ids():
    qrels = Qrels.from_dict({"q1": {"c1": 1, "c2": 0}})
    run = Run.from_ranked({"q1": ["c1", "a-chunk-id-much-longer-than-eight-bytes", "c2"]})
    assert evaluate(qrels, run, ["P@1", "Judged@3"]).aggregate() == {"P@1": 1.0, "Judged@3": 2 / 3}
    long_qrels = Qrels.from_dict({"q1": {"c1": 1, "a-chunk-id-much-longer-than-eight-bytes": 1}})
    short_run = Run.from_ranked({"q1": ["x", "c1"]})
    assert evaluate(long_qrels, short_run, ["P@2"]).aggregate() == {"P@2": 0.5}
