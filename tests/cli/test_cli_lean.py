"""``ragjudge eval`` on files, and ``status`` and ``eval`` on a SQLite project, take a lean path
without typer (``ragjudge.cli.lean``; the project opened with the standard library:
``ragjudge.services.project.lite``); it must be indistinguishable from the typer command: the same
stdout, stderr and exit code for every command line, good or bad. Each case runs both ways
(``RAGJUDGE_LEAN=0`` forces typer).

Also here: the table of commands in ``ragjudge.cli`` is the set of commands the modules
register, and a run imports only what its command needs.
"""

from __future__ import annotations

import errno
import gzip
import inspect
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ragjudge.cli import COMMANDS, main
from ragjudge.cli import common
from ragjudge.cli.lean import lean_call, parse_eval

SUBPROCESS_ENV = {k: v for k, v in os.environ.items() if k != "RAGJUDGE_DB"}


@pytest.fixture(autouse=True)
def _no_project(monkeypatch):
    monkeypatch.setitem(common.CLI_STATE, "db", None)
    monkeypatch.delenv("RAGJUDGE_DB", raising=False)
    monkeypatch.delenv("RAGJUDGE_LEAN", raising=False)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    """Qrels, runs (TREC, gzip, JSONL), a queries file and broken inputs."""
    d = tmp_path_factory.mktemp("lean")
    rng = np.random.default_rng(7)
    qrels, run_a, run_b = [], [], []
    for q in range(30):
        qid = f"q{q:02d}"
        chunks = [f"c{j}" for j in range(25)]
        if q != 3:  # q03: in the runs only
            for cid in rng.choice(chunks, 8, replace=False):
                qrels.append(f"{qid} 0 {cid} {int(rng.integers(0, 4))}")
        if q != 5:  # q05: in the qrels only
            for lines in (run_a, run_b):
                picked = rng.choice(chunks, 12, replace=False)
                for rank, cid in enumerate(picked, start=1):
                    lines.append(f"{qid} Q0 {cid} {rank} {float(rng.integers(0, 8)) / 2} t")
    out = {}

    def write(name: str, text: str) -> None:
        (d / name).write_text(text, encoding="utf-8")
        out[name] = str(d / name)

    write("qrels.trec", "\n".join(qrels) + "\n")
    write("a.trec", "\n".join(run_a) + "\n")
    write("b.run", "\n".join(run_b) + "\n")
    (d / "a.trec.gz").write_bytes(gzip.compress(("\n".join(run_a) + "\n").encode()))
    out["a.trec.gz"] = str(d / "a.trec.gz")
    write("c.jsonl", "".join(json.dumps({"query_id": line.split()[0], "chunk_id": line.split()[2],
                                         "score": float(line.split()[4])}) + "\n"
                             for line in run_b))
    write("qrels.jsonl", "".join(json.dumps({"query_id": line.split()[0], "chunk_id": line.split()[2],
                                             "grade": int(line.split()[3])}) + "\n" for line in qrels))
    write("queries.jsonl", "".join(json.dumps({"id": f"q{q:02d}", "text": "t",
                                               **({"category": "even" if q % 2 == 0 else "odd"}
                                                  if q % 7 else {}),
                                               "meta": {"lang": "de" if q % 3 else "en"}}) + "\n"
                                   for q in range(30)))
    write("bad_fields.trec", "q1 Q0 c1 1 2.0 t\nq1 Q0 c2 2 1.0\n")
    write("bad_score.trec", "q1 Q0 c1 1 2.0 t\nq1 Q0 c2 2 high t\n")
    write("bad_grade.trec", "q1 0 c1 1\nq1 0 c2 x\n")
    write("twice.trec", "q1 0 c1 1\nq1 0 c1 2\n")
    write("empty.trec", "")
    write("control.trec", "q\x1b[31m1 Q0 c1 1 2.0 t\n")
    write("=HYPERLINK(x).trec", "".join(f"@q{q} Q0 c{j} {j} {10 - j} t\n" for q in (1, 2, 10)
                                        for j in range(1, 4)))
    out["formula.trec"] = out.pop("=HYPERLINK(x).trec")
    write("seed.trec", "".join(f"s0 Q0 c{i} {i} {11 - i} seed\n" for i in range(1, 11)))
    write("seed.qrels", "".join(f"s0 0 c{i} {g}\n" for i, g in
                                zip(range(1, 11), [2, 0, 1, 0, 2, 0, 0, 1, 0, 0])))
    # the forms of a qrels file and its negative grades (unjudged): notes on stderr
    write("negative.qrels", "".join(f"s0 0 c{i} {g}\n" for i, g in
                                    zip(range(1, 11), [2, 0, -1, 0, 2, -2, 0, 1, 0, 0])))
    write("three.qrels", "".join(f"s0 c{i} {g}\n" for i, g in zip(range(1, 6), [2, 0, 1, -1, 2])))
    write("smart.qrels", "".join(f"s0 c{i} 0 0\n" for i in (1, 4, 7)))
    write("smart-one-doc.qrels", "s0 c1 0 0\ns1 c1 0 0\n")
    out["folder"] = str(d)
    out["missing"] = str(d / "missing.trec")
    return out


