"""What the command line tells a user who gives it an odd value or asks an odd question: each
test is a case a user or a prober tried, with what was said before in a comment.

- ``--rule ''`` is refused by every command that takes a rule (it was the project's rule);
- ids holding invisible characters are marked in every table, and a value echoed in a message
  shows an ESC as ``␛`` (never Python's ``'\\x1b'``), whichever layer words the message;
- a folder given where a file belongs is said to be a folder;
- ``eval --rule adjudicated`` or ``reference`` with nothing to read says so even where answers
  are judged (the relevance measures were left out with no word why);
- ``gate`` shows the required value as written and as many digits as tell it from the value;
- a read-only command's refusal does not end with "Nothing was changed.";
- ``status`` names the reference qrels;
- a Metric@K curve has at most ``MAX_CURVE_CUTOFFS`` cutoffs (``1-100000`` ran for minutes);
- per-query tables list queries in natural order (1, 2, 10), in the table and in JSON.
"""

from __future__ import annotations

import ast
import json
import math
import re
import shutil
from pathlib import Path

import pytest
import typer.main

from ragjudge.cli import _register, common, main
from ragjudge.cli.app import app
from ragjudge.cli.scoring import MAX_CURVE_CUTOFFS
from ragjudge.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_project(monkeypatch):
    monkeypatch.setitem(common.CLI_STATE, "db", None)
    monkeypatch.delenv("RAGJUDGE_DB", raising=False)
    monkeypatch.delenv("RAGJUDGE_USER", raising=False)
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture(scope="module")
def demo_file(tmp_path_factory) -> Path:
    from ragjudge.services.transfer.demo import build_demo

    path = tmp_path_factory.mktemp("demo") / "demo.db"
    build_demo(str(path))
    return path


@pytest.fixture
def demo_db(demo_file, tmp_path) -> str:
    target = tmp_path / "demo.db"
    shutil.copyfile(demo_file, target)
    return str(target)


def run(capsys, *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    said = capsys.readouterr()
    return code, said.out, said.err


def flat(text: str) -> str:
    return " ".join(text.split())


# -- --rule '' ---------------------------------------------------------------------------------------

RULE_COMMANDS = [
    ["eval"],
    ["eval", "-m", "P@5", "--per-query"],
    ["eval", "--curve", "nDCG", "--k", "1-5"],
    ["compare", "bm25", "hybrid"],
    ["gate", "--run", "bm25", "--require", "P@5>=0.1"],
    ["explain", "--run", "bm25", "--query", "q01", "-m", "P@5"],
    ["export", "qrels", "-o", "{out}"],
    ["report", "-o", "{out}.html"],
    ["settled", "-m", "P@5"],
]


@pytest.mark.slow
@pytest.mark.parametrize("words", RULE_COMMANDS, ids=lambda w: " ".join(w[:2]))
@pytest.mark.parametrize("rule", ["", " "])
def test_an_empty_rule_is_refused_by_every_command_that_takes_one(capsys, demo_db, tmp_path, words, rule):
    # was: eval --rule '' scored under the project's rule, as if no --rule had been given
    out = tmp_path / "out"
    args = [w.replace("{out}", str(out)) for w in words]
    code, stdout, err = run(capsys, "--db", demo_db, *args, "--rule", rule)
    assert code == 2, (stdout, err)
    assert err == ("ragjudge: --rule (empty) is not a gold rule. Use one of: median, majority, mean, "
                   "min, max, reference (the reference qrels alone), adjudicated, or annotator:NAME.\n")
    assert stdout == "" and not list(tmp_path.glob("out*"))


def test_an_empty_rule_is_refused_by_the_services_too(demo_db):
    # the web API passes ?rule= through to the same services
    from ragjudge.services.gold.gold import gold
    from ragjudge.services.project.database import Project
    from ragjudge.services.scoring.live import LiveEvaluation

    with Project.open(demo_db) as project:
        for make in (lambda: gold(project, ""), lambda: LiveEvaluation(project, rule="")):
            with pytest.raises(UsageError, match=r"--rule \(empty\)"):
                make()
        assert gold(project, None).composition.rule == "median"  # no rule: the project's


# -- invisible characters and control characters -----------------------------------------------------

INVISIBLE_IDS = {"q1": "q1", "q\u200b1": "q⟨U+200B⟩1", "q\u200d1": "q⟨U+200D⟩1", "\ufeffq1": "⟨U+FEFF⟩q1",
                 "q\u200c1": "q⟨U+200C⟩1"}


@pytest.fixture
def invisible_db(tmp_path, capsys) -> str:
    """A project whose query ids differ only by a zero-width character, judged by ana."""
    db = str(tmp_path / "inv.db")
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps({"id": q, "text": f"text of {q}"}) + "\n" for q in INVISIBLE_IDS),
                       encoding="utf-8")
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text('{"id": "c1", "text": "one"}\n{"id": "c2", "text": "two"}\n', encoding="utf-8")
    runfile = tmp_path / "bm25.trec"
    runfile.write_text("".join(f"{q} Q0 c{r} {r} {3 - r} bm25\n" for q in INVISIBLE_IDS for r in (1, 2)),
                       encoding="utf-8")
    qrels = tmp_path / "ana.qrels"
    qrels.write_text("".join(f"{q} 0 c1 1\n{q} 0 c2 0\n" for q in INVISIBLE_IDS), encoding="utf-8")
    assert run(capsys, "--db", db, "init", "--scale", "binary")[0] == 0
    for kind, path in (("queries", queries), ("chunks", chunks), ("run", runfile)):
        assert run(capsys, "--db", db, "import", kind, path)[0] == 0
    assert run(capsys, "--db", db, "import", "qrels", qrels, "--annotator", "ana")[0] == 0
    return db


