"""TREC SGML as test collections ship it: documents (<DOC><DOCNO>) as chunks and topics
(<top><num><title><desc><narr>) as queries, messy cases, gzip, detection, errors, the command
line, and arbitrary bytes."""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragjudge.cli import main
from ragjudge.errors import InputError, UsageError
from ragjudge.formats import detect_format, read_records, read_trec_documents, read_trec_topics
from ragjudge.models import Chunk, Query

# A Financial Times, a Federal Register and an LA Times document, as the TREC disks have them.
DOCS = """\
<DOC>
<DOCNO> FT911-3 </DOCNO>
<PROFILE>_AN-BEOA7AAIFT</PROFILE>
<DATE>910514
</DATE>
<HEADLINE>
FT  14 MAY 91 / AT&amp;T buys NCR
</HEADLINE>
<TEXT>
AT&amp;T agreed to buy NCR.

The deal is worth $7.4bn.
</TEXT>
<PUB>The Financial Times
</PUB>
</DOC>
<doc>
<docno>FR940104-0-00001</docno>
<parent> FR940104-0-00001 </parent>
<text>
<!-- PJG FTAG 4700 -->
Federal &hyph; Register, caf&eacute; &#233; &#x41; &unknownentity;
<!-- PJG
    a comment over two lines -->
</text>
<TEXT>
A second text block.
</TEXT>
</doc>
<DOC>
<DOCNO> LA010189-0001 </DOCNO>
<HEADLINE>
<P>
YEAR REVIEW
</P>
</HEADLINE>
<TEXT>
<P>
First paragraph.
</P>
<P>
Second <F P=105> inline </F> paragraph.
</P>
</TEXT>
<SUBJECT>a</SUBJECT><SUBJECT>b</SUBJECT>
</DOC>
"""

TOPICS = """\
<top>
<num> Number: 301
<title> International Organized Crime

<desc> Description:
Identify organizations that participate in international
criminal activity &amp; the countries involved.

<narr> Narrative:
A relevant document must as a minimum identify the organization.

</top>

<TOP>
<NUM> Number: 302 </NUM>
<TITLE> Topic: Poliomyelitis and Post-Polio
<DESC> Description: Is the disease of Poliomyelitis (polio) under control?
<top>
<num> Number: 303
<title> Hubble Telescope Achievements
"""


def test_documents_as_they_come():
    chunks = list(read_trec_documents(DOCS.encode(), name="ft.sgml"))
    assert [c.id for c in chunks] == ["FT911-3", "FR940104-0-00001", "LA010189-0001"]
    ft, fr, la = chunks
    assert ft == Chunk(id="FT911-3", doc_id="FT911-3",
                       text="AT&T agreed to buy NCR.\n\nThe deal is worth $7.4bn.",
                       meta={"profile": "_AN-BEOA7AAIFT", "date": "910514",
                             "headline": "FT  14 MAY 91 / AT&T buys NCR", "pub": "The Financial Times"})
    # lower-case tags, comments (one line and two), several TEXT blocks, entities: named, numeric,
    # the Federal Register's own (&hyph;), and an unknown one kept as written
    assert fr.text == ("Federal - Register, café é A &unknownentity;\n\nA second text block.")
    assert fr.meta == {"parent": "FR940104-0-00001"}
    # markup inside a field is dropped, its text kept; a repeated field becomes a list
    assert la.meta == {"headline": "YEAR REVIEW", "subject": ["a", "b"]}
    assert la.text.split() == ["First", "paragraph.", "Second", "inline", "paragraph."]


def test_document_on_one_line_with_id_attribute_and_loose_text():
    data = ('<DOC id="AFP_ENG_1" type="story"><HEADLINE>Hi</HEADLINE>'
            "<TEXT><P>one</P></TEXT>loose words</DOC>\n"
            "<DOC>\n<DOCNO>d2</DOCNO>\nplain body text\n</DOC>\n")
    first, second = read_records("chunks", data, "trec-sgml")
    assert first.id == "AFP_ENG_1" and first.meta == {"headline": "Hi", "type": "story"}
    assert first.text == "one\n\nloose words"
    assert (second.id, second.text, second.meta) == ("d2", "plain body text", None)


