"""Sessions, roles and the server's guards: the session cookie, revoking and retiring, logging
out, rate limits, the Host and Origin checks, the security headers, the access log, the lead's
routes, and what an anonymous request may cost."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from projectkit import rights
import webkit
from webkit import bearer, key, label, logged_in

from ragjudge.services.access import roster
from ragjudge.services.access.identity import token_digest
from ragjudge.services.project.database import Project
from ragjudge.web.auth import Limit

pytestmark = pytest.mark.slow


def test_login_gives_an_http_only_strict_cookie_and_a_session_kept_on_the_server(web, site):
    with httpx.Client(base_url=web.url, headers={"Origin": web.url}) as client:
        response = client.post("/login", data={"token": site.tokens["ana"]})
        assert response.status_code == 303 and response.headers["location"] == "/judge"
        cookie = response.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        assert "Secure" not in cookie  # plain http on loopback
        assert site.tokens["ana"] not in cookie
        session_id = client.cookies["ragjudge_session"]
        kept = web.ctx.sessions.get(session_id)
        assert kept.name == "ana" and kept.digest == token_digest(site.tokens["ana"])
        assert client.get("/judge").status_code == 200  # a reload: still logged in
        assert client.get("/api/v1/me").json()["name"] == "ana"


def test_behind_https_the_cookie_is_secure(site):
    running = webkit.start(site.db, public_url="https://labels.example.org")
    try:
        with httpx.Client(base_url=running.url, headers={"Host": "labels.example.org",
                                                         "Origin": "https://labels.example.org"}) as client:
            response = client.post("/login", data={"token": site.tokens["ana"]})
        assert response.status_code == 303 and "Secure" in response.headers["set-cookie"]
        with httpx.Client(base_url=running.url, headers={"X-Forwarded-Proto": "https"}) as client:
            response = client.post("/login", data={"token": site.tokens["ben"]})  # a proxy on loopback says TLS
        assert "Secure" in response.headers["set-cookie"]
    finally:
        running.stop()


def test_a_wrong_token_opens_nothing_and_says_so(web, site):
    with httpx.Client(base_url=web.url) as client:
        response = client.post("/login", data={"token": "rj_guess"})
        assert response.status_code == 401 and "opens nothing" in response.text
        assert "set-cookie" not in response.headers
        assert client.get("/judge", follow_redirects=False).headers["location"] == "/login"


@pytest.mark.parametrize(("change", "reason", "words"), [
    (lambda p: roster.issue_token(p, "ana", access=rights(p, "dora")), "revoked", "Token replaced"),
    (lambda p: roster.retire(p, "ana", access=rights(p, "dora")), "retired", "Name retired"),
])
def test_a_new_token_or_retirement_refuses_the_session_s_next_request(web, site, change, reason, words):
    with logged_in(web, site.tokens["ana"]) as client, bearer(web, site.tokens["ana"]) as script:
        pair = client.get("/api/v1/pairs/next").json()["pairs"][0]
        assert script.get("/api/v1/me").status_code == 200
        with Project.open(site.db) as project:
            change(project)
        refused = label(client, pair["query"]["id"], pair["chunk"]["id"], 2)
        assert refused.status_code == 401 and refused.json()["error"] == reason
        assert script.get("/api/v1/me").status_code == 401
        page = client.get("/judge")
        assert page.status_code == 401 and words in page.text  # the session is gone now
    assert webkit.events(site.db, "ana") == []


def test_a_role_taken_away_applies_at_the_next_request(web, site):
    with logged_in(web, site.tokens["dora"]) as client:
        assert client.get("/api/v1/annotators").status_code == 200
        with Project.open(site.db) as project:
            roster.set_role(project, "dora", "annotator", access=rights(project, "dora"))
        assert client.get("/api/v1/annotators").status_code == 403


def test_logging_out_ends_the_session(web, site):
    with logged_in(web, site.tokens["ana"]) as client:
        old = client.cookies["ragjudge_session"]
        response = client.post("/logout")
        assert response.status_code == 303 and 'ragjudge_session=""' in response.headers["set-cookie"]
        assert client.get("/login?bye=1").text.count("You are logged out") == 1
    with httpx.Client(base_url=web.url, cookies={"ragjudge_session": old}) as replay:
        response = replay.get("/api/v1/me")
        assert response.status_code == 401 and response.json()["error"] == "expired"


def test_annotators_are_refused_every_lead_route(web, site):
    with logged_in(web, site.tokens["ana"]) as client, bearer(web, site.tokens["ben"]) as script:
        for path in ("/api/v1/eval", "/api/v1/qrels", "/api/v1/annotators", "/lead", "/lead/terminal"):
            for who in (client, script):
                response = who.get(path)
                assert response.status_code == 403, (path, response.text[:200])
        assert "for leads" in client.get("/lead").text


def test_the_evaluation_is_what_eval_format_json_prints(web, site, capsys, monkeypatch):
    from ragjudge.cli import main

    monkeypatch.setenv("RAGJUDGE_USER", "dora")  # the lead the API is asked as, on both sides

    with Project.open(site.db) as project:
        from ragjudge.services.labels.events import record_label

        for chunk, grade in (("c04", 2), ("c06", 1), ("c07", 0)):
            record_label(project, annotator="ana", query_id="q1", chunk_id=chunk, grade=grade)
    capsys.readouterr()
    assert main(["--db", site.db, "eval", "--format", "json", "-m", "P@5", "-m", "nDCG@10", "--per-query"]) == 0
    expected = json.loads(capsys.readouterr().out)
    with bearer(web, site.tokens["dora"]) as client:
        got = client.get("/api/v1/eval", params=[("measure", "P@5"), ("measure", "nDCG@10"), ("per_query", "true")])
        qrels = client.get("/api/v1/qrels")
        members = client.get("/api/v1/annotators").json()["annotators"]
    assert got.status_code == 200 and got.json() == expected
    assert qrels.text.splitlines()[0].startswith("q1 0 c0") and qrels.headers["content-type"].startswith("text/plain")
    assert {m["name"] for m in members} == {"dora", "ana", "ben"}
    assert all("token" not in json.dumps(m).replace("has_token", "") for m in members)


def test_login_attempts_are_limited_per_address(site):
    running = webkit.start(site.db, limits={"login_address": Limit(3, 0.01)})
    try:
        with httpx.Client(base_url=running.url) as client:
            statuses = [client.post("/login", data={"token": "rj_wrong"}).status_code for _ in range(3)]
            limited = client.post("/login", data={"token": site.tokens["ana"]})  # even the right one
        assert statuses == [401, 401, 401]
        assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
        assert "Too many" in limited.text
        with httpx.Client(base_url=running.url, headers={"Authorization": f"Bearer {site.tokens['ana']}"}) as script:
            assert script.get("/api/v1/me").status_code == 429  # a script's good token waits too
    finally:
        running.stop()


def test_requests_and_new_sessions_are_limited_per_annotator(site):
    running = webkit.start(site.db, limits={"request_name": Limit(5, 0.01), "session_name": Limit(2, 0.001)})
    try:
        with bearer(running, site.tokens["ana"]) as one, bearer(running, site.tokens["ana"]) as two:
            statuses = [c.get("/api/v1/me").status_code for c in (one, two, one, two, one, two)]
        assert statuses == [200] * 5 + [429]
        with bearer(running, site.tokens["ben"]) as other:
            assert other.get("/api/v1/me").status_code == 200  # another annotator is not slowed down
        with httpx.Client(base_url=running.url) as client:
            logins = [client.post("/login", data={"token": site.tokens["ben"]}).status_code for _ in range(3)]
        assert logins == [303, 303, 429]
    finally:
        running.stop()


def test_a_full_server_says_so(site):
    running = webkit.start(site.db, max_sessions=1)
    try:
        with logged_in(running, site.tokens["ana"]):
            with httpx.Client(base_url=running.url) as client:
                response = client.post("/login", data={"token": site.tokens["ben"]})
        assert response.status_code == 503 and "as many sessions" in response.text
    finally:
        running.stop()


def test_on_loopback_other_host_names_get_nothing(web, site):
    with httpx.Client(base_url=web.url) as client:
        assert client.get("/login", headers={"Host": "rebound.example.com"}).status_code == 421
        assert client.get("/login", headers={"Host": "localhost:8000"}).status_code == 200
        assert "its own address" in client.get("/login", headers={"Host": "evil.test"}).text


def test_a_write_from_another_site_s_page_is_refused(web, site):
    with logged_in(web, site.tokens["ana"]) as client:
        pair = client.get("/api/v1/pairs/next").json()["pairs"][0]
        body = {"query_id": pair["query"]["id"], "chunk_id": pair["chunk"]["id"], "grade": 2}
        for headers in ({"Origin": "https://evil.example"}, {"Origin": "null"},
                        {"Sec-Fetch-Site": "cross-site", "Origin": web.url}):
            response = client.post("/api/v1/labels", json=body, headers={"Idempotency-Key": key(), **headers})
            assert response.status_code == 403 and response.json()["error"] == "origin", headers
        response = client.post("/logout", headers={"Origin": "https://evil.example"})
        assert response.status_code == 403 and "another" in response.text
        assert client.get("/api/v1/me").status_code == 200  # still logged in
    assert webkit.events(site.db, "ana") == []


def test_security_headers(web, site):
    with logged_in(web, site.tokens["ana"]) as client:
        for path in ("/judge", "/api/v1/me", "/login", "/history"):
            headers = client.get(path).headers
            policy = headers["content-security-policy"]
            assert "'unsafe-inline'" not in policy and "frame-ancestors 'none'" in policy, path
            assert "script-src 'self'" in policy and "default-src 'none'" in policy
            assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY"
            assert headers["cache-control"] == "no-store", path
            assert "server" not in headers
        assert client.get("/static/ragjudge.js").headers["cache-control"] == "no-cache"


def test_the_access_log_is_one_json_line_per_request_without_secrets(web, site):
    with logged_in(web, site.tokens["ana"]) as client, bearer(web, site.tokens["ben"]) as script:
        client.get("/api/v1/pairs/next", params={"n": 2, "after_query_id": "q1", "after_chunk_id": "c09"})
        script.get("/api/v1/me")
        session_id = client.cookies["ragjudge_session"]
    lines = web.log_after(3)
    records = [json.loads(line) for line in lines]
    assert all(set(r) == {"time", "method", "path", "status", "ms", "annotator"} for r in records)
    assert ("GET", "/api/v1/pairs/next", 200, "ana") in {(r["method"], r["path"], r["status"], r["annotator"]) for r in records}
    assert ("POST", "/login", 303, "ana") in {(r["method"], r["path"], r["status"], r["annotator"]) for r in records}
    assert ("GET", "/api/v1/me", 200, "ben") in {(r["method"], r["path"], r["status"], r["annotator"]) for r in records}
    text = "\n".join(lines)
    for secret in (*site.tokens.values(), session_id, "after_query_id", "c09"):
        assert secret not in text


def test_nothing_is_read_from_the_project_before_login(web, site):
    from sqlalchemy import event

    statements: list[str] = []

    def seen(conn, cursor, statement, *args):
        if not statement.startswith("PRAGMA wal_checkpoint"):  # the server's own, every second
            statements.append(statement)

    event.listen(web.ctx.project.engine, "before_cursor_execute", seen)
    try:
        with httpx.Client(base_url=web.url) as client:
            for path in ("/", "/login", "/judge", "/answers", "/lead", "/static/ragjudge.css", "/healthz"):
                client.get(path)
            client.get("/api/v1/pairs/next", headers={"Authorization": "Basic x"})
        with httpx.Client(base_url=web.url, cookies={"ragjudge_session": "made-up"}) as client:
            client.get("/api/v1/pairs/next")
        assert statements == []
        with httpx.Client(base_url=web.url, headers={"Authorization": "Bearer rj_guess"}) as client:
            client.get("/api/v1/pairs/next")
        selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
        assert len(selects) == 1 and "WHERE annotators.token_hash = ?" in selects[0]  # the token's lookup only
    finally:
        event.remove(web.ctx.project.engine, "before_cursor_execute", seen)


def test_openapi_describes_the_api_and_healthz_answers(web):
    with httpx.Client(base_url=web.url) as client:
        schema = client.get("/openapi.json").json()
        assert client.get("/healthz").json() == {"status": "ok"}
        assert client.get("/docs").status_code == 404  # its page would load scripts from a CDN
    paths = set(schema["paths"])
    assert {"/api/v1/labels", "/api/v1/pairs/next", "/api/v1/labels/undo", "/api/v1/labels/history",
            "/api/v1/answers/{answer_id}/judgments", "/api/v1/eval", "/api/v1/qrels",
            "/api/v1/annotators"} <= paths
    assert not any(p in paths for p in ("/login", "/judge", "/lead"))
    assert "Idempotency-Key" in json.dumps(schema["paths"]["/api/v1/labels"])


def test_under_a_path_of_the_public_url_every_link_and_the_cookie_keep_the_path(site):
    running = webkit.start(site.db, public_url="https://example.org/rj")
    try:
        with httpx.Client(base_url=running.url, headers={"Host": "example.org", "Origin": "https://example.org"}) as client:
            page = client.get("/login").text
            refs = re.findall(r'(?:href|src|action)="([^"#][^"]*)"', page)
            assert refs and all(r.startswith("/rj/") or r.startswith("data:") for r in refs), refs
            response = client.post("/login", data={"token": site.tokens["ana"]})
            assert response.headers["location"] == "/rj/judge"
            assert "Path=/rj" in response.headers["set-cookie"] and "Secure" in response.headers["set-cookie"]
            session = response.cookies["ragjudge_session"]  # (the proxy takes /rj off the path)
            judge = client.get("/judge", headers={"Cookie": f"ragjudge_session={session}"})
            assert 'data-base="/rj"' in judge.text
    finally:
        running.stop()
