"""TREC's SGML: documents (``<DOC><DOCNO>…</DOCNO>…</DOC>``) as chunks, topics
(``<top><num><title><desc><narr>``) as queries.

Test collections come as their creators wrote them, so the readers take them as they are: tags
in any case and with attributes (``<F P=105>``), fields spanning lines, several ``<TEXT>`` blocks,
spaces around a DOCNO, ``Number:``/``Topic:``/``Description:``/``Narrative:`` labels, topics
whose ``</top>`` is missing (the next ``<top>`` or the end of the file closes them), SGML
comments, and character entities (``&amp;``, ``&#233;``; an unknown one such as ``&foo;`` stays
as written). They stream: one document or topic is held at a time, whatever the size of the file.

**Documents.** A document is one chunk: its id and ``doc_id`` are the DOCNO (or, lacking one, the
``id`` attribute of ``<DOC>``, as in AQUAINT-2 and Gigaword); its text is its ``<TEXT>`` blocks
and any text outside a field, in document order, separated by a blank line; every other field
(``<HEADLINE>``, ``<TITLE>``, ``<DATE>``, …) goes into ``meta`` under its lower-cased name (a list
when the field repeats), as do the attributes of ``<DOC>``. Markup inside a field (``<P>``,
``<F P=105>``) is dropped and its text kept. A document without a DOCNO, a ``<DOC>`` inside a
document, a field or document left open, a ``</…>`` that closes nothing and text outside the
documents are refused with the file, the line and the field.

**Topics.** A topic is one query: its id is ``<num>`` (or the ``number`` attribute of
``<topic>``), its text ``<title>`` (``<query>`` in Web track topics), its description ``<desc>``
(``<description>``, ``<question>``); ``<narr>`` (``<narrative>``) goes into ``meta`` as
``narrative``, every other field under its own name. Whitespace inside a field is collapsed to
single spaces. A topic without a title takes its description as text; one with neither is refused.
The one-line ``num<TAB>title`` form is the TSV form of :func:`~ragjudge.formats.trec.read_tsv_texts`.

Text is UTF-8, strictly, as everywhere in ragjudge: a Latin-1 file (older TREC disks) is refused
at the first line that is not UTF-8, with the command that converts it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Iterator
from html.entities import html5
from typing import Any, NamedTuple

from ragjudge.errors import InputError, UsageError
from ragjudge.formats.records import Duplicates, build, plain_record, short
from ragjudge.formats.source import Lines, Source

SGML_FORMATS = {"trec-sgml": "chunks", "trec-topics": "queries"}
"""The ``--format`` names of TREC SGML, and the kind of record each holds."""

MAX_BLOCK_CHARS = 64 * 1024 * 1024
"""The longest document or topic read (64 Mi characters): longer, a closing tag is surely missing."""

LATIN1_HINT = ("Older TREC collections are often Latin-1; convert them as you import, e.g. "
               "'zcat FILE.gz | iconv -f latin1 -t utf-8 | ragjudge import {kind} - --format {fmt}'.")

_TOKEN = re.compile(
    r"<!--|<![A-Za-z][^<>]*>|<\?[^<>]*>"
    r"|<(/?)([A-Za-z][\w.:-]*)((?:\s[^<>]*?)?)\s*(/?)>")
_ATTRIBUTE = re.compile(r"""([A-Za-z_][\w.:-]*)\s*=\s*("[^"]*"|'[^']*'|[^\s"'>]+)""")
_ENTITY = re.compile(r"&(#[0-9]{1,8}|#[xX][0-9A-Fa-f]{1,8}|[A-Za-z][A-Za-z0-9]{0,31});")
_SGML_ENTITIES = {"hyph": "-", "blank": " "}  # the Federal Register's, unknown to HTML
_TRAILING_SPACE = re.compile(r"[ \t\r\f\v]+\n")
_BLANK_LINES = re.compile(r"\n\n\n+")


class _Tag(NamedTuple):
    name: str  # lower-cased
    closing: bool
    empty: bool  # <br/>
    attributes: str
    written: str


# -- tokens --------------------------------------------------------------------------------


class _Tokenizer:
    """Splits lines into text and tags; each line's text ends with ``\\n``. Comments (over
    several lines too), ``<!DOCTYPE …>`` and ``<?…?>`` are dropped."""

    def __init__(self) -> None:
        self.in_comment = False

    def split(self, text: str) -> list[str | _Tag]:
        tokens: list[str | _Tag] = []
        pos = 0
        if self.in_comment:
            end = text.find("-->")
            if end < 0:
                return tokens
            pos, self.in_comment = end + 3, False
        while (match := _TOKEN.search(text, pos)) is not None:
            if match.start() > pos:
                tokens.append(text[pos:match.start()])
            pos = match.end()
            if match.group(0) == "<!--":
                end = text.find("-->", pos)
                if end < 0:
                    self.in_comment = True
                    tokens.append("\n")
                    return tokens
                pos = end + 3
            elif match.group(2) is not None:
                tokens.append(_Tag(match.group(2).lower(), bool(match.group(1)), bool(match.group(4)),
                                   match.group(3), match.group(0)))
        tokens.append(text[pos:] + "\n")
        return tokens


