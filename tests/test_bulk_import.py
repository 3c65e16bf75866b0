"""The plain (bulk) reader of TREC runs and qrels and the record readers give the same import:
the same refusal, word for word, on every kind of bad line, and the same project on every file
both accept. Each file is imported twice into copies of one project: as it comes, and with the
plain reader turned off."""

from __future__ import annotations

import gzip
import shutil

import pytest
from test_import_export import BAD_INPUTS, GOOD_RUN

from projectkit import make_small_project
from ragjudge.services.overview import project_status
from ragjudge.errors import RagjudgeError

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
    "twice": "q1 Q0 c01 1 1.0 r\nq1 Q0 c02 2 0.5 r\nq1 Q0 c01 3 0.2 r\n",
    "twice far apart": "q1 Q0 c01 1 1 r\nq1 Q0 c02 2 1 r\nq1 Q0 c02 3 1 r\nq1 Q0 c01 4 1 r\n",
    "unknown ids": "q1 Q0 c01 1 1 r\nq1 Q0 zz1 2 0.9 r\nq9 Q0 zz2 1 1 r\nq8 Q0 c01 1 1 r\n",
    "long id": f"q1 Q0 c01 1 1 r\nq1 Q0 {LONG} 2 0.5 r\n",
    "no-break space": "q1 Q0 c0\u00a01 1 1 r\n",
    "em space": "q1 Q0 c0\u20031 1 1 r\n",
    "non-ascii id": "q1 Q0 c\u00e901 1 1 r\n",
    "not utf-8": b"q1 Q0 c01 1 1 r\nq1 Q0 c\xe902 2 1 r\n",
    "byte order mark": "\ufeffq1 Q0 c01 1 1 r\n",
    "crlf": "q1 Q0 c01 1 1 r\r\nq1 Q0 c02 2 0.5 r\r\n",
    "tabs": "q1\tQ0\tc01\t1\t1\tr\n",
    "two spaces": "q1  Q0 c01 1 1 r\n",
    "blank line": "q1 Q0 c01 1 1 r\n\nq1 Q0 c02 2 0.5 r\n",
    "nul": "q1 Q0 c0\x001 1 1 r\n",
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
    "grade underscore": "q1 0 c01 1_0\n",
    "grade plus": "q1 0 c01 +2\n",
    "contradiction": "q1 0 c01 1\nq2 0 c02 1\nq1 0 c01 3\n",
    "repeat": "q1 0 c01 1\nq1 0 c01 1\n",
    "unknown ids": "q1 0 zz 1\nq7 0 c01 2\n",
    "long id": f"q1 0 {LONG} 1\n",
    "em space": "q1 0 c0\u20031 1\n",
    "crlf": "q1 0 c01 3\r\nq1 0 c02 0\r\n",
}
CASES = ([("run", name, content) for name, content in RUNS.items()]
         + [("qrels", name, content) for name, content in QRELS.items()]
         + [(kind, name, content) for kind, name, content, *_ in BAD_INPUTS
            if kind in ("run", "qrels", "labels")])


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    db = tmp_path_factory.mktemp("base") / "base.db"
    make_small_project(str(db)).close()
    return db


def outcome(db: str, kind: str, path: str) -> tuple:
    """The refusal's message, or what the project holds afterwards."""
    from ragjudge.services.transfer import exporting
    from ragjudge.services.runs.stored import project_run_names
    from ragjudge.services.transfer.importing import import_file
    from ragjudge.services.project.database import Project
    from ragjudge.services.events.labels import current_labels

    with Project.open(db) as project:
        try:
            result = import_file(project, kind, path, name="r" if kind == "run" else None)
        except RagjudgeError as error:
            return ("refused", str(error))
        runs = {name: [(e.query_id, e.chunk_id, e.rank, e.score) for e in exporting.run_entries(project, name)]
                for name in project_run_names(project)}
        with project.connect() as connection:
            labels = current_labels(connection)
        status = project_status(project)
        return ("imported", result.summary(), runs, labels.query_ids.tolist(), labels.chunk_ids.tolist(),
                labels.grades.tolist(), status["queries"], status["chunks"])


@pytest.mark.parametrize(("kind", "name", "content"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_the_plain_reader_and_the_record_readers_agree(tmp_path, base, monkeypatch, kind, name, content):
    from ragjudge.services.project import columns as bulk

    suffix = ".trec.gz" if name.startswith(("gzip", "truncated")) else (
        "." + name.rsplit(".", 1)[1] if "." in name else ".trec")
    path = tmp_path / ("input" + suffix)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    results = []
    for plain in (True, False):
        db = tmp_path / f"{plain}.db"
        shutil.copyfile(base, db)
        with monkeypatch.context() as patch:
            if not plain:
                patch.setattr(bulk, "plain_run", lambda *a, **k: None)
                patch.setattr(bulk, "plain_qrels", lambda *a, **k: None)
            results.append(outcome(str(db), kind, str(path)))
    assert results[0] == results[1]


def test_the_plain_reader_takes_plain_files_and_leaves_the_rest(tmp_path):
    from ragjudge.services.project import columns as bulk

    assert bulk.plain_run(RUNS["plain"]) is not None
    assert bulk.plain_run(RUNS["crlf"]) is not None
    assert bulk.plain_run(RUNS["gzip"]) is not None
    for name in ("tabs", "two spaces", "blank line", "byte order mark", "em space", "score nan",
                 "rank underscore", "rank other digits", "not utf-8", "nul", "five fields"):
        content = RUNS[name]
        assert bulk.plain_run(content if isinstance(content, bytes) else content.encode()) is None, name
    assert bulk.plain_qrels(QRELS["plain"], 0, 3) is not None
    assert bulk.plain_qrels(QRELS["grade off the scale"], 0, 3) is None
    assert bulk.plain_qrels(QRELS["repeat"], 0, 3) is None


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
