"""Seeded review marks for tests, importable from any test folder as ``reviewkit`` (not from
``conftest``, which is ambiguous when several test folders have one)."""

from __future__ import annotations

from ragjudge.services.labels.events import comment_pair, flag_pair, record_label

def seed_marks(project) -> None:
    """ana grades and flags q1/c05 (with a note) and comments on q2/c08; ben grades q1/c05 and
    flags q3/c11 without a note."""
    record_label(project, annotator="ana", query_id="q1", chunk_id="c05", grade=2)
    record_label(project, annotator="ben", query_id="q1", chunk_id="c05", grade=0)
    flag_pair(project, annotator="ana", query_id="q1", chunk_id="c05", note="is this about refunds?")
    comment_pair(project, annotator="ana", query_id="q2", chunk_id="c08", note="see the FAQ")
    flag_pair(project, annotator="ben", query_id="q3", chunk_id="c11")
