"""Reading TREC qrels and run files: one reader, three paths (pyarrow, numpy, lines), the same
language and the same messages whichever path reads a file (see
:mod:`ragjudge.metrics.trec.reader`).

- :func:`read_qrels_arrays`, :func:`read_run_arrays`: a file as numpy arrays
  (``Qrels.from_trec``, ``Run.from_trec``, ``eval``, ``import``);
- :class:`QrelsRows`, :func:`run_rows`: its rows line by line, as Python values (the records
  of :mod:`ragjudge.formats`);
- :func:`read_bytes`: an input's bytes, for readers of other line formats.
"""

from __future__ import annotations

from ragjudge.metrics.trec.lines import QRELS_FORMS, QrelsRows, QrelsTally, run_rows, smart_id, unjudged_note
from ragjudge.metrics.trec.reader import (
    QrelsArrays, RunArrays, read_qrels_arrays, read_run_arrays, smart_ids,
)
from ragjudge.metrics.trec.source import read_bytes
from ragjudge.metrics.trec.tokens import QRELS3_FIELDS, QRELS_FIELDS, RUN_FIELDS, packed_ids

__all__ = [
    "QRELS3_FIELDS", "QRELS_FIELDS", "QRELS_FORMS", "RUN_FIELDS", "QrelsArrays", "QrelsRows",
    "QrelsTally", "RunArrays", "packed_ids", "read_bytes", "read_qrels_arrays", "read_run_arrays",
    "run_rows", "smart_id", "smart_ids", "unjudged_note",
]
