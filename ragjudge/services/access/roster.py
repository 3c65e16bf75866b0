"""The people (and models) who label a project: roles, status, reference qrels, login tokens.

A project starts with no lead: everyone may do everything, as before roles existed. Once an
annotator has the role ``lead``, only leads change the roster, adjudicate, assign, resolve flags
and see other annotators' labels: every change here takes the :class:`Access` of who asks
(``access=``, :func:`ragjudge.services.access.visibility.access_for`) and refuses without a
lead's rights. On a SQLite file this is a courtesy -- whoever has the file can change it -- and
it is enforced where the project is reached only through ragjudge (``ragjudge serve``), where
identity comes from a personal token.

A token is shown once, when issued; only its SHA-256 is stored (:func:`token_digest`), so a
copy of the database does not let anyone log in.
"""

from __future__ import annotations

import difflib
import secrets
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any
from sqlalchemy import ForeignKey, func, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session
from ragjudge.errors import UsageError
from ragjudge.services.access.identity import token_digest
from ragjudge.services.access.rights import Access
from ragjudge.services.events.annotators import check_annotator
from ragjudge.services.events.labels import newest_label_ids
from ragjudge.store.annotators import ensure_annotators
from ragjudge.store.schema import Adjudication, Annotator, Base, Label, utcnow
from ragjudge.safetext import quote


if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


ROLES = ("annotator", "lead")


KINDS = ("human", "llm")


ROSTER_SETTING = "roster"
"""Project setting: ``open`` (a new name may start labelling, after a question in the app) or
``closed`` (only registered annotators may label)."""


@dataclass(frozen=True)
class Member:
    """One annotator as the roster shows it. ``labels`` counts pairs with a current grade."""

    name: str
    role: str
    kind: str
    status: str
    reference: bool
    complete: bool
    has_token: bool
    created_at: datetime | None
    labels: int = 0
    queries: int = 0
    last_label_at: datetime | None = None

    @property
    def is_lead(self) -> bool:
        return self.role == "lead"

    @property
    def active(self) -> bool:
        return self.status == "active"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("created_at", "last_label_at"):
            value = data[key]
            data[key] = None if value is None else value.isoformat()
        return data


def _member(row: Annotator, counts: dict[str, tuple[int, int, datetime | None]]) -> Member:
    labels, queries, last = counts.get(row.name, (0, 0, None))
    return Member(name=row.name, role=row.role or "annotator", kind=row.kind or "human",
                  status=row.status or "active", reference=bool(row.reference),
                  complete=bool(row.complete), has_token=row.token_hash is not None,
                  created_at=row.created_at, labels=labels, queries=queries, last_label_at=last)


def _label_counts(session: Session) -> dict[str, tuple[int, int, datetime | None]]:
    """Per annotator: pairs with a current grade, queries among them, newest graded event."""
    newest = newest_label_ids()
    rows = session.execute(
        select(Label.annotator, func.count(), func.count(func.distinct(Label.query_id)),
               func.max(Label.created_at))
        .join(newest, newest.c.id == Label.id)
        .where(Label.grade.is_not(None))
        .group_by(Label.annotator))
    return {name: (int(n), int(q), last) for name, n, q, last in rows}


def members(project: Project, *, counts: bool = True) -> list[Member]:
    """Every annotator, leads first, then by name."""
    with project.read() as session:
        tally = _label_counts(session) if counts else {}
        rows = session.scalars(select(Annotator).order_by(Annotator.name)).all()
        found = [_member(row, tally) for row in rows]
    return sorted(found, key=lambda m: (not m.is_lead, m.name))


def member(project: Project, name: str) -> Member | None:
    with project.read() as session:
        row = session.get(Annotator, name)
        return None if row is None else _member(row, {})


def nearest_name(project: Project, name: str) -> str | None:
    """The known annotator ``name`` most likely means, when it is not itself known: the same
    name in other case or spacing first, then the closest spelling (ratio ≥ 0.75)."""
    known = [m.name for m in members(project, counts=False)]
    if name in known:
        return None
    folded = {k.casefold().replace(" ", ""): k for k in known}
    key = name.casefold().replace(" ", "")
    if key in folded:
        return folded[key]
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    if not close:
        close = difflib.get_close_matches(key, list(folded), n=1, cutoff=0.75)
        close = [folded[c] for c in close]
    return close[0] if close else None


def roster_closed(project: Project) -> bool:
    return project.get_setting(ROSTER_SETTING, "open") == "closed"


def set_roster(project: Project, state: str, *, access: Access) -> None:
    """Open or close the roster: a lead's setting."""
    access.require_lead("open or close the roster")
    if state not in ("open", "closed"):
        raise UsageError(f"The roster is 'open' or 'closed', not {quote(state)}. Nothing was changed.")
    project.set_settings({ROSTER_SETTING: state})


def check_can_label(project: Project, name: str) -> None:
    """Refuse a session under ``name`` when it is retired, or unknown in a closed roster."""
    found = member(project, name)
    if found is None:
        if roster_closed(project):
            hint = nearest_name(project, name)
            also = f" Did you mean {quote(hint)}?" if hint else ""
            raise UsageError(
                f"{quote(name)} is not an annotator of this project, and its roster is closed.{also} "
                "A lead adds annotators with 'ragjudge annotators add NAME'.")
        return
    if not found.active:
        raise UsageError(f"The annotator {quote(name)} is retired; their labels are kept but the name "
                         "cannot label. A lead can add them again with 'ragjudge annotators add'.")


