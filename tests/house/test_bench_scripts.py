"""The benchmark scripts are not tests, but the README's figures come from them: each must still
start. A script that imports a kit module which moved (or a helper renamed) fails here, by its
``--help`` in a fresh process, as a person running it from the README would see it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "tests" / "bench").glob("bench_*.py")) + [ROOT / "tests" / "bench" / "sim_settle.py"]


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_the_script_starts(script: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(script), "--help"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
