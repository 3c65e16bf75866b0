"""What an identity may see and change: the one rule every service asks before it shows another
annotator's grade, a gold grade or a run's rank of a pair, or changes the project.

An :class:`Access` is made once per request (:func:`access_for`) from an
:class:`~ragjudge.services.access.identity.Identity` and the project's roster and settings, and
passed to the services that reveal or change something; they refuse or filter there, so the
command line, the app and the browser give one answer to one question.

- A project without a lead lets every *known* identity do a lead's work (as before roles
  existed); once it has a lead, only active leads do. An unknown identity is never a lead.
- A project is *blind* by default (setting ``blind``, changed by a lead with ``ragjudge
  annotators blind on|off``): an annotator who is not a lead sees, pair by pair, only the
  grades of pairs they have judged themselves (others' grades, the gold, a run's rank), so that
  nothing they see can anchor a grade they have still to give. Aggregates (a run's mean score,
  κ, α) stay visible to everyone. With blind off, annotators see everyone's grades too; only
  leads still adjudicate, assign, review and change settings.
- Everyone sees and exports their own labels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import select

from ragjudge.errors import UsageError
from ragjudge.services.access import roster
from ragjudge.services.access.identity import UNKNOWN, Identity, as_identity
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


@dataclass(frozen=True)
class Access:
    """What :attr:`identity` may see and change in :attr:`project`, decided when made."""

    project: Project = field(repr=False, compare=False)
    identity: Identity
    lead: bool
    """may do a lead's work: adjudicate, assign, review, change the roster and settings"""
    sees_all: bool
    """may see every annotator's grade and the gold grade of every pair"""
    blind: bool

    @property
    def name(self) -> str | None:
        return self.identity.name

    def require_lead(self, doing: str) -> None:
        """Refuse ``doing`` (e.g. "adjudicate") unless this identity may lead."""
        if not self.lead:
            raise UsageError(_refusal(self, doing, "in this project", ""))

    def require_sees_all(self, doing: str) -> None:
        """Refuse ``doing`` (e.g. "list the disputed pairs") unless this identity may see every
        annotator's grades."""
        if not self.sees_all:
            raise UsageError(_refusal(
                self, doing, "in this blind project",
                ": annotators see only their own grades until they have judged a pair. Give "
                "--by a lead's name, or have a lead run 'ragjudge annotators blind off'"))

    def may_read_labels_of(self, annotator: str | None) -> bool:
        """Whether this identity may read ``annotator``'s labels pair by pair (None: everyone's)."""
        return self.sees_all or (annotator is not None and annotator == self.name)

    def own_pairs(self, query_id: str | None = None) -> set[tuple[str, str]]:
        """The pairs this identity has a current grade for (of one query, or all)."""
        if self.name is None:
            return set()
        newest = newest_label_ids()
        stmt = (select(Label.query_id, Label.chunk_id).join(newest, newest.c.id == Label.id)
                .where(Label.annotator == self.name, Label.grade.is_not(None)))
        if query_id is not None:
            stmt = stmt.where(Label.query_id == query_id)
        with self.project.read() as session:
            return {(q, c) for q, c in session.execute(stmt)}

    def pair_filter(self) -> Callable[[str, str], bool] | None:
        """None when every pair's grades are visible, else a test of (query, chunk): the pairs
        this identity has judged. One read for the whole project."""
        if self.sees_all:
            return None
        own = self.own_pairs()
        return lambda query_id, chunk_id: (query_id, chunk_id) in own

    def grade_filter(self, query_id: str) -> Callable[[str], bool] | None:
        """For one query: None when every grade is visible, else a test of whether the grades
        (others', the gold one) and a run's rank of the pair (``query_id``, chunk) may be shown:
        those of the pairs this identity has graded. One read per query."""
        if self.sees_all:
            return None
        own = {c for _, c in self.own_pairs(query_id)}
        return own.__contains__

    def may_see_pair(self, query_id: str, chunk_id: str) -> bool:
        visible = self.grade_filter(query_id)
        return visible is None or visible(chunk_id)


def access_for(project: Project, who: Identity | str | None) -> Access:
    """The rights of ``who`` (an identity, a name, or None: unknown) in ``project`` now."""
    identity = as_identity(who)
    lead = identity.known and roster.may_lead(project, identity.name)
    blind = is_blind(project)
    return Access(project, identity, lead=lead, sees_all=lead or (identity.known and not blind),
                  blind=blind)


def _refusal(access: Access, doing: str, where: str, why: str) -> str:
    leads = [m.name for m in roster.members(access.project, counts=False) if m.is_lead and m.active]
    who = "an unnamed user" if access.name is None else repr(access.name)
    return (f"Only a lead may {doing} {where}, and {who} is not one (leads: "
            f"{', '.join(leads) or 'none'}){why}. Nothing was changed.")


# -- the functions below ask an Access made on the spot (for callers not yet passing one) --


def viewer_is_lead(project: Project, viewer: str | None) -> bool:
    return access_for(project, viewer).lead


def sees_all_grades(project: Project, viewer: str | None) -> bool:
    return access_for(project, viewer).sees_all


def grade_filter(project: Project, viewer: str | None, query_id: str) -> Callable[[str], bool] | None:
    return access_for(project, viewer).grade_filter(query_id)


def can_see_pair_grades(project: Project, viewer: str | None, query_id: str, chunk_id: str) -> bool:
    return access_for(project, viewer).may_see_pair(query_id, chunk_id)


def require_sees_others(project: Project, viewer: str | None, doing: str) -> None:
    access_for(project, viewer).require_sees_all(doing)


__all__ = ["UNKNOWN", "Access", "BLIND_SETTING", "access_for", "is_blind", "set_blind"]
