"""``ragjudge import run FILE`` of a TREC run into a SQLite project takes a lean path: the project
opened with the standard library (``ragjudge.services.project.litewrite.LiteWriteProject``),
no typer, SQLAlchemy or pydantic. It must be indistinguishable from the typer command: the same
stdout, stderr and exit code, and the same rows in the project afterwards (but the times they
were written), for imports that succeed and for every kind of refusal. Each case runs both ways
(``RAGJUDGE_LEAN=0`` forces typer), each on its own copy of the same project.
"""

from __future__ import annotations

import gzip
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from projectkit import make_small_project
from ragjudge.cli import common, main
from ragjudge.cli.lean import lean_call

SUBPROCESS_ENV_DROP = ("RAGJUDGE_DB", "RAGJUDGE_LEAN", "RAGJUDGE_BUSY_TIMEOUT_MS")


@pytest.fixture(autouse=True)
def _no_project(monkeypatch):
    monkeypatch.setitem(common.CLI_STATE, "db", None)
    for name in SUBPROCESS_ENV_DROP:
        monkeypatch.delenv(name, raising=False)


def run_lines(queries: int, depth: int, *, seed: int = 0, prefix: str = "c") -> list[str]:
    """A run of ``queries`` x ``depth``: chunks c01.. (the project's) and some it lacks; scores
    tie now and then (trec_eval's order settles them by chunk id)."""
    lines = []
    for q in range(1, queries + 1):
        for rank in range(1, depth + 1):
            chunk = f"{prefix}{(q * 7 + rank * 3 + seed) % 40 + 1:02d}"
            lines.append(f"q{q} Q0 {chunk} {rank} {(depth - rank) // 2 + seed / 10:.2f} lean")
    return lines


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A small project (queries q1-q5, chunks c01-c20, an old run 'bm25' kept as rows only) and
    run files: good, gzipped, with unknown ids, broken."""
    d = tmp_path_factory.mktemp("lean-import")
    make_small_project(str(d / "template.db")).close()

    def write(name: str, lines: list[str]) -> None:
        (d / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")

    good = run_lines(5, 30)  # chunks c21-c40 are not in the project
    write("good.trec", good)
    (d / "zipped.run.gz").write_bytes(gzip.compress("".join(line + "\n" for line in good).encode()))
    write("other.trec", run_lines(5, 30, seed=1))
    write("known.txt", [line for line in run_lines(5, 30) if int(line.split()[2][1:]) <= 20])
    write("newquery.trec", run_lines(7, 4))  # q6, q7 are not in the project
    twice = run_lines(2, 5)
    write("twice.trec", [*twice, twice[3].replace(" 4 ", " 9 ")])
    write("badscore.trec", [*run_lines(1, 3), "q2 Q0 c01 1 high lean"])
    write("fields.trec", [*run_lines(1, 3), "q2 Q0 c01 1"])
    write("nul.trec", ["q1 Q0 c01 1 2.0 lean"])
    return d


def cases(d: Path) -> list[list[str]]:
    """Command lines after ``--db DB``: imports that succeed, and refusals of every kind."""
    f = {name: str(d / name) for name in ("good.trec", "zipped.run.gz", "other.trec", "known.txt",
                                          "newquery.trec", "twice.trec", "badscore.trec",
                                          "fields.trec", "nul.trec")}
    return [
        ["import", "run", f["good.trec"], "--create-missing"],
        ["import", "run", f["good.trec"], "--create-missing", "--quiet", "--name", "dense"],
        ["import", "run", f["zipped.run.gz"], "--create-missing", "-q", "--format", "trec"],
        ["import", "run", f["known.txt"]],
        ["import", "run", f["known.txt"], "--name=bm25"],  # another run under bm25's name
        ["import", "run", f["known.txt"], "--name", "bm25", "--replace"],
        ["import", "run", f["good.trec"]],  # unknown chunks, no --create-missing
        ["import", "run", f["newquery.trec"]],  # unknown queries too
        ["import", "run", f["newquery.trec"], "--create-missing", "--format=auto"],
        ["import", "run", f["twice.trec"], "--create-missing"],
        ["import", "run", f["badscore.trec"], "--create-missing"],
        ["import", "run", f["fields.trec"], "--create-missing"],
        ["import", "run", f["nul.trec"], "--name", "   "],
        ["import", "run", f["nul.trec"], "--name", "a\x00b"],
        ["import", "run", f["nul.trec"], "--name", "x" * 256],
    ]


def tables(db: str) -> dict[str, list]:
    """Every row of every table but the times rows were written (which differ between runs)."""
    connection = sqlite3.connect(db)
    try:
        names = [r[0] for r in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        out = {}
        for name in names:
            cursor = connection.execute(f'SELECT * FROM "{name}"')
            keep = [i for i, c in enumerate(cursor.description) if c[0] != "created_at"]
            out[name] = sorted(repr([row[i] for i in keep]) for row in cursor)
        return out
    finally:
        connection.close()


def both(d: Path, tmp_path: Path, capsys, monkeypatch, words: list[str], *,
         then: list[str] | None = None) -> list[tuple]:
    """``words`` run lean and through typer, each on a fresh copy of the project (and ``then``
    after it, when given): the outcomes and the project's rows after."""
    outcomes = []
    for lean in ("1", "0"):
        db = str(tmp_path / f"copy-{lean}.db")
        for suffix in ("", "-wal", "-shm"):
            Path(db + suffix).unlink(missing_ok=True)
        shutil.copy(d / "template.db", db)
        monkeypatch.setenv("RAGJUDGE_LEAN", lean)
        runs = []
        for args in ([words] if then is None else [words, then]):
            full = ["--db", db, *args]
            if lean == "1":
                assert lean_call(full) is not None, args  # the case does test the lean path
            code = main(full)
            captured = capsys.readouterr()
            runs.append((code, captured.out, captured.err.replace(db, "DB")))
        outcomes.append((runs, tables(db)))
    monkeypatch.delenv("RAGJUDGE_LEAN")
    return outcomes


