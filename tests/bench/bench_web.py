"""Benchmark of ``ragjudge serve``'s web pages (not a pytest test), beside today's terminal in
the browser (the textual-serve relay, one app process per tab) measured in the same run, on the
demo project, server and browsers on this machine.

    PYTHONPATH=. python tests/bench/bench_web.py [--keys 60] [--rounds 25] [--browsers 8]
        [--annotators 200] [--seconds 120] [--idle 1000] [--relay-idle 16] [--skip-relay]

Prints, for the web server (one process) and the relay:

- keypress in the browser -> label committed -> next pair on the page, median and p95, in one
  browser and with ``--browsers`` browsers (contexts, each its own person and session) pressing
  at the same moment, ``--think`` seconds of reading before each key. Web: the keydown to the moment the page holds the next pair (the
  label's answer, which the server sends after the commit, carries it), and to the first frame
  painted after it; relay: the keydown to the first websocket frame showing the label counted
  (``bench_serve.py``'s measure);
- ``--annotators`` simulated annotators, each posting a label through the API every 2 s for
  ``--seconds`` (each with its token, an Idempotency-Key and the next pair in the answer): p50,
  p99, labels lost (acknowledged, not in the project) and doubled (in the project more often than
  acknowledged), the server's largest resident set;
- ``--idle`` connections that never log in (half send nothing, half ask for the login page and
  stay open): processes started, slots taken, the server's memory, how many the server still
  holds after 10 s, and a label's time meanwhile; for the relay, ``--relay-idle`` websockets that
  never log in (each starts an app process).

Targets: one browser median <= 30 ms and p95 <= 80 ms; ``--browsers`` p95 <= 150 ms; annotators
p99 <= 100 ms, none lost, none doubled, RSS <= 300 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))  # the kit modules (chromium.py)
sys.path.insert(0, str(ROOT / "tests" / "serve"))

from bench_serve import BenchTab, build_project, percentile, rss_mb  # noqa: E402
from browserkit import CHROMIUM, Served, free_port, wait_for  # noqa: E402

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

RECORDER = r"""
(() => {
  const b = { keys: [], shown: [] };
  window.__rjweb = b;
  document.addEventListener("keydown", () => b.keys.push(performance.now()), true);
  document.addEventListener("DOMContentLoaded", () => {
    new MutationObserver(() => {
      const at = performance.now();
      requestAnimationFrame(() => b.shown.push([at, performance.now(), document.body.dataset.pair]));
    }).observe(document.body, { attributes: true, attributeFilter: ["data-pair"] });
  });
})();
"""

FIND = """
() => {
  const b = window.__rjweb;
  const pressed = b.keys[b.keys.length - 1];
  for (const [at, painted] of b.shown) {
    if (at >= pressed) return [at - pressed, painted - pressed];
  }
  return null;
}
"""


def environment() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.pop("RAGJUDGE_SERVED", None)
    return env


def listening(process: subprocess.Popen, port: int) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"the server exited with {process.returncode}")
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def start(code: str, db: str) -> Served:
    """A server started by ``code`` (``{db}`` and ``{port}`` filled in) in a process of its own."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", code.format(db=repr(db), port=port)],
                               env=environment(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    served = Served(db, port, process)
    wait_for(lambda: listening(process, port), "the server to listen", deadline=60)
    return served


WEB = "from ragjudge.web.server import serve; serve({db}, port={port})"
RELAY = ("from ragjudge.serve.server import serve; "
         "serve({db}, title='ragjudge', host='127.0.0.1', port={port}, public_url=None)")


def cpu_seconds(pid: int) -> float:
    """The processor time process ``pid`` has used (user and system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            status = (proc / "status").read_text()
        except OSError:
            continue
        match = re.search(r"^PPid:\s*(\d+)", status, re.M)
        if match and int(match.group(1)) == pid:
            found.append(int(proc.name))
    return found


# -- the web pages in browsers ---------------------------------------------------------------


class WebTab:
    """One person's browser context on the judging page, with the recorder."""

    def __init__(self, browser, url: str, token: str) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)
        self.context.add_init_script(RECORDER)
        self.page = self.context.new_page()
        self.page.goto(url + "/login")
        self.page.fill("#token", token)
        self.page.click("button[type=submit]")
        self.page.wait_for_url(url + "/judge")
        self.page.wait_for_selector("#pair:not([hidden])")

    def press(self, key: str) -> None:
        self.page.evaluate("() => { window.__rjweb.shown.length = 0; }")
        self.page.keyboard.press(key)

    def latency(self) -> tuple[float, float]:
        end = time.monotonic() + 30
        while time.monotonic() < end:
            found = self.page.evaluate(FIND)
            if found is not None:
                return float(found[0]), float(found[1])
            self.page.wait_for_timeout(2)
        raise AssertionError("the next pair never came")

    def close(self) -> None:
        self.context.close()


