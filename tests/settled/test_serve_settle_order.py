"""``ragjudge serve --queue-order settle``: the web pages give an annotator the pairs in the
settle order, the order ``ragjudge queue --order settle`` lists (one rule: the services'
``judging_queue``); a project the order cannot weigh is refused before the server starts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from settledkit import cli, make_p1_project, must

from ragjudge.services.access import roster
from ragjudge.services.project.database import Project

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "web"))
import webkit  # the web tests' helpers, in tests/web


@pytest.mark.slow
def test_the_web_queue_follows_the_settle_order(tmp_path):
    db = make_p1_project(str(tmp_path / "p1.db"))
    with Project.open(db) as project:
        from projectkit import rights

        _, token = roster.add(project, "ana", token=True, access=rights(project, "ana"))
    listed = json.loads(must("--db", db, "queue", "--annotator", "ana", "--order", "settle",
                             "--limit", "3", "--format", "json"))["pairs"]
    depth = json.loads(must("--db", db, "queue", "--annotator", "ana", "--order", "depth",
                            "--limit", "3", "--format", "json"))["pairs"]
    assert listed != depth  # the test tells the orders apart
    running = webkit.start(db, queue_order="settle")
    try:
        with webkit.bearer(running, token) as client:
            pairs = client.get("/api/v1/pairs/next", params={"n": 3}).json()["pairs"]
    finally:
        running.stop()
    assert [{"query_id": p["query"]["id"], "chunk_id": p["chunk"]["id"]} for p in pairs] == listed


def test_serve_refuses_an_order_it_cannot_follow(tmp_path):
    db = make_p1_project(str(tmp_path / "p1.db"))
    code, out, err = cli("--db", db, "serve", "--queue-order", "random")
    assert code == 2 and "--queue-order 'random': use depth, query or settle." in err
    single = str(tmp_path / "one.db")
    must("init", "--db", single, "--scale", "binary")
    code, out, err = cli("--db", single, "serve", "--queue-order", "settle")
    assert code == 2 and "run" in err and err.count("\n") == 1