def test_topics_with_labels_missing_closing_tags_and_case():
    numbered = list(read_trec_topics(TOPICS, name="topics.301-303", numbered=True))
    assert [line for line, _ in numbered] == [1, 14, 18]
    queries = [q for _, q in numbered]
    assert queries[0] == Query(
        id="301", text="International Organized Crime",
        description="Identify organizations that participate in international criminal activity "
                    "& the countries involved.",
        meta={"narrative": "A relevant document must as a minimum identify the organization."})
    # closed by the next <top>, not by </top>; "Topic:" stripped; an explicit </NUM> accepted
    assert queries[1] == Query(id="302", text="Poliomyelitis and Post-Polio",
                               description="Is the disease of Poliomyelitis (polio) under control?")
    # the last topic ends with the file
    assert queries[2] == Query(id="303", text="Hubble Telescope Achievements")


def test_older_and_newer_topic_shapes():
    tipster = ("<top>\n<head> Tipster Topic Description\n<num> Number:  051\n<dom> Domain: "
               "International Economics\n<title> Topic:  Airbus Subsidies\n<desc> Description:\n"
               "Document will discuss.\n<con> Concept(s):\n1. Airbus Industrie\n</top>\n")
    (query,) = read_records("queries", tipster, "trec-topics")
    assert query.id == "051"  # ids are kept as written; the qrels of topics 51-100 say 51
    assert query.meta == {"head": "Tipster Topic Description", "dom": "International Economics",
                          "con": "1. Airbus Industrie"}
    web = ('<?xml version="1.0"?>\n<topics>\n<topic number="51" type="faceted">\n'
           "  <query>horse hooves</query>\n  <description>Find information.</description>\n"
           '  <subtopic number="1" type="inf">one</subtopic>\n'
           '  <subtopic number="2" type="nav">two</subtopic>\n</topic>\n</topics>\n')
    assert detect_format(web, "queries") == "trec-topics"
    (query,) = read_records("queries", web)
    assert query == Query(id="51", text="horse hooves", description="Find information.",
                          meta={"subtopic": ["one", "two"], "type": "faceted"})
    # no title: the description is the text
    (query,) = read_records("queries", "<top>\n<num> 7\n<desc> Only a description.\n</top>\n",
                            "trec-topics")
    assert (query.text, query.description) == ("Only a description.", "Only a description.")


def test_gzip_and_detection(tmp_path):
    collection = tmp_path / "FT911.gz"  # no extension but .gz: the content decides
    collection.write_bytes(gzip.compress(DOCS.encode()))
    assert detect_format(collection, "chunks") == "trec-sgml"
    assert [c.id for c in read_records("chunks", collection)][:1] == ["FT911-3"]
    topics = tmp_path / "topics.301-303.txt"  # .txt holds SGML as often as TSV
    topics.write_text(TOPICS)
    assert detect_format(topics, "queries") == "trec-topics"
    assert len(list(read_records("queries", topics))) == 3
    gz_inline = gzip.compress(TOPICS.encode())
    assert len(list(read_records("queries", gz_inline, "trec-topics"))) == 3
    # the one-line num<TAB>title form stays the TSV reader's, with or without an extension
    tsv = tmp_path / "topics.dl19"
    tsv.write_text("301\tInternational Organized Crime\n302\tPolio\n")
    assert detect_format(tsv, "queries") == "trec"
    assert [q.id for q in read_records("queries", tsv)] == ["301", "302"]
    assert detect_format(topics, "run") == "trec"  # only queries and chunks look inside


def test_wrong_kind_names_the_right_format():
    with pytest.raises(UsageError, match="'ragjudge import chunks', or give --format trec-topics"):
        list(read_records("queries", DOCS))  # detected as documents
    with pytest.raises(UsageError, match=r"TREC topics \(<top>\), which are queries, not run"):
        list(read_records("run", TOPICS, "trec-topics"))