def test_ids_that_differ_by_an_invisible_character_look_different_in_every_table(capsys, invisible_db):
    # was: U+200D (and U+200C) between two letters reached the screen unmarked, so 'q‍1' and
    # 'q1' were two rows that looked the same
    for args in (["eval", "-m", "P@1", "--per-query"], ["export", "labels", "--format", "csv"]):
        code, out, err = run(capsys, "--db", invisible_db, *args)
        assert code == 0, err
        if args[0] == "eval":
            rows = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│ ")]
            assert sorted(r for r in rows if r in INVISIBLE_IDS.values()) == sorted(INVISIBLE_IDS.values())
            assert not re.search("[\u200b-\u200d\ufeff]", out)
        else:  # data is data: a file keeps the ids exactly
            assert "q\u200d1" in out
    code, out, err = run(capsys, "--db", invisible_db, "explain", "--run", "bm25", "--query", "q\u200d1",
                         "-m", "P@1")
    assert code == 0, err
    assert "q⟨U+200D⟩1" in out and "\u200d" not in out


def test_an_id_with_esc_is_refused_at_import_naming_file_line_and_field(capsys, tmp_path):
    db = str(tmp_path / "p.db")
    assert run(capsys, "--db", db, "init")[0] == 0
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"id": "q1", "text": "a"}\n{"id": "q\\u001b[31m2", "text": "b"}\n', encoding="utf-8")
    code, _, err = run(capsys, "--db", db, "import", "queries", queries)
    assert code == 2
    assert err.startswith(f"ragjudge: {queries}, line 2, field 'id':") and "␛" in err
    assert "\x1b" not in err and "\\x1b" not in err and "\\u001b" not in err


ECHOES = [
    (["explain", "--run", "bm25", "--query", "h2\x1b[31m", "-m", "P@5"], "'h2␛[31m'"),
    (["eval", "-m", "P@\x1b5"], "'P@␛5'"),
    (["eval", "-m", "P(x\x1b=1)@5"], "'x␛'"),
    (["eval", "--rule", "annotator:b\x1b"], "'b␛'"),
    (["eval", "--rule", "x\x1by"], "'x␛y'"),
    (["eval", "--by", "c\x1b"], "'c␛'"),
    (["gate", "--run", "bm25", "--require", "P@5>=\x1b"], "'P@5>=␛'"),
    (["gate", "--run", "bm25", "--require", "P\x1b@5>=0.1"], "'P␛@5>=0.1'"),
    (["review", "--annotator", "a\x1b"], "'a␛'"),
    (["queue", "--annotator", "ana", "--category", "x\x1b"], "'x␛'"),
    (["annotators", "blind", "x\x1b"], "'x␛'"),
    (["annotators", "x\x1b"], "'x␛'"),
    (["settled", "--runs", "bm25,\x1b"], "␛"),
]


@pytest.mark.parametrize(("words", "shown"), ECHOES, ids=lambda w: " ".join(w[:2]) if isinstance(w, list) else None)
def test_a_value_echoed_in_a_message_shows_esc_as_safetext_does(capsys, demo_db, words, shown):
    # was: explain --query $'h2\e[31m' said "query 'h2\x1b[31m'" (Python's repr), as did the
    # measure parser, the roster, review, queue and the gold rule
    code, _, err = run(capsys, "--db", demo_db, *words)
    assert code == 2
    assert shown in err, err
    assert "\\x1b" not in err and "\x1b" not in err


