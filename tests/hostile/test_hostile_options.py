"""Every command, with its real options and arguments given hostile values.

The commands and their options are read from the Typer application itself
(:data:`ragjudge.cli.app.app`), so a new command or option is covered the day it is added. Each
example builds an argv of one command: its required parameters, a few of its other options, now
and then an unknown option or ``-h``, and ``--db`` (mostly the prepared project, sometimes a
hostile one). Values are plausible ones (so that the command gets to its real work) or hostile
ones: 10**30, 2**63, negative numbers, ``1_0``, ``１``, ``nan``, empty strings, control
characters and escape sequences, Rich markup, paths that do not exist, folders, a 300-character
file name, the project file itself, unknown measure names. Every run keeps the promises of
:mod:`hostilekit`.

Nothing is skipped: the commands that open the app (``ragjudge`` alone, ``annotate``, ``demo``
without ``--no-tui``, ``eval --tui``) refuse without a terminal, as they do here (standard input
and output are not one), and ragjudge starts no server. ``demo`` builds the bundled project,
which takes seconds, so it gets fewer examples.
"""

from __future__ import annotations

import gzip
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer.main
from hostilekit import (
    EVIL_RUN, NUMBERS, OSC52, brief, check_promises, copy_project, examples, folder_files, hostile_text,
    make_base_project, project_state, run_cli,
)
from hypothesis import given
from hypothesis import strategies as st

from ragjudge.cli import _register
from ragjudge.cli.app import app
from ragjudge.services.transfer.exporting import EXPORT_KINDS
from ragjudge.services.transfer.importing import IMPORT_KINDS


@dataclass(frozen=True)
class Ref:
    """A path known only when the example runs: a prepared file, the project, a folder, ..."""

    name: str

    def __repr__(self) -> str:
        return f"<{self.name}>"


@dataclass(frozen=True)
class Param:
    name: str
    opts: tuple[str, ...]
    positional: bool
    flag: bool
    required: bool
    many: bool
    kind: str  # int, float, str, path, bool


@dataclass(frozen=True)
class Command:
    path: tuple[str, ...]
    params: tuple[Param, ...]

    def __repr__(self) -> str:
        return " ".join(self.path) or "(the app)"


def _kind_of(param) -> str:
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    text = getattr(annotation, "__name__", str(annotation))
    for kind in ("bool", "int", "float", "Path"):
        if kind in text:
            return kind.lower()
    return "str"


def commands() -> list[Command]:
    """Every command of the application with its parameters (``--db`` aside, given apart)."""
    _register()
    found: list[Command] = []

    def walk(command, path: tuple[str, ...]) -> None:
        params = tuple(
            Param(p.name, tuple(p.opts), p.param_type_name == "argument", bool(getattr(p, "is_flag", False)),
                  bool(p.required), bool(p.multiple) or p.nargs == -1, _kind_of(p))
            for p in command.params if p.name != "db")
        if hasattr(command, "commands"):
            if path == ():
                found.append(Command(path, params))
            for name, sub in sorted(command.commands.items()):
                walk(sub, (*path, name))
        else:
            found.append(Command(path, params))

    walk(typer.main.get_command(app), ())
    return found


COMMANDS = commands()

# -- values ------------------------------------------------------------------------------

FILES = ["run.trec", "qrels.trec", "labels.jsonl", "queries.jsonl", "chunks.jsonl", "facets.jsonl",
         "nuggets.jsonl", "entities.jsonl", "answers.jsonl", "ids.txt", "guidelines.md", "beir",
         "empty.jsonl", "hostile.jsonl", "latin1.txt", "broken.trec.gz", "run.trec.gz"]

