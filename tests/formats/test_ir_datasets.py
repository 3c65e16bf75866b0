"""`ragjudge import ir-datasets NAME`: a dataset's documents, queries and qrels through the user's
ir_datasets. Each test registers a small dataset built from local files with ir_datasets' own
classes; ir_datasets' home is a temporary folder and nothing is downloaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from typing import NamedTuple

import pytest

from ragjudge.cli import main
from ragjudge.errors import InputError, UsageError

pytestmark = pytest.mark.slow

DOCS = """\
<DOC>
<DOCNO> d1 </DOCNO>
<HEADLINE>Refunds</HEADLINE>
<TEXT>
Refunds take 5 days.
</TEXT>
</DOC>
<DOC>
<DOCNO> d2 </DOCNO>
<HEADLINE>Carriers</HEADLINE>
<TEXT>
We ship with two carriers.
</TEXT>
</DOC>
"""

TOPICS = """\
<top>
<num> Number: 301
<title> refund time
<desc> Description:
How long does a refund take?
<narr> Narrative:
A relevant document gives a number of days.
</top>
<top>
<num> Number: 302
<title> carriers
<desc> Description:
Which carriers ship?
<narr> Narrative:
Names of carriers.
</top>
"""


@pytest.fixture(scope="module")
def irds(tmp_path_factory):
    """ir_datasets, imported with its home in a temporary folder (importing it creates folders)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("IR_DATASETS_HOME", str(tmp_path_factory.mktemp("ir_datasets_home")))
        yield pytest.importorskip("ir_datasets")


def register(irds, folder, *, qrels: str = "301 0 d1 2\n301 0 d2 0\n302 0 d2 1\n", docs=None,
             name: str | None = None) -> str:
    """A dataset of local files under a fresh name (the registry refuses a name twice)."""
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecDocs, TrecQrels, TrecQueries
    from ir_datasets.util import LocalDownload

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "docs.sgml").write_text(DOCS)
    (folder / "topics.txt").write_text(TOPICS)
    (folder / "qrels.txt").write_text(qrels)
    name = name or f"ragjudge-test-{uuid.uuid4().hex[:8]}"
    docs = docs or TrecDocs(LocalDownload(str(folder / "docs.sgml")), parser="sax")
    irds.registry.register(name, Dataset(docs, TrecQueries(LocalDownload(str(folder / "topics.txt"))),
                                         TrecQrels(LocalDownload(str(folder / "qrels.txt")), {})))
    return name


def project(tmp_path, capsys) -> str:
    db = str(tmp_path / "p.db")
    assert main(["init", "--db", db, "--scale", "0-3"]) == 0
    capsys.readouterr()
    return db


