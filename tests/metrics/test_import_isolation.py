"""`import ragjudge.metrics` stays a numpy-only library (the layers of ragjudge/ARCHITECTURE.md)."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
import ragjudge.metrics as m
from ragjudge.metrics import Qrels, Run, evaluate, parse_measure, known_measures
known_measures()
evaluate(Qrels.from_dict({'q': {'a': 1}}), Run.from_ranked({'q': ['a']}), ['P@1', 'nDCG@5'])
bad = [name for name in ('textual', 'sqlalchemy', 'pydantic', 'pandas', 'rich')
       if name in sys.modules]
print(','.join(bad))
"""


def test_metrics_imports_no_heavy_layer():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_bare_import_is_light():
    # measures, TREC parsing and curves load on first use
    code = ("import sys, ragjudge.metrics; "
            "print(sorted(k for k in ('ragjudge.metrics.measures', 'ragjudge.metrics.trec', "
            "'ragjudge.metrics.curves') if k in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_function_names_win_over_submodule_names():
    code = ("import ragjudge.metrics.evaluate, ragjudge.metrics.explain, ragjudge.metrics.curves\n"
            "from ragjudge.metrics import evaluate, explain\n"
            "print(callable(evaluate) and not hasattr(evaluate, '__path__') and "
            "type(evaluate).__name__, type(explain).__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["function", "function"]
