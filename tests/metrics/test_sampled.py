"""Estimators from sampled pools: hand-worked examples, NIST's scripts' printed values, the
sampler and the prels reader.

The fixtures (``sampled_fixtures/``, see its README) hold small pools and the numbers NIST's
``sample_eval.pl`` (xinfAP, infNDCG, iP) and ``statAP_MQ_eval_v3.pl`` (statAP, its variance)
printed for them; the scripts themselves are not in the repository.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from ragjudge.errors import InputError, UsageError
from ragjudge.metrics import Qrels, Run, evaluate
from ragjudge.metrics.prels import read_prels
from ragjudge.metrics.sampled import PoolSample, draw_sample

FIXTURES = Path(__file__).parent / "sampled_fixtures"
SAMPLE_EVAL = {"infAP": "xinfAP", "infNDCG": "infNDCG", "iP10": "infP@10", "iP50": "infP@50",
               "iP1000": "infP@1000"}


def _sample_eval_output(path: Path) -> dict[str, dict[str, float]]:
    """{query: {sample_eval measure: value}} from ``sample_eval.pl -q`` output."""
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] != "all" and parts[0] in SAMPLE_EVAL:
            out.setdefault(parts[1], {})[parts[0]] = float(parts[2])
    return out


def _statap_output(path: Path) -> dict[str, dict[str, float]]:
    """{query: {"statAP": ..., "varAP": ...}} from ``statAP_MQ_eval_v3.pl -q`` output."""
    out: dict[str, dict[str, float]] = {}
    topic = None
    for line in path.read_text().splitlines():
        if m := re.search(r"topic=(\d+)", line):
            topic = m.group(1)
        if (m := re.search(r"\bAP=(\S+)", line)) and topic:
            out.setdefault(topic, {})["statAP"] = math.nan if m.group(1).startswith("NA") \
                else float(m.group(1))
        if (m := re.search(r"varAP=(\S+)", line)) and topic:
            out[topic]["varAP"] = float(m.group(1)) if m.group(1) else math.nan
    return out


def _evaluate_prels(prels: str, form: str, run: str, measures: list[str]) -> dict:
    qrels, sample = read_prels(FIXTURES / prels, form)  # type: ignore[arg-type]
    return evaluate(qrels, Run.from_trec(FIXTURES / run), measures, queries="run",
                    extras={"sample": sample}).per_query()


# -- hand-worked ---------------------------------------------------------------------------------


def test_infap_hand_example():
    # ranks: a rel, x unpooled, c pooled-unsampled, b non-relevant, d rel; R = 2.
    # rank 1: 1. rank 5 (j = 4): r = 1 relevant, n = 1 non-relevant, u = 1 unsampled above:
    # 1/5 + (4/5) (3/4) (1 + eps)/(2 + 2 eps) = 0.2 + 0.3 = 0.5.  infAP = (1 + 0.5) / 2 = 0.75
    qrels = Qrels.from_dict({"1": {"a": 1, "b": 0, "c": -1, "d": 1}})
    run = Run.from_ranked({"1": ["a", "x", "c", "b", "d"]})
    result = evaluate(qrels, run, ["infAP", "AP"]).per_query()["1"]
    assert result["infAP"] == pytest.approx(0.75, abs=1e-12)
    assert result["AP"] == pytest.approx((1 + 2 / 5) / 2)


def test_xinfap_infndcg_infp_hand_example():
    # Stratum 1: a(2) b(0) c(1) d(0), all sampled; stratum 2: e(1) f(0) sampled, g h not.
    # R^ = 2*4/4 + 1*4/2 = 4. Run a e x b g c:
    #   a rank 1: prec 1;  e rank 2: (1 + 1*(1+1e-5)/(1+3e-5)) / 2 = 0.99999
    #   c rank 6: (1 + 2*(1+1e-5)/(2+3e-5) + 2*(1+1e-5)/(1+3e-5)) / 6 = 0.66666
    #   xinfAP = (2/4)(1 + 0.66666)/2 + (2/4)(0.99999/1) = 0.91666
    # infNDCG: stratum 1 ranked a b c (3 of 3 sampled): 2/log2(2) + 1/log2(7) = 2.35621;
    #   stratum 2 ranked e g (1 of 2 sampled): 2 * 1/log2(3) = 1.26186; DCG^ = 3.61807.
    #   grade counts: g2 = 1, g1 = 1 + 1*4/2 = 3; IDCG = 2 + 1/log2 3 + 1/log2 4 + 1/log2 5
    #   = 3.56161; infNDCG = 1.01585 (an estimate, which may exceed 1).
    # infP@10: the run ranks 6 chunks; sum_s D_s (Q_s + 1e-5)/(M_s + 3e-5) = 3*2/3 + 2*1/1 = 4,
    #   over 10 = 0.4.
    # infNDCG@1 reads rank 1 (a, grade 2: DCG^ = 2) and cuts the ideal ranking at rank 1; as
    #   sample_eval.pl does at its 1,000 ranks, the next grade (1) still adds its first chunk:
    #   IDCG^ = 2 + 1/log2 3, infNDCG@1 = 2 / 2.63093 = 0.76019
    got = _evaluate_prels("hand.strata", "strata", "hand_strata.run",
                          ["xinfAP", "infNDCG", "infP@10", "infP@50", "infNDCG@1"])["1"]
    assert got["infNDCG@1"] == pytest.approx(2 / (2 + 1 / math.log2(3)), abs=1e-12)
    assert got["xinfAP"] == pytest.approx(0.91666, abs=1e-5)
    assert got["infNDCG"] == pytest.approx(3.61807 / 3.56161, abs=1e-5)
    assert got["infP@10"] == pytest.approx(0.4, abs=1e-5)
    assert got["infP@50"] == pytest.approx(0.08, abs=1e-5)


def test_statap_and_variance_hand_example():
    # Sampled: a(rel, p=1), b(0, 1), c(rel, .5), e(rel, .25), f(0, .5). R^ = 1 + 4 + 2 = 7.
    # Run a x e b g c: a rank 1 prec 1; e rank 3 prec (1 + 1)/3; c rank 6 prec (1 + 1 + 4)/6 = 1.
    # statAP = (1/1 + (2/3)/0.25 + 1/0.5) / 7 = 17/21.
    # y = (prec - 17/21)/p: a 4/21, e -12/21, c 8/21 (sum 0); sum1 = (0.75*144 + 0.5*64)/441;
    # sum2 = 0 - (16+144+64)/441; sum3 = 0/1 + 12/9 + 14/36; n = 5 sampled:
    # var = (140/441 + 224/441/4 + 31/18) / 49 = 39/882.
    got = _evaluate_prels("hand.prels", "probability", "hand_prels.run",
                          ["statAP", "statAP_var"])["1"]
    assert got["statAP"] == pytest.approx(17 / 21, abs=1e-12)
    assert got["statAP_var"] == pytest.approx(39 / 882, abs=1e-12)


# -- NIST's scripts ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["hand", "random1", "random2", "random3", "large"])
def test_matches_sample_eval(name):
    # "large": 1,520 pooled chunks, 50 sampled, R^ = 1165 > 1000 ranks: the ideal DCG's cap
    run = "hand_strata.run" if name == "hand" else f"{name}.run"
    expected = _sample_eval_output(FIXTURES / f"{name}.strata.sample_eval")
    got = _evaluate_prels(f"{name}.strata", "strata", run, list(SAMPLE_EVAL.values()))
    assert sorted(got) == sorted(expected)
    for query, row in expected.items():
        for theirs, ours in SAMPLE_EVAL.items():
            # sample_eval prints 4 decimals
            assert abs(got[query][ours] - row[theirs]) <= 0.5e-4 + 1e-12, (query, ours)


@pytest.mark.parametrize("name", ["hand", "random1", "random2", "random3"])
def test_matches_statap_mq_eval(name):
    run = "hand_prels.run" if name == "hand" else f"{name}.run"
    expected = _statap_output(FIXTURES / f"{name}.prels.statAP")
    got = _evaluate_prels(f"{name}.prels", "probability", run, ["statAP", "statAP_var"])
    assert expected
    for query, row in expected.items():
        if math.isnan(row["statAP"]):  # no sampled relevant chunk: left out of statMAP
            assert math.isnan(got[query]["statAP"]) and math.isnan(got[query]["statAP_var"])
            continue
        assert abs(got[query]["statAP"] - row["statAP"]) <= 0.5e-6 + 1e-12, query  # "%f"
        assert got[query]["statAP_var"] == pytest.approx(row["varAP"], rel=1e-9, abs=1e-15)


# -- properties ----------------------------------------------------------------------------------


def _random_collection(seed: int, queries: int = 8) -> tuple[Qrels, Run]:
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(queries):
        docs = [f"d{i}" for i in range(int(rng.integers(5, 60)))]
        qrels[f"q{q}"] = {d: int(rng.choice([0, 0, 0, 1, 2, 3])) for d in docs}
        ranked = rng.permutation(docs + [f"u{i}" for i in range(10)])[: int(rng.integers(1, 70))]
        run[f"q{q}"] = list(ranked)
    qrels["q0"]["d0"] = 2  # at least one relevant chunk
    return Qrels.from_dict(qrels), Run.from_ranked(run)


@pytest.mark.parametrize("seed", range(5))
def test_complete_judgments_give_the_full_measures(seed):
    # every pooled pair judged (sample = the qrels, all drawn with probability 1):
    # statAP is AP; infNDCG is nDCG; xinfAP and infP differ from AP and P@k only by the epsilons
    qrels, run = _random_collection(seed)
    sample = PoolSample.from_qrels(qrels)
    assert np.all(sample.inclusion == 1.0)
    result = evaluate(qrels, run, ["statAP", "AP", "infNDCG", "nDCG", "xinfAP", "infAP",
                                   "infP@10", "P@10"], extras={"sample": sample})
    values = result.per_query()
    for q, row in values.items():
        if result.column("AP")[result.query_ids.index(q)] == 0 and math.isnan(row["statAP"]):
            continue  # no relevant chunk: statAP undefined
        assert row["statAP"] == pytest.approx(row["AP"], abs=1e-12)
        assert row["infNDCG"] == pytest.approx(row["nDCG"], abs=1e-12)
        assert row["xinfAP"] == pytest.approx(row["AP"], abs=1e-3)
        assert row["infAP"] == pytest.approx(row["AP"], abs=1e-3)
        assert row["infP@10"] == pytest.approx(row["P@10"], abs=1e-3)


@pytest.mark.slow
def test_statap_estimates_ap_from_uniform_samples():
    # Horvitz-Thompson: the mean of statAP over many samples is close to the true AP
    qrels, run = _random_collection(11, queries=1)
    pairs = [(c, g) for c, g in qrels.for_query("q0").items()]
    truth = evaluate(qrels, run, ["AP"])["AP"]
    estimates = []
    for seed in range(400):
        sample = draw_sample(["q0"] * len(pairs), [c for c, _ in pairs], size=len(pairs) // 2,
                             seed=seed)
        value = evaluate(qrels, run, ["statAP"], extras={"sample": sample}).column("statAP")[0]
        if not math.isnan(value):
            estimates.append(value)
    mean = float(np.mean(estimates))
    error = float(np.std(estimates)) / math.sqrt(len(estimates))
    assert abs(mean - truth) < 4 * error + 0.02, (mean, truth, error)


def test_a_query_without_a_sample_is_undefined():
    qrels = Qrels.from_dict({"1": {"a": 1}, "2": {"b": 1}})
    run = Run.from_ranked({"1": ["a"], "2": ["b"]})
    sample = PoolSample(["1"], ["a"], [1.0])
    result = evaluate(qrels, run, ["statAP", "xinfAP", "infNDCG", "infP@5"],
                      extras={"sample": sample})
    assert result.per_query()["1"] == {"statAP": 1.0, "xinfAP": pytest.approx(1.0),
                                       "infNDCG": 1.0, "infP@5": pytest.approx(0.2, abs=1e-4)}
    assert all(math.isnan(v) for v in result.per_query()["2"].values())
    assert result.undefined() == {"statAP": 1, "xinfAP": 1, "infNDCG": 1, "infP@5": 1}


def test_missing_sample_is_a_usage_error():
    qrels = Qrels.from_dict({"1": {"a": 1}})
    with pytest.raises(UsageError, match="needs sample"):
        evaluate(qrels, Run.from_ranked({"1": ["a"]}), ["statAP"])
    with pytest.raises(UsageError, match="PoolSample"):
        evaluate(qrels, Run.from_ranked({"1": ["a"]}), ["xinfAP"], extras={"sample": {"1": "a"}})


def test_pool_sample_refuses_bad_input():
    with pytest.raises(InputError, match="twice"):
        PoolSample(["1", "1"], ["a", "a"], [0.5, 0.5])
    with pytest.raises(InputError, match=r"not in \(0, 1\]"):
        PoolSample(["1"], ["a"], [0.0])
    PoolSample(["1"], ["a"], [0.0], drawn=[False])  # an undrawn pair may have probability 0
    with pytest.raises(InputError, match="differ in length"):
        PoolSample(["1"], ["a", "b"], [1.0, 1.0])


# -- the sampler ---------------------------------------------------------------------------------


def _pool(queries: int = 4, size: int = 150) -> tuple[list[str], list[str], list[int]]:
    q, c, r = [], [], []
    for i in range(queries):
        n = size - 20 * i
        q += [f"q{i}"] * n
        c += [f"d{j}" for j in range(n)]
        r += list(range(1, n + 1))
    return q, c, r


def test_uniform_sample():
    q, c, _ = _pool()
    sample = draw_sample(q, c, size=30, seed=3)
    for i, n in enumerate([150, 130, 110, 90]):
        mine = sample.query_ids == f"q{i}".encode()
        assert np.count_nonzero(sample.drawn & mine) == 30
        assert np.allclose(sample.inclusion[mine], 30 / n)
    again = draw_sample(q, c, size=30, seed=3)
    assert np.array_equal(again.drawn, sample.drawn)
    assert not np.array_equal(draw_sample(q, c, size=30, seed=4).drawn, sample.drawn)
    small = draw_sample(["x", "x"], ["a", "b"], size=5)
    assert small.drawn.all() and np.all(small.inclusion == 1.0)


def test_stratified_sample():
    # bands 1-10, 11-30, 31-100, 101-150 with N = 10, 20, 70, 50 and budget 40: rates
    # min(1, c 2^-s) with 10 c + 20 c/2 + 70 c/4 + 50 c/8 = 40, c = 40 / 43.75 = 0.914 (no band
    # saturates); expected sizes 9.14, 9.14, 16.0, 5.71 -> floors 9, 9, 16, 5 and the one left
    # goes to the largest remainder (5.71) -> 9, 9, 16, 6
    q, c, r = _pool(queries=1)
    sample = draw_sample(q, c, r, size=40, strategy="stratified", seed=1)
    assert np.count_nonzero(sample.drawn) == 40
    taken = [np.count_nonzero(sample.drawn & (sample.stratum == s)) for s in range(4)]
    assert taken == [9, 9, 16, 6]
    sizes = np.array([10, 20, 70, 50])
    assert np.allclose(sample.inclusion, (np.array(taken) / sizes)[sample.stratum])
    rates = np.array(taken) / sizes
    assert np.all(np.diff(rates) <= 0)  # higher rates at the top
    # a larger budget saturates the top band: N = 10, 20, 70 and 60 to draw: 10 c + 10 c +
    # 17.5 c = 60 gives c = 1.6 > 1, so band 1 is judged whole (10); then 10 c + 17.5 c = 50
    # gives c = 1.818: rates 0.909 and 0.455, sizes 18.2 and 31.8 -> 18 and 32
    q, c, r = q[:100], c[:100], r[:100]
    sample = draw_sample(q, c, r, size=60, strategy="stratified", seed=1)
    assert [np.count_nonzero(sample.drawn & (sample.stratum == s)) for s in range(3)] == [10, 18, 32]


def test_stratified_sample_estimates_with_xinfap():
    qrels, run = _random_collection(5)
    ranks = {}
    for q in qrels.query_ids:
        for rank, chunk in enumerate(run.to_ranked().get(q, []), 1):
            ranks[(q, chunk)] = rank
    pairs = [(q, ch) for q in qrels.query_ids for ch in qrels.for_query(q)]
    sample = draw_sample([p[0] for p in pairs], [p[1] for p in pairs],
                         [ranks.get(p, 200) for p in pairs], size=20, strategy="stratified", seed=2)
    result = evaluate(qrels, run, ["xinfAP", "AP", "statAP", "infNDCG", "nDCG"],
                      extras={"sample": sample})
    means = result.aggregate()
    assert abs(means["xinfAP"] - means["AP"]) < 0.15
    assert abs(means["infNDCG"] - means["nDCG"]) < 0.15


def test_sampler_refuses_bad_options():
    with pytest.raises(UsageError, match="whole number"):
        draw_sample(["q"], ["a"], size=0)
    with pytest.raises(UsageError, match="rank"):
        draw_sample(["q"], ["a"], size=1, strategy="stratified")
    with pytest.raises(UsageError, match="strategy"):
        draw_sample(["q"], ["a"], size=1, strategy="systematic")  # type: ignore[arg-type]


# -- the reader ----------------------------------------------------------------------------------


def test_reader_reads_both_forms():
    qrels, sample = read_prels("7 0 a 1 2\n7 0 b 1 -1\n7 0 c 2 0\n", "strata")
    assert qrels.to_dict() == {"7": {"a": 2, "b": -1, "c": 0}}
    assert sample.drawn.tolist() == [True, False, True]
    assert sample.inclusion.tolist() == [0.5, 0.5, 1.0]
    qrels, sample = read_prels("7 a 1 1 0.25\n7 b 0 0 0.5\n7 c 1 1 NA\n7 d -999 1 0.3\n",
                               "probability")
    assert qrels.to_dict() == {"7": {"a": 1, "b": 0}}
    assert sample.inclusion.tolist() == [0.25, 1.0]  # method 0: judged for certain


@pytest.mark.parametrize(("text", "form", "where"), [
    ("7 0 a 1\n", "strata", "line 1: has 4 fields"),
    ("7 0 a 1 2\n7 0 b x 2\n", "strata", "line 2, field 'stratum'"),
    ("7 a 1 1 1.5\n", "probability", "line 1, field 'probability'"),
    ("7 a one 1 0.5\n", "probability", "line 1, field 'grade'"),
])
def test_reader_names_line_and_field(tmp_path, text, form, where):
    path = tmp_path / "bad.prels"
    path.write_text(text)
    with pytest.raises(InputError) as error:
        read_prels(path, form)
    assert str(error.value).startswith(f"{path}, {where}")
    with pytest.raises(UsageError, match="unknown prels form"):
        read_prels(path, "trec")  # type: ignore[arg-type]
