"""``ragjudge annotate``: its options are checked before the screen opens (one line, exit 2)."""

from __future__ import annotations

import pytest
from tui_project import build_project

from ragjudge.cli import main
from ragjudge.cli.judging import parse_queries
from ragjudge.errors import InputError, UsageError


def test_parse_queries_from_a_list_and_a_file(tmp_path):
    assert parse_queries("q1, q2,,q3") == ["q1", "q2", "q3"]
    path = tmp_path / "ids.txt"
    path.write_text("q4\n# a comment\n\nq5  # trailing\n", encoding="utf-8")
    assert parse_queries(str(path)) == ["q4", "q5"]
    path.write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(InputError):
        parse_queries(str(path))
    with pytest.raises(UsageError):
        parse_queries(" , ")


@pytest.mark.parametrize("options, message", [
    (["--runs", "nope"], "no run named nope"),
    (["--order", "random"], "--order random"),
    (["--depth", "0"], "--depth 0"),
    (["--queries", "zz1,zz2"], "--queries"),
    (["--recheck", "1.5"], "--recheck 1.5"),
    (["--annotator", " "], "annotator name is empty"),
])
def test_bad_options_are_one_line_and_exit_2(tmp_path, capsys, options, message):
    db = str(tmp_path / "p.db")
    build_project(db).close()
    assert main(["--db", db, "annotate", *options]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
