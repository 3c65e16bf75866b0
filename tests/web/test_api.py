"""The JSON API under /api/v1 against a real server on loopback: each route, its refusals and
bad input, and what lands in the project."""

from __future__ import annotations

import pytest

import webkit
from webkit import bearer, events, key, label, logged_in

pytestmark = pytest.mark.slow


def test_me_names_the_token_s_annotator_and_the_scale(web, site):
    with bearer(web, site.tokens["ana"]) as client:
        data = client.get("/api/v1/me").json()
    assert (data["name"], data["role"], data["lead"]) == ("ana", "annotator", False)
    assert [level["grade"] for level in data["scale"]["levels"]] == [0, 1, 2, 3]


def test_without_a_login_every_route_is_401(web):
    import httpx

    with httpx.Client(base_url=web.url) as client:
        for path in ("/api/v1/me", "/api/v1/pairs/next", "/api/v1/labels/history", "/api/v1/eval"):
            response = client.get(path)
            assert response.status_code == 401 and response.json()["error"] == "logged-out", path
        response = client.post("/api/v1/labels", json={}, headers={"Idempotency-Key": key()})
        assert response.status_code == 401
    for header in ("Bearer rj_not-a-token", "Basic YW5hOnB3", "Bearer", "Bearer " + "x" * 300):
        with httpx.Client(base_url=web.url, headers={"Authorization": header}) as client:
            response = client.get("/api/v1/me")
        assert response.status_code == 401, header
        assert response.json()["error"] in ("bad-token", "bad-auth")


def test_next_pairs_resume_where_the_annotator_stopped(web, site):
    with bearer(web, site.tokens["ana"]) as client:
        first = client.get("/api/v1/pairs/next", params={"n": 3}).json()["pairs"]
        assert len(first) == 3 and all(p["label"] is None and p["seen"] is None for p in first)
        pair = first[0]
        assert pair["chunk"]["segments"] and "".join(pair["chunk"]["segments"]) == pair["chunk"]["text"]
        response = label(client, pair["query"]["id"], pair["chunk"]["id"], 2)
        assert response.status_code == 201
        again = client.get("/api/v1/pairs/next").json()["pairs"][0]
        assert (again["query"]["id"], again["chunk"]["id"]) == (first[1]["query"]["id"], first[1]["chunk"]["id"])
        after = client.get("/api/v1/pairs/next", params={"after_query_id": first[1]["query"]["id"],
                                                          "after_chunk_id": first[1]["chunk"]["id"]}).json()
        assert after["pairs"][0]["chunk"]["id"] == first[2]["chunk"]["id"]


def test_a_label_is_committed_once_under_the_token_s_name_and_the_next_pair_comes_with_it(web, site):
    with bearer(web, site.tokens["ana"]) as client:
        pair = client.get("/api/v1/pairs/next").json()["pairs"][0]
        response = label(client, pair["query"]["id"], pair["chunk"]["id"], 3, duration_ms=1500)
        assert response.status_code == 201
        data = response.json()
        assert data["label"]["grade"] == 3 and data["next"]["chunk"]["id"] != pair["chunk"]["id"]
    assert events(site.db, "ana") == [("ana", pair["query"]["id"], pair["chunk"]["id"], 3, False, "web", None)]


def test_the_same_idempotency_key_twice_is_one_label_event(web, site):
    with bearer(web, site.tokens["ana"]) as client:
        pair = client.get("/api/v1/pairs/next").json()["pairs"][0]
        once = key()
        first = label(client, pair["query"]["id"], pair["chunk"]["id"], 2, idempotency=once)
        second = label(client, pair["query"]["id"], pair["chunk"]["id"], 2, idempotency=once)
        assert first.status_code == second.status_code == 201
        assert first.json() == second.json()
        assert second.headers.get("Idempotent-Replayed") == "true"
        other = label(client, pair["query"]["id"], pair["chunk"]["id"], 1, idempotency=once)
        assert other.status_code == 422 and "different request" in other.json()["message"]
    assert len(events(site.db, "ana")) == 1


def test_concurrent_repeats_of_one_key_still_write_once(web, site):
    from concurrent.futures import ThreadPoolExecutor

    with bearer(web, site.tokens["ana"]) as client:
        pair = client.get("/api/v1/pairs/next").json()["pairs"][0]
        once = key()
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _: label(client, pair["query"]["id"], pair["chunk"]["id"], 1,
                                                    idempotency=once), range(8)))
    assert {r.status_code for r in answers} == {201}
    assert len({r.json()["event_id"] for r in answers}) == 1
    assert len(events(site.db, "ana")) == 1


