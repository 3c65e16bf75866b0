"""A command's help starts in a blink: ``ragjudge --help`` and every ``ragjudge COMMAND --help``
load neither the database layer (SQLAlchemy, ``ragjudge.store``) nor numpy, pyarrow or the app
(Textual). Each command module imports what a command needs inside the command, so a service
imported at a module's top would load for every help and every other command of that module;
these tests catch it, and ``tests/bench/bench_startup.py`` says what it costs. An evaluation of
files loads the measures it computes and not the sampled estimators, the RAG and answer
measures or the paired tests (``tests/bench/bench_eval.py`` times it against pytrec_eval)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

HEAVY = ("sqlalchemy", "numpy", "pyarrow", "textual", "ragjudge.store")
"""What no help needs: the database layer, the arrays and the app."""

ENV = {k: v for k, v in os.environ.items() if k != "RAGJUDGE_DB"}

EVERY_HELP = """
import contextlib, io, sys
from ragjudge.cli import COMMANDS, main

heavy = {heavy!r}
for args in [["--help"]] + [[name, "--help"] for name in COMMANDS]:
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(args)
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in heavy or m.startswith(heavy))
    print(" ".join(args), code, ",".join(loaded))
"""


def loaded_by_every_help() -> list[tuple[str, str, str]]:
    """(command line, exit code, heavy modules loaded so far) after each help, in one process:
    modules only accumulate, so the first line naming a module is the help that loaded it."""
    out = subprocess.run([sys.executable, "-c", EVERY_HELP.format(heavy=HEAVY)], env=ENV,
                         capture_output=True, text=True, check=True)
    rows = []
    for line in out.stdout.splitlines():
        *words, code, loaded = line.split(" ")
        rows.append((" ".join(words), code, loaded))
    return rows


@pytest.mark.slow
def test_no_help_loads_the_database_layer_numpy_or_the_app():
    rows = loaded_by_every_help()
    assert len(rows) > 20, rows  # the top-level help and every command's
    codes = {line: code for line, code, _ in rows}
    assert set(codes.values()) == {"0"}, codes
    first = next(((line, loaded) for line, _, loaded in rows if loaded), None)
    assert first is None, f"'ragjudge {first[0]}' loaded {first[1]}"


@pytest.mark.parametrize("args", [["--help"], ["status", "--help"], ["eval", "--help"]])
def test_the_command_as_typed_imports_no_heavy_module(args):
    # the real entry point (python -m ragjudge), its imports as the interpreter reports them
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "ragjudge", *args], env=ENV,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Usage" in out.stdout
    imported = {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines()
                if line.startswith("import time:") and "cumulative" not in line}
    assert "ragjudge.cli" in imported  # the report is read right
    heavy = sorted(m for m in imported if m.split(".")[0] in HEAVY or m.startswith(HEAVY))
    assert heavy == []


FILE_EVAL_SKIPS = (
    "ragjudge.metrics.sampled", "ragjudge.services.scoring.sampled", "ragjudge.metrics.rag",
    "ragjudge.metrics.ragmeasures", "ragjudge.metrics.entities",
    "ragjudge.metrics.answers", "ragjudge.metrics.diversity", "ragjudge.metrics.significance",
    "ragjudge.metrics.corrections", "ragjudge.services.scoring.rag", "typer", "click", "rich",
    *(name for name in HEAVY if name != "numpy"),
)
"""What an evaluation of small files with the measures of a ranking does without: the sampled
estimators, the RAG and answer measures, the bootstrap and the paired tests, typer and Rich
(JSON output), pyarrow (a file under its size) and the database layer."""


FILE_EVAL = """
import sys
from ragjudge.cli import main

code = main({args!r})
print(code, " ".join(sorted(sys.modules)), file=sys.stderr)
"""


def _file_eval_args(tmp_path) -> list[str]:
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("q1 0 a 2\nq1 0 b 0\nq2 0 c 1\n", encoding="utf-8")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 a 1 2.5 t\nq1 Q0 c 2 1.25 t\nq2 Q0 c 1 0.5 t\n", encoding="utf-8")
    return ["eval", "--qrels", str(qrels), "--run", str(run), "--format", "json"]


def test_a_file_evaluation_imports_only_the_measures_it_computes(tmp_path):
    # the modules as sys.modules holds them after the command (-X importtime does not report
    # what importlib.import_module loads, as the registry loads the measures' modules)
    args = _file_eval_args(tmp_path)
    for name in ("P@1", "R@5", "AP", "RR", "nDCG@10", "Rprec"):
        args += ["-m", name]
    out = subprocess.run([sys.executable, "-c", FILE_EVAL.format(args=args)], env=ENV,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert '"P@1": 1.0' in out.stdout  # q1 ranks its relevant a first, q2 its c
    code, names = out.stderr.strip().splitlines()[-1].split(" ", 1)
    modules = set(names.split())
    assert code == "0"
    assert {"ragjudge.metrics.measures", "ragjudge.services.scoring.evaluation"} <= modules
    loaded = sorted(m for m in modules if m in FILE_EVAL_SKIPS or m.split(".")[0] in FILE_EVAL_SKIPS)
    assert loaded == []


BLAS_CHECK = """
import os, sys
from ragjudge.cli import main

assert "numpy" not in sys.modules
code = main({args!r})
print(code, "numpy" in sys.modules, os.environ.get("OPENBLAS_THREAD_TIMEOUT"), file=sys.stderr)
"""


@pytest.mark.parametrize(("given", "kept"), [(None, "20"), ("10", "10")])
def test_numpy_loads_with_openblas_workers_that_sleep_soon(tmp_path, given, kept):
    # OpenBLAS reads OPENBLAS_THREAD_TIMEOUT when numpy loads: the command sets it first,
    # unless the environment says otherwise
    env = {k: v for k, v in ENV.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    if given is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = given
    out = subprocess.run([sys.executable, "-c", BLAS_CHECK.format(args=_file_eval_args(tmp_path))],
                         env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stderr.strip().splitlines()[-1].split() == ["0", "True", kept]
