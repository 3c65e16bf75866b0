"""The LLM in human judging: its grades shown after a person's grade, and the pairs put first
in a person's queue (those the LLM found hard or disagreed on).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from sqlalchemy import select
from ragjudge.errors import UsageError
from ragjudge.services.access.rights import Access


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


QUEUE_ORDER_SETTING = "llm_queue_order"


QUEUE_ORDERS = ("off", "hardest", "disagreement")


REVEAL_SETTING = "llm_reveal_after_grading"


def queue_order(project: Project) -> str:
    value = project.get_setting(QUEUE_ORDER_SETTING) or "off"
    return value if value in QUEUE_ORDERS else "off"


def reveal_after_grading(project: Project) -> bool:
    return bool(project.get_setting(REVEAL_SETTING, False))


def set_judging_settings(project: Project, *, access: Access, order: str | None = None,
                         reveal: bool | None = None) -> None:
    """The lead's choices of how the LLM's grades shape human judging (both off by default)."""
    access.require_lead("change the LLM judging settings")
    values: dict[str, Any] = {}
    if order is not None:
        if order not in QUEUE_ORDERS:
            raise UsageError(f"--queue-order {order}: use {', '.join(QUEUE_ORDERS)}.")
        values[QUEUE_ORDER_SETTING] = order
    if reveal is not None:
        values[REVEAL_SETTING] = bool(reveal)
    if values:
        project.set_settings(values)


def llm_names(connection: Any) -> list[str]:
    from ragjudge.store.schema import Annotator

    return sorted(connection.execute(select(Annotator.name).where(Annotator.kind == "llm")).scalars())


def llm_grades(project: Project, query_id: str, chunk_id: str, *,
               access: Access) -> list[tuple[str, int | None]]:
    """Each LLM annotator's word on a pair: its current grade, or None when its newest call
    came back unparsed (LLMs that never saw the pair are left out). Nothing for a viewer who
    may not see the pair's grades yet (in a blind project: before they graded it)."""
    from ragjudge.services.events.labels import newest_label_ids
    from ragjudge.store.schema import Label, LlmCall

    if not access.may_see_pair(query_id, chunk_id):
        return []
    with project.connect() as connection:
        names = llm_names(connection)
        if not names:
            return []
        newest = newest_label_ids()
        graded = dict(connection.execute(
            select(Label.annotator, Label.grade).join(newest, Label.id == newest.c.id)
            .where(Label.query_id == query_id, Label.chunk_id == chunk_id,
                   Label.annotator.in_(names), Label.grade.is_not(None))).all())
        called = set(connection.execute(
            select(LlmCall.annotator).where(LlmCall.query_id == query_id,
                                            LlmCall.chunk_id == chunk_id,
                                            LlmCall.outcome == "unparsed")).scalars())
    return [(n, graded.get(n)) for n in names if n in graded or n in called]


def priorities(project: Project, annotator: str, query_id: str, order: str) -> dict[str, int]:
    """For ordering an annotator's queue: per chunk of the query, 0 for the pairs to see first
    (``hardest``: the LLM's answer was unparsed or a mid-scale grade; ``disagreement``: the
    LLM's grade differs from an earlier human grade), 1 for the rest."""
    if order == "off":
        return {}
    from ragjudge.services.events.labels import newest_label_ids
    from ragjudge.store.schema import Annotator, Label, LlmCall

    scale = project.scale
    with project.connect() as connection:
        names = llm_names(connection)
        if not names:
            return {}
        newest = newest_label_ids()
        rows = connection.execute(
            select(Label.chunk_id, Label.annotator, Label.grade).join(newest, Label.id == newest.c.id)
            .where(Label.query_id == query_id, Label.grade.is_not(None))).all()
        unparsed = set(connection.execute(
            select(LlmCall.chunk_id).where(LlmCall.query_id == query_id,
                                           LlmCall.annotator.in_(names),
                                           LlmCall.outcome == "unparsed")).scalars())
        humans = set(connection.execute(select(Annotator.name).where(Annotator.kind != "llm")).scalars())
    if annotator in names:
        return {}  # an LLM's own queue keeps its order
    machine: dict[str, set[int]] = {}
    people: dict[str, set[int]] = {}
    for chunk_id, who, grade in rows:
        if grade is None:
            continue
        if who in names:
            machine.setdefault(chunk_id, set()).add(int(grade))
        elif who in humans and who != annotator:
            people.setdefault(chunk_id, set()).add(int(grade))
    first: set[str] = set()
    if order == "hardest":
        first = set(unparsed) | {c for c, gs in machine.items()
                                 if any(scale.min < g < scale.max for g in gs)}
    else:
        first = {c for c, gs in machine.items() if c in people and gs != people[c]}
    return {c: 0 for c in first}
