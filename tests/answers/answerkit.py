"""A small project with generated answers of two runs and two annotators' judgments of them,
shared by the answer tests (importable as ``answerkit``).

On top of ``projectkit.make_small_project`` (queries q1..q5, chunks c01..c20, run ``bm25``; q1's
ranking is c05, c06, ... c14): a run ``dense`` (q1: c08, c05, c07, ...), labels of q1..q3 (so that
they are evaluated), nuggets of q1, and answers:

- q1 / bm25, three sentences: "Parcels ship in five days." cites c05 and c06; "Returns are
  free." cites c07; "Thanks for asking." cites nothing;
- q1 / dense, two sentences: "Shipping takes a week." cites c05; "Returns cost five euros."
  cites c08;
- q2 / bm25, plain text citing c08 (its sentences cite nothing of their own).

The judgments (``JUDGMENTS``) and the values they give are worked out by hand in the tests.
"""

from __future__ import annotations

import json
from pathlib import Path

from ragjudge.cli import main

NUGGETS = [
    {"query_id": "q1", "nugget": "five days", "importance": "vital"},
    {"query_id": "q1", "nugget": "free returns", "importance": "vital"},
    {"query_id": "q1", "nugget": "tracking", "importance": "okay"},
]

ANSWERS = [
    {"query_id": "q1", "run": "bm25", "sentences": [
        {"text": "Parcels ship in five days.", "citations": ["c05", "c06"]},
        {"text": "Returns are free.", "citations": ["c07"]},
        {"text": "Thanks for asking."}]},
    {"query_id": "q1", "run": "dense", "sentences": [
        {"text": "Shipping takes a week.", "citations": ["c05"]},
        {"text": "Returns cost five euros.", "citations": ["c08"]}]},
    {"query_id": "q2", "run": "bm25", "text": "It ships. It is free.", "cited": ["c08"]},
]


def _n(run: str, nugget: str, support: str, who: str) -> dict:
    return {"query_id": "q1", "run": run, "nugget": nugget, "support": support, "annotator": who}


def _c(run: str, sentence: int, chunk: str, support: str, who: str) -> dict:
    return {"query_id": "q1", "run": run, "sentence": sentence, "chunk_id": chunk,
            "support": support, "annotator": who}


JUDGMENTS = [
    _n("bm25", "five days", "full", "ana"), _n("bm25", "five days", "full", "ben"),
    _n("bm25", "free returns", "partial", "ana"), _n("bm25", "free returns", "none", "ben"),
    _n("bm25", "tracking", "full", "ana"),
    _c("bm25", 0, "c05", "full", "ana"), _c("bm25", 0, "c05", "full", "ben"),
    _c("bm25", 0, "c06", "none", "ana"), _c("bm25", 0, "c06", "partial", "ben"),
    _c("bm25", 1, "c07", "partial", "ana"), _c("bm25", 1, "c07", "partial", "ben"),
    _n("dense", "five days", "none", "ana"), _n("dense", "five days", "partial", "ben"),
    _c("dense", 0, "c05", "full", "ana"),
]

DENSE = "".join(f"q{q} Q0 c{c:02d} {r} {1.0 / r} dense\n"
                for q in range(1, 6) for r, c in enumerate([8, 5, 7, 6, 1, 2, 3, 4], start=1))
LABELS = "q1 0 c05 2\nq1 0 c06 1\nq2 0 c08 1\nq3 0 c02 1\n"


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def cli(*args: str) -> int:
    return main(list(args))


def build(db: str, folder: Path, *, judgments: bool = True) -> None:
    """Fill the project at ``db`` (made by ``make_small_project``) through the command line."""
    files = {"dense.trec": DENSE, "labels.qrels": LABELS, "nuggets.jsonl": jsonl(NUGGETS),
             "answers.jsonl": jsonl(ANSWERS), "judgments.jsonl": jsonl(JUDGMENTS)}
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    steps = [("run", "dense.trec"), ("labels", "labels.qrels"), ("nuggets", "nuggets.jsonl"),
             ("answers", "answers.jsonl")]
    if judgments:
        steps.append(("answer-labels", "judgments.jsonl"))
    for kind, name in steps:
        extra = ["--annotator", "ana"] if kind == "labels" else []
        assert cli("--db", db, "import", kind, str(folder / name), *extra) == 0, (kind, name)
