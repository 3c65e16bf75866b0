"""Store benchmark (not a test): label writes per second with 1, 4 and 8 concurrent writers on
SQLite and PostgreSQL, and the import of a large TREC run with its peak memory.

    python tests/bench/bench_store.py                       # everything, 10 M line run
    python tests/bench/bench_store.py --labels 500 --run-lines 1000000
    python tests/bench/bench_store.py --skip-import --pg postgresql+psycopg://...

Writers are separate processes (forked), each an annotator recording labels through
``ragjudge.services.labels.events.record_label`` — the call the app makes on a keypress — so every
label is its own committed transaction (SQLite: WAL, synchronous=FULL, BEGIN IMMEDIATE;
PostgreSQL: the server's defaults, synchronous_commit on). PostgreSQL runs against
``--pg``/``RAGJUDGE_TEST_PG``, or a throwaway server started with ``.ci/postgres.sh``.

The run import goes through the real command line (``ragjudge import run FILE
--create-missing``) in a child process; peak memory is that process's maximum resident set size.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))


# -- writers -------------------------------------------------------------------------------------


def _writer(db: str, annotator: str, n: int, offset: int, go_fd: int, out_fd: int) -> None:
    from ragjudge.services.labels.events import record_label
    from ragjudge.services.project.database import Project

    project = Project.open(db)
    pairs = [(f"q{i}", f"c{j:02d}") for i in range(1, 6) for j in range(1, 21)]
    record_label(project, annotator=annotator, query_id="q1", chunk_id="c01", grade=0)  # warm up
    os.read(go_fd, 1)
    latencies = []
    for k in range(n):
        q, c = pairs[(k * 7 + offset) % len(pairs)]
        started = time.perf_counter()
        record_label(project, annotator=annotator, query_id=q, chunk_id=c, grade=k % 4)
        latencies.append(time.perf_counter() - started)
    os.write(out_fd, (json.dumps(latencies) + "\n").encode())
    project.close()


def writes_per_second(db: str, writers: int, labels_each: int) -> dict:
    go_read, go_write = os.pipe()
    pids, outs = [], []
    for k in range(writers):
        out_read, out_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(go_write)
                os.close(out_read)
                _writer(db, f"bench-{k}", labels_each, k, go_read, out_write)
            except BaseException as exc:  # noqa: BLE001
                os.write(out_write, (json.dumps({"error": repr(exc)}) + "\n").encode())
                code = 1
            finally:
                os._exit(code)
        os.close(out_write)
        pids.append(pid)
        outs.append(out_read)
    time.sleep(0.5 + 0.1 * writers)  # let every writer open the project and warm up
    os.close(go_read)
    started = time.perf_counter()
    os.close(go_write)
    results = []
    for fd in outs:
        data = b""
        while chunk := os.read(fd, 1 << 20):
            data += chunk
        os.close(fd)
        results.append(json.loads(data))
    elapsed = time.perf_counter() - started
    for pid in pids:
        os.waitpid(pid, 0)
    errors = [r["error"] for r in results if isinstance(r, dict)]
    if errors:
        raise RuntimeError(f"writers failed: {errors}")
    latencies = sorted(x for r in results for x in r)
    total = writers * labels_each
    return {
        "writers": writers,
        "labels": total,
        "seconds": round(elapsed, 3),
        "labels_per_s": round(total / elapsed, 1),
        "p50_ms": round(1000 * latencies[len(latencies) // 2], 2),
        "p99_ms": round(1000 * latencies[int(len(latencies) * 0.99)], 2),
        "max_ms": round(1000 * latencies[-1], 2),
    }


def bench_writers(make_db, backend: str, labels_each: int, counts=(1, 4, 8)) -> list[dict]:
    from projectkit import make_small_project

    rows = []
    for writers in counts:
        db, cleanup = make_db()
        try:
            make_small_project(db).close()
            row = writes_per_second(db, writers, labels_each)
            row["backend"] = backend
            rows.append(row)
            print(f"  {backend:10s} {writers} writer(s): {row['labels_per_s']:8,.0f} labels/s  "
                  f"(p50 {row['p50_ms']} ms, p99 {row['p99_ms']} ms, max {row['max_ms']} ms)", flush=True)
        finally:
            cleanup()
    return rows


def sqlite_dbs(folder: Path):
    def make():
        path = folder / f"bench-{uuid.uuid4().hex[:8]}.db"

        def cleanup() -> None:
            for suffix in ("", "-wal", "-shm"):
                Path(str(path) + suffix).unlink(missing_ok=True)

        return str(path), cleanup

    return make


def pg_dbs(base: str):
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    def make():
        name = f"bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(base, isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))

        def cleanup() -> None:
            with admin.connect() as c:
                c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()

        return make_url(base).set(database=name).render_as_string(hide_password=False), cleanup

    return make


# -- run import ----------------------------------------------------------------------------------


def write_run(path: Path, lines: int, depth: int = 1000) -> float:
    """A TREC run of ``lines`` lines: lines/depth queries, each with ``depth`` distinct chunks
    of a corpus of 1,000,000 chunk ids, scores descending. Written with numpy in blocks."""
    import numpy as np

    started = time.perf_counter()
    queries = lines // depth
    with open(path, "w", encoding="ascii") as out:
        block = 1000
        for q0 in range(0, queries, block):
            qn = min(block, queries - q0)
            qids = np.repeat(np.arange(q0, q0 + qn), depth)
            ranks = np.tile(np.arange(1, depth + 1), qn)
            # 104729 is prime to 10**6, so a query's chunks are distinct
            chunks = (qids * 7919 + ranks * 104729) % 1_000_000
            scores = 100.0 - ranks * 0.01
            text = "\n".join(
                f"Q{q} Q0 D{c} {r} {s:.2f} bench" for q, c, r, s in
                zip(qids.tolist(), chunks.tolist(), ranks.tolist(), scores.tolist())
            )
            out.write(text + "\n")
    return time.perf_counter() - started


def bench_import(folder: Path, lines: int) -> dict:
    run = folder / f"run-{lines}.trec"
    if not run.exists() or sum(1 for _ in run.open("rb")) != lines:
        print(f"  writing a {lines:,}-line run to {run} ...", flush=True)
        print(f"  ({write_run(run, lines):.1f} s)", flush=True)
    db = folder / f"import-{uuid.uuid4().hex[:8]}.db"
    subprocess.run([sys.executable, "-m", "ragjudge", "--db", str(db), "init"], check=True,
                   capture_output=True)
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ragjudge", "--db", str(db), "import", "run",
                             str(run), "--name", "big", "--create-missing"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    stdout, stderr = proc.stdout.read(), proc.stderr.read()
    proc.returncode = os.waitstatus_to_exitcode(status)
    row = {
        "lines": lines,
        "file_mb": round(run.stat().st_size / 1e6, 1),
        "seconds": round(elapsed, 1),
        "lines_per_s": round(lines / elapsed),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # Linux: kilobytes
        "db_mb": round(db.stat().st_size / 1e6, 1) if db.exists() else None,
        "exit": proc.returncode,
        "message": " ".join(stderr.split())[-300:],
    }
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    print(f"  import of {lines:,} lines: {row['seconds']} s ({row['lines_per_s']:,} lines/s, "
          f"{row['cpu_seconds']} s CPU), "
          f"peak RSS {row['peak_rss_mb']} MB, exit {row['exit']}: {row['message']}", flush=True)
    del stdout
    return row


# -- main ----------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", type=int, default=1000, help="labels per writer (default 1000)")
    parser.add_argument("--run-lines", type=int, default=10_000_000, help="lines of the run to import")
    parser.add_argument("--pg", default=os.environ.get("RAGJUDGE_TEST_PG"), help="PostgreSQL URL")
    parser.add_argument("--no-pg", action="store_true", help="skip PostgreSQL")
    parser.add_argument("--skip-import", action="store_true")
    parser.add_argument("--skip-writers", action="store_true")
    parser.add_argument("--folder", default=None, help="where files go (default: a temp folder)")
    parser.add_argument("--json", default=None, help="write the figures to this JSON file")
    args = parser.parse_args()

    folder = Path(args.folder or tempfile.mkdtemp(prefix="ragjudge-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"ragjudge store benchmark — {platform.platform()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, files in {folder}", flush=True)
    figures: dict = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count()}}

    started_pg = None
    if not args.skip_writers:
        print("label writes (each its own committed transaction, through record_label):", flush=True)
        figures["writers"] = bench_writers(sqlite_dbs(folder), "sqlite", args.labels)
        if not args.no_pg:
            pg = args.pg
            if not pg:
                out = subprocess.run(["bash", str(ROOT / ".ci" / "postgres.sh"), "start"],
                                     capture_output=True, text=True)
                if out.returncode == 0:
                    pg = started_pg = out.stdout.strip()
                else:
                    print(f"  postgresql: skipped (could not start a server: {out.stderr.strip()})")
            if pg:
                try:
                    figures["writers"] += bench_writers(pg_dbs(pg), "postgresql", args.labels)
                finally:
                    if started_pg:
                        subprocess.run(["bash", str(ROOT / ".ci" / "postgres.sh"), "stop", started_pg],
                                       env={**os.environ, "RAGJUDGE_TEST_PG": started_pg},
                                       capture_output=True)
    if not args.skip_import:
        print("run import (ragjudge import run --create-missing, one transaction):", flush=True)
        figures["import"] = bench_import(folder, args.run_lines)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures["bench_process_peak_rss_mb"] = round(own, 1)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
