"""The README's nginx recipe in front of `ragjudge serve`, on loopback: nginx (when installed)
runs the README's server block with a certificate made for the test; through it a person logs
in (the cookie is Secure: nginx says the request came over TLS), labels, and a lead's terminal
opens (the websocket passes the proxy); the login limit counts the address nginx saw, whatever
the client claims."""

from __future__ import annotations

import re
import shutil
import ssl
import subprocess
import time
from pathlib import Path

import httpx
import pytest
import webkit
from webkit import events, key

from ragjudge.web.auth import Limit

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
ROOT = Path(__file__).resolve().parents[2]
HOST = "labels.example.org"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(NGINX).exists() or shutil.which("openssl") is None,
                       reason="nginx or openssl is not installed"),
]


def readme_block() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.search(r"```nginx\n(.*?)```", text, flags=re.S).group(1)


@pytest.fixture
def proxied(site, tmp_path):
    """The server behind nginx: (https base URL on 127.0.0.1, the server)."""
    running = webkit.start(site.db, public_url=f"https://{HOST}",
                           limits={"login_address": Limit(2, 0.001)})
    port = webkit.free_port()
    cert, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    f"/CN={HOST}", "-keyout", str(key_file), "-out", str(cert)], check=True, capture_output=True)
    block = (readme_block().replace("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;")
             .replace(f"/etc/letsencrypt/live/{HOST}/fullchain.pem", str(cert))
             .replace(f"/etc/letsencrypt/live/{HOST}/privkey.pem", str(key_file))
             .replace("http://127.0.0.1:8000", f"http://127.0.0.1:{running.settings.port}"))
    temp = tmp_path / "nginx"
    temp.mkdir()
    conf = tmp_path / "nginx.conf"
    conf.write_text(f"""
daemon off;
worker_processes 1;
pid {tmp_path}/nginx.pid;
error_log {tmp_path}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
{block}
}}
""")
    nginx = subprocess.Popen([NGINX, "-p", str(tmp_path), "-c", str(conf)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    url = f"https://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        try:
            httpx.get(url + "/healthz", verify=False, headers={"Host": HOST}, timeout=1)
            break
        except httpx.TransportError:
            assert nginx.poll() is None, nginx.stderr.read()
            assert time.monotonic() < deadline, "nginx did not start"
            time.sleep(0.05)
    yield url, running
    nginx.terminate()
    nginx.wait(10)
    running.stop()


def browser_like(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, verify=False, timeout=30,
                        headers={"Host": HOST, "Origin": f"https://{HOST}"})


def test_through_nginx_a_person_logs_in_over_tls_and_labels(proxied, site):
    url, running = proxied
    with browser_like(url) as client:
        response = client.post("/login", data={"token": site.tokens["ana"]})
        assert response.status_code == 303 and response.headers["location"] == "/judge"
        assert "Secure" in response.headers["set-cookie"] and "HttpOnly" in response.headers["set-cookie"]
        client.cookies.set("ragjudge_session", response.cookies["ragjudge_session"])
        pair = client.get("/api/v1/pairs/next").json()["pairs"][0]
        posted = client.post("/api/v1/labels", headers={"Idempotency-Key": key()},
                             json={"query_id": pair["query"]["id"], "chunk_id": pair["chunk"]["id"],
                                   "grade": 2, "seen": pair["seen"]})
        assert posted.status_code == 201
    assert [e[3] for e in events(site.db, "ana")] == [2]


def test_through_nginx_the_login_limit_counts_the_client_s_own_address(proxied, site):
    url, running = proxied
    with browser_like(url) as client:
        for forged in ("203.0.113.9", "203.0.113.10"):  # a client cannot choose its address ...
            response = client.post("/login", data={"token": "rj_wrong"}, headers={"X-Forwarded-For": forged})
            assert response.status_code == 401
        limited = client.post("/login", data={"token": "rj_wrong"}, headers={"X-Forwarded-For": "203.0.113.11"})
        assert limited.status_code == 429
    # ... nginx sends the address it saw (this test's, on loopback), and uvicorn takes it from
    # the proxy on 127.0.0.1 as the client's
    assert list(running.ctx.limits.buckets["login_address"]._buckets) == ["127.0.0.1"]


def test_through_nginx_the_lead_s_terminal_opens(proxied, site):
    pytest.importorskip("textual_serve")
    from websockets.sync.client import connect

    url, running = proxied
    with browser_like(url) as client:
        response = client.post("/login", data={"token": site.tokens["dora"]})
        session = response.cookies["ragjudge_session"]
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    socket_url = url.replace("https:", "wss:") + "/lead/terminal/ws?width=100&height=30"
    with connect(socket_url, ssl=context, additional_headers={  # (Host: the URL's, as a browser)
            "Origin": f"https://{HOST}", "Cookie": f"ragjudge_session={session}"}) as ws:
        frame = ws.recv(timeout=60)
        assert frame  # the app process answers through the proxy
        assert len(running.ctx.terminals) == 1