def test_two_sessions_of_one_annotator_do_not_overwrite_each_other(web, site):
    with logged_in(web, site.tokens["ana"]) as first, logged_in(web, site.tokens["ana"]) as second:
        pair = first.get("/api/v1/pairs/next").json()["pairs"][0]
        seen_by_second = second.get("/api/v1/pairs/at", params={"query_id": pair["query"]["id"],
                                                                  "chunk_id": pair["chunk"]["id"]}).json()["pair"]
        assert label(first, pair["query"]["id"], pair["chunk"]["id"], 3, seen=pair["seen"]).status_code == 201
        refused = label(second, pair["query"]["id"], pair["chunk"]["id"], 0, seen=seen_by_second["seen"])
        assert refused.status_code == 409
        current = refused.json()["current"]
        assert current["grade"] == 3 and refused.json()["error"] == "conflict"
        assert [e[3] for e in events(site.db, "ana")] == [3]  # nothing written by the refused one
        chosen = label(second, pair["query"]["id"], pair["chunk"]["id"], 0, seen=current["event_id"])
        assert chosen.status_code == 201
    assert [e[3] for e in events(site.db, "ana")] == [3, 0]


def test_undo_takes_the_label_back_and_refuses_to_undo_another_tab_s(web, site):
    with bearer(web, site.tokens["ana"]) as client:
        pairs = client.get("/api/v1/pairs/next", params={"n": 2}).json()["pairs"]
        a = label(client, pairs[0]["query"]["id"], pairs[0]["chunk"]["id"], 2).json()["event_id"]
        b = label(client, pairs[1]["query"]["id"], pairs[1]["chunk"]["id"], 1).json()["event_id"]
        wrong = client.post("/api/v1/labels/undo", json={"expect": a}, headers={"Idempotency-Key": key()})
        assert wrong.status_code == 409 and wrong.json()["current"]["event_id"] == b
        undone = client.post("/api/v1/labels/undo", json={"expect": b}, headers={"Idempotency-Key": key()})
        assert undone.status_code == 200
        data = undone.json()["undone"]
        assert data["undone_id"] == b and data["label"]["grade"] is None
        assert data["pair"]["chunk"]["id"] == pairs[1]["chunk"]["id"]
        client.post("/api/v1/labels/undo", json={}, headers={"Idempotency-Key": key()})
        nothing = client.post("/api/v1/labels/undo", json={}, headers={"Idempotency-Key": key()})
        assert nothing.status_code == 200 and nothing.json() == {"undone": None}
    assert [(e[3], e[6]) for e in events(site.db, "ana")] == [(2, None), (1, None), (None, b), (None, a)]


def test_history_is_the_annotator_s_own(web, site):
    with bearer(web, site.tokens["ana"]) as client:
        pair = client.get("/api/v1/pairs/next").json()["pairs"][0]
        label(client, pair["query"]["id"], pair["chunk"]["id"], 1)
        history = client.get("/api/v1/labels/history").json()["history"]
    assert [(h["query_id"], h["chunk_id"], h["label"]["grade"]) for h in history] == [
        (pair["query"]["id"], pair["chunk"]["id"], 1)]  # ben's grade of q1 / c05 is not there


def test_flags_comments_facets_and_nuggets(web, site):
    with bearer(web, site.tokens["ana"]) as client:
        pair = client.get("/api/v1/pairs/next").json()["pairs"][0]
        where = {"query_id": pair["query"]["id"], "chunk_id": pair["chunk"]["id"]}

        def post(path, body):
            return client.post(path, json={**where, **body}, headers={"Idempotency-Key": key()})

        marks = post("/api/v1/marks", {"kind": "flag", "text": "is this <b>current</b>?"}).json()["marks"]
        assert marks == {"flagged": True, "flag_note": "is this <b>current</b>?", "comment": None}
        assert post("/api/v1/marks", {"kind": "comment", "text": "see FAQ"}).json()["marks"]["comment"] == "see FAQ"
        assert post("/api/v1/marks", {"kind": "flag", "clear": True}).json()["marks"]["flagged"] is False
        facets = post("/api/v1/facets", {"name": "deadline"}).json()["facets"]
        assert [(f["name"], f["covered"]) for f in facets] == [("deadline", False)]
        linked = post(f"/api/v1/facets/{facets[0]['id']}/link", {"covered": True}).json()["facets"]
        assert linked[0]["covered"] is True
        nuggets = post("/api/v1/nuggets", {"text": "30 days", "importance": "vital"}).json()["nuggets"]
        supported = post(f"/api/v1/nuggets/{nuggets[0]['id']}/support", {"support": "partial"}).json()
        assert supported["nuggets"][0]["support"] == "partial"
        assert post("/api/v1/facets/999999/link", {"covered": True}).status_code == 404
        assert post("/api/v1/marks", {"kind": "shout"}).status_code == 422
        again = client.get("/api/v1/pairs/at", params=where).json()["pair"]
    assert again["marks"]["comment"] == "see FAQ" and again["facets"][0]["covered"] is True


