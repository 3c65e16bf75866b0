"""The batched paths of settle give the per-pair paths' numbers, bit for bit.

``Family.bounds_many`` (every pair of runs at once: nDCG's Dinkelbach problems of all pairs and
both sides solved together, each query with only its candidate counts) against ``Family.bounds``
(one pair at a time); the judge_more read block by block against the whole queue at once; the
pool's distinct pairs by sorting against ``np.unique``. The brute-force checks of the bounds
themselves are in ``test_settle_bounds.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from ragjudge.metrics import Qrels, Run
from ragjudge.metrics import settle_family, settle_gain
from ragjudge.metrics.settle import Settlement, _judge_more, _judge_more_by_blocks, _threat
from ragjudge.metrics.settle_layout import _unique

MEASURES = ["P@5", "Success@3", "RR", "R@10", "AP", "AP@5", "nDCG@5", "nDCG@10", "nDCG_exp@5", "DCG@5"]


def pool(seed: int, top: int, n_queries: int = 60, n_runs: int = 5, judged_share: float = 0.6,
         depth: int = 15, docs: int = 30) -> tuple[dict[str, Run], Qrels]:
    """Runs over a small shared set of chunks (so they overlap much) and grades of part of it:
    queries with nothing judged, with everything judged, ties of rank between runs."""
    rng = np.random.default_rng(seed)
    runs = {}
    for r in range(n_runs):
        ranked = {}
        for q in range(n_queries):
            if rng.random() < 0.05:
                continue
            ranked[f"q{q}"] = [f"d{d}" for d in rng.permutation(docs)[:int(rng.integers(1, depth + 1))]]
        runs[f"r{r}"] = Run.from_ranked(ranked, name=f"r{r}")
    judged: dict[str, dict[str, int]] = {}
    p = [0.55, 0.25, 0.12, 0.08][:top + 1]
    for q in range(n_queries):
        share = 0.0 if q % 9 == 4 else 1.0 if q % 11 == 5 else judged_share
        chosen = rng.permutation(docs)[:int(docs * share)]
        judged[f"q{q}"] = {f"d{d}": int(rng.choice(top + 1, p=np.array(p) / sum(p))) for d in chosen}
    return runs, Qrels.from_dict(judged, top_grade=top)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("top", [1, 2, 3])
def test_bounds_of_every_pair_at_once_equal_those_pair_by_pair(seed, top):
    runs, qrels = pool(seed, top, judged_share=[0.3, 0.6, 0.9][seed % 3])
    s = Settlement(qrels, runs, 8, MEASURES, top_grade=top, samples=0, pairs="all")
    pairs = [(i, j) for i in range(len(runs)) for j in range(len(runs)) if i != j]
    for fam in s.families:
        many = fam.bounds_many(pairs)
        for (i, j), (low, high, exact) in zip(pairs, many):
            low_1, high_1, exact_1 = fam.bounds(i, j)
            assert np.array_equal(low, low_1) and np.array_equal(high, high_1), (fam.measure, i, j)
            assert exact == exact_1


def test_batches_and_chunks_of_any_size_give_the_same_bounds(monkeypatch):
    runs, qrels = pool(11, 3, n_queries=120, judged_share=0.4)
    s = Settlement(qrels, runs, 10, ["nDCG@10", "nDCG_exp@5"], top_grade=3, samples=0, pairs="all")
    pairs = [(i, j) for i in range(len(runs)) for j in range(i + 1, len(runs))]
    expected = [[fam.bounds(i, j) for i, j in pairs] for fam in s.families]
    for batch, group, chunk in ((1, 1, 1), (50, 7, 13), (10**6, 10**6, 10**6)):
        monkeypatch.setattr(settle_gain, "BATCH_ROWS", batch)
        monkeypatch.setattr(settle_gain, "GROUP_ROWS", group)
        monkeypatch.setattr(settle_gain, "CHUNK_ROWS", chunk)
        for fam, want in zip(s.families, expected):
            for (low, high, exact), (low_1, high_1, exact_1) in zip(fam.bounds_many(pairs), want):
                assert np.array_equal(low, low_1) and np.array_equal(high, high_1) and exact == exact_1


def test_settlement_reports_the_pair_by_pair_bounds():
    runs, qrels = pool(5, 3, judged_share=0.5)
    s = Settlement(qrels, runs, 8, MEASURES, top_grade=3, samples=0, pairs="all")
    n = s.layout.n_queries
    for (j, a, b), (diff, low, high, exact) in s._bounds().items():
        low_q, high_q, exact_q = s.families[j].bounds(s.index[a], s.index[b])
        assert (low, high) == (min(float(low_q.sum() / n), diff), max(float(high_q.sum() / n), diff))
        assert exact == exact_q


@pytest.mark.parametrize("seed", range(40))
def test_judge_more_block_by_block_is_the_whole_queue_at_once(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    delta = rng.normal(size=n) * (rng.random(n) < rng.random())  # many pairs that move nothing
    diff = float(rng.choice([-1.0, 0.0, 1.0])) * rng.random()
    low, high = diff - rng.random() * 3, diff + rng.random() * 3
    harm = rng.random(n) * (rng.random(n) < 0.9)
    keep = 1.0 - harm
    swing, lift, _, need = _threat(delta, diff, low, high)
    scale = float(rng.random() * 2)
    need = max(need, 1e-9) * float(rng.choice([0.01, 0.5, 1.0, 10.0]))
    want = _judge_more(swing * scale, lift, harm, keep, need)

    def moves(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        s, li, _, _ = _threat(delta[lo:hi], diff, low, high)
        return s * scale, li

    for block in (1, 3, 17, 64, 10**6):
        assert _judge_more_by_blocks(moves, n, harm, keep, need, block) == want


@pytest.mark.parametrize("seed", range(5))
def test_distinct_by_sorting_is_numpys_unique(seed):
    rng = np.random.default_rng(seed)
    ids = np.array([f"q{i}".encode() for i in rng.integers(0, 50, int(rng.integers(0, 400)))], dtype="S6")
    assert np.array_equal(_unique(ids), np.unique(ids))
    numbers = rng.integers(0, 20, 100)
    assert np.array_equal(_unique(numbers), np.unique(numbers))


@pytest.mark.parametrize("seed", range(6))
def test_running_sums_a_column_at_a_time_are_numpys(seed):
    # floats: the same sequential sums as np.cumsum, bit for bit (not merely close); booleans as
    # int64 or int16 counts; the running minimum as np.minimum.accumulate; rows wider than
    # RUNNING_COLUMNS go to numpy itself
    rng = np.random.default_rng(seed)
    for width in (0, 1, 7, settle_family.RUNNING_COLUMNS + 5):
        x = rng.normal(size=(int(rng.integers(1, 50)), width)) * 10.0 ** rng.integers(-3, 4, size=width)
        assert np.array_equal(settle_family.accumulate(x), np.cumsum(x, axis=-1))
        assert np.array_equal(settle_family.accumulate(x, op=np.minimum), np.minimum.accumulate(x, axis=-1))
        flags = rng.random((3, len(x), width)) < 0.4
        assert np.array_equal(settle_family.accumulate(flags), np.cumsum(flags, axis=-1))
        got = settle_family.accumulate(flags, np.int16)
        assert got.dtype == np.int16 and np.array_equal(got, np.cumsum(flags, axis=-1, dtype=np.int16))
        out = np.zeros((len(x), width + 1))
        settle_family.accumulate(x, out=out[:, 1:])
        assert np.array_equal(out[:, 1:], np.cumsum(x, axis=-1)) and not out[:, 0].any()


@pytest.mark.parametrize("seed", range(4))
def test_open_pair_counts_per_query_are_the_generic_sums(seed):
    # Layout.open_sums on booleans (counts in 32 bits) against the same values as integers
    runs, qrels = pool(seed, 2, judged_share=0.5)
    layout = Settlement(qrels, runs, 8, ["P@5"], top_grade=2, samples=0).layout
    flags = np.random.default_rng(seed).random((5, layout.n_vars)) < 0.3
    counts = layout.open_sums(flags)
    assert counts.dtype == np.int64
    assert np.array_equal(counts, layout.open_sums(flags.astype(np.int64)))
    # by hand: query q's open pairs are offsets[q]..offsets[q + 1]
    q = int(np.argmax(layout.n_open))
    assert counts[2, q] == flags[2, layout.offsets[q]:layout.offsets[q + 1]].sum()


def test_runs_read_on_two_threads_give_what_one_thread_gives(monkeypatch):
    from ragjudge.metrics import settle

    runs, qrels = pool(7, 3, judged_share=0.5)
    got = {}
    for threads in (1, 2):
        monkeypatch.setattr(settle, "THREADS", threads)
        s = Settlement(qrels, runs, 8, MEASURES, top_grade=3, samples=20, pairs="all")
        got[threads] = (s.comparisons(), [[p.cur for p in fam.profiles] for fam in s.families],
                        s.model.probs, s.weights().weights)
    (one, cur_1, probs_1, w_1), (two, cur_2, probs_2, w_2) = got[1], got[2]
    assert one == two
    assert all(np.array_equal(x, y) for a, b in zip(cur_1, cur_2) for x, y in zip(a, b))
    assert np.array_equal(probs_1, probs_2) and np.array_equal(w_1, w_2)
