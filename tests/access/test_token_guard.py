"""A project opened under a login token records nothing once the token is revoked or its
annotator retired: the check runs inside each write transaction, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from projectkit import make_small_project, rights

from ragjudge.services.access import roster
from ragjudge.services.access.identity import TokenRevoked, from_token, token_guard
from ragjudge.services.labels.events import flag_pair, record_label
from ragjudge.store.schema import Label, PairMark


def _count(project, table) -> int:
    from sqlalchemy import func, select

    with project.read() as session:
        return session.scalar(select(func.count()).select_from(table))


@pytest.mark.parametrize("revoke", ["new token", "retired"])
def test_a_revoked_token_writes_nothing(any_db, revoke):
    with make_small_project(any_db) as project:
        _, token = roster.add(project, "finn", token=True, access=rights(project))
        tab = project.guarded(token_guard(from_token(project, token)))
        record_label(tab, annotator="finn", query_id="q1", chunk_id="c05", grade=2)
        if revoke == "new token":
            roster.issue_token(project, "finn", access=rights(project))
        else:
            roster.retire(project, "finn", access=rights(project))
        with pytest.raises(TokenRevoked, match="no longer opens this project .*nothing was recorded"):
            record_label(tab, annotator="finn", query_id="q1", chunk_id="c06", grade=1)
        with pytest.raises(TokenRevoked):
            flag_pair(tab, annotator="finn", query_id="q1", chunk_id="c06", note="x")
        assert _count(project, Label) == 1 and _count(project, PairMark) == 0
        tab.close()  # the guarded twin leaves the project open for its owner
        assert _count(project, Label) == 1
