"""The options of every command are read one way: every integer option by the one integer type
(digits only, bounded, the option named), ``--db`` found wherever it is but never in another
option's value."""

from __future__ import annotations

import pytest
import typer.main

from ragjudge.cli import _register, command_of, hoist_db, main, value_options
from ragjudge.cli.app import app
from ragjudge.cli.base import Integer
from ragjudge.errors import UsageError


from clikit import no_project  # noqa: F401 - autouse: no project named by the environment


def _commands() -> dict[str, object]:
    _register()
    return dict(typer.main.get_command(app).commands)


def _is_int(annotation: object) -> bool:
    return annotation is int or "int" in getattr(annotation, "__args__", ())


def test_every_integer_option_of_every_command_is_read_by_the_integer_type():
    found = []
    for name, command in _commands().items():
        for param in command.params:
            descriptor = getattr(param, "type_descriptor", None)
            if descriptor is None or not _is_int(descriptor.annotation):
                continue
            parser = descriptor.parameter_info.parser
            assert isinstance(parser, Integer), f"{name} {param.opts[0]} is read by {parser!r}"
            assert parser.option in param.opts, (name, param.opts, parser.option)
            found.append(f"{name} {parser.option}")
    # the walk does see the integer options (a broken walk would pass vacuously)
    assert {"eval --threshold", "compare --seed", "compare --permutations", "disputes --limit",
            "serve --port", "llm-judge --retries", "init --threshold"} <= set(found)


COMMAND_LINES = [
    ["eval", "--qrels", "q.trec", "--run", "r.trec", "--threshold", "{}"],
    ["compare", "a.trec", "b.trec", "--qrels", "q.trec", "--seed", "{}"],
    ["compare", "a.trec", "b.trec", "--qrels", "q.trec", "--permutations", "{}"],
    ["disputes", "--limit", "{}"],
    ["agree", "--limit", "{}"],
    ["assign", "--annotators", "a,b", "--depth", "{}"],
    ["adjudicate", "--query", "q1", "--chunk", "c1", "--grade", "{}", "--reason", "r"],
    ["init", "--threshold", "{}"],
    ["serve", "--port", "{}"],
    ["llm-judge", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--concurrency", "{}"],
]


@pytest.mark.slow
@pytest.mark.parametrize("words", COMMAND_LINES, ids=lambda w: w[0] + " " + w[-2 if w[-1] == "{}" else -4])
@pytest.mark.parametrize("value", ["1_0", "\uff11", " 1", "1.0"])
def test_what_pythons_int_reads_is_refused_naming_the_option(capsys, tmp_path, words, value):
    """``1_0`` is 10 to Python's int(), ``１`` 1: refused before the command runs, with the
    option and its range named; no project is created."""
    db = tmp_path / "never.db"
    args = ["--db", str(db), *(value if w == "{}" else w for w in words)]
    option = words[words.index("{}") - 1]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ragjudge: {option} '"), err
    assert "is a whole number from" in err and err.count("\n") == 1
    assert not db.exists()


def test_the_integer_type_reads_digits_and_bounds():
    depth = Integer("--depth", 1, 100, "the pool depth")
    assert depth("7") == 7 and depth("+007") == 7 and depth(5) == 5 and depth(None) is None
    with pytest.raises(UsageError, match=r"^--depth 101: the pool depth is a whole number from 1 to 100\.$"):
        depth("101")
    with pytest.raises(UsageError, match=r"^--depth '1_0': .* written in the digits 0-9\.$"):
        depth("1_0")
    with pytest.raises(UsageError, match="␛"):  # control characters are shown, not obeyed
        depth("\x1b[31m")


def test_db_is_found_anywhere_but_in_another_options_value():
    commands = _commands()
    options = value_options(commands["adjudicate"])
    assert {"--query", "--chunk", "--grade", "--reason", "--by", "--format"} <= options
    assert "--show" not in options  # a flag takes no value
    line = ["adjudicate", "--reason", "--db", "--query", "q1", "--db", "x.db"]
    assert hoist_db(line, options) == ["--db", "x.db", "adjudicate", "--reason", "--db", "--query", "q1"]
    assert hoist_db(["eval", "--name=--db", "--db=y.db"], value_options(commands["eval"])) == [
        "--db", "y.db", "eval", "--name=--db"]
    # short options run together: the last one's value follows
    assert hoist_db(["eval", "-qm", "--db", "--db", "z.db"], value_options(commands["eval"])) == [
        "--db", "z.db", "eval", "-qm", "--db"]
    with pytest.raises(UsageError, match="--db needs a value"):
        hoist_db(["status", "--db"], value_options(commands["status"]))
    assert command_of(["--db", "x.db", "status"]) == "status"
    assert command_of(["--db=x.db", "eval"]) == "eval" and command_of(["--help"]) is None


def test_a_reason_may_be_the_word_db(capsys, tmp_path):
    """``--reason --db``: click gives --reason the value "--db"; the hoisting of --db agrees
    (it took it for a --db without a value and refused the command line)."""
    from projectkit import make_small_project

    from ragjudge.services.labels.events import record_label

    path = str(tmp_path / "p.db")
    project = make_small_project(path)
    record_label(project, annotator="ana", query_id="q1", chunk_id="c05", grade=2)
    project.close()
    code = main(["adjudicate", "--query", "q1", "--chunk", "c05", "--grade", "1", "--reason",
                 "--db", "--db", path, "--format", "json", "--by", "lead"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert '"reason": "--db"' in out
