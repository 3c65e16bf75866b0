"""Benchmark of ``ragjudge serve`` in a real browser (not a pytest test): headless Chromium
through Playwright on the demo project, server and browser on this machine.

    PYTHONPATH=. python tests/bench/bench_serve.py [--keys 60] [--rounds 25] [--tabs 1,2,4,8]

Prints:

- keypress in the browser -> label committed -> next pair on the page: median and p95 over
  ``--keys`` grades in one tab (timed in the page: the keydown event to the first websocket
  frame that shows the label counted, which the app sends only after the commit);
- memory per open tab: the resident set (RSS) of each tab's app process on the server;
- with 1, 2, 4, 8 tabs judging at once (every tab presses a key in the same moment, the worst
  case of people judging side by side), the median and p95 of the same latency, and whether
  p95 stays under 100 ms.

The browser runs on the same machine as the server here, so the figures include its CPU.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the kit modules (chromium.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))

from browserkit import CHROMIUM, DEADLINE, Tab, start_server

RECORDER = r"""
(() => {
  const frames = [];
  const keys = [];
  window.__rjbench = { frames, keys };
  const Native = window.WebSocket;
  const strip = /\x1b\[[0-9;?]*[ -\/]*[@-~]/g;
  function Recording(url, protocols) {
    const socket = protocols === undefined ? new Native(url) : new Native(url, protocols);
    socket.addEventListener("message", (event) => {
      if (typeof event.data !== "string") {
        const text = new TextDecoder().decode(new Uint8Array(event.data)).replace(strip, "");
        frames.push([performance.now(), text]);
      }
    });
    return socket;
  }
  Recording.prototype = Native.prototype;
  window.WebSocket = Recording;
  document.addEventListener("keydown", () => keys.push(performance.now()), true);
})();
"""

FIND = """
(target) => {
  const b = window.__rjbench;
  const pressed = b.keys[b.keys.length - 1];
  for (const [at, text] of b.frames) {
    if (at >= pressed && text.includes(target)) return at - pressed;
  }
  return null;
}
"""


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class BenchTab(Tab):
    def __init__(self, browser, url: str) -> None:
        self.counted = 0
        super().__init__(browser, url, init_script=RECORDER)

    def start(self, token: str) -> None:
        self.log_in(token)
        mark = self.press("Enter")
        self.wait_for_text("of your queue (0/", mark)
        self.wait_for_text("Please read the judging guidelines", mark)  # the demo has guidelines,
        self.press("Enter")  # shown once to each new annotator

    def press_grade(self, key: str) -> None:
        self.page.evaluate("() => { window.__rjbench.frames.length = 0; }")
        self.page.keyboard.press(key)
        self.counted += 1

    def latency(self) -> float:
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            found = self.page.evaluate(FIND, f"of your queue ({self.counted}/")
            if found is not None:
                return float(found)
            self.page.wait_for_timeout(5)
        raise AssertionError(f"label {self.counted} never shown")


def build_project(folder: Path, people: int) -> tuple[str, list[str]]:
    db = str(folder / "demo.db")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    run = [sys.executable, "-m", "ragjudge", "--db", db]
    subprocess.run([*run, "demo", "--no-tui"], check=True, env=env, stdout=subprocess.DEVNULL)
    from ragjudge.services.access import roster
    from ragjudge.services.access.visibility import access_for
    from ragjudge.services.project.database import Project

    tokens = []
    with Project.open(db) as project:
        builder = access_for(project, "bench")  # the demo has no lead: anyone named sets it up
        for i in range(people):
            tokens.append(roster.add(project, f"bench{i}", token=True, access=builder)[1])
    return db, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=60, help="grades timed in one tab")
    parser.add_argument("--rounds", type=int, default=25, help="grades per tab with several tabs")
    parser.add_argument("--tabs", default="1,2,4,8", help="numbers of tabs judging at once")
    args = parser.parse_args()
    tab_counts = [int(n) for n in args.tabs.split(",")]
    if not Path(CHROMIUM).exists():
        sys.exit(f"no Chromium at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        db, tokens = build_project(Path(folder), 1 + sum(tab_counts))
        server = start_server(db)
        print(f"ragjudge serve on the demo project; {os.cpu_count()} CPUs; browser on the same machine")
        try:
            with sync_playwright() as playwright:
                launch_args = ["--no-sandbox"] if os.geteuid() == 0 else []
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=launch_args)
                next_token = iter(tokens)

                # one tab: keypress -> committed -> next pair
                tab = BenchTab(browser, server.url)
                tab.start(next(next_token))
                times = []
                for i in range(args.keys):
                    tab.press_grade("0123"[i % 4])
                    times.append(tab.latency())
                print(f"\none tab, {args.keys} grades: keypress -> label committed -> next pair shown: "
                      f"median {statistics.median(times):.1f} ms, p95 {percentile(times, 0.95):.1f} ms")
                tab.close()

                # several tabs at once
                print("\ntabs  median ms  p95 ms  p95<100ms  RSS per tab (MB)")
                for count in tab_counts:
                    tabs = [BenchTab(browser, server.url) for _ in range(count)]
                    for each in tabs:
                        each.start(next(next_token))
                    sessions = server.sessions()
                    memory = [rss_mb(pid) for pid in sessions]
                    times = []
                    for i in range(args.rounds):
                        for each in tabs:
                            each.press_grade("0123"[i % 4])
                        times.extend(each.latency() for each in tabs)
                    p95 = percentile(times, 0.95)
                    print(f"{count:>4}  {statistics.median(times):>9.1f}  {p95:>6.1f}  "
                          f"{'yes' if p95 < 100 else 'no':>9}  "
                          f"{statistics.mean(memory):.0f} (of {len(memory)} processes)")
                    for each in tabs:
                        each.close()
                    time.sleep(1.5)  # the closed tabs' processes end
                browser.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
