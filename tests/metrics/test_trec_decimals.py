"""The TREC reader's plain decimals (``tokens.plain_decimals``): a score or grade written as an
optional sign and at most 15 digits with at most one point is read column by column as
N / 10**k, which must be the float64 Python's ``float()`` gives it, bit for bit; every other
token is left to numpy and the line path, so the reader's arrays and refusals stay those of
the line path."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragjudge.errors import InputError
from ragjudge.metrics.trec import read_qrels_arrays, read_run_arrays, reader
from ragjudge.metrics.trec.tokens import PLAIN_DIGITS, numbers, plain_decimals

#: what a plain decimal is, written the other way: a regular expression and a digit count
PLAIN = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")


def _tokens(texts: list[str]) -> np.ndarray:
    return np.array([t.encode() for t in texts], dtype=f"S{8 * (max(map(len, texts)) // 8 + 1)}")


def _is_plain(text: str, points: bool = True) -> bool:
    return (PLAIN.fullmatch(text) is not None and sum(c.isdigit() for c in text) <= PLAIN_DIGITS
            and (points or "." not in text))


def _same_float(a: float, b: float) -> bool:
    """Equal, with the same sign for zeros (``-0`` reads as -0.0)."""
    return a == b and math.copysign(1, a) == math.copysign(1, b)


# hand-worked: each token's digits N, its digits after the point k, and N / 10**k
WORKED = [
    ("29.971602", True, 29971602 / 10**6),   # N = 29971602, k = 6
    ("0.3", True, 0.3),                      # 3 / 10 is 0.3's float, where 3 * 0.1 is 0.30000000000000004
    ("-.5", True, -0.5),                     # N = 5, k = 1, negative
    ("+7.", True, 7.0),                      # N = 7, k = 0 (a point and no digit after it)
    ("-0", True, -0.0),                      # N = 0, negative: float("-0") is -0.0
    ("007.50", True, 7.5),                   # N = 750, k = 2
    ("999999999999999", True, 999999999999999.0),  # 15 digits: N < 2**53, exact
    ("9007199254740993", False, None),       # 16 digits (2**53 + 1): numpy reads it
    ("1e3", False, None), (".", False, None), ("-", False, None), ("1.2.3", False, None),
    ("1-2", False, None), ("1_0", False, None), ("nan", False, None),
]


@pytest.mark.parametrize(("text", "plain", "value"), WORKED)
def test_worked_tokens(text, plain, value):
    values, is_plain = plain_decimals(_tokens([text, "1"]))
    assert is_plain.tolist() == [plain, True]
    if plain:
        assert _same_float(float(values[0]), value)
        assert _same_float(value, float(text))
    assert values[1] == 1.0


def test_integers_have_no_point():
    values, plain = plain_decimals(_tokens(["3", "-2", "+0", "007", "1.", "1.0", "x"]), points=False)
    assert plain.tolist() == [True, True, True, True, False, False, False]
    assert values.dtype == np.int64
    assert values[:4].tolist() == [3, -2, 0, 7]


def test_numbers_mixes_plain_tokens_and_numpys():
    texts = ["2.5", "1e3", "-12345678901234567.25", "0.1", "1E-5"]
    assert numbers(_tokens(texts), np.float64).tolist() == [float(t) for t in texts]
    assert numbers(_tokens(["1", "2.5"]), np.int64) is None  # not a grade: the line path says why
    assert numbers(_tokens(["2.5", "1_0"]), np.float64) is None
    assert numbers(_tokens(["2.5", "inf"]), np.float64) is None
    assert numbers(_tokens(["1", "-1"]), np.int64).tolist() == [1, -1]
    assert numbers(np.zeros(0, dtype="S8"), np.float64).tolist() == []


_BYTE = st.sampled_from(list("0123456789") * 4 + list(".+-eE_x "))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(_BYTE, min_size=1, max_size=24).map(str.strip).filter(bool),
                min_size=1, max_size=30),
       st.booleans())
def test_random_tokens_read_as_python_reads_them(texts, points):
    values, plain = plain_decimals(_tokens(texts), points=points)
    for text, value, is_plain in zip(texts, values.tolist(), plain.tolist()):
        assert is_plain == _is_plain(text, points), text
        if is_plain:
            expected = float(text) if points else int(text)
            assert _same_float(value, expected) and type(value) is type(expected), text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-1e300, 1e300), min_size=1, max_size=40),  # rounded, still finite
       st.sampled_from(["{:.6f}", "{:.3f}", "{!r}", "{:.15g}", "{:.17g}", "{:g}", "{:.0f}"]))
def test_formatted_scores_are_the_floats_they_print(scores, form):
    texts = [form.format(s) for s in scores]
    values = numbers(_tokens(texts), np.float64)
    assert values is not None
    assert all(_same_float(v, float(t)) for v, t in zip(values.tolist(), texts))


def _random_run(rng: np.random.Generator, n: int) -> str:
    forms = ["{:.6f}", "{:.4f}", "{!r}", "{:.2e}", "-{:.3f}", "{:.0f}", "{:.17g}"]
    lines = []
    for i in range(n):
        score = rng.uniform(0, 10 ** rng.integers(0, 12))
        lines.append(f"q{i % 17} Q0 d{rng.integers(0, 500)} {i + 1} "
                     f"{forms[rng.integers(len(forms))].format(score)} t")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("seed", range(4))
def test_runs_and_qrels_read_as_the_line_path_reads_them(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    run_text = _random_run(rng, 3000)
    qrels_text = "".join(f"q{i % 23} 0 d{i} {rng.integers(-1, 4):+d}\n" if i % 3 == 0 else
                         f"q{i % 23} 0 d{i} {rng.integers(-1, 4)}\n" for i in range(2000))
    read = {}
    for paths in (("numpy",), ()):
        monkeypatch.setattr(reader, "FAST_PATHS", paths)
        run, qrels = read_run_arrays(run_text), read_qrels_arrays(qrels_text)
        read[paths] = (run.scores.tobytes(), run.query_ids.tobytes(), qrels.grades.tobytes())
    assert read[("numpy",)] == read[()]


@pytest.mark.parametrize("score", ["1_0.5", "0x1p3", "1e400", "-nan"])
def test_a_score_numpy_would_misread_is_still_refused_on_its_line(score, monkeypatch):
    monkeypatch.setattr(reader, "FAST_PATHS", ("numpy",))
    with pytest.raises(InputError) as info:
        read_run_arrays(f"q1 Q0 a 1 2.5 t\nq1 Q0 b 2 0.25 t\nq1 Q0 c 3 {score} t\n")
    assert info.value.line == 3 and info.value.field == "score"


def test_lines_whose_fields_add_up_are_still_read_line_by_line(monkeypatch):
    # 2 + 4 + 6 fields: 12 separators, the 6th and the 12th newlines, as two run lines of 6
    # fields would have them, and the first 6 tokens would make a good run line; the newline
    # after line 1 is one too many, so the numpy path hands the input to the line path, which
    # refuses line 1
    text = "q1 Q0\na 1 0.5 t\nq1 Q0 b 2 0.25 t\n"
    errors = []
    for paths in (("numpy",), ()):
        monkeypatch.setattr(reader, "FAST_PATHS", paths)
        with pytest.raises(InputError) as info:
            read_run_arrays(text)
        errors.append(str(info.value))
        assert info.value.line == 1
    assert errors[0] == errors[1]
