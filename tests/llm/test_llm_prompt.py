"""The LLM judge's prompt and the reading of its answers."""

from __future__ import annotations

import pytest

from ragjudge.errors import InputError
from ragjudge.models import Scale
from ragjudge.services.llm import client as svc_client
from ragjudge.services.llm import prompt as svc_prompt

SCALE = Scale.parse("0-3")


@pytest.mark.parametrize("answer, grade", [
    ("M: wants X\nT: fine\n##final score: 2", 2),
    ("##Final Score: 3", 3),
    ("reasoning...\n## final score: 1\n", 1),
    ("**##final score: 0**", 0),
    ("##final score: 1\nwait, no\n##final score: 2", 2),   # the last one counts
    ("2", 2), (" 3.\n", 3),                                   # a bare integer
    ("##final score: 4", None), ("7", None), ("-1", None),   # off the scale
    ("I would say 2 or 3", None), ("", None), (None, None), ("final score 2", None),
    ("##final score: 99999999999999999999", None),
])
def test_parse_grade(answer, grade):
    assert svc_prompt.parse_grade(answer, SCALE) == grade


def test_default_prompt_has_the_scale_the_steps_and_the_answer_format(project):
    project.set_settings({"guidelines": "Count only chunks about parcels."})
    prompt = svc_prompt.pair_prompt(project, svc_prompt.DEFAULT_TEMPLATE, svc_prompt.prompt_values(project), "q1", "c05")
    assert "3 = Perfectly relevant: Dedicated to the query; answers it fully." in prompt
    assert "0 = Irrelevant" in prompt and "Count only chunks about parcels." in prompt
    assert "\nM:" in prompt and "\nT:" in prompt and prompt.rstrip().endswith("##final score: N")
    assert "Query: query 1" in prompt and "chunk 5" in prompt
    assert "{" not in prompt


def test_template_placeholders(tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("{query}|{description}|{chunk}|{scale}|{guidelines}|{{literal}}", encoding="utf-8")
    text = svc_prompt.load_template(str(good))
    assert svc_prompt.render(text, {"query": "Q", "description": "D", "chunk": "C", "scale": "S",
                             "guidelines": "G"}) == "Q|D|C|S|G|{literal}"
    bad = tmp_path / "bad.txt"
    bad.write_text("{chunk} {query} {passage}", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        svc_prompt.load_template(str(bad))
    assert "bad.txt" in str(caught.value) and "{passage}" in str(caught.value)
    missing = tmp_path / "nochunk.txt"
    missing.write_text("{query}", encoding="utf-8")
    with pytest.raises(InputError, match="no \\{chunk\\}"):
        svc_prompt.load_template(str(missing))
    with pytest.raises(InputError):
        svc_prompt.load_template(str(tmp_path / "absent.txt"))


def test_the_key_is_not_in_the_settings_repr():
    settings = svc_client.ClientSettings(base_url="http://127.0.0.1:1/v1", model="m", api_key="sk-hidden-9")
    assert "sk-hidden-9" not in repr(settings)
