"""A measure name is looked up importing the measure modules in order only until it is known
(``eval -m P@5`` needs the first of them): that gives the same measure as importing all of
them only while no name or alias belongs to measures of two modules."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

CODE = """
import collections, json, sys
import ragjudge.metrics.registry as registry

owners = collections.defaultdict(set)
original = registry.register


def register(definition):
    for key in (definition.name, *definition.aliases):
        owners[key.lower()].add((definition.name, definition.kernel.__module__))
    return original(definition)


registry.register = register
first = registry.parse_measure(sys.argv[1])
loaded = [m for m in registry.MEASURE_MODULES if m in sys.modules]
registry.known_measures()
shared = {key: sorted(map(list, found)) for key, found in owners.items() if len(found) > 1}
print(json.dumps({"loaded": loaded, "shared": shared,
                  "same": registry.parse_measure(sys.argv[1]) == first}))
"""


def _probe(name: str) -> dict:
    import json

    out = subprocess.run([sys.executable, "-c", CODE, name], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_no_name_belongs_to_two_measures():
    assert _probe("P@5")["shared"] == {}


def test_a_lookup_imports_only_the_modules_it_needs():
    from ragjudge.metrics.registry import MEASURE_MODULES

    probe = _probe("nDCG@10")
    assert probe["loaded"] == [MEASURE_MODULES[0]] and probe["same"]
    probe = _probe("Coverage@5")  # a RAG measure, in the second module
    assert probe["loaded"] == list(MEASURE_MODULES[:2]) and probe["same"]
    probe = _probe("ndcg_cut_10")  # a trec_eval spelling: known after every module is read
    assert probe["loaded"] == list(MEASURE_MODULES) and probe["same"]
