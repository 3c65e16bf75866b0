"""The pool's size and how much of it is judged (``status``, the home screen), and each
annotator's assignment progress, equal what one SQL statement over the newest label events says, on random projects with every kind
of label event: grades changed, undone (no grade), blind re-checks, pairs outside the pool,
a complete reference annotator, an LLM annotator, ids with non-ASCII text. On SQLite, and on
PostgreSQL when RAGJUDGE_TEST_PG names a server."""

from __future__ import annotations

import random

import pytest
from projectkit import rights
from sqlalchemy import and_, exists, func, or_, select

from ragjudge.errors import UsageError
from ragjudge.services.gold.pool import pool_select, pool_size_and_judged
from ragjudge.services.project.database import Project
from ragjudge.services.events.labels import newest_label_ids, not_recheck
from ragjudge.store.schema import Annotator, Chunk, Label, Query, Run, RunEntry

NAMES = ("ana", "bo", "ref", "llm:m")


def reference(project: Project, depth: int, runs: list[str] | None) -> dict:
    """The same counts from SQL alone (slow on large projects: a scan of the label events
    per pool pair), as the pool's count was once computed."""
    pool = pool_select(depth, runs).subquery()
    newest = newest_label_ids()
    current = (select(Label.query_id, Label.chunk_id, Label.annotator)
               .join(newest, Label.id == newest.c.id).where(Label.grade.is_not(None)).subquery())
    complete = select(Annotator.name).where(Annotator.reference.is_(True), Annotator.complete.is_(True))
    closed = select(current.c.query_id).where(current.c.annotator.in_(complete)).distinct()
    graded = exists().where(and_(current.c.query_id == pool.c.query_id,
                                 current.c.chunk_id == pool.c.chunk_id))
    # a complete reference's pair whose newest event (not a re-check) is a skip without a grade
    # is in its pool and not judged: it stays unjudged unless someone else graded it
    own = (select(func.max(Label.id).label("id")).where(not_recheck())
           .group_by(Label.annotator, Label.query_id, Label.chunk_id).subquery())
    skips = (select(Label.annotator, Label.query_id, Label.chunk_id).join(own, Label.id == own.c.id)
             .where(Label.grade.is_(None), Label.skipped.is_(True)).subquery())

    def skipped_by(names):
        return exists().where(and_(skips.c.annotator.in_(names), skips.c.query_id == pool.c.query_id,
                                   skips.c.chunk_id == pool.c.chunk_id))

    with project.connect() as connection:
        pairs = connection.scalar(select(func.count()).select_from(pool))
        judged = connection.scalar(
            select(func.count()).select_from(pool).where(or_(graded, and_(
                pool.c.query_id.in_(closed), ~skipped_by(complete)))))
        mine = dict(connection.execute(
            select(current.c.annotator, func.count())
            .join(pool, and_(pool.c.query_id == current.c.query_id, pool.c.chunk_id == current.c.chunk_id))
            .group_by(current.c.annotator)).all())
        for name in connection.execute(complete).scalars():
            its = select(current.c.query_id).where(current.c.annotator == name).distinct()
            mine[name] = connection.scalar(
                select(func.count()).select_from(pool).where(pool.c.query_id.in_(its),
                                                             ~skipped_by([name]))) or 0
    return {"depth": depth, "pairs": int(pairs or 0), "judged": int(judged or 0),
            "by_annotator": {str(k): int(v) for k, v in sorted(mine.items()) if v}}


def random_project(db: str, seed: int) -> Project:
    rng = random.Random(seed)
    project = Project.init(db, name=f"pool {seed}")
    queries = [f"q{i}" for i in range(rng.randint(1, 9))] + ["qé"]
    chunks = [f"c{j}" for j in range(rng.randint(3, 30))] + ["cü", "c z"]

    def fill(session) -> None:
        session.add_all(Query(id=q, text=q) for q in queries)
        session.add_all(Chunk(id=c, text=c) for c in chunks)
        session.add_all(Annotator(name=n, kind="llm" if n.startswith("llm") else "human",
                                  reference=n == "ref" and seed % 2 == 0,
                                  complete=n == "ref" and seed % 4 == 0) for n in NAMES)
        for run in ("a", "b", "c"):
            session.add(Run(name=run))
            session.flush()
            for q in queries:
                for rank, c in enumerate(rng.sample(chunks, rng.randint(0, len(chunks))), 1):
                    session.add(RunEntry(run=run, query_id=q, chunk_id=c, rank=rank, score=-rank))
        for _ in range(rng.randint(0, 120)):
            grade = rng.choice([None, 0, 1, 2, 3])
            session.add(Label(query_id=rng.choice(queries), chunk_id=rng.choice(chunks),
                              annotator=rng.choice(NAMES), grade=grade, skipped=grade is None,
                              source=rng.choice([None, None, None, "recheck", "tui"])))

    project.write(fill)
    return project


