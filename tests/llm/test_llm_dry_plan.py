"""``llm-judge --dry-run`` counts the pool instead of listing it: its first pair and count are
those of the full plan, whatever the model has graded or failed to answer, and the headline
reads as a count ("1 of 5 pairs"), the ids quoted apart."""

from __future__ import annotations

import subprocess
import sys

import pytest
from projectkit import rights

from ragjudge.services.llm import client as svc_client
from ragjudge.services.llm import judge as svc_judge
from ragjudge.services.labels.events import record_label
from ragjudge.services.project.database import Project

NAME = "llm:fake-1"

OPTIONS = [
    {},
    {"depth": 3},
    {"depth": 1, "retry_unparsed": True},
    {"queries": ["q2", "q4"]},
    {"category": "policy"},
    {"runs": ["bm25"], "limit": 7},
    {"limit": 10_000},
    {"retry_unparsed": True},
]


@pytest.fixture
def judged(project, fake_llm):
    """The model has answered some pairs (some of its answers name no grade), and a person has
    graded others; the model's own pairs graded or unparsed leave the pool it has still to do."""
    pairs = svc_judge.plan_pairs(project, NAME)[:25]
    settings = svc_client.ClientSettings(base_url=fake_llm.base_url, model="fake-1",
                                         api_key=fake_llm.key, concurrency=2, timeout=5)
    svc_judge.judge(project, pairs, settings, annotator=NAME, access=rights(project))
    record_label(project, annotator="ana", query_id="q1", chunk_id=pairs[0][1], grade=2)
    return project


def test_some_answers_were_unparsed(judged):
    assert svc_judge.unparsed_pairs(judged, NAME)  # the fixture holds the case counted apart


@pytest.mark.slow
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(map(str, o.items())) or "default")
def test_the_dry_plan_is_the_plans_first_pair_and_length(judged, options):
    planned = svc_judge.plan_pairs(judged, NAME, **options)
    assert svc_judge.dry_plan(judged, NAME, **options) == (planned[0] if planned else None, len(planned))


def test_a_pool_with_nothing_left(project):
    queue = svc_judge.plan_pairs(project, NAME, queries=["q1"])
    for query_id, chunk_id in queue:
        record_label(project, annotator=NAME, query_id=query_id, chunk_id=chunk_id, grade=1)
    assert svc_judge.dry_plan(project, NAME, queries=["q1"]) == (None, 0)


def test_the_headline_counts_and_quotes_the_ids(project_db, fake_llm):
    with Project.open(project_db) as project:
        first = svc_judge.plan_pairs(project, NAME, queries=["q1", "q2"])
    run = subprocess.run([sys.executable, "-m", "ragjudge", "--db", project_db, "llm-judge",
                          "--base-url", fake_llm.base_url, "--model", "fake-1", "--queries", "q1,q2",
                          "--dry-run"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    head = run.stdout.splitlines()[0]
    assert head == (f"The first prompt (1 of {len(first)} pairs: query '{first[0][0]}', "
                    f"chunk '{first[0][1]}'):")
    assert run.stdout.splitlines()[-1] == f"{len(first)} pairs would be sent as {NAME}; nothing was sent."
    assert fake_llm.requests == []