def status(db: str, capsys) -> dict:
    capsys.readouterr()
    assert main(["--db", db, "status", "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_import_reads_docs_queries_and_qrels(irds, tmp_path, capsys):
    name = register(irds, tmp_path / "data")
    db = project(tmp_path, capsys)
    assert main(["--db", db, "import", "ir-datasets", name]) == 0
    err = capsys.readouterr().err
    assert f"ir_datasets:{name} docs: chunks: 2 read, 2 added" in err.replace("\n", " ")
    counts = status(db, capsys)
    assert (counts["chunks"], counts["queries"], counts["labels"]) == (2, 2, 3)
    assert counts["labels_per_annotator"] == {name: 3}  # the reference annotator is the dataset

    from ragjudge.services.project.database import Project
    from ragjudge.store.schema import Chunk, Label, Query

    with Project.open(db) as opened, opened.read() as session:
        chunk = session.get(Chunk, "d1")
        assert (chunk.text, chunk.doc_id, chunk.meta) == ("Refunds take 5 days.", "d1", {"title": "Refunds"})
        query = session.get(Query, "301")
        assert (query.text, query.description) == ("refund time", "How long does a refund take?")
        assert query.meta == {"narrative": "A relevant document gives a number of days."}
        grades = {(label.query_id, label.chunk_id): label.grade for label in session.query(Label)}
        assert grades == {("301", "d1"): 2, ("301", "d2"): 0, ("302", "d2"): 1}
    # importing it again changes nothing
    assert main(["--db", db, "import", "ir-datasets", name]) == 0
    assert status(db, capsys)["labels"] == 3


def test_split_and_annotator(irds, tmp_path, capsys):
    base = register(irds, tmp_path / "data")
    register(irds, tmp_path / "test", qrels="302 0 d1 3\n", name=f"{base}/test")
    db = project(tmp_path, capsys)
    assert main(["--db", db, "import", "ir-datasets", base, "--split", "test", "--annotator", "nist"]) == 0
    counts = status(db, capsys)
    assert (counts["chunks"], counts["labels"], counts["labels_per_annotator"]) == (2, 1, {"nist": 1})


def test_an_unknown_dataset_is_named_with_close_matches(irds, tmp_path, capsys):
    name = register(irds, tmp_path / "data")
    db = project(tmp_path, capsys)
    assert main(["--db", db, "import", "ir-datasets", name + "x"]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert f"has no dataset '{name}x'" in err and f"'{name}'" in err and "Traceback" not in err
    assert main(["--db", db, "import", "ir-datasets", name, "--format", "jsonl"]) == 2
    assert "--format does not apply" in capsys.readouterr().err


def test_a_bad_record_changes_nothing(irds, tmp_path, capsys):
    name = register(irds, tmp_path / "data", qrels="301 0 d1 2\n301 0 d2 7\n")
    db = project(tmp_path, capsys)
    assert main(["--db", db, "import", "ir-datasets", name]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert f"ir_datasets:{name} qrels, line 2, field 'grade'" in err and "off the project's scale" in err
    counts = status(db, capsys)
    assert (counts["chunks"], counts["queries"], counts["labels"]) == (0, 0, 0)


class BrokenDocs:
    """A docs component whose reading fails half-way, as a download that breaks does."""

    class Doc(NamedTuple):
        doc_id: str
        text: str

    def docs_handler(self):
        return self

    def docs_iter(self):
        yield self.Doc("d1", "fine")
        raise ConnectionError("the server closed the connection")

    def docs_cls(self):
        return self.Doc

    def docs_count(self):
        return 2


def test_a_failure_inside_ir_datasets_is_reported_and_changes_nothing(irds, tmp_path, capsys):
    name = register(irds, tmp_path / "data", docs=BrokenDocs())
    db = project(tmp_path, capsys)
    assert main(["--db", db, "import", "ir-datasets", name]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert "ConnectionError: the server closed the connection" in err and "Traceback" not in err
    assert status(db, capsys)["chunks"] == 0


def test_progress_counts_records(irds, tmp_path, capsys):
    from ragjudge.services.transfer.importing import import_ir_datasets
    from ragjudge.services.project.database import Project

    name = register(irds, tmp_path / "data", docs=BrokenDocs())
    calls: list[tuple] = []
    with Project.open(project(tmp_path, capsys)) as opened, pytest.raises(InputError):
        import_ir_datasets(opened, name, progress=lambda *a: calls.append(a))
    assert calls == []  # the failing reader reports no final count
    name = register(irds, tmp_path / "ok")
    with Project.open(str(tmp_path / "p.db")) as opened:
        import_ir_datasets(opened, name, progress=lambda *a: calls.append(a))
    assert (2, None, f"ir_datasets:{name} docs", "records") in calls
    assert (3, None, f"ir_datasets:{name} qrels", "records") in calls


def test_without_ir_datasets_installed(monkeypatch, tmp_path, capsys):
    from ragjudge.formats.irds import load_dataset

    monkeypatch.setitem(sys.modules, "ir_datasets", None)  # import ir_datasets raises ImportError
    with pytest.raises(UsageError, match=r"pip install 'ragjudge\[ir-datasets\]'"):
        load_dataset("beir/scifact")
    db = project(tmp_path, capsys)
    assert main(["--db", db, "import", "ir-datasets", "beir/scifact"]) == 2
    assert "needs the ir_datasets package" in capsys.readouterr().err


def test_an_unwritable_ir_datasets_home_is_explained(tmp_path):
    pytest.importorskip("ir_datasets")
    db = tmp_path / "p.db"
    assert main(["init", "--db", str(db)]) == 0
    env = {**os.environ, "IR_DATASETS_HOME": os.devnull + "/ir_datasets"}  # under a file: no folder
    out = subprocess.run([sys.executable, "-m", "ragjudge", "--db", str(db), "import", "ir-datasets",
                          "beir/scifact"], check=False, capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 2, out.stderr
    assert "IR_DATASETS_HOME" in out.stderr and "Traceback" not in out.stderr