def _tokens(lines: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str | _Tag]]:
    """``(line, text)`` and ``(line, tag)`` in file order."""
    tokenizer = _Tokenizer()
    for number, text in lines:
        for token in tokenizer.split(text):
            yield number, token


def _attributes(written: str) -> dict[str, str]:
    return {name.lower(): _entities(value.strip("\"'")) for name, value in _ATTRIBUTE.findall(written)}


def _entities(text: str) -> str:
    return _ENTITY.sub(_entity, text) if "&" in text else text


def _entity(match: re.Match[str]) -> str:
    name = match.group(1)
    if name.startswith("#"):
        return html.unescape(match.group(0))
    return _SGML_ENTITIES.get(name) or html5.get(name + ";") or match.group(0)


def _block(pieces: list[str]) -> str:
    """A field's text: entities decoded, trailing spaces and runs of blank lines dropped."""
    text = _TRAILING_SPACE.sub("\n", _entities("".join(pieces)))
    return _BLANK_LINES.sub("\n\n", text).strip()


class _Reader:
    """Shared state of one file's reading: its name, its lines, and how it fails."""

    def __init__(self, source: Source, name: str | None, kind: str, check_duplicates: bool) -> None:
        self.source = Lines(source, name=name)
        self.file = self.source.name
        self.kind = kind
        self.lines = self._checked_lines()
        self.duplicates = Duplicates(kind, self.file) if check_duplicates else None

    def _checked_lines(self) -> Iterator[tuple[int, str]]:
        try:
            yield from self.source
        except InputError as error:
            if error.hint is None and "not UTF-8" in error.message:
                fmt = next(f for f, k in SGML_FORMATS.items() if k == self.kind)
                raise InputError(error.message, file=error.file, line=error.line, field=error.field,
                                 hint=LATIN1_HINT.format(kind=self.kind, fmt=fmt)) from None
            raise

    def error(self, message: str, line: int | None, field: str | None = None) -> InputError:
        return InputError(message, file=self.file, line=line, field=field)

    def stray(self, token: str | _Tag, line: int, what: str) -> InputError:
        shown = token.written if isinstance(token, _Tag) else token.strip()
        return self.error(f"{short(shown)} stands outside any {what}; is this a TREC SGML file?",
                          line)


# -- documents -----------------------------------------------------------------------------


class _Document:
    def __init__(self, line: int, attributes: dict[str, str]) -> None:
        self.line = line
        self.attributes = attributes
        self.parts: list[tuple[str, int, list[str]]] = []  # (field, or "" for loose text; line; pieces)
        self.field: str | None = None
        self.field_line = line
        self.pieces: list[str] | None = None  # those of the open field
        self.size = 0

    def add(self, text: str, line: int) -> None:
        if self.pieces is None:
            if not self.parts or self.parts[-1][0] != "" or self.field is not None:
                self.parts.append(("", line, []))
            self.parts[-1][2].append(text)
        else:
            self.pieces.append(text)
        self.size += len(text)

    def open(self, field: str, line: int) -> None:
        self.field, self.field_line, self.pieces = field, line, []
        self.parts.append((field, line, self.pieces))

    def close(self) -> None:
        self.field = self.pieces = None


