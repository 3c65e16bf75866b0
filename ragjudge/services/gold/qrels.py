"""A project's gold qrels as the exports and the older callers take them: :func:`gold` of
:mod:`ragjudge.services.gold.gold`, as arrays or triples."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


def gold_qrel_arrays(project: Project, rule: str | None = None, *,
                     include_llm: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The gold qrels of a project as arrays ``(query ids, chunk ids, grades)`` (ids as
    ``as_ids`` arrays), sorted by query and chunk (:func:`ragjudge.services.gold.gold.gold`)."""
    from ragjudge.services.gold.gold import gold

    found = gold(project, rule, include_llm=include_llm)
    return found.query_ids, found.chunk_ids, found.grades


def gold_qrels(project: Project, rule: str | None = None, *,
               include_llm: bool = False) -> list[tuple[str, str, int]]:
    """The gold qrels of a project as ``(query, chunk, grade)`` triples, sorted by query and
    chunk (:func:`ragjudge.services.gold.gold.gold`)."""
    from ragjudge.services.gold.gold import gold

    return gold(project, rule, include_llm=include_llm).triples()