def test_duplicates_read_once_or_refused():
    doc = "<DOC><DOCNO>a</DOCNO><TEXT>x</TEXT></DOC>\n"
    assert len(list(read_records("chunks", doc * 2, "trec-sgml"))) == 1
    other = "<DOC><DOCNO>a</DOCNO><TEXT>y</TEXT></DOC>\n"
    with pytest.raises(InputError) as caught:
        list(read_records("chunks", doc + other, "trec-sgml", name="c.sgml"))
    assert (caught.value.file, caught.value.line) == ("c.sgml", 2)


def refusal(kind: str, text: str | bytes) -> InputError:
    reader = read_trec_documents if kind == "chunks" else read_trec_topics
    with pytest.raises(InputError) as caught:
        list(reader(text if isinstance(text, bytes) else text.encode(), name="bad.sgml"))
    error = caught.value
    assert error.file == "bad.sgml" and "\n" not in str(error)
    return error


@pytest.mark.parametrize("text, line, field, words", [
    ("<DOC>\n<TEXT>x</TEXT>\n</DOC>\n", 1, "DOCNO", "no <DOCNO>"),
    ("<DOC>\n<DOCNO>  </DOCNO>\n</DOC>\n", 2, "DOCNO", "empty"),
    ("<DOC>\n<DOCNO>a</DOCNO>\n<DOCNO>b</DOCNO>\n</DOC>\n", 3, "DOCNO", "second DOCNO"),
    ("<DOC>\n<DOCNO>a</DOCNO>\n<TEXT>x\n", 3, "TEXT", "not closed before the end of the file"),
    ("<DOC>\n<DOCNO>a</DOCNO>\n<TEXT>x\n</DOC>\n", 3, "TEXT", "not closed before the </DOC> on line 4"),
    ("<DOC>\n<DOCNO>a</DOCNO>\n\ntext\n", 1, "DOC", "file ends before its </DOC>"),
    ("<DOC>\n<DOCNO>a</DOCNO>\n<DOC>\n<DOCNO>b</DOCNO>\n</DOC>\n", 3, "DOC", "</DOC> missing"),
    ("<DOC>\n<DOCNO>a</DOCNO>\n</TEXT>\n</DOC>\n", 3, "TEXT", "closes no open field"),
    ("<DOC><DOCNO>a</DOCNO></DOC>\nstray words\n", 2, None, "outside any <DOC>"),
    ("</DOC>\n", 1, None, "outside any <DOC>"),
])
def test_malformed_documents_are_refused_where_they_fail(text, line, field, words):
    error = refusal("chunks", text)
    assert (error.line, error.field) == (line, field)
    assert words in error.message


@pytest.mark.parametrize("text, line, field, words", [
    ("<top>\n<title> no number\n</top>\n", 1, "num", "no <num>"),
    ("<top>\n<num> 1\n<narr> only a narrative\n</top>\n", 1, "title", "neither a <title>"),
    ("<top>\n<num> 1\n<num> 2\n<title> t\n</top>\n", 3, "num", "second <num>"),
    ("</top>\n", 1, "top", "closes no topic"),
    ("<top>\nloose words\n<num> 1\n</top>\n", 2, None, "in none of its fields"),
    ("<num> 1\n", 1, None, "outside any <top>"),
])
def test_malformed_topics_are_refused_where_they_fail(text, line, field, words):
    error = refusal("queries", text)
    assert (error.line, error.field) == (line, field)
    assert words in error.message


def test_latin1_is_refused_with_how_to_convert():
    data = "<DOC>\n<DOCNO>a</DOCNO>\n<TEXT>caf\u00e9</TEXT>\n</DOC>\n".encode("latin-1")
    error = refusal("chunks", data)
    assert error.line == 3 and "not UTF-8" in error.message
    assert "iconv -f latin1 -t utf-8 | ragjudge import chunks - --format trec-sgml" in str(error)
    error = refusal("queries", "<top>\n<num> 1\n<title> caf\u00e9\n".encode("latin-1"))
    assert error.line == 3 and "ragjudge import queries - --format trec-topics" in str(error)


@pytest.mark.slow
def test_reading_streams_the_file(tmp_path):
    path = tmp_path / "big.sgml"
    doc = "<DOC>\n<DOCNO>d{}</DOCNO>\n<TEXT>\n" + "word " * 40 + "\n</TEXT>\n</DOC>\n"
    with open(path, "w") as out:
        for i in range(5000):
            out.write(doc.format(i))
    size = path.stat().st_size
    with open(path, "rb") as handle:
        chunks = read_trec_documents(handle)
        assert next(chunks).id == "d0"
        assert handle.tell() < size / 10  # only the first block of the file was read
        assert sum(1 for _ in chunks) == 4999


