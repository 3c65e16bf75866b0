"""What one identity may see and change in one project: :class:`Access`, the object every
service that reveals or changes something takes (``access=``) and asks.

It is made by :func:`ragjudge.services.access.visibility.access_for`, which holds the rule; this
module holds only the answers, so that the roster (which it does not import) can take one too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ragjudge.errors import UsageError
from ragjudge.services.access.identity import Identity
from ragjudge.safetext import quote

if TYPE_CHECKING:
    from ragjudge.services.project.database import Project


@dataclass(frozen=True)
class Access:
    """What :attr:`identity` may see and change in :attr:`project`, decided when made."""

    project: Project = field(repr=False, compare=False)
    identity: Identity
    lead: bool
    """may do a lead's work: adjudicate, assign, review, change the roster and settings"""
    sees_all: bool
    """may see every annotator's grade, the gold grade and a run's rank of every pair"""
    blind: bool
    leads: tuple[str, ...] = ()
    """the project's active leads (named in refusals)"""

    @property
    def name(self) -> str | None:
        return self.identity.name

    # -- refusals --------------------------------------------------------------------------

    def require_lead(self, doing: str) -> None:
        """Refuse ``doing`` (e.g. "adjudicate") unless this identity may lead."""
        if not self.lead:
            raise UsageError(self.refusal(doing, "in this project", "Nothing was changed."))

    def require_sees_all(self, doing: str) -> None:
        """Refuse ``doing`` (e.g. "list the disputed pairs") unless this identity may see every
        annotator's grades."""
        if not self.sees_all:
            raise UsageError(self.refusal(
                doing, "in this blind project",
                "Annotators see others' grades of a pair once they have judged it themselves. "
                "Ask a lead (on the command line: --by a lead's name), or have a lead turn blind "
                "judging off ('ragjudge annotators blind off')."))

    def refusal(self, doing: str, where: str, then: str) -> str:
        """One paragraph: who may ``doing``, who is asking, and ``then`` (what to do)."""
        if self.name is None:
            who = ("who is asking is not known (no --by, no $RAGJUDGE_USER and no login name), "
                   "and an unknown user has the least rights")
        else:
            who = f"{quote(self.name)} is not one"
        leads = ", ".join(self.leads) or "none yet"
        return f"Only a lead may {doing} {where}, and {who} (leads: {leads}). {then}"

    # -- what may be read ------------------------------------------------------------------

    def may_read_labels_of(self, annotator: str | None) -> bool:
        """Whether this identity may read ``annotator``'s labels pair by pair (None: everyone's)."""
        return self.sees_all or (annotator is not None and annotator == self.name)

    def may_read_marks_of(self, annotator: str | None) -> bool:
        """Whether this identity may read ``annotator``'s flags and comments (None: everyone's):
        their own; everyone's for a lead, whose work is to answer them."""
        return self.lead or (annotator is not None and annotator == self.name)

    def readable_annotator(self, annotator: str | None, what: str) -> str | None:
        """Whose rows a listing of per-annotator ``what`` (e.g. "labels") may hold: ``annotator``
        (None: everyone's) for who sees every grade, else this identity's own. Naming another
        annotator, or being unknown, is refused."""
        if self.sees_all:
            return annotator
        if annotator is not None and annotator != self.name:
            self.require_sees_all(f"read {annotator}'s {what}")
        if self.name is None:
            self.require_sees_all(f"read {what}")
        return self.name

    def require_readable_rule(self, rule: str | None) -> None:
        """Refuse a gold rule of one other annotator's grades alone (``annotator:NAME``) unless
        this identity may read that annotator's labels: a query's value under it would show
        their grades, pair by pair on a one-pair query."""
        if rule is None or not rule.startswith("annotator:"):
            return
        name = rule.split(":", 1)[1]
        if not self.may_read_labels_of(name):
            self.require_sees_all(f"score under {name}'s grades alone (--rule {rule})")

    def own_pairs(self, query_id: str | None = None) -> set[tuple[str, str]]:
        """The pairs this identity has a current grade for (of one query, or all). Plain SQL,
        so that it reads a full project and the command line's lean one alike."""
        if self.name is None:
            return set()
        from ragjudge.services.events.labels import RECHECK
        from ragjudge.store.sqltext import fetch

        where = " AND query_id = :query" if query_id is not None else ""
        sql = ("SELECT l.query_id, l.chunk_id FROM labels AS l JOIN "
               "(SELECT max(id) AS id FROM labels WHERE annotator = :name"
               f"{where} AND (source IS NULL OR source != :recheck) "
               "GROUP BY query_id, chunk_id) AS n ON l.id = n.id WHERE l.grade IS NOT NULL")
        params = {"name": self.name, "recheck": RECHECK, "query": query_id}
        if query_id is None:
            del params["query"]
        with self.project.connect() as connection:
            return {(q, c) for q, c in fetch(connection, sql, params)}

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

    def hidden_queries(self, gold: Mapping[str, Iterable[str]]) -> frozenset[str]:
        """The queries whose own values (a query's row of a per-query table, the value
        ``explain`` works out, a query's line of the evaluation screen) this identity may not
        see: those with a pair in the ``gold`` (``{query: its judged chunks}``, e.g.
        ``Qrels.to_dict()``) it has not graded itself. A query's value is made of its pairs'
        gold grades, and on a small cutoff it is one of them (P@1 is the top chunk's
        relevance); means over many queries stay everyone's. Empty for who sees every grade."""
        if self.sees_all:
            return frozenset()
        own = self.own_pairs()
        return frozenset(q for q, chunks in gold.items()
                         if any((q, c) not in own for c in chunks))

    def may_see_pair(self, query_id: str, chunk_id: str) -> bool:
        visible = self.grade_filter(query_id)
        return visible is None or visible(chunk_id)