def cases(f: dict[str, str]) -> list[list[str]]:
    """Command lines after ``eval``: every option of the lean path, alone and together, and
    mistakes in options and in files."""
    q, a, b = f["qrels.trec"], f["a.trec"], f["b.run"]
    base = ["--qrels", q, "--run", a]
    return [
        base,
        [*base, "--format", "json"],
        [*base, "--format", "csv"],
        [*base, "--format=json", "-m", "P@5", "-m", "nDCG@10,RR", "--per-query"],
        [*base, "--format", "csv", "--per-query", "--ci"],
        [*base, "--ci"],
        ["--qrels", q, "--run", a, "--run", b, "--complete", "-m", "bpref,Judged@10", "--format", "json"],
        [*base, "--complete", "--per-query", "-m", "bpref"],
        [*base, "--complete", "--format", "csv"],
        [*base, "--per-query", "-m", "P@5,AP"],
        ["--run", a, "-r", b, "--qrels", q, "-m", "P(rel=2)@5", "-m", "Rprec"],
        ["--run", a, "-r", b, "--qrels", q, "--format", "json", "--name", "A", "--name", "B"],
        ["--run", a, "-r", b, "--qrels", q, "--name", "only-one"],
        ["--run", a, "--qrels", q, "--name", "x", "--name", "y"],
        ["--run", a, "--run", a, "--qrels", q],
        ["--run", a, "--qrels", q, "--name", " "],
        ["--run", f["a.trec.gz"], "--run", f["c.jsonl"], "--qrels", f["qrels.jsonl"], "--format", "json"],
        [*base, "-m", "ndcg_cut_10,map,recip_rank,P_5", "--format", "csv"],
        [*base, "-m", "P@5,P@5", "--format", "json"],
        [*base, "-m", "Nope"],
        [*base, "-m", "P@0"],
        [*base, "-m", ","],
        [*base, "-m", "Coverage@5"],
        [*base, "-m", "ContextPrecision@5", "--format", "json"],
        [*base, "--threshold", "2", "--format", "json"],
        [*base, "--threshold", "007", "-m", "P@5"],
        [*base, "--averaging", "run", "--format", "json"],
        [*base, "--averaging", "run", "--format", "csv", "--per-query"],
        [*base, "--averaging", "mean"],
        [*base, "--format", "xml"],
        [*base, "--format="],
        [*base, "--by", "category", "--queries", f["queries.jsonl"]],
        [*base, "--by", "lang", "--queries", f["queries.jsonl"], "--format", "json", "--ci"],
        [*base, "--by", "category", "--queries", f["queries.jsonl"], "--format", "csv", "--per-query"],
        [*base, "--by", "nothing", "--queries", f["queries.jsonl"]],
        [*base, "--by", "category"],
        [*base, "--queries", f["queries.jsonl"]],
        [*base, "--curve", "nDCG", "--k", "1-5"],
        [*base, "--curve", "P", "--k", "1,3,5", "--format", "json"],
        [*base, "--curve", "PR"],
        [*base, "--curve", "PR", "--format", "csv"],
        ["--run", a, "-r", b, "--qrels", q, "--curve", "R@3", "--k", "4", "--format", "csv"],
        [*base, "--curve", "AP"],
        [*base, "--curve", "nDCG", "--k", "0-3"],
        [*base, "--curve", "nDCG", "-m", "P@5"],
        [*base, "--rule", "majority"],
        [*base, "-q"],
        [*base, "--quiet", "--format", "json"],
        ["--qrels", q],
        ["--qrels", f["missing"], "--run", a],
        ["--qrels", q, "--run", f["missing"]],
        ["--qrels", q, "--run", f["folder"]],
        ["--qrels", f["folder"], "--run", a],
        ["--qrels", q, "--run", f["bad_fields.trec"]],
        ["--qrels", q, "--run", f["bad_score.trec"]],
        ["--qrels", f["bad_grade.trec"], "--run", a],
        ["--qrels", f["twice.trec"], "--run", a],
        ["--qrels", q, "--run", f["empty.trec"]],
        ["--qrels", f["empty.trec"], "--run", a],
        ["--qrels", q, "--run", f["control.trec"], "--format", "json"],
        ["--qrels", q, "--run", "no-such-run"],
        ["--qrels", f["seed.qrels"], "--run", f["seed.trec"], "-m", "P@5,AP,nDCG@10", "--per-query"],
        ["--qrels=" + q, "--run=" + a, "--measure=RR", "--format=csv"],
        ["--qrels", f["negative.qrels"], "--run", f["seed.trec"], "-m", "P@5,bpref,Judged@10"],
        ["--qrels", f["negative.qrels"], "--run", f["seed.trec"], "--format", "json"],
        ["--qrels", f["three.qrels"], "--run", f["seed.trec"], "--format", "csv"],
        ["--qrels", f["smart.qrels"], "--run", f["seed.trec"], "-m", "P@5,AP"],
        ["--qrels", f["smart-one-doc.qrels"], "--run", f["seed.trec"]],
        [*base, "--format", "csv", "--raw", "--per-query"],
        ["--qrels", q, "--run", f["formula.trec"], "--format", "csv", "--per-query", "-m", "P@5"],
        ["--qrels", q, "--run", f["formula.trec"], "--format", "csv", "--per-query", "-m", "P@5", "--raw"],
        [*base, "--curve", "P", "--k", "3", "--format", "csv", "--raw"],
        [*base, "--raw"],
        [*base, "--format", "json", "--raw"],
        [*base, "--threshold", "+2", "--format", "json"],
    ]