@pytest.mark.slow
def test_no_error_message_quotes_a_value_with_python_repr():
    """A value in the message of an error a user can cause is quoted with ``safetext.quote``
    (control characters as pictures, invisible ones marked), never with ``!r`` (Python's escapes:
    ``'\\x1b'``, ``'\\u200b'``). Errors of the programmer's own (ValueError) may use repr."""
    errors = {"UsageError", "InputError", "ProjectError", "OutputError", "RagjudgeError", "CheckFailed"}
    found = []
    for path in sorted((ROOT / "ragjudge").rglob("*.py")):
        if {"web", "tui"} & set(path.relative_to(ROOT).parts):
            continue  # pages and dialogs escape for their own medium
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name in errors and "pass extras=" not in ast.unparse(node):  # Python code shown as such
                for sub in ast.walk(node):
                    if (isinstance(sub, ast.FormattedValue) and sub.conversion == ord("r")) or (
                            isinstance(sub, ast.Name) and sub.id == "repr"):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(sub)}")
    assert found == []
    assert ROOT.joinpath("ragjudge", "cli", "scoring.py").exists()  # the walk reads the tree


# -- folders -------------------------------------------------------------------------------------------

def test_a_plain_folder_is_said_to_be_a_folder_wherever_a_file_belongs(capsys, demo_db, tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello\n")
    cases = [
        # was: "a BEIR folder needs a file queries.jsonl"
        (["import", "queries", folder], "is a folder, not a file, and holds no BEIR dataset"),
        # was: "plain is read as a BEIR dataset (a folder), which holds no run"
        (["import", "run", folder], "is a folder, not a run file"),
        # was: "--run plain: no such file, and the project has no run of that name"
        (["eval", "--run", folder], "is a folder, not a run file"),
        (["compare", "bm25", folder], "is a folder, not a run file"),
        (["eval", "--qrels", folder, "--run", "bm25"], "is a folder, not a qrels file"),
    ]
    for words, said in cases:
        code, _, err = run(capsys, "--db", demo_db, *words)
        assert code == 2 and f"{folder}: {said}" in err, (words, err)
    # a BEIR folder given for a kind it does not hold is still told so
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    code, _, err = run(capsys, "--db", demo_db, "import", "run", beir)
    assert code == 2 and "is read as a BEIR dataset (a folder), which holds no run" in err
    # a project run beats a folder of the same name
    (tmp_path / "bm25").mkdir()
    import os

    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert run(capsys, "--db", demo_db, "eval", "--run", "bm25", "-m", "P@1")[0] == 0
    finally:
        os.chdir(here)


# -- the gold's rule with nothing to read -----------------------------------------------------------------

def test_rule_adjudicated_where_answers_are_judged_says_no_pair_is_adjudicated(capsys, demo_db):
    # the demo has 1,800 labels, no adjudication, and judged answers: eval runs (the answer
    # measures are defined) and said only "gold: adjudicated", every relevance measure left out
    # "for the run's judged answer"
    code, out, err = run(capsys, "--db", demo_db, "eval", "--rule", "adjudicated")
    assert code == 0, err
    text = flat(out)
    assert "gold: adjudicated · no pair is adjudicated yet, so no pair is judged" in text
    assert "no labels yet" not in text + err
    code, out, err = run(capsys, "--db", demo_db, "eval", "--rule", "reference")
    assert code == 0, err
    assert "gold: reference · the project has no reference qrels, so no pair is judged" in flat(out)
    assert "0 pairs from 0 annotators" not in flat(out)


# -- gate -------------------------------------------------------------------------------------------------

def test_gate_shows_the_required_value_as_written_and_the_digits_that_differ(capsys, demo_db):
    code, out, _ = run(capsys, "--db", demo_db, "gate", "--run", "title_only", "--require", "nDCG@10>=0.1",
                       "--format", "json")
    actual = json.loads(out)["checks"][0]["actual"]
    above = math.nextafter(actual, 1.0)  # one last bit above the value: fails
    code, out, err = run(capsys, "--db", demo_db, "gate", "--run", "title_only", "--require",
                         f"nDCG@10>={above!r}")
    assert code == 1
    # was: the value with 12 significant digits, the threshold rounded by :g to 0.36822
    assert f"nDCG@10 = {actual!r}, required >= {above!r}" in flat(err)
    assert repr(actual) in out and repr(actual) != repr(above)
    # a percentage is the decimal written: 36.83% is 0.3683, not 0.36829999999999996
    code, _, err = run(capsys, "--db", demo_db, "gate", "--run", "title_only", "--require", "nDCG@10>=99.5%")
    assert code == 1 and "required >= 0.995)" in flat(err)
    code, _, err = run(capsys, "--db", demo_db, "gate", "--run", "title_only", "--require", "nDCG@10>=36.83%")
    assert "required >= 0.3683)" in flat(err)
    # a number too large for a float is refused, not compared as infinity
    code, _, err = run(capsys, "--db", demo_db, "gate", "--run", "title_only", "--require", "nDCG@10<=1e400")
    assert code == 2 and "too large a number" in err and "inf" not in err


# -- refusals of commands that change nothing ------------------------------------------------------------

READ_ONLY = {
    "status": [], "eval": [], "compare": ["a", "b"], "gate": ["-r", "a", "--require", "P@1>=0.1"],
    "explain": ["-r", "a", "-q", "q", "-m", "P@1"], "report": ["-o", "{tmp}/r.html"], "settled": [],
    "queue": ["--annotator", "ana"], "agree": [], "disputes": [], "quality": [], "verify": [],
    "export": ["qrels", "-o", "{tmp}/q.txt"], "review": [], "annotators": [],
    "backup": ["-o", "{tmp}/b.db"],
}
READ_ONLY_BRANCHES = {
    "adjudicate": ["--query", "q", "--chunk", "c", "--show"],
    "llm-judge": ["--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--dry-run"],
    "scale": ["show"],
}
WRITES = {
    "init": [], "demo": ["--no-tui"], "import": ["queries", "{tmp}/q.jsonl"], "assign": ["--annotators", "a,b"],
    "annotate": ["--annotator", "ana"], "serve": [],
    "adjudicate": ["--query", "q", "--chunk", "c", "--grade", "1", "--reason", "r"],
    "llm-judge": ["--base-url", "http://127.0.0.1:1/v1", "--model", "m"],
    "scale": ["names", "a,b,c,d"],
}


def test_every_command_is_known_to_read_only_or_to_write():
    _register()
    names = set(typer.main.get_command(app).commands)
    assert names == set(READ_ONLY) | set(WRITES), names ^ (set(READ_ONLY) | set(WRITES))


@pytest.mark.parametrize("words", [[k, *v] for k, v in {**READ_ONLY, **READ_ONLY_BRANCHES}.items()],
                         ids=lambda w: w[0])
def test_a_read_only_command_refused_does_not_say_nothing_was_changed(capsys, tmp_path, words):
    # was: report, settled, queue and backup ended their refusals with "Nothing was changed."
    notdb = tmp_path / "notdb.db"
    notdb.write_text("hello\n")
    (tmp_path / "q.jsonl").write_text('{"id": "q", "text": "x"}\n')
    code, _, err = run(capsys, "--db", notdb, *(w.replace("{tmp}", str(tmp_path)) for w in words))
    assert code == 2 and "is not a ragjudge project" in err
    assert "Nothing was changed" not in err


@pytest.mark.parametrize("words", [[k, *v] for k, v in WRITES.items() if k not in ("init", "demo")],
                         ids=lambda w: w[0])
def test_a_command_that_writes_still_says_nothing_was_changed(capsys, tmp_path, words):
    notdb = tmp_path / "notdb.db"
    notdb.write_text("hello\n")
    (tmp_path / "q.jsonl").write_text('{"id": "q", "text": "x"}\n')
    code, _, err = run(capsys, "--db", notdb, *(w.replace("{tmp}", str(tmp_path)) for w in words))
    assert code == 2 and err.rstrip().endswith("Nothing was changed.")


# -- status ---------------------------------------------------------------------------------------------

def test_status_names_the_reference_qrels_and_whether_they_are_complete(capsys, demo_db, tmp_path):
    code, out, _ = run(capsys, "--db", demo_db, "status")
    assert code == 0 and "reference qrels: none ('ragjudge import qrels FILE --reference' sets them)" in out
    qrels = tmp_path / "nist.qrels"
    qrels.write_text("q01 0 damaged-01 2\nq01 0 lost-01 0\n")
    assert run(capsys, "--db", demo_db, "import", "qrels", qrels, "--annotator", "nist", "--reference",
               "--complete")[0] == 0
    code, out, _ = run(capsys, "--db", demo_db, "status")
    assert "reference qrels: nist (complete: an unlisted pair of its queries is not relevant)" in flat(out)
    code, out, _ = run(capsys, "--db", demo_db, "status", "--format", "json")
    assert json.loads(out)["reference"] == [{"name": "nist", "complete": True}]


# -- curves ---------------------------------------------------------------------------------------------

def test_a_curve_has_at_most_its_documented_number_of_cutoffs(capsys, demo_db):
    # was: --k 1-100000 (within the documented cutoff limit) did not finish in 90 s on the demo
    code, out, err = run(capsys, "--db", demo_db, "eval", "--curve", "nDCG", "--k", "1-100000")
    assert code == 2 and out == ""
    assert f"that is 100,000 cutoffs, and a curve has at most {MAX_CURVE_CUTOFFS:,}" in err
    assert run(capsys, "--db", demo_db, "report", "-o", "/dev/null", "--k", f"1-{MAX_CURVE_CUTOFFS + 1}")[0] == 2
    capsys.readouterr()
    # a deep curve is a short list of deep cutoffs
    code, out, err = run(capsys, "--db", demo_db, "eval", "--curve", "nDCG", "--k", "1,10,100,100000",
                         "--format", "json")
    assert code == 0, err
    assert json.loads(out)["k"] == [1, 10, 100, 100000]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"a curve at most {MAX_CURVE_CUTOFFS:,}\ncutoffs" in readme


# -- natural order ---------------------------------------------------------------------------------------

def test_per_query_tables_list_queries_in_natural_order(capsys, tmp_path):
    qrels = tmp_path / "q.qrels"
    qrels.write_text("".join(f"{q} 0 c1 1\n" for q in ("10", "2", "1", "q10", "q9")))
    runfile = tmp_path / "r.trec"
    runfile.write_text("".join(f"{q} Q0 c1 1 1.0 r\n" for q in ("1", "10", "2", "q10", "q9")))
    natural = ["1", "2", "10", "q9", "q10"]
    code, out, _ = run(capsys, "eval", "--qrels", qrels, "--run", runfile, "-m", "P@1", "--per-query")
    assert code == 0
    rows = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│ ")]
    assert rows[-len(natural):] == natural
    code, out, _ = run(capsys, "eval", "--qrels", qrels, "--run", runfile, "-m", "P@1", "--per-query",
                       "--format", "json")
    assert list(json.loads(out)["runs"]["r"]["per_query"]) == natural


# -- who runs a command without an identity --by ---------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("words", [["eval", "-m", "P@5"], ["compare", "bm25", "hybrid"],
                                   ["gate", "--run", "bm25", "--require", "P@5>=0.1"], ["settled", "-m", "P@5"],
                                   ["explain", "--run", "bm25", "--query", "q01", "-m", "P@5"]],
                         ids=lambda w: w[0])
