"""The TREC reader's paths give the same import: the same refusal, word for word, on every kind
of bad line, and the same project on every file they accept. Each file is imported into copies
of one project three times: through the pyarrow path (forced on for small files), through the
numpy path alone, and through the line path alone (the one that words every message)."""

from __future__ import annotations

import contextlib
import gzip
import shutil

import pytest
from test_import_export import BAD_INPUTS, GOOD_RUN

from projectkit import make_small_project
from ragjudge.services.overview import project_status
from ragjudge.errors import RagjudgeError

pytest.importorskip("pyarrow")

LONG = "x" * 801
RUNS = {
    "plain": GOOD_RUN,
    "five fields": "q1 Q0 c01 1 1.0 r\nq1 Q0 c02 2 0.5\n",
    "seven fields": "q1 Q0 c01 1 1.0 r x\n",
    "score text": "q1 Q0 c01 1 abc r\n",
    "score nan": "q1 Q0 c01 1 nan r\n",
    "score inf": "q1 Q0 c01 1 inf r\n",
    "score overflow": "q1 Q0 c01 1 1e999 r\n",
    "score underscore": "q1 Q0 c01 1 1_0 r\nq1 Q0 c02 2 0.5 r\n",
    "score hex": "q1 Q0 c01 1 0x10 r\n",
    "score forms": "q1 Q0 c01 1 +.5 r\nq1 Q0 c02 2 5. r\nq1 Q0 c03 3 -1E-3 r\nq1 Q0 c04 4 007 r\n",
    "rank text": "q1 Q0 c01 one 1 r\n",
    "rank decimal": "q1 Q0 c01 1.5 1 r\n",
    "rank underscore": "q1 Q0 c01 1_0 1 r\n",
    "rank plus": "q1 Q0 c01 +3 1 r\n",
    "rank other digits": "q1 Q0 c01 \u0663 1 r\n",
    "rank huge": "q1 Q0 c01 99999999999999999999 1 r\n",
    "rank zero and negative": "q1 Q0 c01 0 1 r\nq1 Q0 c02 -4 2 r\n",
    "rank of ten digits": "q1 Q0 c01 1234567890 1 r\nq1 Q0 c02 0000000002 0.5 r\n",
    "twice": "q1 Q0 c01 1 1.0 r\nq1 Q0 c02 2 0.5 r\nq1 Q0 c01 3 0.2 r\n",
    "twice far apart": "q1 Q0 c01 1 1 r\nq1 Q0 c02 2 1 r\nq1 Q0 c02 3 1 r\nq1 Q0 c01 4 1 r\n",
    "unknown ids": "q1 Q0 c01 1 1 r\nq1 Q0 zz1 2 0.9 r\nq9 Q0 zz2 1 1 r\nq8 Q0 c01 1 1 r\n",
    "long id": f"q1 Q0 c01 1 1 r\nq1 Q0 {LONG} 2 0.5 r\n",
    "no-break space": "q1 Q0 c0\u00a01 1 1 r\n",
    "em space": "q1 Q0 c0\u20031 1 1 r\n",
    "next line": "q1 Q0 c01\u00852 1 1 r\n",
    "non-ascii id": "q1 Q0 c\u00e901 1 1 r\n",
    "not utf-8": b"q1 Q0 c01 1 1 r\nq1 Q0 c\xe902 2 1 r\n",
    "byte order mark": "\ufeffq1 Q0 c01 1 1 r\n",
    "crlf": "q1 Q0 c01 1 1 r\r\nq1 Q0 c02 2 0.5 r\r\n",
    "tabs": "q1\tQ0\tc01\t1\t1\tr\n",
    "two spaces": "q1  Q0 c01 1 1 r\n",
    "blank line": "q1 Q0 c01 1 1 r\n\nq1 Q0 c02 2 0.5 r\n",
    "nul": "q1 Q0 c0\x001 1 1 r\n",
    "escape": "q1 Q0 c0\x1b[31m1 1 1 r\n",
    "delete": "q1 Q0 c0\x7f1 1 1 r\n",
    "c1 control": "q1 Q0 c0\u009b1 1 1 r\n",
    "control in the tag": "q1 Q0 c01 1 1 r\x07\n",
    "ties": "q1 Q0 c02 1 0.5 r\nq1 Q0 c10 2 0.5 r\nq1 Q0 c03 3 0.9 r\nq1 Q0 c01 4 0.5 r\n",
    "ungrouped": "q2 Q0 c01 1 1 r\nq1 Q0 c01 1 1 r\nq2 Q0 c02 2 3 r\nq1 Q0 c03 2 0.1 r\n",
    "empty": "",
    "gzip": gzip.compress(GOOD_RUN.encode()),
    "truncated gzip": gzip.compress(GOOD_RUN.encode() * 30)[:600],
}
QRELS = {
    "plain": "q1 0 c01 3\nq1 0 c02 0\nq2 0 c05 1\n",
    "three fields": "q1 0 c01 1\nq1 0 c02\n",
    "grade decimal": "q1 0 c01 1.5\n",
    "grade text": "q1 0 c01 high\n",
    "grade off the scale": "q1 0 c01 1\nq1 0 c02 4\n",
    "grade negative": "q1 0 c01 -1\n",
    "grades negative among others": "q1 0 c01 2\nq1 0 c02 -1\nq2 0 c05 -2\nq2 0 c06 1\n",
    "negative then off the scale": "q1 0 c01 -1\nq1 0 c02 7\n",
    "negative contradicted": "q1 0 c01 -1\nq1 0 c01 2\n",
    "grade underscore": "q1 0 c01 1_0\n",
    "grade plus": "q1 0 c01 +2\n",
    "grade huge": "q1 0 c01 5000\n",
    "contradiction": "q1 0 c01 1\nq2 0 c02 1\nq1 0 c01 3\n",
    "repeat": "q1 0 c01 1\nq1 0 c01 1\n",
    "unknown ids": "q1 0 zz 1\nq7 0 c01 2\n",
    "long id": f"q1 0 {LONG} 1\n",
    "em space": "q1 0 c0\u20031 1\n",
    "c1 control": "q1 0 c0\u00851 1\n",
    "delete": "q1 0 c\x7f01 1\n",
    "crlf": "q1 0 c01 3\r\nq1 0 c02 0\r\n",
    "three columns": "q1 c01 3\nq1 c02 0\nq2 c05 1\n",
    "smart, one second field": "q1 c01 0 0\nq2 c01 0 0\n",
    "smart": "q1 c01 0 0\nq1 c02 0 0\nq2 c05 0 0.000000\n",
    "smart-looking, then trec": "q1 0 0 0\nq2 0 c05 1\n",
}
CASES = ([("run", name, content) for name, content in RUNS.items()]
         + [("qrels", name, content) for name, content in QRELS.items()]
         + [(kind, name, content) for kind, name, content, *_ in BAD_INPUTS
            if kind in ("run", "qrels", "labels")])
