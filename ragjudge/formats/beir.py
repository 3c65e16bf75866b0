"""BEIR folders: ``corpus.jsonl`` (``_id``, ``title``, ``text``, ``metadata``?),
``queries.jsonl`` (``_id``, ``text``, ``metadata``?) and ``qrels/<split>.tsv`` (a header
``query-id corpus-id score`` then tab-separated lines). Each file may also be gzipped
(``corpus.jsonl.gz``).

A corpus document becomes a chunk whose ``text`` is the document's text and whose ``meta`` holds
its ``title`` and ``metadata``; BEIR ids may be JSON numbers and are read as strings. Other
fields of a BEIR line are kept in ``meta`` rather than refused: BEIR files come from many tools.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ragjudge.errors import InputError, UsageError, why_unusable
from ragjudge.formats.jsonl import parse_object
from ragjudge.formats.records import (
    Duplicates, build, check_text, has_control, json_type, plain_record, read_grade, short,
)
from ragjudge.formats.source import Lines, open_output, path_kind
from ragjudge.models import Chunk, Judgment, Query


BEIR_FILES = ("corpus.jsonl", "queries.jsonl")


def is_beir_folder(folder: str | Path) -> bool:
    """Whether ``folder`` holds a BEIR dataset, or part of one: a ``corpus.jsonl``, a
    ``queries.jsonl`` (either maybe gzipped) or a ``qrels`` folder."""
    folder = Path(folder)
    return path_kind(folder / "qrels") == "folder" or any(
        path_kind(folder / name) == "file" for stem in BEIR_FILES for name in (stem, f"{stem}.gz"))


def _no_dataset(folder: str | Path) -> InputError:
    return InputError(
        "is a folder, not a file, and holds no BEIR dataset (a BEIR folder holds corpus.jsonl, "
        "queries.jsonl and qrels/<split>.tsv; this one holds none of them). Give the file "
        "itself (JSONL, CSV, TSV, TREC or SMART), or a BEIR folder.", file=str(folder))


def no_beir_kind(folder: str | Path, kind: str) -> Exception:
    """The refusal of a folder given for a ``kind`` a BEIR dataset does not hold (a run,
    facets, answers...): a folder holding no BEIR dataset is said to be a folder, not a file of
    that kind; a BEIR folder is said to hold none."""
    if not is_beir_folder(folder):
        return InputError(f"is a folder, not a {kind} file: give the file itself (TREC, JSONL or CSV).",
                          file=str(folder))
    return UsageError(f"{folder} is read as a BEIR dataset (a folder), which holds no {kind}; "
                      "give a TREC, JSONL or CSV file.")


def beir_file(folder: str | Path, stem: str) -> Path:
    """``folder/stem`` or ``folder/stem.gz``; an :class:`InputError` when neither exists,
    which says whether the folder is a BEIR dataset lacking that file or no BEIR dataset."""
    folder = Path(folder)
    for candidate in (folder / stem, folder / f"{stem}.gz"):
        if path_kind(candidate) == "file":
            return candidate
    if not is_beir_folder(folder):
        raise _no_dataset(folder)
    raise InputError(f"this BEIR folder has no {stem} (nor {stem}.gz), which this import "
                     "reads.", file=str(folder))


def beir_qrels_files(folder: str | Path, split: str | None = None) -> list[Path]:
    """The qrels files of a BEIR folder (one split, or every ``qrels/*.tsv``)."""
    qrels = Path(folder) / "qrels"
    if split is not None:
        return [beir_file(qrels, f"{split}.tsv")]
    try:
        names = os.listdir(qrels) if path_kind(qrels) == "folder" else []
    except OSError as exc:  # a qrels folder this user may not list
        raise InputError(why_unusable(exc, qrels), file=str(qrels)) from None
    files = sorted(qrels / n for n in names if n.endswith((".tsv", ".tsv.gz")) and not n.startswith("."))
    if not files:
        if not is_beir_folder(folder):
            raise _no_dataset(folder)
        raise InputError("this BEIR folder has no qrels/<split>.tsv files, which this import "
                         "reads.", file=str(folder))
    return files


def _documents(path: Path, what: str, *, numbered: bool, check_duplicates: bool) -> Iterator[Any]:
    lines = Lines(path)
    file = lines.name
    duplicates = Duplicates("chunks" if what == "corpus" else "queries", file) if check_duplicates else None
    for number, text in lines:
        if not text.strip():
            continue
        data = parse_object(text, file=file, line=number)
        doc_id = data.pop("_id", None)
        if doc_id is None:
            raise InputError("the required field is missing.", file=file, line=number, field="_id")
        if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
            raise InputError(f"{short(doc_id)} is {json_type(doc_id)}, not a string.",
                             file=file, line=number, field="_id")
        body = data.pop("text", None)
        if body is None and what == "queries":
            raise InputError("the required field is missing.", file=file, line=number, field="text")
        meta: dict[str, Any] = {}
        if "title" in data:
            title = data.pop("title")
            if title not in (None, ""):
                meta["title"] = title
        metadata = data.pop("metadata", None)
        if metadata not in (None, {}):
            if not isinstance(metadata, dict):
                raise InputError(f"expected an object, got {json_type(metadata)}.", file=file,
                                 line=number, field="metadata")
            meta.update(metadata)
        meta.update(data)
        fields = {"id": str(doc_id), "text": "" if body is None else body}
        promoted = ("doc_id",) if what == "corpus" else ("description", "category")
        for key in promoted:
            if isinstance(meta.get(key), str):
                fields[key] = meta.pop(key)
        fields["meta"] = meta or None
        kind = "chunks" if what == "corpus" else "queries"
        record = plain_record(kind, fields) or build(kind, fields, file=file, line=number)
        if duplicates is not None and duplicates.seen(record, number):
            continue
        yield (number, record) if numbered else record


def read_beir_corpus(folder: str | Path, *, numbered: bool = False,
                     check_duplicates: bool = True) -> Iterator[Any]:
    """Yield a :class:`Chunk` per document of ``folder/corpus.jsonl``."""
    return _documents(beir_file(folder, "corpus.jsonl"), "corpus", numbered=numbered,
                      check_duplicates=check_duplicates)


def read_beir_queries(folder: str | Path, *, numbered: bool = False,
                      check_duplicates: bool = True) -> Iterator[Any]:
    """Yield a :class:`Query` per line of ``folder/queries.jsonl``."""
    return _documents(beir_file(folder, "queries.jsonl"), "queries", numbered=numbered,
                      check_duplicates=check_duplicates)


def read_beir_qrels(folder: str | Path, *, split: str | None = None, numbered: bool = False,
                    check_duplicates: bool = True, path: str | Path | None = None) -> Iterator[Any]:
    """Yield a :class:`Judgment` per line of the qrels TSV files (one split, or all of them).

    ``numbered`` yields ``(file, line, judgment)``. The same pair in two files with two grades is
    a contradiction, as within one file.
    """
    files = [Path(path)] if path is not None else beir_qrels_files(folder, split)
    duplicates = Duplicates("qrels", str(files[0])) if check_duplicates else None
    for qrels_path in files:
        lines = Lines(qrels_path)
        file = lines.name
        if duplicates is not None:
            duplicates.file = file
        for number, text in lines:
            if not text.strip():
                continue
            parts = text.split("\t") if "\t" in text else text.split()
            if number == 1 and [p.strip().lower() for p in parts[:2]] == ["query-id", "corpus-id"]:
                continue
            if len(parts) != 3:
                raise InputError(f"a BEIR qrels line has 3 tab-separated fields 'query-id "
                                 f"corpus-id score', this one has {len(parts)}: {short(text)}.",
                                 file=file, line=number)
            qid, docid = (p.strip() for p in parts[:2])
            if has_control(text):
                check_text(zip(("query-id", "corpus-id", "score"), (qid, docid, parts[2])),
                           file=file, line=number)
            # blanks around the grade are padding; other white space is no part of a number
            grade = read_grade(parts[2].strip(" \t\r"), file=file, line=number, field="score")
            if not qid or not docid:
                raise InputError("an empty id.", file=file, line=number,
                                 field="query-id" if not qid else "corpus-id")
            judgment = Judgment(query_id=qid, chunk_id=docid, grade=grade)
            if duplicates is not None and duplicates.seen(judgment, number):
                continue
            yield (file, number, judgment) if numbered else judgment


def write_beir(folder: str | Path, *, chunks: Iterable[Chunk] = (), queries: Iterable[Query] = (),
               qrels: Iterable[Judgment | tuple[str, str, int]] = (), split: str = "test") -> None:
    """Write a BEIR folder (created if needed) that :func:`read_beir_corpus` and friends read back."""
    folder = Path(folder)
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with open_output(folder / "corpus.jsonl") as out:
        for chunk in chunks:
            meta = dict(chunk.meta or {})
            line: dict[str, Any] = {"_id": chunk.id, "title": meta.pop("title", ""), "text": chunk.text}
            if chunk.doc_id is not None:
                meta["doc_id"] = chunk.doc_id
            if meta:
                line["metadata"] = meta
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    with open_output(folder / "queries.jsonl") as out:
        for query in queries:
            line = {"_id": query.id, "text": query.text}
            extra = dict(query.meta or {})
            for key in ("description", "category"):
                if getattr(query, key) is not None:
                    extra[key] = getattr(query, key)
            if extra:
                line["metadata"] = extra
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    with open_output(folder / "qrels" / f"{split}.tsv") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for item in qrels:
            qid, docid, grade = item if isinstance(item, tuple) else (item.query_id, item.chunk_id, item.grade)
            for value in (qid, docid):
                if "\t" in value or "\n" in value:
                    raise InputError(f"{short(value)} holds a tab or line break, which a BEIR "
                                     "qrels file cannot hold.")
            out.write(f"{qid}\t{docid}\t{int(grade)}\n")
