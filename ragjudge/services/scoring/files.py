"""Qrels and runs from files, and the measure lists of the command line."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING
import numpy as np
from ragjudge.errors import InputError, UsageError
from ragjudge.metrics.data import Qrels, Run
from ragjudge.metrics.registry import parse_measure


if TYPE_CHECKING:
    pass


_JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")


def run_name_of(path: str | os.PathLike) -> str:
    """A run's default name: its file name without extensions (``bm25.trec.gz`` -> ``bm25``)."""
    name = Path(path).name
    if name.endswith(".gz"):
        name = name[:-3]
    return Path(name).stem or name


def parse_measure_list(names: Iterable[str] | None) -> list[str]:
    """Measure names as asked for (default: :data:`DEFAULT_MEASURES`), checked, duplicates
    dropped. Commas separate names too (``-m P@5,R@5``), except inside parentheses."""
    if not names:
        return list(DEFAULT_MEASURES)
    out: list[str] = []
    for text in names:
        for name in _split_commas(text):
            parse_measure(name)  # UsageError naming the measure when unknown
            if name not in out:
                out.append(name)
    if not out:
        raise UsageError("no measure given: name one with -m, e.g. -m nDCG@10.")
    return out


def _split_commas(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    parts.append(current.strip())
    return [p for p in parts if p]


def _is_jsonl(path: str | os.PathLike) -> bool:
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return name.endswith(_JSONL_SUFFIXES)


def check_file(path: str | os.PathLike, what: str) -> None:
    from ragjudge.formats.source import path_kind

    found = path_kind(path)
    if found == "missing":
        raise InputError(f"no such {what} file.", file=str(path))
    if found == "folder":
        raise InputError(f"is a folder, not a {what} file.", file=str(path))


def load_qrels_file(path: str | os.PathLike, *, notes: list[str] | None = None) -> Qrels:
    """Qrels from a TREC qrels file (4 fields, 3 fields or SMART's ``query doc 0 0``, read by
    the TREC reader) or a JSONL qrels file (one grade a pair). A negative grade stays in the
    qrels as unjudged, as trec_eval reads it; ``notes`` hears the sentences about the file
    (its lines with a negative grade, a form other than TREC's 4 fields), as an import says
    them."""
    from ragjudge.metrics.trec import QrelsTally

    check_file(path, "qrels")
    if not _is_jsonl(path):
        from ragjudge.metrics.trec import read_qrels_arrays

        arrays = read_qrels_arrays(str(path))
        tally = QrelsTally(form=arrays.form, negative=arrays.negative)
        qrels = Qrels(arrays.query_ids, arrays.chunk_ids, arrays.grades, file=arrays.file,
                      lines=arrays.lines, from_file=True)
    else:
        from ragjudge.formats.jsonl import read_jsonl

        q, c, g = [], [], []
        tally = QrelsTally()
        for line, judgment in read_jsonl("qrels", str(path), numbered=True):
            q.append(judgment.query_id)
            c.append(judgment.chunk_id)
            g.append(judgment.grade)
            tally.count(judgment.grade, line)
        qrels = Qrels(q, c, np.array(g, dtype=np.int64), file=str(path))
    if notes is not None:
        notes.extend(tally.notes())
    return qrels


def close_qrels(qrels: Qrels, runs: Iterable[Run]) -> tuple[Qrels, int]:
    """``eval --qrels FILE --complete``: the file read as a complete reference, its world closed
    as a project closes a complete reference's (:func:`ragjudge.services.gold.gold.closure`).
    On every query of the file, every chunk any of ``runs`` retrieves (at any depth) that the
    file does not list is judged, grade 0: the closed world is every chunk any of the runs
    evaluated together retrieves. Returns the closed qrels and how many pairs were added."""
    from ragjudge.services.gold.gold import closure

    query_ids = qrels.query_id_bytes[qrels.qidx]
    extra_q, extra_c = closure(query_ids, qrels.chunk_ids, set(qrels.query_ids), runs)
    if not len(extra_q):
        return qrels, 0
    width = max(query_ids.dtype.itemsize, extra_q.dtype.itemsize)
    cwidth = max(qrels.chunk_ids.dtype.itemsize, extra_c.dtype.itemsize)
    closed = Qrels(np.concatenate([query_ids.astype(f"S{width}"), extra_q.astype(f"S{width}")]),
                   np.concatenate([qrels.chunk_ids.astype(f"S{cwidth}"), extra_c.astype(f"S{cwidth}")]),
                   np.concatenate([qrels.grades, np.zeros(len(extra_q), dtype=np.int64)]),
                   top_grade=qrels.top_grade)
    closed.file = qrels.file
    return closed, len(extra_q)


def load_run_file(path: str | os.PathLike, name: str | None = None) -> Run:
    """A run from a TREC run file (bulk parser; order by score as trec_eval) or a JSONL run.

    A JSONL run with scores is ordered by score like a TREC run; one without scores keeps its
    ranks (or line order), as a ranked list does. A file with no run lines is refused, as
    ``ragjudge import run`` refuses it (it would score 0 everywhere without a word).
    """
    check_file(path, "run")
    run = _read_run_file(path, name or run_name_of(path))
    if len(run) == 0:
        raise InputError("the file holds no run lines.", file=str(path))
    return run


def _read_run_file(path: str | os.PathLike, name: str) -> Run:
    if not _is_jsonl(path):
        return Run.from_trec(str(path), name=name)
    from ragjudge.formats.jsonl import read_jsonl

    q, c, scores, ranks = [], [], [], []
    for entry in read_jsonl("run", str(path)):
        q.append(entry.query_id)
        c.append(entry.chunk_id)
        scores.append(entry.score)
        ranks.append(entry.rank)
    if q and scores[0] is not None:
        return Run(q, c, np.array(scores, dtype=np.float64), name=name, file=str(path))
    # a ranked list: by rank (entries without a rank after the ranked ones), then line order
    rank_array = np.array([r if r is not None else np.iinfo(np.int64).max for r in ranks],
                          dtype=np.int64)
    order = np.lexsort((np.arange(len(q)), rank_array))
    q_sorted = [q[i] for i in order]
    c_sorted = [c[i] for i in order]
    return Run(q_sorted, c_sorted, None, name=name, ordered=True, file=str(path))


DEFAULT_MEASURES = (
    "P@1", "P@3", "P@5", "P@10", "R@5", "R@10", "R@20", "Success@5", "RR", "AP",
    "nDCG@5", "nDCG@10", "Rprec", "ContextPrecision@5",
)
"""The default scorecard: precision, recall, hit rate, rank and graded measures."""
