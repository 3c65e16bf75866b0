"""Who may see which grades: the one rule every screen and command asks before it shows another
annotator's grade, a gold grade or a run's rank for a pair.

A project is *blind* by default (setting ``blind``, changed by a lead with ``ragjudge
annotators blind on|off``): an annotator who is not a lead sees, pair by pair, only the grades of
pairs they have judged themselves, so that nothing they see can anchor a grade they have still
to give. Aggregates (a run's mean score, κ, α) stay visible to everyone. A lead sees everything;
so does everyone while the project has no lead (:func:`ragjudge.services.access.roster.may_see_others`).
With blind off, annotators see everyone's grades too; only leads still adjudicate and assign.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from sqlalchemy import select
from ragjudge.errors import UsageError
from ragjudge.services.access import roster
from ragjudge.services.events.labels import newest_label_ids
from ragjudge.store.schema import Label


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


BLIND_SETTING = "blind"
"""Project setting: True (the default) or False."""


def is_blind(project: Project) -> bool:
    return project.get_setting(BLIND_SETTING, True) is not False


def set_blind(project: Project, blind: bool) -> None:
    project.set_settings({BLIND_SETTING: bool(blind)})


def viewer_is_lead(project: Project, viewer: str | None) -> bool:
    """Whether ``viewer`` may do a lead's work (anyone while the project has no lead)."""
    return roster.may_lead(project, viewer)


def sees_all_grades(project: Project, viewer: str | None) -> bool:
    """Whether ``viewer`` may see every annotator's grades and the gold grade of every pair: a
    lead (or anyone without leads), or anyone once a lead turned blind mode off."""
    return roster.may_see_others(project, viewer) or not is_blind(project)


def grade_filter(project: Project, viewer: str | None, query_id: str) -> Callable[[str], bool] | None:
    """For one query: None when ``viewer`` may see every grade, else a test of whether they may
    see the grades (others', the gold one) and a run's rank of the pair (``query_id``, chunk):
    those of the pairs they have graded themselves. One read per query."""
    if sees_all_grades(project, viewer):
        return None
    if not viewer:
        return lambda chunk_id: False
    newest = newest_label_ids()
    with project.read() as session:
        own = set(session.scalars(
            select(Label.chunk_id).join(newest, newest.c.id == Label.id)
            .where(Label.annotator == viewer, Label.query_id == query_id,
                   Label.grade.is_not(None))))
    return own.__contains__


def can_see_pair_grades(project: Project, viewer: str | None, query_id: str, chunk_id: str) -> bool:
    """Whether ``viewer`` may see other annotators' grades, the gold grade and the runs' ranks
    of one pair (see :func:`grade_filter`)."""
    visible = grade_filter(project, viewer, query_id)
    return visible is None or visible(chunk_id)


def require_sees_others(project: Project, viewer: str | None, doing: str) -> None:
    """Refuse ``doing`` (e.g. "list disputed pairs") to a viewer who may not see other
    annotators' grades."""
    if sees_all_grades(project, viewer):
        return
    leads = [m.name for m in roster.members(project, counts=False) if m.is_lead and m.active]
    who = "an unnamed user" if not viewer else repr(viewer)
    raise UsageError(
        f"Only a lead may {doing} in this blind project, and {who} is not one (leads: "
        f"{', '.join(leads)}): annotators see only their own grades until they have judged a "
        "pair. Give --by a lead's name, or have a lead run 'ragjudge annotators blind off'. "
        "Nothing was changed.")
