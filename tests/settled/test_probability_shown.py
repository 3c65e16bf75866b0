"""A probability is never printed as a certainty it is not: a probable comparison whose p_order
is 0.9996 reads ">0.999" in ``settled``'s table (not "1.000", beside "probable", which reads as
a contradiction), and "(p >0.99)" on the evaluation screen's settled column."""

from __future__ import annotations

import json
import math
import re

import pytest
from settledkit import cli

from ragjudge.numeric import probability_text


@pytest.mark.parametrize(("p", "digits", "shown"), [
    (0.95, 3, "0.950"), (0.9994, 3, "0.999"), (0.9995, 3, ">0.999"), (0.99999, 2, ">0.99"),
    (1.0, 3, ">0.999"), (0.0, 3, "0.000"), (0.0004, 3, "<0.001"), (0.004, 2, "<0.01"),
    (0.5, 2, "0.50"), (float("nan"), 3, "-"),
])
def test_a_probability_rounds_to_0_or_1_only_when_it_is(p, digits, shown):
    assert probability_text(p, digits) == shown


def test_only_a_proved_probability_prints_as_1():
    assert probability_text(1.0, sure=True) == "1.000"
    assert probability_text(0.9996, sure=True) == ">0.999"  # sure of 1 only when it is 1
    assert probability_text(1.0) == ">0.999"  # every draw agreeing is still an estimate


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> str:
    from ragjudge.services.transfer.demo import build_demo

    path = tmp_path_factory.mktemp("p-demo") / "demo.db"
    build_demo(str(path))
    return str(path)


def test_settled_table_never_prints_a_probable_claim_as_1(demo):
    code, out, _ = cli("--db", demo, "settled", "--format", "json")
    assert code == 1  # the demo leaves one comparison open
    data = json.loads(out)
    near_one = [c for c in data["comparisons"]
                if c["status"] == "probable" and c["p_order"] is not None
                and round(c["p_order"], 3) == 1.0 and c["p_order"] < 1.0]
    assert near_one, "the demo has a probable comparison with p_order rounding to 1.000"
    table = cli("--db", demo, "settled")[1]
    rows = [" ".join(line.split()) for line in table.splitlines() if line.startswith("│")]
    for c in near_one:
        row = next(r for r in rows if re.match(
            rf"│ {re.escape(c['measure'])} │ {re.escape(c['a'])} │ {re.escape(c['b'])} │", r))
        assert "│ >0.999 │ probable │" in row, row
    # every p shown is the JSON's, to three decimals, where it does not round to 0 or 1
    for c in data["comparisons"]:
        if c["p_order"] is not None and not math.isnan(c["p_order"]) and 0.0005 <= c["p_order"] < 0.9995:
            assert any(f"│ {c['p_order']:.3f} │" in r for r in rows), c


def test_the_screen_s_settled_column_says_more_than_0_99_not_1():
    from types import SimpleNamespace

    from ragjudge.metrics.settle import Comparison
    from ragjudge.tui.widgets.evalpane import settled_cell

    def probable(p: float) -> SimpleNamespace:
        c = Comparison("AP", "bm25", "dense", 0.01, -0.02, 0.04, p, "probable", 12, True, 30, 2000)
        return SimpleNamespace(measures=["AP"], comparisons=[c])

    assert "probable (p >0.99)" in settled_cell(probable(0.9996), "AP", "bm25").plain
    assert "probable (p 0.97)" in settled_cell(probable(0.97), "AP", "bm25").plain
