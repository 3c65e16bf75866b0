"""The evaluation screen's per-query table as a user reads it: queries in natural order (1, 2,
10, as ``eval --per-query`` lists them), and ids that differ only by an invisible character
drawn differently."""

from __future__ import annotations

import asyncio
import json

import pytest
from textual.widgets import DataTable
from pilotkit import wait_for

from ragjudge.cli import common, main
from ragjudge.tui.evalapp import evaluation_app
from ragjudge.tui.screens.evaluation import EvaluationScreen

pytestmark = pytest.mark.slow


QUERIES = ["10", "2", "1", "q\u200d1", "q1", "q\u200b1"]
SHOWN_IN_ORDER = ["1", "2", "10", "q1", "q⟨U+200B⟩1", "q⟨U+200D⟩1"]


def _project(tmp_path, capsys, monkeypatch) -> str:
    monkeypatch.setitem(common.CLI_STATE, "db", None)
    monkeypatch.delenv("RAGJUDGE_DB", raising=False)
    db = str(tmp_path / "ids.db")
    files = {
        "queries": "".join(json.dumps({"id": q, "text": f"query {q}"}) + "\n" for q in QUERIES),
        "chunks": '{"id": "c1", "text": "one"}\n{"id": "c2", "text": "two"}\n',
        "run": "".join(f"{q} Q0 c{r} {r} {3 - r} bm25\n" for q in QUERIES for r in (1, 2)),
    }
    assert main(["--db", db, "init", "--scale", "0-3"]) == 0
    for kind, text in files.items():
        path = tmp_path / f"{kind}.txt"
        path.write_text(text, encoding="utf-8")
        assert main(["--db", db, "import", kind, str(path), "--format", "trec" if kind == "run" else "jsonl"]) == 0
    qrels = tmp_path / "ana.qrels"
    qrels.write_text("".join(f"{q} 0 c1 2\n{q} 0 c2 0\n" for q in QUERIES), encoding="utf-8")
    assert main(["--db", db, "import", "qrels", str(qrels), "--annotator", "ana"]) == 0
    capsys.readouterr()
    return db


def test_the_per_query_table_lists_ids_in_natural_order_each_visibly_different(tmp_path, capsys, monkeypatch):
    from ragjudge.services.project.database import Project

    db = _project(tmp_path, capsys, monkeypatch)
    with Project.open(db) as project:
        shown = asyncio.run(_per_query_ids(project))
    # was: the query ids sorted as text (1, 10, 2) on the screen, and 'q‍1' drawn as 'q1'
    assert shown == SHOWN_IN_ORDER
    # the command line lists them in the same order
    assert main(["--db", db, "eval", "-m", "nDCG@10", "--per-query", "--format", "json"]) == 0
    (only,) = json.loads(capsys.readouterr().out)["runs"].values()
    per_query = only["per_query"]
    assert [q.replace("\u200b", "⟨U+200B⟩").replace("\u200d", "⟨U+200D⟩") for q in per_query] == SHOWN_IN_ORDER


async def _per_query_ids(project) -> list[str]:
    app = evaluation_app(project)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluationScreen) and app.screen.snapshot)
        screen = app.screen
        await pilot.press("p")
        await wait_for(pilot, lambda: screen.snapshot.rows is not None and screen._query_rows)
        table = screen.query_one("#per-query-table", DataTable)
        return [table.get_row_at(i)[0].plain for i in range(table.row_count)]