def read_trec_documents(source: Source, *, name: str | None = None, check_duplicates: bool = True,
                        numbered: bool = False) -> Iterator[Any]:
    """Yield a :class:`~ragjudge.models.Chunk` per ``<DOC>`` (``numbered``: ``(line, chunk)``
    with the line of its ``<DOC>``)."""
    reader = _Reader(source, name, "chunks", check_duplicates)
    tokenizer = _Tokenizer()
    doc: _Document | None = None
    for line, text in reader.lines:
        if doc is not None and doc.pieces is not None and "<" not in text and not tokenizer.in_comment:
            doc.pieces.append(text + "\n")  # the common line: inside a field, without markup
            doc.size += len(text) + 1
        else:
            for token in tokenizer.split(text):
                if doc is None:
                    if isinstance(token, _Tag) and token.name == "doc" and not token.closing:
                        doc = _Document(line, _attributes(token.attributes))
                    elif isinstance(token, _Tag) or token.strip():
                        raise reader.stray(token, line, "<DOC>…</DOC>")
                elif isinstance(token, str):
                    doc.add(token, line)
                elif token.name == "doc":
                    if not token.closing:
                        raise reader.error(f"a <DOC> inside the document that starts on line "
                                           f"{doc.line}; is a </DOC> missing?", line, "DOC")
                    if doc.field is not None:
                        raise _unclosed_field(reader, doc, f"the </DOC> on line {line}")
                    start, record = doc.line, _chunk(reader, doc)
                    doc = None
                    if reader.duplicates is None or not reader.duplicates.seen(record, start):
                        yield (start, record) if numbered else record
                elif doc.field is not None:
                    if token.closing and token.name == doc.field:
                        doc.close()
                    else:
                        doc.add(" ", line)  # markup inside a field: its text is kept
                elif token.closing:
                    raise reader.error(f"{token.written} closes no open field of the document that "
                                       f"starts on line {doc.line}.", line, token.name.upper())
                elif not token.empty:
                    doc.open(token.name, line)
        if doc is not None and doc.size > MAX_BLOCK_CHARS:
            raise reader.error(f"the document that starts here is longer than {MAX_BLOCK_CHARS:,} "
                               "characters; is a </DOC> missing?", doc.line, "DOC")
    if doc is not None:
        if doc.field is not None:
            raise _unclosed_field(reader, doc, "the end of the file")
        raise reader.error("the document that starts here is not closed: the file ends before its "
                           "</DOC>.", doc.line, "DOC")


def _unclosed_field(reader: _Reader, doc: _Document, end: str) -> InputError:
    name = (doc.field or "").upper()
    return reader.error(f"<{name}> is not closed before {end} (in the document that starts on line "
                        f"{doc.line}).", doc.field_line, name)


def _chunk(reader: _Reader, doc: _Document) -> Any:
    docno: str | None = None
    texts: list[str] = []
    meta: dict[str, Any] = {}
    for field, line, pieces in doc.parts:
        value = _block(pieces)
        if field == "docno":
            if docno is not None:
                raise reader.error(f"a second DOCNO in the document that starts on line {doc.line}.",
                                   line, "DOCNO")
            docno = " ".join(value.split())
            if not docno:
                raise reader.error("the DOCNO is empty.", line, "DOCNO")
        elif field in ("", "text"):
            if value:
                texts.append(value)
        elif value:
            _put(meta, field, value)
    attributes = dict(doc.attributes)
    if docno is None:
        docno = " ".join(attributes.pop("id", "").split())
        if not docno:
            raise reader.error("the document that starts here has no <DOCNO> (nor an id attribute).",
                               doc.line, "DOCNO")
    for key, value in attributes.items():
        meta.setdefault(key, value)
    fields = {"id": docno, "text": "\n\n".join(texts), "doc_id": docno, "meta": meta or None}
    return plain_record("chunks", fields) or build("chunks", fields, file=reader.file, line=doc.line)


def _put(meta: dict[str, Any], key: str, value: str) -> None:
    """``meta[key] = value``, or a list of the values of a field that repeats."""
    if key not in meta:
        meta[key] = value
    elif isinstance(meta[key], list):
        meta[key].append(value)
    else:
        meta[key] = [meta[key], value]


# -- topics --------------------------------------------------------------------------------

_TOPIC_TAGS = ("top", "topic")
_TOPIC_WRAPPERS = ("topics",)
_ALIASES = {"number": "num", "query": "title", "description": "desc", "question": "desc",
            "narrative": "narr"}
_LABELS = {
    "num": ("number",), "title": ("topic", "title"), "desc": ("description",),
    "narr": ("narrative",), "dom": ("domain",), "smry": ("summary",),
    "con": ("concept(s)", "concepts", "concept"), "fac": ("factor(s)", "factors", "factor"),
    "def": ("definition(s)", "definitions", "definition"), "nat": ("nationality",),
}
_LABEL_RES = {field: re.compile("(?:" + "|".join(map(re.escape, labels)) + r")\s*:\s*", re.IGNORECASE)
              for field, labels in _LABELS.items()}


class _Topic:
    def __init__(self, line: int, attributes: dict[str, str]) -> None:
        self.line = line
        self.attributes = attributes
        self.fields: list[tuple[str, int, list[str]]] = []
        self.field: str | None = None
        self.size = 0


