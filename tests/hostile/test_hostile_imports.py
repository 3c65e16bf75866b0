"""Every kind of import, in every format it reads, gzipped or not, with hostile content.

Each example writes one file (a folder for ``beir``) whose lines are mostly well-formed records
of the kind with hostile values in their fields: control characters, escape sequences, NUL,
bidirectional overrides, bare CR and CRLF, quotes, embedded line breaks, Rich markup,
10,000-character values, numbers that are not what they seem (``1_0``, ``１``, ``1e400``,
``nan``, 2**63), ids of only spaces, unknown fields, duplicate lines, empty files, bytes that
are not UTF-8, broken gzip. ``ragjudge import`` must keep the promises of
:mod:`hostilekit`; an import that succeeds must change nothing when run a second time.
"""

from __future__ import annotations

import gzip
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hostilekit import (
    ATOMS, LONG, NUMBERS, brief, check_promises, copy_project, examples, folder_files, hostile_text,
    make_base_project, project_state, run_cli,
)
from hypothesis import given
from hypothesis import strategies as st

from ragjudge.services.transfer.importing import IMPORT_KINDS

pytestmark = pytest.mark.slow

KINDS = (*IMPORT_KINDS, "beir")
"""Every kind ``ragjudge import`` takes (a new kind is covered as soon as it is added)."""

FORMATS = {
    "queries": ("trec", "jsonl", "csv"),  # trec: id<TAB>text (MS MARCO .tsv)
    "chunks": ("trec", "jsonl", "csv"),
    "run": ("trec", "jsonl", "csv"),
    "qrels": ("trec", "jsonl", "csv"),
    "labels": ("trec", "jsonl", "csv"),
}
"""The formats each kind is read from; every other kind is JSONL or CSV."""

EXTENSIONS = {"trec": (".trec", ".tsv", ".qrels", ".run", ".txt", ""),
              "jsonl": (".jsonl", ".json", ".ndjson", ""), "csv": (".csv", "")}

STEMS = ["input", "\x1b]52;c;aGk=\x07", "[bold]x[/]", "a\u202eb", "q\rq", "sp ace", "\udcff",
         "-", "x" * 200, "日本"]
"""File names (stems): an escape sequence, markup, a bidi override, a bare CR, a byte that is not
UTF-8 (as Python holds it), a leading dash, 200 characters."""


class Raw(str):
    """A value written into the file exactly as it is (a number token, ``1_0``, ``NaN``)."""


# -- field values -------------------------------------------------------------------------

QUERIES = ["q1", "q2", "q3"]
CHUNKS = ["c01", "c04", "c05", "c07"]

ids_hostile = st.one_of(
    st.sampled_from(["", " ", "   ", "\t", "\u3000", "q1 ", " q1", "Q1", "ｑ１", "q1\r", "q\u202e1",
                     "[bold]q1", "q1\x1b[2J", "x" * 256, LONG, "q1\x00"]),
    hostile_text(max_atoms=3))


def ref(known: list[str]) -> st.SearchStrategy[object]:
    """An id the project knows, mostly; else a hostile one."""
    return st.one_of(st.sampled_from(known), ids_hostile)


def text_value() -> st.SearchStrategy[object]:
    return st.one_of(st.sampled_from(["plain text", "a, \"quoted\" text"]), hostile_text())


def number(good: list[object]) -> st.SearchStrategy[object]:
    """A good number, or a hostile token, or a value of another JSON type."""
    return st.one_of(st.sampled_from(good), st.sampled_from(NUMBERS).map(Raw),
                     st.sampled_from([None, True, "2", [1], {"a": 1}, 2.5, 1.5e308]))


GRADE = number([0, 1, 2, 3])
SCORE = number([1.0, 0.5, 2, -3.25])
RANK = number([1, 2, 3, 10])
WEIGHT = number([1.0, 2, 0.5])
WHEN = st.sampled_from(["2026-01-01T00:00:00", "2026-13-01T00:00:00", "0001-01-01T00:00:00-01:00",
                        "9999-12-31T23:59:59-14:00", "2026-01-01T00:00:00Z", "", "yesterday",
                        "2026-01-01T00:00:00.123456+05:30"])
ANNOTATOR = st.one_of(st.sampled_from(["alice", "bob", "carol", " alice ", "[bold]eve", "a,b"]),
                      hostile_text(max_atoms=2))
