"""The README's worked example of ``settled`` and ``queue`` on the demo is what the commands
print: the table, the JSON's numbers and the settle order's next pairs (a change of the order or
of the numbers that leaves the README behind fails here)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from settledkit import cli, must

README = Path(__file__).resolve().parents[2] / "README.md"


def section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("### `settled` and `queue`")
    return text[start:text.index("\n### ", start + 1)]


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", section(), flags=re.S)


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> str:
    from ragjudge.services.transfer.demo import build_demo

    path = tmp_path_factory.mktemp("readme-demo") / "demo.db"
    build_demo(str(path))
    return str(path)


def table_rows(text: str) -> list[str]:
    """The rows of a drawn table (lines between the box's vertical bars), spaces collapsed."""
    return [" ".join(line.split()) for line in text.splitlines() if line.startswith("│")]


def test_the_settled_table_is_the_commands(demo, monkeypatch):
    monkeypatch.setenv("RAGJUDGE_USER", "ana")
    shown = next(b for b in blocks("text") if "settled --runs bm25,hybrid -m R@5 -m nDCG@10" in b)
    code, got, _ = cli("--db", demo, "settled", "--runs", "bm25,hybrid", "-m", "R@5", "-m", "nDCG@10")
    assert code == 1  # R@5 is open, as the README says
    assert table_rows(got) == table_rows(shown)
    assert shown.strip().splitlines()[-1].strip() in got  # the pool and gold line


def test_the_json_numbers_are_the_commands(demo, monkeypatch):
    monkeypatch.setenv("RAGJUDGE_USER", "ana")
    shown = json.loads(next(b for b in blocks("json") if '"comparisons"' in b))
    code, out, _ = cli("--db", demo, "settled", "--runs", "bm25,hybrid", "-m", "R@5", "-m", "nDCG@10",
                       "--format", "json")
    assert code == 1
    got = json.loads(out)
    keys = ("measure", "a", "b", "difference", "low", "high", "p_order", "status", "judge_more")
    assert [{k: c[k] for k in keys} for c in got["comparisons"]] == shown["comparisons"]
    assert (got["pool_pairs"], got["judged_pairs"]) == (shown["pool_pairs"], shown["judged_pairs"])


def test_the_next_pairs_are_the_settle_orders(demo, monkeypatch):
    monkeypatch.setenv("RAGJUDGE_USER", "ana")
    shown = next(b for b in blocks("text") if "next 3 pairs (settle order)" in b)
    got = must("--db", demo, "queue", "--annotator", "ana", "--order", "settle", "--limit", "3")
    assert table_rows(got) == table_rows(shown)