#: command lines that typer reads (the lean path declines them): same outcome, one reader
FALLBACKS = [
    ["--help"],
    ["-h"],
    ["--qrels", "Q", "--run", "A", "--tui"],
    ["--qrels", "Q", "--run", "A", "--per-query=yes"],
    ["--qrels", "Q", "--run", "A", "--no-per-query"],
    ["--qrels", "Q", "--run", "A", "-mP@5"],
    ["--qrels", "Q", "--run", "A", "-qm", "P@5"],
    ["--qrels", "Q", "--run", "-"],
    ["--qrels", "-", "--run", "A"],
    ["--qrels", "Q", "--run", "A", "--format", "json", "--format", "csv"],
    ["--qrels", "Q", "--run", "A", "--ci", "--ci"],
    ["--qrels", "Q", "--run", "A", "--complete", "--complete"],
    ["--qrels", "Q", "--run", "A", "--complete=yes"],
    ["--qrels", "Q", "--run", "A", "--threshold", "-1"],
    ["--qrels", "Q", "--run", "A", "--threshold", "x"],
    ["--qrels", "Q", "--run", "A", "--threshold", "1_0"],
    ["--qrels", "Q", "--run", "A", "--threshold", "\u0661"],
    ["--qrels", "Q", "--run", "A", "--threshold", "99999999999999999999999"],
    ["--qrels", "Q", "--run", "A", "--threshold", "1001"],
    ["--qrels", "Q", "--run", "A", "--threshold", " 2"],
    ["--qrels", "Q", "--run", "A", "--threshold", "2.0"],
    ["--qrels", "Q", "--run", "A", "--raw=yes"],
    ["--qrels", "Q", "--run", "A", "--raw", "--raw"],
    ["--qrels", "Q", "--run", "A", "extra"],
    ["--qrels", "Q", "--run", "A", "--"],
    ["--qrels", "Q", "--run"],
    ["--qrels", "Q", "--run", "A", "--db", "x.db"],
    ["--qrels", "Q", "--run", "A", "--bogus"],
    ["--run", "A"],
    [],
]


def _both(capsys, monkeypatch, args: list[str]) -> tuple[tuple, tuple]:
    outcomes = []
    for lean in ("1", "0"):
        monkeypatch.setenv("RAGJUDGE_LEAN", lean)
        code = main(list(args))
        captured = capsys.readouterr()
        outcomes.append((code, captured.out, captured.err))
    monkeypatch.delenv("RAGJUDGE_LEAN")
    return outcomes[0], outcomes[1]


@pytest.mark.slow
def test_lean_path_prints_what_the_typer_command_prints(files, capsys, monkeypatch):
    checked = 0
    for words in cases(files):
        args = ["eval", *words]
        assert lean_call(args) is not None, words  # the case does test the lean path
        lean, typer_ = _both(capsys, monkeypatch, args)
        assert lean == typer_, args
        checked += 1
    assert checked == len(cases(files))


@pytest.mark.slow
def test_the_cases_cover_success_and_every_kind_of_failure(files, capsys, monkeypatch):
    codes = set()
    for words in cases(files):
        monkeypatch.setenv("RAGJUDGE_LEAN", "1")
        code = main(["eval", *words])
        out, err = capsys.readouterr()
        codes.add(code)
        if code == 0:
            assert out
        else:
            assert err.startswith("ragjudge: ") and err.count("\n") == 1, err
    assert codes == {0, 2}


@pytest.mark.parametrize("words", FALLBACKS, ids=lambda w: " ".join(w) or "(none)")
def test_other_command_lines_go_to_typer(files, capsys, monkeypatch, words):
    words = [files["qrels.trec"] if w == "Q" else files["a.trec"] if w == "A" else w for w in words]
    assert lean_call(["eval", *words]) is None
    lean, typer_ = _both(capsys, monkeypatch, ["eval", *words])
    assert lean == typer_


