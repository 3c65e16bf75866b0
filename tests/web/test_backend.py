"""The web layer's adapter to the services (the ragjudge.web.backend package) without HTTP:
labels from many threads at once, conflicts inside one commit, a failed commit, and the query's
words marked as the app marks them."""

from __future__ import annotations

import threading

import pytest
from projectkit import rights
from hypothesis import given, settings
from hypothesis import strategies as st
from webkit import events

from ragjudge.services.events.state import LabelState
from ragjudge.web import backend
from ragjudge.web.backend import database, labels, pairs
from ragjudge.web.backend.queues import Queues
from ragjudge.terms import segments


@pytest.fixture
def opened(site):
    project = database.open_project(site.db)
    yield project, Queues(project)
    project.close()


def who(name: str) -> backend.Who:
    return backend.Who(name, "annotator", True)


@pytest.mark.slow
def test_labels_from_many_threads_are_each_written_once(opened, site):
    from ragjudge.services.access import roster

    project, queues = opened
    names = [f"p{i}" for i in range(8)]
    for name in names:
        roster.add(project, name, access=rights(project, "dora"))
    acknowledged: dict[str, list[int]] = {n: [] for n in names}

    def label_all(name: str) -> None:
        pair = pairs.next_pairs(project, queues, who(name))["pairs"][0]
        for i in range(12):
            out = labels.post_label(project, queues, who(name), pair["query"]["id"], pair["chunk"]["id"],
                                     grade=i % 4, seen=pair["seen"])
            acknowledged[name].append(out["event_id"])
            pair = out["next"]

    threads = [threading.Thread(target=label_all, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stored = events(site.db)
    for name in names:
        mine = [e for e in stored if e[0] == name]
        assert len(mine) == 12 and len({(q, c) for _, q, c, *_ in mine}) == 12  # 12 pairs, once each
    assert sum(len(v) for v in acknowledged.values()) == len({i for v in acknowledged.values() for i in v}) == 96


@pytest.mark.slow
def test_two_labels_of_one_pair_in_one_commit_the_second_is_a_conflict(opened, site):
    project, _ = opened
    first = database.Wanted("ana", "q1", "c05", 2, False, None, None)
    second = database.Wanted("ana", "q1", "c05", 0, False, None, None)
    other = database.Wanted("ben", "q1", "c06", 1, False, None, None)

    def commit(session):
        database.LabelWriter._work(session, [first, second, other])

    project.write(commit)
    assert first.state.grade == 2 and other.state.grade == 1
    assert second.state is None and second.conflict.current["grade"] == 2
    assert [(e[0], e[2], e[3]) for e in events(site.db) if e[1] == "q1"] == [
        ("ben", "c05", 3), ("ana", "c05", 2), ("ben", "c06", 1)]


def test_a_failed_commit_fails_every_label_in_it_and_writes_none(opened, site, monkeypatch):
    project, queues = opened
    writer = database.LabelWriter(project)
    started = threading.Event()
    release = threading.Event()
    original = database.LabelWriter._work
    calls = {"n": 0}

    def slow_then_broken(session, batch):
        calls["n"] += 1
        if calls["n"] == 1:  # the first commit holds the turn while the others queue up
            started.set()
            release.wait(10)
            return original(session, batch)
        raise OSError("disk gone")

    monkeypatch.setattr(database.LabelWriter, "_work", staticmethod(slow_then_broken))
    results: dict[str, object] = {}

    def run(name: str, chunk: str) -> None:
        try:
            results[name] = writer.write(database.Wanted(name, "q2", chunk, 1, False, None, None))
        except OSError as exc:
            results[name] = exc

    lead = threading.Thread(target=run, args=("ana", "c01"))
    lead.start()
    started.wait(10)
    waiting = [threading.Thread(target=run, args=(n, c)) for n, c in (("ben", "c02"), ("dora", "c03"))]
    for t in waiting:
        t.start()
    while len(writer._waiting) < 2:
        threading.Event().wait(0.01)
    release.set()
    for t in (lead, *waiting):
        t.join(10)
    assert isinstance(results["ana"], LabelState)
    assert isinstance(results["ben"], OSError) and isinstance(results["dora"], OSError)
    assert [(e[0], e[2]) for e in events(site.db) if e[1] == "q2"] == [("ana", "c01")]


def test_a_pair_outside_the_queue_is_not_found(opened):
    project, queues = opened
    with pytest.raises(backend.NotFound):
        labels.post_label(project, queues, who("ana"), "q1", "no-such-chunk", grade=1)
    with pytest.raises(backend.NotFound):
        pairs.pair_at(project, queues, who("ana"), "q9", "c01")


def test_a_pair_labelled_elsewhere_is_passed_over(opened):
    from ragjudge.services.labels.events import record_label

    project, queues = opened
    first, second = pairs.next_pairs(project, queues, who("ana"), 2)["pairs"]
    record_label(project, annotator="ana", query_id=first["query"]["id"], chunk_id=first["chunk"]["id"],
                 grade=1, source="tui")  # the app, in another process
    again = pairs.next_pairs(project, queues, who("ana"))["pairs"][0]
    assert (again["query"]["id"], again["chunk"]["id"]) == (second["query"]["id"], second["chunk"]["id"])
    shown = pairs.pair_at(project, queues, who("ana"), first["query"]["id"], first["chunk"]["id"])
    assert shown["label"]["grade"] == 1 and shown["seen"] == shown["label"]["event_id"]


words = st.text(alphabet=st.sampled_from(list("ab dDamage parcels-ed ingé\u202e\x1b.")), max_size=40)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(words, words)
def test_the_query_s_words_are_marked_as_the_app_marks_them(text, query):
    """The judging screen's Rich spans and the page's pieces mark the same characters."""
    from ragjudge.safetext import for_terminal
    from ragjudge.tui.widgets.literal import highlighted, query_terms

    pieces = segments(text, query)
    assert "".join(pieces) == text
    marked_web = []
    at = 0
    for i, piece in enumerate(pieces):
        if i % 2:
            marked_web.append((at, at + len(piece)))
        at += len(piece)
    if for_terminal(text, multiline=True) != text:
        return  # the app marks the text made visible; the page marks the text, then shows it visibly
    rich = highlighted(text, query_terms(query))
    assert [(s.start, s.end) for s in rich.spans] == marked_web


def test_kept_answers_stay_within_their_budget_and_a_repeat_runs_nothing_again():
    from ragjudge.web.idempotency import Replays

    replays = Replays(budget=10_000, per_scope=5)
    runs = []

    def action(n):
        def run():
            runs.append(n)
            return 201, b"x" * 1000
        return run

    for n in range(8):
        replays.run("session:a", f"key-{n:04d}", "f", action(n))
    assert replays.run("session:a", "key-0007", "f", action(99))[2] is True  # replayed: 99 never ran
    assert replays.run("session:a", "key-0000", "f", action(100))[2] is False  # 5 per session: gone
    for n in range(20):
        replays.run(f"session:{n}", "key-xxxx", "f", action(n))
    assert replays.kept_bytes <= 10_000
    assert 99 not in runs and 100 in runs
    replays.forget("session:19")
    assert replays.run("session:19", "key-xxxx", "f", action(200))[2] is False


def test_a_token_opens_what_the_roster_says_it_opens(opened, site):
    from ragjudge.services.access import roster
    from ragjudge.services.access.identity import from_token

    project, _ = opened
    old_ben = site.tokens["ben"]
    roster.issue_token(project, "ben", access=rights(project, "dora"))  # ben's first token no longer opens anything
    roster.retire(project, "dora", access=rights(project, "dora"))
    for token in (site.tokens["ana"], old_ben, site.tokens["dora"], "", "  ", "rj_nothing", site.tokens["ana"] + " "):
        member = from_token(project, token)
        found = database.member_by_token(project, token)
        assert (found is None) == (member is None), token
        if found is not None:
            assert member is not None
            assert (found[0].name, found[1]) == (member.name, member.token_digest)
