"""Annotator names as labels record them: checked, created on first use, and whether the
guidelines were shown to them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from sqlalchemy import select
from sqlalchemy.orm import Session
from ragjudge.services.events.names import check_annotator
from ragjudge.store.annotators import ensure_annotators
from ragjudge.store.schema import Annotator, AnswerJudgment, Label


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


def ensure_annotator_in(session: Session, name: str) -> bool:
    return bool(ensure_annotators(session.connection(), [name]))


def ensure_annotator(project: Project, name: str) -> bool:
    """Create the annotator if missing. Returns True when the annotator is new."""
    name = check_annotator(name)

    def work(session: Session) -> bool:
        return ensure_annotator_in(session, name)

    return project.write(work)


def annotator_seen_guidelines(project: Project, name: str) -> bool:
    with project.read() as session:
        row = session.get(Annotator, name)
        return bool(row and row.seen_guidelines)


def is_new_to_judging(project: Project, name: str) -> bool:
    """Whether the first-time guidelines are due for ``name``: they have not seen them in the
    app, and nothing is recorded under their name -- no label event and no judgment of an
    answer. An annotator whose labels were imported (``ragjudge import labels``), or who judged
    before under another name and was renamed, is not new: the flag alone would say so, since
    an import creates its annotators without it."""
    with project.read() as session:
        row = session.get(Annotator, name)
        if row is not None and row.seen_guidelines:
            return False
        for table in (Label, AnswerJudgment):
            if session.scalar(select(table.id).where(table.annotator == name).limit(1)) is not None:
                return False
        return True


def mark_guidelines_seen(project: Project, name: str) -> None:
    def work(session: Session) -> None:
        ensure_annotator_in(session, name)
        annotator = session.get(Annotator, name)
        assert annotator is not None  # ensured just above, in the same transaction
        annotator.seen_guidelines = True

    project.write(work)


def annotator_names(project: Project) -> list[str]:
    with project.read() as session:
        return list(session.scalars(select(Annotator.name).order_by(Annotator.name)))
