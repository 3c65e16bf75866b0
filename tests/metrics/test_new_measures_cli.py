"""The trec_eval, RBP and set measures through ``ragjudge eval`` on files, by both of its paths
(the lean reader and the typer command, ``RAGJUDGE_LEAN``), in real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

QRELS = "q1 0 d1 2\nq1 0 d2 1\nq1 0 d3 0\nq2 0 x 1\n"
RUN = "q1 Q0 d3 1 2.0 r\nq1 Q0 d1 2 1.0 r\nq1 Q0 d5 3 0.5 r\nq2 Q0 y 1 1.0 r\n"
MEASURES = ["RBP(p=0.8)", "RBP_residual", "num_rel_ret", "num_ret", "num_rel", "set_P",
            "SetF(beta=2)", "NumRelRet(rel=2)"]


def _eval(tmp_path, lean, *extra):
    (tmp_path / "q.trec").write_text(QRELS)
    (tmp_path / "r.trec").write_text(RUN)
    words = ["eval", "--qrels", "q.trec", "--run", "r.trec", *extra]
    for m in MEASURES:
        words += ["-m", m]
    env = {k: v for k, v in os.environ.items() if k != "RAGJUDGE_DB"}
    env["RAGJUDGE_LEAN"] = "1" if lean else "0"
    return subprocess.run([sys.executable, "-m", "ragjudge", *words], capture_output=True,
                          text=True, env=env, cwd=tmp_path)


def test_new_measures_by_name_on_the_command_line(tmp_path):
    done = [_eval(tmp_path, lean, "--format", "json", "--per-query") for lean in (True, False)]
    assert done[0].returncode == 0, done[0].stderr
    assert (done[0].stdout, done[0].stderr) == (done[1].stdout, done[1].stderr)
    per_query = json.loads(done[0].stdout)["runs"]["r"]["per_query"]
    # q1 ranks d3 (0), d1 (2), d5 (unjudged): RBP = 0.2 x 0.8 = 0.16; residual = the weight of
    # d5 (0.2 x 0.64) + the tail 0.8^3; one relevant of three ranked, R = 2
    assert per_query["q1"] == pytest.approx({
        "RBP(p=0.8)": 0.16, "RBP_residual": 0.128 + 0.512, "num_rel_ret": 1, "num_ret": 3,
        "num_rel": 2, "set_P": 1 / 3, "SetF(beta=2)": 5 * (1 / 3) * 0.5 / (4 / 3 + 0.5),
        "NumRelRet(rel=2)": 1})
    # q2 ranks only y, unjudged: nothing gained, everything unknown
    assert per_query["q2"] == pytest.approx({
        "RBP(p=0.8)": 0, "RBP_residual": 1, "num_rel_ret": 0, "num_ret": 1, "num_rel": 1,
        "set_P": 0, "SetF(beta=2)": 0, "NumRelRet(rel=2)": 0})


def test_the_table_names_the_measures_as_asked(tmp_path):
    done = _eval(tmp_path, True)
    assert done.returncode == 0, done.stderr
    for m in ("RBP(p=0.8)", "num_rel_ret", "set_P"):
        assert m in done.stdout
