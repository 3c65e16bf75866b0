"""The project's relevance scale as annotators see it: the names of its grades.

A scale's levels (grade, name, description) and its threshold live in the ``scale`` setting;
:func:`set_grade_names` renames the grades, a lead's change like every other setting. Labels
hold grades, not names, so renaming changes no label: only what every screen, export and prompt
calls each grade.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ragjudge.errors import UsageError
from ragjudge.models import Scale

if TYPE_CHECKING:
    from ragjudge.services.access.rights import Access
    from ragjudge.services.project.database import Project

SCALE_SETTING = "scale"
"""Project setting: the scale's levels and threshold (:class:`ragjudge.models.Scale` as JSON)."""


def current_scale(project: Project) -> Scale:
    """The scale as stored now. A project object keeps the scale it first read, and one that
    lives long (the web server's) would show grade names renamed since by another process;
    what shows names to people reads them here."""
    raw = project.get_setting(SCALE_SETTING)
    return project.scale if raw is None else Scale.model_validate(raw)


def named_scale(scale: Scale, names: Sequence[str], option: str = "--grade-names") -> Scale:
    """``scale`` with ``names`` for its grades, or a :class:`UsageError` in one paragraph that
    starts with ``option`` and says that nothing was changed."""
    try:
        return scale.with_names(names)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}. Nothing was changed.") from None


def set_grade_names(project: Project, names: Sequence[str], *, access: Access) -> Scale:
    """Rename the project's grades, lowest first (a lead's setting); returns the scale now."""
    access.require_lead("rename the grades of the scale")
    scale = named_scale(project.scale, names)
    project.set_settings({SCALE_SETTING: scale.model_dump(mode="json")})
    return project.scale


__all__ = ["SCALE_SETTING", "current_scale", "named_scale", "set_grade_names"]