PLAUSIBLE: dict[str, list[object]] = {
    "run": ["bm25", "dense", Ref("run.trec"), EVIL_RUN],
    "runs": ["bm25", "dense", "bm25,dense", EVIL_RUN],
    "qrels": [Ref("qrels.trec"), Ref("labels.jsonl")],
    "rule": ["median", "majority", "mean", "min", "max", "adjudicated", "annotator:alice", "annotator:nope"],
    "name": ["bm25", "run2", "Support bot"],
    "measure": ["nDCG@10", "P@5", "AP", "RR", "ERR@10", "bpref", "Coverage@5", "P(rel=2)@5",
                "NuggetRecall(strict,vital)@5", "F(beta=2)@5", "iprec@0.5", "Judged@10", "AUC_PR"],
    "measures": ["AP,nDCG@10", "P@5"],
    "by": ["category", "query", "annotator"],
    "queries": ["q1,q2", "q1", Ref("ids.txt")],
    "format": ["table", "json", "trec", "jsonl", "csv", "text", "auto", "beir"],
    "curve": ["nDCG", "P", "R", "PR", "ERR"],
    "k": ["1-20", "5", "1,3,5", "1-3"],
    "threshold": ["1", "2", "3"],
    "averaging": ["judged", "run"],
    "alpha": ["0.05", "0.5"],
    "permutations": ["100", "1"],
    "resamples": ["100", "1"],
    "seed": ["1", "7"],
    "require": ["nDCG@10>=0.1", "RR>=0.6", "Success@5>=0.9", "AP<0.5"],
    "query": ["q1", "q2"],
    "chunk": ["c04", "c05", "c01"],
    "grade": ["2", "0", "3"],
    "reason": ["answers the refund part"],
    "labels": [Ref("labels.jsonl")],
    "scale": ["0-3", "binary", "1-5"],
    "limit": ["5", "0"],
    "annotators": ["alice,bob", "alice,bob,carol"],
    "overlap": ["0.2", "0", "1"],
    "judges_per_overlap": ["2", "3"],
    "depth": ["5", "10"],
    "annotator": ["alice", "bob", "carol"],
    "order": ["depth", "query"],
    "category": ["factoid", "policy"],
    "recheck": ["0.05", "0"],
    "output": [Ref("out.trec"), Ref("out.jsonl"), Ref("out.csv"), Ref("out.jsonl.gz"), Ref("out.db")],
    "description": ["what is judged"],
    "guidelines": [Ref("guidelines.md")],
    "split": ["test"],
    "file": [Ref(name) for name in FILES],
}
KIND_VALUES = {"import": [*IMPORT_KINDS, "beir"], "export": list(EXPORT_KINDS)}

HOSTILE: list[object] = [
    *NUMBERS, OSC52, "\x1b[2J", "\x9b31m", "a\u202eb", "[/]", "[bold]x", "[link=x]y[/link]", "x\ry",
    "x\ny", "\t", "q01,nope", "q1,,", "nope", ",", "-", "--", "~nouser/x.db",
    "postgresql+psycopg://ann:s3cret@127.0.0.1:1/x", "nDCG@", "P@0", "P@-1", "P(rel=1,rel=2)@5",
    "F(beta=0)@5", "F(beta=-1)@5", f"ERR@{10**30}", f"nDCG@{2**63}", f"P(rel={10**30})@5", "AP@",
    "ERR(x)@5", "1-" + str(10**30), "\udcff", "x" * 10_000,
    Ref("missing"), Ref("dir"), Ref("long"), Ref("project"), Ref("notdb"),
    *[Ref(name) for name in FILES],
]
"""Values for any option: numbers that are not, text that is not plain, paths that are not
files, measure names that are not measures."""

DBS: list[object] = [Ref("new.db"), Ref("dir"), Ref("missing"), Ref("notdb"), Ref("long"), "~nouser/x.db",
                     "postgresql+psycopg://ann:s3cret@127.0.0.1:1/x", "sqlite:///" + "/nonexistent/x.db",
                     " ", OSC52 + ".db", "[bold]x.db"]
UNKNOWN_OPTIONS = ["--bogus", "--" + OSC52, "-x", "--db-x", "--[bold]"]


def value(command: Command, param: Param) -> st.SearchStrategy[object]:
    plausible = list(PLAUSIBLE.get(param.name, []))
    if param.name == "kind":
        plausible = list(KIND_VALUES.get(command.path[0], []))
    if param.name == "name" and command.path == ("export",):
        plausible = ["bm25", "dense", EVIL_RUN]
    if param.name == "runs" and command.path == ("compare",):
        plausible = ["bm25", "dense", EVIL_RUN]
    hostile = st.sampled_from(HOSTILE) | hostile_text(nul=False, max_atoms=3)
    if param.kind in ("int", "float"):
        hostile = st.sampled_from(NUMBERS) | hostile
    return (st.sampled_from(plausible) | hostile) if plausible else hostile