def web_browsers(browser, url: str, tokens, keys: int, rounds: int, count: int,
                 think: float) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    tab = WebTab(browser, url, next(tokens))
    one = []
    for i in range(keys):
        time.sleep(think)
        tab.press("0123"[i % 4])
        one.append(tab.latency())
    tab.close()
    out["one"] = [a for a, _ in one]
    out["one painted"] = [b for _, b in one]
    tabs = [WebTab(browser, url, next(tokens)) for _ in range(count)]
    many = []
    for i in range(rounds):
        time.sleep(think)
        for each in tabs:
            each.press("0123"[i % 4])
        many.extend(each.latency() for each in tabs)
    for each in tabs:
        each.close()
    out["many"] = [a for a, _ in many]
    out["many painted"] = [b for _, b in many]
    return out


def relay_browsers(browser, served: Served, tokens, keys: int, rounds: int, count: int,
                   think: float) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    tab = BenchTab(browser, served.url)
    tab.start(next(tokens))
    times = []
    for i in range(keys):
        time.sleep(think)
        tab.press_grade("0123"[i % 4])
        times.append(tab.latency())
    out["one"] = times
    out["rss one"] = [rss_mb(pid) for pid in served.sessions()]
    tab.close()
    tabs = [BenchTab(browser, served.url) for _ in range(count)]
    for each in tabs:
        each.start(next(tokens))
    out["rss many"] = [rss_mb(pid) for pid in served.sessions()]
    times = []
    for i in range(rounds):
        time.sleep(think)
        for each in tabs:
            each.press_grade("0123"[i % 4])
        times.extend(each.latency() for each in tabs)
    out["many"] = times
    for each in tabs:
        each.close()
    return out


# -- annotators through the API --------------------------------------------------------------