@pytest.mark.parametrize("seed", range(16))
def test_the_pool_count_equals_the_sql_statement(any_db, seed):
    rng = random.Random(seed)
    with random_project(any_db, seed) as project:
        for depth, runs in ((rng.randint(1, 12), None), (rng.randint(1, 40), ["b"]), (5, ["a", "c"])):
            assert pool_size_and_judged(project, depth, runs) == reference(project, depth, runs)


def test_an_empty_project_has_an_empty_pool(tmp_path):
    with Project.init(str(tmp_path / "e.db"), name="e") as project:
        assert pool_size_and_judged(project) == {"depth": 10, "pairs": 0, "judged": 0, "by_annotator": {}}


def progress_reference(project: Project) -> dict:
    """Assignment progress from the statement it once was (the newest event per annotator and
    pair as a grouped subquery; slow on large projects: a scan per assignment)."""
    from sqlalchemy import case

    from ragjudge.services.events.labels import RECHECK
    from ragjudge.store.schema import Assignment

    newest = (select(func.max(Label.id).label("id"))
              .where(or_(Label.source.is_(None), Label.source != RECHECK))
              .group_by(Label.annotator, Label.query_id, Label.chunk_id).subquery())
    done = (select(Label.annotator, Label.query_id, Label.chunk_id).join(newest, Label.id == newest.c.id)
            .where(or_(Label.grade.is_not(None), Label.skipped.is_(True))).subquery())
    is_done = exists().where(and_(done.c.annotator == Assignment.annotator,
                                  done.c.query_id == Assignment.query_id,
                                  done.c.chunk_id == Assignment.chunk_id))
    stmt = (select(Assignment.annotator, func.count(),
                   func.sum(case((Assignment.overlap.is_(True), 1), else_=0)),
                   func.sum(case((is_done, 1), else_=0)))
            .group_by(Assignment.annotator).order_by(Assignment.annotator))
    with project.connect() as connection:
        rows = connection.execute(stmt).all()
    return {name: {"assigned": int(n), "overlap": int(o or 0), "done": int(d or 0)} for name, n, o, d in rows}


@pytest.mark.parametrize("seed", range(8))
def test_assignment_progress_equals_the_grouped_statement(any_db, seed):
    from ragjudge.services.labels.assignment import assign, assignment_progress

    with random_project(any_db, seed) as project:
        try:
            assign(project, ["ana", "bo", "llm:m"], depth=3 + seed, overlap=0.5, seed=seed, access=rights(project))
        except UsageError:  # an empty pool: nothing to compare
            assert pool_size_and_judged(project, 3 + seed)["pairs"] == 0
            return
        # on ana's assigned pairs, every kind of history: graded then undone (not done), skipped
        # (done), graded then a blind re-check without a grade (done), undone then graded (done)
        from ragjudge.services.labels.assignment import assigned_pairs

        histories = ([2, None], ["skip"], [1, ("recheck", None)], [None, 3])
        pairs = sorted(assigned_pairs(project, "ana") or ())

        def events(session) -> None:
            for (q, c), history in zip(pairs, histories * len(pairs)):
                for step in history:
                    source, grade = step if isinstance(step, tuple) else (None, step)
                    session.add(Label(query_id=q, chunk_id=c, annotator="ana",
                                      grade=None if grade == "skip" else grade,
                                      skipped=grade == "skip", source=source))
                    session.flush()

        project.write(events)
        progress = assignment_progress(project)
        assert progress == progress_reference(project)
        if len(pairs) >= 4:
            assert 0 < progress["ana"]["done"] < progress["ana"]["assigned"]