#: each path of the TREC reader: the fast paths it may take, and the size from which it tries
#: pyarrow (0: every file)
PATHS = {"pyarrow": (("arrow", "numpy"), 0), "numpy": (("numpy",), 1 << 62), "lines": ((), 1 << 62)}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    db = tmp_path_factory.mktemp("base") / "base.db"
    make_small_project(str(db)).close()
    return db


def outcome(db: str, kind: str, path: str, **options) -> tuple:
    """The refusal's message, or what the project holds afterwards."""
    from ragjudge.services.transfer import exporting
    from ragjudge.services.runs.stored import project_run_names
    from ragjudge.services.transfer.importing import import_file
    from ragjudge.services.project.database import Project
    from ragjudge.services.events.labels import current_labels

    with Project.open(db) as project:
        try:
            result = import_file(project, kind, path, name="r" if kind == "run" else None, **options)
        except RagjudgeError as error:
            return ("refused", str(error))
        runs = {name: [(e.query_id, e.chunk_id, e.rank, e.score) for e in exporting.run_entries(project, name)]
                for name in project_run_names(project)}
        with project.connect() as connection:
            labels = current_labels(connection)
        status = project_status(project)
        return ("imported", result.summary(), runs, labels.query_ids.tolist(), labels.chunk_ids.tolist(),
                labels.grades.tolist(), status["queries"], status["chunks"])


def imports_by_path(tmp_path, base, monkeypatch, kind, name, content, **options) -> dict[str, tuple]:
    """The outcome of importing ``content`` through each path of the reader."""
    from ragjudge.metrics.trec import reader

    suffix = ".trec.gz" if name.startswith(("gzip", "truncated")) else (
        "." + name.rsplit(".", 1)[1] if "." in name else ".trec")
    path = tmp_path / ("input" + suffix)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    results = {}
    for label, (paths, arrow_from) in PATHS.items():
        db = tmp_path / f"{label}.db"
        shutil.copyfile(base, db)
        with monkeypatch.context() as patch:
            patch.setattr(reader, "FAST_PATHS", paths)
            patch.setattr(reader, "ARROW_MIN_BYTES", arrow_from)
            results[label] = outcome(str(db), kind, str(path), **options)
    return results