class Argv(list):
    """The drawn argv, shown with long values cut (hypothesis repeats the example exactly)."""

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(repr(brief(list(self))))


@st.composite
def argv_for(draw, command: Command) -> list[object]:
    argv: list[object] = []
    if command.path == ("demo",):  # building the demo takes seconds: mostly the refusing cases
        db = draw(st.sampled_from([Ref("project"), Ref("dir"), Ref("missing"), "~nouser/x.db", OSC52 + ".db"]))
    else:
        db = draw(st.sampled_from([Ref("project")] * 6) | st.sampled_from(DBS))
    argv += ["--db", db]
    argv += list(command.path)
    for param in command.params:
        if param.positional and (param.required or draw(st.booleans())):
            count = draw(st.integers(1, 2)) if param.many else 1
            argv += [draw(value(command, param)) for _ in range(count)]
    options = [p for p in command.params if not p.positional]
    chosen = [p for p in options if p.required]
    chosen += draw(st.lists(st.sampled_from([p for p in options if not p.required] or [None]),
                            max_size=3, unique=True))
    for param in chosen:
        if param is None:
            continue
        repeat = draw(st.integers(1, 2)) if param.many else 1
        for _ in range(repeat):
            name = draw(st.sampled_from(param.opts))
            argv += [name] if param.flag else [name, draw(value(command, param))]
    extra = draw(st.integers(0, 19))
    if extra == 0:
        argv.append("-h")
    elif extra == 1:
        argv.append(draw(st.sampled_from(UNKNOWN_OPTIONS)))
    elif extra == 2 and len(argv) > 2:  # --db after the command
        argv = argv[2:] + argv[:2]
    return Argv(argv)


# -- the prepared files ------------------------------------------------------------------


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    """The base project and the files the options name (one folder per module)."""
    root = tmp_path_factory.mktemp("hostile-options")
    make_base_project(root / "base.db")
    files = root / "files"
    files.mkdir()
    write = {
        "run.trec": "q1 Q0 c04 1 2.0 x\nq1 Q0 c05 2 1.0 x\nq2 Q0 c07 1 1.0 x\n",
        "qrels.trec": "q1 0 c04 2\nq1 0 c05 0\nq2 0 c07 1\n",
        "labels.jsonl": '{"query_id": "q1", "chunk_id": "c04", "grade": 2, "annotator": "carol"}\n'
                        '{"query_id": "q1", "chunk_id": "c04", "grade": 1, "annotator": "dave"}\n',
        "queries.jsonl": '{"id": "q9", "text": "a new query"}\n',
        "chunks.jsonl": '{"id": "c99", "text": "a new chunk"}\n',
        "facets.jsonl": '{"query_id": "q2", "facet": "price"}\n',
        "nuggets.jsonl": '{"query_id": "q2", "nugget": "it costs 5 euro", "importance": "vital"}\n',
        "entities.jsonl": '{"query_id": "q2", "entity": "Paris"}\n',
        "answers.jsonl": '{"query_id": "q2", "run": "bm25", "text": "yes", "cited": ["c07"]}\n',
        "ids.txt": "q1\n# a comment\nq2\n",
        "guidelines.md": f"# Guidelines {OSC52}\n\n[bold]Grade[/] well.\r\n",
        "empty.jsonl": "",
        "hostile.jsonl": '{"id": "\\u001b]52;c;aGk=\\u0007", "text": "[/]\\r\\u202e"}\n',
    }
    for name, text in write.items():
        (files / name).write_text(text, encoding="utf-8", newline="")
    (files / "latin1.txt").write_bytes("q1\nq\xe9\n".encode("latin-1"))
    (files / "run.trec.gz").write_bytes(gzip.compress(write["run.trec"].encode(), mtime=0))
    (files / "broken.trec.gz").write_bytes(gzip.compress(write["run.trec"].encode(), mtime=0)[:-9])
    beir = files / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text('{"_id": "c98", "title": "t", "text": "chunk"}\n')
    (beir / "queries.jsonl").write_text('{"_id": "q8", "text": "query"}\n')
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq8\tc98\t1\n")
    return root


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAGJUDGE_DB", raising=False)
    return tmp_path