def _check_choice(option: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise UsageError(f"{option} is one of {', '.join(choices)}, not {quote(value)}. Nothing was changed.")
    return value


def _new_token() -> str:
    return "rj_" + secrets.token_urlsafe(24)


def add(project: Project, name: str, *, access: Access, role: str = "annotator",
        kind: str = "human", token: bool = False, reinstate: bool = True
        ) -> tuple[Member, str | None]:
    """Register ``name`` (or update the role and kind of a known one, reinstating a retired
    one); with ``token``, issue a login token and return it (shown once, never stored). In a
    project without a lead anyone known may add the first one."""
    access.require_lead("change the roster")
    name = check_annotator(name)
    _check_choice("--role", role, ROLES)
    _check_choice("--kind", kind, KINDS)
    issued = _new_token() if token else None

    def work(session: Session) -> None:
        ensure_annotators(session.connection(), [name])
        row = session.get(Annotator, name)
        assert row is not None  # ensured just above, in the same transaction
        row.role, row.kind = role, kind
        if reinstate:
            row.status = "active"
        if issued is not None:
            row.token_hash = token_digest(issued)

    project.write(work)
    found = member(project, name)
    assert found is not None
    return found, issued


def _require(session: Session, name: str) -> Annotator:
    row = session.get(Annotator, name)
    if row is None:
        raise UsageError(f"There is no annotator {quote(name)} in this project. "
                         "'ragjudge annotators' lists them. Nothing was changed.")
    return row


def set_role(project: Project, name: str, role: str, *, access: Access) -> Member:
    access.require_lead("change the roster")
    _check_choice("the role", role, ROLES)

    def work(session: Session) -> None:
        _require(session, name).role = role

    project.write(work)
    found = member(project, name)
    assert found is not None
    return found


def retire(project: Project, name: str, *, access: Access) -> Member:
    """A retired annotator's labels stay (they count as before); the name cannot label, and its
    token no longer logs in."""
    access.require_lead("change the roster")
    def work(session: Session) -> None:
        row = _require(session, name)
        row.status = "retired"
        row.token_hash = None

    project.write(work)
    found = member(project, name)
    assert found is not None
    return found


def issue_token(project: Project, name: str, *, access: Access) -> str:
    """A new login token for ``name``; the old one stops working at once."""
    access.require_lead("change the roster")
    issued = _new_token()

    def work(session: Session) -> None:
        row = _require(session, name)
        if row.status != "active":
            raise UsageError(f"The annotator {quote(name)} is retired: reinstate them with "
                             "'ragjudge annotators add' first. Nothing was changed.")
        row.token_hash = token_digest(issued)

    project.write(work)
    return issued


def _annotator_columns() -> list[tuple[Any, Any]]:
    """Every (table, column) holding an annotator name, found from the schema's foreign keys,
    plus who made an adjudication."""
    found: list[tuple[Any, Any]] = []
    for table in Base.metadata.sorted_tables:
        for column in table.columns:
            keys: set[ForeignKey] = set(column.foreign_keys)
            if any(k.target_fullname == "annotators.name" for k in keys):
                found.append((table, column))
    found.append((Adjudication.__table__, Adjudication.__table__.c.by))
    return found


def rename(project: Project, old: str, new: str, *, access: Access) -> Member:
    """Rename an annotator everywhere their name is recorded (labels, marks, facets, nuggets,
    answer judgments, assignments, adjudications), in one transaction."""
    access.require_lead("change the roster")
    new = check_annotator(new)
    if new == old:
        raise UsageError("The new name is the old one. Nothing was changed.")

    def work(session: Session) -> None:
        row = _require(session, old)
        if session.get(Annotator, new) is not None:
            raise UsageError(f"There is already an annotator {quote(new)}; renaming {quote(old)} to it would "
                             "merge two people's labels. Nothing was changed.")
        session.add(Annotator(name=new, created_at=row.created_at or utcnow(),
                              seen_guidelines=row.seen_guidelines, role=row.role, kind=row.kind,
                              status=row.status, reference=row.reference, complete=row.complete,
                              token_hash=None))
        hashed = row.token_hash
        row.token_hash = None
        session.flush()
        for table, column in _annotator_columns():
            session.execute(update(table).where(column == old).values({column.name: new}))
        session.delete(row)
        session.flush()
        session.get(Annotator, new).token_hash = hashed  # type: ignore[union-attr]

    project.write(work)
    found = member(project, new)
    assert found is not None
    return found


def set_reference(project: Project, name: str, *, complete: bool, access: Access) -> None:
    """Make ``name`` the project's reference (a collection's official qrels)."""
    access.require_lead("change the roster")
    def work(session: Session) -> None:
        mark_reference(session.connection(), [name], complete=complete)

    project.write(work)


def mark_reference(connection: Connection, names: Iterable[str], *, complete: bool) -> None:
    """Mark ``names`` as reference annotators (``complete``: an unlisted pair of their queries
    is not relevant), in the caller's transaction -- an import marks the annotators of its
    qrels in the transaction that writes them."""
    names = sorted(set(names))
    ensure_annotators(connection, names)
    connection.execute(update(Annotator).where(Annotator.name.in_(names))
                       .values(reference=True, complete=complete))