def read_trec_topics(source: Source, *, name: str | None = None, check_duplicates: bool = True,
                     numbered: bool = False) -> Iterator[Any]:
    """Yield a :class:`~ragjudge.models.Query` per ``<top>`` (``numbered``: ``(line, query)``
    with the line of its ``<top>``)."""
    reader = _Reader(source, name, "queries", check_duplicates)
    topic: _Topic | None = None

    def finish(done: _Topic) -> Iterator[Any]:
        record = _query(reader, done)
        if reader.duplicates is None or not reader.duplicates.seen(record, done.line):
            yield (done.line, record) if numbered else record

    for line, token in _tokens(reader.lines):
        if isinstance(token, _Tag) and token.name in _TOPIC_TAGS:
            if topic is not None:  # </top>, or a <top> that closes a topic lacking its </top>
                yield from finish(topic)
                topic = None
            elif token.closing:
                raise reader.error(f"{token.written} closes no topic.", line, token.name)
            if not token.closing:
                topic = _Topic(line, _attributes(token.attributes))
            continue
        if topic is None:
            if isinstance(token, _Tag) and token.name in _TOPIC_WRAPPERS:
                continue
            if isinstance(token, _Tag) or token.strip():
                raise reader.stray(token, line, "<top>…</top>")
            continue
        if isinstance(token, str):
            if topic.field is not None:
                topic.fields[-1][2].append(token)
                topic.size += len(token)
            elif token.strip():
                raise reader.error(f"{short(token.strip())} stands in the topic that starts on line "
                                   f"{topic.line} but in none of its fields.", line)
        elif token.closing:
            if token.name == topic.field:  # an explicit </title>; most topic files have none
                topic.field = None
        elif not token.empty:
            topic.field = token.name
            topic.fields.append((token.name, line, []))
        if topic.size > MAX_BLOCK_CHARS:
            raise reader.error(f"the topic that starts here is longer than {MAX_BLOCK_CHARS:,} "
                               "characters; is a </top> missing?", topic.line, "top")
    if topic is not None:  # the last topic's </top> may be missing too
        yield from finish(topic)


def _query(reader: _Reader, topic: _Topic) -> Any:
    values: dict[str, Any] = {}
    for written, line, pieces in topic.fields:
        field = _ALIASES.get(written, written)
        value = " ".join(_entities("".join(pieces)).split())
        label = _LABEL_RES.get(field)
        if label is not None and (match := label.match(value)):
            value = value[match.end():]
        if field in ("num", "title", "desc") and field in values:
            raise reader.error(f"a second <{written}> in the topic that starts on line {topic.line}.",
                               line, written)
        if value:
            _put(values, field, value)
    attributes = dict(topic.attributes)
    number = values.pop("num", None) or " ".join(attributes.pop("number", "").split())
    if not number:
        raise reader.error("the topic that starts here has no <num> (its id).", topic.line, "num")
    title = values.pop("title", None)
    description = values.pop("desc", None)
    if title is None and description is None:
        raise reader.error("the topic that starts here has neither a <title> nor a <desc>; a query "
                           "needs a text.", topic.line, "title")
    meta: dict[str, Any] = {}
    if "narr" in values:
        meta["narrative"] = values.pop("narr")
    meta.update(values)
    for key, value in attributes.items():
        meta.setdefault(key, value)
    fields = {"id": number, "text": title if title is not None else description,
              "description": description, "meta": meta or None}
    return plain_record("queries", fields) or build("queries", fields, file=reader.file, line=topic.line)


# -- detection and dispatch ----------------------------------------------------------------

_FIRST_TAG = re.compile(r"<\s*([A-Za-z][\w.:-]*)")


def sgml_format(source: Source, *, name: str | None = None) -> str | None:
    """``trec-sgml`` when the first tag of ``source`` is ``<DOC>``, ``trec-topics`` when it is
    ``<top>``, ``<topic>`` or ``<topics>``, else None. Reads only the file's first lines."""
    for number, text in Lines(source, name=name):
        stripped = text.strip()
        if not stripped or stripped.startswith(("<!", "<?")):
            if number > 100:
                return None
            continue
        match = _FIRST_TAG.match(stripped)
        if match is None:
            return None
        tag = match.group(1).lower()
        if tag == "doc":
            return "trec-sgml"
        if tag in _TOPIC_TAGS or tag in _TOPIC_WRAPPERS:
            return "trec-topics"
        return None
    return None


def read_trec_sgml(kind: str, source: Source, fmt: str, *, name: str | None = None,
                   check_duplicates: bool = True, numbered: bool = False) -> Iterator[Any]:
    """Records of ``kind`` from TREC SGML ``fmt`` (``trec-sgml`` documents are chunks,
    ``trec-topics`` are queries)."""
    holds = SGML_FORMATS[fmt]
    if kind != holds:
        what = "TREC documents (<DOC>)" if fmt == "trec-sgml" else "TREC topics (<top>)"
        others = [f for f, k in SGML_FORMATS.items() if k == kind]
        other = f", or give --format {others[0]} if it holds {kind}" if others else ""
        raise UsageError(f"a {fmt} file holds {what}, which are {holds}, not {kind}: import it with "
                         f"'ragjudge import {holds}'{other}.")
    reader = read_trec_documents if fmt == "trec-sgml" else read_trec_topics
    return reader(source, name=name, check_duplicates=check_duplicates, numbered=numbered)