def test_only_eval_with_qrels_and_no_project_is_lean(files, monkeypatch):
    q, a = files["qrels.trec"], files["a.trec"]
    assert lean_call(["eval", "--qrels", q, "--run", a]) is not None
    assert lean_call(["compare", a, a, "--qrels", q]) is None
    assert lean_call(["--db", "x.db", "eval", "--qrels", q, "--run", a]) is None
    monkeypatch.setenv("RAGJUDGE_DB", "x.db")
    assert lean_call(["eval", "--qrels", q, "--run", a]) is None
    monkeypatch.delenv("RAGJUDGE_DB")
    monkeypatch.setenv("RAGJUDGE_LEAN", "0")
    assert lean_call(["eval", "--qrels", q, "--run", a]) is None


@pytest.mark.slow
def test_lean_arguments_are_the_typer_commands_arguments(files, monkeypatch):
    """The function both paths call gets the same arguments (defaults filled in) from both."""
    import ragjudge.cli.evaluate as typer_command
    import ragjudge.cli.scoring as scoring

    signature = inspect.signature(scoring.evaluate_and_print)
    seen: list[dict] = []

    def record(**kwargs):
        bound = signature.bind(**kwargs)
        bound.apply_defaults()
        seen.append(dict(bound.arguments))

    monkeypatch.setattr(scoring, "evaluate_and_print", record)
    monkeypatch.setattr(typer_command, "evaluate_and_print", record)
    for words in cases(files):
        seen.clear()
        for lean in ("1", "0"):
            monkeypatch.setenv("RAGJUDGE_LEAN", lean)
            assert main(["eval", *words]) == 0
        assert len(seen) == 2 and seen[0] == seen[1], words
    assert parse_eval(["-m", "a", "--measure=b", "-r", "x", "--threshold", "010", "-q"]) == {
        "measure": ["a", "b"], "run": ["x"], "threshold": 10, "quiet": True}


@pytest.mark.parametrize("error, code, err", [
    (KeyboardInterrupt, 130, ""),
    (EOFError, 1, "\nragjudge: aborted.\n"),
])
def test_interruptions_end_alike(files, capsys, monkeypatch, error, code, err):
    import ragjudge.services.scoring.evaluation as svc

    def interrupted(*args, **kwargs):
        raise error()

    monkeypatch.setattr(svc, "evaluate_all", interrupted)
    lean, typer_ = _both(capsys, monkeypatch, ["eval", "--qrels", files["qrels.trec"], "--run", files["a.trec"]])
    assert lean == typer_ == (code, "", err)


def _process(args: list[str], lean: bool, cwd: str, **kwargs) -> subprocess.CompletedProcess:
    env = dict(SUBPROCESS_ENV, RAGJUDGE_LEAN="1" if lean else "0")
    return subprocess.run([sys.executable, "-m", "ragjudge", *args], capture_output=True,
                          env=env, cwd=cwd, **kwargs)


@pytest.mark.slow
def test_whole_processes_print_the_same_bytes(files, tmp_path):
    """In real processes (piped output: the table as a script sees it, fresh imports)."""
    q, a, b = files["qrels.trec"], files["a.trec"], files["b.run"]
    for words in (["--qrels", q, "--run", a, "--run", b, "--ci"],
                  ["--qrels", q, "--run", a, "--format", "json", "--per-query"],
                  ["--qrels", q, "--run", a, "--curve", "PR"],
                  ["--qrels", q, "--run", files["bad_score.trec"]],
                  ["--qrels", q, "--run", a, "-m", "Nope"]):
        lean, typer_ = (_process(["eval", *words], flag, str(tmp_path)) for flag in (True, False))
        assert (lean.returncode, lean.stdout, lean.stderr) == (
            typer_.returncode, typer_.stdout, typer_.stderr), words


@pytest.mark.slow
def test_a_closed_pipe_ends_alike(files, tmp_path):
    """The reader goes away before the output is written: exit code 1 and nothing on stderr,
    both ways."""
    many = ",".join(f"P@{k}" for k in range(1, 31))  # more output than a pipe's buffer
    args = ["eval", "--qrels", files["qrels.trec"], "--run", files["a.trec"], "--per-query",
            "--format", "csv", "-m", many]
    results = []
    for lean in (True, False):
        env = dict(SUBPROCESS_ENV, RAGJUDGE_LEAN="1" if lean else "0")
        read, write = os.pipe()
        os.close(read)  # nobody will read
        try:
            done = subprocess.run([sys.executable, "-m", "ragjudge", *args], stdout=write,
                                  stderr=subprocess.PIPE, env=env, cwd=str(tmp_path))
        finally:
            os.close(write)
        results.append((done.returncode, done.stderr))
    assert results[0] == results[1] == (1, b""), results
    assert errno.EPIPE  # the errno the paths recognise