META = st.one_of(st.just({"source": "x"}), st.dictionaries(st.text(max_size=3), hostile_text(), max_size=2),
                 st.sampled_from([[1], "meta", {"n": Raw("NaN")}, {"deep": [[[[]]]]}]))

FIELDS = {
    "queries": {"id": ids_hostile, "text": text_value(), "description": text_value(),
                "category": text_value(), "meta": META},
    "chunks": {"id": ids_hostile, "text": text_value(), "doc_id": text_value(), "meta": META},
    "run": {"query_id": ref(QUERIES), "chunk_id": ref(CHUNKS), "score": SCORE, "rank": RANK},
    "qrels": {"query_id": ref(QUERIES), "chunk_id": ref(CHUNKS), "grade": GRADE,
              "annotator": ANNOTATOR, "note": text_value()},
    "labels": {"query_id": ref(QUERIES), "chunk_id": ref(CHUNKS), "grade": GRADE,
               "annotator": ANNOTATOR, "note": text_value(), "created_at": WHEN},
    "facets": {"query_id": ref(QUERIES), "facet": text_value(), "chunk_id": ref(CHUNKS),
               "annotator": ANNOTATOR, "covered": st.sampled_from([True, False, "yes", 1, None])},
    "nuggets": {"query_id": ref(QUERIES), "nugget": text_value(),
                "importance": st.sampled_from(["vital", "okay", "VITAL", "", None]),
                "kind": st.sampled_from(["nugget", "claim", "fact"]), "weight": WEIGHT,
                "chunk_id": ref(CHUNKS), "annotator": ANNOTATOR,
                "support": st.sampled_from(["full", "partial", "none", "all"])},
    "entities": {"query_id": ref(QUERIES), "entity": text_value()},
    "answers": {"query_id": ref(QUERIES), "run": st.sampled_from(["bm25", "dense", "other"]) | hostile_text(),
                "text": text_value(), "cited": st.lists(ref(CHUNKS), max_size=3) | ref(CHUNKS),
                "sentences": st.lists(st.fixed_dictionaries(
                    {"text": text_value(), "citations": st.lists(ref(CHUNKS), max_size=2)}), max_size=3)},
    "answer-labels": {"query_id": ref(QUERIES), "run": st.sampled_from(["bm25", "dense", "other"]) | hostile_text(),
                      "nugget": text_value(), "sentence": number([0, 1, 2]), "chunk_id": ref(CHUNKS),
                      "support": st.sampled_from(["full", "partial", "none", "all", ""]),
                      "annotator": ANNOTATOR},
}
REQUIRED = {"queries": ("id", "text"), "chunks": ("id", "text"), "run": ("query_id", "chunk_id", "score"),
            "qrels": ("query_id", "chunk_id", "grade"), "labels": ("query_id", "chunk_id", "grade"),
            "facets": ("query_id", "facet"), "nuggets": ("query_id", "nugget"),
            "entities": ("query_id", "entity"), "answers": ("query_id", "run", "text", "cited"),
            "answer-labels": ("query_id", "run", "support")}
UNKNOWN = st.sampled_from(["socre", "extra", "", "\x1b[31m", "[bold]", "ID", "meta "])


@st.composite
def record(draw, kind: str) -> dict[str, object]:
    """One line's fields: the required ones (now and then one dropped), some optional ones,
    now and then an unknown one."""
    fields = FIELDS[kind]
    names = list(REQUIRED[kind])
    names += draw(st.lists(st.sampled_from(sorted(set(fields) - set(names)) or ["x"]), max_size=3, unique=True))
    if draw(st.integers(0, 9)) == 0:
        names.remove(draw(st.sampled_from(names)))
    out = {name: draw(fields[name]) for name in names if name in fields}
    if draw(st.integers(0, 9)) == 0:
        out[draw(UNKNOWN)] = draw(text_value())
    return out


# -- writing a file -----------------------------------------------------------------------


def json_value(value: object, ascii_only: bool) -> str:
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {json_value(v, ascii_only)}" for k, v in value.items()) + "}"
    return json.dumps(value, ensure_ascii=ascii_only)


def cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)) and not isinstance(value, Raw):
        return json_value(value, False)
    return str(value)


def csv_line(cells: list[str], quoting: str) -> str:
    def quote(text: str) -> str:
        if quoting == "all" or (quoting == "minimal" and any(c in text for c in ',"\r\n')):
            return '"' + text.replace('"', '""') + '"'
        return text

    return ",".join(quote(c) for c in cells)