@pytest.mark.slow
def test_lean_import_prints_and_stores_what_the_typer_command_does(folder, tmp_path, capsys, monkeypatch):
    codes = set()
    for words in cases(folder):
        lean, typer_ = both(folder, tmp_path, capsys, monkeypatch, words)
        assert lean == typer_, words
        codes.add(lean[0][0][0])
    assert codes == {0, 2}  # imports that succeed and refusals


@pytest.mark.slow
def test_importing_again_or_over_a_run_is_alike_both_ways(folder, tmp_path, capsys, monkeypatch):
    good, other = str(folder / "good.trec"), str(folder / "other.trec")
    first = ["import", "run", good, "--create-missing", "--name", "r"]
    for then in (first,  # the same file again: nothing changes
                 ["import", "run", other, "--create-missing", "--name", "r"],  # refused
                 ["import", "run", other, "--create-missing", "--name", "r", "--replace"]):
        lean, typer_ = both(folder, tmp_path, capsys, monkeypatch, first, then=then)
        assert lean == typer_, then
    (_, (code, _, err)), _ = lean
    assert code == 0 and "Replaced the earlier run 'r'." in " ".join(err.split())


def test_a_refused_lean_import_changes_nothing(folder, tmp_path, capsys):
    db = str(tmp_path / "refused.db")
    shutil.copy(folder / "template.db", db)
    before = tables(db)
    for name in ("twice.trec", "badscore.trec", "good.trec"):
        args = ["--db", db, "import", "run", str(folder / name)]
        assert lean_call(args) is not None
        assert main(args) == 2
        assert capsys.readouterr().err.startswith("ragjudge: ")
    assert tables(db) == before


@pytest.mark.parametrize("words", [
    ["import", "run", "{folder}/good.trec", "--by", "ana"],
    ["import", "run", "--create-missing", "{folder}/good.trec"],
    ["import", "run", "{folder}/good.trec", "--format", "jsonl"],
    ["import", "run", "{folder}/good.trec", "--bogus"],
    ["import", "run", "{folder}/good.trec", "--name"],
    ["import", "run", "{folder}/good.trec", "--quiet", "--quiet"],
    ["import", "run", "{folder}/missing.trec"],
    ["import", "run", "{folder}"],
    ["import", "run", "-", "--name", "x"],
    ["import", "run", "{folder}/template.db"],  # no run's extension: the format is sniffed
    ["import", "run"],
    ["import", "qrels", "{folder}/good.trec"],
    ["import", "run", "{folder}/good.trec", "--help"],
])
def test_other_import_command_lines_go_to_typer(folder, words):
    args = ["--db", str(folder / "template.db"), *(w.replace("{folder}", str(folder)) for w in words)]
    assert lean_call(args) is None


def test_a_project_a_killed_import_left_goes_to_the_full_path(folder, tmp_path, capsys):
    """The full opening removes what the killed import wrote, then the same session imports."""
    db = str(tmp_path / "left.db")
    shutil.copy(folder / "template.db", db)
    with sqlite3.connect(db) as connection:
        connection.execute("INSERT INTO run_imports (generation, run, replaces, created_at) "
                           "VALUES (7, 'gone', NULL, '2026-01-01 00:00:00.000000')")
        connection.execute("INSERT INTO run_entries (run, generation, query_id, chunk_id, rank, score) "
                           "VALUES ('gone', 7, 'q1', 'c01', 1, 1.0)")
    args = ["--db", db, "import", "run", str(folder / "known.txt")]
    assert lean_call(args) is None
    assert main(args) == 0
    capsys.readouterr()
    left = tables(db)
    assert left["run_imports"] == [] and not any("'gone'" in row for row in left["run_entries"])
    assert lean_call(args) is not None  # clean again: the next import is lean


@pytest.mark.slow
def test_a_lean_import_loads_neither_typer_nor_sqlalchemy(folder, tmp_path):
    db = str(tmp_path / "light.db")
    shutil.copy(folder / "template.db", db)
    code = (
        "import sys\n"
        "from ragjudge.cli import main\n"
        f"code = main(['--db', {db!r}, 'import', 'run', {str(folder / 'good.trec')!r}, '--create-missing'])\n"
        "heavy = ('typer', 'click', 'sqlalchemy', 'pydantic', 'textual', 'alembic')\n"
        "loaded = sorted({n.split('.')[0] for n in sys.modules if n.split('.')[0] in heavy}"
        " | {n for n in sys.modules if n in ('ragjudge.store.schema', 'ragjudge.models')})\n"
        "print(code, loaded, file=sys.stderr)\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k not in SUBPROCESS_ENV_DROP}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    status, _, loaded = done.stderr.strip().splitlines()[-1].partition(" ")
    assert status == "0", done.stderr
    assert loaded == "[]"
    assert tables(db)["runs"][-1].startswith("['good', ")
