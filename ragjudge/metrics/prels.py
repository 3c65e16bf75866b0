"""Sampled judgment files ("prels") as qrels and a pool sample.

TREC tracks that judged a sample of each pool distribute the sample with the judgments, in one
of two five-column forms, read by :func:`read_prels`:

- ``form="strata"``, NIST's ``sample_eval.pl`` (TREC Web, TRECVID, bioCADDIE): every pooled
  pair, ``query iteration chunk stratum grade``; a grade of -1 (any negative grade) marks a
  pooled pair that was not sampled. Each pair's inclusion probability is its stratum's
  sampling rate in that query (sampled / pooled).
- ``form="probability"``, the Million Query track's ``statAP_MQ_eval`` (2007-2009): only the
  sampled pairs, ``query chunk grade method probability``. A probability ``NA`` or a grade of
  -999 marks a pair that was not sampled (skipped, as the track's script skips it); method 0
  or 2 means the pair was judged for certain, so its probability is read as 1, as the script
  reads it; a probability outside (0, 1] is refused (the script would skip the line or divide
  by zero). One stratum.

The result is ``(Qrels, PoolSample)``: evaluate with ``extras={"sample": sample}``
(``statAP``, ``xinfAP``, ``infNDCG``, ``infP@k``); ``infAP`` reads the qrels of the strata form
directly. Whitespace separates the fields, as both scripts read them. A bad line is an
``InputError`` naming the file, line and field.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from ragjudge.errors import InputError, UsageError
from ragjudge.metrics.data import Qrels
from ragjudge.metrics.sampled import PoolSample
from ragjudge.metrics.trec import read_bytes
from ragjudge.numeric import parse_integer, parse_number
from ragjudge.safetext import quote

__all__ = ["read_prels"]

_FIELDS = {
    "strata": ("query_id", "iteration", "chunk_id", "stratum", "grade"),
    "probability": ("query_id", "chunk_id", "grade", "method", "probability"),
}


def _integer(text: str, where: dict[str, Any], field: str) -> int:
    value = parse_integer(text)
    if value is None:
        raise InputError(f"{quote(text)} is not a whole number.", field=field, **where)
    return value


def read_prels(source: Any, form: Literal["strata", "probability"]) -> tuple[Qrels, PoolSample]:
    """Read a sampled judgment file (a path, a file object, or inline text with a newline)."""
    if form not in _FIELDS:
        raise UsageError(f"unknown prels form {quote(form)}: strata (sample_eval.pl) or probability "
                         "(statAP_MQ_eval).")
    buf, size, name = read_bytes(source)
    text = bytes(buf[:size]).decode("utf-8", "replace")
    fields = _FIELDS[form]
    qids: list[str] = []
    cids: list[str] = []
    grades: list[int] = []
    strata: list[int] = []
    probs: list[float] = []
    lines: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        where: dict[str, Any] = {"file": name, "line": number}
        if len(parts) != 5:
            raise InputError(f"has {len(parts)} fields; a {form} prels line has 5: "
                             f"{' '.join(fields)}.", **where)
        if form == "strata":
            query, _, chunk, stratum_text, grade_text = parts
            qids.append(query)
            cids.append(chunk)
            strata.append(_integer(stratum_text, where, "stratum"))
            grades.append(max(_integer(grade_text, where, "grade"), -1))
        else:
            query, chunk, grade_text, method, prob = parts
            value = _integer(grade_text, where, "grade")
            if prob == "NA" or value == -999:
                continue
            chance = parse_number(prob)
            if chance is None or not math.isfinite(chance) or not 0.0 < chance <= 1.0:
                raise InputError(f"{quote(prob)} is not an inclusion probability in (0, 1].",
                                 field="probability", **where)
            if _integer(method, where, "method") in (0, 2):
                chance = 1.0
            qids.append(query)
            cids.append(chunk)
            grades.append(max(value, -1))
            probs.append(chance)
            strata.append(0)
        lines.append(number)
    qrels = Qrels(qids, cids, grades, file=name, lines=np.asarray(lines, dtype=np.int64),
                  from_file=True)
    grade = np.asarray(grades, dtype=np.int64)
    if form == "strata":
        inclusion = _stratum_rates(qids, np.asarray(strata, dtype=np.int64), grade >= 0)
    else:
        inclusion = np.asarray(probs, dtype=np.float64)
    return qrels, PoolSample(qids, cids, inclusion, strata, grade >= 0)


def _stratum_rates(qids: list[str], strata: np.ndarray, sampled: np.ndarray) -> np.ndarray:
    """Each pair's stratum sampling rate in its query: sampled pairs / pooled pairs."""
    if not qids:
        return np.zeros(0)
    _, cell = np.unique(np.stack([np.unique(qids, return_inverse=True)[1].ravel(), strata],
                                 axis=1), axis=0, return_inverse=True)
    cell = cell.ravel()
    pooled = np.bincount(cell)
    drawn = np.bincount(cell, weights=sampled)
    return (drawn / pooled)[cell]
