"""``eval --prels FILE --prels-form strata|probability``: runs scored against a sampled judgment
file, the same on the lean path and through typer, its mistakes refused in one paragraph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragjudge.cli import main
from ragjudge.metrics import Run, evaluate
from ragjudge.metrics.prels import read_prels

FIXTURES = Path(__file__).parents[1] / "metrics" / "sampled_fixtures"
STRATA, STRATA_RUN = str(FIXTURES / "hand.strata"), str(FIXTURES / "hand_strata.run")
PRELS, PRELS_RUN = str(FIXTURES / "hand.prels"), str(FIXTURES / "hand_prels.run")


def _both(capsys, monkeypatch, args: list[str]) -> tuple[int, str, str]:
    """Run ``args`` on the lean path and through typer; both must print the same."""
    outcomes = []
    for lean in ("1", "0"):
        monkeypatch.setenv("RAGJUDGE_LEAN", lean)
        code = main(list(args))
        captured = capsys.readouterr()
        outcomes.append((code, captured.out, captured.err))
    assert outcomes[0] == outcomes[1]
    return outcomes[0]


def test_a_strata_file_is_scored_with_its_estimates_by_default(capsys, monkeypatch):
    code, out, _ = _both(capsys, monkeypatch, ["eval", "--prels", STRATA, "--prels-form",
                                               "strata", "--run", STRATA_RUN, "--format", "json"])
    data = json.loads(out)
    assert code == 0
    assert data["measures"] == ["xinfAP", "infNDCG", "infP@10", "statAP"]
    got = data["runs"]["hand_strata"]["aggregate"]
    # the hand-worked query of tests/metrics/test_sampled.py: stratum 1 a(2) b(0) c(1) d(0) all
    # sampled, stratum 2 e(1) f(0) sampled of e f g h; run a e x b g c. R^ = 2 + 1*4/2 = 4;
    # precisions 1 (a), 0.99999 (e), 0.66666 (c): xinfAP = (2/4)(1 + 0.66666)/2 + (2/4)0.99999
    # = 0.91666; infP@10 = (3*2/3 + 2*1/1)/10 = 0.4
    assert got["xinfAP"] == pytest.approx(0.91666, abs=1e-5)
    assert got["infP@10"] == pytest.approx(0.4, abs=1e-5)
    qrels, sample = read_prels(STRATA, "strata")
    library = evaluate(qrels, Run.from_trec(STRATA_RUN), data["measures"],
                       extras={"sample": sample}).aggregate()
    assert got == pytest.approx(library, abs=0)


@pytest.mark.slow
def test_a_probability_file_gives_statap(capsys, monkeypatch):
    code, out, _ = _both(capsys, monkeypatch, ["eval", "--prels", PRELS, "--prels-form",
                                               "probability", "--run", PRELS_RUN, "-m",
                                               "statAP,statAP_var", "--format", "json"])
    assert code == 0
    got = json.loads(out)["runs"]["hand_prels"]["aggregate"]
    # sampled a(rel, p=1) b(0, 1) c(rel, .5) e(rel, .25) f(0, .5); run a x e b g c:
    # statAP = (1/1 + (2/3)/0.25 + 1/0.5) / (1 + 2 + 4) = 17/21, its variance 39/882
    assert got["statAP"] == pytest.approx(17 / 21, abs=1e-12)
    assert got["statAP_var"] == pytest.approx(39 / 882, abs=1e-12)
    code, out, _ = _both(capsys, monkeypatch, ["eval", "--prels", PRELS, "--prels-form",
                                               "probability", "--run", PRELS_RUN])
    assert code == 0 and "statAP" in out and "P@10" not in out


def test_a_curve_of_infp_from_a_prels_file(capsys, monkeypatch):
    code, out, _ = _both(capsys, monkeypatch, ["eval", "--prels", STRATA, "--prels-form",
                                               "strata", "--run", STRATA_RUN, "--curve", "infP",
                                               "--k", "10", "--format", "json"])
    assert code == 0
    assert json.loads(out)["runs"]["hand_strata"]["value"][-1] == pytest.approx(0.4, abs=1e-5)


@pytest.mark.parametrize(("args", "says"), [
    (["--prels", STRATA], "say which form the file has with --prels-form strata "
                          "(sample_eval.pl's 'query iteration chunk stratum grade'"),
    (["--prels", STRATA, "--prels-form", "trec"], "--prels-form 'trec': say which form"),
    (["--prels-form", "strata"], "--prels-form 'strata' says how to read a --prels file: name "
                                 "the file with --prels FILE."),
    (["--prels", STRATA, "--prels-form", "strata", "--qrels", STRATA],
     "--qrels and --prels both give the judgments: give one"),
    (["--prels", STRATA, "--prels-form", "strata", "--complete"],
     "a --prels file lists its pool itself"),
    (["--prels", STRATA, "--prels-form", "strata", "--rule", "max"],
     "it does not apply to a --prels file"),
    (["--prels", "no-such.strata", "--prels-form", "strata"],
     "no-such.strata: no such prels file."),
    (["--prels", PRELS, "--prels-form", "strata"],  # a probability file read as strata
     "hand.prels, line 1, field 'grade': '1.0' is not a whole number."),
])
def test_mistakes_are_refused_in_one_paragraph(capsys, monkeypatch, args, says):
    code, out, err = _both(capsys, monkeypatch, ["eval", *args, "--run", STRATA_RUN])
    assert code == 2 and out == "" and "Traceback" not in err
    assert says in " ".join(err.split()), err


def test_the_live_screen_takes_no_prels_file(capsys, tmp_path):
    code = main(["--db", str(tmp_path / "none.db"), "eval", "--tui", "--prels", STRATA,
                 "--prels-form", "strata"])
    assert code == 2 and "--tui shows every run of the project" in capsys.readouterr().err


def test_a_query_without_an_estimate_says_why(tmp_path, capsys, monkeypatch):
    # query 2's sampled pairs are all judged not relevant: statAP divides by R^ = 0 there
    prels = tmp_path / "two.strata"
    prels.write_text("1 0 a 1 1\n1 0 b 1 0\n1 0 c 2 -1\n2 0 a 1 0\n2 0 b 1 0\n2 0 d 2 -1\n")
    run = tmp_path / "r.run"
    run.write_text("1 Q0 a 1 2 r\n1 Q0 c 2 1 r\n2 Q0 b 1 2 r\n2 Q0 d 2 1 r\n")
    code, out, _ = _both(capsys, monkeypatch, ["eval", "--prels", str(prels), "--prels-form",
                                               "strata", "--run", str(run), "-m",
                                               "statAP,xinfAP", "--format", "json"])
    entry = json.loads(out)["runs"]["r"]
    assert code == 0
    assert entry["undefined"] == {"statAP": 1}
    assert entry["left_out"] == {"statAP": {"2": "no judged pair of the query's sample is "
                                                 "relevant (nothing to estimate from)"}}
    # query 1: a relevant at rank 1 sampled with probability 1 (stratum 1: a, b both judged)
    assert entry["aggregate"]["statAP"] == 1.0


@pytest.mark.slow
def test_a_prels_file_is_scored_without_the_database_layer():
    import os
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from ragjudge.cli import main\n"
        f"code = main(['eval', '--prels', {STRATA!r}, '--prels-form', 'strata', '--run', "
        f"{STRATA_RUN!r}, '--format', 'json'])\n"
        "loaded = sorted({n.split('.')[0] for n in sys.modules if n.split('.')[0] in "
        "('typer', 'click', 'sqlalchemy', 'pydantic', 'textual', 'rich')})\n"
        "print(code, loaded, file=sys.stderr)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("RAGJUDGE_DB", "RAGJUDGE_LEAN")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.stderr.strip().splitlines()[-1] == "0 []", done.stderr
