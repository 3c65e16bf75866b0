"""What an identity may see and change: the one rule every service asks before it shows another
annotator's grade, a gold grade or a run's rank of a pair, or changes the project.

An :class:`Access` is made once per request (:func:`access_for`) from an
:class:`~ragjudge.services.access.identity.Identity` and the project's roster and settings, and
passed to the services that reveal or change something; they refuse or filter there, so the
command line, the app and the browser give one answer to one question.

- A project without a lead lets every *known* identity do a lead's work (as before roles
  existed); once it has a lead, only active leads do. An unknown identity is never a lead, and a
  token identity (a browser tab) only with the role.
- A project is *blind* by default (setting ``blind``, changed by a lead with ``ragjudge
  annotators blind on|off``): an annotator who is not a lead sees, pair by pair, only the
  grades of pairs they have judged themselves (others' grades, the gold, a run's rank), so that
  nothing they see can anchor a grade they have still to give. Aggregates (a run's mean score,
  κ, α) stay visible to everyone. With blind off, annotators see everyone's grades too; only
  leads still adjudicate, assign, review and change settings.
- Everyone sees and exports their own labels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragjudge.services.access.identity import UNKNOWN, Identity, as_identity
from ragjudge.services.access.rights import Access
from ragjudge.store.sqltext import fetch

if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


BLIND_SETTING = "blind"
"""Project setting: True (the default) or False."""


def is_blind(project: Project) -> bool:
    return project.get_setting(BLIND_SETTING, True) is not False


def set_blind(project: Project, blind: bool, *, access: Access) -> None:
    """Turn blind judging on or off: a lead's setting."""
    access.require_lead("change whether the project is blind")
    project.set_settings({BLIND_SETTING: bool(blind)})


def access_for(project: Project, who: Identity | str | None) -> Access:
    """The rights of ``who`` (an identity, a name, or None: unknown) in ``project`` now.

    A token identity (a browser session) does a lead's work only with the role: a project
    without a lead has no lead in a browser."""
    identity = as_identity(who)
    leads = active_leads(project)
    if identity.name is None:
        lead = False
    elif identity.how == "token" or leads:
        lead = identity.name in leads
    else:
        lead = True
    blind = is_blind(project)
    return Access(project, identity, lead=lead, sees_all=lead or (identity.known and not blind),
                  blind=blind, leads=leads)


def active_leads(project: Project) -> tuple[str, ...]:
    """The project's active leads, by name: the roster's members whose role is ``lead`` and whose
    status is ``active`` (:class:`ragjudge.services.access.roster.Member`: a row without a
    status is active), read in plain SQL so that a project opened lean
    (:mod:`ragjudge.services.project.lite`) answers with the same rule."""
    with project.connect() as connection:
        rows = fetch(connection, "SELECT name FROM annotators WHERE role = 'lead' "
                                 "AND (status IS NULL OR status IN ('', 'active'))")
    return tuple(sorted(name for (name,) in rows))


__all__ = ["UNKNOWN", "Access", "BLIND_SETTING", "access_for", "is_blind", "set_blind"]