LEFT_OUT = ("typer", "click", "sqlalchemy", "pydantic", "textual", "rich", "ragjudge.store",
            "ragjudge.models", "ragjudge.formats.records", "ragjudge.cli.app", "ragjudge.cli.evaluate")


@pytest.mark.slow
@pytest.mark.parametrize("format", ["json", "csv", "table"])
def test_eval_on_files_imports_only_what_it_needs(files, format):
    code = (
        "import sys\n"
        "from ragjudge.cli import main\n"
        f"code = main(['eval', '--qrels', {files['qrels.trec']!r}, '--run', {files['a.trec']!r}, "
        f"'--format', {format!r}, '-m', 'P@5,nDCG@10'])\n"
        "loaded = [name for name in sys.modules if name.split('.')[0] in ('typer', 'click', "
        "'sqlalchemy', 'pydantic', 'textual', 'rich') or name.startswith(('ragjudge.store', "
        "'ragjudge.models', 'ragjudge.formats.records', 'ragjudge.cli.app', 'ragjudge.cli.evaluate'))]\n"
        "print(code, sorted({name.split('.')[0] if not name.startswith('ragjudge') else name "
        "for name in loaded}), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=SUBPROCESS_ENV)
    status, _, loaded = done.stderr.strip().splitlines()[-1].partition(" ")
    assert status == "0", done.stderr
    expected = ["rich"] if format == "table" else []  # a table is drawn by Rich
    assert loaded == str(expected)


def test_notes_about_the_qrels_file_go_to_stderr_and_the_data_to_stdout(files, capsys):
    import pytrec_eval

    code = main(["eval", "--qrels", files["negative.qrels"], "--run", files["seed.trec"],
                 "--format", "json", "-m", "P@5,AP,bpref,Judged@10", "--per-query"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    data = json.loads(captured.out)  # stdout holds the JSON alone
    assert captured.err == (f"{files['negative.qrels']}: 2 lines with a negative grade were read as "
                            "unjudged (trec_eval's convention: in the pool, not judged).\n")
    scores = data["runs"]["seed"]["per_query"]["s0"]
    # c3 and c6 are unjudged: Judged@10 = 8/10; bpref as trec_eval reads the same file
    assert scores["Judged@10"] == pytest.approx(0.8)
    with open(files["negative.qrels"]) as handle:
        qrels = pytrec_eval.parse_qrel(handle)
    with open(files["seed.trec"]) as handle:
        run = pytrec_eval.parse_run(handle)
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"P_5", "map", "bpref"}).evaluate(run)["s0"]
    assert scores["P@5"] == pytest.approx(expected["P_5"], abs=1e-12)
    assert scores["AP"] == pytest.approx(expected["map"], abs=1e-12)
    assert scores["bpref"] == pytest.approx(expected["bpref"], abs=1e-12)
    # the form read is said, for 3 fields and SMART's "query doc 0 0"
    for name, said in (("three.qrels", "Read as qrels of 3 fields"),
                       ("smart.qrels", "Read as a SMART relevance file")):
        code = main(["eval", "--qrels", files[name], "--run", files["seed.trec"], "--format", "json"])
        captured = capsys.readouterr()
        assert code == 0 and said in captured.err and json.loads(captured.out)


@pytest.mark.slow
def test_a_command_registers_only_its_module():
    code = ("import sys\nfrom ragjudge.cli import main\ncode = main(['gate', '--help'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('ragjudge.cli.') and "
            "m not in ('ragjudge.cli.app', 'ragjudge.cli.common', 'ragjudge.cli.base', "
            "'ragjudge.cli.lean', 'ragjudge.cli.options', 'ragjudge.cli.progress', 'ragjudge.cli.scoring')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=SUBPROCESS_ENV, check=True)
    assert done.stdout.strip().splitlines()[-1] == "['ragjudge.cli.evaluate']"


def test_the_command_table_is_what_the_modules_register():
    import typer.main

    from ragjudge.cli import COMMAND_MODULES, _register
    from ragjudge.cli.app import app

    _register()
    registered = {}
    for info in app.registered_commands:
        name = info.name or typer.main.get_command_name(info.callback.__name__)
        assert name not in registered, name
        registered[name] = info.callback.__module__
    assert registered == COMMANDS
    # the help lists the commands in the table's order
    assert list(registered) == list(COMMANDS)
    assert tuple(dict.fromkeys(COMMANDS.values())) == COMMAND_MODULES


def test_the_lean_table_is_the_typer_commands_options():
    """Every option of the typer ``eval`` but --tui is in the table the lean path reads, with
    the same words and kind (several values, a flag, an integer read by the same type), so that
    the two paths cannot come to read a command line differently."""
    import typer.main

    from ragjudge.cli import _register
    from ragjudge.cli.app import app
    from ragjudge.cli.base import EVAL_OPTIONS, Integer

    _register(("ragjudge.cli.evaluate",))
    command = typer.main.get_command(app).commands["eval"]
    declared = {}
    for param in command.params:
        if param.name == "tui":
            continue
        parser = param.type_descriptor.parameter_info.parser
        kind = ("flag" if param.is_flag else "many" if param.multiple
                else "integer" if isinstance(parser, Integer) else "one")
        declared[param.name] = (tuple(param.opts), kind, parser)
    table = {spec.param: (spec.flags, spec.kind, spec.integer) for spec in EVAL_OPTIONS}
    assert declared == table
    assert set(table) | {"tui"} == set(inspect.signature(typer_eval()).parameters)
    # and ``opened``: the project the lean path opened itself (``eval --db``)
    assert set(table) | {"opened"} == set(inspect.signature(__import__(
        "ragjudge.cli.scoring", fromlist=["x"]).evaluate_and_print).parameters)


def typer_eval():
    from ragjudge.cli.evaluate import eval_command

    return eval_command


@pytest.mark.parametrize("value", ["1_0", " 2", "2.0", "\u0661", "0x1"])
def test_a_threshold_python_would_read_is_refused_by_both_paths(files, capsys, monkeypatch, value):
    """``1_0`` is 10 to Python's int(); the option reads digits only, as files and measure
    names are read, and says so naming the option."""
    args = ["eval", "--qrels", files["qrels.trec"], "--run", files["a.trec"], "--threshold", value]
    lean, typer_ = _both(capsys, monkeypatch, args)
    assert lean == typer_
    code, out, err = lean
    assert code == 2 and out == ""
    assert err.startswith("ragjudge: --threshold '") and "whole number from 0 to 1,000" in err, err


def test_csv_cells_that_would_run_in_a_spreadsheet_are_neutralised_unless_raw(files, capsys):
    """A run named ``=HYPERLINK(x)`` and query ids ``@q1``: a quote before each text cell that
    would start a formula; ``--raw`` writes them exactly. Queries in natural order (q2 before
    q10) either way."""
    import csv
    import io

    qrels = files["folder"] + "/formula.qrels"
    with open(qrels, "w", encoding="utf-8") as out:
        out.write("".join(f"@q{q} 0 c1 1\n" for q in (10, 2, 1)))
    words = ["eval", "--qrels", qrels, "--run", files["formula.trec"], "-m", "P@1", "--format",
             "csv", "--per-query"]
    for raw in (False, True):
        assert main(words + (["--raw"] if raw else [])) == 0
        rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
        quote = "" if raw else "'"
        assert rows[1][:2] == [f"{quote}=HYPERLINK(x)", "all"]
        assert [row[1] for row in rows[2:]] == [f"{quote}@q1", f"{quote}@q2", f"{quote}@q10"]


# -- status and eval on a project ---------------------------------------------------------------


def _ragjudge(*args: str, env: dict | None = None) -> None:
    done = subprocess.run([sys.executable, "-m", "ragjudge", *args], capture_output=True, text=True,
                          env={**SUBPROCESS_ENV, **(env or {})})
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def projects(tmp_path_factory) -> dict[str, str]:
    """The demo project; a blind project with a lead, a complete reference (one of its pairs
    skipped: a negative grade) and an assignment; files that are no project."""
    import shutil

    d = tmp_path_factory.mktemp("lean-projects")
    demo = str(d / "demo.db")
    _ragjudge("demo", "--no-tui", "--db", demo)
    blind = str(d / "blind.db")
    shutil.copy(demo, blind)
    qrels = d / "reference.qrels"
    done = subprocess.run([sys.executable, "-m", "ragjudge", "--db", demo, "export", "qrels"],
                          capture_output=True, text=True, env=SUBPROCESS_ENV, check=True)
    lines = [line for i, line in enumerate(done.stdout.splitlines()) if i % 3][:300]
    lines[-1] = " ".join(lines[-1].split()[:3] + ["-1"])  # in the pool, not judged
    qrels.write_text("\n".join(lines) + "\n", encoding="utf-8")
    as_ana = {"RAGJUDGE_USER": "ana"}
    _ragjudge("--db", blind, "import", "qrels", str(qrels), "--annotator", "trec", "--reference",
              "--complete", env=as_ana)
    _ragjudge("--db", blind, "annotators", "add", "dora", "--role", "lead", env=as_ana)
    _ragjudge("--db", blind, "assign", "--annotators", "ana,ben", "--depth", "5", "--seed", "1",
              env={"RAGJUDGE_USER": "dora"})
    empty = d / "empty.db"
    empty.write_bytes(b"")
    text = d / "text.db"
    text.write_text("not a database\n", encoding="utf-8")
    return {"demo": demo, "blind": blind, "folder": str(d), "missing": str(d / "missing.db"),
            "empty": str(empty), "text": str(text)}


def project_cases(p: dict[str, str]) -> list[list[str]]:
    """Command lines of status and eval on a project: options alone and together, the project
    named before and after the command, and mistakes."""
    demo, blind = p["demo"], p["blind"]
    return [
        ["--db", demo, "status"],
        ["--db", demo, "status", "--format", "json"],
        ["status", "--db", demo],
        ["status", "--format=json", "--db=" + demo],
        ["--db", blind, "status"],
        ["--db", blind, "status", "--format", "json"],
        ["--db", demo, "eval"],
        ["eval", "--db", demo, "--format", "json"],
        ["--db", demo, "eval", "--format", "csv", "--per-query"],
        ["--db", demo, "eval", "-m", "P@5,nDCG@10", "--ci"],
        ["--db", demo, "eval", "--run", "bm25", "--run", "hybrid", "--name", "A", "--name", "B"],
        ["--db", demo, "eval", "--by", "category"],
        ["--db", demo, "eval", "--by", "category", "--format", "json", "--per-query"],
        ["--db", demo, "eval", "--by", "nothing"],
        ["--db", demo, "eval", "--rule", "majority", "-m", "P@5,AP"],
        ["--db", demo, "eval", "--rule", "annotator:ben", "--format", "csv"],
        ["--db", demo, "eval", "--rule", "annotator:nobody"],
        ["--db", demo, "eval", "--rule", "adjudicated"],
        ["--db", demo, "eval", "--rule", "reference"],
        ["--db", demo, "eval", "--rule", "nope"],
        ["--db", demo, "eval", "--threshold", "2", "--averaging", "run"],
        ["--db", demo, "eval", "--threshold", "9"],
        ["--db", demo, "eval", "-m", "P(rel=9)@5"],
        ["--db", demo, "eval", "-m", "Nope"],
        ["--db", demo, "eval", "--run", "nosuch"],
        ["--db", demo, "eval", "--complete"],
        ["--db", demo, "eval", "--curve", "P", "--k", "1-5"],
        ["--db", demo, "eval", "-m", "AnswerNuggets(all),CitationRecall", "--format", "json"],
        ["--db", demo, "eval", "--format", "xml"],
        ["--db", blind, "eval"],
        ["--db", blind, "eval", "--format", "json", "--per-query"],
        ["--db", blind, "eval", "--rule", "reference", "-m", "P@5,bpref,Judged@10"],
        ["--db", blind, "eval", "--rule", "annotator:trec", "--format", "csv"],
        ["--db", blind, "eval", "--rule", "annotator:ben"],
        ["--db", blind, "eval", "--rule", "annotator:ana", "--by", "category"],
    ]


#: who runs the commands on the blind project: an annotator, the lead, nobody named
USERS = ["ana", "dora", ""]


@pytest.mark.slow
@pytest.mark.parametrize("user", USERS, ids=lambda u: u or "login-name")
def test_status_and_eval_on_a_project_print_what_typer_prints(projects, capsys, monkeypatch, user):
    """Each case on the lean path (never handed back to typer) and through typer: the same
    bytes and exit code; as an annotator of the blind project, its lead and the login name."""
    import ragjudge.cli as cli

    monkeypatch.setenv("RAGJUDGE_USER", user)
    typer_main = cli._typer_main

    def not_typer(words):
        assert os.environ.get("RAGJUDGE_LEAN") == "0", words  # the lean side never falls back
        return typer_main(words)

    monkeypatch.setattr(cli, "_typer_main", not_typer)
    codes = set()
    for args in project_cases(projects):
        assert lean_call(args) is not None, args
        lean, typer_ = _both(capsys, monkeypatch, args)
        assert lean == typer_, args
        codes.add(lean[0])
    assert codes == {0, 2}


def test_the_blind_rules_hold_on_the_lean_path(projects, capsys, monkeypatch):
    """An annotator of a blind project with a lead may not score by another's grades alone; the
    lead may; the refusal names the lead (the access rules of the services, on either path)."""
    args = ["--db", projects["blind"], "eval", "--rule", "annotator:ben", "--format", "json"]
    monkeypatch.setenv("RAGJUDGE_USER", "ana")
    lean, typer_ = _both(capsys, monkeypatch, args)
    assert lean == typer_
    assert lean[0] == 2 and "dora" in lean[2], lean
    monkeypatch.setenv("RAGJUDGE_USER", "dora")
    lean, typer_ = _both(capsys, monkeypatch, args)
    assert lean == typer_
    assert lean[0] == 0 and json.loads(lean[1])["gold"]["annotators"] == ["ben"]


@pytest.mark.parametrize("args", [
    ["--db", "{missing}", "status"],
    ["--db", "{missing}", "eval"],
    ["--db", "{folder}", "status"],
    ["--db", "{empty}", "eval"],
    ["--db", "{text}", "status"],
    ["--db=", "status"],
    ["--db", "{demo}", "status", "--db", "{demo}"],
    ["--db", "{demo}", "status", "--format", "xml"],
    ["--db", "{demo}", "status", "--help"],
    ["--db", "{demo}", "status", "extra"],
    ["--db", "{demo}", "eval", "--qrels", "Q"],
    ["--db", "{demo}", "eval", "-mP@5"],
    ["--db", "sqlite:///{demo}", "status"],
    ["status", "--db"],
], ids=lambda a: " ".join(a))
def test_other_project_command_lines_go_to_typer(projects, capsys, monkeypatch, args):
    args = [w.format(**projects) for w in args]
    assert lean_call(args) is None
    lean, typer_ = _both(capsys, monkeypatch, args)
    assert lean == typer_


def test_an_older_schema_is_migrated_by_the_full_path(tmp_path, capsys, monkeypatch):
    """A project at an older revision is not read lean: the command runs in full, which
    migrates it (after a backup), and says the same as typer does on a copy."""
    from ragjudge.services.project.database import Project
    from ragjudge.store import migrate
    from ragjudge.store.engine import make_engine

    outcomes = []
    for lean in ("1", "0"):
        db = str(tmp_path / f"old-{lean}.db")
        engine = make_engine(db)
        migrate.upgrade(engine, migrate.REVISIONS[-2])
        engine.dispose()
        assert lean_call(["--db", db, "status"]) is None
        monkeypatch.setenv("RAGJUDGE_LEAN", lean)
        code = main(["--db", db, "status", "--format", "json"])
        captured = capsys.readouterr()
        outcomes.append((code, captured.out.replace(db, "DB"), captured.err.replace(db, "DB")))
        with Project.open(db) as project:  # migrated to the newest revision
            with project.connect() as connection:
                assert migrate.current_revision(connection) == migrate.HEAD
    assert outcomes[0] == outcomes[1] and outcomes[0][0] == 0


def test_a_deeper_pool_than_the_heads_goes_to_the_full_path(projects, tmp_path, capsys, monkeypatch):
    """What the lean reading does not do (here: widen the runs' stored heads for a deeper pool)
    is handed to the full path before anything is printed."""
    import shutil
    import sqlite3

    db = str(tmp_path / "shallow.db")
    shutil.copy(projects["demo"], db)
    with sqlite3.connect(db) as connection:  # heads of 5 ranks: status's pool of 10 widens them
        rows = connection.execute("SELECT name, meta FROM runs").fetchall()
        for name, meta in rows:
            data = json.loads(meta)
            data["rows_depth"] = 5
            connection.execute("UPDATE runs SET meta = ? WHERE name = ?", (json.dumps(data), name))
    assert lean_call(["--db", db, "status"]) is not None
    lean, typer_ = _both(capsys, monkeypatch, ["--db", db, "status", "--format", "json"])
    assert lean == typer_ and lean[0] == 0
    assert json.loads(lean[1])["pool"]["pairs"] > 0
    # a measure whose labels (facets) are read with SQLAlchemy: handed over too
    args = ["--db", projects["demo"], "eval", "-m", "Coverage@5,P@5", "--format", "json"]
    assert lean_call(args) is not None
    lean, typer_ = _both(capsys, monkeypatch, args)
    assert lean == typer_


@pytest.mark.slow
@pytest.mark.parametrize("args", [["status"], ["eval"], ["eval", "--format", "json"]])
def test_status_and_eval_on_a_project_import_only_what_they_need(projects, args):
    """Neither typer, SQLAlchemy, pydantic, the mapped tables, Textual nor pyarrow: the project
    is read with sqlite3 (Rich only to draw a table)."""
    code = (
        "import sys\n"
        "from ragjudge.cli import main\n"
        f"code = main(['--db', {projects['demo']!r}, *{args!r}])\n"
        "heavy = ('typer', 'click', 'sqlalchemy', 'pydantic', 'textual', 'pyarrow', 'alembic')\n"
        "loaded = sorted({n.split('.')[0] for n in sys.modules if n.split('.')[0] in heavy}"
        " | {n for n in sys.modules if n in ('ragjudge.store.schema', 'ragjudge.models')})\n"
        "print(code, loaded, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=SUBPROCESS_ENV)
    status, _, loaded = done.stderr.strip().splitlines()[-1].partition(" ")
    assert status == "0", done.stderr
    assert loaded == "[]"


@pytest.mark.slow
def test_whole_processes_on_a_project_print_the_same_bytes(projects, tmp_path):
    for args in (["--db", projects["demo"], "status"], ["--db", projects["blind"], "eval"],
                 ["eval", "--db", projects["demo"], "--format", "csv", "--by", "category"],
                 ["--db", projects["demo"], "eval", "-m", "Nope"]):
        lean, typer_ = (_process(args, flag, str(tmp_path)) for flag in (True, False))
        assert (lean.returncode, lean.stdout, lean.stderr) == (
            typer_.returncode, typer_.stdout, typer_.stderr), args
