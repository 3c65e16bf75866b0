"""QA regression: ragjudge init with a threshold off the scale names --threshold in one paragraph."""

from __future__ import annotations

import pytest

from ragjudge.cli import main


from clikit import no_project  # noqa: F401 - autouse: no project named by the environment


@pytest.mark.parametrize(("scale", "threshold"), [("1-5", "9"), ("binary", "3")])
def test_init_threshold_off_the_scale(capsys, tmp_path, scale, threshold):
    # was: "--scale 1-5:     For further information visit https://errors.pydantic.dev/..."
    db = tmp_path / "stars.db"
    code = main(["init", "--db", str(db), "--scale", scale, "--threshold", threshold])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"ragjudge: --threshold {threshold}: threshold {threshold} is outside the scale")
    assert "pydantic" not in err and err.count("\n") == 1
    assert not db.exists()


def test_init_bad_scale_still_names_scale(capsys, tmp_path):
    code = main(["init", "--db", str(tmp_path / "x.db"), "--scale", "0-x"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("ragjudge: --scale 0-x: ")
