"""``assign --sample``: the sample drawn from the pool, kept, assigned; its refusals."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from projectkit import rights
from samplingkit import (
    DEPTH,
    QUERIES,
    dense_chunk,
    drawn_pairs,
    make_project,
    pool_by_hand,
    sample_rows,
)

from ragjudge.cli import main
from ragjudge.metrics.sampled import draw_sample
from ragjudge.services.labels import assignment, sampling
from ragjudge.services.project.database import Project


def _assigned(project) -> set[tuple[str, str]]:
    from sqlalchemy import select

    from ragjudge.store.schema import Assignment

    with project.connect() as connection:
        return {tuple(r) for r in connection.execute(
            select(Assignment.query_id, Assignment.chunk_id).distinct())}


@pytest.mark.parametrize("strategy", ["uniform", "stratified"])
def test_the_stored_sample_is_draw_sample_of_the_pool(sampled_db, strategy):
    with Project.open(sampled_db) as project:
        plan = assignment.assign(project, ["ann", "bob"], depth=DEPTH, seed=5, sample=8,
                                 strategy=strategy, access=rights(project, "lea"))
        stored = sampling.current_sample(project)
        q, c, ranks = pool_by_hand(project)
        assigned = _assigned(project)
    expected = draw_sample(q, c, ranks, size=8, strategy=strategy, seed=5)
    # every pooled pair, its stratum, inclusion probability (exactly) and whether drawn
    assert sample_rows(stored.pool) == sample_rows(expected)
    assert sorted(zip(q, c, ranks)) == sorted(zip(
        *[list(x) for x in zip(*sample_rows(stored.pool))][:2], stored.ranks.tolist()))
    assert plan.sample.id == stored.id == 1
    assert (stored.strategy, stored.size, stored.seed, stored.depth) == (strategy, 8, 5, DEPTH)
    # 8 pairs of each query's pool drawn, and only the drawn pairs assigned
    drawn = drawn_pairs(stored)
    assert len(drawn) == 8 * QUERIES
    assert assigned == set(drawn)
    assert {q for q, _ in drawn} == {f"q{i}" for i in range(1, QUERIES + 1)}
    if strategy == "stratified":  # bands 1-10, 11-30, 31-40 at rates falling down the ranks
        assert [b.ranks for b in stored.strata()] == ["1-10", "11-30", "31-40"]
        rates = [b.drawn / b.pooled for b in stored.strata()]
        assert rates == sorted(rates, reverse=True) and rates[0] > rates[-1]
    else:
        assert [(b.ranks, b.drawn) for b in stored.strata()] == [("1-40", 8 * QUERIES)]
        assert np.allclose(stored.pool.inclusion, 8 / np.bincount(
            np.unique(stored.pool.query_ids, return_inverse=True)[1])[
            np.unique(stored.pool.query_ids, return_inverse=True)[1]])


@pytest.mark.slow
def test_the_same_seed_draws_the_same_sample_in_another_project(sampled_db, tmp_path):
    other = make_project(str(tmp_path / "other.db"))
    found = []
    for db, seed in ((sampled_db, 3), (other, 3), (other, 4)):
        with Project.open(db) as project:
            assignment.assign(project, ["ann"], depth=DEPTH, seed=seed, sample=6,
                              strategy="stratified", access=rights(project, "lea"))
            found.append(sample_rows(sampling.current_sample(project).pool))
    assert found[0] == found[1]
    assert [r[4] for r in found[1]] != [r[4] for r in found[2]]  # another seed, other pairs


def test_a_new_sample_is_current_and_the_old_one_stays_as_drawn(sampled_db):
    with Project.open(sampled_db) as project:
        assignment.assign(project, ["ann", "bob"], depth=DEPTH, seed=1, sample=5, access=rights(project, "lea"))
        first = sample_rows(sampling.current_sample(project).pool)
        assigned_first = _assigned(project)
        plan = assignment.assign(project, ["ann", "bob"], depth=20, seed=2, sample=7,
                                 strategy="stratified", access=rights(project, "lea"))
        assert sampling.sample_numbers(project) == [1, 2]
        assert sampling.current_sample(project).id == plan.sample.id == 2
        assert sampling.current_sample(project).depth == 20
        second = drawn_pairs(sampling.current_sample(project))
        assert _assigned(project) == assigned_first | set(second)  # the old assignment kept
    with Project.open(sampled_db) as project:  # read afresh from the database
        assert sample_rows(sampling.read_sample(project, 1).pool) == first
        assert sampling.read_sample(project, 3) is None


@pytest.mark.slow
def test_the_command_says_what_was_drawn_per_band_and_how_to_score_it(sampled_db, capsys):
    code = main(["--db", sampled_db, "assign", "--annotators", "ann,bob", "--depth", "40",
                 "--sample", "10", "--strategy", "stratified", "--by", "lea"])
    out = capsys.readouterr().out
    assert code == 0
    with Project.open(sampled_db) as project:
        stored = sampling.current_sample(project)
    lines = [line for line in out.splitlines() if "│" in line]
    for band in stored.strata():
        row = next(line for line in lines if line.split("│")[1].strip() == band.ranks)
        assert [cell.strip() for cell in row.split("│")[2:4]] == [f"{band.pooled:,}",
                                                                  f"{band.drawn:,}"]
    assert f"{10 * QUERIES} of {len(stored.pool)} pooled pairs drawn over {QUERIES} queries" in out
    assert "sample 1: 10 pairs per query drawn by rank band (stratified)" in out
    assert "\n  ragjudge eval -m infAP,statAP,xinfAP,infNDCG,infP@10\n" in out
    code = main(["--db", sampled_db, "assign", "--annotators", "ann,bob", "--depth", "40",
                 "--sample", "4", "--seed", "9", "--by", "lea", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["sample"]["id"] == 2 and data["sample"]["strategy"] == "uniform"
    assert data["sample"]["drawn"] == 4 * QUERIES and data["sample"]["seed"] == 9
    assert data["sample"]["strata"] == [{"stratum": 0, "ranks": "1-40",
                                         "pooled": data["sample"]["pooled"],
                                         "drawn": 4 * QUERIES}]


def _count(db: str, table: str) -> int:
    return sqlite3.connect(db).execute(f"SELECT count(*) FROM {table}").fetchone()[0]


@pytest.mark.parametrize(("args", "says"), [
    (["--sample", "5", "--by", "ann"], "Only a lead may assign pairs"),
    (["--sample", "5", "--strategy", "systematic", "--by", "lea"],
     "--strategy 'systematic': use uniform (every pair of a query's pool equally likely) or "
     "stratified"),
    (["--sample", "0", "--by", "lea"], "--sample 0: the pairs drawn per query is a whole number from 1"),
    (["--sample", "-3", "--by", "lea"], "--sample -3: the pairs drawn per query is a whole number"),
    (["--strategy", "stratified", "--by", "lea"],
     "--strategy 'stratified' says how --sample draws: give the pairs per query too"),
])
def test_refusals_change_nothing(sampled_db, capsys, args, says):
    before = Path(sampled_db).read_bytes()
    code = main(["--db", sampled_db, "assign", "--annotators", "ann,bob", *args])
    err = capsys.readouterr().err
    assert code == 2 and says in err and "Traceback" not in err
    assert Path(sampled_db).read_bytes() == before
    assert _count(sampled_db, "pool_samples") == _count(sampled_db, "assignments") == 0


@pytest.mark.slow
def test_a_service_call_is_refused_alike(sampled_db):
    from ragjudge.errors import UsageError

    with Project.open(sampled_db) as project:
        with pytest.raises(UsageError, match="--sample 0"):
            assignment.assign(project, ["ann"], sample=0, access=rights(project, "lea"))
        with pytest.raises(UsageError, match="--strategy 'bands'"):
            assignment.assign(project, ["ann"], sample=3, strategy="bands", access=rights(project, "lea"))
        with pytest.raises(UsageError, match="Only a lead"):
            assignment.assign(project, ["ann"], sample=3, access=rights(project, "ann"))
    assert _count(sampled_db, "pool_samples") == 0


def test_a_project_without_runs_has_no_pool_to_sample(tmp_path, capsys):
    from ragjudge.models import Scale

    db = str(tmp_path / "empty.db")
    Project.init(db, scale=Scale.parse("0-3"), name="no runs").close()
    code = main(["--db", db, "assign", "--annotators", "ann", "--sample", "5"])
    err = capsys.readouterr().err
    assert code == 2 and "the pool is empty: import a run first" in err
    assert _count(db, "pool_samples") == 0


def test_a_sample_of_chosen_runs_pools_those_runs_only(sampled_db):
    with Project.open(sampled_db) as project:
        assignment.assign(project, ["ann"], depth=10, runs=["dense"], sample=3, access=rights(project, "lea"))
        stored = sampling.current_sample(project)
    dense = {(f"q{i}", dense_chunk(i, rank)) for i in range(1, QUERIES + 1) for rank in range(1, 11)}
    assert {(r[0], r[1]) for r in sample_rows(stored.pool)} == dense
    assert stored.runs == ("dense",) and stored.ranks.max() == 10
    assert len(drawn_pairs(stored)) == 3 * QUERIES