async def annotators(url: str, tokens: list[str], seconds: float, server_pid: int,
                     arrive: float, batch: int = 0) -> dict:
    """Each token an annotator posting a label every 2 s, arriving at a random moment of the
    first ``arrive`` seconds (aiohttp: a light client, so that the load generator takes little
    of the cores the server runs on). Without ``batch``, each label's answer brings the next
    pair (as the judging page's first label does); with it, an annotator takes ``batch`` pairs
    at a time (``pairs/next?n=``) and posts its labels without asking for the next one (as a
    script would, and as the page does when it fetched the next pair ahead)."""
    import aiohttp

    times: list[float] = []
    acknowledged: dict[str, list[int]] = {}
    errors: list[str] = []
    retries = 0
    peak = {"rss": rss_mb(server_pid)}
    started_at = time.monotonic()
    stop_at = started_at + seconds
    arrived_by = started_at + arrive

    async def one(token: str) -> None:
        nonlocal retries
        await asyncio.sleep(random.random() * arrive)
        headers = {"Authorization": f"Bearer {token}"}
        async with aiohttp.ClientSession(url, headers=headers, timeout=aiohttp.ClientTimeout(total=30)) as client:
            async with client.get("/api/v1/me") as response:
                me = (await response.json())["name"]
            mine = acknowledged.setdefault(me, [])
            waiting: list[dict] = []

            async def take(after: dict | None) -> dict | None:
                if not batch:
                    async with client.get("/api/v1/pairs/next") as response:
                        return (await response.json())["pairs"][0]
                if not waiting:
                    where = {} if after is None else {"after_query_id": after["query"]["id"],
                                                      "after_chunk_id": after["chunk"]["id"]}
                    async with client.get("/api/v1/pairs/next", params={"n": batch, **where}) as response:
                        waiting.extend((await response.json())["pairs"])
                return waiting.pop(0) if waiting else None

            pair = await take(None)
            await asyncio.sleep(random.random() * 2.0)
            beat = time.monotonic()
            while pair is not None and time.monotonic() < stop_at:
                body = {"query_id": pair["query"]["id"], "chunk_id": pair["chunk"]["id"],
                        "grade": random.randint(0, 3), "seen": pair["seen"], "advance": not batch}
                key = {"Idempotency-Key": str(uuid.uuid4())}
                started = time.perf_counter()
                for attempt in range(6):
                    try:
                        async with client.post("/api/v1/labels", json=body, headers=key) as response:
                            status, data = response.status, await response.json()
                        break
                    except (TimeoutError, aiohttp.ClientError) as exc:
                        retries += 1
                        if attempt == 5:
                            errors.append(repr(exc))
                            return
                        await asyncio.sleep(0.2 * 2 ** attempt)
                times.append(((time.perf_counter() - started) * 1000, time.monotonic() > arrived_by + 2))
                if status != 201:
                    errors.append(f"{status} {str(data)[:120]}")
                    return
                mine.append(data["event_id"])
                pair = await take(pair) if batch else data["next"]
                beat += 2.0
                await asyncio.sleep(max(0.0, beat - time.monotonic()))

    async def sample() -> None:
        while time.monotonic() < stop_at + 5:
            peak["rss"] = max(peak["rss"], rss_mb(server_pid))
            await asyncio.sleep(0.5)

    sampler = asyncio.create_task(sample())
    cpu_before = cpu_seconds(server_pid)
    await asyncio.gather(*(one(t) for t in tokens))
    cpu = cpu_seconds(server_pid) - cpu_before
    sampler.cancel()
    return {"times": [t for t, _ in times], "settled": [t for t, after in times if after],
            "acknowledged": acknowledged, "errors": errors, "retries": retries, "rss": peak["rss"],
            "cpu": cpu}


def lost_and_doubled(db: str, acknowledged: dict[str, list[int]]) -> tuple[int, int]:
    from sqlalchemy import func, select

    from ragjudge.services.project.database import Project
    from ragjudge.store.schema import Label

    with Project.open(db) as project, project.read() as session:
        rows = session.execute(select(Label.id, Label.annotator).where(
            Label.source == "web", Label.annotator.in_(list(acknowledged)))).all()
        per_pair = session.execute(select(func.count()).select_from(
            select(Label.annotator, Label.query_id, Label.chunk_id).where(
                Label.source == "web", Label.annotator.in_(list(acknowledged)))
            .group_by(Label.annotator, Label.query_id, Label.chunk_id)
            .having(func.count() > 1).subquery())).scalar()
    stored = {int(i) for i, _ in rows}
    acked = {i for ids in acknowledged.values() for i in ids}
    return len(acked - stored), len(stored - acked) + int(per_pair or 0)


# -- connections that never log in -----------------------------------------------------------


