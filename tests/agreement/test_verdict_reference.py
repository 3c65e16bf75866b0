"""``agree --verdict`` compares the reference alone with the gold that includes the team's
labels, and names every order of two runs that changes.

The finding this answers: official qrels (not complete) and one person's labels on pairs the
official qrels never list swapped the AP order of two runs, and ``agree --verdict`` reported
"min Kendall τ 1.000": each annotator's qrels were the gold with that annotator's grades on the
pairs they judged, so no ranking under the official qrels alone was ever computed.
"""

from __future__ import annotations

import json

import goldkit
import pytest
from clikit import run_cli as _run

from ragjudge.cli import common

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _no_project(monkeypatch):
    monkeypatch.setitem(common.CLI_STATE, "db", None)
    monkeypatch.delenv("RAGJUDGE_DB", raising=False)
    monkeypatch.setenv("COLUMNS", "240")


@pytest.fixture
def db(tmp_path):
    path = str(tmp_path / "p.db")
    goldkit.make_project(path, tmp_path)
    return path


def _verdict(capsys, db: str, *more: str) -> dict:
    code, out, err = _run(capsys, "--db", db, "agree", "--verdict", "--measures", "AP,P@1,P@5",
                          "--format", "json", *more)
    assert code == 0, err
    return json.loads(out)["verdict"]["reference"]


def test_the_reference_alone_against_the_team_names_the_swapped_runs(capsys, db):
    found = _verdict(capsys, db)
    assert (found["reference"], found["rule"], found["added_pairs"]) == ("nist", "median", 8)
    ap = next(m for m in found["measures"] if m["measure"] == "AP")
    # Per query of q1..q4, under the reference alone (R = 4: bm25's ranks 1 and 3, dense's rank
    # 5, one chunk no run retrieves): bm25 AP = (1/1 + 2/3) / 4 = 0.4167, dense AP = (1/5) / 4
    # = 0.05. With ana's two labels (dense's ranks 2 and 3, R = 6): bm25 (1 + 2/3) / 6 = 0.2778,
    # dense (1/2 + 2/3 + 3/5) / 6 = 0.2944.
    assert ap["reference_scores"]["bm25"] == pytest.approx(5 / 12)
    assert ap["reference_scores"]["dense"] == pytest.approx(0.05)
    assert ap["team_scores"]["bm25"] == pytest.approx((1 + 2 / 3) / 6)
    assert ap["team_scores"]["dense"] == pytest.approx((1 / 2 + 2 / 3 + 3 / 5) / 6)
    assert [(c["ahead_reference"], c["ahead_team"]) for c in ap["changes"]] == [("bm25", "dense")]
    assert ap["changes"][0]["text"] == ("AP: bm25 ahead of dense under the reference alone, dense "
                                        "ahead with the team's labels (+8 pairs)")
    # hybrid stays first under both: its AP 0.425 and 0.5444
    assert ap["winner_reference"] == ap["winner_team"] == "hybrid"
    assert ap["tau"] == pytest.approx(1 / 3)  # 2 concordant pairs, 1 discordant, of 3
    # P@1 is the same under both (the top chunks ana labels are not at rank 1): nothing to name
    p1 = next(m for m in found["measures"] if m["measure"] == "P@1")
    assert p1["changes"] == []


def test_the_table_names_each_change(capsys, db):
    code, out, err = _run(capsys, "--db", db, "agree", "--verdict", "--measures", "AP,P@1")
    assert code == 0, err
    text = " ".join(out.split())
    assert "AP: bm25 ahead of dense under the reference alone, dense ahead with the team's labels (+8 pairs)" in text
    assert "The reference alone (nist) against the gold with the team's labels" in text


def test_a_tie_that_becomes_a_win_is_named(capsys, db):
    from ragjudge.services.labels.events import skip_pair
    from ragjudge.services.project.database import Project

    # P@5 under the reference alone: bm25 2/5 (ranks 1, 3), hybrid 2/5 (bm25's 1 and 3 at ranks
    # 1 and 5; dense's 1 and 2 at ranks 2 and 4 are 0 and unjudged): tied on every query. ana's
    # labels make dense's rank 2 relevant: hybrid 3/5 on q1..q4, ahead.
    found = _verdict(capsys, db)
    p5 = next(m for m in found["measures"] if m["measure"] == "P@5")
    texts = [c["text"] for c in p5["changes"]]
    assert "P@5: bm25 and hybrid tied under the reference alone, hybrid ahead with the team's labels (+8 pairs)" in texts
    with Project.open(db) as project:  # no team label left: nothing changes
        for annotator, q, c, _ in goldkit.team_labels():
            skip_pair(project, annotator=annotator, query_id=q, chunk_id=c)
    found = _verdict(capsys, db)
    assert found["added_pairs"] == 0
    assert all(m["changes"] == [] and m["tau"] == pytest.approx(1.0) for m in found["measures"]
               if m["tau"] is not None)


def test_no_reference_no_comparison(capsys, tmp_path):
    path = str(tmp_path / "plain.db")
    goldkit.make_project(path, tmp_path, reference=False)
    code, out, err = _run(capsys, "--db", path, "agree", "--verdict", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["verdict"]["reference"] is None