def trec_line(kind: str, data: dict[str, object], sep: str) -> str:
    def get(name: str, default: object) -> str:
        return cell(data.get(name, default))

    if kind == "run":
        cells = [get("query_id", "q1"), "Q0", get("chunk_id", "c01"), get("rank", 1),
                 get("score", 1.0), "tag"]
    elif kind in ("queries", "chunks"):
        return get("id", "") + "\t" + get("text", "")
    else:
        cells = [get("query_id", "q1"), "0", get("chunk_id", "c01"), get("grade", 1)]
    return sep.join(cells)


@st.composite
def lines_of(draw, kind: str, fmt: str) -> list[str]:
    records = draw(st.lists(record(kind), max_size=4))
    if kind == "run" and fmt == "jsonl" and draw(st.booleans()):  # the ranked-list form
        records = [{"query_id": r.get("query_id", "q1"), "chunks": draw(st.lists(ref(CHUNKS), max_size=3))}
                   for r in records]
    if fmt == "jsonl":
        ascii_only = draw(st.booleans())
        lines = [json_value(r, ascii_only) for r in records]
        lines += draw(st.lists(st.sampled_from(["", "[1]", "null", "{", '{"id": "\\ud800", "text": "x"}',
                                                "\ufeff{}", "}"]), max_size=1))
    elif fmt == "csv":
        columns = list(dict.fromkeys(name for r in records for name in r)) or list(REQUIRED[kind])
        quoting = draw(st.sampled_from(["minimal", "all", "none"]))
        lines = [csv_line(columns, quoting)]
        lines += [csv_line([cell(r.get(c)) for c in columns], quoting) for r in records]
    else:
        sep = draw(st.sampled_from([" ", "\t", "  ", " \t "]))
        lines = [trec_line(kind, r, sep) for r in records]
    if lines and draw(st.booleans()):
        lines.append(draw(st.sampled_from(lines)))  # a duplicate line
    return lines


@dataclass
class Case:
    """One hostile import: ``files`` are (relative path, bytes); ``argv`` ends with the path."""

    kind: str
    fmt: str
    files: list[tuple[str, bytes]] = field(default_factory=list)
    options: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        shown = ", ".join(f"{brief(name)!r}: {brief(data, 400)!r}" for name, data in self.files)
        return f"Case(kind={self.kind!r}, fmt={self.fmt!r}, options={self.options!r}, files={{{shown}}})"

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(repr(self))


MUTATIONS = [b"\x00", b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\r", b"\n\n", b"\x1b"]


@st.composite
def packed(draw, text: str) -> tuple[bytes, bool]:
    """The text as bytes, maybe mutated, maybe gzipped (whole, truncated or damaged); and
    whether the file name should end in .gz."""
    data = text.encode("utf-8", "surrogatepass")
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from(MUTATIONS)) + data[at:]
    if draw(st.integers(0, 9)) == 0:
        data = text.encode("latin-1", "replace")
    how = draw(st.sampled_from(["plain"] * 4 + ["gzip", "gzip", "gzip-unnamed", "gzip-truncated",
                                                "gzip-damaged", "plain-named-gz", "gzip-twice"]))
    if how == "plain":
        return data, False
    if how == "plain-named-gz":
        return data, True
    packed_data = gzip.compress(data, mtime=0)
    if how == "gzip-truncated":
        packed_data = packed_data[: draw(st.integers(0, max(0, len(packed_data) - 1)))]
    elif how == "gzip-damaged":
        at = draw(st.integers(2, max(2, len(packed_data) - 1)))
        packed_data = packed_data[:at] + bytes([packed_data[at % len(packed_data)] ^ 0x55]) + packed_data[at + 1:]
    elif how == "gzip-twice":
        packed_data = packed_data + gzip.compress(b"garbage\x00\xff\n", mtime=0)
    return packed_data, how != "gzip-unnamed"