def resolve(token: object, here: Path, project: Path, files: Path) -> str:
    if not isinstance(token, Ref):
        return str(token)
    name = token.name
    special = {
        "project": project,
        "new.db": project.parent / "new.db",
        "dir": here,
        "missing": here / "missing" / "nothing.jsonl",
        "long": here / ("n" * 300 + ".jsonl"),
        "notdb": project.parent / "notes.db",
    }
    if name in special:
        return str(special[name])
    if name.startswith("out."):
        return str(here / "out" / name)
    return str(files / name)


# -- the test ----------------------------------------------------------------------------

SLOW = {("demo",)}
"""Commands that take seconds (building the bundled demo project): fewer examples."""


def check_command(argv_tokens: list[object], prepared: Path, workdir: Path, capfd) -> None:
    here = Path(tempfile.mkdtemp(dir=workdir))
    try:
        project = copy_project(prepared / "base.db", here / "project" / "p.db")
        (here / "out").mkdir()
        (project.parent / "notes.db").write_text("not a database\n")
        argv = [resolve(token, here, project, prepared / "files") for token in argv_tokens]
        db = Path(argv[argv.index("--db") + 1]) if "--db" in argv else None
        watched = db if db is not None and db.parent == project.parent else project
        before, files = project_state(watched), folder_files(project.parent)
        untouched = project_state(project)
        outcome = run_cli(capfd, argv)
        check_promises(outcome, watched, before, files)
        if watched != project:
            assert project_state(project) == untouched, (
                "a command on another --db changed the project\n" + outcome.describe())
    finally:
        shutil.rmtree(here, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c in COMMANDS if c.path not in SLOW], ids=repr)
@examples(16)
@given(data=st.data())
def test_hostile_options_keep_the_promises(command, data, prepared, workdir, capfd):
    check_command(data.draw(argv_for(command), label="argv"), prepared, workdir, capfd)


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.path in SLOW], ids=repr)
@examples(6)
@given(data=st.data())
def test_hostile_options_of_slow_commands_keep_the_promises(command, data, prepared, workdir, capfd):
    check_command(data.draw(argv_for(command), label="argv"), prepared, workdir, capfd)


def test_demo_without_a_terminal_builds_nothing(workdir, capfd):
    # was: the demo project was built (seconds), a success line printed, then the refusal
    outcome = run_cli(capfd, ["--db", str(workdir / "demo.db"), "demo"])
    check_promises(outcome)
    assert outcome.code == 2 and "needs a terminal" in outcome.err
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize(("argv", "told"), [
    # an integer option names itself and its range (the one integer type): no need for -h
    (["agree", "--limit", "abc"], "ragjudge: --limit 'abc': the number of pairs to list is a whole number from 0 to"),
    (["agree", "--bogus"], "-h'."), (["import"], "-h'."), (["eval", "--k"], "-h'."),
    (["agree", "--" + OSC52], "-h'.")])
def test_usage_mistakes_are_one_clean_line(argv, told, prepared, workdir, capfd):
    # was: click's box of five lines ("Usage: ...", "Try ...", a framed error)
    outcome = run_cli(capfd, ["--db", str(prepared / "base.db"), *argv])
    check_promises(outcome)
    assert outcome.code == 2 and outcome.err.startswith("ragjudge: ") and told in outcome.err


@pytest.mark.parametrize("argv", [
    ["export", "labels", "-o", Ref("project")],
    ["export", "qrels", "--format", "jsonl", "-o", Ref("project")],
    ["backup", "-o", Ref("project"), "--force"],
    ["demo", "--fresh", "--no-tui"],
], ids=["export labels", "export qrels", "backup", "demo"])
def test_no_command_writes_over_the_project(argv, prepared, workdir, capfd):
    """The options that name a file to write, pointed at the project itself."""
    check_command(["--db", Ref("project"), *argv], prepared, workdir, capfd)
