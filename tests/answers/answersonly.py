"""A project that judges answers only — the TREC 2024 RAG setting: queries, generated answers of
two runs (``gpt``, ``llama``) with their sentences and citations, nuggets, one annotator's
judgments of the answers, and not a single relevance grade nor a ranking (importable as
``answersonly``).

- q1: nuggets a (vital), b (vital), c (okay). gpt: "A is so." cites c1, c2; "B is so." cites c3.
  llama: "A, maybe." cites c1.
- q2: nugget d (vital). gpt: "D holds." cites c4. llama has no answer.
- q3: no nugget. gpt: "E." cites c5. llama has no answer.
- q4: nuggets e (vital), f (okay). gpt: "F." cites c6. llama: "E too." cites c6.
- q5: gpt: "Nothing." cites c7; nobody judged it.

Judgments by ``ana`` (``JUDGMENTS``); the values they give are worked out where they are used.
"""

from __future__ import annotations

import json
from pathlib import Path

from ragjudge.cli import main

QUERIES = [{"id": f"q{i}", "text": f"question {i}"} for i in range(1, 6)]
CHUNKS = [{"id": f"c{j}", "text": f"passage {j}"} for j in range(1, 8)]
NUGGETS = [
    {"query_id": "q1", "nugget": "a", "importance": "vital"},
    {"query_id": "q1", "nugget": "b", "importance": "vital"},
    {"query_id": "q1", "nugget": "c", "importance": "okay"},
    {"query_id": "q2", "nugget": "d", "importance": "vital"},
    {"query_id": "q4", "nugget": "e", "importance": "vital"},
    {"query_id": "q4", "nugget": "f", "importance": "okay"},
]


def _answer(query: str, run: str, *sentences: tuple[str, list[str]]) -> dict:
    return {"query_id": query, "run": run,
            "sentences": [{"text": t, "citations": c} for t, c in sentences]}


ANSWERS = [
    _answer("q1", "gpt", ("A is so.", ["c1", "c2"]), ("B is so.", ["c3"])),
    _answer("q1", "llama", ("A, maybe.", ["c1"])),
    _answer("q2", "gpt", ("D holds.", ["c4"])),
    _answer("q3", "gpt", ("E.", ["c5"])),
    _answer("q4", "gpt", ("F.", ["c6"])),
    _answer("q4", "llama", ("E too.", ["c6"])),
    _answer("q5", "gpt", ("Nothing.", ["c7"])),
]


def _n(query: str, run: str, nugget: str, support: str) -> dict:
    return {"query_id": query, "run": run, "nugget": nugget, "support": support, "annotator": "ana"}


def _c(query: str, run: str, sentence: int, chunk: str, support: str) -> dict:
    return {"query_id": query, "run": run, "sentence": sentence, "chunk_id": chunk,
            "support": support, "annotator": "ana"}


JUDGMENTS = [
    _n("q1", "gpt", "a", "full"), _n("q1", "gpt", "b", "partial"), _n("q1", "gpt", "c", "none"),
    _c("q1", "gpt", 0, "c1", "full"), _c("q1", "gpt", 0, "c2", "none"),
    _c("q1", "gpt", 1, "c3", "partial"),
    _n("q1", "llama", "a", "partial"),
    _n("q2", "gpt", "d", "full"),
    _c("q3", "gpt", 0, "c5", "full"),
    _n("q4", "llama", "e", "full"), _n("q4", "llama", "f", "none"),
    _c("q4", "llama", 0, "c6", "partial"),
]


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def build_answers_only(db: str, folder: Path, *, judgments: bool = True) -> None:
    """A new project at ``db`` holding the answers above (and their judgments), through the
    command line."""
    from ragjudge.models import Scale
    from ragjudge.services.project.database import Project

    Project.init(db, scale=Scale.parse("0-3"), name="answers only").close()
    files = {"queries.jsonl": QUERIES, "chunks.jsonl": CHUNKS, "nuggets.jsonl": NUGGETS,
             "answers.jsonl": ANSWERS, "judgments.jsonl": JUDGMENTS}
    kinds = ["queries", "chunks", "nuggets", "answers"] + (["answer-labels"] if judgments else [])
    for (name, rows), kind in zip(files.items(), kinds):
        (folder / name).write_text(jsonl(rows), encoding="utf-8")
        assert main(["--db", db, "import", kind, str(folder / name)]) == 0, kind