async def idle_connections(port: int, count: int, served: Served, token: str) -> dict:
    import httpx

    before = rss_mb(served.process.pid)
    held: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    refused = 0
    for i in range(count):
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            refused += 1
            continue
        if i % 2:
            writer.write(b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            await writer.drain()
        held.append((reader, writer))
    await asyncio.sleep(1.0)
    during = rss_mb(served.process.pid)
    processes = len(children(served.process.pid))
    async with httpx.AsyncClient(base_url=served.url.rstrip("/"), timeout=30,
                                 headers={"Authorization": f"Bearer {token}"}) as client:
        pair = (await client.get("/api/v1/pairs/next")).json()["pairs"][0]
        started = time.perf_counter()
        response = await client.post("/api/v1/labels", headers={"Idempotency-Key": str(uuid.uuid4())},
                                     json={"query_id": pair["query"]["id"], "chunk_id": pair["chunk"]["id"],
                                           "grade": 1, "seen": pair["seen"]})
        label_ms = (time.perf_counter() - started) * 1000
    await asyncio.sleep(10.0)
    still = 0
    for reader, writer in held:
        try:
            data = await asyncio.wait_for(reader.read(65536), 0.01)
            closed = data == b"" or reader.at_eof()
            if not closed:
                data = await asyncio.wait_for(reader.read(65536), 0.01)
                closed = reader.at_eof()
        except (TimeoutError, ConnectionError):
            closed = False
        still += 0 if closed else 1
        writer.close()
    return {"opened": len(held), "refused": refused, "rss before": before, "rss during": during,
            "processes": processes, "label ms": label_ms, "label status": response.status_code,
            "still open after 10 s": still}


async def relay_idle(served: Served, count: int) -> dict:
    import websockets

    before = len(served.sessions())
    sockets = []
    for _ in range(count):
        try:
            sockets.append(await websockets.connect(served.url.replace("http", "ws") + "ws?width=80&height=24"))
        except Exception:  # noqa: BLE001 - a refusal is a figure here
            break
    await asyncio.sleep(6.0)  # the app processes start
    pids = served.sessions()
    memory = sum(rss_mb(pid) for pid in pids)
    for each in sockets:
        await each.close()
    return {"opened": len(sockets), "processes": len(pids) - before, "rss": memory}


def run_async(coroutine):
    """Run ``coroutine`` on a thread of its own (Playwright's sync API holds this thread's loop)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


# -- the report -----------------------------------------------------------------------------


def stats(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.1f} / {percentile(values, 0.95):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--browsers", type=int, default=8)
    parser.add_argument("--think", type=float, default=0.5,
                        help="seconds a person reads before the next key (both servers)")
    parser.add_argument("--annotators", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--arrive", type=float, default=10.0,
                        help="the annotators arrive over this many seconds at the start")
    parser.add_argument("--api", default="next,batch",
                        help="how the annotators take pairs: next (each label's answer brings the "
                             "next pair), batch (20 at a time, labels posted without the next)")
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--relay-idle", type=int, default=16)
    parser.add_argument("--skip-relay", action="store_true", help="measure the web server only")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        sys.exit(f"no Chromium at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    people = 2 + 2 * args.browsers + 2 * args.annotators
    print(f"demo project; {os.cpu_count()} CPUs (load {os.getloadavg()[0]:.1f}); browsers, "
          "clients and server on this machine", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        db, tokens = build_project(Path(folder), people)
        web_tokens = iter(tokens[: 1 + args.browsers])
        relay_tokens = iter(tokens[1 + args.browsers: 2 + 2 * args.browsers])  # fresh queues
        api_tokens = tokens[2 + 2 * args.browsers:]
        results: dict[str, object] = {}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            web = start(WEB, db)
            try:
                base_rss = rss_mb(web.process.pid)
                results["web"] = web_browsers(browser, web.url.rstrip("/"), web_tokens, args.keys,
                                              args.rounds, args.browsers, args.think)
                results["web rss after browsers"] = rss_mb(web.process.pid)
                results["web rss start"] = base_rss
                print("web pages in browsers: done", flush=True)
            finally:
                web.stop()
            half = len(api_tokens) // 2
            for mode, batch, people in (("next", 0, api_tokens[:half]), ("batch", 20, api_tokens[half:])):
                if mode not in args.api:
                    continue
                web = start(WEB, db)  # a server of its own: its memory is these annotators'
                try:
                    done = run_async(annotators(web.url.rstrip("/"), people[: args.annotators],
                                                args.seconds, web.process.pid, args.arrive, batch))
                    done["lost, doubled"] = lost_and_doubled(db, done["acknowledged"])
                    results[f"annotators {mode}"] = done
                    print(f"annotators through the API ({mode}): done", flush=True)
                    if mode == args.api.split(",")[-1]:
                        results["idle"] = run_async(idle_connections(web.port, args.idle, web, api_tokens[-1]))
                finally:
                    web.stop()
            if not args.skip_relay:
                relay = start(RELAY, db)
                try:
                    results["relay"] = relay_browsers(browser, relay, relay_tokens, args.keys, args.rounds,
                                                      args.browsers, args.think)
                    time.sleep(2.0)
                    results["relay idle"] = run_async(relay_idle(relay, args.relay_idle))
                finally:
                    relay.stop()
            browser.close()
    report(results, args)


def report(results: dict, args: argparse.Namespace) -> None:
    web = results["web"]
    relay = results.get("relay", {})
    n = args.browsers
    print()
    print("keypress -> label committed -> next pair on the page (median / p95 ms)")
    print(f"{'':<34}{'web (one process)':>20}{'terminal relay':>18}{'target':>16}")
    print(f"{'1 browser':<34}{stats(web['one']):>20}{stats(relay.get('one', [])):>18}{'30 / 80':>16}")
    print(f"{'1 browser, painted':<34}{stats(web['one painted']):>20}{'':>18}")
    print(f"{f'{n} browsers at once':<34}{stats(web['many']):>20}{stats(relay.get('many', [])):>18}{'p95 150':>16}")
    print(f"{f'{n} browsers at once, painted':<34}{stats(web['many painted']):>20}")
    rss_start, rss_after = results["web rss start"], results["web rss after browsers"]
    people = 1 + n
    print()
    print("memory on the server")
    print(f"  web: one process, {rss_start:.0f} MB at start, {rss_after:.0f} MB after {people} people judged "
          f"({(rss_after - rss_start) / people:+.1f} MB per person)")
    if relay:
        per_tab = relay["rss many"]
        print(f"  relay: one app process per tab, {statistics.mean(per_tab):.0f} MB each "
              f"({sum(per_tab):.0f} MB for {len(per_tab)} tabs)")
    for mode, what in (("next", "each label's answer bringing the next pair"),
                       ("batch", "pairs taken 20 at a time")):
        ann = results.get(f"annotators {mode}")
        if ann is None:
            continue
        lost, doubled = ann["lost, doubled"]
        times, settled = ann["times"], ann["settled"]
        print()
        print(f"{args.annotators} annotators arriving over {args.arrive:.0f} s, a label every 2 s each for "
              f"{args.seconds:.0f} s, through the API, {what}")
        print(f"  labels acknowledged {len(times):,}; p50 {percentile(times, 0.5):.1f} ms, p99 "
              f"{percentile(times, 0.99):.1f} ms (target 100); once all had arrived: p50 "
              f"{percentile(settled, 0.5):.1f} ms, p99 {percentile(settled, 0.99):.1f} ms; "
              f"lost {lost}, doubled {doubled} (target 0, 0); server RSS at most {ann['rss']:.0f} MB "
              f"(target 300); server CPU {1000 * ann['cpu'] / max(len(times), 1):.1f} ms a label; "
              f"retries {ann['retries']}; errors {len(ann['errors'])}"
              f"{': ' + ann['errors'][0] if ann['errors'] else ''}")
    idle = results.get("idle")
    if idle is not None:
        print()
        print(f"{args.idle} connections that never log in (web)")
        print(f"  opened {idle['opened']} (refused {idle['refused']}); app processes started "
              f"{idle['processes']}; sessions taken 0; server RSS {idle['rss before']:.0f} -> "
              f"{idle['rss during']:.0f} MB; a label meanwhile {idle['label ms']:.1f} ms "
              f"(HTTP {idle['label status']}); still held by the server after 10 s: "
              f"{idle['still open after 10 s']}")
    if "relay idle" in results:
        r = results["relay idle"]
        print(f"{args.relay_idle} websockets that never log in (relay)")
        print(f"  opened {r['opened']}; app processes started {r['processes']} ({r['rss']:.0f} MB); "
              "each one takes a slot of --max-sessions (64) until its tab closes")


if __name__ == "__main__":
    main()
