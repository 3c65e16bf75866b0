"""The LLM judge against a loopback server: every grade right and none twice through 429s,
5xx, timeouts, malformed JSON and unparseable answers; resuming; stopping on a refused key or
an unreachable server with nothing written; the key never anywhere."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from projectkit import rights
from sqlalchemy import select

from llmserver import expected_grade, unparseable
from ragjudge.services.llm import client as svc_client
from ragjudge.services.llm import judge as svc_judge
from ragjudge.services.llm import prompt as svc_prompt
from ragjudge.services.project.database import Project
from ragjudge.store.schema import Annotator, Label, LlmCall

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MODEL = "fake-1"
NAME = "llm:fake-1"


def settings(server, **kw) -> svc_client.ClientSettings:
    """The client's settings for the loopback server. The deadline is generous: a test that
    sends no timeout fault must not see one because a busy machine held an answer (at 0.5 s
    one did, under CI's load, and the pair ran out of tries); the tests of timeouts set theirs."""
    base = dict(base_url=server.base_url, model=MODEL, api_key=server.key, concurrency=4,
                timeout=5.0, retries=4, backoff=0.001)
    base.update(kw)
    return svc_client.ClientSettings(**base)


def run_judge(project, server, pairs=None, **kw) -> svc_judge.Summary:
    if pairs is None:
        pairs = svc_judge.plan_pairs(project, NAME)
    return svc_judge.judge(project, pairs, settings(server, **kw), annotator=NAME, access=rights(project))


def prompt_of(project, query_id, chunk_id) -> str:
    return svc_prompt.pair_prompt(project, svc_prompt.DEFAULT_TEMPLATE, svc_prompt.prompt_values(project), query_id, chunk_id)


def labels_of(project, name=NAME) -> list[tuple[str, str, int | None]]:
    with project.read() as session:
        return [tuple(r) for r in session.execute(
            select(Label.query_id, Label.chunk_id, Label.grade).where(Label.annotator == name))]


def calls_of(project) -> list:
    with project.read() as session:
        return list(session.scalars(select(LlmCall).order_by(LlmCall.id)))


def assert_right_and_once(project, strict: bool = True) -> None:
    """Every LLM label is the grade the server gave that pair's prompt, and no pair twice
    (``strict``: the server answers some prompts without a grade, and those have no label)."""
    rows = labels_of(project)
    counts = Counter((q, c) for q, c, _ in rows)
    assert all(n == 1 for n in counts.values()), [k for k, n in counts.items() if n > 1]
    for q, c, grade in rows:
        prompt = prompt_of(project, q, c)
        assert not (strict and unparseable(prompt))
        assert grade == expected_grade(prompt)


def test_the_pool_graded_right_and_once_through_every_kind_of_fault(project, fake_llm):
    fake_llm.fault_every = 3  # 429, 500, timeout, malformed JSON in turn
    # a timeout fault sleeps well past the client's limit, and the limit leaves a loaded
    # machine room for the answers that are not faults (0.5 s was not: one pair ran out of tries)
    fake_llm.timeout_sleep = 4.0
    pairs = svc_judge.plan_pairs(project, NAME)
    assert len(pairs) == len(set(pairs)) > 30
    summary = run_judge(project, fake_llm, pairs, timeout=2.0, retries=8)
    assert_right_and_once(project)
    expected_unparsed = sum(unparseable(prompt_of(project, q, c)) for q, c in pairs)
    assert expected_unparsed > 0
    assert summary.unparsed == expected_unparsed
    assert summary.graded == len(pairs) - expected_unparsed
    assert summary.failed == 0 and summary.retries > 0
    calls = calls_of(project)
    assert Counter(c.outcome for c in calls) == {"graded": summary.graded, "unparsed": summary.unparsed}
    for call in calls:
        prompt = prompt_of(project, call.query_id, call.chunk_id)
        assert call.prompt_sha256 == svc_prompt.prompt_digest(prompt)
        assert call.model == MODEL and call.prompt_tokens == len(prompt.split())
        assert call.completion_tokens and call.latency_ms is not None and call.answer
        if call.outcome == "graded":
            assert call.label_id is not None and call.grade == expected_grade(prompt)
            assert "##final score" in call.answer
        else:
            assert call.grade is None and call.label_id is None
    assert summary.prompt_tokens == sum(c.prompt_tokens for c in calls)
    with project.read() as session:
        assert session.get(Annotator, NAME).kind == "llm"


def test_a_rerun_sends_only_what_is_left(project, fake_llm):
    fake_llm.unparsed = False
    total = len(svc_judge.plan_pairs(project, NAME))
    first = run_judge(project, fake_llm, svc_judge.plan_pairs(project, NAME, limit=7))
    assert first.graded == 7 and len(fake_llm.requests) == 7
    left = svc_judge.plan_pairs(project, NAME)
    assert len(left) == total - 7
    second = run_judge(project, fake_llm, left)
    assert (second.graded, second.failed) == (total - 7, 0)
    assert len(fake_llm.requests) == total  # no pair sent twice
    assert_right_and_once(project, strict=False)
    assert len(labels_of(project)) == total
    assert svc_judge.plan_pairs(project, NAME) == []


def test_unparsed_pairs_wait_for_retry_unparsed(project, fake_llm):
    run_judge(project, fake_llm)
    unparsed = svc_judge.unparsed_pairs(project, NAME)
    assert unparsed and svc_judge.plan_pairs(project, NAME) == []
    assert set(svc_judge.plan_pairs(project, NAME, retry_unparsed=True)) == unparsed


def test_a_pair_failing_past_the_retries_is_left_unjudged_and_counted(project, fake_llm):
    fake_llm.unparsed = False
    pair = svc_judge.plan_pairs(project, NAME)[0]
    fake_llm.faults = ["500", "429", "500"]
    summary = run_judge(project, fake_llm, [pair], retries=2)
    assert summary.failed == 1 and summary.graded == 0
    assert labels_of(project) == []
    (call,) = calls_of(project)
    assert call.outcome == "failed" and call.attempts == 3 and "HTTP 500" in call.error
    assert svc_judge.plan_pairs(project, NAME)[0] == pair  # still to judge: the next run retries it
    run_judge(project, fake_llm, [pair])
    assert_right_and_once(project, strict=False)


def test_retry_after_is_honoured(project, fake_llm):
    fake_llm.unparsed = False
    pair = svc_judge.plan_pairs(project, NAME)[0]
    fake_llm.faults = ["429"]
    summary = run_judge(project, fake_llm, [pair], backoff=60.0)  # would wait a minute without it
    assert summary.graded == 1 and summary.retries == 1


def test_a_grade_already_given_by_another_run_is_not_written_again(project, fake_llm):
    fake_llm.unparsed = False
    pairs = svc_judge.plan_pairs(project, NAME)[:3]
    run_judge(project, fake_llm, pairs)
    summary = run_judge(project, fake_llm, pairs)  # as if two runs had planned the same pairs
    assert summary.already == 3 and summary.graded == 0
    assert_right_and_once(project, strict=False)


def test_wrong_key_stops_at_once_with_nothing_written(project, keyed_llm):
    with pytest.raises(svc_client.StopJudging) as caught:
        run_judge(project, keyed_llm, api_key="sk-wrong-key-777")
    message = str(caught.value)
    assert "refused the API key" in message and "sk-wrong-key-777" not in message
    assert labels_of(project) == [] and calls_of(project) == []
    with project.read() as session:
        assert session.get(Annotator, NAME) is None
    assert len(keyed_llm.requests) <= 4  # the first requests in flight, then nothing more


def test_unreachable_server_stops_with_nothing_written(project):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pairs = svc_judge.plan_pairs(project, NAME)
    with pytest.raises(svc_client.StopJudging, match="cannot be reached"):
        svc_judge.judge(project, pairs, svc_client.ClientSettings(base_url=f"http://127.0.0.1:{port}/v1",
                                                     model=MODEL, timeout=2), annotator=NAME, access=rights(project))
    assert labels_of(project) == [] and calls_of(project) == []


def test_the_request_is_a_chat_completion(project, keyed_llm):
    keyed_llm.unparsed = False
    pair = svc_judge.plan_pairs(project, NAME)[0]
    run_judge(project, keyed_llm, [pair], temperature=0.3, max_tokens=77)
    (request,) = keyed_llm.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["authorization"] == "Bearer sk-test-SECRET-4242"
    body = request["body"]
    assert body["model"] == MODEL and body["temperature"] == 0.3 and body["max_tokens"] == 77
    assert body["messages"] == [{"role": "user", "content": prompt_of(project, *pair)}]


# -- the command line ------------------------------------------------------------------------


def cli(db: str, *args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    full.pop("OPENAI_API_KEY", None) if env is None or "OPENAI_API_KEY" not in env else None
    return subprocess.run([sys.executable, "-m", "ragjudge", "--db", db, *args], capture_output=True,
                          text=True, env=full, timeout=120, **kw)


def test_cli_key_never_appears_anywhere(project_db, keyed_llm, tmp_path):
    keyed_llm.faults = ["429", "500", "malformed"]
    key = keyed_llm.key
    env = {"MY_KEY": key}
    run = cli(project_db, "llm-judge", "--base-url", keyed_llm.base_url, "--model", MODEL,
              "--api-key-env", "MY_KEY", "--timeout", "1", "--concurrency", "3", env=env)
    assert run.returncode == 0, run.stderr
    assert "graded" in run.stdout and "unparsed" in run.stdout
    audit = cli(project_db, "export", "labels", "--llm-audit", env=env)
    labels = cli(project_db, "export", "labels", "--format", "csv", env=env)
    assert audit.returncode == 0 and '"outcome": "graded"' in audit.stdout
    assert "llm:fake-1" in labels.stdout
    wrong = cli(project_db, "llm-judge", "--base-url", keyed_llm.base_url, "--model", "other",
                "--api-key-env", "MY_KEY", env={"MY_KEY": key + "x"})
    assert wrong.returncode == 2
    for text in (run.stdout, run.stderr, audit.stdout, audit.stderr, labels.stdout, wrong.stdout,
                 wrong.stderr):
        assert key not in text
    for path in Path(project_db).parent.iterdir():
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path


def test_cli_wrong_key_is_one_paragraph_and_writes_nothing(project_db, keyed_llm):
    before = Path(project_db).read_bytes()
    run = cli(project_db, "llm-judge", "--base-url", keyed_llm.base_url, "--model", MODEL,
              env={"OPENAI_API_KEY": "sk-nope-1234"})
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.startswith("ragjudge: The server refused the API key (HTTP 401")
    assert run.stderr.count("\n") == 1 and "sk-nope-1234" not in run.stderr
    assert "OPENAI_API_KEY" in run.stderr
    with Project.open(project_db) as project:
        assert labels_of(project) == [] and calls_of(project) == []
        with project.read() as session:
            assert session.get(Annotator, NAME) is None
    del before


def test_cli_dry_run_sends_nothing(project_db, fake_llm):
    run = cli(project_db, "llm-judge", "--base-url", fake_llm.base_url, "--model", MODEL,
              "--queries", "q1,q2", "--dry-run")
    assert run.returncode == 0, run.stderr
    assert "##final score: N" in run.stdout and "0 = Irrelevant" in run.stdout
    with Project.open(project_db) as project:
        n = len(svc_judge.plan_pairs(project, NAME, queries=["q1", "q2"]))
        assert f"{n} pairs would be sent" in run.stdout
        assert calls_of(project) == []
    assert fake_llm.requests == []


def test_cli_prompt_file_with_an_unknown_placeholder(project_db, fake_llm, tmp_path):
    template = tmp_path / "prompt.txt"
    template.write_text("Grade {chunk} for {query} on {scale}. Also {answer}.\n", encoding="utf-8")
    run = cli(project_db, "llm-judge", "--base-url", fake_llm.base_url, "--model", MODEL,
              "--prompt", str(template))
    assert run.returncode == 2 and "prompt.txt" in run.stderr and "{answer}" in run.stderr
    assert run.stderr.count("\n") == 1 and fake_llm.requests == []


def test_cli_custom_prompt_is_sent(project_db, fake_llm, tmp_path):
    template = tmp_path / "prompt.txt"
    template.write_text('Q={query} D={description} {{"json": 1}}\n{chunk}\nAnswer with a number.',
                        encoding="utf-8")
    run = cli(project_db, "llm-judge", "--base-url", fake_llm.base_url, "--model", MODEL,
              "--prompt", str(template), "--limit", "2", "--format", "json")
    assert run.returncode == 0, run.stderr
    sent = fake_llm.requests[0]["body"]["messages"][0]["content"]
    assert sent.startswith("Q=query ") and '{"json": 1}' in sent and "chunk " in sent


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL])
def test_killed_mid_run_keeps_every_grade_received(project_db, fake_llm, how):
    fake_llm.unparsed = False
    fake_llm.delay = 0.05
    # the server holds every answer after the 8th until the signal is sent: the run cannot end
    # before it, however a busy machine schedules the two processes
    fake_llm.hold_after = 8
    with Project.open(project_db) as project:
        total = len(svc_judge.plan_pairs(project, NAME))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # the child takes SIGINT as a person's ctrl-c: a suite started as a background job (``cmd &``
    # in a script) has SIGINT ignored, which children inherit, and Python keeps an ignored SIGINT
    # ignored (so the whole pool was graded after the signal)
    child = subprocess.Popen([sys.executable, "-m", "ragjudge", "--db", project_db, "llm-judge",
                              "--base-url", fake_llm.base_url, "--model", MODEL, "--concurrency", "2"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    with Project.open(project_db) as project:
        while len(labels_of(project)) < 6 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.02)
        seen = len(labels_of(project))
        child.send_signal(how)
        fake_llm.release.set()
        child.communicate(timeout=60)
        kept = labels_of(project)
        assert seen >= 6, f"{seen} labels seen in 60 s (the child {'ended' if child.poll() is not None else 'ran'})"
        assert 6 <= len(kept) < total, f"{len(kept)} of {total} pairs graded when the run ended"
        assert_right_and_once(project, strict=False)
        graded_calls = [c for c in calls_of(project) if c.outcome == "graded"]
        assert {(c.query_id, c.chunk_id) for c in graded_calls} == {(q, c) for q, c, _ in kept}
    if how == signal.SIGINT:
        assert child.returncode == 130
    fake_llm.delay, fake_llm.hold_after = 0.0, None
    again = cli(project_db, "llm-judge", "--base-url", fake_llm.base_url, "--model", MODEL)
    assert again.returncode == 0, again.stderr
    with Project.open(project_db) as project:
        assert len(labels_of(project)) == total
        assert_right_and_once(project, strict=False)


def test_cli_needs_base_url_and_model(project_db):
    run = cli(project_db, "llm-judge", "--model", MODEL)
    assert run.returncode == 2 and "--base-url" in run.stderr


def test_an_llm_cannot_label_under_a_persons_name(project_db, fake_llm):
    with Project.open(project_db) as project:
        from ragjudge.services.access import roster

        roster.add(project, "ana", access=rights(project))
    run = cli(project_db, "llm-judge", "--base-url", fake_llm.base_url, "--model", MODEL,
              "--annotator", "ana")
    assert run.returncode == 2 and "human annotator" in run.stderr and fake_llm.requests == []


def test_async_api_runs_in_a_caller_loop(project, fake_llm):
    fake_llm.unparsed = False
    pairs = svc_judge.plan_pairs(project, NAME, limit=3)
    summary = asyncio.run(svc_judge.judge_async(project, pairs, settings(fake_llm), annotator=NAME, access=rights(project)))
    assert summary.graded == 3


def test_timeout_is_a_deadline_for_the_whole_answer(project, fake_llm):
    """A server that sends its headers and then one byte every half second never lets a read
    wait longer than the read timeout; --timeout bounds the whole request, then the retries,
    then the pair counts as failed (it held a request for over 100 s with --timeout 5)."""
    import time

    fake_llm.faults = ["trickle"] * 3
    pair = svc_judge.plan_pairs(project, NAME)[0]
    started = time.monotonic()
    summary = run_judge(project, fake_llm, [pair], timeout=1.0, retries=1)
    elapsed = time.monotonic() - started
    assert summary.failed == 1 and summary.graded == 0
    assert elapsed < 6.0, elapsed  # two tries of at most 1 s each, and a short backoff
    (call,) = calls_of(project)
    assert call.outcome == "failed" and "within 1 s" in call.error
