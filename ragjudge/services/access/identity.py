"""Who is asking: the one place an identity is resolved, from a login token, a name given with
``--by``, or the operating system's login name.

An :class:`Identity` says who and how we know: ``token`` (a personal login token checked on the
server: ``ragjudge serve``), ``named`` (``--by NAME``, or a name typed in the app), ``login``
(the operating system's login name, for a terminal command) or ``unknown``. Rights follow from
the name (:mod:`ragjudge.services.access.visibility`); an unknown identity has the least rights,
never a lead's.

A token identity stays valid only while its token does: :func:`token_guard` is checked inside
every write transaction of a project opened under it (:meth:`Project.guarded`), so a token
revoked (a new one issued) or an annotator retired records nothing more, not even the key
pressed a moment after.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING


from ragjudge.errors import UsageError
from ragjudge.services.events.names import check_annotator

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from ragjudge.services.project.database import Project

USER_ENV = "RAGJUDGE_USER"
"""Who a command runs as when no ``--by`` is given (before the login name): for scripts and
shared accounts."""

HOWS = ("token", "named", "login", "unknown")


@dataclass(frozen=True)
class Identity:
    """Who is asking. ``name`` is None only for :data:`UNKNOWN`."""

    name: str | None
    how: str = "named"
    token_digest: str | None = None
    """For a token identity: the SHA-256 of the token it logged in with (never the token)."""

    @property
    def known(self) -> bool:
        return self.name is not None

    def __str__(self) -> str:
        return self.name if self.name is not None else "an unnamed user"


UNKNOWN = Identity(None, "unknown")


def login_name() -> str | None:
    """The operating system's login name, or None when it has none (some containers)."""
    try:
        name = getpass.getuser()
    except Exception:  # noqa: BLE001 - getpass raises several kinds when there is no user
        return None
    return name.strip() or None


def resolve(by: str | None = None, *, trust_login: bool = True) -> Identity:
    """The identity of a command or app: ``by`` (``--by NAME``), else ``$RAGJUDGE_USER``, else
    (with ``trust_login``) the login name, else :data:`UNKNOWN`."""
    if by is not None and by.strip():
        return Identity(check_annotator(by), "named")
    env = os.environ.get(USER_ENV, "").strip()
    if env:
        try:
            return Identity(check_annotator(env), "named")
        except UsageError as exc:
            raise UsageError(f"${USER_ENV}: {exc} Set it to your annotator name, or unset it.") from None
    if trust_login:
        name = login_name()
        if name is not None:
            return Identity(check_annotator(name), "login")
    return UNKNOWN


def as_identity(who: Identity | str | None) -> Identity:
    """``who`` as an :class:`Identity` (a bare name is ``named``; None is :data:`UNKNOWN`)."""
    if isinstance(who, Identity):
        return who
    if who is None or not str(who).strip():
        return UNKNOWN
    return Identity(check_annotator(who), "named")


def token_digest(token: str) -> str:
    import hashlib

    return hashlib.sha256(token.strip().encode("utf-8", "surrogatepass")).hexdigest()


def from_token(project: Project, token: str) -> Identity | None:
    """The identity a personal login token opens, or None (unknown token, retired annotator)."""
    import secrets

    if not token or not token.strip():
        return None
    digest = token_digest(token)
    with project.read() as session:
        from sqlalchemy import select

        from ragjudge.store.schema import Annotator

        row = session.scalars(select(Annotator).where(Annotator.token_hash == digest)).first()
        if row is None or row.status != "active" or not secrets.compare_digest(row.token_hash or "", digest):
            return None
        return Identity(row.name, "token", digest)


class TokenRevoked(UsageError):
    """The token a session logged in with no longer opens the project."""


def still_valid(session: Session, identity: Identity) -> bool:
    """Whether a token identity's token still opens the project (checked in ``session``)."""
    import secrets

    if identity.how != "token":
        return True
    from sqlalchemy import select

    from ragjudge.store.schema import Annotator

    row = session.execute(select(Annotator.token_hash, Annotator.status)
                          .where(Annotator.name == identity.name)).first()
    return (row is not None and row.status == "active" and row.token_hash is not None
            and secrets.compare_digest(row.token_hash, identity.token_digest or ""))


def token_guard(identity: Identity) -> Callable[[Session], None]:
    """A check for every write transaction of a session under ``identity``: a revoked token or
    a retired annotator refuses the write (:class:`TokenRevoked`), inside the transaction, so
    nothing is recorded after the revocation."""
    def guard(session: Session) -> None:
        if not still_valid(session, identity):
            raise TokenRevoked(
                f"The login token of {identity.name} no longer opens this project (a new one "
                "was issued, or the annotator was retired): nothing was recorded. Log in again "
                "with the new token.")
    return guard