@pytest.mark.parametrize(("kind", "name", "content"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_the_fast_paths_and_the_line_path_agree(tmp_path, base, monkeypatch, kind, name, content):
    results = imports_by_path(tmp_path, base, monkeypatch, kind, name, content)
    assert results["pyarrow"] == results["lines"]
    assert results["numpy"] == results["lines"]


def test_what_the_paths_say_about_files_the_services_once_read_alone(tmp_path, base, monkeypatch):
    # negative ranks are refused (the column is shifted or damaged), by every path
    refused = imports_by_path(tmp_path, base, monkeypatch, "run", "ranks", RUNS["rank zero and negative"])
    assert refused["pyarrow"][0] == "refused" and "line 2, field 'rank'" in refused["pyarrow"][1]
    # SMART's "query X 0 0" with one X: ambiguous, refused with the way out
    smart = imports_by_path(tmp_path, base, monkeypatch, "qrels", "smart1", QRELS["smart, one second field"])
    assert smart["pyarrow"][0] == "refused" and "--format smart" in smart["pyarrow"][1]
    # DEL and C1 controls in an id: refused by the line path's words
    for content in (RUNS["delete"], RUNS["c1 control"]):
        found = imports_by_path(tmp_path, base, monkeypatch, "run", "ctl", content)
        assert found["pyarrow"][0] == "refused" and "control character" in found["pyarrow"][1]
        assert "field 'chunk_id'" in found["pyarrow"][1]


@pytest.mark.slow
def test_negative_grades_are_read_as_unjudged_and_left_out(tmp_path, base, monkeypatch):
    results = imports_by_path(tmp_path, base, monkeypatch, "qrels", "neg", QRELS["grades negative among others"])
    done = results["pyarrow"]
    assert done[0] == "imported"
    # 4 lines read, the two graded ones imported; the negative ones named in a note
    assert "4 read, 2 added" in done[1]
    assert "2 lines with a negative grade were read as unjudged and not imported" in done[1]
    pairs = set(zip(done[3], done[4]))
    assert ("q1", "c01") in pairs and ("q2", "c06") in pairs
    assert ("q1", "c02") not in pairs and ("q2", "c05") not in pairs
    # a negative grade is no grade off the scale, but the scale still holds for the others
    off = imports_by_path(tmp_path, base, monkeypatch, "qrels", "off", QRELS["negative then off the scale"])
    assert off["pyarrow"][0] == "refused" and "line 2, field 'grade'" in off["pyarrow"][1]


@pytest.mark.slow
def test_the_form_read_is_said(tmp_path, base, monkeypatch):
    three = imports_by_path(tmp_path, base, monkeypatch, "qrels", "three", QRELS["three columns"])
    assert "Read as qrels of 3 fields" in three["pyarrow"][1]
    smart = imports_by_path(tmp_path, base, monkeypatch, "qrels", "smart", QRELS["smart"])
    assert "Read as a SMART relevance file" in smart["pyarrow"][1]
    assert smart["pyarrow"][5] == [1, 1, 1]  # every listed pair relevant


def test_the_reader_takes_its_fast_paths_on_the_files_they_can_read(monkeypatch):
    from ragjudge.metrics.trec import reader

    read_by_lines = []
    original = reader.run_rows
    monkeypatch.setattr(reader, "run_rows", lambda *a, **k: read_by_lines.append(1) or original(*a, **k))
    monkeypatch.setattr(reader, "ARROW_MIN_BYTES", 0)
    for name in ("plain", "crlf", "gzip", "tabs", "two spaces", "blank line", "non-ascii id",
                 "score forms", "ties"):
        content = RUNS[name]
        reader.read_run_arrays(content if isinstance(content, bytes) else content.encode())
        assert not read_by_lines, name
    for name in ("byte order mark", "em space", "no-break space", "next line", "rank underscore",
                 "rank other digits", "rank plus", "rank of ten digits", "score nan",
                 "score underscore", "not utf-8", "nul", "delete", "c1 control", "five fields",
                 "truncated gzip"):
        content = RUNS[name]
        with contextlib.suppress(RagjudgeError):
            reader.read_run_arrays(content if isinstance(content, bytes) else content.encode())
        assert read_by_lines, name
        read_by_lines.clear()


# -- the shortcut for plain JSON lines -------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2000, 2000), st.floats(allow_nan=True),
                    st.text(alphabet=st.sampled_from("ab \x00\u3000\n"), max_size=4),
                    st.dictionaries(st.text(alphabet="ab\x00", max_size=2),
                                    st.one_of(st.floats(), st.text(alphabet="a\x00", max_size=2)),
                                    max_size=2),
                    st.lists(st.integers(), max_size=2))
_KEYS = st.sampled_from(["id", "text", "doc_id", "meta", "description", "category", "query_id",
                         "chunk_id", "grade", "annotator", "note", "score", "flagged"])


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["queries", "chunks", "qrels", "labels"]), st.dictionaries(_KEYS, _VALUES, max_size=6))
def test_the_shortcut_for_plain_lines_accepts_only_what_validation_accepts(kind, data):
    from ragjudge.errors import InputError
    from ragjudge.formats.records import build, plain_record

    quick = plain_record(kind, data)
    if quick is None:
        return
    try:
        full = build(kind, data, file="f", line=1)
    except InputError as error:
        raise AssertionError(f"the shortcut accepted what validation refuses: {error}") from None
    assert quick == full and quick.model_fields_set == full.model_fields_set


def test_the_shortcut_takes_the_common_lines():
    from ragjudge.formats.records import plain_record

    assert plain_record("chunks", {"id": "c1", "text": "t", "meta": {"a": [1, 2.5, "x"]}}) is not None
    assert plain_record("queries", {"id": "q1", "text": "t", "category": "c"}) is not None
    assert plain_record("labels", {"query_id": "q", "chunk_id": "c", "grade": 2, "annotator": "a"}) is not None
    assert plain_record("qrels", {"query_id": "q", "chunk_id": "c", "grade": True}) is None
    assert plain_record("chunks", {"id": " ", "text": "t"}) is None