def test_bad_input_is_one_paragraph_naming_the_field_and_changes_nothing(web, site):
    with bearer(web, site.tokens["ana"]) as client:
        pair = client.get("/api/v1/pairs/next").json()["pairs"][0]
        q, c = pair["query"]["id"], pair["chunk"]["id"]
        cases = [
            ({"query_id": q, "chunk_id": c, "grade": 7}, "scale"),
            ({"query_id": q, "chunk_id": c, "grade": "2"}, "'grade'"),
            ({"query_id": q, "chunk_id": c, "grade": True}, "'grade'"),
            ({"query_id": q, "chunk_id": c, "grade": 2.5}, "'grade'"),
            ({"query_id": q, "chunk_id": c}, "grade"),
            ({"query_id": q, "chunk_id": c, "grade": 1, "skip": True}, "not both"),
            ({"query_id": q, "chunk_id": c, "grade": 1, "by": "dora"}, "'by'"),
            ({"query_id": q, "chunk_id": "c\x00", "grade": 1}, "'chunk_id'"),
            ({"query_id": q, "chunk_id": "c" * 5000, "grade": 1}, "'chunk_id'"),
            ({"query_id": q, "chunk_id": c, "grade": 1, "seen": "latest"}, "'seen'"),
            ({"query_id": 5, "chunk_id": c, "grade": 1}, "'query_id'"),
        ]
        for body, named in cases:
            response = client.post("/api/v1/labels", json=body, headers={"Idempotency-Key": key()})
            assert response.status_code == 422, body
            message = response.json()["message"]
            assert named in message and "Traceback" not in message and "\n" not in message, (body, message)
        not_json = client.post("/api/v1/labels", content=b"{grade: 2", headers={
            "Idempotency-Key": key(), "Content-Type": "application/json"})
        assert not_json.status_code == 422
        for hostile in ("../../etc/passwd", "' OR 1=1 --", "q1\u202egnp.exe", "%00", "<script>"):
            response = label(client, hostile, c, 1)
            assert response.status_code == 404 and "not in your queue" in response.json()["message"]
        assert client.get("/api/v1/pairs/at", params={"query_id": q, "chunk_id": "nope"}).status_code == 404
        assert client.get("/api/v1/pairs/next", params={"n": 0}).status_code == 422
        assert client.get("/api/v1/pairs/next", params={"n": "lots"}).status_code == 422
        assert client.get("/api/v1/pairs/next", params={"after_query_id": q}).status_code == 422
        no_key = client.post("/api/v1/labels", json={"query_id": q, "chunk_id": c, "grade": 1})
        assert no_key.status_code == 422 and "Idempotency-Key" in no_key.json()["message"]
        bad_key = client.post("/api/v1/labels", json={"query_id": q, "chunk_id": c, "grade": 1},
                              headers={"Idempotency-Key": "x"})
        assert bad_key.status_code == 422
    assert events(site.db, "ana") == []


def test_a_huge_body_is_refused_before_it_is_read(web, site):
    with bearer(web, site.tokens["ana"]) as client:
        big = {"query_id": "q1", "chunk_id": "c05", "grade": 1, "pad": "x" * 400_000}
        response = client.post("/api/v1/labels", json=big, headers={"Idempotency-Key": key()})
        assert response.status_code == 413

        def chunks():
            for _ in range(100):
                yield b"x" * 10_000

        chunked = client.post("/api/v1/labels", content=chunks(), headers={
            "Idempotency-Key": key(), "Content-Type": "application/json"})
        assert chunked.status_code == 413
    assert events(site.db, "ana") == []


def test_answers_are_judged_item_by_item_and_undone(tmp_path):
    site = webkit.build_project(str(tmp_path / "answers.db"), answers=True, folder=tmp_path)
    running = webkit.start(site.db)
    try:
        with bearer(running, site.tokens["ben"]) as client:
            answer = client.get("/api/v1/answers/next").json()["answer"]
            assert answer["query"]["id"] == "q1" and answer["items"][0]["nugget"] == "five days"
            nugget = answer["items"][0]["nugget_id"]
            url = f"/api/v1/answers/{answer['answer_id']}/judgments"
            judged = client.post(url, json={"support": "full", "nugget_id": nugget},
                                 headers={"Idempotency-Key": key()})
            assert judged.status_code == 201 and judged.json()["answer"]["items"][0]["support"] == "full"
            cite = next(i for i in answer["items"] if i["chunk_id"] is not None)
            assert cite["chunk_id"] in answer["chunks"]
            ok = client.post(url, json={"support": "partial", "sentence": cite["sentence"],
                                        "chunk_id": cite["chunk_id"]}, headers={"Idempotency-Key": key()})
            assert ok.status_code == 201
            both = client.post(url, json={"support": "none", "nugget_id": nugget, "sentence": 0,
                                          "chunk_id": "c05"}, headers={"Idempotency-Key": key()})
            assert both.status_code == 422
            missing = client.post("/api/v1/answers/99999/judgments", json={"support": "full", "nugget_id": nugget},
                                  headers={"Idempotency-Key": key()})
            assert missing.status_code == 404
            undone = client.post("/api/v1/answers/undo", headers={"Idempotency-Key": key()}).json()["undone"]
            assert (undone["sentence"], undone["chunk_id"], undone["support"]) == (cite["sentence"], cite["chunk_id"], None)
            at = client.get("/api/v1/answers/at", params={"position": 1}).json()["answer"]
            assert at["position"] == 1
            assert client.get("/api/v1/answers/at", params={"position": 99}).status_code == 404
            assert client.get("/api/v1/answers/at").status_code == 422
    finally:
        running.stop()