def test_a_refusal_names_ragjudge_user_where_by_is_not_who_runs_the_command(capsys, demo_db, monkeypatch, words):
    # was: "Ask a lead (on the command line: --by a lead's name)", and eval --by dora reads dora
    # as a query field to stratify by; compare, gate and settled have no --by at all
    monkeypatch.setattr("getpass.getuser", lambda: "someone-at-a-terminal")
    assert run(capsys, "--db", demo_db, "annotators", "add", "dora", "--role", "lead")[0] == 0
    code, _, err = run(capsys, "--db", demo_db, *words, "--rule", "annotator:ana")
    assert code == 2
    if words[0] == "explain":  # its --by says who looks: the advice stands
        assert "(on the command line: --by a lead's name)" in flat(err)
    else:
        assert "set $RAGJUDGE_USER to a lead's name" in flat(err) and "--by a lead's name" not in err
    monkeypatch.setenv("RAGJUDGE_USER", "dora")
    assert run(capsys, "--db", demo_db, *words, "--rule", "annotator:ana")[0] in (0, 1)  # the lead may


def test_a_csv_column_given_twice_is_named(capsys, tmp_path):
    # was: "a column name appears twice in the header", without saying which (a JSON key given
    # twice was already named)
    db = str(tmp_path / "p.db")
    assert run(capsys, "--db", db, "init")[0] == 0
    queries = tmp_path / "queries.csv"
    queries.write_text("id,text,id\nx1,hello,x2\n", encoding="utf-8")
    code, _, err = run(capsys, "--db", db, "import", "queries", queries)
    assert code == 2
    assert err.startswith(f"ragjudge: {queries}, line 1, field 'id': the column 'id' appears twice")