@pytest.mark.slow
def test_command_line_imports_a_collection_end_to_end(tmp_path, capsys):
    db = str(tmp_path / "p.db")
    assert main(["init", "--db", db, "--scale", "0-3"]) == 0
    docs = tmp_path / "ft911.gz"
    docs.write_bytes(gzip.compress(DOCS.encode()))
    topics = tmp_path / "topics.301-303"
    topics.write_text(TOPICS)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("301 0 FT911-3 1\n302 0 LA010189-0001 0\n")
    assert main(["--db", db, "import", "chunks", str(docs)]) == 0
    assert main(["--db", db, "import", "queries", str(topics)]) == 0
    assert main(["--db", db, "import", "qrels", str(qrels), "--annotator", "nist"]) == 0
    capsys.readouterr()
    assert main(["--db", db, "status", "--format", "json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["chunks"], status["queries"], status["labels"]) == (3, 3, 2)
    from ragjudge.services.project.database import Project
    from ragjudge.store.schema import Chunk as ChunkRow
    from ragjudge.store.schema import Query as QueryRow

    with Project.open(db) as project, project.read() as session:
        row = session.get(ChunkRow, "FT911-3")
        assert row.doc_id == "FT911-3" and row.meta["headline"].endswith("AT&T buys NCR")
        query = session.get(QueryRow, "301")
        assert query.text == "International Organized Crime" and "organization" in query.meta["narrative"]
    # importing the same files again changes nothing; an explicit --format works on stdin too
    assert main(["--db", db, "import", "chunks", str(docs), "--format", "trec-sgml"]) == 0
    assert "3 already in the project" in capsys.readouterr().err


@pytest.mark.slow
def test_command_line_refuses_a_bad_collection_and_changes_nothing(tmp_path, capsys):
    db = str(tmp_path / "p.db")
    assert main(["init", "--db", db]) == 0
    bad = tmp_path / "bad.sgml"
    bad.write_text(DOCS + "<DOC>\n<DOCNO>x</DOCNO>\n<TEXT>never closed\n")
    assert main(["--db", db, "import", "chunks", str(bad)]) == 2
    err = capsys.readouterr().err
    line = DOCS.count("\n") + 3
    assert f"bad.sgml, line {line}, field 'TEXT'" in err.replace("\n", " ") and "Traceback" not in err
    assert main(["--db", db, "status", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["chunks"] == 0
    assert main(["--db", db, "import", "queries", str(bad), "--format", "trec-sgml"]) == 2
    assert "--format trec-topics" in capsys.readouterr().err


FRAGMENTS = ["<DOC>", "</DOC>", "<DOCNO>", "</DOCNO>", "<TEXT>", "</TEXT>", "<doc id=x>", "<P>",
             "</P>", "<top>", "</top>", "<num>", "<title>", "<desc>", "<topic number='1'>", "</title>",
             "<!--", "-->", "<?x?>", "<br/>", "&amp;", "&#0;", "&#x110000;", "&foo;", "Number:",
             "d1", " ", "\n", "\r\n", "\t", "\x00", "é", "<", ">", "&", "\ufeff"]
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def only_input_errors(data: bytes) -> None:
    for reader in (read_trec_documents, read_trec_topics):
        try:
            for record in reader(data, name="fuzz.in"):
                assert record.id
        except InputError as error:
            assert error.file == "fuzz.in" and "\n" not in str(error)
            assert error.line is None or error.line >= 1


@pytest.mark.slow
@FUZZ
@given(st.binary(max_size=300))
def test_arbitrary_bytes_raise_only_input_errors(data):
    only_input_errors(data)
    only_input_errors(gzip.compress(data)[: max(2, len(data) // 3)])  # truncated gzip


@pytest.mark.slow
@FUZZ
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=60))
def test_arbitrary_sgml_raises_only_input_errors(parts):
    only_input_errors("".join(parts).encode("utf-8"))