@st.composite
def import_case(draw, kind: str) -> Case:
    """A hostile file (or BEIR folder) of ``kind`` and the import options."""
    options: list[str] = []
    if draw(st.integers(0, 4)) == 0:
        options.append("--create-missing")
    if draw(st.integers(0, 4)) == 0:
        options.append("--replace")
    if kind == "guidelines":
        text = draw(st.lists(st.one_of(hostile_text(), st.sampled_from(ATOMS)), max_size=4).map("".join))
        data, gz = draw(packed(text))
        return Case(kind, "markdown", [(draw(st.sampled_from(STEMS)) + ".md" + (".gz" if gz else ""), data)])
    if kind == "beir":
        return draw(beir_case(options))
    fmt = draw(st.sampled_from(FORMATS.get(kind, ("jsonl", "csv"))))
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    lines = draw(lines_of(kind, fmt))
    text = ending.join(lines) + (ending if lines and draw(st.booleans()) else "")
    data, gz = draw(packed(text))
    extension = draw(st.sampled_from(EXTENSIONS[fmt]))
    if not extension or draw(st.integers(0, 3)) == 0:
        options += ["--format", fmt]
    if kind == "run" and draw(st.booleans()):
        options += ["--name", draw(st.sampled_from(["run2", "bm25", "dense"]))]
    name = draw(st.sampled_from(STEMS)) + extension + (".gz" if gz else "")
    return Case(kind, fmt, [(name, data)], options)


@st.composite
def beir_case(draw, options: list[str]) -> Case:
    corpus = [json_value({"_id": r.get("id", "c99"), "title": draw(text_value()), "text": r.get("text", ""),
                          **({"metadata": r["meta"]} if "meta" in r else {})}, False)
              for r in draw(st.lists(record("chunks"), max_size=3))]
    queries = [json_value({"_id": r.get("id", "q99"), "text": r.get("text", "")}, False)
               for r in draw(st.lists(record("queries"), max_size=3))]
    qrels = ["query-id\tcorpus-id\tscore"] + [
        "\t".join(cell(r.get(name, "")) for name in ("query_id", "chunk_id", "grade"))
        for r in draw(st.lists(record("qrels"), max_size=3))]
    files = []
    for path, lines in (("corpus.jsonl", corpus), ("queries.jsonl", queries), ("qrels/test.tsv", qrels)):
        if draw(st.integers(0, 9)) == 0:
            continue  # a folder without one of its files
        data, gz = draw(packed("\n".join(lines) + "\n"))
        files.append((path + (".gz" if gz else ""), data))
    if draw(st.booleans()):
        options += ["--split", draw(st.sampled_from(["test", "dev", "", "../test", "\x1b[2J"]))]
    return Case("beir", "beir", files, options)


def write_case(case: Case, folder: Path) -> str:
    """Write the case's files under ``folder``; the path to import."""
    for name, data in case.files:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if case.kind == "beir":
        return str(folder)
    return str(folder / case.files[0][0])


# -- the test -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return make_base_project(tmp_path_factory.mktemp("hostile-imports") / "base.db")


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAGJUDGE_DB", raising=False)
    return tmp_path


@pytest.mark.parametrize("kind", KINDS)
@examples(20)
@given(data=st.data())
def test_hostile_file_is_imported_or_refused_cleanly(kind, data, base, workdir, capfd):
    case = data.draw(import_case(kind), label="case")
    here = Path(tempfile.mkdtemp(dir=workdir))
    try:
        project = copy_project(base, here / "project" / "p.db")
        inputs = here / "in"
        inputs.mkdir()
        path = write_case(case, inputs)
        before, files = project_state(project), folder_files(project.parent)
        argv = ["--db", str(project), "import", kind, path, *case.options]
        outcome = run_cli(capfd, argv)
        check_promises(outcome, project, before, files)
        if outcome.code == 0:  # "importing the same file twice changes nothing the second time"
            imported = project_state(project)
            again = run_cli(capfd, argv)
            check_promises(again, project, imported, files)
            assert again.code == 0, "the second import of a file that imported must succeed\n" + again.describe()
            assert project_state(project) == imported, (
                "importing the same file a second time changed the project\n" + again.describe())
    finally:
        shutil.rmtree(here, ignore_errors=True)


def test_identical_run_imported_again_with_replace_changes_nothing(base, workdir, capfd):
    # was: "Replaced the earlier run": the run was rewritten with a new time
    project = copy_project(base, workdir / "project" / "p.db")
    run = workdir / "again.trec"
    run.write_text("q1 Q0 c04 1 2.0 x\nq1 Q0 c05 2 1.0 x\n")
    argv = ["--db", str(project), "import", "run", str(run), "--replace"]
    assert run_cli(capfd, argv).code == 0
    imported = project_state(project)
    again = run_cli(capfd, argv)
    check_promises(again, project, imported)
    assert again.code == 0 and "nothing changed" in again.err
    assert project_state(project) == imported
