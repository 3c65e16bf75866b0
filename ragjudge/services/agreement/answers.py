"""Agreement on judgments of generated answers: units (query, run, nugget) and (query, run,
sentence, chunk) on the scale 0 none, 1 partial, 2 full.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from ragjudge.services.access.rights import Access
from ragjudge.services.events.answers import LEVELS, current_judgments


if TYPE_CHECKING:
    from ragjudge.metrics.agreement import Ratings


def answer_ratings(project, *, annotators: Iterable[str] | None = None):  # noqa: ANN001, ANN201
    """The current answer judgments as two :class:`~ragjudge.metrics.agreement.Ratings` on the
    ordinal scale 0 none, 1 partial, 2 full: nugget support with units (query, run, nugget) and
    citation support with units (query, run, sentence, chunk)."""
    with project.connect() as connection:
        judged = current_judgments(connection, annotators=annotators)
    return ratings_of(judged)


def ratings_of(judged: Iterable[Any]) -> tuple[Ratings, Ratings]:
    """Two :class:`Ratings` (nugget support, citation support) from judgments with ``query_id``,
    ``run``, ``annotator``, ``support`` and either ``nugget`` or ``sentence`` and ``chunk_id``
    (:class:`CurrentJudgment` or answer-label records)."""
    import numpy as np

    from ragjudge.metrics.agreement import Ratings

    nugget_rows, cite_rows = [], []
    for j in judged:
        if j.annotator is None:
            from ragjudge.errors import InputError

            raise InputError(f"a judgment of query {j.query_id}, run {j.run} names no annotator; "
                             "agreement needs an 'annotator' field on every line.", field="annotator")
        if j.nugget is not None:
            nugget_rows.append((j.query_id, j.run, j.nugget, j.annotator, LEVELS[j.support]))
        else:
            cite_rows.append((j.query_id, j.run, int(j.sentence), j.chunk_id, j.annotator,
                              LEVELS[j.support]))

    def build(rows: list[tuple], width: int) -> Ratings:
        if not rows:
            return Ratings.from_matrix(np.empty((0, 0)), (0, 2))
        columns = list(zip(*rows))
        units = tuple(np.array(c, dtype=object) for c in columns[:width])
        return Ratings.from_long(units, np.array(columns[width], dtype=object),
                                 np.array(columns[width + 1], dtype=np.float64), (0, 2),
                                 duplicates="last")

    return build(nugget_rows, 3), build(cite_rows, 4)


def answer_agreement(project, *, access: Access,  # noqa: ANN001, ANN201
                     annotators: Iterable[str] | None = None):
    """``{"nugget_support": AgreementView, "citation_support": AgreementView}`` of the current
    answer judgments (the same statistics as for labels), the disputed units as ``access`` may
    see them (:func:`~ragjudge.services.agreement.views.visible_to`)."""
    from ragjudge.services.agreement.views import visible_to

    nuggets, citations = answer_ratings(project, annotators=annotators)
    return {key: visible_to(view, access) for key, view in answer_views(nuggets, citations).items()}


NUGGET_UNIT = ("query_id", "run", "nugget")


CITATION_UNIT = ("query_id", "run", "sentence", "chunk_id")


def answer_views(nuggets, citations) -> dict[str, Any]:  # noqa: ANN001
    """The agreement views of nugget-support and citation-support ratings."""
    from ragjudge.services.agreement.views import agreement_view

    return {"nugget_support": agreement_view(nuggets, unit_fields=NUGGET_UNIT),
            "citation_support": agreement_view(citations, unit_fields=CITATION_UNIT)}
